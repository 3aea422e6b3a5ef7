# exercise: sortvalues
# mistake: the floating-point indices are not marked non-differentiable: they require grad, and a loss using them sends a gradient that backward silently drops
# expect: forward=pass first-order=pass structure=output_not_marked_non_differentiable
# caught-by: neither
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.save_for_backward(indices.long())

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
