# exercise: exp
# mistake: backward left as the stub
# expect: forward=pass first-order=not_implemented second-order=not_implemented structure=not_implemented
# caught-by: gradcheck
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        raise NotImplementedError("exercise 'exp': write Exp.backward")
