# exercise: sortvalues
# mistake: saves the floating-point indices it returns and scatters with them: scatter needs an int64 index, so backward raises
# expect: forward=pass first-order=index_not_integer structure=index_not_integer
# caught-by: gradcheck
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
