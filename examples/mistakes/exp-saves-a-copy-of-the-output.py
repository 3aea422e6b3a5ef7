# exercise: exp
# mistake: saves a copy of the output (result.clone()) instead of the returned tensor: the copy is an intermediate with no history
# expect: forward=pass first-order=pass second-order=intermediates_not_outputs structure=pass
# caught-by: gradgradcheck
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result.clone())
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result
