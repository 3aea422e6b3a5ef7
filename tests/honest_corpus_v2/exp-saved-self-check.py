# exercise: exp
# style: the tutorial's Exp followed by the autograd notes' check that the output was saved as is: y.grad_fn._saved_result / saved_tensors compared with y.equal(...) and `is` on a built-in op (torch.exp's grad_fn._saved_result)
# source: https://pytorch.org/docs/stable/notes/autograd.html#saved-tensors ("y = x.exp(); print(y.equal(y.grad_fn._saved_result))  # True", "print(y is y.grad_fn._saved_result)  # False")
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


x = torch.randn(5, requires_grad=True)
y = x.exp()
print(y.equal(y.grad_fn._saved_result))  # True
print(y is y.grad_fn._saved_result)  # False
