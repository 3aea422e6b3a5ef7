"""Red-team attacks on the policy graded cells run under (grader.sandboxed.policy), in-process with tests/test_policy.py's
harness: each escape that got through is a test that the policy now refuses it; ``TRIED`` documents the ideas that
were refused already (each still refused).

What an escape reached is said in each test's docstring: unrestricted code (a string some allowed library executes
with the real builtins), the notebook's and the grader's frames (and from them every local of the observer), raw
memory, writes to torch's modules, or names the policy refuses (``torch.load``)."""

from __future__ import annotations

import pytest

from grader.sandboxed import policy
from test_policy import refused, run_cell

SINK = """
import functools

class Sink:
    def __init__(self, k):
        self.k = k
    def update(self, value):   # update_wrapper calls it with whatever getattr returned: no guard sees it
        self.k(value)

class Holder:
    pass

def uget(obj, name, k):
    holder = Holder()
    setattr(holder, name, Sink(k))
    functools.update_wrapper(holder, obj, assigned=(), updated=(name,))

class Catch:
    def __enter__(self):
        return self
    def __exit__(self, kind, error, tb):
        uget(tb, "tb_frame", lambda f: uget(f, "f_back", lambda up: uget(up, "f_globals", found.append)))
        return True

found = []
with Catch():
    1 / 0
"""


def test_functools_update_wrapper_is_not_an_unrestricted_getattr() -> None:
    """update_wrapper(assigned=, updated=) reads and writes attributes named by data: a traceback handed to a cell's
    own __exit__ gave its frame, the frame above, and that frame's globals (in the child: IPython's and then
    grader.sandboxed.child.run_cells's frame with report, flag, guard ...)."""
    refused(SINK)


def test_functools_update_wrapper_is_not_an_unrestricted_setattr() -> None:
    """update_wrapper wrote an attribute of a module of torch (the observer's torch.autograd.grad)."""
    import torch

    grad = torch.autograd.grad
    try:
        refused("""
        import functools, torch
        class Source:
            pass
        s = Source()
        s.grad = print
        functools.update_wrapper(torch.autograd, s, assigned=("grad",), updated=())
    """)
        assert torch.autograd.grad is grad
    finally:
        torch.autograd.grad = grad  # (on the code before the fix: the observer's torch left as it was)


def test_functools_wraps_reached_through_contextlib_is_guarded_too() -> None:
    refused("""
        import contextlib
        class Holder:
            pass
        contextlib.wraps(print, assigned=("__self__",), updated=())(Holder())
    """)


def test_update_wrapper_does_not_copy_a_module_s_refused_names() -> None:
    """update_wrapper's default copies wrapped.__dict__: wrapping torch gave torch.load (pickle) as an attribute."""
    refused("""
        import functools, torch
        class Holder:
            pass
        h = Holder()
        functools.update_wrapper(h, torch)
        load = h.load
    """)


def test_a_refused_name_stays_refused_as_an_object_wherever_it_is_found() -> None:
    """A refused object (torch.load) reached without reading it from its module is refused all the same."""
    import torch

    ns = {"__name__": "__main__", "box": {"f": torch.load}}
    policy.Runtime(ns).install()
    refused("f = box['f']", ns)


@pytest.mark.parametrize("call", ["measure('x = 1')", "runstring('x = 1', {})", "rundocs"])
def test_numpy_testing_does_not_run_strings(call: str) -> None:
    """numpy.testing (importable whole, though np.testing is refused) exec's a string with the real builtins:
    nt.measure("result = __import__('sys')._getframe(0)") gave a frame."""
    error = refused(f"import numpy.testing as nt\nnt.{call}")
    assert "numpy.testing" in str(error)


def test_a_dataclass_field_cannot_be_named_by_a_string_that_is_code() -> None:
    """Field names from __annotations__ (a type() namespace) went into the source dataclasses exec's: the default
    of a keyword-only parameter ran with the real builtins (sys._getframe, __import__ ...)."""
    refused("""
        import dataclasses
        name = "x,*,y=__import__('os').getpid()"
        C = type("C", (), {"__annotations__": {name: int}, name: dataclasses.field(init=False)})
        dataclasses.dataclass(C, repr=False, eq=False)
    """)


def test_a_dataclass_field_cannot_have_a_dunder_name() -> None:
    """A dataclass field __array_interface__ (set by the generated __init__) made numpy read raw memory at id()."""
    refused("""
        import dataclasses, numpy as np
        C = dataclasses.dataclass(type("C", (), {"__annotations__": {"__array_interface__": dict}}))
        b = bytearray(b"hello")
        raw = np.asarray(C({"data": (id(b), False), "shape": (16,), "typestr": "|u1", "version": 3}))
    """)


