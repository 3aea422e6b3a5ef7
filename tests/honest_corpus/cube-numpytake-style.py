# exercise: cube
# style: the torch.func docs' NumpySort/NumpyTake layout: a to_numpy helper, NumPy in forward, torch.tensor(..., device=device) to come back, backward delegated to a second Function; the helper functions have leading underscores
# source: https://pytorch.org/docs/stable/notes/extending.func.html (pytorch/pytorch:docs/source/notes/extending.func.md, "Example 1: autograd.Function calls into another system"), written for x**3
def _to_numpy(tensor):
    return tensor.detach().cpu().numpy()


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        device = x.device
        ctx.save_for_backward(x)
        return torch.tensor(_to_numpy(x) ** 3, device=device)

    @staticmethod
    def backward(ctx, grad_output):
        # We've written the backward pass of Cube in terms of another
        # autograd.Function, CubeBackward.
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_output, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        device = x.device
        ctx.save_for_backward(grad_out, x)
        return torch.tensor(_to_numpy(grad_out) * 3 * _to_numpy(x) ** 2, device=device)

    @staticmethod
    def backward(ctx, grad_output):
        grad_out, x = ctx.saved_tensors
        g, xx = _to_numpy(grad_output), _to_numpy(x)
        d_grad_out = torch.tensor(g * 3 * xx ** 2, device=x.device)
        d_x = torch.tensor(g * _to_numpy(grad_out) * 6 * xx, device=x.device)
        return d_grad_out, d_x
