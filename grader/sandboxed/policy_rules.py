"""The course's policy for graded cells, as tables: what a cell may import, name, read and define
(``grader.sandboxed.policy``'s docstring says how they are enforced), and ``PolicyError``, what a refusal raises.
Read at compile time (``grader.sandboxed.policy_compile``) and at run time (``grader.sandboxed.policy``).
"""

from __future__ import annotations

import builtins
import os
import types
from typing import Any

import numpy
import torch
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from grader.sandboxed import policy_surface
from grader.spec import registry

# What a graded cell may import (and so reach as a module through attributes): the course's own needs.
MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "torch.autograd",
    "torch.autograd.function", "torch.autograd.forward_ad", "torch.autograd.functional", "torch.autograd.graph",
    "torch.autograd.gradcheck", "torch.func", "torch.linalg", "torch.fft", "torch.special", "torch.testing",
    "torch.distributions", "torch.optim", "torch.random", "torch.types", "torch.nn.utils",
    "numpy", "numpy.linalg", "numpy.random", "numpy.testing", "numpy.fft", "numpy.polynomial",
    "math", "cmath", "random", "statistics", "fractions", "decimal", "functools", "itertools", "collections",
    "collections.abc", "typing", "contextlib", "warnings", "time", "re", "copy", "weakref", "dataclasses",
    "matplotlib", "matplotlib.pyplot", "matplotlib.ticker", "matplotlib.colors", "matplotlib.cm",
    "matplotlib.patches", "matplotlib.lines", "matplotlib.gridspec", "torchviz", "grader.graphs", "grader.checks",
    "grader.basics", "IPython.display",
    # everyday code that harms nothing, each a few names only (MODULE_ALLOWED_ONLY): print(..., file=sys.stderr),
    # functools.reduce(operator.mul, ...), a logger, a device chosen with torch.cuda.is_available(), autocast's
    # decorators on a Function
    "sys", "operator", "logging", "torch.cuda", "torch.amp", "tqdm", "tqdm.auto",
})
# Names refused on a module of MODULES (escape hatches and what reads or maps arbitrary files or memory).
MODULE_REFUSED: dict[str, frozenset[str]] = {
    "torch": frozenset({"ops", "library", "classes", "hub", "jit", "load", "compile", "export", "fx", "package",
                        "multiprocessing", "distributed", "utils", "overrides", "from_file", "backends",
                        "mps", "xpu", "onnx", "profiler", "serialization", "save",
                        "UntypedStorage", "TypedStorage"}),
    "torch.autograd": frozenset({"profiler"}),
    "torch.autograd.graph": frozenset({"register_multi_grad_hook", "allow_mutation_on_saved_tensors",
                                       "disable_saved_tensors_hooks"}),
    "numpy": frozenset({"ctypeslib", "lib", "memmap", "fromfile", "load", "save", "savez", "savez_compressed",
                        "loadtxt", "savetxt", "genfromtxt", "fromregex", "f2py", "distutils", "core",
                        "show_config", "DataSource",
                        # an array over memory of the caller's choosing (buf=): numpy.ndarray itself is a stand-in
                        "recarray", "fromstring"}),
    "typing": frozenset({"get_type_hints", "ForwardRef", "get_overloads"}),  # they eval strings
    "functools": frozenset({"singledispatch", "singledispatchmethod"}),  # register() evals string annotations
    "dataclasses": frozenset({"make_dataclass"}),  # its namespace= would define any special method
    "weakref": frozenset({"finalize"}),
    "contextlib": frozenset({"chdir"}),  # the process's working directory (the grader's relative paths) changed
    "copy": frozenset({"dispatch_table"}),  # copyreg's: a reducer's state makes copy setattr any name on any object
    # refused as objects wherever a cell finds them (they are also outside matplotlib's allow-lists below): files
    # read and printed, files written, any module imported ("module://x", rcParams' "figure.hooks")
    "matplotlib": frozenset({"rc_params_from_file", "rc_file", "rc_context", "rc"}),
    "matplotlib.pyplot": frozenset({"switch_backend", "savefig", "imsave", "imread", "rc_context", "rc", "figimage"}),
    "numpy.testing": frozenset({"measure", "runstring", "rundocs", "decorate_methods"}),  # exec strings, setattr
}
# The grader's modules a notebook's cells use (the self-checks students may call again in their own cells, the
# skip of unfinished exercises, the graph drawing): only those names, never the modules' other contents.
MODULE_ALLOWED_ONLY: dict[str, frozenset[str]] = {
    "grader.graphs": frozenset({"draw", "show"}),
    # the checks and helpers of each facade, as the one registry names them
    **{f"grader.{facade}": registry.public_names(facade) for facade in registry.FACADES},
    "sys": frozenset({"stdout", "stderr", "version", "version_info", "platform", "maxsize", "float_info", "byteorder",
                      "hexversion"}),
    "torch.cuda": frozenset({"is_available", "device_count"}),
    # a progress bar (handed out as Runtime's stand-in: no bar_format, a template that walks attributes; no monitor
    # thread, which the sandbox refuses and the audit hook would flag)
    "tqdm": frozenset({"tqdm", "trange"}),
    "tqdm.auto": frozenset({"tqdm", "trange"}),
    # rich output; no Image/Video/FileLink (they read files) and no Javascript
    "IPython.display": frozenset({"display", "Markdown", "Math", "Latex", "HTML", "clear_output"}),
    "torch.amp": frozenset({"custom_fwd", "custom_bwd", "autocast"}),
    # copy(x) and deepcopy(x), handed out as Runtime's stand-ins: no memo (its keep-alive list hands back the real
    # __dict__ of what was copied), and refused for an object whose reduction is not its library type's own
    "copy": frozenset({"copy", "deepcopy", "Error"}),
    # warnings without formatwarning, showwarning and warn_explicit (a file name and line of the caller's choosing:
    # linecache reads that line of any file and the warning prints it)
    "warnings": frozenset({"warn", "simplefilter", "filterwarnings", "catch_warnings", "resetwarnings"}),
    # matplotlib: the plotting the course (and everyday plotting) uses. Not: rc_params_from_file, rc_file, style
    # (they read files and print them), switch_backend and a "module://" backend (they import any module), savefig,
    # imsave, imread (files), rc/rc_context (any rcParams key, among them "backend" and "figure.hooks", which import
    # modules by name); rcParams is handed out as a stand-in that sets plotting keys only (Runtime's stand-ins)
    "matplotlib": frozenset({"use", "pyplot", "ticker", "colors", "cm", "patches", "lines", "gridspec", "rcParams",
                             "colormaps", "get_backend", "__version__"}),
    "matplotlib.pyplot": frozenset({
        "figure", "subplots", "subplot", "subplot2grid", "subplot_mosaic", "axes", "gca", "gcf", "sca", "cla", "clf",
        "close", "show", "draw", "pause", "ion", "ioff", "isinteractive", "get_fignums", "fignum_exists",
        "plot", "scatter", "bar", "barh", "hist", "hist2d", "stairs", "step", "stem", "errorbar", "fill",
        "fill_between", "fill_betweenx", "boxplot", "violinplot", "pie", "loglog", "semilogx", "semilogy", "polar",
        "imshow", "matshow", "pcolor", "pcolormesh", "contour", "contourf", "clabel", "quiver", "streamplot",
        "hexbin", "stackplot", "eventplot", "ecdf", "axline", "axhline", "axvline", "axhspan", "axvspan", "hlines",
        "vlines", "annotate", "arrow", "text", "figtext", "title", "suptitle", "xlabel", "ylabel", "xlim", "ylim",
        "xscale", "yscale", "xticks", "yticks", "tick_params", "ticklabel_format", "locator_params", "minorticks_on",
        "minorticks_off", "grid", "legend", "figlegend", "colorbar", "clim", "set_cmap", "get_cmap", "colormaps",
        "axis", "margins", "autoscale", "tight_layout", "subplots_adjust", "twinx", "twiny", "table", "xkcd",
        "figaspect", "rcParams", "cm", "Normalize", "MultipleLocator", "MaxNLocator", "FuncFormatter",
        "FormatStrFormatter", "ScalarFormatter", "LogLocator", "Line2D", "Rectangle", "Circle", "Polygon", "Arrow",
        "Text", "Figure", "Axes", "get_backend"}),  # (no setp/getp: they set and get by name)
    # no attrgetter, methodcaller, getitem, setitem, delitem or in-place operators: they read or write attributes and
    # items past the policy's guards (itemgetter is handed out guarded: Runtime's stand-ins)
    "operator": frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "matmul",
                           "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "xor", "not_", "truth", "is_", "is_not",
                           "contains", "index", "invert", "lshift", "rshift", "concat", "countOf", "indexOf",
                           "itemgetter"}),
    # a logger and its levels; no Formatter, handlers or config (a "{" style formats by walking attributes)
    "logging": frozenset({"getLogger", "basicConfig", "debug", "info", "warning", "error", "critical", "exception",
                          "log", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "NOTSET", "disable"}),
}
# Objects of these library types may be read through these names only (their other attributes lead to the
# library's machinery: a logger's handlers, streams and manager), and are never written: an allow-list per type.
TYPE_ALLOWED_ONLY: dict[str, frozenset[str]] = {
    "logging.Logger": frozenset({"debug", "info", "warning", "error", "critical", "exception", "log", "setLevel",
                                 "isEnabledFor", "getEffectiveLevel", "name", "level"}),
    # a figure: its plotting and layout, never savefig (any file), canvas (print_png ...) or a canvas of its choosing
    "matplotlib.figure.Figure": frozenset({
        "add_subplot", "add_axes", "subplots", "subplot_mosaic", "add_gridspec", "subfigures", "colorbar",
        "suptitle", "supxlabel", "supylabel", "legend", "text", "tight_layout", "subplots_adjust", "set_size_inches",
        "get_size_inches", "set_figwidth", "set_figheight", "get_figwidth", "get_figheight", "set_dpi", "get_dpi",
        "dpi", "axes", "get_axes", "gca", "sca", "delaxes", "clf", "clear", "show", "number", "set_facecolor",
        "get_facecolor", "patch", "align_labels", "align_xlabels", "align_ylabels", "autofmt_xdate", "set_layout_engine",
        "get_layout_engine", "set_tight_layout", "set_constrained_layout", "get_children", "artists", "lines",
        "patches", "texts", "images", "legends", "figure", "get_label", "set_label"}),  # (no set(): a setter by name)
    "matplotlib.figure.SubFigure": frozenset({
        "add_subplot", "add_axes", "subplots", "subplot_mosaic", "add_gridspec", "subfigures", "colorbar",
        "suptitle", "supxlabel", "supylabel", "legend", "text", "subplots_adjust", "axes", "get_axes", "gca", "sca",
        "delaxes", "clf", "clear", "set_facecolor", "get_facecolor", "patch", "align_labels", "get_children"}),
    "matplotlib.backend_bases.FigureCanvasBase": frozenset({"draw", "draw_idle", "get_width_height"}),
    "matplotlib.backend_bases.FigureManagerBase": frozenset({"set_window_title", "get_window_title"}),
    # an image on axes: not write_png (any file)
    "matplotlib.image._ImageBase": frozenset({
        "set_data", "get_array", "set_array", "set_cmap", "get_cmap", "set_clim", "get_clim", "set_norm", "norm",
        "cmap", "set_alpha", "set_interpolation", "get_extent", "set_extent", "axes", "figure", "remove",
        "set_label", "get_label", "colorbar", "set_visible", "get_visible", "set_zorder", "autoscale",
        "changed"}),
    # a graph drawn by torchviz: its source and attributes, never render/save/pipe/view (files, programs) or a
    # filename/directory of its choosing (TYPE_ALLOWED_ONLY objects are never written, their types never subclassed)
    **{f"graphviz.graphs.{kind}": frozenset({
        "node", "edge", "edges", "attr", "subgraph", "source", "body", "graph_attr", "node_attr", "edge_attr", "name",
        "comment", "engine", "format", "strict", "directed", "unflatten"}) for kind in ("Digraph", "Graph")},
    "graphviz.sources.Source": frozenset({"source"}),
    "tqdm.std.tqdm": frozenset({"update", "set_description", "set_description_str", "set_postfix", "set_postfix_str",
                                "close", "refresh", "reset", "clear", "write", "n", "total", "desc"}),
}
TYPE_ALLOWED_ONLY_ROOTS = frozenset(name.split(".")[0] for name in TYPE_ALLOWED_ONLY)
# torch's and NumPy's own surface, and a tensor's: allow-lists derived from what the course needs and from families
# safe by construction (grader.sandboxed.policy_surface says which, and why), not lists of what was found dangerous.
# A tensor's list governs reading only (tensors are written: requires_grad, grad); its other public names are refused
# on any object (REFUSED_EVERYWHERE), so that the kernel's reading of a cell's text refuses them too.
MODULE_ALLOWED_ONLY["torch"] = policy_surface.torch_names(torch, MODULES)
MODULE_ALLOWED_ONLY["numpy"] = policy_surface.numpy_names(numpy, MODULES)
TENSOR_ALLOWED = policy_surface.tensor_names(torch)
# Libraries whose other types (not in TYPE_ALLOWED_ONLY) may be read through no name at all; matplotlib's other
# types (axes, lines, ticks ...) are read as any library object is.
TYPE_ALLOWED_ONLY_STRICT_ROOTS = frozenset({"logging", "tqdm", "graphviz"})
# Names refused on any object that is not the notebook's own: hooks that outlive a call, raw memory, pickling.
REFUSED_EVERYWHERE = frozenset({
    "ctypes", "ctypeslib", "tofile", "from_file", "data_ptr", "untyped_storage", "storage", "share_memory_",
    "register_hook", "register_prehook", "register_post_accumulate_grad_hook", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_backward_hook", "register_state_dict_pre_hook", "register_state_dict_post_hook",
    "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook", "register_module",
    "register_step_pre_hook", "register_step_post_hook", "register_buffer_registration_hook",
    "register_vmap", "register_autograd", "register_fake", "register_kernel", "register_torch_dispatch",
    "mro", "f_back", "cell_contents", *INSPECT_ATTRIBUTES, *policy_surface.tensor_names_refused(torch),
})
# Names refused on objects of one library type (by its module and qualified name, subclasses included):
# an array's memoryview of its raw memory (an object array's pointers, as numbers to write)
TYPE_REFUSED: dict[str, frozenset[str]] = {"numpy.ndarray": frozenset({"data", "dump"})}  # (dump: a pickle file)
TYPE_REFUSED_NAMES = frozenset().union(*TYPE_REFUSED.values())
# Attributes of these library types a graded cell may not set (the array's memory seen through another type)
TYPE_NOT_WRITTEN: dict[str, frozenset[str]] = {"numpy.ndarray": frozenset({"dtype", "strides", "data", "base"})}
# rcParams keys a graded cell may set (matplotlib.rcParams is handed out as a stand-in): plotting groups, but not
# "figure.hooks" (modules imported by name), "text.usetex" and "text.latex.preamble" (latex run on the text),
# "savefig.directory"; and no "backend" (any module imported), animation, webagg, pgf or keymap keys
RC_GROUPS_ALLOWED = frozenset({"figure", "font", "axes", "lines", "legend", "xtick", "ytick", "grid", "image", "patch",
                               "hatch", "boxplot", "errorbar", "scatter", "hist", "contour", "polaraxes", "date",
                               "mathtext", "text", "savefig", "markers", "pcolor", "pcolormesh", "xaxis", "yaxis",
                               "axes3d", "patch", "boxplot", "ytick"})
