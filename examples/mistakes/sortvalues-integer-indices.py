# exercise: sortvalues
# mistake: returns torch.sort's int64 indices as they are, not in x's dtype as the docstring asks
# expect: forward=output_wrong_dtype first-order=pass structure=pass
# caught-by: neither
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sort(x, dim=-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
