# exercise: sortvalues
# mistake: keeps the permutation as a ctx attribute ("integer tensors need no gradient") instead of saving it with save_for_backward
# expect: forward=pass first-order=pass structure=tensor_on_ctx
# caught-by: neither
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.indices = indices.long()

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        return torch.zeros_like(grad_values).scatter(-1, ctx.indices, grad_values)
