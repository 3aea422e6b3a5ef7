"""Unit tests of grader/basics.py: correct answers pass quietly, each known mistake fails with its own mistake id
and the message the table ``grader.spec.messages`` holds for it.

The checks are split for trusted grading: ``observe`` runs next to the student's code and records plain data,
``judge`` decides from those observations alone; forged or malformed observations must never pass.

Fast (no kernels, no nbgrader): every check runs in milliseconds.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import re
import string
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from grader import basics
from grader.spec import messages
from grader.judge.diagnosis import CheckFailed, Finding
from conftest import best_cpu_seconds

NOTEBOOK = Path(__file__).resolve().parents[1] / "solutions" / "autograd" / "01_autograd_basics.ipynb"


# ----------------------------------------------------------------------------------------------
# reference solutions (what the solutions notebook contains)


def vjp_ok(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return g


def vjp_ok_backward_copy(f, x, v):  # correct values, but uses backward: fine for check_vjp only
    f(x).backward(v)
    return x.grad.clone()


def acc_ok(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        (loss_fn(w, batch) / len(batches)).backward()
    return w.grad.clone()


def acc_ok_divide_at_end(loss_fn, w, batches):
    if w.grad is not None:
        w.grad.zero_()
    for batch in batches:
        loss_fn(w, batch).backward()
    return w.grad / len(batches)


def acc_autograd_grad_per_batch(loss_fn, w, batches):  # accepted: one graph at a time, w.grad untouched
    return sum(torch.autograd.grad(loss_fn(w, b), w)[0] for b in batches) / len(batches)


def second_ok(f, x):
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
    (h,) = torch.autograd.grad(g, x, grad_outputs=torch.ones_like(g))
    return h


def second_ok_sum(f, x):
    (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    return h


CORRECT: list[tuple[Callable[..., None], Callable[..., Any], dict[str, Any]]] = [
    (basics.check_vjp, vjp_ok, {}),
    (basics.check_vjp, vjp_ok, {"sizes": (5, 7), "seed": 3}),
    (basics.check_vjp, vjp_ok_backward_copy, {}),
    (basics.check_vjp_keeps_grad, vjp_ok, {}),
    (basics.check_vjp_keeps_grad, vjp_ok, {"sizes": (4, 6), "seed": 11}),
    (basics.check_mean_gradient, acc_ok, {}),
    (basics.check_mean_gradient, acc_ok, {"sizes": (5, 2), "n_batches": 7, "seed": 3}),
    (basics.check_mean_gradient, acc_ok_divide_at_end, {}),
    (basics.check_mean_gradient, acc_ok, {"n_batches": 1}),
    (basics.check_mean_gradient, acc_autograd_grad_per_batch, {}),
    (basics.check_mean_gradient_stale, acc_ok, {}),
    (basics.check_mean_gradient_stale, acc_ok_divide_at_end, {"sizes": (6,), "n_batches": 5, "seed": 8}),
    (basics.check_mean_gradient_copy, acc_ok, {}),
    (basics.check_mean_gradient_copy, acc_ok_divide_at_end, {"sizes": (4,), "n_batches": 3, "seed": 21}),
    (basics.check_second_derivative, second_ok, {}),
    (basics.check_second_derivative, second_ok, {"sizes": (6, 1), "seed": 4}),
    (basics.check_second_derivative, second_ok_sum, {}),
    (basics.check_second_derivative_general, second_ok, {}),
    (basics.check_second_derivative_general, second_ok_sum, {"sizes": (5,), "seed": 9}),
]


def vjp_torch_func(f, x, v):
    _, pullback = torch.func.vjp(f, x)
    return pullback(v)[0]


def vjp_autograd_functional(f, x, v):
    return torch.autograd.functional.vjp(f, x, v)[1]


def second_torch_func(f, x):  # f is elementwise: d/dx sum(f'(x)) = f''(x), entry by entry
    return torch.func.grad(lambda t: torch.func.grad(lambda u: f(u).sum())(t).sum())(x)


def second_autograd_functional(f, x):
    g = lambda t: torch.autograd.functional.vjp(f, t, torch.ones_like(t), create_graph=True)[1]  # noqa: E731
    return torch.autograd.functional.vjp(g, x, torch.ones_like(x))[1]


# Notebook 1 teaches torch.autograd.grad; an answer by another of PyTorch's own APIs that returns the right values and
# leaves x and x.grad alone is correct, and scores full marks (the grader judges results and side effects, not which
# API computed them). The notebook says so next to the exercises.
OTHER_APIS = [
    (basics.check_vjp, vjp_torch_func), (basics.check_vjp_keeps_grad, vjp_torch_func),
    (basics.check_vjp, vjp_autograd_functional), (basics.check_vjp_keeps_grad, vjp_autograd_functional),
    (basics.check_second_derivative, second_torch_func), (basics.check_second_derivative_general, second_torch_func),
    (basics.check_second_derivative, second_autograd_functional),
    (basics.check_second_derivative_general, second_autograd_functional),
]


@pytest.mark.parametrize("check, fn", OTHER_APIS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_answers_with_torch_func_or_autograd_functional_get_full_marks(check, fn, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(fn)
    out, err = capsys.readouterr()
    assert out.startswith("✓ ") and err == "", (out, err)


@pytest.mark.parametrize("check, fn, kwargs", CORRECT, ids=lambda p: getattr(p, "__name__", str(p)))
def test_correct_answers_pass_quietly_and_fast(check, fn, kwargs, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning escaping the check fails the test
        check(fn, **kwargs)  # also pays torch's one-time lazy imports (torch.fx on the first grad_outputs)
        out, err = capsys.readouterr()
        elapsed = best_cpu_seconds(lambda: check(fn, **kwargs))
    assert err == ""
    assert re.fullmatch(r"✓ (vjp|accumulate|secondderiv): [^\n]+ on \d+ probes\n", out), out
    assert elapsed < 0.2, f"{check.__name__} took {elapsed:.3f}s of CPU at best of 3"


def test_checks_leave_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    basics.check_vjp(vjp_ok)
    basics.check_mean_gradient(acc_ok)
    basics.check_second_derivative_general(second_ok)
    assert torch.equal(torch.rand(3), expected)


def test_default_dtype_of_the_notebook_does_not_matter():
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float32)
        basics.check_vjp(vjp_ok)
        basics.check_mean_gradient_stale(acc_ok)
        basics.check_second_derivative(second_ok)
        torch.set_default_dtype(torch.float64)
        basics.check_mean_gradient(acc_ok)
    finally:
        torch.set_default_dtype(old)


# ----------------------------------------------------------------------------------------------
# wrong answers


def stub_nbgrader(*args):
    raise NotImplementedError()


def stub_named(*args):
    raise NotImplementedError("vjp: not written yet")


def vjp_no_grad_outputs(f, x, v):
    return torch.autograd.grad(f(x), x)[0]


def vjp_tuple(f, x, v):
    return torch.autograd.grad(f(x), x, grad_outputs=v)


def vjp_ones(f, x, v):
    out = f(x)
    return torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out))[0]


def vjp_ones_like_x(f, x, v):
    return torch.autograd.grad(f(x), x, grad_outputs=torch.ones_like(x))[0]


def vjp_flat_v(f, x, v):
    return torch.autograd.grad(f(x), x, grad_outputs=v.reshape(-1))[0]


def vjp_jacobian(f, x, v):
    return torch.autograd.functional.jacobian(f, x)


def vjp_negated(f, x, v):
    return -vjp_ok(f, x, v)


def vjp_none(f, x, v):
    vjp_ok(f, x, v)


def vjp_numpy(f, x, v):
    return vjp_ok(f, x, v).numpy()


def vjp_summed(f, x, v):
    return vjp_ok(f, x, v).sum()


def vjp_off(f, x, v):
    return vjp_ok(f, x, v) * 1.01


def vjp_moves_x(f, x, v):
    g = vjp_ok(f, x, v)
    with torch.no_grad():
        x += 1
    return g


def vjp_detached(f, x, v):
    out = f(x.detach())
    return torch.autograd.grad(out, x, grad_outputs=v)[0]


def vjp_backward_then_zero(f, x, v):
    f(x).backward(v)
    g = x.grad.clone()
    x.grad.zero_()
    return g


def vjp_rounded(f, x, v):
    return vjp_ok(f, x, v).round().long()


def vjp_meta(f, x, v):  # a tensor without data: the observer cannot read it
    return torch.empty(x.shape, dtype=x.dtype, device="meta")


def vjp_transposed(f, x, v):  # right for 1-D x; for x of shape (2, 3) it returns (3, 2)
    return torch.autograd.grad(f(x), x, grad_outputs=v)[0].t() if x.dim() == 2 else vjp_ok(f, x, v)


def vjp_zero_then_backward(f, x, v):  # accumulate's zeroing, on an x.grad that is still None
    x.grad.zero_()
    f(x).backward(v)
    return x.grad.clone()


def vjp_v_at_jacobian(f, x, v):  # v @ J: right only when x and f(x) are 1-D
    return v @ torch.autograd.functional.jacobian(f, x)


# (check, wrong answer, mistake id, fragments of the message the student reads)
VJP_WRONG = [
    (basics.check_vjp, stub_nbgrader, "not_implemented",
     ["vector_jacobian_product(f, x, v) is not implemented yet", "Replace the `raise NotImplementedError(...)` line",
      "in your code: line"]),
    (basics.check_vjp, stub_named, "not_implemented", ['raise NotImplementedError("vjp: not written yet")']),
    (basics.check_vjp, vjp_no_grad_outputs, "vjp_forgot_grad_outputs",
     ["grad can be implicitly created only for scalar outputs", "pass grad_outputs=v", "in your code: line"]),
    (basics.check_vjp, vjp_tuple, "returned_tuple", ["returned a tuple (Tensor)", "take its [0]"]),
    (basics.check_vjp, vjp_ones, "vjp_ones_as_grad_outputs",
     ["where:    result[", "torch.ones_like(...) was passed as grad_outputs"]),
    (basics.check_vjp, vjp_ones_like_x, "vjp_ones_as_grad_outputs", ["torch.ones_like(...) was passed as grad_outputs"]),
    (basics.check_vjp, vjp_flat_v, "vjp_grad_outputs_wrong_shape", ["Mismatch in shape", "shape of the OUTPUT",
                                                                     "x of shape (2, 3)"]),
    (basics.check_vjp, vjp_jacobian, "vjp_returned_jacobian", ["the whole Jacobian", "received: shape (3, 3)"]),
    (basics.check_vjp, vjp_negated, "vjp_wrong_sign", ["wrong sign"]),
    (basics.check_vjp, vjp_none, "returned_none", ["returned None", "`return` statement"]),
    (basics.check_vjp, vjp_numpy, "returned_not_a_tensor", ["returned a ndarray", "torch.Tensor of shape (3,)"]),
    (basics.check_vjp, vjp_summed, "vjp_wrong_shape", ["has shape ()", "expected: shape (3,)", "received: shape ()"]),
    (basics.check_vjp, vjp_off, "vjp_wrong",
     ["result is wrong", "probe:    vector_jacobian_product(f, x, v) with f(x) = sin(x) * x, x of shape (3,)",
      "where:    result[0]", "expected: ", "received: "]),
    (basics.check_vjp, vjp_moves_x, "modified_input", ["changed x itself", "where:    x[0]"]),
    (basics.check_vjp, vjp_detached, "vjp_output_not_connected", ["does not require grad", "Do not detach x"]),
    (basics.check_vjp, vjp_rounded, "returned_integer_tensor", ["integer tensor (torch.int64)", "do not round"]),
    (basics.check_vjp, vjp_meta, "returned_unreadable_tensor", ["a tensor the grader cannot read"]),
    (basics.check_vjp_keeps_grad, vjp_ok_backward_copy, "vjp_changed_x_grad",
     ["changed x.grad", "where:    x.grad", "expected: None"]),
    (basics.check_vjp_keeps_grad, vjp_backward_then_zero, "vjp_changed_x_grad", ["changed x.grad"]),
    (basics.check_vjp_keeps_grad, stub_nbgrader, "not_implemented", ["is not implemented yet"]),
    (basics.check_vjp, vjp_transposed, "vjp_transposed", ["vᵀJ transposed", "received: shape (3, 2), its transpose",
                                                          "drop the .t()"]),
    (basics.check_vjp, vjp_zero_then_backward, "vjp_grad_none_on_entry",
     ["x.grad is None when the function starts", "'NoneType' object has no attribute 'zero_'", "in your code: line"]),
    (basics.check_vjp, vjp_v_at_jacobian, "vjp_matmul_shape", ["does not line up", "f(x).shape + x.shape"]),
]


def acc_sum(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        loss_fn(w, batch).backward()
    return w.grad.clone()


def acc_keeps_stale(loss_fn, w, batches):
    for batch in batches:
        (loss_fn(w, batch) / len(batches)).backward()
    return w.grad.clone()


def acc_zero_none(loss_fn, w, batches):
    w.grad.zero_()
    return acc_keeps_stale(loss_fn, w, batches)


def acc_alias(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        loss_fn(w, batch).backward()
    w.grad /= len(batches)
    return w.grad


def acc_alias_view(loss_fn, w, batches):
    acc_ok(loss_fn, w, batches)
    return w.grad.detach()


def acc_one_backward(loss_fn, w, batches):
    w.grad = None
    total = sum(loss_fn(w, batch) for batch in batches) / len(batches)
    total.backward()
    return w.grad.clone()


def acc_reset_in_loop(loss_fn, w, batches):
    for batch in batches:
        w.grad = None
        (loss_fn(w, batch) / len(batches)).backward()
    return w.grad.clone()


def acc_reset_in_loop_no_div(loss_fn, w, batches):
    for batch in batches:
        w.grad = None
        loss_fn(w, batch).backward()
    return w.grad.clone()


def acc_divide_twice(loss_fn, w, batches):
    return acc_ok(loss_fn, w, batches) / len(batches)


def acc_steps(loss_fn, w, batches):
    g = acc_ok(loss_fn, w, batches)
    with torch.no_grad():
        w -= 0.1 * g
    return g


def acc_backward_twice(loss_fn, w, batches):
    w.grad = None
    loss = loss_fn(w, batches[0])
    for _ in batches:
        loss.backward()
    return w.grad.clone()


def acc_stacked(loss_fn, w, batches):
    w.grad = None
    torch.stack([loss_fn(w, b) for b in batches]).backward()
    return w.grad.clone()


def acc_no_backward(loss_fn, w, batches):  # right numbers by central differences, no autograd at all
    h = 1e-5
    grad = torch.zeros_like(w)
    with torch.no_grad():
        for j in range(w.numel()):
            step = torch.zeros_like(w)
            step.view(-1)[j] = h
            for batch in batches:
                grad.view(-1)[j] += (loss_fn(w + step, batch) - loss_fn(w - step, batch)) / (2 * h)
    return grad / len(batches)



def acc_loss_under_no_grad(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        with torch.no_grad():
            loss = loss_fn(w, batch) / len(batches)
        loss.backward()
    return w.grad.clone()


def acc_steps_in_place(loss_fn, w, batches):
    g = acc_ok(loss_fn, w, batches)
    w -= 0.1 * g  # outside torch.no_grad(): PyTorch refuses
    return g


def acc_per_batch(loss_fn, w, batches):  # every batch's gradient, stacked: shape (len(batches), *w.shape)
    return torch.stack([torch.autograd.grad(loss_fn(w, b), w)[0] for b in batches])


def acc_first_batch_only(loss_fn, w, batches):
    w.grad = None
    loss_fn(w, batches[0]).backward()
    return w.grad.clone()


ACC_WRONG = [
    (basics.check_mean_gradient, stub_nbgrader, "not_implemented",
     ["mean_gradient_over_batches(loss_fn, w, batches) is not implemented yet"]),
    (basics.check_mean_gradient, acc_sum, "accumulate_sum_not_mean", ["SUM of the batch gradients", "divide by len(batches)"]),
    (basics.check_mean_gradient, acc_zero_none, "accumulate_grad_none_on_entry",
     ["'NoneType' object has no attribute 'zero_'", "`w.grad = None`", "in your code: line"]),
    (basics.check_mean_gradient, acc_one_backward, "accumulate_one_backward_for_all",
     ["kept several batch graphs alive", "inside the loop"]),
    (basics.check_mean_gradient, acc_stacked, "accumulate_backward_on_non_scalar",
     ["grad can be implicitly created only for scalar outputs"]),
    (basics.check_mean_gradient, acc_reset_in_loop, "accumulate_reset_in_loop",
     ["the LAST batch only", "reset inside the loop", "/ len(batches))"]),
    (basics.check_mean_gradient, acc_reset_in_loop_no_div, "accumulate_reset_in_loop",
     ["the LAST batch only", "reset inside the loop"]),
    (basics.check_mean_gradient, acc_divide_twice, "accumulate_divided_twice", ["divided by len(batches) once more"]),
    (basics.check_mean_gradient, acc_per_batch, "accumulate_wrong_shape",
     ["has shape (4, 3)", "w's shape (3,)", "averaged over the batches"]),
    (basics.check_mean_gradient, acc_first_batch_only, "accumulate_wrong",
     ["result is wrong", "one loss_fn(w, batch).backward() per batch"]),
    (basics.check_mean_gradient, acc_steps, "modified_input", ["changed w itself", "no optimizer step"]),
    (basics.check_mean_gradient, acc_steps_in_place, "accumulate_inplace_on_w",
     ["leaf Variable that requires grad is being used in an in-place operation", "no optimizer step"]),
    (basics.check_mean_gradient, acc_loss_under_no_grad, "accumulate_loss_not_connected",
     ["does not require grad", "torch.no_grad()"]),
    (basics.check_mean_gradient, acc_backward_twice, "accumulate_backward_twice",
     ["Trying to backward through the graph a second time", "fresh loss_fn(w, batch)",
      '(See section "6. backward frees the graph: retain_graph".)']),
    (basics.check_mean_gradient, acc_no_backward, "accumulate_no_backward", ["the loss of batch 0 was never backpropagated"]),
    (basics.check_mean_gradient, vjp_ok, "raised_error",
     ["raised TypeError while running mean_gradient_over_batches(loss_fn, w, batches)"]),
    (basics.check_mean_gradient_stale, acc_keeps_stale, "accumulate_stale_grad_kept",
     ["stale values w.grad held on entry", "`w.grad = None`"]),
    (basics.check_mean_gradient_stale, acc_sum, "accumulate_sum_not_mean", ["SUM of the batch gradients"]),
    (basics.check_mean_gradient_copy, acc_alias, "accumulate_returns_alias",
     ["returned w.grad itself", "w.grad.clone()", "after w.grad.zero_()", "received: 0.0000"]),
    (basics.check_mean_gradient_copy, acc_alias_view, "accumulate_returns_alias", ["returned w.grad itself (or a view of it)"]),
]


def second_no_create_graph(f, x):
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    (h,) = torch.autograd.grad(g, x, grad_outputs=torch.ones_like(g))
    return h


def second_first_derivative(f, x):
    y = f(x)
    return torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)[0]


def second_no_grad_outputs(f, x):
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x)[0]


def second_doubled(f, x):
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=2 * torch.ones_like(y), create_graph=True)
    return torch.autograd.grad(g, x, grad_outputs=torch.ones_like(g))[0]


def second_summed(f, x):
    return second_ok(f, x).sum()


def second_backward(f, x):
    f(x).sum().backward(create_graph=True)
    return torch.autograd.grad(x.grad.sum(), x)[0]


def second_only_1d(f, x):
    h = torch.autograd.functional.hessian(lambda t: f(t).sum(), x.detach())
    return torch.stack([h[i, i] for i in range(x.shape[0])])


def second_bad_grad_outputs(f, x):
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones(1, dtype=x.dtype), create_graph=True)
    return torch.autograd.grad(g, x, grad_outputs=torch.ones_like(g))[0]


def second_returns_f(f, x):
    return f(x).detach()


def second_no_create_graph_wrong_pair(f, x):  # two mistakes: no create_graph, and d g / d y instead of d g / d x
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    (h,) = torch.autograd.grad(g, y, grad_outputs=torch.ones_like(g))
    return h


def second_wrong_pair(f, x):  # create_graph fixed: PyTorch now says "Set allow_unused=True"
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
    (h,) = torch.autograd.grad(g, y, grad_outputs=torch.ones_like(g))
    return h


def second_loops_over_len(f, x):
    y = f(x)
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
    return torch.stack([torch.autograd.grad(g.reshape(-1)[i], x, retain_graph=True)[0].reshape(-1)[i]
                        for i in range(len(x))]).reshape(x.shape)


def second_hessian_diagonal(f, x):
    h = torch.autograd.functional.hessian(lambda t: f(t).sum(), x)
    return h[0, 0] if x.dim() == 0 else second_ok(f, x)


SECOND_WRONG = [
    (basics.check_second_derivative, stub_nbgrader, "not_implemented", ["second_derivative(f, x) is not implemented yet"]),
    (basics.check_second_derivative, second_no_create_graph, "second_forgot_create_graph",
     ["element 0 of tensors does not require grad", "create_graph=True to the FIRST"]),
    (basics.check_second_derivative, second_first_derivative, "second_returned_first_derivative", ["FIRST derivative f'(x)"]),
    (basics.check_second_derivative, second_no_grad_outputs, "second_forgot_grad_outputs",
     ["grad can be implicitly created only for scalar outputs", "grad_outputs=torch.ones_like"]),
    (basics.check_second_derivative, second_bad_grad_outputs, "second_grad_outputs_wrong_shape",
     ["Mismatch in shape", "use torch.ones_like of it"]),
    (basics.check_second_derivative, second_doubled, "second_off_by_factor_two", ["factor of 2"]),
    (basics.check_second_derivative, second_returns_f, "second_wrong", ["result is wrong", "not f''(x)"]),
    (basics.check_second_derivative, second_summed, "second_wrong_shape",
     ["has shape ()", "expected: shape (3,)", "received: shape ()"]),
    (basics.check_second_derivative_general, second_backward, "second_changed_x_grad",
     ["changed x.grad", "x = 2.0 (a 0-d tensor)"]),
    (basics.check_second_derivative_general, second_only_1d, "raised_error", ["IndexError", "in your code: line"]),
    (basics.check_second_derivative, second_no_create_graph_wrong_pair, "second_forgot_create_graph_and_wrong_input",
     ["two things", "with respect to `y`, not `x`", "create_graph=True to the FIRST", "torch.autograd.grad(g, x,"]),
    (basics.check_second_derivative, second_wrong_pair, "second_wrong_input",
     ["with respect to `y`", "Ignore PyTorch's advice to set allow_unused=True", "torch.autograd.grad(g, x,"]),
    (basics.check_second_derivative_general, second_loops_over_len, "len_of_0d_tensor",
     ["len() on a 0-d tensor", "x.numel()"]),
    (basics.check_second_derivative_general, second_hessian_diagonal, "index_of_0d_tensor",
     ["indexes a 0-d tensor", "too many indices for tensor of dimension 0"]),
]

WRONG = VJP_WRONG + ACC_WRONG + SECOND_WRONG


def _ids(param: Any) -> str:
    return getattr(param, "__name__", "msg")


@pytest.mark.parametrize("check, fn, mistake, fragments", WRONG, ids=_ids)
def test_wrong_answers_fail_with_their_mistake_id_and_a_helpful_message(check, fn, mistake, fragments, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError) as info:
            check(fn)
    assert isinstance(info.value, CheckFailed)
    assert info.value.finding.mistake == mistake, str(info.value)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    _assert_message_shape(info.value)
    out, err = capsys.readouterr()
    assert "✓" not in out and err == ""
    assert info.value.__cause__ is None and info.value.__suppress_context__ is False
    assert info.value.__context__ is None, "the student's exception must not be chained into the traceback"


def _assert_message_shape(failure: BaseException) -> None:
    """The layout of grader.checks' findings: ✗ line, in your code / where / probe / expected / received, hint."""
    assert isinstance(failure, CheckFailed), f"{type(failure).__name__}: {failure}"
    finding = failure.finding
    message = str(failure)
    assert message == "\n" + finding.render()
    lines = message.strip("\n").splitlines()
    assert finding.check in basics.CHECKS and basics.CHECKS[finding.check].exercise == finding.exercise
    assert finding.mistake in basics.MISTAKES and finding.mistake in messages.EN
    assert lines[0].startswith(f"✗ {finding.exercise} · {finding.check.removeprefix('check_')}: "), lines[0]
    assert all(line.startswith("  ") for line in lines[1:]), message
    assert lines[-1].startswith("  hint:     ")
    if finding.mistake in ("malformed_observations", "grader_error"):
        assert "(See section" not in lines[-1] and "tell your instructor" in lines[-1]
    else:
        heading = basics.MISTAKE_SECTIONS.get(finding.mistake, basics.SECTIONS[finding.exercise])
        assert lines[-1].endswith(f'(See section {basics.section(finding.exercise, finding.mistake)}.)'), lines[-1]
        assert f'"{heading}"' in lines[-1], lines[-1]
        signature = basics.SIGNATURES.get(finding.check) or basics.SIGNATURES[finding.exercise]
        assert finding.probe.startswith(signature + " with "), finding.probe
    assert 2 <= len(lines) <= 7, message
    assert "Traceback" not in message and "basics.py" not in message
    assert not re.search(r"\{[a-z_]+\}", message), f"a template field was left unfilled:\n{message}"


