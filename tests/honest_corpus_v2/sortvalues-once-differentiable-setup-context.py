# exercise: sortvalues
# style: @once_differentiable on backward (legitimate here: the exercise checks first derivatives only) in the setup_context style, mark_non_differentiable on the indices, the scatter written in place on a new_zeros tensor
# source: https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.mark_non_differentiable.html (class Func: sort, mark_non_differentiable(idx), @once_differentiable backward) and https://pytorch.org/docs/stable/notes/extending.func.html (setup_context)
from torch.autograd.function import once_differentiable


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
    @once_differentiable
    def backward(ctx, grad_values, grad_indices):
        idx, = ctx.saved_tensors
        grad_input = grad_values.new_zeros(grad_values.shape)
        grad_input.scatter_(-1, idx, grad_values)
        return grad_input
