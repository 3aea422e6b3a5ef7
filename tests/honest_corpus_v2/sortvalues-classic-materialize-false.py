# exercise: sortvalues
# style: the classic style (ctx in forward) with ctx.set_materialize_grads(False) and ctx.mark_non_differentiable, so backward checks grad_values for None (a zero gradient when the values were not used)
# source: https://pytorch.org/docs/stable/generated/torch.autograd.function.FunctionCtx.set_materialize_grads.html ("We must check for None now") and .../FunctionCtx.mark_non_differentiable.html
class SortValues(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        values, indices = x.sort(dim=-1)
        positions = indices.to(x.dtype)
        ctx.mark_non_differentiable(positions)
        ctx.save_for_backward(indices)
        return values, positions

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        if grad_values is None:
            return None
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)
