# exercise: sortvalues
# mistake: marks the sorted values non-differentiable instead of the indices: the values no longer require grad, so no gradient ever reaches x
# expect: forward=first_output_marked_non_differentiable first-order=first_output_marked_non_differentiable structure=first_output_marked_non_differentiable
# caught-by: neither
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(values)
        ctx.save_for_backward(indices.long())

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
