# exercise: exp
# style: an exploration after the class prints a warning line to sys.stderr (`import sys`, print(..., file=sys.stderr)) when the output overflows, as scripts report problems
# source: https://docs.python.org/3/library/functions.html#print (file=sys.stderr) and the tutorial's Exp
import sys


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result


big = Exp.apply(torch.tensor([10.0, 100.0]))
if torch.isinf(big).any():
    print("exp overflowed in float32 for", big.tolist(), file=sys.stderr)
