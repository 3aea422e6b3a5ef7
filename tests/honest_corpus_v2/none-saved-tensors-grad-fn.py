# exercise: none
# notebook: 01_autograd_basics.ipynb
# style: the autograd notes' "Saved tensors" example run as is: y.grad_fn._saved_self compared with x (equal and the same object), then exp's _saved_result, and grad_fn.next_functions
# source: https://pytorch.org/docs/stable/notes/autograd.html#saved-tensors ("x = torch.randn(5, requires_grad=True); y = x.pow(2); print(x.equal(y.grad_fn._saved_self))  # True; print(x is y.grad_fn._saved_self)  # True")
x = torch.randn(5, requires_grad=True)
y = x.pow(2)
print(x.equal(y.grad_fn._saved_self))  # True
print(x is y.grad_fn._saved_self)  # True

y = x.exp()
print(y.equal(y.grad_fn._saved_result))  # True
print(y is y.grad_fn._saved_result)  # False
print(y.grad_fn.next_functions)