def test_simple_namespace_cannot_carry_a_dunder_attribute() -> None:
    """types.SimpleNamespace (type(time.get_clock_info(...))) with **{"__array_interface__": ...}: raw memory."""
    refused("""
        import time, numpy as np
        SN = type(time.get_clock_info("time"))
        b = bytearray(b"hello")
        raw = np.asarray(SN(**{"__array_interface__": {"data": (id(b), False), "shape": (8,), "typestr": "|u1",
                                                       "version": 3}}))
    """)


def test_simple_namespace_through_partial_keywords() -> None:
    refused("""
        import functools, time
        p = functools.partial(type(time.get_clock_info("time")), a=1)
        p.keywords["__array_interface__"] = 1
        ns = p()
    """)


def test_a_keyword_argument_cannot_have_a_private_name() -> None:
    refused("d = dict(__array_interface__=1)")


def test_copy_dispatch_table_is_not_writable() -> None:
    """copy.dispatch_table (copyreg's) let a reducer return any object and a state: copy's _reconstruct then set
    attributes of torch's classes and modules (setattr with any name)."""
    import copy

    import torch

    grad, table = torch.autograd.grad, dict(copy.dispatch_table)
    try:
        refused("""
        import copy, torch
        class M:
            pass
        copy.dispatch_table[M] = lambda m: (lambda: torch.autograd, (), {"grad": print})
        copy.copy(M())
    """)
        assert torch.autograd.grad is grad
    finally:
        torch.autograd.grad = grad
        copy.dispatch_table.clear()
        copy.dispatch_table.update(table)


def test_underscore_attributes_of_torch_classes_through_the_mro() -> None:
    """A mixin of the cell's naming _make_subclass made torch.Tensor's own _make_subclass readable
    (the name was looked up in the cell's class bodies, the value found first in torch.Tensor's)."""
    error = refused("""
        import torch
        class Mixin:
            _make_subclass = 0
        class T(torch.Tensor, Mixin):
            pass
        f = T._make_subclass
    """)
    assert "_make_subclass" in str(error) or "subclass of torch.Tensor" in str(error)  # (both refuse it)


def test_a_cells_own_underscore_attributes_stay_readable() -> None:
    run_cell("""
        import torch
        class Mixin:
            _scale = 2
        class Net(torch.nn.Module, Mixin):
            def __init__(self):
                super().__init__()
                self._cache = {}
        n = Net()
        assert n._scale == 2 and n._cache == {} and Net._scale == 2
    """)


def test_the_attributes_of_the_graders_classes_are_opaque() -> None:
    """type(obj) of the grader's object is a class; its attributes were read as a `type` object's (builtins)."""
    class Grader:
        secret = 1
    Grader.__module__ = "grader.sandboxed.child"
    ns = {"__name__": "__main__", "obj": Grader()}
    policy.Runtime(ns).install()
    refused("s = type(obj).secret", ns)


def test_matplotlib_tick_templates_do_not_walk_attributes() -> None:
    """set_major_formatter("{x.__class__.__mro__}") made matplotlib call str.format with the template: an attribute
    walk on any object the cell passes as x (read as text: frames' locals, functions' globals ...)."""
    refused("""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.xaxis.set_major_formatter("{x.__class__.__mro__}")
        text = ax.xaxis.get_major_formatter()(1, 0)
    """)


HONEST_USES = {
    "functools.wraps in a decorator": """
        import functools
        def logged(f):
            @functools.wraps(f)
            def wrapper(*args, **kwargs):
                return f(*args, **kwargs)
            return wrapper
        @logged
        def square(x):
            "Square it."
            return x * x
        assert square(3) == 9 and square.__name__ == "square" and square.__doc__ == "Square it."
    """,
    "dataclasses with fields from a class statement and from type()": """
        import dataclasses
        @dataclasses.dataclass
        class Point:
            x: float = 0.0
            y: float = 0.0
        P = dataclasses.dataclass(type("P", (), {"__annotations__": {"x": int}}))
        assert Point(1.0).x == 1.0 and P(3).x == 3 and dataclasses.asdict(Point()) == {"x": 0.0, "y": 0.0}
    """,
    "a tick template and SimpleNamespace": """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import time
        fig, ax = plt.subplots()
        ax.xaxis.set_major_formatter("{x:.1f} ({pos})")
        assert ax.xaxis.get_major_formatter()(1, 0) == "1.0 (0)"
        plt.close(fig)
        ns = type(time.get_clock_info("time"))(a=1, **{"b": 2})
        assert ns.a + ns.b == 3
    """,
    "copy and deepcopy": """
        import copy, torch
        x = torch.ones(2)
        assert torch.equal(copy.deepcopy(x), x) and copy.copy([1, 2]) == [1, 2]
    """,
}


@pytest.mark.parametrize("name", list(HONEST_USES))
def test_honest_uses_of_the_guarded_libraries_still_run(name: str) -> None:
    run_cell(HONEST_USES[name])


