# exercise: sortvalues
# style: the classic style (forward takes ctx): marks the indices and saves the permutation inside forward
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort(dim=-1)
        ctx.save_for_backward(indices)
        float_indices = indices.to(x.dtype)
        ctx.mark_non_differentiable(float_indices)
        return values, float_indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        grad_x = torch.empty_like(grad_values)
        grad_x.scatter_(-1, indices, grad_values)
        return grad_x
