"""What graded code may name on ``torch`` and ``numpy``: an allow-list, derived, not a list of what was found dangerous.

A name of either module is allowed when it belongs to a family that is safe by construction, or when the course
needs it (its solutions, the catalogue of mistakes and the honest corpora use it, or it is their everyday kin) and it
was reviewed (``TORCH_NAMES``, ``NUMPY_NAMES``, one reason each). Every other name, including every name a new
release of torch or NumPy adds, is refused until it is reviewed: the hole cannot exist before someone lists it.

The families:
- torch's tensor operations: the C functions of ``torch._C._VariableFunctions`` (they take and return tensors);
  the tensor functions of ``torch.functional`` (``einsum``, ``meshgrid``, ``norm`` ...); its dtypes;
- NumPy's ufuncs and its array functions (``__array_function__`` dispatchers: numeric functions of arrays), its
  scalar types;
- a tensor's C methods and properties (``torch._C.TensorBase``: operations and autograd's attributes);
- minus what reads or writes files or memory, whatever family it is in (``FILES_AND_MEMORY``).

The submodules graded code may import (``policy_rules.MODULES``) are reachable as attributes of their parents.
"""

from __future__ import annotations

import types
from typing import Any

# Reviewed names beyond the families (what the course and everyday code use): why each is harmless.
TORCH_NAMES = frozenset({
    # types a cell names, checks against or builds: tensors, shapes, devices, dtypes' info, generators
    "Tensor", "Size", "device", "dtype", "layout", "memory_format", "Generator", "finfo", "iinfo",
    "DoubleTensor", "FloatTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor",  # legacy constructors: tensors from data or a shape
    "strided", "sparse_coo", "channels_last", "contiguous_format", "preserve_format",
    # grad mode, the subject of the course (the observer resets it before each check)
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "autocast", "is_autocast_enabled", "get_autocast_dtype",
    # randomness and defaults (the observer seeds each check itself; set_default_dtype(torch.float64) is gradcheck's
    # everyday companion, and the checks name their dtypes)
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "get_default_dtype",
    "set_default_dtype", "get_default_device",
    # threads: the sandbox pins one (grader.sandboxed.worker._pin_threads)
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
    # printing and predicates
    "set_printoptions", "is_tensor", "typename", "are_deterministic_algorithms_enabled",
    "use_deterministic_algorithms",
    # tensor functions written in Python
    "vmap", "lobpcg", "cond",
    # exceptions a cell may catch
    "OutOfMemoryError", "AcceleratorError",
    # constants
    "e", "pi", "inf", "nan", "newaxis", "__version__",
})
NUMPY_NAMES = frozenset({
    # arrays from data, shapes and ranges (frombuffer and ndarray are handed out as the policy's stand-ins)
    "array", "asarray", "asanyarray", "ascontiguousarray", "asarray_chkfinite", "empty", "zeros", "ones", "full",
    "eye", "identity", "arange", "fromiter", "fromfunction", "frombuffer", "ndarray", "tri", "indices",
    "tril_indices", "triu_indices", "diag_indices", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp", "newaxis",
    "ndenumerate", "ndindex", "broadcast", "broadcast_shapes", "vectorize", "frompyfunc", "poly1d",
    "hamming", "hanning", "bartlett", "blackman", "kaiser",
    # types and their info
    "dtype", "finfo", "iinfo", "ufunc", "generic", "number", "integer", "floating", "complexfloating",
    "promote_types", "issubdtype", "isdtype", "isscalar", "iterable", "typename", "mintypecode", "require",
    "True_", "False_",
    # printing and floating-point error handling
    "set_printoptions", "get_printoptions", "printoptions", "seterr", "geterr", "errstate",
    "format_float_positional", "format_float_scientific", "base_repr", "binary_repr",
    # constants
    "e", "pi", "inf", "nan", "euler_gamma", "__version__",
})
# A tensor's methods written in Python (torch/_tensor.py), reviewed: tensor functions and autograd's. Not:
# storage, storage_type, share_memory_, module_load, reinforce (storages, shared memory, state dicts).
TENSOR_NAMES = frozenset({
    "backward", "detach", "detach_", "register_hook", "dim_order", "norm", "split", "unflatten", "unique",
    "unique_consecutive", "stft", "istft", "lu", "resize", "resize_as", "to_sparse_coo", "index", "is_shared",
    "eig", "lstsq", "solve", "symeig",  # (removed from torch: they raise, pointing to torch.linalg)
})
# Whatever family they belong to: they read or write files, or hand out raw memory.
FILES_AND_MEMORY = frozenset({
    "from_file", "from_dlpack", "to_dlpack", "save", "load", "savez", "savez_compressed", "savetxt", "loadtxt",
    "fromfile", "fromstring", "fromregex", "genfromtxt", "memmap", "info",
    "storage", "untyped_storage", "share_memory_", "pin_memory", "data_ptr", "const_data_ptr",
})


def _submodules(package: str, submodules: frozenset[str]) -> set[str]:
    return {name.split(".")[1] for name in submodules if name.startswith(package + ".") and name.count(".") == 1}


def torch_names(torch: Any, submodules: frozenset[str]) -> frozenset[str]:
    """The names graded code may read on ``torch``: its tensor operations, dtypes, reviewed names, submodules."""
    import torch.functional

    c_functions = torch._C._VariableFunctions
    found = set(TORCH_NAMES) | set(torch.functional.__all__) | _submodules("torch", submodules)
    for name, value in vars(torch).items():
        if name.startswith("_"):
            continue
        if isinstance(value, types.BuiltinFunctionType) and getattr(c_functions, name, None) is not None:
            found.add(name)
        elif isinstance(value, torch.dtype):
            found.add(name)
    return frozenset(found - FILES_AND_MEMORY)


def numpy_names(numpy: Any, submodules: frozenset[str]) -> frozenset[str]:
    """The names graded code may read on ``numpy``: ufuncs, array functions, scalar types, reviewed names, submodules."""
    dispatcher = type(numpy.sum)  # numpy's array-function dispatcher (a plain function before NumPy 1.25)
    found = set(NUMPY_NAMES) | _submodules("numpy", submodules)
    for name, value in vars(numpy).items():
        if name.startswith("_"):
            continue
        if isinstance(value, numpy.ufunc) or (type(value) is dispatcher and dispatcher is not types.FunctionType):
            found.add(name)
        elif isinstance(value, type) and issubclass(value, numpy.generic):
            found.add(name)
    return frozenset(found - FILES_AND_MEMORY)


def tensor_names(torch: Any) -> frozenset[str]:
    """The names graded code may read on a tensor (or on ``torch.Tensor``): its C methods and properties, and the
    reviewed ones written in Python. Underscore and dunder names are the policy's other rules' business."""
    found = {name for name in vars(torch._C.TensorBase) if not name.startswith("_")} | TENSOR_NAMES
    return frozenset(found - FILES_AND_MEMORY)


def tensor_names_refused(torch: Any) -> frozenset[str]:
    """A tensor's public names outside ``tensor_names``: refused on any object by the kernel's reading of a cell's
    text too (it cannot tell a tensor from another object before the cell runs)."""
    return frozenset(name for name in dir(torch.Tensor) if not name.startswith("_")) - tensor_names(torch)
