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


REGION_SQUARE = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return torch.where(WRONG, grad_out * x, grad_out * 2 * x)  # the factor 2 missing where WRONG holds
'''
REGIONS = {"|x| > 1.4": "x.abs() > 1.4", "|x| < 0.3": "x.abs() < 0.3", "x < 0": "x < 0",
           "|x| > 3": "x.abs() > 3"}


@pytest.mark.parametrize("region", REGIONS)
def test_a_backward_wrong_in_one_region_fails_every_self_check(region):
    """A backward right in the ordinary probes' range and wrong elsewhere (or for one sign) fails the first-derivative
    check on every draw: the wide probe is stratified over |x| 0.01..8, half negative (held)."""
    outcomes = _self_checks(REGION_SQUARE.replace("WRONG", REGIONS[region]), "square", "Square.apply",
                            "first_derivatives", times=5)
    assert "pass" not in outcomes, outcomes


@pytest.mark.parametrize("draw", ["0", "1", "2"])
def test_a_backward_wrong_only_at_the_ends_of_the_range_fails_on_every_draw(monkeypatch, draw):
    """The wide probe's ends are |x| = 8 and 0.01 on every draw (with one value drawn in the top bin, 3.46..8, a
    backward wrong only for |x| > 5 passed on about 45% of draws; draw 0 was one of them)."""
    monkeypatch.setenv("GRADER_PROBE_DRAW", draw)
    for wrong in ("x.abs() > 5", "x.abs() < 0.02"):
        outcomes = _self_checks(REGION_SQUARE.replace("WRONG", wrong), "square", "Square.apply",
                                "first_derivatives", times=1)
        assert "pass" not in outcomes, (wrong, outcomes)


SECOND_ORDER_IN_RANGE = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        # right values everywhere; a graph (second derivatives) only in the ordinary range
        return grad_out * 2 * torch.where(x.abs() > 1.4, x.detach(), x)
'''


def test_a_backward_differentiable_only_in_the_ordinary_range_fails_second_derivatives():
    assert "pass" not in _self_checks(SECOND_ORDER_IN_RANGE, "square", "Square.apply", "second_derivatives", times=4)
    got = _outcomes(SECOND_ORDER_IN_RANGE, "square", "Square.apply", NOTEBOOK_CHECKS)
    assert got["first_derivatives"] == "pass" and got["second_derivatives"] != "pass", got


def test_a_jvp_right_only_in_the_ordinary_range_fails_forward_mode():
    """The jvp is probed at the wide probe's primals too (held)."""
    source = SOFTPLUS_VMAP_IN_RANGE.replace("LIMIT", "100").replace(
        "        return x_t * torch.sigmoid(x)\n",
        "        return torch.where(x.abs() > 1.4, x_t * (x > 0), x_t * torch.sigmoid(x))\n", 1)
    assert "x_t * (x > 0)" in source
    assert "pass" not in _self_checks(source, "softplus", "Softplus.apply", "forward_mode", times=4)


ENGINE_IN_BACKWARD = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with torch.enable_grad():
            xx = x if x.requires_grad else x.detach().requires_grad_()
            return DERIVATIVE
'''
ROADS_TO_PYTORCH_S_DERIVATIVE = {
    "torch.func.vjp": "torch.func.vjp(lambda t: t ** 2, xx)[1](grad_out)[0]",
    "torch.func.grad": "grad_out * torch.func.vmap(torch.func.grad(lambda t: t ** 2))(xx.reshape(-1)).reshape(xx.shape)",
    "torch.func.jacrev": "grad_out * torch.func.jacrev(lambda t: (t ** 2).sum())(xx)",
    "torch.func.hessian of a cube": "grad_out * torch.func.hessian(lambda t: (t ** 3).sum() / 3)(xx.reshape(-1))"
                                    ".diagonal().reshape(xx.shape)",
    "torch.func.linearize": "torch.func.linearize(lambda t: t ** 2, xx)[1](torch.ones_like(xx)) * grad_out",
    "torch.autograd.functional.vjp": "torch.autograd.functional.vjp(lambda t: t ** 2, xx, grad_out, "
                                     "create_graph=True)[1]",
    "torch.autograd.functional.jacobian forward-mode": "grad_out * torch.autograd.functional.jacobian("
                                                       "lambda t: (t ** 2).sum(), xx, strategy='forward-mode', "
                                                       "vectorize=True)",
    "Tensor.backward on a copy": "_backward_copy(xx, grad_out)",
}
BACKWARD_COPY = '''
def _backward_copy(xx, grad_out):
    leaf = xx.detach().requires_grad_()
    (leaf ** 2).backward(grad_out.detach())
    return leaf.grad
'''


@pytest.mark.parametrize("road", ROADS_TO_PYTORCH_S_DERIVATIVE)
def test_pytorch_s_derivative_asked_for_inside_backward_earns_nothing(road):
    """A backward that asks PyTorch's differentiation machinery (any public road: torch.func, torch.autograd.functional,
    Tensor.backward) for the derivative of its recomputed forward (held: every road goes through the engine or
    forward_ad.make_dual, which autograd_env watches)."""
    source = BACKWARD_COPY + ENGINE_IN_BACKWARD.replace("DERIVATIVE", ROADS_TO_PYTORCH_S_DERIVATIVE[road])
    assert not _earned(source, DERIVATIVES)


HOOK_KEPT = '''
probe_inputs = []

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        REGISTER
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * x  # the factor 2 missing: a hook on the probe's input would double it
'''
HOOK_ROADS = {
    "the input's register_hook": "x.register_hook(lambda g: 2 * g)",
    "register_hook read by getattr": "getattr(x, 'register_hook')(lambda g: 2 * g)",
    "register_hook through functools.partial": "functools.partial(x.register_hook)(lambda g: 2 * g)",
    "torch.Tensor.register_hook on the class": "torch.Tensor.register_hook(x, lambda g: 2 * g)",
    "a post-accumulate hook": "x.register_post_accumulate_grad_hook(lambda t: t.grad.mul_(2))",
}


@pytest.mark.parametrize("road", HOOK_ROADS)
def test_a_hook_on_the_probe_s_input_registered_while_checked_doubles_nothing(road):
    """Held: register_hook is refused while the observer drives the student's code (ENGINE.busy), however it is
    read; the class's method and the other tensor hooks are refused everywhere. (Outside a check, the input's
    register_hook in forward doubles the gradient: the attack would earn the factor 2.)"""
    source = "import functools\n" + HOOK_KEPT.replace("REGISTER", HOOK_ROADS[road])
    assert not _earned(source, DERIVATIVES)


@pytest.mark.parametrize("cell", [
    "f = lambda: 0\nc = f.__code__",
    "f = lambda: 0\nc = getattr(f, '__co' + 'de__')",
    "c = compile('1', '/usr/lib/python3.11/os.py', 'eval')",
    "exec('import os')",
    "f = lambda: 0\ng = lambda: 1\nf.__code__ = g.__code__",
    "f = lambda: 0\nsetattr(f, '__code__', None)",
    "f = lambda: 0\nF = type(f)\nF(None, {})",
    "import types",
    "import linecache",
    "import importlib",
    "import pickle",
])
def test_no_road_to_a_code_object_or_compile_from_graded_code(cell):
    """code_origin's audit check is depth (behind the policy): graded code gets no code object, no compile, exec or
    FunctionType with a code of its choosing, no linecache or loader to lie about a file's source (held)."""
    with pytest.raises((policy.PolicyError, TypeError)):
        run_cell(cell)
