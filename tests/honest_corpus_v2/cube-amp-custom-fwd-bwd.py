# exercise: cube
# style: @torch.amp.custom_fwd(device_type="cpu") and @torch.amp.custom_bwd(device_type="cpu") on Cube's and CubeBackward's forward and backward (under @staticmethod), the notebook's NumPy helpers inside
# source: https://pytorch.org/docs/stable/notes/amp_examples.html#autocast-and-custom-autograd-functions (MyMM: @staticmethod @custom_fwd ... @staticmethod @custom_bwd) and https://pytorch.org/docs/stable/amp.html#torch.amp.custom_fwd (device_type); notebook 3's Cube / CubeBackward
class Cube(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        dx = cube_backward_backward(grad_out, sav_grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dgrad_out, dx
