# exercise: cube
# style: `from __future__ import annotations`, typed staticmethods (torch.Tensor, Tuple), the helpers' NumPy results checked once after the classes against np.power on a small array
# source: PEP 563 (https://peps.python.org/pep-0563/); https://numpy.org/doc/stable/reference/generated/numpy.power.html; notebook 3's Cube / CubeBackward
from __future__ import annotations

from typing import Tuple


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> torch.Tensor:
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        x, sav_grad_out = ctx.saved_tensors
        return cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, sav_grad_out, x)


a = np.array([1.0, -2.0, 0.5])
assert np.allclose(cube_forward(torch.from_numpy(a)).numpy(), np.power(a, 3))
