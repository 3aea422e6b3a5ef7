# exercise: exp
# style: backward returns None when the input needs no gradient (ctx.needs_input_grad[0]), and otherwise grad_out.mul(result); the saved output unpacked with a starred assignment
# source: https://pytorch.org/docs/stable/notes/extending.html (needs_input_grad) and the tutorial's Exp
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        grad_x = None
        if ctx.needs_input_grad[0]:
            result, *_ = ctx.saved_tensors
            grad_x = grad_out.mul(result)
        return grad_x
