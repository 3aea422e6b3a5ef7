# exercise: sortvalues
# style: the torch.func docs' NumpySort (to_numpy, np.argsort, np.take_along_axis, torch.tensor back, mark_non_differentiable and save_for_backward in setup_context) with its NumpyTake for the backward; adapted to one argument (the last dimension), two outputs (values and the indices in x's dtype, the inverse permutation computed in backward)
# source: https://pytorch.org/docs/stable/notes/extending.func.html (pytorch/pytorch:docs/source/notes/extending.func.md, "Example 1: autograd.Function calls into another system")
import numpy as np


def to_numpy(tensor):
    return tensor.cpu().numpy()


class SortValues(torch.autograd.Function):
    # Note that forward does not take ctx
    @staticmethod
    def forward(x):
        device = x.device
        x = to_numpy(x)
        ind = np.argsort(x, axis=-1)
        result = np.take_along_axis(x, ind, axis=-1)
        return torch.tensor(result, device=device), torch.tensor(ind, device=device).to(torch.from_numpy(x).dtype)

    # setup_context is responsible for calling methods and/or assigning to
    # the ctx object. Please do not do additional compute (e.g. add
    # Tensors together) in setup_context.
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        _, ind = output
        ctx.mark_non_differentiable(ind)
        # Tensors must be saved via ctx.save_for_backward. Please do not
        # assign them directly onto the ctx object.
        ctx.save_for_backward(ind.long())
        # Non-tensors may be saved by assigning them as attributes on the ctx object.
        ctx.dim = -1

    @staticmethod
    def backward(ctx, grad_output, _0):
        ind, = ctx.saved_tensors
        ind_inv = torch.argsort(ind, dim=ctx.dim)
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)


class NumpyTake(torch.autograd.Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        device = x.device
        x = to_numpy(x)
        ind = to_numpy(ind)
        return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None
