"""PyTorch's answers on the trusted side, computed without torch.func.

The judging process computes notebook 4's references (forward-mode jvp, vmap, per-sample gradients, Hessians) with
dual tensors, loops and double backward, not torch.func: torch.func's first call imports torch._dynamo, 2 s of CPU
before the first verdict of every `make autograde`. These tests hold the two promises that makes: the same numbers as
torch.func, and a judging process that never imports torch._dynamo.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from conftest import ENTRY, namespace_for, solution_cells
from grader import checks
from grader.spec import function_probes
from grader.classroom import course
from grader.sandboxed import observe
from grader.boundary import wire
from grader.spec.exercises import (EXERCISES, reference_hessian, reference_jvp, reference_per_sample_grad,
                              reference_vmap)

SOFTPLUS = EXERCISES["softplus"]


def _probes() -> list:
    return [p for p in SOFTPLUS.probes(SOFTPLUS.default_shapes, 3) if p.inputs[0].dtype == torch.float64]


@pytest.mark.parametrize("probe", _probes(), ids=lambda p: "x".join(map(str, p.inputs[0].shape)) or "0-d")
def test_the_references_equal_torch_funcs_answers(probe):
    primals = tuple(x.detach() for x in probe.inputs if isinstance(x, torch.Tensor))
    directions = tuple(observe.tangents(probe))
    _, expected = torch.func.jvp(SOFTPLUS.reference_output, primals, directions)
    torch.testing.assert_close(reference_jvp(SOFTPLUS.reference_output, primals, directions), expected)

    stacked = observe.batched(probe)
    torch.testing.assert_close(reference_vmap(SOFTPLUS.reference_output, stacked),
                               torch.func.vmap(SOFTPLUS.reference_output)(*stacked))
    per_sample = torch.func.vmap(torch.func.grad(lambda *xs: SOFTPLUS.reference_output(*xs).sum()))(*stacked)
    torch.testing.assert_close(reference_per_sample_grad(SOFTPLUS.reference_output, stacked), per_sample)


@pytest.mark.parametrize("p", function_probes._hvp_probes((2, 5), 0), ids=lambda p: p.desc)
def test_the_hessian_by_double_backward_equals_torch_func_hessian(p):
    f = p.reference()
    grad, hess = reference_hessian(f, p.x)
    torch.testing.assert_close(hess, torch.func.hessian(f)(p.x))
    torch.testing.assert_close(grad, torch.func.grad(f)(p.x))
    assert not grad.requires_grad and not hess.requires_grad


def test_a_reference_whose_output_ignores_an_input_has_a_zero_tangent():
    x = torch.rand(3, dtype=torch.float64)
    assert torch.equal(reference_jvp(lambda t: torch.ones(3, dtype=torch.float64), (x,), (x,)), torch.zeros(3, dtype=torch.float64))


_JUDGE_ALONE = r"""
import json, sys
import torch
from grader import basics, checks
from grader.judge import second_order
from grader.spec import function_probes
from grader.boundary import wire
from grader.spec.exercises import EXERCISES
ex = EXERCISES["softplus"]
for check, observations in json.loads(sys.stdin.read()).items():
    checks.judge(check, "softplus", ex.probes(ex.default_shapes, 0), wire.decode(observations))
for p in function_probes._hvp_probes((2, 5), 0, forward_mode=True):
    second_order._hvp_reference(p)
print(json.dumps({"dynamo": "torch._dynamo" in sys.modules, "func_used": "torch._functorch.eager_transforms" in sys.modules}))
"""


def test_judging_notebook_4_never_imports_torch_dynamo():
    ns = namespace_for("softplus")
    exec(solution_cells()["softplus"].source, ns)
    probes = SOFTPLUS.probes(SOFTPLUS.default_shapes, 0)
    observed = {check: wire.encode(observe.observe(check, SOFTPLUS, ENTRY["softplus"](ns), probes))
                for check in ("forward mode", "vmap", "second derivatives")}
    done = subprocess.run([sys.executable, "-c", _JUDGE_ALONE], input=json.dumps(observed), capture_output=True,
                          text=True, cwd=course.REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["dynamo"] is False, \
        "judging imported torch._dynamo: a reference uses torch.func again (2 s of every autograde's start-up)"