def test_mismatch_message_names_element_and_values():
    with pytest.raises(AssertionError) as info:
        basics.check_vjp(vjp_off)
    lines = str(info.value).splitlines()
    assert re.fullmatch(r"  where:    result\[\d+\]", lines[2]), lines
    assert re.fullmatch(r"  expected: -?\d+\.\d{4}", lines[4]), lines
    assert re.fullmatch(r"  received: -?\d+\.\d{4}", lines[5]), lines


def test_sections_exist_in_the_notebook():
    """Notebook 1's exercises are taught in notebook 1, notebook 4's (grader/judge/second_order.py) in notebook 4."""
    if not NOTEBOOK.exists():
        pytest.skip("solutions notebook not built")
    headings = set()
    for path in sorted(NOTEBOOK.parent.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        headings |= {line[3:].strip() for cell in cells if cell["cell_type"] == "markdown"
                     for line in "".join(cell["source"]).splitlines() if line.startswith("## ")}
    for title in [*basics.SECTIONS.values(), *basics.MISTAKE_SECTIONS.values()]:
        assert title in headings, title


def test_notebook_test_cells_call_existing_checks():
    if not NOTEBOOK.exists():
        pytest.skip("solutions notebook not built")
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    graded = [c for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert graded
    for cell in graded:
        source = "".join(cell["source"])
        for name in re.findall(r"basics\.(\w+)\(", source):
            assert callable(getattr(basics, name, None)), name
        grade_id = cell["metadata"]["nbgrader"]["grade_id"]
        assert grade_id.split("-")[0] in basics.SECTIONS
        assert "### BEGIN HIDDEN TESTS" in source and "### END HIDDEN TESTS" in source


# ----------------------------------------------------------------------------------------------
# trusted grading: observe (next to the student's code) and judge (trusted process) separately


CHECK_NAMES = ["check_vjp", "check_vjp_keeps_grad", "check_mean_gradient", "check_mean_gradient_stale",
               "check_mean_gradient_copy", "check_second_derivative", "check_second_derivative_general"]

ALL_CASES = [(check, fn, kwargs) for check, fn, kwargs in CORRECT] + [(check, fn, {}) for check, fn, _, _ in WRONG]

PLAIN_SCALARS = (str, int, float, bool, type(None))


def _local(check: Callable[..., None], fn: Callable[..., Any], kwargs: dict[str, Any], capsys) -> tuple[bool, str]:
    """(passed, printed line or failure message) of the public check, run as a test cell runs it."""
    try:
        check(fn, **kwargs)
    except AssertionError as failure:
        return False, str(failure)
    out, _ = capsys.readouterr()
    return True, out


def _split(check_name: str, observations: Any, kwargs: dict[str, Any]) -> tuple[bool, str]:
    try:
        summary = basics.judge(check_name, observations, **kwargs)
    except AssertionError as failure:
        return False, str(failure)
    return True, "✓ " + summary + "\n"


def _walk(value: Any, path: str = "obs") -> None:
    """Fail unless ``value`` is plain data: dict (str keys) / list / tuple / scalars / plain detached tensors."""
    assert not callable(value) or isinstance(value, torch.Tensor), f"{path} is callable: {value!r}"
    if isinstance(value, dict):
        assert type(value) is dict, path
        for key, item in value.items():
            assert type(key) is str, f"{path} has a non-str key {key!r}"
            _walk(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        assert type(value) in (list, tuple), path
        for k, item in enumerate(value):
            _walk(item, f"{path}[{k}]")
    elif isinstance(value, torch.Tensor):
        assert type(value) is torch.Tensor, f"{path} is a {type(value).__name__}, not a plain tensor"
        assert not value.requires_grad and value.grad_fn is None and value.grad is None, path
        assert value._base is None and value.device.type == "cpu" and value.layout == torch.strided, path
    else:
        assert type(value) in PLAIN_SCALARS, f"{path} is a {type(value).__name__}"


def _same_data(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_data(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_data(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_registry_lists_every_public_check():
    assert list(basics.CHECKS) == CHECK_NAMES + SECOND_ORDER_NAMES
    for name in CHECK_NAMES + SECOND_ORDER_NAMES:
        assert callable(getattr(basics, name)) and name in basics.__all__
        assert basics.CHECKS[name].exercise in basics.SECTIONS
    assert {"observe", "judge", "CHECKS"} <= set(basics.__all__)
    with pytest.raises(ValueError):
        basics.observe("check_nothing", vjp_ok)
    with pytest.raises(ValueError):
        basics.judge("check_nothing", [])
    with pytest.raises(TypeError):
        basics.observe("check_vjp", vjp_ok, n_batches=3)  # check_vjp has no batches


@pytest.mark.parametrize("check, fn, kwargs", ALL_CASES, ids=_ids)
def test_judge_of_observations_equals_the_local_check(check, fn, kwargs, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = _local(check, fn, kwargs, capsys)
        observations = basics.observe(check.__name__, fn, **kwargs)
        # what crosses from the sandbox to the trusted process is a copy, never the observer's objects
        judged = _split(check.__name__, copy.deepcopy(observations), kwargs)
    assert judged == expected
    out, err = capsys.readouterr()
    assert out == "" and err == "", "observe and judge print nothing, the check prints the ✓ line"


@pytest.mark.parametrize("check, fn, kwargs", ALL_CASES, ids=_ids)
def test_observations_are_plain_data(check, fn, kwargs):
    observations = basics.observe(check.__name__, fn, **kwargs)
    assert type(observations) is list and len(observations) > 0
    _walk(observations)
    assert _same_data(copy.deepcopy(observations), observations)
    # the strictest loader PyTorch has (no code, only containers, scalars and tensors) reads them back
    buffer = io.BytesIO()
    torch.save(observations, buffer)
    buffer.seek(0)
    assert _same_data(torch.load(buffer, weights_only=True), observations)
    for k, obs in enumerate(observations):
        assert obs["check"] == check.__name__ and obs["probe"] == k
        assert "verdict" not in obs and "passed" not in obs


def test_observations_record_the_facts_the_judge_needs():
    # an error is recorded as data (type, message, student line), not raised
    (obs, *_) = basics.observe("check_vjp", vjp_no_grad_outputs)
    assert obs["error"]["type"] == "RuntimeError" and obs["error"]["not_implemented"] is False
    assert "only for scalar outputs" in obs["error"]["message"] and obs["error"]["code"].startswith("line ")
    assert basics.observe("check_vjp", stub_nbgrader)[0]["error"]["not_implemented"] is True

    # x.grad before/after the call
    keeps = basics.observe("check_vjp_keeps_grad", vjp_ok_backward_copy)
    assert keeps[0]["x_grad_before"] is None and isinstance(keeps[0]["x_grad_after"], torch.Tensor)
    assert isinstance(keeps[1]["x_grad_before"], torch.Tensor)  # odd probes start with a stale gradient
    clean = basics.observe("check_vjp_keeps_grad", vjp_ok)
    assert all(_same_data(o["x_grad_before"], o["x_grad_after"]) for o in clean)

    # forward/backward order per batch
    (ok, *_) = basics.observe("check_mean_gradient", acc_ok)
    assert ok["events"] == [[kind, k] for k in range(4) for kind in ("forward", "backward")]
    (one, *_) = basics.observe("check_mean_gradient", acc_one_backward)
    assert one["events"][:4] == [["forward", k] for k in range(4)]

    # stale w.grad on entry, and whether the result is w.grad itself
    stale = basics.observe("check_mean_gradient_stale", acc_keeps_stale)
    assert all(isinstance(o["w_grad_before"], torch.Tensor) for o in stale)
    (alias, *_) = basics.observe("check_mean_gradient_copy", acc_alias)
    assert alias["aliases_w_grad"] is True and bool(torch.all(alias["value_after_zeroing_w_grad"] == 0))
    (view, *_) = basics.observe("check_mean_gradient_copy", acc_alias_view)
    assert view["aliases_w_grad"] is False and not torch.equal(view["value_after_zeroing_w_grad"],
                                                              view["result"]["value"])
    (copied, *_) = basics.observe("check_mean_gradient_copy", acc_ok)
    assert copied["aliases_w_grad"] is False
    assert torch.equal(copied["value_after_zeroing_w_grad"], copied["result"]["value"])


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class _SneakyTensor(torch.Tensor):
    pass


def raises_unprintable(*args):
    raise _Unprintable()


def warns_and_returns_subclass(f, x, v):
    warnings.warn("a student's warning")
    return vjp_ok(f, x, v).as_subclass(_SneakyTensor)


def test_observe_survives_odd_student_code_and_swallows_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in CHECK_NAMES:
            observations = basics.observe(name, raises_unprintable)
            _walk(observations)
            assert all(o["error"]["type"] == "_Unprintable" for o in observations)
            with pytest.raises(CheckFailed, match="raised _Unprintable") as info:
                basics.judge(name, observations)
            assert info.value.finding.mistake == "raised_error"
        observations = basics.observe("check_vjp", warns_and_returns_subclass)
    _walk(observations)  # plain data: the subclass is named, never handed to the judge
    # the typed boundary: a result is read only as exactly a torch.Tensor (grader.sandboxed.typed), even when its
    # numbers are right: a subclass's own methods are how a result lies
    with pytest.raises(CheckFailed, match="torch.Tensor subclass"):
        basics.judge("check_vjp", observations)


# --- forged and malformed observations: they may fail in many ways, they never pass


def _good(name: str) -> list[dict[str, Any]]:
    fn = {"vjp": vjp_ok, "accumulate": acc_ok, "secondderiv": second_ok}[basics.CHECKS[name].exercise]
    observations = basics.observe(name, fn)
    basics.judge(name, copy.deepcopy(observations))  # the unforged observations pass
    return observations


def _assert_rejected(name: str, observations: Any, fragment: str = "", mistake: str = "") -> Finding:
    """``judge`` fails these observations with a well-formed finding (of ``mistake``, when given)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError) as info:
            basics.judge(name, observations)
    message = str(info.value)
    _assert_message_shape(info.value)
    assert fragment in message, f"{fragment!r} not in:\n{message}"
    if mistake:
        assert info.value.finding.mistake == mistake, message
    assert info.value.__context__ is None
    return info.value.finding


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_forged_observation_lists_fail(name):
    good = _good(name)
    _assert_rejected(name, [], "malformed observations: expected", "malformed_observations")
    _assert_rejected(name, None, "malformed")
    _assert_rejected(name, {"0": good[0]}, "malformed")
    _assert_rejected(name, "all good", "malformed")
    _assert_rejected(name, good[:-1], "malformed")
    _assert_rejected(name, good + [good[-1]], "malformed")
    _assert_rejected(name, [None] * len(good), "malformed")
    _assert_rejected(name, [{}] * len(good), "malformed")
    _assert_rejected(name, [{"check": name, "probe": k} for k in range(len(good))], "malformed")
    _assert_rejected(name, list(reversed(good)), "malformed")  # probes in the wrong order
    other = "check_vjp" if name != "check_vjp" else "check_vjp_keeps_grad"
    _assert_rejected(name, [{**o, "check": other} for o in good], "malformed")
    _assert_rejected(name, [{**o, "probe": True} if k == 1 else o for k, o in enumerate(good)], "malformed")
    _assert_rejected(name, [{**o, "observer_error": "boom"} for o in good], "the observer itself failed",
                     "malformed_observations")


_BAD_VALUES = [
    ("a string", "forged"),
    ("a number", 1.5),
    ("a list of floats", [0.0, 0.0, 0.0]),
    ("a dict", {"kind": "tensor"}),
    ("a tensor subclass", torch.zeros(3, dtype=torch.float64).as_subclass(_SneakyTensor)),
    ("a callable", lambda *a: None),
]


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_every_field_missing_or_of_the_wrong_type_fails(name):
    good = _good(name)
    keys = sorted(good[0])
    assert {"check", "probe", "result"} <= set(keys)
    for k in range(len(good)):
        for key in keys:
            forged = copy.deepcopy(good)
            del forged[k][key]
            _assert_rejected(name, forged, "malformed", "malformed_observations")
            for what, bad in _BAD_VALUES:
                forged = copy.deepcopy(good)
                forged[k][key] = bad
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    with pytest.raises(AssertionError):
                        basics.judge(name, forged)
                        pytest.fail(f"{name}: {key} = {what} in observation {k} passed")
        for key in sorted(good[k]["result"]):
            forged = copy.deepcopy(good)
            del forged[k]["result"][key]
            _assert_rejected(name, forged, "malformed")
            forged[k]["result"] = {**good[k]["result"], key: "forged"}
            _assert_rejected(name, forged)


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_tensors_of_the_wrong_shape_or_values_fail(name):
    good = _good(name)
    for key in [k for k, v in good[0].items() if isinstance(v, torch.Tensor)] + ["result"]:
        for bad in (torch.zeros(7, dtype=torch.float64), torch.zeros((), dtype=torch.float64),
                    torch.full((2, 2, 2), float("nan"), dtype=torch.float64)):
            forged = copy.deepcopy(good)
            if key == "result":
                forged[0]["result"]["value"] = bad
            else:
                forged[0][key] = bad
            _assert_rejected(name, forged)
    forged = copy.deepcopy(good)
    forged[-1]["result"]["value"] = forged[-1]["result"]["value"] + 1.0
    finding = _assert_rejected(name, forged, "your result is wrong")
    assert finding.mistake in ("vjp_wrong", "accumulate_wrong", "second_wrong")
    forged[-1]["result"]["value"] = forged[-1]["result"]["value"].to_sparse()
    _assert_rejected(name, forged, "malformed")
    # observations made with other probes (another seed) do not pass for these probes
    _assert_rejected(name, basics.observe(name, {"vjp": vjp_ok, "accumulate": acc_ok, "secondderiv": second_ok}[
        basics.CHECKS[name].exercise], seed=1))


def test_forged_facts_are_judged_not_trusted():
    # a forged error record fails, whatever else the observation claims
    forged = _good("check_vjp")
    forged[0]["error"] = {"type": "RuntimeError", "not_implemented": False, "message": "x", "code": None}
    _assert_rejected("check_vjp", forged, "raised RuntimeError", "raised_error")
    forged[0]["error"] = {"type": "RuntimeError"}
    _assert_rejected("check_vjp", forged, "malformed")
    forged[0]["error"] = "RuntimeError"
    _assert_rejected("check_vjp", forged, "malformed")

    # the gradient the grader set before the call must be reported as it was set
    forged = _good("check_vjp_keeps_grad")
    forged[1]["x_grad_before"] = forged[1]["x_grad_after"] = torch.zeros_like(forged[1]["x_after"])
    _assert_rejected("check_vjp_keeps_grad", forged, "malformed")
    forged = _good("check_second_derivative_general")
    forged[0]["x_grad_after"] = torch.zeros_like(forged[0]["x_after"])
    _assert_rejected("check_second_derivative_general", forged, "changed x.grad", "second_changed_x_grad")

    # events: missing backward, wrong order, or not events at all
    never, several, bad = "accumulate_no_backward", "accumulate_one_backward_for_all", "malformed_observations"
    for events, fragment, mistake in (
            ([], "never backpropagated", never), ([["forward", k] for k in range(4)], "never backpropagated", never),
            ([["forward", 0], ["forward", 1], ["backward", 0], ["backward", 1], ["forward", 2],
              ["backward", 2], ["forward", 3], ["backward", 3]], "kept several batch graphs", several),
            ([["forward", "0"]], "malformed", bad), ([["sideways", 0]], "malformed", bad),
            ([("forward", 0, 1)], "malformed", bad), ("forward", "malformed", bad)):
        forged = _good("check_mean_gradient")
        forged[0]["events"] = events
        _assert_rejected("check_mean_gradient", forged, fragment, mistake)

    # aliasing of w.grad and w itself
    forged = _good("check_mean_gradient_copy")
    forged[0]["aliases_w_grad"] = True
    _assert_rejected("check_mean_gradient_copy", forged, "returned w.grad itself", "accumulate_returns_alias")
    forged = _good("check_mean_gradient_copy")
    forged[0]["aliases_w_grad"] = 0
    _assert_rejected("check_mean_gradient_copy", forged, "malformed")
    forged = _good("check_mean_gradient_copy")
    forged[0]["value_after_zeroing_w_grad"] = None
    _assert_rejected("check_mean_gradient_copy", forged, "malformed")
    forged = _good("check_mean_gradient")
    forged[0]["w_requires_grad"] = False
    finding = _assert_rejected("check_mean_gradient", forged, "changed w itself", "modified_input")
    assert (finding.where, finding.expected, finding.received) == ("w.requires_grad", "True", "False")
    forged[0]["w_requires_grad"] = "yes"
    _assert_rejected("check_mean_gradient", forged, "malformed")

    # a result kind the observer never produces
    forged = _good("check_second_derivative")
    forged[0]["result"] = {"kind": "trust me"}
    _assert_rejected("check_second_derivative", forged, "malformed")



def _grader_error() -> CheckFailed:
    """A bug of ours, simulated: probes that cannot be built (negative size) fail the check, never pass it."""
    with pytest.raises(CheckFailed) as info:
        basics.judge("check_vjp", [], sizes=(-1,))
    return info.value


def test_a_bug_of_the_grader_is_a_grader_error_never_a_pass():
    failure = _grader_error()
    assert failure.finding.mistake == "grader_error"
    assert "the grader could not finish this check (RuntimeError: " in str(failure)
    _assert_message_shape(failure)


# --- the mistake ids: one table of sentences, ids the class report can count


_FIELD = re.compile(r"\{([a-z_]+)\}")


def _template_fields(mistake: str) -> set[str]:
    entry = messages.EN[mistake]
    return {name for _, name, _, _ in string.Formatter().parse(entry.title + entry.hint) if name}


@pytest.mark.parametrize("mistake", sorted(basics.MISTAKES))
def test_every_mistake_id_is_in_the_table_and_renders_without_placeholders(mistake):
    assert mistake in messages.EN, f"{mistake!r} has no message in grader/spec/messages.py"
    declared = set(basics.MISTAKES[mistake]) | {"exercise", "function"}
    assert _template_fields(mistake) <= declared, f"{mistake}: its templates use fields basics does not fill"
    for exercise in basics.SECTIONS:
        finding = Finding(exercise=exercise, check="check_x", mistake=mistake,
                          fields={"function": basics.SIGNATURES[exercise], **{f: "7" for f in basics.MISTAKES[mistake]}},
                          section=basics.section(exercise, mistake))
        text = finding.render()
        assert not _FIELD.search(text), f"{mistake}: a template field was left unfilled:\n{text}"
        assert finding.title and finding.hint and not _FIELD.search(finding.title + finding.hint)


# Where the function checks' failures are raised (their judges) and the error texts that name one (their spec).
RAISING_MODULES = ("judge/function_fields.py", "judge/autograd_basics.py", "judge/second_order.py", "spec/functions.py")


def _literal_mistakes() -> set[str]:
    """Every mistake id written in the function checks' modules where a failure is raised: ``_Fail("id", ...)``,
    the wrong-shape id given to ``_as_result``, ``ERROR_MISTAKES``, and ids picked into a variable first."""
    grader = Path(basics.__file__).parent
    tree = ast.Module(body=[node for name in RAISING_MODULES
                            for node in ast.parse((grader / name).read_text(encoding="utf-8")).body], type_ignores=[])
    found: set[str] = set()

    def strings(node: ast.AST) -> set[str]:  # string literals, except dict keys (field names)
        keys = {id(k) for d in ast.walk(node) if isinstance(d, ast.Dict) for k in d.keys if k is not None}
        return {n.value for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in keys}

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "_Fail" and node.args and isinstance(node.args[0], ast.Constant):
                found.add(node.args[0].value)
            if node.func.id == "_as_result" and len(node.args) >= 3 and isinstance(node.args[2], ast.Constant):
                found.add(node.args[2].value)
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if names & {"mistake", "candidates", "ERROR_MISTAKES"} and getattr(node, "value", None) is not None:
            found |= {v for v in strings(node.value) if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", v)}
    return found


def test_every_mistake_basics_can_raise_is_registered():
    raised = _literal_mistakes()
    assert len(raised) >= 30, sorted(raised)  # the scan found the raises
    assert raised <= set(basics.MISTAKES), f"not in basics.MISTAKES: {sorted(raised - set(basics.MISTAKES))}"
    assert set(basics.MISTAKES) <= set(messages.EN)
    assert set(basics.MISTAKE_SECTIONS) <= set(basics.MISTAKES)


def test_every_registered_mistake_is_reached_by_a_wrong_answer_or_forged_observation(capsys):
    """No dead ids: each one in MISTAKES is produced here from real data and reads as the table says."""
    reached: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for check, fn, _, _ in WRONG:
            with pytest.raises(CheckFailed) as info:
                check(fn)
            reached.setdefault(info.value.finding.mistake, str(info.value))
        for check, fn, ns, _ in SECOND_ORDER_WRONG:
            with pytest.raises(CheckFailed) as info:
                _second_order_check(check, fn, ns())
            reached.setdefault(info.value.finding.mistake, str(info.value))
        for entry in MISTAKES:
            if entry.exercise in ("hvp", "penalty"):
                ns = entry.load()
                for suffix, cell in CELLS[entry.exercise].items():
                    try:
                        _second_order_check(cell.check, ns[cell.entry], ns)
                    except CheckFailed as failure:
                        reached.setdefault(failure.finding.mistake, str(failure))
    reached.setdefault("malformed_observations", str(_assert_rejected("check_vjp", None).render()))
    reached.setdefault("grader_error", str(_grader_error()))
    assert set(reached) == set(basics.MISTAKES), f"never reached: {sorted(set(basics.MISTAKES) - set(reached))}"
    for mistake, text in reached.items():
        title = messages.message(mistake).title.split("{")[0].strip()
        assert title in text, f"{mistake}: the message does not say the mistake's sentence {title!r}:\n{text}"
    capsys.readouterr()


# ----------------------------------------------------------------------------------------------
# notebook 4's function checks (grader/judge/second_order.py): their probes go through the notebook's own Functions

from conftest import CELLS, EXAMPLES, MISTAKES, RELEASE, cells_by_id, namespace_for, read_entry, solution_cells  # noqa: E402

SECOND_ORDER_NAMES = ["check_hvp", "check_hvp_forward_over_reverse", "check_penalty_value", "check_penalty_gradient"]
SECOND_ORDER_FUNCTION = {"check_hvp": "hvp", "check_hvp_forward_over_reverse": "hvp_forward",
                         "check_penalty_value": "gradient_penalty", "check_penalty_gradient": "gradient_penalty"}


def _notebook4(softplus: str | None = "solution") -> dict[str, Any]:
    """Notebook 4's namespace as its checks see it: the instructor's Functions and answers, with Softplus replaced by
    a catalogued mistake (``softplus``: its file name) or removed (None)."""
    ns = namespace_for("hvp")
    if softplus is None:
        del ns["Softplus"]
    elif softplus != "solution":
        exec(read_entry(EXAMPLES / "mistakes" / f"{softplus}.py").source(), ns)
    for exercise in ("hvp", "penalty"):
        exec(solution_cells()[exercise].source, ns)
    return ns


def _second_order_check(check: str, fn: Callable[..., Any], ns: dict[str, Any]) -> str:
    """The test cell's visible call, judged from its observations as the trusted grader does."""
    return basics.judge(check, basics.observe(check, fn, namespace=ns))


def hvp_diagonal(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    diagonal = torch.stack([torch.autograd.grad(g[i], x, retain_graph=True)[0][i] for i in range(x.numel())])
    return diagonal * v


def hvp_normalises_v(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v / v.norm())[0]


def penalty_abs(f, w, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return (g.flatten(1).norm(dim=1) - 1).abs().mean()


def penalty_half_detached(f, w, x):  # right value, half the gradient: one factor of the square is a constant
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    norms = g.flatten(1).norm(dim=1)
    return ((norms.detach() - 1) * (norms - 1)).mean()


def _answer(name: str) -> Callable[..., Any]:
    return _notebook4()[name]


# (check, the answer, the notebook's namespace, mistake): wrong answers or wrong Functions the catalogue leaves out
SECOND_ORDER_WRONG: list[tuple[str, Callable[..., Any], Callable[[], dict[str, Any]], str]] = [
    ("check_hvp", hvp_diagonal, _notebook4, "hvp_diagonal_only"),
    ("check_hvp", hvp_normalises_v, _notebook4, "hvp_wrong"),
    ("check_hvp", _answer("hvp"), lambda: _notebook4(None), "hvp_needs_function"),
    ("check_penalty_value", penalty_abs, _notebook4, "penalty_wrong"),
    ("check_penalty_gradient", penalty_half_detached, _notebook4, "penalty_gradient_wrong"),
]


@pytest.mark.parametrize("check", ["check_penalty_value", "check_penalty_gradient"])
def test_a_penalty_is_not_charged_for_a_softplus_not_pasted_into_notebook_5(check):
    """Notebook 5 asks for Softplus to be pasted from notebook 4 (section 0, not graded): the penalty's probe through
    it is left out while it is missing, and a right gradient_penalty keeps its points (issue 32's split). Before the
    split, Softplus was notebook 4's own exercise and always defined there; a missing one was charged
    (hvp_needs_function)."""
    _second_order_check(check, _answer("gradient_penalty"), _notebook4(None))


@pytest.mark.parametrize("check, fn, ns, mistake", SECOND_ORDER_WRONG,
                         ids=[f"{c}-{m}" for c, _, _, m in SECOND_ORDER_WRONG])
def test_second_order_wrong_answers_and_wrong_functions_get_their_mistake(check, fn, ns, mistake):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CheckFailed) as info:
            _second_order_check(check, fn, ns())
    assert info.value.finding.mistake == mistake, str(info.value)
    _assert_message_shape(info.value)


def _released_softplus_stub() -> str:
    return cells_by_id(RELEASE / "04_modern_functions.ipynb")["softplus"].source


# Softplus answers that fail some of Softplus's own checks, with the hvp/penalty checks whose probes they break
# (the others are not affected). The instructor's hvp and gradient_penalty are right: none of their checks may fail,
# and a check whose probes go through the broken Softplus names it and its answer cell.
UNFIT_SOFTPLUS = {
    "stub": SECOND_ORDER_NAMES,
    "softplus-once-differentiable": ["check_hvp", "check_penalty_gradient"],
    "softplus-derivative-sigmoid-minus-x": SECOND_ORDER_NAMES,
    "softplus-classic-style": ["check_hvp_forward_over_reverse"],
    "softplus-no-jvp": ["check_hvp_forward_over_reverse"],
    "softplus-no-save-for-forward": ["check_hvp_forward_over_reverse"],
    "softplus-setup-context-recomputes-output": ["check_hvp", "check_hvp_forward_over_reverse", "check_penalty_gradient"],
}


@pytest.mark.parametrize("softplus", sorted(UNFIT_SOFTPLUS))
def test_a_softplus_that_fails_its_own_checks_costs_hvp_and_the_penalty_nothing(softplus, in_a_notebook, capsys,
                                                                                   monkeypatch):
    """One mistake costs points in one place: a probe through the student's own Softplus counts only when PyTorch's
    own recipe through it gives PyTorch's answer; otherwise the check passes on its other probes and its summary names
    Softplus and the answer cell to fix. Old code: an unfinished Softplus failed all four checks with "hvp(f, x, v) is
    not implemented yet ... answer cell `hvp`" (7 points) and raised, stopping Run All; a Softplus without
    save_for_forward or in the classic style cost 2 more points on hvp_forward."""
    ns = _notebook4("solution")
    if softplus == "stub":
        exec(_released_softplus_stub(), ns)
    else:
        exec(read_entry(EXAMPLES / "mistakes" / f"{softplus}.py").source(), ns)
    for exercise in ("hvp", "penalty"):
        exec(solution_cells()[exercise].source, ns)
    for check in SECOND_ORDER_NAMES:
        fn = ns[SECOND_ORDER_FUNCTION[check]]
        for kwargs in ({"sizes": (4,), "seed": 0}, {"sizes": (2, 7), "seed": 5}) if "hvp" in check else (
                {"sizes": (5, 3), "seed": 0}, {"sizes": (8, 4), "seed": 3}):
            summary = basics.judge(check, basics.observe(check, fn, namespace=ns, **kwargs), **kwargs)  # no raise
            if check in UNFIT_SOFTPLUS[softplus]:
                assert "not counted: the probes through your Softplus" in summary, summary
                assert "answer cell `softplus`" in summary, summary
            else:
                assert "not counted" not in summary, summary
        monkeypatch.setattr(basics, "_notebook_namespace", lambda: ns)  # the kernel's variables
        getattr(basics, check)(fn)  # the self-check as the notebook runs it: prints, never raises
    printed = capsys.readouterr().out
    assert printed.count("✓ ") == len(SECOND_ORDER_NAMES), printed
    assert "not implemented" not in printed and "answer cell `hvp`" not in printed, printed


@pytest.fixture
def in_a_notebook(monkeypatch):
    """As in a student's kernel: IPython is running and nbgrader is not."""
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


@pytest.mark.parametrize("check", SECOND_ORDER_NAMES)
def test_second_order_checks_pass_the_solution_quietly_and_fast(check, capsys):
    ns = _notebook4()
    fn = ns[SECOND_ORDER_FUNCTION[check]]
    _second_order_check(check, fn, ns)  # warm-up: torch.func loads lazily
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _second_order_check(check, fn, ns).startswith(("hvp", "gradient_penalty"))
        elapsed = best_cpu_seconds(lambda: _second_order_check(check, fn, ns))
    assert elapsed < 0.3, f"{check} took {elapsed:.3f}s of CPU at best of 3"
    assert capsys.readouterr() == ("", "")


def _good_second_order(name: str) -> list[dict[str, Any]]:
    ns = _notebook4()
    observations = basics.observe(name, ns[SECOND_ORDER_FUNCTION[name]], namespace=ns)
    basics.judge(name, copy.deepcopy(observations))  # the unforged observations pass
    _walk(observations)
    return observations


@pytest.mark.parametrize("name", SECOND_ORDER_NAMES)
def test_second_order_forged_observation_lists_fail(name):
    good = _good_second_order(name)
    for forged in ([], None, {"0": good[0]}, good[:-1], good + [good[-1]], [None] * len(good), [{}] * len(good),
                   [{"check": name, "probe": k} for k in range(len(good))], list(reversed(good))):
        _assert_rejected(name, forged, "malformed")
    forged = copy.deepcopy(good)
    forged[0]["result"]["value"] = forged[0]["result"]["value"] + 1.0
    assert _assert_rejected(name, forged).mistake not in ("malformed_observations", "grader_error")
    forged[0]["result"]["value"] = forged[0]["result"]["value"].to_sparse()
    _assert_rejected(name, forged, "malformed")
    ns = _notebook4()  # observations of other probes (another seed) do not pass for these probes
    _assert_rejected(name, basics.observe(name, ns[SECOND_ORDER_FUNCTION[name]], namespace=ns, seed=1))


@pytest.mark.parametrize("name", SECOND_ORDER_NAMES)
def test_second_order_every_field_missing_or_of_the_wrong_type_fails(name):
    good = _good_second_order(name)
    for k in range(len(good)):
        for key in sorted(good[k]):
            forged = copy.deepcopy(good)
            del forged[k][key]
            if name == "check_penalty_value" and key in ("requires_grad", "gradient", "x_after", "x_requires_grad",
                                                         "x_grad_after", "w_grad_after"):
                basics.judge(name, forged)  # facts only the gradient check reads
                continue
            _assert_rejected(name, forged, "malformed", "malformed_observations")
            for what, bad in _BAD_VALUES:
                forged = copy.deepcopy(good)
                forged[k][key] = bad
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    with pytest.raises(AssertionError):
                        basics.judge(name, forged)
                        pytest.fail(f"{name}: {key} = {what} in observation {k} passed")


def test_second_order_forged_call_records_fail():
    """How f was called (transforms, tangent, tracked input) is checked for its structure; a record that is not one
    fails, and none can be added past the recorder's limit."""
    good = _good_second_order("check_hvp_forward_over_reverse")
    for bad in ([{"transforms": "Jvp", "dual": False, "tracked": True}], [{"transforms": [1], "dual": False,
                                                                          "tracked": True}],
                [{"transforms": [], "dual": 1, "tracked": True}], [{"transforms": []}], ["Jvp"],
                [{"transforms": ["Jvp"], "dual": True, "tracked": True}] * 51):
        forged = copy.deepcopy(good)
        forged[0]["calls"] = bad
        _assert_rejected("check_hvp_forward_over_reverse", forged, "malformed", "malformed_observations")


def test_second_order_a_forged_missing_function_never_skips_a_probe_that_must_be_judged():
    good = _good_second_order("check_hvp")
    uses = [k for k, o in enumerate(good) if "Softplus" in str(basics.CHECKS["check_hvp"].setup(
        {"sizes": (4,), "seed": 0})[k][0].uses)]
    for k in uses:  # Softplus is required: "missing" fails the check
        forged = copy.deepcopy(good)
        forged[k] = {"check": "check_hvp", "probe": k, "missing": ["Softplus"]}
        _assert_rejected("check_hvp", forged, "does not define Softplus", "hvp_needs_function")
    for k in range(len(good)):  # a Function the probe does not use, or no name at all, is malformed
        for missing in (["Linear"], [], "Softplus", [1]):
            forged = copy.deepcopy(good)
            forged[k] = {"check": "check_hvp", "probe": k, "missing": missing}
            _assert_rejected("check_hvp", forged, "malformed", "malformed_observations")


# --- attacks on notebook 4's function checks that the observer itself defeats, without a sandbox (the others need
# the guard of grader.sandboxed.child: tests/test_sandbox_attacks.py grades every tests/adversarial/nb4-*.py in the sandbox)

ATTACKS = Path(__file__).resolve().parent / "adversarial"
OBSERVER_DEFEATS = ["nb4-hvp-closure-forgery.py", "nb4-hvp-lying-tensor.py", "nb4-penalty-subclass-forgery.py"]


def _attack_namespace(case_file: str) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """Notebook 4's namespace with the attack's answer cells run in it (`# <solution>`: the instructor's answer),
    and the points per exercise its header expects."""
    text = (ATTACKS / case_file).read_text(encoding="utf-8")
    parts = re.split(r"^# %% cell: (\S+)\n", text, flags=re.M)
    if len(parts) == 1:
        parts = ["", re.search(r"^# cell: (\S+)", text, re.M).group(1), text]
    ns = _notebook4()
    for k in range(1, len(parts), 2):
        source = "\n".join(solution_cells()[parts[k]].source if line.strip() == "# <solution>" else line
                           for line in parts[k + 1].split("\n"))
        exec(compile(source, case_file, "exec"), ns)
    expect = {}
    for pair in re.search(r"^# expect: (.*)$", text, re.M).group(1).split():
        exercise, points = pair.split("=")
        expect[exercise] = float(points)
    return ns, expect


@pytest.mark.parametrize("case_file", OBSERVER_DEFEATS)
def test_an_attack_on_what_the_observer_records_earns_nothing_even_unsandboxed(case_file):
    """The probe function is opaque; results are copied and differentiated as plain tensors: a record added
    through f.__closure__ and tensor subclasses whose torch functions lie change nothing, even in the student's own
    kernel. Old code: the closure and the subclass forgeries earned their wrong part's points (the lying hvp was
    already copied plainly)."""
    from grader.sandboxed.child import Guard

    guard = Guard()  # the attacks patch torch and the grader in this process: put back afterwards
    try:
        _judge_attack(case_file)
    finally:
        guard.restore()


def _judge_attack(case_file: str) -> None:
    ns, expect = _attack_namespace(case_file)
    points = {"hvp": {"check_hvp": 2, "check_hvp_forward_over_reverse": 2},
              "penalty": {"check_penalty_value": 1, "check_penalty_gradient": 2}}
    for exercise in ("hvp", "penalty"):
        if exercise not in expect:  # the attack's notebook holds the other one (notebooks 4 and 5)
            continue
        earned = 0.0
        for check, worth in points[exercise].items():
            try:
                for kwargs in ({"sizes": (4,), "seed": 0}, {"sizes": (2, 7), "seed": 5}) if exercise == "hvp" else (
                        {"sizes": (5, 3), "seed": 0}, {"sizes": (8, 4), "seed": 3}):
                    basics.judge(check, basics.observe(check, ns[SECOND_ORDER_FUNCTION[check]], namespace=ns, **kwargs),
                                 **kwargs)
                earned += worth
            except CheckFailed:
                pass
        assert earned == expect[exercise], f"{case_file}: {exercise}={earned:g}, expected {expect[exercise]:g}"


def test_the_probe_functions_given_to_an_answer_lead_nowhere():
    """What an hvp or a gradient penalty receives as f: a callable with no closure, globals, code or wrapped
    function to reach the grader's records or module through."""
    received = []
    ns = _notebook4()

    def keeps_f(name):
        def answer(f, *args):
            received.append(f)
            return ns[name](f, *args)
        return answer

    basics.observe("check_hvp", keeps_f("hvp"), namespace=ns)
    basics.observe("check_penalty_value", keeps_f("gradient_penalty"), namespace=ns)
    assert received
    for f in received:
        for attribute in ("__closure__", "__globals__", "__code__", "__wrapped__", "__func__", "__self__"):
            assert not hasattr(f, attribute), f"the probe function has {attribute}"


def acc_one_backward_forging_events(loss_fn, w, batches):
    """One backward for all batches (wrong), with the events of one backward per batch put in the list the grader's
    loss_fn keeps them in, found through loss_fn's and its hooks' closures."""
    w.grad = None
    losses = [loss_fn(w, batch) for batch in batches]
    for f in [loss_fn, *[hook for loss in losses for hook in (getattr(loss, "_backward_hooks", None) or {}).values()]]:
        for cell in getattr(f, "__closure__", None) or ():
            events = cell.cell_contents
            if isinstance(events, list):
                events[:] = [(kind, k) for k in range(len(batches)) for kind in ("forward", "backward")]
    total = sum(losses) / len(batches)
    total.backward()
    return w.grad.clone()


def test_the_order_of_backward_calls_cannot_be_forged_through_the_loss_functions_closure():
    """The loss_fn given to a mean-gradient answer (and the hooks it registers) lead to no record. Old code: the
    forged events passed `check_mean_gradient` for one backward over all batches."""
    with pytest.raises(CheckFailed) as info:
        basics.check_mean_gradient(acc_one_backward_forging_events)
    assert info.value.finding.mistake == "accumulate_one_backward_for_all"
