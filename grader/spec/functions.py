"""The registry of the function checks of notebooks 1 and 4, and what their findings say.

One entry of ``CHECKS`` per public check (``basics.check_vjp``, ``basics.check_hvp`` ...): the exercise it belongs
to, its keyword arguments with their defaults, how its probes are set up (``grader.spec.function_probes``) and its
✓ line. The observer (``grader.sandboxed.observe_functions.OBSERVERS``) and the judge
(``grader.judge.functions.JUDGES``) each hold one entry per name of this table; ``grader.basics`` is the notebooks'
name for all of it. Also here, per exercise: the notebook section, the function's signature as messages show it,
the mistakes a finding may name with the fields it fills, and the PyTorch error texts that reveal a mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from grader.spec.function_probes import (_batch_setup, _hvp_forward_setup, _hvp_setup, _penalty_setup, _second_setup,
                                         _vjp_probes, _vjp_setup, _general_probes, _with_stale_grads)

#: One observation (per probe): plain data only.
Obs = dict[str, Any]

#: Notebook section each exercise is taught in (hints point there; titles must match the notebook).
SECTIONS: dict[str, str] = {
    "vjp": "4. Vector outputs and grad_outputs",
    "accumulate": "7. Gradients accumulate: zeroing them",
    "secondderiv": "8. Higher derivatives with create_graph=True",
    # notebook 4
    "hvp": "7. Exercise: `hvp` (graded, 4 points)",
    # notebook 5
    "penalty": "4. Exercise: `gradient_penalty` (graded, 3 points)",
}

#: How the student's functions are called, as shown in messages.
SIGNATURES: dict[str, str] = {
    "vjp": "vector_jacobian_product(f, x, v)",
    "accumulate": "mean_gradient_over_batches(loss_fn, w, batches)",
    "secondderiv": "second_derivative(f, x)",
    # notebook 4
    "hvp": "hvp(f, x, v)",
    "check_hvp_forward_over_reverse": "hvp_forward(f, x, v)",  # a check's own signature comes first
    "penalty": "gradient_penalty(f, w, x)",
}


#: The notebook each exercise is in: a section of another notebook is cited with that notebook's name.
NOTEBOOKS: dict[str, str] = {
    "vjp": "01_autograd_basics.ipynb", "accumulate": "01_autograd_basics.ipynb",
    "secondderiv": "01_autograd_basics.ipynb", "hvp": "04_modern_functions.ipynb",
    "penalty": "05_markers_and_capstone.ipynb",  # notebook 4 until its split (issue 32)
}

#: Sections that teach a mistake better than its exercise's own section does (in the exercise's notebook, unless
#: MISTAKE_NOTEBOOKS names another).
MISTAKE_SECTIONS: dict[str, str] = {
    "returned_tuple": "4. Vector outputs and grad_outputs",
    "accumulate_backward_twice": "6. backward frees the graph: retain_graph",
    # notebook 4
    "hvp_not_forward_mode": "6. Hessian-vector products: double backward and forward-over-reverse",
    "hvp_forms_hessian": "6. Hessian-vector products: double backward and forward-over-reverse",
    "hvp_returned_jvp_pair": "4. Forward mode: `jvp`, dual tensors and `torch.func.jvp`",
    "hvp_no_create_graph": "6. Hessian-vector products: double backward and forward-over-reverse",
    "penalty_no_create_graph": "3. Capstone: a gradient penalty through your own Functions",  # notebook 5
}
#: Mistakes any exercise may make whose section is in one notebook: notebook 4's hvp returning autograd.grad's tuple
#: was sent to "4. Vector outputs and grad_outputs" as if notebook 4 had it (its section 4 is forward mode).
MISTAKE_NOTEBOOKS: dict[str, str] = {"returned_tuple": "01_autograd_basics.ipynb"}

#: Every mistake a check here can report (a key of ``grader.spec.messages``), with the fields its finding fills
#: besides ``exercise`` and ``function`` (the student's function as called, e.g. ``second_derivative(f, x)``),
#: which every finding of these checks carries.
MISTAKES: dict[str, tuple[str, ...]] = {
    # any exercise
    "not_implemented": ("error",),
    "raised_error": ("error_type", "error", "stage"),
    "returned_none": (),
    "returned_tuple": ("type", "items"),
    "returned_not_a_tensor": ("type",),
    "returned_unreadable_tensor": ("type",),
    "returned_integer_tensor": ("dtype",),
    "modified_input": ("name",),
    "malformed_observations": ("why",),
    "grader_error": ("error_type", "error"),
    # vjp
    "vjp_forgot_grad_outputs": ("error_type", "error"),
    "vjp_grad_outputs_wrong_shape": ("error_type", "error"),
    "vjp_output_not_connected": ("error_type", "error"),
    "vjp_returned_jacobian": ("received_shape", "expected_shape"),
    "vjp_wrong_shape": ("received_shape", "expected_shape", "output_shape"),
    "vjp_ones_as_grad_outputs": (),
    "vjp_wrong_sign": (),
    "vjp_wrong": (),
    "vjp_changed_x_grad": (),
    "vjp_transposed": ("received_shape", "expected_shape"),
    "vjp_grad_none_on_entry": ("error_type", "error"),
    "vjp_matmul_shape": ("error_type", "error"),
    "len_of_0d_tensor": ("error_type", "error"),
    "index_of_0d_tensor": ("error_type", "error"),
    # accumulate
    "accumulate_grad_none_on_entry": ("error_type", "error"),
    "accumulate_backward_twice": ("error_type", "error"),
    "accumulate_loss_not_connected": ("error_type", "error"),
    "accumulate_backward_on_non_scalar": ("error_type", "error"),
    "accumulate_inplace_on_w": ("error_type", "error"),
    "accumulate_wrong_shape": ("received_shape", "expected_shape"),
    "accumulate_sum_not_mean": (),
    "accumulate_divided_twice": (),
    "accumulate_reset_in_loop": ("formula",),
    "accumulate_stale_grad_kept": (),
    "accumulate_wrong": (),
    "accumulate_no_backward": ("batch",),
    "accumulate_one_backward_for_all": ("batch", "previous"),
    "accumulate_returns_alias": (),
    # secondderiv
    "second_forgot_create_graph": ("error_type", "error"),
    "second_forgot_grad_outputs": ("error_type", "error"),
    "second_grad_outputs_wrong_shape": ("error_type", "error"),
    "second_wrong_input": ("error_type", "error", "input", "x"),
    "second_forgot_create_graph_and_wrong_input": ("error_type", "error", "input", "x"),
    "second_wrong_shape": ("received_shape", "expected_shape"),
    "second_returned_first_derivative": (),
    "second_off_by_factor_two": ("factor",),
    "second_wrong": (),
    "second_changed_x_grad": (),
    # notebook 4
    "hvp_needs_function": ("names", "probe_function"),
    "hvp_changed_x": (),
    "hvp_wrong_shape": ("received_shape", "expected_shape"),
    "hvp_returned_jvp_pair": ("type", "items"),
    "hvp_returns_gradient": (),
    "hvp_ones_not_v": (),
    "hvp_diagonal_only": (),
    "hvp_wrong": (),
    "hvp_forms_hessian": (),
    "hvp_not_double_backward": (),
    "hvp_not_forward_mode": (),
    "hvp_x_not_tracked": ("error_type", "error"),
    "hvp_torch_func_through_classic_function": ("names", "error_type", "error"),
    "hvp_no_create_graph": ("error_type", "error"),
    "penalty_changed_w_grad": (),
    "penalty_changed_x": (),
    "penalty_norm_over_dim_1": (),
    "penalty_wrong_shape": ("received_shape", "expected_shape"),
    "penalty_norm_over_batch": (),
    "penalty_squared_norm": (),
    "penalty_sum_not_mean": (),
    "penalty_missing_minus_one": (),
    "penalty_wrong": (),
    "penalty_no_create_graph": (),
    "penalty_gradient_wrong": (),
    "penalty_x_not_tracked": ("error_type", "error"),
}

#: Mistakes that are not about the student's answer: no section to re-read.
_NOT_ABOUT_THE_ANSWER = ("malformed_observations", "grader_error")


def section(exercise: str, mistake: str) -> str:
    """The notebook section a finding points to, quoted as ``grader.checks`` does ('' for grader problems)."""
    if mistake in _NOT_ABOUT_THE_ANSWER:
        return ""
    from grader.spec.messages import heading_in, say

    heading = heading_in(MISTAKE_SECTIONS.get(mistake, SECTIONS[exercise]))
    notebook = MISTAKE_NOTEBOOKS.get(mistake, NOTEBOOKS[exercise]) if mistake in MISTAKE_SECTIONS else NOTEBOOKS[exercise]
    if notebook == NOTEBOOKS[exercise]:
        return say("section_here", heading=heading)
    return say("section_in_notebook", heading=heading, notebook=notebook)


# A matrix product whose shapes do not line up (v @ J with J of shape f(x).shape + x.shape), as PyTorch words it.
_MATMUL_SHAPE_ERRORS = ("shapes cannot be multiplied", "size mismatch", "Expected size for first two dimensions of batch2",
                        "inconsistent tensor size")
# A 0-d tensor (x = 2.0, and then its derivatives) used as if it had a dimension.
_ZERO_D_ERRORS = [("len() of a 0-d tensor", "len_of_0d_tensor"), ("invalid index of a 0-dim tensor", "index_of_0d_tensor"),
                  ("too many indices for tensor of dimension 0", "index_of_0d_tensor")]

# Known PyTorch error messages -> the mistake they reveal, per exercise (first match wins).
ERROR_MISTAKES: dict[str, list[tuple[str, str]]] = {
    "vjp": [
        ("grad can be implicitly created only for scalar outputs", "vjp_forgot_grad_outputs"),
        ("Mismatch in shape", "vjp_grad_outputs_wrong_shape"),
        ("does not require grad", "vjp_output_not_connected"),
        ("'NoneType' object has no attribute", "vjp_grad_none_on_entry"),
        *(( needle, "vjp_matmul_shape") for needle in _MATMUL_SHAPE_ERRORS),
        *_ZERO_D_ERRORS,
    ],
    "accumulate": [
        ("'NoneType' object has no attribute", "accumulate_grad_none_on_entry"),
        ("Trying to backward through the graph a second time", "accumulate_backward_twice"),
        ("does not require grad", "accumulate_loss_not_connected"),
        ("grad can be implicitly created only for scalar outputs", "accumulate_backward_on_non_scalar"),
        ("leaf Variable that requires grad is being used in an in-place operation", "accumulate_inplace_on_w"),
    ],
    "secondderiv": [
        ("does not require grad", "second_forgot_create_graph"),
        ("Trying to backward through the graph a second time", "second_forgot_create_graph"),
        ("grad can be implicitly created only for scalar outputs", "second_forgot_grad_outputs"),
        ("Mismatch in shape", "second_grad_outputs_wrong_shape"),
        # PyTorch's own advice ("Set allow_unused=True") leads the wrong way: the input is the wrong tensor
        ("not have been used in the graph", "second_wrong_input"),
        *_ZERO_D_ERRORS,
    ],
    # notebook 4
    "hvp": [("One of the differentiated Tensors does not require grad", "hvp_x_not_tracked"),
            ("does not require grad", "hvp_no_create_graph"),
            ("must override the setup_context staticmethod", "hvp_torch_func_through_classic_function")],
    "penalty": [("One of the differentiated Tensors does not require grad", "penalty_x_not_tracked"),
                ("does not require grad", "penalty_no_create_graph")],
}


# ---------------------------------------------------------------------------------------------
# text of values and errors, as both sides write it

_MAX_TEXT = 4000  # characters of an error message kept (hints match on the whole text, not only its first line)
_MAX_ITEMS = 100  # entries of a returned tuple/list described


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)[:100]
    except Exception:  # a metaclass of the student's can make even this fail
        return "object"


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:_MAX_TEXT]
    except Exception:
        return "<the error message could not be printed>"


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# the registry


@dataclass(frozen=True)
class FunctionCheck:
    exercise: str
    defaults: dict[str, Any]
    setup: Callable[[dict[str, Any]], list[tuple[Any, torch.Tensor | None]]]  # (probe, stale .grad or None)
    summary: str  # formatted with n, the number of probes
    uses_namespace: bool = False  # the observer also gets the notebook's namespace (its own Functions)


_DEFAULTS = {"sizes": (3,), "seed": 0}
_BATCH_DEFAULTS = {"sizes": (3,), "n_batches": 4, "seed": 0}
_HVP = {"sizes": (4,), "seed": 0}
_PENALTY = {"sizes": (5, 3), "seed": 0}

#: Every public check, by name: the exercise, its keyword arguments with defaults, its probes, its ✓ line.
CHECKS: dict[str, FunctionCheck] = {
    # notebook 1
    "check_vjp": FunctionCheck("vjp", _DEFAULTS, _vjp_setup, "vjp: matches vᵀJ on {n} probes"),
    "check_vjp_keeps_grad": FunctionCheck("vjp", _DEFAULTS, _with_stale_grads(_vjp_probes),
                                          "vjp: x.grad left untouched and vᵀJ correct on {n} probes"),
    "check_mean_gradient": FunctionCheck("accumulate", _BATCH_DEFAULTS, _batch_setup(0, stale_grad=False),
                                         "accumulate: mean gradient correct, one backward per batch, on {n} probes"),
    "check_mean_gradient_stale": FunctionCheck("accumulate", _BATCH_DEFAULTS, _batch_setup(1000, stale_grad=True),
                                               "accumulate: stale w.grad ignored on {n} probes"),
    "check_mean_gradient_copy": FunctionCheck("accumulate", _BATCH_DEFAULTS, _batch_setup(3000, stale_grad=False),
                                              "accumulate: returns its own copy, not w.grad, on {n} probes"),
    "check_second_derivative": FunctionCheck("secondderiv", _DEFAULTS, _second_setup,
                                             "secondderiv: matches f''(x) on {n} probes"),
    "check_second_derivative_general": FunctionCheck(
        "secondderiv", _DEFAULTS, _with_stale_grads(_general_probes),
        "secondderiv: any shape (0-d to 3-d) and x.grad untouched, on {n} probes"),
    # notebook 4: the probes go through the notebook's own Functions (its namespace)
    "check_hvp": FunctionCheck("hvp", _HVP, _hvp_setup,
                               "hvp: H v by double backward matches PyTorch's Hessian on {n} probes",
                               uses_namespace=True),
    "check_hvp_forward_over_reverse": FunctionCheck(
        "hvp", _HVP, _hvp_forward_setup,
        "hvp_forward: H v by forward-over-reverse matches PyTorch's Hessian on {n} probes", uses_namespace=True),
    "check_penalty_value": FunctionCheck("penalty", _PENALTY, _penalty_setup,
                                         "gradient_penalty: value matches PyTorch's on {n} probes", uses_namespace=True),
    "check_penalty_gradient": FunctionCheck(
        "penalty", _PENALTY, _penalty_setup,
        "gradient_penalty: its gradient with respect to w matches PyTorch's (double backward) on {n} probes",
        uses_namespace=True),
}


def spec_of(check: str) -> FunctionCheck:
    if not isinstance(check, str) or check not in CHECKS:
        raise ValueError(f"unknown check {check!r}; the checks are: {', '.join(CHECKS)}")
    return CHECKS[check]


def arguments(check: str, spec: FunctionCheck, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The check's keyword arguments with defaults filled in, normalised (both sides build the same probes)."""
    unknown = sorted(set(kwargs) - set(spec.defaults))
    if unknown:
        raise TypeError(f"{check}() got an unexpected keyword argument {unknown[0]!r}")
    args = {**spec.defaults, **kwargs}
    args["sizes"] = tuple(int(n) for n in args["sizes"])
    args["seed"] = int(args["seed"])
    if "n_batches" in args:
        args["n_batches"] = int(args["n_batches"])
    return args
