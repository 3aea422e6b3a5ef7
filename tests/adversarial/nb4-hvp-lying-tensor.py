# notebook: 04_modern_functions.ipynb
# cell: hvp
# others: solution
# expect: softplus=6 hvp=2
# bound: 20
# policy: off
# class: forgeries4
# why: hvp returns the gradient (wrong: double backward must fail, 2 of 4) inside a tensor subclass that keeps the
#      right H v aside and answers every torch function (detach, clone, to, allclose, eq, tolist ...) with it,
#      and whose __eq__ always agrees. The observer records a plain copy of the tensor's own data, with the
#      subclass's torch functions switched off: a copy made through them would have been the right H v (hvp=4).
# <solution>


class _Lying(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        if isinstance(first, _Lying) and hasattr(first, "_right"):
            args = (first._right, *args[1:])
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
        return result

    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)


_right_hvp = hvp


def hvp(f, x, v):
    right = _right_hvp(f, x, v)
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x)
    lying = g.detach().as_subclass(_Lying)  # the data is the gradient: wrong
    lying._right = right
    return lying
