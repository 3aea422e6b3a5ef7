# exercise: sortvalues
# style: the solution's SortValues, then an exploration registering a hook on the sorted values (Tensor.register_hook) to print the gradient arriving at them, removed afterwards
# source: https://pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html (h = v.register_hook(lambda grad: grad * 2); v.backward(...); h.remove())
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
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)


x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
values, indices = SortValues.apply(x)
h = values.register_hook(lambda grad: print("grad at the sorted values:", grad))
(values * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
h.remove()
print("x.grad:", x.grad)
