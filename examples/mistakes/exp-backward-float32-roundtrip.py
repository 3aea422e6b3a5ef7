# exercise: exp
# mistake: backward computes in float32 and converts back: right to 7 digits only (within the first derivatives' tolerance; the second derivatives show it)
# expect: forward=pass first-order=pass second-order=float32_precision structure=pass
# caught-by: gradgradcheck
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return (grad_out.float() * result.float()).to(result.dtype)