RC_KEYS_REFUSED = frozenset({"figure.hooks", "text.usetex", "text.latex.preamble", "savefig.directory"})
# matplotlib.use: the non-interactive backends (a "module://x" name imports any module)
BACKENDS_ALLOWED = frozenset({"agg", "svg", "pdf", "ps", "cairo", "template", "module://matplotlib_inline.backend_inline"})
# Names of REFUSED_EVERYWHERE the run time allows on some objects (a tensor's register_hook, outside the checks'
# calls: policy._tensor_hook): whether a line is refused is known only when it runs, never from its text.
DECIDED_WHEN_RUN = frozenset({"register_hook"})
# Dunder names a graded cell may read as attributes, and the special methods its classes may define.
DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__version__"})
SPECIAL_METHODS = frozenset({
    "__init__", "__repr__", "__str__", "__len__", "__call__", "__iter__", "__next__", "__getitem__", "__contains__",
    "__enter__", "__exit__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__post_init__",
    # arithmetic on the notebook's own objects (a dual number for forward mode): Python calls them on those objects only
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__neg__",
    "__pos__", "__abs__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__float__", "__int__", "__bool__",
})
CLASS_NAMESPACE_DUNDERS = SPECIAL_METHODS | {"__module__", "__qualname__", "__doc__", "__classcell__",
                                             "__annotations__", "__orig_bases__"}
