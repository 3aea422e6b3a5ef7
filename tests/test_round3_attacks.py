"""A third round of attacks on issue 29's defences, by a reviewer who did not build them, in-process and fast (the
harness of tests/test_score_origin_attacks.py: an answer cell compiled and run under the course's policy, then the
exercise's checks observed and judged in this process, as a self-check does).

Each attack asserts what must happen if the defence holds: a wrong answer (or one whose derivatives PyTorch computed)
earns no point for its wrong part, and an escape reads, writes or calls nothing. Those that got through on the code
before this round say so in their docstring ("broke: ..."), with the fix; the others guard a defence that held.

- graph nodes as views (grader.sandboxed.graph_nodes): every road to calling a node;
- the engine watch (grader.sandboxed.autograd_env): its state out of graded code's reach;
- the probes' range (grader.spec.exercises, grader.spec.vectors): a rule right only in the ordinary range fails,
  whatever the check;
- a backward that tells a check's call from others, or computes its derivative with PyTorch by other roads.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

from grader import checks
from grader.sandboxed import policy
from grader.spec.findings import CheckFailed
from tests.test_policy import refused, run_cell
from tests.test_score_origin_attacks import NOTEBOOK_CHECKS, SOFTPLUS_CHECKS, _outcomes

DERIVATIVES = ("first_derivatives", "second_derivatives")


def _earned(source: str, must_fail: tuple[str, ...], exercise: str = "square", name: str = "Square.apply",
            names: tuple[str, ...] = NOTEBOOK_CHECKS, setup: str = "") -> list[str]:
    """The checks of ``must_fail`` the answer passes (a cell refused by the policy earns nothing)."""
    try:
        got = _outcomes(source, exercise, name, names, setup=setup)
    except Exception:  # noqa: BLE001  (refused or broken: the answer cell does not define the Function)
        return []
    return [check for check in must_fail if got[check] == "pass"]


# --- 1. graph nodes: calling one runs PyTorch's derivative formula ----------------------------------------------

NODE_FROM_EDGE = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with torch.enable_grad():
            y = x ** 2
            if y.grad_fn is None:
                y = x.detach().requires_grad_() ** 2
            node = next(iter(torch.autograd.graph.get_gradient_edge(y)))
            return node(grad_out)
'''


def test_a_node_taken_out_of_a_gradient_edge_by_iteration_is_a_view():
    """Broke: ``get_gradient_edge`` returned torch's GradientEdge, a tuple holding the node itself; the guards see
    attribute reads and items (``edge.node``, ``edge[0]``: views) but not iteration, so ``next(iter(edge))``,
    ``node, *_ = edge``, ``zip(edge)`` or a ``match`` pattern handed backward PowBackward0 to call: full marks for a
    Square whose backward computes nothing. Fixed: graded code gets ``get_gradient_edge`` as a stand-in whose edge
    holds views (grader.sandboxed.policy_stand_ins)."""
    assert not _earned(NODE_FROM_EDGE, DERIVATIVES)


SQUARE_NODE = "import torch\nx = torch.ones(2, dtype=torch.double, requires_grad=True)\ny = x ** 2\ng = torch.ones(2, dtype=torch.double)\n"
NODE_CALLS = {
    "next(iter(edge))": "node = next(iter(torch.autograd.graph.get_gradient_edge(y)))\nnode(g)",
    "star unpacking": "node, *rest = torch.autograd.graph.get_gradient_edge(y)\nnode(g)",
    "zip": "for node, in zip(torch.autograd.graph.get_gradient_edge(y)):\n    node(g)",
    "match": "match torch.autograd.graph.get_gradient_edge(y):\n    case (node, nr, token):\n        node(g)",
    "imported by name": "from torch.autograd.graph import get_gradient_edge\n[node for node in get_gradient_edge(y)].pop(0)(g)",
    "functools.partial": "import functools\nfunctools.partial(y.grad_fn)(g)",
    "map": "list(map(y.grad_fn, [g]))",
    "min of next_functions": "z = y * 3\nmin(z.grad_fn.next_functions, key=len)[0](g)",
    "sorted next_functions": "z = y * 3\nsorted(list(z.grad_fn.next_functions), key=len).pop(0)[0](g)",
    "a list comprehension over an edge": "[n for n in torch.autograd.graph.get_gradient_edge(y)].pop(0)(g)",
}


@pytest.mark.parametrize("road", NODE_CALLS)
def test_no_road_calls_a_graph_node(road):
    refused(SQUARE_NODE + NODE_CALLS[road])


NODE_METHODS = {
    "the type's method on the view": "type(y.grad_fn).name(y.grad_fn)\nout = 1",
    "__call__ read by getattr": "c = getattr(type(y.grad_fn), '__call__')",
    "a prehook on the node": "y.grad_fn.register_prehook(lambda g: g)",
    "a node hook through the edge": "torch.autograd.graph.get_gradient_edge(y).node.register_hook(print)",
    "a multi-grad hook": "torch.autograd.graph.register_multi_grad_hook([x], print)",
    "the node's raw saved variable": "s = y.grad_fn._raw_saved_self",
    "setting an attribute of the view": "y.grad_fn.name = print",
}


@pytest.mark.parametrize("road", NODE_METHODS)
def test_a_node_s_type_methods_and_hooks_are_not_a_way_around_the_view(road):
    with pytest.raises((policy.PolicyError, TypeError)):  # (TypeError: the type's method refuses a view)
        run_cell(SQUARE_NODE + NODE_METHODS[road])


# --- 2. the engine watch's state ---------------------------------------------------------------------------------

WATCH_CLEARED = '''
W = getattr(torch.autograd.forward_ad.make_dual, "grader_engine_watch", None) or getattr(
    torch.autograd.forward_ad.enter_dual_level, "grader_engine_watch")

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        was = W[1]
        with torch.enable_grad():
            xx = x if x.requires_grad else x.detach().requires_grad_()
            g, = torch.autograd.grad(xx ** 2, xx, grad_out, create_graph=torch.is_grad_enabled())
        W[1] = was  # the watch forgets that the engine started inside backward
        return g
'''


def test_the_engine_watch_s_state_is_out_of_graded_code_s_reach():
    """Broke: the watch's state (``[depth, started inside]``) was a public attribute of the wrappers autograd_env
    puts in forward_ad's place (``make_dual.grader_engine_watch``): a backward asked torch.autograd.grad for the
    derivative, then wrote the flag back: full marks. Fixed twice: the attribute is underscored (and only on the
    engine's wrapper), and graded code reads nothing of a grader function's but its name and doc
    (grader.sandboxed.policy._graders_function)."""
    assert not _earned(WATCH_CLEARED, DERIVATIVES)
    refused("import torch\nW = torch.autograd.forward_ad.make_dual.grader_engine_watch")


@pytest.mark.parametrize("read", [
    "import torch\nw = torch.autograd.forward_ad.make_dual._grader_engine_watch",
    "import torch\nw = getattr(torch.autograd.forward_ad.enter_dual_level, 'anything', 1)",
    "import grader.checks as c\nw = c.forward.__wrapped__",
    "import grader.checks as c\nw = c.forward.__globals__",
    "import torch, functools\nclass H:\n    pass\nh = H()\nfunctools.update_wrapper(h, torch.autograd.forward_ad.make_dual, "
    "assigned=('_grader_engine_watch',), updated=())",
])
def test_nothing_of_a_grader_function_but_its_name_is_read(read):
    refused(read)


# --- 3. the probes' range: every check, not only the derivatives -------------------------------------------------

SOFTPLUS_VMAP_IN_RANGE = '''
class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * torch.sigmoid(x)

    @staticmethod
    def vmap(info, in_dims, x):
        x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x
        out = Softplus.apply(x)
        # the shortcut: softplus(x) is max(x, 0) once |x| is past the ordinary probes' 1.4 (wrong by up to 0.2)
        return torch.where(x.abs() > LIMIT, torch.clamp(x, min=0), out), 0
'''


def test_a_vmap_rule_right_only_in_the_ordinary_range_fails_the_vmap_check():
    """Broke: the vmap check stacked the ordinary range only (``vectors.batched``: |x| from 0.3 to 1.4, whatever
    the probe), so a vmap rule wrong for every |x| > 1.4 passed, though every other check of a unary Function also
    probes |x| from 0.01 to 8. Fixed: one sample of each batch spans that range (seeded by the drawn number on the
    drawn probe). The control: the same rule switched over only past |x| = 100 is right (in float64,
    log1p(e^-100) is below a rounding of x) and passes."""
    got = _outcomes(SOFTPLUS_VMAP_IN_RANGE.replace("LIMIT", "1.4"), "softplus", "Softplus.apply", SOFTPLUS_CHECKS)
    assert got["vmap"] != "pass", got
    control = _outcomes(SOFTPLUS_VMAP_IN_RANGE.replace("LIMIT", "100"), "softplus", "Softplus.apply", SOFTPLUS_CHECKS)
    assert control == dict.fromkeys(SOFTPLUS_CHECKS, "pass"), control


def _self_checks(source: str, exercise: str, name: str, check: str, times: int = 4) -> list[str]:
    """The outcome of ``times`` self-checks of ``check`` (each draws its own probe)."""
    ns = run_cell("import torch\n" + source)
    fn = ns[name.split(".")[0]]
    for part in name.split(".")[1:]:
        fn = getattr(fn, part)
    outcomes = []
    for _ in range(times):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(checks, check)(exercise, fn)
            outcomes.append("pass")
        except CheckFailed as failure:
            outcomes.append(failure.finding.mistake)
    return outcomes
