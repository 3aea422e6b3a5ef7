# notebook: 04_modern_functions.ipynb
# cell: hvp
# others: solution
# expect: softplus=6 hvp=2
# bound: 20
# policy: off
# class: forgeries4
# why: hvp_forward computes H v by double backward (right values; forward-over-reverse must fail: 2 of 4), and
#      just before calling f it installs a torch._functorch.pyfunctorch.retrieve_all_functorch_interpreters (and a
#      torch._C._functorch.get_interpreter_stack) that report a jvp transform, and a forward_ad.unpack_dual that
#      reports a tangent: the probe function records how it is called through them, while the student's code
#      runs. On the old code: hvp=4 (the patches were put back only after hvp_forward returned).
import types

import torch._C._functorch
import torch._functorch.pyfunctorch
import torch.autograd.forward_ad

# <solution>


class _FakeJvpInterpreter:
    def key(self):
        return torch._C._functorch.TransformType.Jvp

    def level(self):
        return 1


_fake_stack = lambda: [_FakeJvpInterpreter()]  # noqa: E731
_fake_unpack_dual = lambda tensor, *, level=None: types.SimpleNamespace(primal=tensor, tangent=tensor)  # noqa: E731


def hvp_forward(f, x, v):
    torch._functorch.pyfunctorch.retrieve_all_functorch_interpreters = _fake_stack
    torch._C._functorch.get_interpreter_stack = _fake_stack
    torch.autograd.forward_ad.unpack_dual = _fake_unpack_dual
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]