# Builtins a graded cell uses as they are; every other builtin name goes through _name_ (guarded or refused).
SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow",
    "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str",
    "sum", "super", "tuple", "zip", "None", "True", "False", "Ellipsis", "NotImplemented", "display",
    *(name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)),
})
# Calls refused when the cell is compiled (unless the name is the cell's own variable there).
REFUSED_CALLS = frozenset({"globals", "locals", "open", "compile", "breakpoint", "memoryview",
                           "exit", "quit", "get_ipython", "exec", "eval"})
# What a cell may name though it is not safe as it is: the guarded versions (Runtime.builtins).
GUARDED_BUILTINS = frozenset({"getattr", "setattr", "hasattr", "delattr", "type", "vars", "help"})
# IPython's names in a notebook's namespace that no graded cell may reach (removed when the runtime is installed).
IPYTHON_NAMES = ("get_ipython", "exit", "quit")
READABLE_DUNDER_NAMES = frozenset({"__name__"})  # `if __name__ == "__main__":` in a pasted script
HELPERS = ("_getattr_", "_write_", "_getitem_", "_getiter_", "_iter_unpack_sequence_", "_unpack_sequence_",
           "_apply_", "_inplacevar_", "_name_", "_import_", "_import_from_", "__metaclass__", "_match_values_",
           "_match_class_", "_magic_")

