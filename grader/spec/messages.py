"""Every sentence a student reads, in one table.

A mistake id maps to a one-sentence ``title`` (what is wrong) and a ``hint``
(what to do). Both are ``str.format`` templates over the fields a finding
carries (``{exercise}``, ``{name}``, ``{factor}``, ...). To add a language, add
a table to ``TABLES`` (from its catalogue); the checks never hold prose. Which language a sentence is said in is
chosen per notebook (``using``, ``choose``, ``current``): by the grading path from the notebook's metadata, in the
sandbox from its plan, in the student's kernel from the notebook it runs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from grader.spec import messages_zh


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
    # In a notebook the student runs (not under nbgrader), an untouched stub is reported, not raised: Run All
    # goes on past unfinished exercises. Printed after "○ ".
    "unfinished_exercise": Message(
        "{exercise} · {check}: not done yet: exercise '{exercise}' still raises NotImplementedError ({target}).",
        "This check did not run. Write {target} in the answer cell `{exercise}`, run that cell, then this one; "
        "until then the exercise scores 0 when graded.",
    ),
    "note_paste_skipped": Message("skipped: paste your {names} into the cell of section 0 first.",
                                  "Run this cell again once you have."),
    "note_capstone_not_pasted": Message("section 0 is not pasted yet: the capstone runs with PyTorch's x², x³, sinh, eˣ "
                                        "and softplus in place of your Functions.",
                                        "Paste them and run it again to go through yours."),
    "note_compile_not_while_grading": Message(
        "skipped: torch.compile is not run while grading (Dynamo reads Python frames, which the grader's sandbox "
        "refuses).", "Run this cell in your own kernel."),
    "note_compile_unavailable": Message("skipped: torch.compile does not run here ({error}).",
                                        "The demonstrations of this section need it; nothing else in the notebook does."),
    "note_library_not_while_grading": Message("skipped: torch.library is not run while grading.",
                                              "Run this cell in your own kernel."),
    "unfinished_skipped": Message(
        "skipped: exercise '{exercise}' is not done yet ({target} still raises NotImplementedError).",
        "Run this cell again once you have written it.",
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
    "tensor_subclass": Message(
        "{name} returned a {type}: the checks read plain tensors only.",
        "Return the tensor your computation gives (a `torch.Tensor`); subclasses of it are not part of this course.",
    ),
    "output_after_function": Message(
        "the result went through {after} after your {cls}: autograd would differentiate that part for you, so the "
        "checks could not score your backward alone.",
        "Return `{cls}.apply(...)` itself and compute the whole formula inside {cls}.forward: the derivative checks "
        "score what your own backward returns.",
    ),
    "function_of_computed_input": Message(
        "your {cls} was applied to the result of {before}, not to the inputs: autograd would differentiate {before} "
        "for you, and the derivative would not be your backward's.",
        "Call `{cls}.apply(...)` on the inputs themselves and compute the whole formula inside {cls}.forward; the "
        "derivative has to be yours.",
    ),
    "derivative_by_autograd": Message(
        "{cls}.backward asks autograd for the derivative (it starts the autograd engine: `torch.autograd.grad`, "
        "`.backward()` or `torch.func`) instead of computing it.",
        "Write the derivative yourself from what forward saved: backward returns grad_output times dy/dx, built "
        "from torch operations, with no call to autograd inside.",
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
        "the gradient for `{name}` ignores the gradient backward receives (grad_out, grad_output: its argument "
        "after ctx): it equals the derivative alone.",
        "Apply the chain rule: backward receives dL/dy and must return dL/dx = dL/dy * dy/dx, that argument times "
        "the derivative.",
    ),
    "wrong_sign": Message(
        "the gradient for `{name}` has the wrong sign.",
        "Re-derive d({formula})/d{name}; a minus sign crept in (or is missing).",
    ),
    # Sinh's derivatives are the student's to derive (notebook 3, section 4): check them at x = 0, don't give them.
    "wrong_sign:sinh": Message(
        "the gradient for `{name}` has the wrong sign.",
        "Check your backward on paper at x = 0, as the Sinh section's hint 3 does: with grad_out = 1 and the two "
        "other gradients 0, it must give the slope of sinh at 0, which is positive (cosh(0) = 1). Compare the sign of "
        "each of your terms there with the expected and received values above, then re-derive the one that is off.",
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
    "intermediates_not_outputs": Message(
        "the second derivative is missing: backward computes with tensors made inside forward (or setup_context) "
        "that are not its outputs ({tensors}); both run with grad mode off, so they have no history: to autograd "
        "they are constants.",
        "Let backward compute only from forward's inputs and outputs, saved with ctx.save_for_backward: save "
        "the very tensor you return (not a copy), and return an intermediate you need as an extra output (as "
        "Sinh does). An output has your Function's node as grad_fn, so double backward reaches x through it.",
    ),
    "detach_in_backward": Message(
        "the second derivative is missing: backward calls .detach() (or .data), so autograd records what it "
        "detaches as a constant. Used inside a bigger computation, such a backward gives no error, just a "
        "wrong second derivative.",
        "Remove .detach()/.data from backward: with create_graph=True autograd records backward's ops, and "
        "only what it records is differentiated again.",
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
        "Differentiate the formula your backward returns once more by hand and compare it, term by term, with the "
        "numbers above.",
    ),
    "second_derivative_wrong:cube": Message(
        "the derivative of your gradient with respect to `{name}` is wrong.",
        "Double backward goes through CubeBackward.backward: it must return the derivative of what "
        "CubeBackward.forward computes (grad_out · 3x²) with respect to each of its inputs, times the gradient it "
        "receives. Check which tensor you pass to each helper: the gradient backward receives, or the grad_out and "
        "x that forward saved; compare with the numbers above.",
    ),
    "second_derivative_wrong:sinh": Message(
        "the derivative of your gradient with respect to `{name}` is wrong.",
        "Your first derivative is right; double backward reaches x through eˣ and e⁻ˣ, outputs of Sinh, so autograd "
        "calls Sinh.backward again with their gradients in grad_expx and grad_expnegx. Check those two terms on "
        "paper at x = 0, as the Sinh section's hint 3 does: with grad_expx = 1 and the others 0, your backward must "
        "give the slope of eˣ at 0; with grad_expnegx = 1, the slope of e⁻ˣ at 0 (mind its sign). Together they "
        "make sinh's second derivative, which is sinh(0) = 0 at x = 0; compare with the numbers above.",
    ),
    "second_derivative_overflow": Message(
        "the derivative of your gradient with respect to `{name}` is {value} at x = {x}, where PyTorch's is finite: "
        "a step of your backward overflows there (inf / inf, 0 · inf or inf − inf).",
        "torch.where does not shield a derivative: the branch it does not pick is still differentiated, and its nan "
        "times 0 is nan. Compute every branch only where it is finite (e.g. torch.sigmoid(x) instead of "
        "eˣ / (1 + eˣ)), so that backward's own backward stays finite too.",
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
        "{cls} stores tensors as attributes on ctx ({attrs}) instead of saving them with ctx.save_for_backward "
        "(which holds {saved} tensor(s)).",
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
    # --- notebook 1 (grader/judge/autograd_basics.py): what the student's function returned, for any exercise ----
    "returned_none": Message(
        "{function} returned None instead of a tensor.",
        "Did you forget the `return` statement? Return the tensor you computed.",
    ),
    "returned_tuple": Message(
        "{function} returned a {type} ({items}) instead of one tensor.",
        "torch.autograd.grad returns a tuple with one gradient per input: take its [0], "
        "e.g. `(g,) = torch.autograd.grad(...)`.",
    ),
    "hvp_returned_jvp_pair": Message(
        "{function} returned a {type} ({items}) instead of one tensor.",
        "torch.func.jvp returns a pair: the function's value and its derivative along the tangent. Forward over "
        "reverse, the value is ∇f(x) and the tangent H v: return the second element, `jvp(...)[1]`.",
    ),
    "returned_not_a_tensor": Message(
        "{function} returned a {type}, not a torch.Tensor.",
        "Return the tensor autograd computed, as it is: no .numpy(), .item() or .tolist().",
    ),
    "returned_unreadable_tensor": Message(
        "{function} returned a tensor the grader cannot read ({type}).",
        "Return a plain torch.Tensor (the one torch.autograd.grad or .grad gives you), not a subclass or a "
        "wrapper of it.",
    ),
    "returned_integer_tensor": Message(
        "{function} returned an integer tensor ({dtype}).",
        "Return the gradient tensor itself, in float64: do not round or convert it.",
    ),
    "modified_input": Message(
        "your function changed {name} itself during the call.",
        "Only compute derivatives: never modify {name} in place (no `+=`, no `.sub_()`, no optimizer step).",
    ),
    "malformed_observations": Message(
        "the grader received malformed observations: {why}",
        "This is not about your answer: run the cell again, and if this message stays, tell your instructor.",
    ),
    # --- notebook 1, exercise "vjp": vector_jacobian_product(f, x, v) -----------------------------
    "vjp_forgot_grad_outputs": Message(
        "f(x) is not a scalar and no grad_outputs was given ({error_type}: {error}).",
        "autograd needs to know how to weight the entries of f(x): pass grad_outputs=v to torch.autograd.grad.",
    ),
    "vjp_grad_outputs_wrong_shape": Message(
        "grad_outputs does not have the shape of f(x) ({error_type}: {error}).",
        "grad_outputs must have the shape of the OUTPUT f(x), not of x; v already has that shape, "
        "so pass grad_outputs=v.",
    ),
    "vjp_output_not_connected": Message(
        "f(x) has no graph back to x ({error_type}: {error}).",
        "Do not detach x or wrap the forward pass in torch.no_grad(): autograd must record how f(x) is "
        "computed from x.",
    ),
    "vjp_returned_jacobian": Message(
        "your result has shape {received_shape} = f(x).shape + x.shape: it is the whole Jacobian J, not vᵀJ.",
        "You need the product of v with the Jacobian, not J itself: pass grad_outputs=v to torch.autograd.grad "
        "and it returns vᵀJ directly, without ever building J.",
    ),
    "vjp_wrong_shape": Message(
        "your result has shape {received_shape}, but vᵀJ has the shape of x, {expected_shape}.",
        "f(x) and v have shape {output_shape}; the answer has one entry per entry of x: differentiate with "
        "respect to x.",
    ),
    "vjp_transposed": Message(
        "your result has shape {received_shape}: it is vᵀJ transposed (its transpose is exactly right).",
        "Return vᵀJ in the shape of x, {expected_shape}: drop the .t() / .T (torch.autograd.grad with "
        "grad_outputs=v already returns it shaped like x).",
    ),
    "vjp_grad_none_on_entry": Message(
        "your code uses x.grad, but x.grad is None when the function starts ({error_type}: {error}).",
        "x.grad stays None until a backward writes into it, so x.grad.zero_() fails on a fresh x. Do not use x.grad "
        "at all here: torch.autograd.grad(f(x), x, grad_outputs=v) returns vᵀJ and leaves x.grad alone.",
    ),
    "vjp_matmul_shape": Message(
        "a matrix product in your code does not line up ({error_type}: {error}): v @ J works only when f(x) and x "
        "are 1-D, since the Jacobian J has shape f(x).shape + x.shape.",
        "Let autograd do the product: torch.autograd.grad(f(x), x, grad_outputs=v) returns vᵀJ in the shape of x for "
        "any shapes (or flatten: v.reshape(-1) @ J.reshape(v.numel(), x.numel()), then reshape to x.shape).",
    ),
    "len_of_0d_tensor": Message(
        "your code calls len() on a 0-d tensor ({error_type}: {error}): a 0-d tensor such as x = 2.0 has no "
        "first dimension to count.",
        "Use x.numel() for the number of entries (1 for a 0-d tensor) and x.shape for the dimensions; or avoid "
        "loops over entries altogether: grad_outputs=torch.ones_like(...) works for every shape.",
    ),
    "index_of_0d_tensor": Message(
        "your code indexes a 0-d tensor ({error_type}: {error}): for a 0-d x (x = 2.0) the derivatives, and a "
        "Hessian built from them, are 0-d too, so h[i] or h[i, i] does not exist.",
        "Avoid indexing entries: with grad_outputs=torch.ones_like(...) both grad calls return tensors shaped like x, "
        "0-d included (or reshape to 1-D with x.reshape(-1) and the result back to x.shape).",
    ),
    "vjp_ones_as_grad_outputs": Message(
        "your result is vᵀJ with v = all ones: torch.ones_like(...) was passed as grad_outputs instead of v.",
        "Pass the given v instead: grad_outputs=v.",
    ),
    "vjp_wrong_sign": Message(
        "your result has the wrong sign: it is -vᵀJ.",
        "Return the gradient as torch.autograd.grad gives it, without a minus sign.",
    ),
    "vjp_wrong": Message(
        "your result is wrong: it is not vᵀJ.",
        "Pass v as grad_outputs= to torch.autograd.grad; it returns vᵀJ = sum_i v[i] * d f(x)[i] / dx.",
    ),
    "vjp_changed_x_grad": Message(
        "your function changed x.grad, which belongs to the caller.",
        ".backward() adds into x.grad; torch.autograd.grad(...) returns the gradient instead and leaves "
        "x.grad alone.",
    ),
    # --- notebook 1, exercise "accumulate": mean_gradient_over_batches(loss_fn, w, batches) -------
    "accumulate_grad_none_on_entry": Message(
        "your code used w.grad while it was None ({error_type}: {error}).",
        "w.grad is None until the first backward (and may be None on entry). Reset it with `w.grad = None` "
        "instead of `w.grad.zero_()`, or guard with `if w.grad is not None:`.",
    ),
    "accumulate_backward_twice": Message(
        "a batch loss was backpropagated twice ({error_type}: {error}).",
        "Each loss can be backpropagated once: compute a fresh loss_fn(w, batch) for every backward.",
    ),
    "accumulate_loss_not_connected": Message(
        "the loss has no graph back to w ({error_type}: {error}).",
        "Do not detach w or compute the loss under torch.no_grad().",
    ),
    "accumulate_backward_on_non_scalar": Message(
        "backward was called on a tensor that is not a scalar ({error_type}: {error}).",
        "Call .backward() on the 0-d loss returned by loss_fn, not on a stacked tensor of losses.",
    ),
    "accumulate_inplace_on_w": Message(
        "your code changed w in place ({error_type}: {error}).",
        "Do not change w: this function only computes a gradient, it takes no optimizer step.",
    ),
    "accumulate_wrong_shape": Message(
        "your result has shape {received_shape}, but a gradient with respect to w has w's shape {expected_shape}.",
        "Return the gradient with respect to w (same shape as w), averaged over the batches.",
    ),
    "accumulate_sum_not_mean": Message(
        "your result is the SUM of the batch gradients, not their mean.",
        "The task asks for the mean: divide by len(batches) (each loss before its backward, or the accumulated "
        "gradient once at the end).",
    ),
    "accumulate_divided_twice": Message(
        "your result is the mean divided by len(batches) once more.",
        "Divide either each loss or the accumulated gradient by len(batches), not both.",
    ),
    "accumulate_reset_in_loop": Message(
        "your result is the gradient of the LAST batch only ({formula}): w.grad was reset inside the loop.",
        "Reset w.grad once, before the loop, and let the backward calls add up.",
    ),
    "accumulate_stale_grad_kept": Message(
        "the stale values w.grad held on entry ended up in your result.",
        "backward ADDS to w.grad, so start with `w.grad = None` (or `w.grad.zero_()` when it is not None).",
    ),
    "accumulate_wrong": Message(
        "your result is wrong: it is not the mean of the batch gradients.",
        "Accumulate with one loss_fn(w, batch).backward() per batch, then average: the result is "
        "sum / len(batches).",
    ),
    "accumulate_no_backward": Message(
        "the loss of batch {batch} was never backpropagated: the values are right, but not computed by "
        "backward calls on the batch losses.",
        "Call .backward() on each batch's loss so that the gradients accumulate in w.grad.",
    ),
    "accumulate_one_backward_for_all": Message(
        "your function kept several batch graphs alive at once: the loss of batch {batch} was computed "
        "before the loss of batch {previous} was backpropagated.",
        "Call .backward() inside the loop, once per batch, so only one batch's graph exists at a time (that is "
        "the point of gradient accumulation); do not sum all losses first.",
    ),
    "accumulate_returns_alias": Message(
        "your function returned w.grad itself (or a view of it): w.grad.zero_() after the call also changed "
        "your result.",
        "w.grad is reused and zeroed by the next step; return a copy: `return w.grad.clone()` (or compute a "
        "new tensor, e.g. `w.grad / len(batches)`).",
    ),
    # --- notebook 1, exercise "secondderiv": second_derivative(f, x) ------------------------------
    "second_forgot_create_graph": Message(
        "the first derivative cannot be differentiated again: it was computed without create_graph=True "
        "({error_type}: {error}).",
        "The first derivative is a plain tensor (and the first grad call frees the graph) unless you ask "
        "autograd to record how it was computed: pass create_graph=True to the FIRST torch.autograd.grad call.",
    ),
    "second_wrong_input": Message(
        "the second differentiation is with respect to `{input}`, which the first derivative does not depend on "
        "({error_type}: {error}).",
        "Ignore PyTorch's advice to set allow_unused=True: it would only return None. The first derivative g is a "
        "function of `{x}` (not of f's output): differentiate g with respect to `{x}`, "
        "torch.autograd.grad(g, {x}, grad_outputs=torch.ones_like(g)).",
    ),
    "second_forgot_create_graph_and_wrong_input": Message(
        "two things: the first derivative was computed without create_graph=True, and the line above "
        "differentiates it with respect to `{input}`, not `{x}` ({error_type}: {error}).",
        "Pass create_graph=True to the FIRST torch.autograd.grad call (so that its result can be differentiated), "
        "and differentiate that result g with respect to `{x}` itself: torch.autograd.grad(g, {x}, "
        "grad_outputs=torch.ones_like(g)).",
    ),
    "second_forgot_grad_outputs": Message(
        "a derivative of a tensor that is not a scalar was asked for without grad_outputs "
        "({error_type}: {error}).",
        "f(x) and f'(x) are tensors, not scalars: pass grad_outputs=torch.ones_like(...) to BOTH grad calls "
        "(this gives elementwise derivatives because f is elementwise).",
    ),
    "second_grad_outputs_wrong_shape": Message(
        "grad_outputs does not have the shape of the tensor being differentiated ({error_type}: {error}).",
        "grad_outputs must have the shape of the tensor you differentiate (use torch.ones_like of it).",
    ),
    "second_wrong_shape": Message(
        "your result has shape {received_shape}, but f''(x) has one entry per entry of x: shape {expected_shape}.",
        "Return one second derivative per entry of x (same shape as x): use grad_outputs=torch.ones_like(...) "
        "rather than summing the result.",
    ),
    "second_returned_first_derivative": Message(
        "your result is the FIRST derivative f'(x), not f''(x).",
        "Differentiate it once more (the first grad call needs create_graph=True so that its result can be "
        "differentiated).",
    ),
    "second_off_by_factor_two": Message(
        "your result is off by a factor of {factor}.",
        "Check the grad_outputs you pass: they should be ones (torch.ones_like(...)).",
    ),
    "second_wrong": Message(
        "your result is wrong: it is not f''(x).",
        "Take g = d f / dx with create_graph=True and grad_outputs=ones, then differentiate g again with "
        "grad_outputs=ones.",
    ),
    "second_changed_x_grad": Message(
        "your function changed x.grad, which belongs to the caller.",
        ".backward() writes into x.grad (and with create_graph=True it also warns about a reference cycle). "
        "Use torch.autograd.grad for both derivatives: it returns them and leaves x.grad alone.",
    ),
    # --- notebook 1 and fallbacks -------------------------------------------------------------
    "grader_error": Message(
        "the grader could not finish this check ({error_type}: {error}).",
        "This is unexpected: re-run the notebook from the top; if it persists, tell your instructor.",
    ),
}

# Notices about a whole notebook or a check that could not run (the title is the whole sentence).
EN.update({
    "not_found": Message("✗ could not check `{entry}`: {error}",
                         "Run the cell that defines it, and keep the names the exercise asks for."),
    "unreadable_observations": Message(
        "✗ the observations of `{entry}` could not be read ({error}); the check fails",
        "Do not write into the grader's results; re-run your notebook from the top."),
    "not_graded_grader_error": Message(
        "not graded: grader error ({reason}); this is not a verdict on your code",
        "Nothing to change in your notebook: your instructor sees this error in the grading log and will grade the "
        "notebook again once the grader is fixed."),
    "not_reported": Message("the notebook's process did not report this check (was it tampered with?)",
                            "Re-run your notebook from the top; do not change the grader from your cells."),
    "not_reached": Message("not reached", "An earlier cell stopped the notebook."),
    # issue 29, item 5: one rule in the student's kernel and in grading (grader.spec.playground, kernel_rule)
    "playground_cell": Message("playground cell: no answer or check uses what it defines, so grading did not run it "
                               "(it scores nothing and costs nothing); the outputs below are the ones you saved.",
                               "To have a cell graded, define in it something an answer uses."),
    "demo_cell": Message("demonstration: the score does not depend on it, so grading did not run it; the outputs "
                         "below are the ones you saved.", "Run it in your own notebook to see it work with your answers."),
    "kernel_refused_cell": Message("autograding would refuse line {line} of this cell: {what}. It costs points only "
                                   "if an answer uses what this cell defines; here it runs as usual.",
                                   "Rewrite that line in plain torch, numpy or math, or keep this cell for "
                                   "exploring only."),
    "self_check_refused_cell": Message("{what} (in your cell `{cell}`, which the code under test uses: autograding runs "
                                       "that cell under the course's policy, refuses it, and your answer then fails)",
                                       "Rewrite that line in plain torch, numpy or math."),
    "flagged_check": Message("not scored: before this check the notebook used {what}, which no answer needs and "
                             "which can forge what the grader observes. Your instructor sees this flag and can review "
                             "it.", "Remove that code, then re-run the notebook from the top."),
    "not_checked": Message("not checked: {reason}", "Fix what stopped the notebook, then re-run it from the top."),
    "stopped": Message("the notebook was stopped: {reason}", "Checks after that point score 0."),
    "stopped_while": Message("the notebook was stopped: {reason} while running cell {cell}", "Checks after that point score 0."),
    "reason_timeout": Message("it did not finish within {seconds:g} s (an endless loop?)", ""),
    "reason_output": Message("it printed more than {limit:,} bytes", ""),
    "reason_memory": Message("it used more than {gib:g} GiB of memory", ""),
    "reason_worker": Message("the grading worker running it died or stopped answering (killed by the notebook?)", ""),
    "reason_channel": Message("it broke the grader's channel (a report of the grader's could not be sent: its "
                              "descriptor was closed, replaced or made unusable)", ""),
    "reason_exit": Message("its process ended with exit code {code}", ""),
    "reason_early": Message("its process ended early", ""),
})

# For the instructor (and, for an unreadable submission, its student): a submission nbgrader cannot read, a
# grading environment that cannot start, flagged submissions. The title is the whole sentence.
EN.update({
    "unreadable_submission": Message(
        "this submission could not be read as a notebook: {file}: {why}; ask the student to re-submit",
        "Download the notebook again from Jupyter (File > Download .ipynb) and hand it in again."),
    "foreign_submission": Message(
        "this submission is not a notebook of this course: {file}: {why}; ask the student to hand in the released "
        "notebook",
        "Hand in the notebook of this assignment that you filled in, under its released name."),
    "unreadable_notice": Message(
        "This submission could not be graded: {reason}. Every test cell of this notebook scores 0.",
        "Download the notebook again from Jupyter (File > Download .ipynb) and hand it in again."),
    "setup_failed": Message(
        "grading cannot start: {cause}. This is a problem of the grading machine, not of any student; "
        "nothing was recorded.",
        "Fix it (`make install`; check that `bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all -- true` "
        "works), then run autograde again."),
    "setup_failed_midway": Message(
        "grading stopped while grading {current}: {cause}. This is a problem of the grading machine, not of any "
        "student; the students finished before are graded, {current} and the ones after it are not.",
        "Fix it (`make install`; check that bubblewrap works), then run autograde again: it grades the rest."),
    "setup_failed_cluster": Message(  # the same, when a Dask cluster grades (c.TrustedExecute.scheduler)
        "grading cannot start: {cause}. This is a problem of the grading machines, not of any student; "
        "nothing was recorded.",
        "Fix the Dask scheduler or workers named (docs/cluster.md, section 'Grading on many machines'), then run "
        "autograde again."),
    "setup_failed_midway_cluster": Message(
        "grading stopped while grading {current}: {cause}. This is a problem of the grading machines, not of any "
        "student; the students finished before are graded, {current} and the ones after it are not.",
        "Fix the Dask scheduler or workers named (docs/cluster.md, section 'Grading on many machines'), then run "
        "autograde again: it grades the rest."),
    "flagged_notebook": Message(
        "{name} flagged for review: {what}",
        "Open that cell in the autograded notebook and decide; the grader only reports what the code attempted."),
    "flagged_summary": Message(
        "{count} submission(s) flagged for review: see {path}",
        "Each row names the student, the notebook, the cell and what its code attempted."),
    "no_flags": Message(
        "No submission was flagged for review: no cell tried to tamper with the grader.",
        "Nothing to review."),
})

# The trusted judge received less (or more) than it needs: never scored.
EN.update({
    "incomplete_observations": Message(
        "the grader received {n_received} {what} for {n_expected} {per}: incomplete observations are never scored.",
        "This is not about your answer: re-run your notebook from the top without changing the grader; "
        "if this message stays, tell your instructor.",
    ),
    "judge_budget": Message(
        "not judged: judging this notebook took longer than {seconds:g} s, so the remaining checks fail",
        "This is not about your answer's values: make your notebook's cells small and fast (no huge generated "
        "code or data), then re-run it; if this stays, tell your instructor.",
    ),
    "raised_error_no_line": Message(
        "your code raised {error_type} while {stage}: {error}",
        "Find where your code does this in the answer cell `{exercise}`, fix it and re-run that cell before "
        "this check.",
    ),
    "derivatives_right_not_through_function": Message(
        "your gradient is right, but it is not computed by your {classes}.",
        "The exercise is to delegate the gradient to the second Function: Cube.backward must return "
        "CubeBackward.apply(grad_out, x), so that the gradient has a backward of its own.",
    ),
    "not_found_cell_raised": Message(
        "✗ could not check `{entry}`: the cell defining `{name}` raised {error}{at}: fix that error first",
        "Fix that cell, run it again, then run this check."),
    "not_found_earlier_cell_raised": Message(
        "✗ could not check `{entry}`: `{name}` is not defined, and an earlier cell raised {error}{at}: "
        "fix that error first",
        "Fix that cell, run the notebook from the top, then run this check."),
    "gradient_dtype_upcast": Message(
        "the gradient for `{name}` is {received_dtype} but `{name}` is {expected_dtype}: your backward works in "
        "another dtype than its inputs (autograd converts the result back silently).",
        "Compute backward in the dtype of the saved tensors and grad_output: no `.double()` / `.float()`, and no "
        "tensors created with a fixed dtype; use `torch.ones_like(x)` or plain Python numbers.",
    ),
    "float32_precision": Message(
        "the result for `{name}` is right only to float32 precision (about 7 digits): backward computes in "
        "float32 somewhere and converts back.",
        "Keep every step in the dtype of the inputs: no `.float()`, `torch.float32` tensors or NumPy float32 "
        "arrays inside backward.",
    ),
    "observation_missing": Message(
        "the grader received no observation of {key}: incomplete observations are never scored.",
        "This is not about your answer: re-run your notebook from the top without changing the grader; "
        "if this message stays, tell your instructor.",
    ),
})


# --- notebook 4: today's custom-Function API (setup_context, torch.func, forward mode, markers) -------
EN.update({
    "wrong_outputs": Message(
        "{name} returned a {type}, not {n_expected} tensors ({outputs}).",
        "Return every output from forward as a tuple, in this order: `return {outputs}`.",
    ),
    "output_wrong": Message(
        "the output `{output}` is wrong.",
        "Compute `{output}` as the docstring says and compare with the numbers above on this small probe.",
    ),
    "output_wrong_dtype": Message(
        "the output `{output}` has dtype {received_dtype}, expected {expected_dtype}.",
        "Convert it to the input's dtype before returning it (e.g. `{output}.to(x.dtype)`).",
    ),
    "output_not_marked_non_differentiable": Message(
        "the output `{output}` requires grad: autograd treats it as differentiable, so a loss that uses it sends "
        "a gradient your backward ignores.",
        "Call `ctx.mark_non_differentiable({output})` (in setup_context, or in forward); PyTorch marks integer outputs "
        "for you, floating-point ones only when you say so.",
    ),
    "first_output_marked_non_differentiable": Message(
        "the output `{output}` does not require grad although the other outputs of {cls} do: it is marked "
        "non-differentiable, so no gradient can reach the input.",
        "Mark only the outputs that are not differentiable (here the indices): `ctx.mark_non_differentiable(indices)`, "
        "never `{output}`.",
    ),
    "sort_gather_not_scatter": Message(
        "backward applies the sort permutation the wrong way round: it gathers grad_values with the indices, "
        "where each gradient must go back to the position its value came from.",
        "values[..., j] = x[..., indices[..., j]], so grad_x[..., indices[..., j]] = grad_values[..., j]: scatter it, "
        "`torch.zeros_like(grad_values).scatter(-1, indices, grad_values)` (or gather with the inverse permutation, "
        "`indices.argsort(dim=-1)`).",
    ),
    "sort_scatter_wrong_dim": Message(
        "backward sends the gradient back along dimension {dim}, but forward sorts along the last dimension: "
        "the sort's indices are positions in the last dimension ({error}).",
        "Scatter along the dimension you sorted: `torch.zeros_like(grad_values).scatter(-1, indices, grad_values)` "
        "(dim=-1, the same as in torch.sort(x, dim=-1)).",
    ),
    "index_not_integer": Message(
        "{op}() needs an int64 index, and your backward gives it a floating-point tensor ({error}).",
        "Save the permutation as integers for backward (`ctx.save_for_backward(indices.long())`, or torch.sort's own "
        "int64 indices) and return the floating-point copy only as the output.",
    ),
    "forward_overflow": Message(
        "forward overflows: it returns {value} at x = {x}, where PyTorch's result is finite.",
        "Rewrite the formula so that no intermediate overflows: eˣ is inf above x ≈ 709 in float64 (88 in float32). "
        "For log(1 + eˣ) use max(x, 0) + log1p(e^(−|x|)).",
    ),
    "gradient_overflow": Message(
        "the gradient for `{name}` overflows: it is {value} at x = {x}, where PyTorch's is finite.",
        "Compute the derivative with a formula that stays finite (for softplus: torch.sigmoid(x), not eˣ / (1 + eˣ)).",
    ),
    "once_differentiable": Message(
        "the second derivative is missing: backward is decorated with @once_differentiable, so the gradient it returns "
        "under create_graph=True has no graph (no error is raised: torch.autograd.grad just cannot differentiate it).",
        "Remove @once_differentiable: this Function must be differentiable twice, and its backward is already made of "
        "differentiable PyTorch ops.",
    ),
    "forward_takes_ctx": Message(
        "{cls} is written in the classic style (forward takes ctx), not in the setup_context style.",
        "Write `forward(x)` without ctx and a separate `setup_context(ctx, inputs, output)` that saves what backward "
        "and jvp need; torch.func (vmap, grad, jvp) requires this style.",
    ),
    "needs_setup_context": Message(
        "torch.func cannot transform {cls}: forward takes ctx and there is no setup_context ({error}).",
        "Move everything done with ctx out of forward into `setup_context(ctx, inputs, output)`, and define "
        "`forward(x)` without ctx.",
    ),
    "no_vmap_rule": Message(
        "torch.func.vmap cannot batch {cls}: it has no vmap rule.",
        "Set `generate_vmap_rule = True` on the class (its forward, setup_context, backward and jvp must then be "
        "written with PyTorch ops only), or write a `vmap(info, in_dims, x)` staticmethod.",
    ),
    "not_vmap_compatible": Message(
        "torch.func.vmap could not run {cls}: {error}",
        "With generate_vmap_rule = True, forward and backward run on batched tensors: no .item(), no Python `if` on "
        "tensor values, no NumPy; use torch.where and other tensor ops instead.",
    ),
    "jvp_not_implemented": Message(
        "{cls} has no jvp, so forward-mode AD (torch.func.jvp, dual tensors) cannot go through it.",
        "Add `@staticmethod def jvp(ctx, x_t)` returning the output's tangent: dy = f'(x) · x_t.",
    ),
    "jvp_not_saved_for_forward": Message(
        "jvp finds nothing in ctx.saved_tensors: tensors saved with save_for_backward are for backward only.",
        "In setup_context, also call `ctx.save_for_forward(x)` for what jvp reads.",
    ),
    "jvp_no_tangent": Message(
        "the output of {cls} has no tangent when its input is a {how}: forward mode did not go through your jvp.",
        "Call the Function through `.apply`, and make jvp return the tangent of the output.",
    ),
    "jvp_wrong_shape": Message(
        "jvp (through {how}) returns shape {received_shape}, expected the output's shape {expected_shape}.",
        "jvp returns one tangent per output, shaped like that output: f'(x) * x_t elementwise.",
    ),
    "jvp_ignores_tangent": Message(
        "jvp ignores the tangent x_t (through {how}): it returns the derivative alone.",
        "Forward mode pushes a direction through: return f'(x) * x_t, not f'(x).",
    ),
    "jvp_wrong": Message(
        "jvp (through {how}) does not give PyTorch's forward-mode derivative.",
        "Re-derive d({formula})/dx: jvp must return f'(x) * x_t, with f' the same derivative backward uses.",
    ),
    "jvp_overflow": Message(
        "jvp overflows: it returns {value} at x = {x}, where PyTorch's tangent is finite.",
        "Use a derivative formula that stays finite for large |x| (for softplus, torch.sigmoid(x)).",
    ),
    "vmap_wrong_shape": Message(
        "torch.func.vmap over {cls} returns shape {received_shape}, expected {expected_shape}.",
        "A vmap rule returns (output, out_dims): the batch dimension must be where out_dims says (usually 0).",
    ),
    "vmap_wrong": Message(
        "torch.func.vmap over {cls} differs from running it on one sample at a time.",
        "Check your vmap rule: move the batch dimension (in_dims) to the front and return out_dims = 0; or use "
        "generate_vmap_rule = True.",
    ),
    "vmap_grad_wrong": Message(
        "per-sample gradients, torch.func.vmap(torch.func.grad(...)) over {cls}, differ from PyTorch's.",
        "torch.func.grad runs your backward on batched tensors: it must use only PyTorch ops on what setup_context "
        "saved (check the first-derivative check first).",
    ),
})

# --- notebook 4 (grader/judge/second_order.py): Hessian-vector products and the gradient penalty ---------------
EN.update({
    "hvp_needs_function": Message(
        "{function} could not be checked on {probe_function}: the notebook does not define {names}.",
        "Run the cell that defines {names} (your answer above) before this check; the grader builds some of its "
        "functions from your own Functions.",
    ),
    "hvp_changed_x": Message(
        "{function} changed x: it must leave the caller's tensor as it was (no requires_grad_, no .grad).",
        "Work on your own copy: `x = x.detach().requires_grad_()` at the start, and use torch.autograd.grad, "
        "not .backward().",
    ),
    "hvp_wrong_shape": Message(
        "{function} returns shape {received_shape}, expected x's shape {expected_shape}.",
        "H v has the shape of x: differentiate the gradient g (shape of x) with grad_outputs=v.",
    ),
    "hvp_returns_gradient": Message(
        "{function} returns the gradient ∇f(x), not the Hessian-vector product H v.",
        "Differentiate once more: g = grad(f(x), x, create_graph=True); then H v = grad(g, x, grad_outputs=v).",
    ),
    "hvp_ones_not_v": Message(
        "{function} returns H · 1 (the Hessian times a vector of ones), not H v.",
        "Pass v as grad_outputs to the second differentiation (not torch.ones_like, and not g.sum()).",
    ),
    "hvp_diagonal_only": Message(
        "{function} returns diag(H) * v: only the Hessian's diagonal, as if f were elementwise.",
        "H v mixes coordinates: differentiate g against v in one call, grad(g, x, grad_outputs=v), instead of "
        "working element by element.",
    ),
    "hvp_wrong": Message(
        "{function} does not return PyTorch's Hessian-vector product.",
        "Compute g = grad(f(x), x, create_graph=True), then grad(g, x, grad_outputs=v); compare with the numbers "
        "above.",
    ),
    "hvp_forms_hessian": Message(
        "{function} builds the whole Hessian (torch.func.hessian / jacobian) and multiplies it by v.",
        "An HVP never forms H (n² numbers): it costs about two gradients. Use double backward, or jvp over grad.",
    ),
    "hvp_not_double_backward": Message(
        "{function} uses forward mode; this part asks for double backward.",
        "Use torch.autograd.grad twice (create_graph=True on the first); forward-over-reverse is the next part, "
        "hvp_forward.",
    ),
    "hvp_not_forward_mode": Message(
        "{function} never pushes a forward-mode tangent through f: it is not forward-over-reverse.",
        "Use torch.func.jvp(torch.func.grad(f), (x,), (v,)) (or forward_ad dual tensors through autograd.grad).",
    ),
    "hvp_x_not_tracked": Message(
        "{function} differentiates with respect to an x that does not require grad ({error_type}: {error}).",
        "x arrives without requires_grad: start with `x = x.detach().requires_grad_()`.",
    ),
    "hvp_torch_func_through_classic_function": Message(
        "{function} uses torch.func, which cannot go through {names}: {names} is written in the classic style "
        "(forward takes ctx), as notebook 3 teaches, and is right as it is ({error_type}: {error}).",
        "hvp must work for any f, also one built from classic-style Functions: compute it with torch.autograd.grad "
        "twice (create_graph=True on the first), which goes through every Function. torch.func belongs in "
        "hvp_forward, whose f is built from setup_context-style Functions only.",
    ),
    # A probe through one of the student's own Functions that is not fit for it (PyTorch's own recipe through it
    # fails) is not charged to hvp / gradient_penalty: the check's summary says so, naming the cell that is wrong.
    "own_function_excused": Message(
        "not counted: the probes through your {names}, which is not right yet ({why}); {names}'s own checks (the "
        "test cells of the answer cell {cells}) count that, and your function was judged on the other probes",
        "Fix {names} in the answer cell {cells}; these probes then count here again.",
    ),
    "hvp_no_create_graph": Message(
        "the gradient cannot be differentiated again ({error_type}: {error}).",
        "Pass create_graph=True to the first torch.autograd.grad so that autograd records the gradient's own graph.",
    ),
    "penalty_changed_w_grad": Message(
        "{function} changed w.grad: it must return the penalty, not call .backward().",
        "Use torch.autograd.grad(..., create_graph=True) for the gradient with respect to x; leave w.grad alone.",
    ),
    "penalty_changed_x": Message(
        "{function} changed the caller's x (its requires_grad flag or its .grad): x must be left as it came.",
        "Differentiate with respect to a leaf of your own: `x = x.detach().requires_grad_()` at the start, never "
        "`x.requires_grad_(True)` on the tensor you were given.",
    ),
    "penalty_norm_over_dim_1": Message(
        "{function} takes the norm over dimension 1 only: for image-shaped samples [B, C, H, W] that is one norm per "
        "sample AND per pixel, not one norm per sample.",
        "Flatten each sample's gradient first: g.flatten(1).norm(dim=1) (or g.norm(2, dim=tuple(range(1, g.dim())))).",
    ),
    "penalty_wrong_shape": Message(
        "{function} returns shape {received_shape}, expected a 0-d tensor (one number for the batch).",
        "Average the per-sample penalties over the batch: ((norms - 1) ** 2).mean().",
    ),
    "penalty_norm_over_batch": Message(
        "{function} takes one norm over the whole batch's gradient, not one norm per sample.",
        "Flatten each sample's gradient and take its norm: g.flatten(1).norm(dim=1), then ((norms - 1) ** 2).mean().",
    ),
    "penalty_squared_norm": Message(
        "{function} uses the squared norm ‖g‖², not the norm ‖g‖.",
        "Take the norm itself: g.flatten(1).norm(dim=1) (the square root of the sum of squares).",
    ),
    "penalty_sum_not_mean": Message(
        "{function} sums the per-sample penalties instead of averaging them.",
        "Use .mean() over the batch, so that the penalty does not grow with the batch size.",
    ),
    "penalty_missing_minus_one": Message(
        "{function} penalises ‖g‖² rather than (‖g‖ − 1)²: the target norm 1 is missing.",
        "WGAN-GP pushes each sample's gradient norm towards 1: ((norms - 1) ** 2).mean().",
    ),
    "penalty_wrong": Message(
        "{function} does not return the gradient penalty mean((‖∂f/∂xᵢ‖ − 1)²).",
        "Gradient of f(w, x).sum() with respect to x (one row per sample), per-sample norms, then "
        "((norms - 1) ** 2).mean(); compare with the numbers above.",
    ),
    "penalty_no_create_graph": Message(
        "the penalty cannot be differentiated with respect to w: its gradient was computed without a graph.",
        "Pass create_graph=True to torch.autograd.grad when you take the gradient with respect to x: the penalty "
        "is then a function of w that training can differentiate (double backward).",
    ),
    "penalty_gradient_wrong": Message(
        "the penalty's gradient with respect to w differs from PyTorch's.",
        "Keep every step in PyTorch ops with create_graph=True (no .detach(), no .item()), so that autograd can "
        "differentiate the penalty.",
    ),
    "penalty_x_not_tracked": Message(
        "{function} differentiates with respect to an x that does not require grad ({error_type}: {error}).",
        "x arrives without requires_grad: start with `x = x.detach().requires_grad_()`.",
    ),
})

# --- pieces of the sentences above and the lines around them: labels, success lines, phrases filled into fields ---
# (one sentence a student reads may be built from several; each piece is here so that it can be said in Chinese).
# Pieces have no hint, and need not start like a sentence.
PIECES: dict[str, Message] = {
    # a failed check's diagnosis (grader.spec.findings.Finding.render): the labels of its lines, its section note
    "label_code": Message("in your code:", ""),
    "label_where": Message("where:", ""),
    "label_probe": Message("probe:", ""),
    "label_expected": Message("expected:", ""),
    "label_received": Message("received:", ""),
    "label_hint": Message("hint:", ""),
    "hint_and_section": Message("{hint} (See section {section}.)", ""),
    "section_here": Message('"{heading}"', ""),
    "section_in_notebook": Message('"{heading}" in {notebook}', ""),
    # grading a test cell (grader.judge.runner)
    "hidden_check_label": Message("[hidden check, other inputs]", ""),
    "same_as_above": Message("{headline} (same as above)", ""),
    "two_sentences": Message("{first} {second}", ""),
    "verdict_line": Message("{label}: {text}", ""),
    # the feedback page's frame (grader/classroom/templates/feedback, through grader.classroom.feedback_words)
    "feedback_score": Message("Score: {value}", ""),
    "feedback_checks": Message("Checks: {value}", ""),
    "feedback_coding": Message("Coding free-response", ""),
    "feedback_written": Message("Written response", ""),
    "feedback_task": Message("Task", ""),
    "feedback_task_cell": Message("Task:", ""),
    "feedback_comment": Message("Comment", ""),
    "feedback_comments": Message("Comments:", ""),
    "feedback_late": Message("Points off for lateness", ""),
    "feedback_top": Message("(Top)", ""),
    "feedback_grade_cell": Message("Grade cell:", ""),
    # `grader grade`'s table (grader.classroom.cli.render_text)
    "cli_tests_from": Message("tests: {tests}", ""),
    "cli_exercise": Message("exercise", ""),
    "cli_score": Message("score", ""),
    "cli_checks": Message("checks", ""),
    "cli_total": Message("total", ""),
    "cli_stopped": Message("{problem}; checks after that point score 0.", ""),
    "cli_restored": Message("the notebook replaced {names}; the grader put them back before checking.", ""),
    "cli_what_to_fix": Message("What to fix:", ""),
    "cli_same_reason": Message("same reason as above", ""),
    "cli_fix_line": Message("- {grade_id} ({points} pt): {shown}", ""),  # "square · forward: ..." (a Chinese line takes a full-width colon)
    # the custom-Function checks as a verdict line names them ("✓ square · forward: ..."; findings.check_name)
    "check_name_forward": Message("forward", ""),
    "check_name_first_derivatives": Message("first derivatives", ""),
    "check_name_second_derivatives": Message("second derivatives", ""),
    "check_name_structure": Message("structure", ""),
    "check_name_forward_mode": Message("forward mode", ""),
    "check_name_vmap": Message("vmap", ""),
    # the verdict on a Function pasted into section 0 (notebooks 4 and 5; checks.pasted_verdict)
    "pasted_not_right": Message("not right yet: its self-checks in notebook {notebooks} say why", ""),

    "at_line": Message("at line {line}", ""),
    # the student's line that raised (a finding's "in your code:" line), as the sandbox found it
    "code_in_function": Message("{name}, line {line}: {code}", ""),
    "line_in_function": Message("{name}, line {line}", ""),
    "code_at_line": Message("line {line}: {code}", ""),
    "at_line_only": Message("line {line}", ""),
    # a passed check's ✓ line: "✓ square · forward: {summary} on 4 probes"
    "passed_probes": Message("{summary} on {count} probes", ""),
    "passed_one_probe": Message("{summary} on {count} probe", ""),
    "summary_forward": Message("{formula} matches PyTorch", ""),
    "summary_first_derivatives": Message("gradients match PyTorch's and gradcheck passes", ""),
    "summary_second_derivatives": Message("second derivatives match PyTorch's and gradgradcheck passes", ""),
    "summary_structure": Message("a real custom Function; tensors saved with save_for_backward", ""),
    "summary_forward_mode": Message("jvp matches PyTorch's through torch.func.jvp and dual tensors", ""),
    "summary_vmap": Message("vmap matches a loop over {batch} samples, and vmap(grad(...)) gives per-sample gradients",
                            ""),
    "summary_check_vjp": Message("vjp: matches vᵀJ on {n} probes", ""),
    "summary_check_vjp_keeps_grad": Message("vjp: x.grad left untouched and vᵀJ correct on {n} probes", ""),
    "summary_check_mean_gradient": Message("accumulate: mean gradient correct, one backward per batch, on {n} probes",
                                           ""),
    "summary_check_mean_gradient_stale": Message("accumulate: stale w.grad ignored on {n} probes", ""),
    "summary_check_mean_gradient_copy": Message("accumulate: returns its own copy, not w.grad, on {n} probes", ""),
    "summary_check_second_derivative": Message("secondderiv: matches f''(x) on {n} probes", ""),
    "summary_check_second_derivative_general": Message(
        "secondderiv: any shape (0-d to 3-d) and x.grad untouched, on {n} probes", ""),
    "summary_check_hvp": Message("hvp: H v by double backward matches PyTorch's Hessian on {n} probes", ""),
    "summary_check_hvp_forward_over_reverse": Message(
        "hvp_forward: H v by forward-over-reverse matches PyTorch's Hessian on {n} probes", ""),
    "summary_check_penalty_value": Message("gradient_penalty: value matches PyTorch's on {n} probes", ""),
    "summary_check_penalty_gradient": Message(
        "gradient_penalty: its gradient with respect to w matches PyTorch's (double backward) on {n} probes", ""),
    # what the student's code was doing when it raised: filled into raised_error's {stage}
    "stage_running_code": Message("running your code", ""),
    "stage_running_forward": Message("running forward", ""),
    "stage_calling_backward": Message("calling {cls}.backward", ""),
    "stage_running_gradcheck": Message("running gradcheck", ""),
    "stage_running_gradgradcheck": Message("running gradgradcheck", ""),
    "stage_running_backward": Message("running your backward", ""),
    "stage_backward_create_graph": Message("running your backward with create_graph=True", ""),
    "stage_double_backward": Message("differentiating your backward (double backward)", ""),
    "stage_some_inputs_require_grad": Message("running backward when only some inputs require grad", ""),
    "stage_func_jvp": Message("running torch.func.jvp over your Function", ""),
    "stage_dual_tensors": Message("running your Function on forward_ad dual tensors", ""),
    "stage_vmap": Message("running torch.func.vmap over your Function", ""),
    "stage_one_sample_at_a_time": Message("running your Function on one sample at a time", ""),
    "stage_vmap_grad": Message("running torch.func.vmap(torch.func.grad(...)) over your Function", ""),
    "stage_running_function": Message("running {signature}", ""),
    "gradient_not_a_tensor": Message("the gradient for `{name}` is a {type}, not a tensor", ""),
    # where a value differs (a finding's "where:" line)
    "where_at": Message("{what} at {where}", ""),
    "where_gradient": Message("gradient for `{name}`", ""),
    "where_second_derivative": Message("d(your gradient)/d{name}", ""),
    "where_jvp": Message("jvp through {how}", ""),
    "a_dual_tensor": Message("a dual tensor", ""),
    "where_vmap_result": Message("vmap's result", ""),
    "where_per_sample_gradient": Message("per-sample gradient", ""),
    "where_a_vmap_sample": Message("one of the samples vmap maps over", ""),
    "scalar": Message("(scalar)", ""),
    "a_large_value": Message("a large value", ""),
    "your_function": Message("your function", ""),
    "pytorch_own_op": Message("{found} (an op of PyTorch's own)", ""),
    "tensor_subclass_kind": Message("{name} (a torch.Tensor subclass)", ""),
    "input_number": Message("input {index}", ""),
    # expected / received, in words
    "shape_value": Message("shape {shape}", ""),
    "shape_transpose_right": Message("shape {shape}, its transpose is right", ""),
    "a_tensor_of_shape": Message("a tensor of shape {shape}", ""),
    "a_torch_tensor_of_shape": Message("a torch.Tensor of shape {shape}", ""),
    "a_plain_tensor_of_shape": Message("a plain torch.Tensor of shape {shape}", ""),
    "a_kind": Message("a {kind}", ""),
    "a_kind_of": Message("a {kind} ({items})", ""),
    "a_float64_tensor": Message("a float64 tensor", ""),
    "a_dtype_tensor": Message("a {dtype} tensor", ""),
    "a_tensor": Message("a tensor", ""),
    "a_gradient": Message("a gradient", ""),
    "changed_by_your_function": Message("changed by your function", ""),
    "after_zeroing_w_grad": Message("{where} after w.grad.zero_()", ""),
    # a probe, as the "probe:" line describes it
    "probe_seed": Message("{parts} ({dtype}, seed {seed})", ""),
    # --- the course's policy for graded cells (grader.sandboxed.policy_words): a refusal, and what to write instead
    "policy_refused": Message("{what} is not available in graded code{why}", ""),
    "policy_why_internals": Message(" (Python's internals)", ""),
    "policy_why_frames": Message(" (frames and code objects)", ""),
    "policy_line": Message("line {line}: ", ""),
    "policy_and_more": Message(" (and {count} more)", ""),
    "policy_colon_instead": Message(": {instead}", ""),
    "policy_in_cell": Message(" (in the cell that defines {name}; autograding runs the cells you wrote under the "
                              "course's policy)", ""),
    "policy_what_import": Message("import {name}: the module {module}", ""),
    "policy_what_module": Message("the module {module}", ""),
    "policy_what_magic": Message("the %{name} magic", ""),
    "policy_what_underscore": Message("{name} (an underscore attribute of {kind})", ""),
    "policy_what_subclass": Message("a subclass of {name}", ""),
    "policy_what_is_allowed": Message(
        "graded cells may use torch, numpy, math and the modules the course teaches "
        "(docs/threat-model.md, section 'What graded code may use')", ""),
    "policy_graph_node_call": Message(
        "calling a graph node ({name}(...)) runs PyTorch's own derivative formula for that operation; in graded code "
        "a node is for looking at (name(), next_functions, _saved_self, metadata). The derivative your backward "
        "returns has to come from your own tensor operations (for x ** 2: 2 * x * grad_output).", ""),
    "policy_hook_while_checked": Message(
        "register_hook inside a Function's forward or backward, or inside another hook, is not available in graded "
        "code: a hook there would change what the checks read of your backward. Register hooks in your own cells, "
        "on your own tensors.", ""),
    "policy_instead_module": Message(
        "Instead: delete this line; an answer needs only torch, numpy, math and the modules the course teaches "
        "(files, processes and the interpreter's internals are not part of one).", ""),
    "policy_instead_class": Message("Instead, write: type(x) (and type(x).__name__ for its name).", ""),
    "policy_instead_dict": Message("Instead, write: vars(x), for your own objects and ctx.", ""),
    "policy_instead_eval": Message("Instead, write: the code itself, in the cell, not built from a string.", ""),
    "policy_instead_files": Message(
        "Instead, write: tensors or lists defined in the notebook; graded code reads and writes no files.", ""),
    "policy_instead_globals": Message(
        "Instead, write: the variable's name, or pass the value to your function as an argument.", ""),
    "policy_instead_magic": Message(
        "Instead: %time, %timeit, %%time and %matplotlib inline work; run anything else in a terminal.", ""),
    "policy_instead_compile": Message(
        "Instead: call your function as it is (eager mode); the checks call it directly.", ""),
    "policy_instead_ops": Message(
        "Instead, write: torch's and NumPy's public functions (torch.sin(x), x * y, x.sum(), np.reshape).", ""),
    "policy_instead_class_statement": Message("Instead, write: a class statement (class Name(Base): ...).", ""),
    "policy_instead_subclass": Message(
        "Instead, write: plain tensors and arrays, made by torch's and NumPy's functions; the checks read plain "
        "tensors only.", ""),
    "policy_instead_underscore": Message(
        "Instead, write: the public name (ctx.saved_tensors, y.grad_fn.next_functions, x.grad); underscore names are "
        "for your own objects and ctx.", ""),
    "policy_instead_name": Message("Instead, write: a helper named _x or x (names like _x_ and __x__ are Python's).", ""),
    "policy_instead_hook": Message(
        "Instead, write: tensor.register_hook(...) on your own tensors, in your own cells (not inside forward or "
        "backward); module and graph-node hooks are not part of an answer.", ""),
    "probe_call": Message("{signature} with {probe}", ""),
    "probe_without_bias": Message("called as apply(input, weight), without bias", ""),
    "probe_huge_values": Message("large values, |x| in [200, 1000]", ""),
    "probe_wide_values": Message("small and large values, |x| from 0.01 to 8", ""),
    "of_shape": Message("{name} of shape {shape}", ""),
    "probe_formula": Message("{formula}, {x}", ""),
    "probe_formula_with": Message("{formula} with {a}, {x}", ""),
    "probe_batches": Message("loss_fn(w, (X, y)) = {name}, {w}, {n_batches} batches", ""),
    "probe_zero_d": Message("f(x) = x ** 3, x = 2.0 (a 0-d tensor)", ""),
    "probe_rosenbrock": Message("f(x) = Rosenbrock's function, {x}", ""),
    "probe_softplus": Message("f(x) = sum(c * Softplus(B @ x)) with your Softplus, {b}", ""),
    "probe_own_function": Message("f(x) = sum(d * {name}(x)) with your {name} from notebook 3, {x}", ""),
    "probe_penalty_softplus": Message(
        "f(w, x) = Softplus(x @ W1ᵀ) @ w2 with your Softplus (w = W1 {w1} and w2 {w2} flattened into one vector), {x}",
        ""),
    "probe_penalty_images": Message(
        "f(w, x) = 2 * tanh(sum(w * x) over each sample's {sample}), {x} (images: [B, C, H, W])", ""),
    # incomplete observations: "the grader received 2 {what} for 3 {per}"
    "obs_gradients": Message("gradients", ""),
    "obs_inputs_requiring_grad": Message("inputs that require grad", ""),
    "obs_first_derivatives": Message("first derivatives", ""),
    "obs_entries_of": Message("entries of {key}", ""),
    "obs_second_derivatives": Message("second derivatives", ""),
    "obs_inputs_and_grad_output": Message("inputs and grad_output", ""),
    "obs_requires_grad_flags": Message("requires_grad flags", ""),
    "obs_backward_nodes": Message("backward nodes", ""),
    "obs_requires_grad_patterns": Message("requires-grad patterns", ""),
    "obs_probe": Message("probe", ""),
    "obs_backward_source": Message("backward's source", ""),
    "obs_once_differentiable": Message("whether backward is once_differentiable", ""),
    "obs_function_style": Message("the Function's style", ""),
    "obs_requires_grad_pattern": Message("the requires-grad pattern ({names})", ""),
    # a probe through the student's own Function, not counted (grader.judge.second_order)
    "unfit_not_implemented": Message("it still raises NotImplementedError", ""),
    "unfit_not_implemented_because": Message("it still raises NotImplementedError ({text})", ""),
    "unfit_wrong_result": Message("PyTorch's own recipe through it gives a wrong result", ""),
    "one_of_your_functions": Message("one of your Functions", ""),
    "title_then_hint": Message("{title}. {hint}", ""),
}
EN.update(PIECES)

def _translated(table: Mapping[str, tuple[str, str]]) -> dict[str, Message]:
    return {key: Message(title, hint) for key, (title, hint) in table.items()}


# Other languages come from the translation catalogues (i18n/<lang>/messages.po), compiled into spec modules by
# `python -m grader.classroom.translation compile`; a key a catalogue lacks is said in English.
TABLES: Mapping[str, Mapping[str, Message]] = {"en": EN, "zh": _translated(messages_zh.TABLE)}
LANGUAGE = "en"  # the language when nothing chose one (see ``current``)

# The language of the notebook whose feedback is being written, chosen by the notebook itself (its metadata
# ``autograd_course.language``, written by ``translation build``), never by the machine's locale. A context
# variable, not a global: the trusted side judges several notebooks at once, each in a thread of its own, and a
# value set in one thread (``using``) is that thread's alone.
_CHOSEN: ContextVar[str | None] = ContextVar("grader_language", default=None)


def normalize(language: object) -> str:
    """A language of ``TABLES`` ('zh' for 'zh', 'zh-CN', 'zh_Hans'...), else English: the value may come from a
    notebook's metadata, which the student can edit."""
    if not isinstance(language, str):
        return "en"
    code = language.strip().lower().replace("_", "-").split("-", 1)[0]
    return code if code in TABLES else "en"