# Ideas tried that the policy refused already: (what was tried, the cell, a word the refusal contains).
TRIED = [
    ("a traceback handed to the cell's own __exit__, read back",
     "class C:\n    def __enter__(self):\n        return self\n    def __exit__(self, a, b, tb):\n"
     "        self.tb = tb\n        return True\nwith C() as c:\n    1/0\nt = c.tb", "traceback"),
    ("typing's string evaluation imported by name", "from typing import get_type_hints", "get_type_hints"),
    ("numpy.testing.measure with import sys in the cell", "import numpy.testing as nt\nimport sys\nnt.measure",
     "measure"),
    ("str.format through super() in a str subclass",
     "class S(str):\n    def f(self):\n        return super().format(1)\nS('{0.__class__}').f()", "__class__"),
    ("globals as a value, not a call", "g = globals", "globals"),
    ("vars as a value, then of a module", "v = vars\nimport torch\nv(torch)", "vars"),
    ("a Node hook through torch.autograd.graph.get_gradient_edge",
     "import torch\nfrom torch.autograd.graph import get_gradient_edge\nx = torch.ones(1, requires_grad=True)\n"
     "get_gradient_edge(x * 2).node.register_hook(print)", "register_hook"),
    ("a hook on the next node of a graph",
     "import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).grad_fn.next_functions[0][0].register_prehook(print)",
     "register_prehook"),
    ("numpy's __array_interface__ of an array", "import numpy as np\np = np.zeros(3).__array_interface__",
     "__array_interface__"),
    ("torch.Tensor._make_subclass directly", "import torch\nf = torch.Tensor._make_subclass", "_make_subclass"),
    ("__torch_dispatch__ on a TorchDispatchMode reached through torch.autograd.graph",
     "import torch.autograd.graph as g\nclass M(g.TorchDispatchMode):\n    def __torch_dispatch__(self, *a):\n        pass",
     "__torch_dispatch__"),
    ("a module reached through warnings", "import warnings\ns = warnings.sys.modules", "sys"),
    ("a star import of functools (singledispatch)", "from functools import *", "*"),
    ("a generator's yieldfrom", "g = (i for i in [1])\ny = getattr(g, 'gi_' + 'yieldfrom')", "gi_yieldfrom"),
    ("__traceback__ in a format template", "try:\n    1/0\nexcept Exception as e:\n    s = '{0.__traceback__}'.format(e)",
     "__traceback__"),
    ("a default argument capturing a guard", "f = lambda g=_getattr_: g", "_getattr_"),
    ("mro() through super", "class A: pass\nm = super(A, A).mro", "mro"),
    ("torch.load by a computed name", "import torch\nf = getattr(torch, 'lo' + 'ad')", "torch.load"),
    ("numpy's stride tricks imported whole", "import numpy.lib.stride_tricks", "numpy.lib"),
    ("untyped storage of a tensor", "import torch\ns = torch.ones(1).untyped_storage()", "untyped_storage"),
    ("the dict of a record returned by time", "import time\nd = time.get_clock_info('time').__dict__", "__dict__"),
    ("weakref.finalize (runs at exit, outside the cell)", "import weakref\nweakref.finalize", "finalize"),
    ("the metaclass of torch.autograd.Function", "import torch\nM = type(torch.autograd.Function)", "metaclass"),
    ("setattr of _x_ on a torch Function's class", "import torch\nsetattr(torch.autograd.Function, '_x_', 1)", "_x_"),
]


@pytest.mark.parametrize("what,source,word", TRIED, ids=[t[0] for t in TRIED])
def test_ideas_refused_already(what: str, source: str, word: str) -> None:
    error = refused(source)
    text = " ".join(error._render_traceback_())
    assert word in text, text


# --- issue 29 (item 3 and its "also"): escapes through library gadgets the policy allowed. Each attack must read,
# write and import nothing: a file outside is not read (nor printed), a marker file is not written, a module is not
# imported, no attribute of a module is set.