ALLOWED_TYPE_ROOTS = frozenset({"builtins", "torch", "numpy", "matplotlib", "math", "cmath", "random", "statistics",
                                "fractions", "decimal", "functools", "itertools", "collections", "typing",
                                "contextlib", "warnings", "time", "re", "copy", "weakref", "dataclasses",
                                "torchviz", "graphviz", "PIL", "_collections", "_functools", "_operator",
                                "__main__", "enum", "abc", "types", "logging", "tqdm"})
NEVER_HANDED_OUT = (types.FrameType, types.CodeType, types.TracebackType, types.CellType, types.ModuleType,
                    types.MappingProxyType)


# The policy's own files (this module, its compile time and its run time): a frame there is not the student's line.
POLICY_FILES = frozenset(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
                         for name in ("policy", "policy_rules", "policy_compile", "graph_nodes", "policy_words"))


class PolicyError(Exception):
    """A construct a graded cell may not use: at compile time (with its line) or when it runs."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        from grader.sandboxed.policy_words import worded

        super().__init__(worded(message))  # in the notebook's language, with what to write instead
        self.lineno = lineno

    def _render_traceback_(self) -> list[str]:  # IPython shows exactly these lines
        from grader.spec.messages import say

        line = self.lineno or _cell_line(self.__traceback__)
        where = say("policy_line", line=line) if line else ""
        return [f"PolicyError: {where}{self}", f"({say('policy_what_is_allowed')})"]


def _cell_line(tb: Any) -> int | None:
    """The line of the deepest frame that is not the policy's own (the student's line that was refused)."""
    import traceback

    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename not in POLICY_FILES:
            line = lineno
    return line


def _allowed_below(prefix: str) -> bool:
    """Some module of MODULES is below ``prefix`` (``torch.nn`` below ``torch``)."""
    return any(m.startswith(prefix + ".") for m in MODULES)


def _refused_instead(what: str, instead: str) -> PolicyError:
    """A refusal that says what to write instead."""
    return PolicyError(f"{what} is not available in graded code: {instead}")


def _refused(what: str) -> PolicyError:
    return PolicyError(f"{what} is not available in graded code")


def _private(name: str) -> bool:
    """RestrictedPython's helpers and dunders look like ``_x_``; ``_``, ``_helper`` and ``_x1`` are the student's."""
    # (str's own methods: a str subclass's startswith would say what its author wants)
    return str.startswith(name, "_") and str.__ne__(name, "_") and (str.endswith(name, "_")
                                                                     or str.startswith(name, "__"))


_BUILTIN_NAMES = frozenset(vars(builtins)) | {"get_ipython", "display"}


def _kind(obj: Any) -> str:
    if type(obj) is types.ModuleType:
        return f"the module {obj.__name__}"
    t = type(obj)
    return f"a {getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)} object"
