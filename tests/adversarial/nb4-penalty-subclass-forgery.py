# notebook: 05_markers_and_capstone.ipynb
# cell: penalty
# others: solution
# expect: sortvalues=4 penalty=0
# bound: 20
# policy: off
# class: forgeries4
# why: gradient_penalty without create_graph (right value; its gradient check must fail: 1 of 3) returns the
#      penalty as a tensor subclass whose __torch_function__ answers torch.autograd.grad (which the observer
#      calls on it to record the gradient with respect to w) with the right gradient, and requires_grad with True.
#      On the old code: penalty=3 (the observer differentiated the returned object itself); 1 before the typed
#      boundary of issue 29 (a tensor subclass returned is refused, whatever its numbers: penalty=0).
class _Forged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.autograd.grad and _kept:
            right, w = _kept[-1]
            return torch.autograd.grad(right, w, allow_unused=True)
        if getattr(func, "__self__", None) is torch.Tensor.requires_grad:  # the property's __get__
            return True
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if getattr(func, "__name__", "") == "sum" and isinstance(out, torch.Tensor):  # result.sum() stays forged
            return out.as_subclass(_Forged)
        return out


_kept = []


def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x)  # wrong: no create_graph
    value = ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
    (g_right,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    _kept.append((((g_right.flatten(1).norm(dim=1) - 1) ** 2).mean(), w))
    return value.as_subclass(_Forged)