SECRET = "i29-secret-7f3a"


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A file outside the notebook holding a secret, a folder a marker must not be written to, and an importable
    module that writes a marker when it is imported (on sys.path)."""
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    marker = tmp_path / "written"
    package = tmp_path / "lib"
    package.mkdir()
    (package / "i29_victim.py").write_text(
        f"import pathlib\npathlib.Path({str(tmp_path / 'imported')!r}).write_text('imported')\n"
        "FigureCanvas = FigureManager = object\ndef hook(figure):\n    pass\n")
    monkeypatch.syspath_prepend(str(package))
    yield {"secret": secret, "marker": marker, "imported": tmp_path / "imported", "dir": tmp_path}
    import sys

    sys.modules.pop("i29_victim", None)


def _nothing_happened(outside, capsys) -> None:
    import sys

    out = capsys.readouterr()
    assert SECRET not in out.out + out.err, "the file outside was read and printed"
    assert not outside["marker"].exists(), "a file was written"
    assert not outside["imported"].exists() and "i29_victim" not in sys.modules, "a module was imported"


RAW_READ = """
b = bytearray(b"{secret}")
interface = {{"data": (id(b), False), "shape": (64,), "typestr": "|u1", "version": 3}}
"""


def test_deepcopy_memo_does_not_hand_out_a_real_dict(outside, capsys) -> None:
    """deepcopy's memo keeps what it copied alive in memo[id(memo)], among them the object's real __dict__: a key
    __array_interface__ written there made numpy.asarray(obj) read (and write) any address."""
    error = refused("""
        import copy, numpy as np
        class A:
            def __init__(self):
                self.x = [1]
        a = A()
        memo = {}
        copy.deepcopy(a, memo)
        d = [k for k in memo[id(memo)] if type(k) is dict and "x" in k][0]
        b = bytearray(b"i29-secret-7f3a")
        d["__array_interface__"] = {"data": (id(b), False), "shape": (64,), "typestr": "|u1", "version": 3}
        print(bytes(np.asarray(a)))
    """)
    assert "copy.deepcopy(x, memo)" in str(error) and "write copy.deepcopy(x)" in str(error)
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("call", ["copy.deepcopy(a, memo=memo)", "copy.deepcopy(a, {})", "copy.copy(a, 1)",
                                  "copy.deepcopy(a, None, [])"])
def test_copy_takes_the_object_only(call: str) -> None:
    refused(f"import copy\nclass A:\n    pass\na = A()\nmemo = {{}}\n{call}")


@pytest.mark.parametrize("name", ["_reconstruct", "_deepcopy_dispatch", "_keep_alive", "copyreg", "weakref",
                                  "dispatch_table", "_copy_immutable"])
def test_copy_hands_out_copy_and_deepcopy_only(name: str) -> None:
    refused(f"import copy\nf = getattr(copy, {name!r})")
    refused(f"from copy import {name}")


@pytest.mark.parametrize("copier", ["copy.copy(a)", "copy.deepcopy(a)", "copy.deepcopy([1, {'k': (a,)}])",
                                    "copy.deepcopy(Holder())"])
@pytest.mark.parametrize("planted", ["__reduce_ex__", "__reduce__", "__deepcopy__", "__getstate__"])
def test_an_instance_level_reduction_does_not_make_copy_set_attributes_of_a_module(copier: str, planted: str) -> None:
    """An instance attribute __reduce_ex__ (however it got there: the memo's dict above, or an instructor's object
    that has one) made copy.copy rebuild the object with a state of the cell's choosing: setattr of any name on any
    object, modules included (grader.checks is not guarded)."""
    import copy
    import types

    victim = types.ModuleType("victim")

    def reduce(*args):
        return (lambda: victim, (), (None, {"planted": True}))

    class Plain:
        pass

    a = Plain()
    vars(a)[planted] = reduce if planted != "__getstate__" else (lambda: (None, {"planted": True}))
    ns = {"__name__": "__main__", "a": a, "Holder": None}
    runtime = policy.Runtime(ns)
    runtime.install()
    run_cell("class Holder:\n    def __init__(self):\n        self.inner = [a]\n", ns)
    error = refused(f"import copy\ncopied = {copier}", ns)
    assert planted in str(error)
    assert not hasattr(victim, "planted")
    copy.copy(Plain())  # (copy itself untouched)


def test_ndarray_over_bytes_with_object_dtype_does_not_fake_pointers(outside, capsys) -> None:
    """numpy.ndarray(shape, object, buffer=...) read pointers from bytes the cell wrote: any address as an object."""
    error = refused("""
        import numpy as np
        b = bytearray(8)
        arr = np.ndarray((1,), object, buffer=b)
    """)
    assert "numpy.ndarray" in str(error) and "np.zeros" in str(error)
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("source", [
    "np.ndarray((2,), np.int64, buffer=o)",             # an object array's pointers, as numbers to write
    "type(np.zeros(1))((1,), object, buffer=bytearray(8))",
    "np.frombuffer(o, np.int64)",
    "np.frombuffer(o.data, np.int64)",
    "o.data",
    "np.frombuffer(bytearray(8), dtype=object)",
    "np.recarray((1,), formats=[object], buf=bytearray(8))",
    "torch.frombuffer(o, dtype=torch.int64)",
    "torch.asarray(o.data, dtype=torch.int64)",
    "i = np.zeros(1, np.int64)\ni.dtype = object",
    "i = np.zeros(1, np.int64)\ni.strides = (0,)",
    "np.fromstring('abcdefgh', dtype=object)",
])
def test_no_array_is_made_over_memory_of_the_cells_choosing(source: str) -> None:
    """Every road from raw memory to an array: buffer= of ndarray, frombuffer over an object array's pointers (numpy
    and torch), an array's memoryview, object dtype from bytes, dtype/strides assignment."""
    refused(f"import numpy as np, torch\no = np.empty(2, object)\no[:] = [1, 2]\n{source}")


