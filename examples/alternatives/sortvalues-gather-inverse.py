# exercise: sortvalues
# style: backward gathers with the inverse permutation (argsort of the indices) instead of scattering: the same gradient
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
        return grad_values.gather(-1, indices.argsort(dim=-1))
