"""The course's two tolerances (grader/spec/tolerances.py) are kept apart for two measured reasons; if either stops
holding, one tolerance may do for every check."""

from __future__ import annotations

from pathlib import Path

import torch

from grader.spec import tolerances as tol


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> bool:
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))


def test_the_custom_function_tolerance_is_what_names_a_float32_roundtrip_in_backward():
    """exp-backward-float32-roundtrip is right to float32 precision (~1e-7 relative): its second derivatives are
    diagnosed ``float32_precision`` only because custom Functions are compared at 1e-7 (examples/mistakes is graded
    by make test; at the function checks' 1e-5 it would pass that comparison)."""
    mistake = (Path(__file__).resolve().parents[1] / "examples" / "mistakes" / "exp-backward-float32-roundtrip.py")
    assert "second-order=float32_precision" in mistake.read_text()
    assert tol.RTOL < 1e-6 < tol.FUNCTION_RTOL


def _penalty_gradient(w: torch.Tensor, x: torch.Tensor, eps: float) -> torch.Tensor:
    w = w.detach().requires_grad_()
    x = x.detach().requires_grad_()
    (grads,) = torch.autograd.grad((2 * torch.tanh(x @ w)).sum(), x, create_graph=True)
    norms = torch.sqrt((grads ** 2).sum(dim=1) + eps) if eps else grads.norm(dim=1)
    (dw,) = torch.autograd.grad(((norms - 1) ** 2).mean(), w)
    return dw


def test_an_epsilon_under_the_norms_square_root_fails_the_custom_function_tolerance_and_passes_the_function_one():
    """EmilienDupont/wgan-gp's gradient penalty adds 1e-12 under the square root (tests/honest_corpus/
    penalty-trainer-private-method.py): an honest answer the function checks must accept."""
    gen = torch.Generator().manual_seed(0)
    moved = 0
    for _ in range(8):
        w = torch.randn(4, dtype=torch.float64, generator=gen)
        x = 2 * torch.randn(8, 4, dtype=torch.float64, generator=gen)
        honest, reference = _penalty_gradient(w, x, 1e-12), _penalty_gradient(w, x, 0.0)
        moved += not _close(honest, reference, tol.RTOL, tol.ATOL)
        assert _close(honest, reference, tol.FUNCTION_RTOL, tol.FUNCTION_ATOL)
    assert moved >= 1