def test_array_interface_cannot_be_planted_on_the_notebooks_objects() -> None:
    """numpy.asarray(obj) trusts obj.__array_interface__ as a raw address: no road sets it on an object of the
    notebook's (setattr, a class body, type(), a dataclass field, vars(), a SimpleNamespace, update_wrapper)."""
    for source in [
        "class A:\n    pass\na = A()\nsetattr(a, '__array_interface__', {})",
        "class A:\n    __array_interface__ = {}",
        "A = type('A', (), {'__array_interface__': {}})",
        "class A:\n    pass\na = A()\nvars(a)['__array_interface__'] = {}\nimport numpy as np\nnp.asarray(a)",
        "import functools\nclass A:\n    pass\nfunctools.update_wrapper(A(), print, assigned=('__array_interface__',))",
    ]:
        try:
            ns = run_cell(source)
        except policy.PolicyError:
            continue
        assert "__array_interface__" not in vars(ns["a"]), source  # (vars() returned a copy: nothing planted)


def test_rc_params_from_file_does_not_print_a_file(outside, capsys) -> None:
    """matplotlib.rc_params_from_file printed every line of any file it could not parse (the file's contents)."""
    refused(f"import matplotlib\np = matplotlib.rc_params_from_file({str(outside['secret'])!r}, "
            "use_default_template=False)")
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("source", [
    "import matplotlib\nmatplotlib.rc_file({secret!r})",
    "import matplotlib.pyplot as plt\nwith plt.rc_context(fname={secret!r}):\n    pass",
    "import matplotlib.pyplot as plt\nplt.style.use({secret!r})",
    "import matplotlib.pyplot as plt\nplt.imread({secret!r})",
    "import matplotlib.pyplot as plt\nf = plt.rc_params_from_file",
])
def test_matplotlib_reads_no_file(source: str, outside, capsys) -> None:
    refused(source.format(secret=str(outside["secret"])))
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("source", [
    "import matplotlib.pyplot as plt\nplt.switch_backend('module://i29_victim')",
    "import matplotlib\nmatplotlib.use('module://i29_victim')",
    "import matplotlib.pyplot as plt\nplt.rcParams['backend'] = 'module://i29_victim'\nplt.figure()",
    "import matplotlib.pyplot as plt\nplt.rcParams.update({'backend': 'module://i29_victim'})\nplt.figure()",
    "import matplotlib\nmatplotlib.rcParams['figure.hooks'] = ['i29_victim:hook']\nimport matplotlib.pyplot as plt\n"
    "plt.figure()",
    "import matplotlib.pyplot as plt\nwith plt.rc_context({'figure.hooks': ['i29_victim:hook']}):\n    plt.figure()",
    "import matplotlib.pyplot as plt\nplt.rc('figure', hooks=['i29_victim:hook'])\nplt.figure()",
    "import matplotlib.pyplot as plt\nfrom matplotlib.pyplot import switch_backend",
    "import matplotlib.pyplot as plt\nplt.get_current_fig_manager()",
])
def test_matplotlib_imports_no_module(source: str, outside, capsys) -> None:
    """plt.switch_backend("module://x") imported any installed module (a backend, and rcParams' figure.hooks, name
    modules)."""
    import matplotlib

    backend, hooks = matplotlib.rcParams["backend"], matplotlib.rcParams["figure.hooks"]
    try:
        refused(source)
        _nothing_happened(outside, capsys)
    finally:
        matplotlib.rcParams["figure.hooks"] = hooks
        matplotlib.rcParams["backend"] = backend


@pytest.mark.parametrize("source", [
    "plt.savefig({marker!r})",
    "plt.gcf().savefig({marker!r})",
    "fig.savefig({marker!r})",
    "fig.canvas.print_png({marker!r})",
    "ax.figure.canvas.print_figure({marker!r})",
    "ax.imshow(np.zeros((2, 2))).write_png({marker!r})",
    "plt.imsave({marker!r}, np.zeros((2, 2)))",
    "class F(type(fig)):\n    pass",
    "fig.canvas = None",
    "fig.set(canvas=None)",
])
def test_matplotlib_writes_no_file(source: str, outside, capsys) -> None:
    import matplotlib

    matplotlib.use("Agg")
    refused("import matplotlib.pyplot as plt, numpy as np\nfig, ax = plt.subplots()\n"
            + source.format(marker=str(outside["marker"])))
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("source", [
    "dot.render({marker!r})",
    "dot.save({marker!r})",
    "dot.pipe(format='svg')",
    "dot.view()",
    "dot.filename = {marker!r}",
    "dot.directory = {dir!r}",
    "class D(type(dot)):\n    def __init__(self):\n        super().__init__(filename={marker!r})\n"
    "    def go(self):\n        super().save()\nD().go()",
    "graphviz = type(dot)\ngraphviz(filename={marker!r}).save()",
])
def test_graphviz_writes_no_file(source: str, outside, capsys) -> None:
    """A graphviz.Digraph subclass (or a plain Digraph's render/save/pipe) wrote any file and ran programs."""
    refused("import torch, torchviz\nx = torch.ones(1, requires_grad=True)\ndot = torchviz.make_dot(x * 2)\n"
            + source.format(marker=str(outside["marker"]), dir=str(outside["dir"])))
    _nothing_happened(outside, capsys)


