# exercise: none
# notebook: 01_autograd_basics.ipynb
# style: the register_hook docs' example run as is (a hook doubling the gradient, then removed), plus a hook that prints the gradient passing through an intermediate
# source: https://pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html ("v = torch.tensor([0., 0., 0.], requires_grad=True); h = v.register_hook(lambda grad: grad * 2); v.backward(torch.tensor([1., 2., 3.])); v.grad ... h.remove()")
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
v.backward(torch.tensor([1., 2., 3.]))
print(v.grad)
h.remove()  # removes the hook

a = torch.randn(3, requires_grad=True)
b = a * 2
b.register_hook(lambda grad: print("gradient at b:", grad))
b.sum().backward()
