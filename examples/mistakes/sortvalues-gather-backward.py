# exercise: sortvalues
# mistake: backward gathers grad_values with the sort permutation (grad.gather(-1, idx)) instead of scattering it back (zeros.scatter(-1, idx, grad)): the permutation is applied the wrong way round
# expect: forward=pass first-order=sort_gather_not_scatter structure=pass
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
        return grad_values.gather(-1, indices)
