# exercise: sortvalues
# style: the docs' example for mark_non_differentiable (sort, idx marked, @once_differentiable backward that still accepts g2, zeros_like + an in-place index add), in the old ctx-in-forward style; adapted to the last dimension (scatter_add_ where the docs' 1-D example used index_add_) and to indices in x's dtype
# source: https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.mark_non_differentiable.html
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class SortValues(Function):
    @staticmethod
    def forward(ctx, x):
        sorted, idx = x.sort()
        idx_as_x = idx.to(x.dtype)
        ctx.mark_non_differentiable(idx_as_x)
        ctx.save_for_backward(x, idx)
        return sorted, idx_as_x

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):  # still need to accept g2
        x, idx = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        grad_input.scatter_add_(-1, idx, g1)
        return grad_input