GADGET_HONEST_USES = {
    "copy and deepcopy of the notebook's objects, tensors and modules": """
        import copy, torch
        class Config:
            def __init__(self):
                self.sizes = [1, 2]
        c = copy.deepcopy(Config())
        net = copy.deepcopy(torch.nn.Linear(2, 1))
        assert c.sizes == [1, 2] and copy.copy(c).sizes is c.sizes and net.weight.shape == (1, 2)
        class Step:
            def __call__(self, x):
                return x
        import functools
        step = functools.wraps(print)(Step())   # (__wrapped__, __doc__ ... on the instance: copy reads none of them)
        assert copy.deepcopy(step)(2) == 2
        try:
            copy.deepcopy(lambda: 1)
        except copy.Error:
            pass
    """,
    "a ParameterDict with plain and underscore keys, its | and copy": """
        import torch
        pd = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.ones(1)), "_b": 1})
        pd2 = pd | {"x": torch.ones(2)}
        pd2 |= {"y": 2}
        assert isinstance(pd2, torch.nn.ParameterDict) and set(pd2.keys()) == {"w", "_b", "x", "y"}
        assert pd.copy()["w"].shape == (1,) and list(pd.fromkeys(["a"], 0).keys()) == ["a"]
        assert sum(p.numel() for p in pd2.parameters()) == 3
    """,
    "numpy.ndarray as a type, frombuffer over bytes": """
        import numpy as np
        a = np.zeros(3)
        assert isinstance(a, np.ndarray) and issubclass(type(a), np.ndarray) and type(a) is np.ndarray
        assert isinstance(a, (np.ndarray, list)) and not isinstance([1], np.ndarray)
        assert np.ndarray.__name__ == "ndarray" and np.ndarray.sum(a) == 0
        b = np.frombuffer(b"\\x01\\x02", dtype=np.uint8)
        assert b.tolist() == [1, 2] and a.tobytes() == bytes(24) and a.astype(object).dtype == object
        a.shape = (3, 1)
        def f(x: np.ndarray) -> np.ndarray:
            return x
        match a:
            case np.ndarray():
                pass
    """,
    "plots: pyplot, a figure's colorbar, rcParams, matplotlib.use": """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        plt.rcParams["figure.figsize"] = (6, 3)
        plt.rcParams.update({"font.size": 9, "axes.grid": True})
        assert plt.rcParams["font.size"] == 9 and "lines.linewidth" in plt.rcParams
        figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        left.plot([1, 2], label="a")
        left.set_xlabel("step")
        left.legend(loc="upper right")
        contour = right.contourf(np.zeros((3, 3)) + np.arange(3), levels=5, cmap="viridis")
        right.scatter([0, 1], [1, 0], s=8, c="red", label="fake")
        figure.colorbar(contour, ax=right)
        figure.suptitle("x")
        plt.figure()
        plt.plot([1, 2, 3])
        plt.xlabel("x")
        plt.ylabel("y")
        plt.title("t")
        plt.axhline(0)
        plt.grid(True)
        plt.hist([1, 2, 2])
        plt.imshow(np.eye(2))
        plt.colorbar()
        plt.tight_layout()
        plt.show()
        plt.close("all")
    """,
    "a torchviz graph's source": """
        import torch, torchviz
        x = torch.ones(1, requires_grad=True)
        dot = torchviz.make_dot(x * 2, params={"x": x})
        assert "digraph" in dot.source and dot.format in ("pdf", "svg", "png")
        dot.attr(rankdir="LR")
        dot
    """,
}


@pytest.mark.parametrize("name", list(GADGET_HONEST_USES))
def test_honest_uses_of_the_narrowed_libraries_still_run(name: str, capsys) -> None:
    run_cell(GADGET_HONEST_USES[name])


@pytest.mark.parametrize("source", [
    "import warnings\nprint(warnings.formatwarning('m', UserWarning, {secret!r}, 1))",
    "import warnings\nwarnings.warn_explicit('m', UserWarning, {secret!r}, 1)",
    "import warnings\nwarnings.showwarning('m', UserWarning, {secret!r}, 1)",
    "from IPython.display import HTML, display\ndisplay(HTML(filename={secret!r}))",
    "from IPython.display import Latex, display\ndisplay(Latex(url='file://' + {secret!r}))",
    "help(obj)",
    "help(type(obj))",
    "from grader import checks\nhelp(checks)",
])
def test_other_readers_read_no_file_and_nothing_of_the_graders(source: str, outside, capsys) -> None:
    """warnings print the line a file name and line number of the caller's choosing name (linecache reads any file);
    IPython.display's text objects read the file a text names; help() printed the data of the grader's classes."""
    class Grader:
        secret = SECRET
    Grader.__module__ = "grader.sandboxed.child"
    ns = {"__name__": "__main__", "obj": Grader()}
    policy.Runtime(ns).install()
    refused(source.format(secret=str(outside["secret"])), ns)
    _nothing_happened(outside, capsys)


