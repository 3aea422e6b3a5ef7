# exercise: vjp
# style: torch.autograd.grad with lists for outputs, inputs and grad_outputs (the form the docs' signature shows: sequences of tensors), allow_unused spelled out, the result unpacked from a list
# source: https://pytorch.org/docs/stable/generated/torch.autograd.grad.html (outputs (sequence of Tensor), inputs (sequence of Tensor), grad_outputs (sequence of Tensor))
def vector_jacobian_product(f, x, v):
    outputs = [f(x)]
    grads = torch.autograd.grad(outputs=outputs, inputs=[x], grad_outputs=[v], allow_unused=False)
    return grads[0]
