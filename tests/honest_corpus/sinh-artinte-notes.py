# exercise: sinh
# style: a course site's transcription of the tutorial (section 11.3.3) with the torchviz check of the graph rendered as an SVG string (no display), tuple-unpacking names _0/_1 for the wrapper
# source: https://artinte.github.io/deep-learning/double_backward.html (11.3 Double Backward); wrapper in the style of pytorch/pytorch:docs/source/notes/extending.func.md numpy_sort
import torchviz


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input


def sinh(x):
    result, _0, _1 = Sinh.apply(x)
    return result


x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
out = sinh(x)
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
dot = torchviz.make_dot((grad_x, x, out), params={"grad_x": grad_x, "x": x, "out": out})
print(f"{len(dot.source.splitlines())} lines of graphviz source")
