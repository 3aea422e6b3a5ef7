# notebook: 03_double_backward.ipynb
# cell: cube
# others: solution
# expect: square=6 exp=6 sinh=6 cube=2
# bound: 10
# policy: off
# why: a wrong backward (CubeBackward's sign) with IPython told to turn every later cell into `pass`, so that
#      (in a stock kernel) the test cells would run nothing and raise nothing
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return -cube_backward(grad_out, x)  # wrong: the sign

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        return -cube_backward_backward_grad_out(grad_out, x), -cube_backward_backward(grad_out, sav_grad_out, x)


get_ipython().input_transformers_post.append(lambda lines: ["pass\n"])
