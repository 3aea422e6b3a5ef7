# exercise: sortvalues
# mistake: backward scatters grad_values back along dimension 0 while forward sorts along the last dimension
# expect: forward=pass first-order=sort_scatter_wrong_dim structure=sort_scatter_wrong_dim
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
        ctx.save_for_backward(indices.long())

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(0, indices, grad_values)
