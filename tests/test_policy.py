"""The policy graded cells compile and run under (grader.sandboxed.policy): honest course code runs as it is; every road
to the observer's machinery (frames, code objects, gc, sys, os, ctypes, the grader's modules, underscore internals,
metaclasses, format-string attribute walks, torch's and numpy's escape hatches) is refused with its line.

In-process and fast: each case compiles one cell with the policy and runs it in a namespace with the runtime
installed, as ``grader.sandboxed.child`` does for a student's cell in the sandbox. The end-to-end attacks (through nbgrader)
are students of tests/adversarial/ (``policy-*``)."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from grader.sandboxed import policy

ROOT = Path(__file__).resolve().parent.parent


def run_cell(source: str, ns: dict | None = None) -> dict:
    """Compile ``source`` under the policy and run it in ``ns`` (a notebook's namespace)."""
    if ns is None:
        ns = {"__name__": "__main__"}
        policy.Runtime(ns).install()
    tree = policy.transform(ast.parse(textwrap.dedent(source)))
    exec(compile(tree, "<cell>", "exec"), ns)
    return ns


def refused(source: str, ns: dict | None = None) -> policy.PolicyError:
    with pytest.raises(policy.PolicyError) as caught:
        run_cell(source, ns)
    return caught.value


HONEST = {
    "a Function with a helper, _ and f-strings": """
        import torch

        def _double(t):
            return 2 * t

        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_out):
                x, = ctx.saved_tensors
                return _double(x) * grad_out

        x = torch.randn(3, dtype=torch.double, requires_grad=True)
        _ = torch.autograd.gradcheck(Square.apply, (x,))
        assert torch.autograd.gradgradcheck(Square.apply, (x,))
        print(f"{Square.__name__}: {_!r:>6}")
    """,
    "setup_context, jvp, vmap and torch.func": """
        import torch
        import torch.autograd.forward_ad as fwAD
        from torch.func import grad, vmap, jacrev

        class Softplus(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return torch.nn.functional.softplus(x)

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, = inputs
                ctx.save_for_backward(x)
                ctx.save_for_forward(x)

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * torch.sigmoid(x)

            @staticmethod
            def jvp(ctx, t):
                x, = ctx.saved_tensors
                return t * torch.sigmoid(x)

            generate_vmap_rule = True

        x = torch.randn(4, dtype=torch.double)
        assert torch.allclose(vmap(Softplus.apply)(x), torch.nn.functional.softplus(x))
        assert torch.allclose(grad(lambda t: Softplus.apply(t).sum())(x), torch.sigmoid(x))
        jacrev(Softplus.apply)(x)
        with fwAD.dual_level():
            y = Softplus.apply(fwAD.make_dual(x, torch.ones_like(x)))
            assert torch.allclose(fwAD.unpack_dual(y).tangent, torch.sigmoid(x))
    """,
    "numpy inside backward, once_differentiable, in-place attribute updates": """
        import numpy as np
        import torch
        from torch.autograd.function import once_differentiable

        class Exp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = torch.from_numpy(np.exp(x.detach().numpy()))
                ctx.save_for_backward(y)
                ctx.calls = 0
                return y

            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                y, = ctx.saved_tensors
                ctx.calls += 1
                return g * y

        x = torch.randn(3, dtype=torch.double, requires_grad=True)
        Exp.apply(x).sum().backward()
        x.grad += 1
        assert torch.allclose(x.grad, torch.exp(x) + 1)
    """,
    "nn.Module with super().__init__, a dataclass, NamedTuple, nonlocal and comprehensions": """
        import torch
        from dataclasses import dataclass
        from typing import NamedTuple
        import functools, itertools, math

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 2)
                self._cache = {}

            def forward(self, x):
                self._cache["last"] = x
                return self.lin(x)

        @dataclass
        class Config:
            lr: float = 0.1

        class Pair(NamedTuple):
            a: int
            b: int

        def counter():
            n = 0
            def bump():
                nonlocal n
                n += 1
                return n
            return bump

        bump = counter(); bump()
        assert bump() == 2
        net = Net()
        out = net(torch.randn(4, 3))
        assert out.shape == (4, 2) and Config().lr == 0.1 and Pair(1, 2).b == 2
        assert sum(x * y for x, y in itertools.product(range(2), repeat=2)) == 1
        assert functools.reduce(lambda a, b: a * b, [1, 2, 3]) == 6 and math.isclose(math.pi, 3.14159, rel_tol=1e-4)
        squares = {k: v for k, v in zip("ab", [1, 4])}
        assert [*squares] == ["a", "b"] and type(net).__name__ == "Net"
    """,
    "plots, format strings, getattr with names, exceptions": """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import torch

        xs = torch.linspace(-3, 3, 50)
        fig, ax = plt.subplots()
        ax.plot(xs.numpy(), torch.tanh(xs).numpy(), label="tanh")
        ax.legend()
        plt.close(fig)
        assert "{} + {x}".format(1, x=2) == "1 + 2" and "{0.real}".format(3) == "3"
        assert getattr(xs, "shape") == (50,) and hasattr(xs, "grad") and not hasattr(xs, "nothing")
        try:
            torch.ones(2) @ torch.ones(3)
        except RuntimeError as error:
            message = str(error)
        assert "size" in message, message
        input = torch.ones(2)   # a variable named like a builtin
        assert input.sum() == 2
    """,
    "a Function made by type() with three arguments": """
        import torch
        Exp = type("Exp", (torch.autograd.Function,), {
            "forward": staticmethod(lambda x: torch.exp(x)),
            "setup_context": staticmethod(lambda ctx, inputs, output: ctx.save_for_backward(output)),
            "backward": staticmethod(lambda ctx, g: g * ctx.saved_tensors[0]),
        })
        x = torch.randn(3, dtype=torch.double, requires_grad=True)
        assert torch.autograd.gradcheck(Exp.apply, (x,))
    """,
    "the course's self-checks and graphs used again in a student's own cell": """
        import torch
        from grader import checks, basics
        from grader.graphs import draw
        with checks.skip_if_unfinished("square"):
            x = torch.ones(2, requires_grad=True)
            (x * 2).sum().backward()
        assert callable(checks.forward) and callable(basics.check_vjp) and callable(draw)
    """,
    "a pasted script": """
        import torch

        def main():
            return torch.zeros(1)

        if __name__ == "__main__":
            main()
    """,
}


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_course_code_runs_under_the_policy(name: str) -> None:
    run_cell(HONEST[name])


# (what the attack tries, the cell, a word the refusal must contain)
ATTACKS = [
    ("import sys for frames", "import sys\nf = sys._getframe(1)", "sys"),
    ("import gc for a walk", "import gc\ngc.get_objects()", "gc"),
    ("import os to exec", "import os\nos.execv('/bin/true', ['true'])", "os"),
    ("resource limits", "import resource", "resource"),
    ("ctypes", "import ctypes", "ctypes"),
    ("the grader's own modules", "from grader import child", "grader"),
    ("the grader's modules behind the self-checks", "from grader import checks\nchecks.observe", "grader.checks.observe"),
    ("the grader's package", "import grader.checks", "grader"),
    ("the grader's modules through a facade", "import grader.graphs\ngrader.graphs", "grader"),
    ("a traceback's frames", "try:\n    1/0\nexcept Exception as e:\n    tb = e.__traceback__", "__traceback__"),
    ("f_back", "def f(frame):\n    return frame.f_back", "f_back"),
    ("a generator's frame", "g = (i for i in [1])\nframe = g.gi_frame", "gi_frame"),
    ("a generator's frame by getattr", "g = (i for i in [1])\nframe = getattr(g, 'gi_' + 'frame')", "gi_frame"),
    ("dunder by getattr with a computed name", "c = getattr(1, '_' * 2 + 'class__')", "__class__"),
    ("dunder attributes", "subs = ().__class__.__base__.__subclasses__()", "__subclasses__"),
    ("a function's globals", "def f(): pass\ng = f.__globals__", "__globals__"),
    ("globals()", "ns = globals()", "globals"),
    ("vars()", "ns = vars()", "vars"),
    ("eval", "eval('1')", "eval"),
    ("exec", "exec('x = 1')", "exec"),
    ("compile a helper with a lying file name", "c = compile('1', '/usr/lib/python3.11/x.py', 'eval')", "compile"),
    ("open /proc/self/mem", "f = open('/proc/self/mem', 'rb')", "open"),
    ("builtins through a name built at run time", "b = getattr(print, '__self__')", "__self__"),
    ("__import__", "m = __import__('os')", "__import__"),
    ("a format string walking attributes", "s = '{0.__class__}'.format(1)", "__class__"),
    ("str.format on the type", "s = str.format('{0.__class__.__mro__}', 1)", "__class__"),
    ("format_map", "s = '{x.__class__}'.format_map({'x': 1})", "__class__"),
    ("three-argument type() with a special method", "T = type('T', (object,), {'__torch_function__': 1})",
     "__torch_function__"),
    ("three-argument type() naming a guard", "T = type('T', (object,), {'_getattr_': 1})", "_getattr_"),
    ("a metaclass keyword", "class M(type): pass\nclass A(metaclass=M): pass", "metaclass"),
    ("a metaclass through type(type(...))", "import torch\nmeta = type(torch.Tensor)", "metaclass"),
    ("__torch_function__ on a subclass", "import torch\nclass T(torch.Tensor):\n    def __torch_function__(cls, *a): pass",
     "__torch_function__"),
    ("__torch_dispatch__ assigned in a class body", "import torch\nclass T(torch.Tensor):\n    __torch_dispatch__ = None",
     "__torch_dispatch__"),
    ("setattr of a dunder on a class", "class A: pass\nsetattr(A, '__torch_function__', print)", "__torch_function__"),
    ("rebinding the policy's guards", "_getattr_ = getattr", "_getattr_"),
    ("torch.library", "import torch\nlib = torch.library", "torch.library"),
    ("torch.ops", "import torch\nops = torch.ops", "torch.ops"),
    ("torch.load (pickle)", "import torch\ntorch.load('x.pt')", "torch.load"),
    ("torch.utils.cpp_extension", "import torch.utils.cpp_extension", "torch.utils"),
    ("torch.jit", "import torch\ntorch.jit.script", "torch.jit"),
    ("torch.hub", "from torch import hub", "hub"),
    ("a module reached through torch", "import torch\nos = torch.os", "os"),
    ("a module reached through pyplot", "import matplotlib.pyplot as plt\nimportlib = plt.importlib", "importlib"),
    ("sys beyond its everyday names, reached through pyplot", "import matplotlib.pyplot as plt\nplt.sys.modules",
     "sys"),  # (pyplot's own names are an allow-list now: refused at plt.sys)
    ("sys beyond its everyday names", "import sys\nsys.modules", "sys.modules"),
    ("numpy's ctypes bridge", "import numpy as np\np = np.zeros(3).ctypes", "ctypes"),
    ("numpy's stride tricks", "import numpy as np\nnp.lib.stride_tricks.as_strided", "numpy.lib"),
    ("numpy's memory map of /proc/self/mem", "import numpy as np\nnp.memmap('/proc/self/mem')", "memmap"),
    ("a tensor hook registered inside backward (it would change what a check reads of backward)",
     "import torch\nclass S(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
     "    @staticmethod\n    def backward(ctx, g):\n        g.register_hook(print)\n        return 2 * g\n"
     "x = torch.ones(1, requires_grad=True)\nS.apply(x).sum().backward()", "register_hook inside a Function"),
    ("calling a recomputed output's grad_fn (PyTorch's derivative formula)",
     "import torch\nx = torch.ones(1, requires_grad=True)\n(x ** 2).grad_fn(torch.ones(1))", "calling a graph node"),
    ("calling the next node of a graph", "import torch\nx = torch.ones(1, requires_grad=True)\n"
     "(x * 2).grad_fn.next_functions[0][0](torch.ones(1))", "calling a graph node"),
    ("a hook on a graph node (through its view)",
     "import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).grad_fn.register_hook(print)", "register_hook"),
    ("a hook on a graph node", "import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).grad_fn.register_prehook(print)",
     "register_prehook"),
    ("a global module hook", "import torch.nn.modules.module", "torch.nn.modules"),
    ("a graph-wide hook", "import torch\nfrom torch.autograd.graph import register_multi_grad_hook", "register_multi_grad_hook"),
    ("changing torch's functions", "import torch\ntorch.autograd.grad = print", "changing the module torch.autograd"),
    ("changing torch's classes", "import torch\ntorch.Tensor.backward = print", "changing the class"),
    ("changing a Function's internals", "import torch\nclass S(torch.autograd.Function): pass\nS._backward_cls.apply = print",
     "_backward_cls"),
    ("typing evaluating a string", "import typing\ntyping.get_type_hints", "get_type_hints"),
    ("singledispatch evaluating annotations", "from functools import singledispatch", "singledispatch"),
    ("make_dataclass with a namespace", "import dataclasses\ndataclasses.make_dataclass", "make_dataclass"),
    ("IPython's shell", "get_ipython().user_ns", "get_ipython"),
    ("an underscore attribute of torch", "import torch\nC = torch._C", "_C"),
    ("the SavedVariable of a graph node (its hooks outlive the call)", "import torch\nx = torch.ones(1, requires_grad=True)\n"
                                                    "y = (x * 2).grad_fn._raw_saved_other", "_raw_saved_other"),
    ("a relative import", "from . import child", "relative"),
    ("async code", "async def f():\n    pass", "AsyncFunctionDef"),
    ("except* (ExceptionGroup tricks)", "try:\n    pass\nexcept* ValueError:\n    pass", "TryStar"),
]


@pytest.mark.parametrize("what,source,word", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_every_road_to_the_observer_is_refused_with_its_line(what: str, source: str, word: str) -> None:
    error = refused(source)
    text = " ".join(error._render_traceback_())
    assert word in text, text
    assert "line " in text, text  # the student sees which line was refused


def test_a_refusal_at_compile_time_names_the_line_and_what_the_course_allows() -> None:
    with pytest.raises(policy.PolicyError) as caught:
        policy.transform(ast.parse("import torch\n\nx = 1\nimport gc\n"))
    lines = caught.value._render_traceback_()
    assert lines[0].startswith("PolicyError: line 4: import gc"), lines
    assert "torch, numpy, math" in lines[1]


def test_a_refusal_when_the_cell_runs_names_the_students_line() -> None:
    error = refused("import torch\nx = 1\nname = 'o' + 's'\ny = getattr(torch, name)\n")
    assert error._render_traceback_()[0].startswith("PolicyError: line 4:"), error._render_traceback_()


def test_instructor_objects_in_the_namespace_stay_opaque() -> None:
    """What the instructor's cells (run as they are) leave in the namespace: modules such as gc, the grader's
    check modules and IPython's shell are there, but a graded cell can read nothing of them."""
    import gc
    import types

    from grader import checks

    ns = {"__name__": "__main__", "gc": gc, "checks": checks, "get_ipython": lambda: None,
          "shell": types.SimpleNamespace(user_ns={})}
    policy.Runtime(ns).install()
    assert "get_ipython" not in ns
    refused("gc.get_objects()", ns)
    refused("checks.observe", ns)
    run_cell("value = shell", ns)  # types.SimpleNamespace is a builtin kind: a plain record, readable
    class Grader:  # noqa: D401 (an object of the grader's kind)
        secret = 1
    Grader.__module__ = "grader.sandboxed.child"
    ns["obj"] = Grader()
    refused("obj.secret", ns)


def test_the_notebooks_and_catalogue_compile_under_the_policy() -> None:
    """Every code cell of the released notebooks, every answer of examples/ and every honest corpus entry compiles:
    none is refused before it runs (the grader's own test and set-up cells aside, which are the instructor's). A
    notebook that scores nothing (the labs) is left out: grading runs none of its cells (runner._grade_cells)."""
    checked = 0
    for path in sorted((ROOT / "notebooks").glob("*/*.ipynb")) + sorted((ROOT / "solutions").glob("*/*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        if not any(c.get("metadata", {}).get("nbgrader", {}).get("grade") for c in cells):
            continue
        for cell in cells:
            source = "".join(cell["source"])
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] != "code" or meta.get("locked"):
                continue
            assert policy.check(source) == [], (path.name, meta.get("grade_id"), source[:200])
            checked += 1
    for path in sorted((ROOT / "examples").glob("*/*.py")) + sorted((ROOT / "tests" / "honest_corpus").glob("*.py")):
        assert policy.check(path.read_text().replace("# <solution>", "")) == [], path.name
        checked += 1
    assert checked > 190, checked  # the folders were found and read


def test_the_guards_cost_little() -> None:
    """An attribute read through the policy costs about two microseconds: a backward called thousands of times in a
    second-order check stays fast. (100,000 iterations are 200,000 guarded reads, an in-place add each: 0.28-0.39 s
    of CPU at 7423727, 0.34-0.44 s on 28 Nov with graph nodes' views and the stand-ins' checks, on a quiet machine;
    the bound leaves room for a loaded one, where the same loop took 0.54 s during the whole suite.)"""
    import time

    ns = run_cell("""
        import torch
        def f(n):
            t = 0
            for _ in range(n):
                t += torch.float64.itemsize
            return t
    """)
    start = time.process_time()
    ns["f"](100_000)
    assert time.process_time() - start < 0.8


@pytest.fixture
def shell_with_policy():
    """An IPython shell with the policy installed, as grader.sandboxed.child makes one; gone afterwards (a shell left behind
    makes this process look like a notebook to the self-checks of the tests that follow)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.clear()
    shell.init_user_ns()
    policy.Runtime(shell.user_ns).install()
    shell.ast_transformers[:] = [policy.PolicyTransformer()]
    yield shell
    shell.ast_transformers[:] = []
    InteractiveShell.clear_instance()


def test_in_ipython_a_refused_cell_runs_no_line_of_it(shell_with_policy) -> None:
    shell = shell_with_policy
    try:
        result = shell.run_cell("ran = True\nimport os, sys\n", store_history=False)
        assert result.error_before_exec is not None and "ran" not in shell.user_ns
        assert result.error_before_exec.lineno == 2 and type(result.error_before_exec).__name__ == "PolicyError"
        assert shell.ast_transformers, "IPython unregistered the policy"
        assert shell.run_cell("import torch\nok = torch.ones(1).sum().item()", store_history=False).success
        assert shell.user_ns["ok"] == 1.0
    finally:
        shell.ast_transformers[:] = []


def test_the_policy_fails_closed_when_it_breaks(monkeypatch, shell_with_policy) -> None:
    """IPython unregisters a transformer that raises anything but InputRejected and runs the cell (and the rest of
    the notebook) as it is: a bug of the policy's must reject the cell instead."""
    shell = shell_with_policy

    def broken(tree):
        raise ValueError("a bug of the policy's")

    monkeypatch.setattr(policy, "transform", broken)
    try:
        result = shell.run_cell("ran = True", store_history=False)
        assert "ran" not in shell.user_ns
        assert "could not check this cell" in str(result.error_before_exec)
        assert shell.ast_transformers, "IPython unregistered the policy"
    finally:
        shell.ast_transformers[:] = []


# --- everyday code that harms nothing runs as written (issue 29: 15 of 89 right answers scored 0 on such code)

EVERYDAY = {
    "a device chosen with torch.cuda": "import torch\ncuda = torch.cuda.is_available()\n"
                                       "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nn = torch.cuda.device_count()",
    "autocast's decorators on a Function": (
        "import torch\nclass Cube(torch.autograd.Function):\n    @staticmethod\n"
        "    @torch.amp.custom_fwd(device_type='cpu')\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n"
        "        return x ** 3\n    @staticmethod\n    @torch.amp.custom_bwd(device_type='cpu')\n"
        "    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 3 * x ** 2 * g\n"
        "y = Cube.apply(torch.ones(2, requires_grad=True))\ny.sum().backward()"),
    "a flag of its own on ctx": (
        "import torch\nclass L(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, b=None):\n"
        "        ctx._has_bias = b is not None\n        ctx.save_for_backward(x)\n        return x * 2\n"
        "    @staticmethod\n    def backward(ctx, g):\n        assert ctx._has_bias is False\n        return g * 2, None\n"
        "L.apply(torch.ones(2, requires_grad=True)).sum().backward()"),
    "from __future__ import annotations": "from __future__ import annotations\n"
                                          "def f(x: torch.Tensor) -> int:\n    return 1\nf(1)",
    "a match statement": (
        "import torch\ndef kind(x):\n    match x:\n        case int():\n            return 'int'\n"
        "        case torch.Tensor():\n            return 'tensor'\n        case (a, b):\n            return 'pair'\n"
        "        case {'k': v}:\n            return v\n        case torch.float64:\n            return 'dtype'\n"
        "        case _:\n            return 'other'\n"
        "assert [kind(1), kind(torch.ones(1)), kind((1, 2)), kind({'k': 3}), kind(torch.float64), kind('s')] == "
        "['int', 'tensor', 'pair', 3, 'dtype', 'other']"),
    "a match on a class of its own": (
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n    y: int = 0\n"
        "match P(1, 2):\n    case P(x=1, y=y):\n        found = y\nassert found == 2\n"
        "match P(3):\n    case P(a, b):\n        assert (a, b) == (3, 0)"),
    "print to stderr, the Python version": "import sys\nprint('debug', file=sys.stderr)\nv = sys.version\n"
                                           "ok = sys.version_info >= (3, 8)",
    "vars() in a branch that never runs": "def f(ctx):\n    if False:\n        print(vars(ctx))\n    return 1\nf(1)",
    "vars() of its own object": "class A:\n    def __init__(self):\n        self.x = 1\nassert vars(A()) == {'x': 1}",
    "functools.reduce(operator.mul, ...)": "import functools, operator\n"
                                           "assert functools.reduce(operator.mul, [2, 3]) == 6\n"
                                           "assert operator.itemgetter(0)([5]) == 5",
    "type(x).__name__": "import torch\nn = type(torch.ones(1)).__name__",
    "a logger": "import logging\nlogger = logging.getLogger('mine')\nlogger.setLevel(logging.INFO)\n"
                "logger.info('hello %s', 1)\nlogging.basicConfig(level=logging.WARNING, format='%(message)s')",
}


@pytest.mark.parametrize("name", list(EVERYDAY))
def test_everyday_harmless_code_runs_as_written(name, capsys):
    run_cell(EVERYDAY[name])


EVERYDAY_GADGETS = {
    # what the newly allowed modules must not hand out
    "operator.attrgetter reads any attribute": "import operator\noperator.attrgetter('__class__')",
    "operator.methodcaller calls any method": "import operator\noperator.methodcaller('__reduce_ex__', 2)",
    "operator.getitem bypasses the item guard": "import operator\noperator.getitem",
    "operator.setitem writes past the write guard": "import operator\noperator.setitem",
    "a logging Formatter formats by attributes": "import logging\nlogging.Formatter",
    "a '{' style basicConfig": "import logging\nlogging.basicConfig(format='{message.__class__}', style='{')",
    "a logger's handlers": "import logging\nlogging.getLogger().handlers",
    "a logger's manager": "import logging\nlogging.getLogger().manager",
    "changing a logger": "import logging\nlogging.getLogger('x').info = print",
    "sys.modules": "import sys\nsys.modules",
    "sys._getframe": "import sys\nsys._getframe",
    "sys.settrace": "import sys\nsys.settrace",
    "torch.cuda beyond is_available": "import torch\ntorch.cuda.memory",
    "torch's own name on ctx": (
        "import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx._materialize_non_diff_grads = False\n        return x * 2\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\nF.apply(torch.ones(1, requires_grad=True))"),
    "torch.func's name on ctx": (
        "import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx._pt_out_dims = 0\n        return x * 2\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\nF.apply(torch.ones(1, requires_grad=True))"),
    "vars() of a library object": "import torch\nvars(torch.nn.Linear(1, 1))",
    "vars() without an argument": "vars()",
    "a class pattern reading any attribute": "import torch\nmatch torch:\n    case object(ops=o):\n        pass",
    "a class pattern with an underscore field": "class A:\n    pass\nmatch A():\n    case A(_x=1):\n        pass",
    "a value pattern reaching a refused name": "import torch\nmatch 1:\n    case torch.ops.aten:\n        pass",
}


@pytest.mark.parametrize("name", list(EVERYDAY_GADGETS))
def test_the_everyday_allowances_hand_out_no_gadget(name):
    refused(EVERYDAY_GADGETS[name])


EVERYDAY_EXPLORATION = {
    # playground code the notebooks invite (issue 29: 19 of 33 such explorations ended as a PolicyError)
    "%time, %timeit and %matplotlib inline": "%matplotlib inline\nimport torch\nx = torch.ones(3)\n%time y = x * 2\n"
                                             "%timeit x * 2\nassert y.sum() == 6",
    "%%time over a cell": "%%time\nz = sum(range(10))\n",
    "help() of a Function": "import torch\nhelp(torch.autograd.Function.apply)",
    "IPython.display": "from IPython.display import display, Markdown\ndisplay(Markdown('**bold**'))",
    "what a graph node saved": "import torch\nx = torch.ones(2, requires_grad=True)\ny = x.exp()\n"
                               "assert torch.equal(y.grad_fn._saved_result, y)",
    "a dual number of its own": (
        "class Dual:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n    def __add__(self, o):\n"
        "        return Dual(self.a + o.a, self.b + o.b)\n    def __mul__(self, o):\n"
        "        return Dual(self.a * o.a, self.a * o.b + self.b * o.a)\n"
        "z = Dual(1, 2) * Dual(3, 4) + Dual(1, 1)\nassert (z.a, z.b) == (4, 11)"),
    "walking a graph (its nodes are views: name, next_functions, type, isinstance, ==)": (
        "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).exp()\nnode = y.grad_fn\n"
        "assert node.name() == 'ExpBackward0' == type(node).__name__\n"
        "assert isinstance(node, torch.autograd.graph.Node) and node == y.grad_fn\n"
        "prev, _ = node.next_functions[0]\nassert prev.name() == 'MulBackward0'\n"
        "assert prev.next_functions[0][0].variable is x\nprint(node, dict(metadata=node.metadata))"),
    "a hook on a tensor (torch.Tensor.register_hook's docs)": (
        "import torch\nv = torch.tensor([0., 0., 0.], requires_grad=True)\nh = v.register_hook(lambda grad: grad * 2)\n"
        "v.backward(torch.tensor([1., 2., 3.]))\nassert v.grad.tolist() == [2., 4., 6.]\nh.remove()"),
    "a progress bar": "from tqdm.auto import tqdm, trange\nbar = tqdm(total=2, desc='epochs')\nfor i in trange(2):\n"
                      "    bar.update(1)\n    bar.set_postfix(loss=0.5)\nbar.close()",
}


@pytest.mark.parametrize("name", list(EVERYDAY_EXPLORATION))
def test_everyday_explorations_run_as_written(name, capsys):
    import threading

    from IPython.core.inputtransformer2 import TransformerManager

    threads = threading.active_count()
    run_cell(TransformerManager().transform_cell(EVERYDAY_EXPLORATION[name]))
    assert threading.active_count() == threads  # (tqdm's monitor thread: refused in the sandbox, flagged)


EXPLORATION_GADGETS = {
    "help() of a name (it imports by name)": "help('os')",
    "the interactive help": "help()",
    "a magic beyond time/timeit/matplotlib": "%load_ext autoreload",
    "a shell escape": "!ls /",
    "%time of a refused statement": "import torch\n%time torch.ops",
    "a node's SavedVariable (hooks that outlive the call)": "import torch\nx = torch.ones(2, requires_grad=True)\n"
                                                            "(x * x).grad_fn._raw_saved_self",
    "IPython.display.Image (reads files)": "from IPython.display import Image",
    "a progress bar's template (walks attributes)": "from tqdm.auto import tqdm\ntqdm(range(2), bar_format='{n.__class__}')",
    "a progress bar's stream": "from tqdm.auto import tqdm\ntqdm(range(2)).fp",
    "tqdm's other modules": "import tqdm\ntqdm.std",
}


@pytest.mark.parametrize("name", list(EXPLORATION_GADGETS))
def test_the_exploration_allowances_hand_out_no_gadget(name):
    from IPython.core.inputtransformer2 import TransformerManager

    refused(TransformerManager().transform_cell(EXPLORATION_GADGETS[name]))


def test_a_refused_tree_is_left_empty() -> None:
    """The policy transforms a cell's tree in place (no deep copy: a sixth of a graded notebook's sandbox time): a
    refused or half-transformed tree is emptied, so nothing of it can be compiled by whoever holds it."""
    from IPython.core.error import InputRejected

    tree = ast.parse("ran = True\nimport os\n")
    with pytest.raises(InputRejected):
        policy.PolicyTransformer().visit(tree)
    assert tree.body == []
    allowed = ast.parse("x = torch.ones(1).sum()")
    assert policy.PolicyTransformer().visit(allowed) is allowed


# A refusal says what to write instead, in the notebook's language (issue 29: "what stays refused gets a message
# naming the construct as the student wrote it, its line, and what to write instead, in the notebook's language").
REFUSAL_WORDS = [
    # (cell, English words, Chinese words)
    ("import os", ["import os: the module os is not available", "Instead: delete this line"],
     ["评分代码中不能使用 import os（模块 os）。", "改法：删掉这一行"]),
    ("x = (1).__class__", ['".__class__" is not available', "Instead, write: type(x)"],
     ['评分代码中不能使用 ".__class__"（Python 的内部机制）。', "改写为：type(x)"]),
    ("%load_ext autoreload", ["the %load_ext magic", "%matplotlib inline work"], ["魔法命令 %load_ext", "可以使用"]),
    ("open('notes.txt')", ["open() is not available", "reads and writes no files"], ["open()", "不读写任何文件"]),
    ("import torch\nclass T(torch.Tensor):\n    pass", ["a subclass of torch.Tensor", "plain tensors"],
     ["torch.Tensor 的子类", "普通张量"]),
    ("import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).grad_fn(x)", ["calling a graph node (MulBackward0(...))"],
     ["调用计算图节点（MulBackward0(...)）"]),
]


@pytest.mark.parametrize("cell,english,chinese", REFUSAL_WORDS, ids=[c[0].splitlines()[-1] for c in REFUSAL_WORDS])
def test_a_refusal_says_what_to_write_instead_in_the_notebooks_language(cell, english, chinese):
    from IPython.core.inputtransformer2 import TransformerManager

    from grader.spec import messages

    source = TransformerManager().transform_cell(cell)
    for language, words in (("en", english), ("zh", chinese)):
        with messages.using(language):
            error = refused(source)
            shown = "\n".join(error._render_traceback_())
        missing = [w for w in words if w not in shown]
        assert not missing, f"{language}: {missing} not in {shown!r}"
        if language == "zh":
            assert "is not available" not in shown and "第 " in shown and "评分单元格可以使用" in shown


def test_every_sentence_of_what_to_write_instead_exists():
    from grader.sandboxed.policy_words import CONSTRUCTS, INSTEAD
    from grader.spec import messages

    for _, key in (*INSTEAD, *CONSTRUCTS):
        if key:
            assert key in messages.EN and key in messages.TABLES["zh"], key


def test_a_self_check_names_the_students_class_not_the_method_it_inherits():
    """In the student's kernel (no policy installed), a self-check refuses a refused construct in the cell that
    defines the Function under test, and names that Function ("Exp"), not ``Function.apply`` which ``Exp.apply``
    inherits (issue 29: several messages named "the cell that defines Function.apply")."""
    from IPython.core.interactiveshell import InteractiveShell

    from grader import checks

    shell = InteractiveShell.instance()
    try:
        cell = ("import torch\nimport os\n\nclass Exp(torch.autograd.Function):\n    @staticmethod\n"
                "    def forward(ctx, x):\n        y = x.exp()\n        ctx.save_for_backward(y)\n        return y\n\n"
                "    @staticmethod\n    def backward(ctx, g):\n        y, = ctx.saved_tensors\n        return g * y\n")
        assert shell.run_cell(cell, store_history=True).success
        with pytest.raises(policy.PolicyError) as caught:
            checks.forward("exp", shell.user_ns["Exp"].apply)
        text = str(caught.value)
        assert "the cell that defines Exp" in text and "Function.apply" not in text, text
        assert caught.value.lineno == 2 and "import os" in text
    finally:
        InteractiveShell.clear_instance()