def language_of(notebook: Any) -> str:
    """The language a notebook (an nbformat node or its JSON as a dict) asks its feedback in; English by default."""
    try:
        course = (notebook.get("metadata") or {}).get("autograd_course") or {}
        return normalize(course.get("language") if isinstance(course, Mapping) else None)
    except AttributeError:
        return "en"


_DECLARED: list[str] = []  # the language the running notebook declared in its set-up cell (``declare``)


def declare(language: object) -> str:
    """The notebook running in this kernel says its language (a translated notebook's set-up cell does, whatever
    front end runs it: JupyterLab, VS Code, Colab, nbconvert, nbclient, papermill, ``nbgrader validate``). Only
    $GRADER_LANGUAGE overrides it. Returns the language its self-checks now speak."""
    _DECLARED[:] = [normalize(language)]
    _process_default.cache_clear()
    return current()


@functools.lru_cache(maxsize=1)
def _process_default() -> str:
    """The language when no grading path chose one: $GRADER_LANGUAGE if set (an override); else the language the
    notebook declared (``declare``: its set-up cell); else, in a Jupyter kernel, the language of the notebook it
    runs (jupyter_server puts the notebook's path in $JPY_SESSION_NAME); else English. Read once: the student's
    self-checks ask for every sentence."""
    explicit = os.environ.get("GRADER_LANGUAGE", "").strip()
    if explicit:
        return normalize(explicit)
    if _DECLARED:
        return _DECLARED[0]
    if "ipykernel" not in sys.modules:  # (a program a kernel started is not the notebook)
        return LANGUAGE
    session = os.environ.get("JPY_SESSION_NAME", "").strip()
    if session:
        path = Path(session)
        if not path.is_absolute():  # (relative to the server's root: the kernel starts in the notebook's folder)
            path = Path.cwd() / path.name
        return _notebook_language(path) or LANGUAGE
    if os.environ.get("NBGRADER_VALIDATING"):  # nbgrader validate's kernel runs in the notebook's folder, unnamed:
        found = {_notebook_language(p) for p in sorted(Path.cwd().glob("*.ipynb"))[:50]}  # one release's notebooks
        return found.pop() or LANGUAGE if len(found) == 1 else LANGUAGE
    return LANGUAGE