@pytest.mark.parametrize("source", [
    "import logging\nlogging.basicConfig(filename={marker!r}, force=True)\nlogging.warning('x')",
    "import torch\ntorch.save(torch.ones(1), {marker!r})",
    "import numpy as np\nnp.zeros(1).dump({marker!r})",
    "import matplotlib.pyplot as plt\nplt.setp(plt.gcf(), canvas=None)",
    "import contextlib\nwith contextlib.chdir({dir!r}):\n    pass",
])
def test_other_writers_write_no_file(source: str, outside, capsys) -> None:
    import logging

    handlers = list(logging.getLogger().handlers)
    try:
        refused(source.format(marker=str(outside["marker"]), dir=str(outside["dir"])))
        _nothing_happened(outside, capsys)
    finally:
        for handler in logging.getLogger().handlers[:]:
            if handler not in handlers:
                logging.getLogger().removeHandler(handler)
                handler.close()


def test_a_display_text_naming_a_file_is_the_text(outside) -> None:
    """IPython's Markdown("path") read the file when the text named one; graded code's shows the text."""
    ns = run_cell(f"from IPython.display import Markdown\nm = Markdown({str(outside['secret'])!r})")
    assert ns["m"].data == str(outside["secret"])


def test_honest_display_warnings_and_help_still_run(capsys) -> None:
    run_cell("""
        import warnings, torch
        from IPython.display import display, Markdown, HTML, Math
        display(Markdown("**bold**"), HTML("<b>x</b>"), Math("x^2"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.warn("quiet")
        help(torch.autograd.Function)
        help(torch.exp)
    """)


def test_stand_ins_reach_modules_an_instructors_cell_imported_after_the_runtime() -> None:
    """The stand-ins are made for the modules loaded when a cell imports; a module an instructor's cell (run as it
    is) imported later is read through its stand-ins all the same."""
    import sys

    import matplotlib

    ns = {"__name__": "__main__"}
    runtime = policy.Runtime(ns)
    saved = {name: sys.modules.pop(name) for name in ("matplotlib",)}
    try:
        runtime.install()
    finally:
        sys.modules.update(saved)
    ns["matplotlib"] = matplotlib
    refused("matplotlib.rcParams['backend'] = 'module://i29_victim'", ns)


def test_parameter_dict_keys_do_not_become_dunder_attributes(outside, capsys) -> None:
    """torch.nn.ParameterDict sets each key as an attribute (a value that is not a tensor kept as it is):
    pd["__array_interface__"] = {...} made numpy.asarray(pd) read any address."""
    for source in [
        'pd = torch.nn.ParameterDict()\npd["__array_interface__"] = interface',
        'pd = torch.nn.ParameterDict({"__array_interface__": interface})',
        'pd = torch.nn.ParameterDict()\npd.update({"__array_interface__": interface})',
        'pd = torch.nn.ParameterDict() | {"__array_interface__": interface}',
        'pd = torch.nn.ParameterDict()\npd |= {"__array_interface__": interface}',
        'pd = torch.nn.ParameterDict().fromkeys(["__array_interface__"], interface)',
        'pd = torch.nn.ParameterDict()\npd.setdefault("__array_interface__", interface)',
        'class P(torch.nn.ParameterDict):\n    pass\npd = P({"__array_interface__": interface})',
        'class S(str):\n    def startswith(self, *a):\n        return False\n    def endswith(self, *a):\n'
        '        return False\npd = torch.nn.ParameterDict({S("__array_interface__"): interface})',
    ]:
        refused("import torch, numpy as np\n" + RAW_READ.format(secret=SECRET) + source
                + "\nprint(bytes(np.asarray(pd)))")
    _nothing_happened(outside, capsys)


THIEF = """
import copy, functools, torch, numpy as np
from typing import NamedTuple
got = []
class Thief(torch.nn.Module):
    def forward(self, memo):
        got.append(memo)
        return self
class Pair(NamedTuple):
    a: object
    b: int
m = torch.nn.Module()
m.add_module("__deepcopy__", Thief())
t = torch.ones(1)
t.note = m
objects = np.empty(1, dtype=object)
objects[0] = m
"""


@pytest.mark.parametrize("copied", ["m", "[m]", "{'k': (m,)}", "Pair(m, 1)", "iter([m])", "t", "objects",
                                    "functools.partial(print, m)", "torch.nn.Sequential(m)"])
def test_a_registry_name_does_not_make_deepcopy_hand_out_its_memo(copied: str) -> None:
    """nn.Module's __getattr__ answers the names of its registries: module.add_module("__deepcopy__", thief) made
    deepcopy call the notebook's module with its memo (the originals' real dicts), wherever the module sat."""
    ns = run_cell(THIEF)
    refused(f"copied = copy.deepcopy({copied})", ns)
    assert ns["got"] == []


