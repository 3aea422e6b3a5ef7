"""Every sentence a student reads, in one table.

A mistake id maps to a one-sentence ``title`` (what is wrong) and a ``hint``
(what to do). Both are ``str.format`` templates over the fields a finding
carries (``{exercise}``, ``{name}``, ``{factor}``, ...). To add a language, add
a table to ``TABLES`` and set ``LANGUAGE``; the checks never hold prose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class Message:
    title: str
    hint: str


EN: dict[str, Message] = {
    # --- the student's code raised, or is not written yet -------------------------------
    "not_implemented": Message(
        "{function} is not implemented yet (it still raises NotImplementedError).",
        "Replace the `raise NotImplementedError(...)` line in the answer cell `{exercise}` with your code, "
        "run that cell, then run this check again.",
    ),
    "raised_error": Message(
        "your code raised {error_type} while {stage}: {error}",
        "Read the line shown above; fix it in the answer cell `{exercise}` and re-run that cell before this check.",
    ),
    "numpy_on_tracked_tensor": Message(
        "your code calls .numpy() on a tensor that autograd is tracking.",
        "Stay in PyTorch ops inside backward so autograd can record them; if a step really needs NumPy, "
        "wrap it in its own autograd.Function (as CubeBackward does).",
    ),
    "inplace_on_saved": Message(
        "a tensor saved for backward was modified in place afterwards.",
        "Do not use in-place ops (`+=`, `.add_()`, `x[...] = ...`) on tensors you saved or on inputs; "
        "compute a new tensor instead (`out = out + bias`).",
    ),
    "graph_freed": Message(
        "backward ran through a graph whose saved tensors were already freed.",
        "Do not call backward/autograd.grad twice on the same graph without retain_graph=True.",
    ),
    "forward_shape_error": Message(
        "forward failed on inputs of shapes {shapes}: {error}",
        "Check the matrix product: input is [batch, in], weight is [out, in], so the output is input @ weight.T.",
    ),
    # --- forward --------------------------------------------------------------------------
    "not_custom_function": Message(
        "the result does not come from your {classes}: its graph has {found} instead.",
        "Compute the result inside {classes}.forward and call it through `{classes}.apply(...)`; "
        "calling PyTorch's own op would make the derivative checks meaningless.",
    ),
    "no_graph": Message(
        "the result is not connected to autograd (it has no grad_fn), although the input requires grad.",
        "Call your Function through `.apply(...)`, never `.forward(...)` directly, and return the tensor "
        "forward computed.",
    ),
    "returns_tuple": Message(
        "{name} returned a {type} instead of one tensor.",
        "The wrapper must return only the first output, e.g. `return Sinh.apply(x)[0]`.",
    ),
    "forward_wrong_shape": Message(
        "forward returns shape {received_shape}, expected {expected_shape}.",
        "Compare your forward with the formula {formula}; check which dimension you reduce or transpose.",
    ),
    "forward_wrong_dtype": Message(
        "forward returns {received_dtype} for {expected_dtype} inputs.",
        "Keep the input's dtype: do not convert to float32 or to NumPy and back.",
    ),
    "forward_missing_bias": Message(
        "forward ignores the bias: the result equals input @ weight.T without it.",
        "Add the bias when it is not None: `output = output + bias` (not in place on a saved tensor).",
    ),
    "forward_wrong": Message(
        "forward computes the wrong values (expected {formula}).",
        "Check the formula in your forward against {formula}.",
    ),
    "forward_wrong_before_derivatives": Message(
        "derivatives cannot be checked because forward is wrong (see the `{exercise}-forward` check).",
        "Fix forward first; this check then compares your backward with {formula}'s derivatives.",
    ),
    # --- raw backward: count, shapes, dtypes ------------------------------------------------
    "wrong_number_of_gradients": Message(
        "{cls}.backward returns {n_received} value(s), but {cls}.forward takes {n_expected} input(s).",
        "Return exactly one gradient per forward input, in order; use None for inputs that are not tensors "
        "or do not need a gradient.",
    ),
    "gradient_for_non_tensor": Message(
        "{cls}.backward returns a tensor for `{name}`, which was {value} (not a tensor).",
        "Return None in that position: only tensors get gradients (e.g. `grad_bias = None` when bias is None).",
    ),
    "missing_gradient": Message(
        "{cls}.backward returns None for `{name}`, which requires a gradient.",
        "Compute and return the gradient for `{name}`; check the index you test in ctx.needs_input_grad.",
    ),
    "gradient_not_reduced": Message(
        "the gradient for `{name}` has shape {received_shape} but `{name}` has shape {expected_shape}; "
        "autograd quietly sums it for you here, hiding a bug.",
        "Sum over the broadcast (batch) dimension yourself, e.g. `grad_output.sum(0)`, so that the gradient "
        "has exactly the shape of `{name}`.",
    ),
    "transposed_gradient": Message(
        "the gradient for `{name}` is transposed: shape {received_shape} instead of {expected_shape}.",
        "dL/dW[i, j] = sum over the batch of grad_output[b, i] * input[b, j]: use `grad_output.T @ input`, "
        "not `input.T @ grad_output`.",
    ),
    "gradients_in_wrong_order": Message(
        "{cls}.backward returns the gradient for `{other}` in the position of `{name}`.",
        "Return gradients in the same order as forward's inputs: ({names}).",
    ),
    "wrong_gradient_shape": Message(
        "the gradient for `{name}` has shape {received_shape}, expected {expected_shape}.",
        "A gradient always has the shape of the input it belongs to; check your matrix products.",
    ),
    "gradient_dtype": Message(
        "the gradient for `{name}` is {received_dtype} but `{name}` is {expected_dtype}: precision is lost.",
        "Do not convert to float32 (`.float()`) in backward; compute in the dtype of the saved tensors.",
    ),
    # --- first derivatives -------------------------------------------------------------------
    "forgot_grad_output": Message(
        "the gradient for `{name}` ignores grad_output: it equals the derivative alone.",
        "Apply the chain rule: backward receives dL/dy and must return dL/dx = grad_output * dy/dx.",
    ),
    "wrong_sign": Message(
        "the gradient for `{name}` has the wrong sign.",
        "Re-derive d({formula})/d{name}; a minus sign crept in (or is missing).",
    ),
    "scaled_gradient": Message(
        "the gradient for `{name}` is off by a constant factor of {factor}.",
        "Re-derive d({formula})/d{name}: a constant is missing or extra (e.g. the 2 in 2x, the 3 in 3x²).",
    ),
    "zero_gradient": Message(
        "the gradient for `{name}` is zero everywhere.",
        "Return the computed gradient, not a fresh zeros tensor; check that backward uses grad_output.",
    ),
    "wrong_gradient": Message(
        "the gradient for `{name}` is wrong.",
        "Re-derive d({formula})/d{name} and compare with the numbers above on this small probe.",
    ),
    "gradcheck_failed": Message(
        "torch.autograd.gradcheck disagrees with your backward: {detail}",
        "Your backward does not match finite differences of your forward; re-derive it.",
    ),
    # --- second derivatives ------------------------------------------------------------------
    "first_order_wrong_before_second": Message(
        "second derivatives cannot be checked because the first derivatives are wrong (see `{exercise}-first-order`).",
        "Fix the first derivatives first.",
    ),
    "intermediates_on_ctx": Message(
        "the second derivative is missing: backward uses tensors stored as ctx attributes ({attrs}), "
        "which autograd does not track.",
        "Save tensors with ctx.save_for_backward; for intermediates, return them as extra outputs of forward "
        "and save those (as Sinh does), so that double backward can see them.",
    ),
    "detach_in_backward": Message(
        "the second derivative is missing: backward calls .detach() (or .data), which cuts the graph.",
        "Remove .detach()/.data from backward: with create_graph=True autograd records backward's ops.",
    ),
    "no_grad_in_backward": Message(
        "the second derivative is missing: backward computes under torch.no_grad().",
        "Remove the torch.no_grad() block from backward so that autograd can record it.",
    ),
    "numpy_in_backward": Message(
        "the second derivative is missing: backward computes through NumPy (or .item()), which autograd cannot see.",
        "Do that step with PyTorch ops, or wrap the non-PyTorch code in its own autograd.Function with its own "
        "backward (CubeBackward).",
    ),
    "untracked_backward": Message(
        "the second derivative is missing: your backward's result is not recorded by autograd.",
        "Compute backward with PyTorch ops on the saved tensors (no .detach(), no NumPy, no torch.no_grad()); "
        "where a step cannot be tracked, wrap it in a custom Function with its own backward.",
    ),
    "extra_output_gradients_ignored": Message(
        "Sinh.backward ignores the gradients of its extra outputs exp(x) and exp(-x).",
        "Add them: grad_x += grad_expx * expx and grad_x -= grad_expnegx * expnegx; double backward flows "
        "through those outputs.",
    ),
    "double_backward_wrong_order": Message(
        "the derivative of your gradient with respect to `{name}` equals the one expected for `{other}`: "
        "the gradients of {cls}.backward are in the wrong order.",
        "{cls}.backward must return one gradient per input of {cls}.forward, in the same order.",
    ),
    "second_derivative_missing": Message(
        "the derivative of your gradient with respect to `{name}` is missing (autograd found no path).",
        "Use `{name}` in backward through tracked ops (saved with save_for_backward), not as a constant.",
    ),
    "second_derivative_wrong": Message(
        "the derivative of your gradient with respect to `{name}` is wrong.",
        "Check the backward of your backward (e.g. CubeBackward.backward) against the formula, term by term.",
    ),
    "gradgradcheck_failed": Message(
        "torch.autograd.gradgradcheck disagrees with your backward's backward: {detail}",
        "Make every step of backward differentiable (PyTorch ops on saved tensors).",
    ),
    "backward_not_through_function": Message(
        "the gradient is not computed by your {classes}.",
        "Cube.backward must return CubeBackward.apply(grad_out, x), so that the gradient has a backward of its own.",
    ),
    # --- structure ---------------------------------------------------------------------------
    "tensor_on_ctx": Message(
        "{cls} stores tensors as attributes on ctx ({attrs}) instead of saving them with ctx.save_for_backward.",
        "Use ctx.save_for_backward(...) for tensors (inputs, outputs, intermediates returned as outputs) and "
        "read them back with ctx.saved_tensors; attributes are for non-tensors. Tensors on ctx leak memory "
        "and escape autograd's checks.",
    ),
    "needs_input_grad_ignored": Message(
        "when `{name}` does not require grad, {cls}.backward still computes a gradient for it.",
        "Guard each gradient with `if ctx.needs_input_grad[i]:` (i = position of that input in forward) "
        "and return None otherwise.",
    ),
    "needs_input_grad_wrong": Message(
        "when only {pattern} require grad, the gradient for `{name}` is wrong or missing.",
        "Check the index you use in ctx.needs_input_grad[i]: i is the position of the input in forward "
        "(0 = input, 1 = weight, 2 = bias).",
    ),
    # --- notebook 1 and fallbacks -------------------------------------------------------------
    "grader_error": Message(
        "the grader could not finish this check ({error_type}: {error}).",
        "This is unexpected: re-run the notebook from the top; if it persists, tell your instructor.",
    ),
}

TABLES: Mapping[str, Mapping[str, Message]] = {"en": EN}
LANGUAGE = "en"


def message(mistake: str, language: str | None = None) -> Message:
    """The message for ``mistake`` in ``language`` (default: ``LANGUAGE``), falling back to English."""
    table = TABLES.get(language or LANGUAGE, EN)
    return table.get(mistake) or EN[mistake]
