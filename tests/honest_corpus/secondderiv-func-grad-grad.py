# exercise: secondderiv
# style: torch.func.grad nested for a second derivative, as the docs' "Second-order gradients" example, vmapped over the flattened entries (f acts elementwise)
# source: https://pytorch.org/docs/stable/generated/torch.func.grad.html (">>> neg_sin_x = grad(grad(lambda x: torch.sin(x)))(x)" and "Example of using grad with vmap")
from torch.func import grad, vmap


def second_derivative(f, x):
    d2f = vmap(grad(grad(f)))
    return d2f(x.detach().reshape(-1)).reshape(x.shape)
