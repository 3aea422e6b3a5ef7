# exercise: sortvalues
# style: backward returns None at once when ctx.needs_input_grad[0] is False, else the scatter; the classic style with the indices marked in forward
# source: https://pytorch.org/docs/stable/notes/extending.html (needs_input_grad) and the mark_non_differentiable example (https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.mark_non_differentiable.html)
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort(-1)
        idx_out = idx.to(x.dtype)
        ctx.mark_non_differentiable(idx_out)
        ctx.save_for_backward(idx)
        return values, idx_out

    @staticmethod
    def backward(ctx, g_values, g_idx):
        if not ctx.needs_input_grad[0]:
            return None
        idx, = ctx.saved_tensors
        out = torch.zeros_like(g_values)
        out.scatter_(-1, idx, g_values)
        return out
