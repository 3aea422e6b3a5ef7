# exercise: sortvalues
# style: torch.argsort then torch.take_along_dim for the values (NumPy's argsort / take_along_axis idiom in torch), the inverse permutation (argsort of the argsort) and take_along_dim again in backward
# source: https://pytorch.org/docs/stable/generated/torch.take_along_dim.html ("max_idx = torch.argsort(t) ... torch.take_along_dim(t, sorted_idx)") and the torch.func docs' NumpySort / NumpyTake (https://pytorch.org/docs/stable/notes/extending.func.html)
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(x):
        ind = torch.argsort(x, dim=-1)
        return torch.take_along_dim(x, ind, dim=-1), ind.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, ind = output
        ctx.mark_non_differentiable(ind)
        ctx.save_for_backward(torch.argsort(ind.long(), dim=-1))

    @staticmethod
    def backward(ctx, grad_values, _grad_ind):
        ind_inv, = ctx.saved_tensors
        return torch.take_along_dim(grad_values, ind_inv, dim=-1)