def test_a_registry_name_and_a_shallow_copy() -> None:
    ns = run_cell(THIEF.replace('"__deepcopy__"', '"__copy__"') + "m.add_module('__getnewargs_ex__', Thief())\n")
    refused("copied = copy.copy(m)", ns)
    assert ns["got"] == []


def test_a_str_subclass_does_not_pass_for_a_plain_name() -> None:
    """A keyword or key named by a str subclass whose startswith says no: the rule of names reads the string."""
    refused("""
        import time
        class S(str):
            def startswith(self, *a):
                return False
            def endswith(self, *a):
                return False
        SN = type(time.get_clock_info("time"))
        ns = SN(**{S("__array_interface__"): 1})
    """)
    refused("""
        class S(str):
            def startswith(self, *a):
                return False
        d = dict(**{S("__array_interface__"): 1})
    """)


# --- torch's and NumPy's own surface: an allow-list derived from the course (grader.sandboxed.policy_surface) -------
# Each name below was readable under the deny-list of 27 Nov (nobody had listed it); the allow-list refuses it
# because nobody listed it as needed. What each does is said beside it.
OFF_THE_COURSE = [
    ("torch.PyTorchFileWriter", "import torch\nw = torch.PyTorchFileWriter('written-by-a-cell.zip')"),  # writes a file
    ("torch.PyTorchFileReader", "import torch\nr = torch.PyTorchFileReader"),  # reads any zip archive (a checkpoint)
    ("torch.import_ir_module", "import torch\nf = torch.import_ir_module"),  # loads TorchScript from a file
    ("torch.parse_ir", "import torch\nf = torch.parse_ir"),  # TorchScript IR from a string
    ("torch.fork", "import torch\nf = torch.fork"),  # TorchScript's asynchronous tasks (a thread pool)
    ("torch.to_dlpack", "import torch\nc = torch.to_dlpack(torch.ones(2))"),  # a capsule over raw memory
    ("torch.FloatStorage", "import torch\nS = torch.FloatStorage"),  # storages: from_file, raw bytes
    ("torch.set_default_device", "import torch\ntorch.set_default_device('meta')"),  # every check: a grader error
    ("torch.classproperty", "import torch\nc = torch.classproperty"),  # torch's internals
    ("from torch import PyTorchFileWriter", "from torch import PyTorchFileWriter"),
    ("numpy.info", "import numpy as np\nf = np.info"),  # prints the source files of what it is given
    ("numpy.get_include", "import numpy as np\nf = np.get_include"),  # paths of the install
    ("numpy.nested_iters", "import numpy as np\nf = np.nested_iters"),  # iterators over buffers
]


@pytest.mark.parametrize("source", [s for _, s in OFF_THE_COURSE], ids=[w for w, _ in OFF_THE_COURSE])
def test_torch_and_numpy_names_the_course_does_not_need_are_refused(source: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    error = refused(source)
    assert "not available in graded code" in str(error), error
    assert not list(tmp_path.iterdir()), "a refused cell wrote a file"


COURSE_SURFACE = """
import torch, numpy as np
x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
with torch.no_grad():
    y = torch.einsum("i,i->", x, x) + torch.sinh(x).sum() + torch.nn.functional.softplus(x).sum()
torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_default_dtype(torch.float32)
assert torch.is_tensor(x) and isinstance(x, torch.Tensor) and x.shape == torch.Size([5])
assert torch.finfo(torch.float64).eps > 0 and torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
a = np.asarray([3.0, 1.0, 2.0])
b = np.take_along_axis(a, np.argsort(a), axis=0)
assert np.allclose(np.power(b, 2), [1.0, 4.0, 9.0]) and np.isclose(np.logaddexp(0.0, 0.0), np.log(2.0))
assert np.float64(1.5) == 1.5 and np.linalg.norm(np.zeros(3)) == 0.0 and np.pi > 3
g = torch.vmap(torch.sin)(torch.zeros(2))
"""


def test_the_course_surface_of_torch_and_numpy_stays_open() -> None:
    run_cell(COURSE_SURFACE)


def test_a_tensors_surface_is_its_operations_and_what_the_notebook_set_on_it() -> None:
    """A tensor's names: its C methods and properties and the reviewed Python ones; what the notebook itself set on it
    stays readable; a name it does not have is an AttributeError (getattr's default works), not a refusal."""
    ns = run_cell("""
        import torch
        x = torch.ones(2, requires_grad=True)
        x.note = "mine"
        y = (x * 2).sum()
        y.backward()
        seen = (x.note, getattr(x, "missing", "default"), hasattr(x, "missing"), x.grad.tolist(), x.is_leaf,
                type(x).__name__, x.shape, x.detach().numpy().tolist())
    """)
    assert ns["seen"] == ("mine", "default", False, [2.0, 2.0], True, "Tensor", (2,), [1.0, 1.0])
    for name in ("storage_type", "module_load", "reinforce", "untyped_storage"):
        assert "not available" in str(refused(f"import torch\nf = torch.ones(1).{name}")), name