def _notebook_language(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return language_of(json.load(f))
    except (OSError, ValueError, RecursionError):
        return None


def current() -> str:
    """The language feedback is written in now: the one chosen for this context, else the process's default."""
    return _CHOSEN.get() or _process_default()


@contextlib.contextmanager
def using(language: object) -> Iterator[str]:
    """Write feedback in ``language`` inside the block (in this thread or task only)."""
    token = _CHOSEN.set(normalize(language))
    try:
        yield _CHOSEN.get() or LANGUAGE
    finally:
        _CHOSEN.reset(token)


def choose(language: object) -> str:
    """Write feedback in ``language`` from now on, in this context (the sandboxed child, for its one notebook)."""
    _CHOSEN.set(normalize(language))
    return current()


def message(mistake: str, language: str | None = None) -> Message:
    """The message for ``mistake`` in ``language`` (default: ``current()``), falling back to English."""
    table = TABLES.get(language or current(), EN)
    return table.get(mistake) or EN[mistake]


def for_exercise(mistake: str, exercise: str) -> str:
    """The key of ``mistake``'s message for ``exercise``: its variant ``'<mistake>:<exercise>'`` when the table has
    one (a hint that names what that exercise's notebook section teaches), else ``mistake``."""
    variant = f"{mistake}:{exercise}"
    return variant if variant in EN else mistake


def say(key: str, /, **fields: object) -> str:
    """The title of ``key``, filled in: for notices that are one sentence."""
    return message(key).title.format(**fields)


# A notebook section's heading in each language (English heading -> its translation, from the notebooks' catalogues,
# compiled with the messages): a hint points at the section the student's own notebook shows.
HEADINGS: Mapping[str, Mapping[str, str]] = {"zh": getattr(messages_zh, "HEADINGS", {})}


def heading_in(heading: str, language: str | None = None) -> str:
    """``heading`` (a section of the English notebooks) as the notebook in ``language`` (default: current) titles it."""
    return HEADINGS.get(language or current(), {}).get(heading, heading)
