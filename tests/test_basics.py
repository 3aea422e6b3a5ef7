"""Unit tests of grader/basics.py: correct answers pass quietly, each known mistake fails with its own message.

Fast (no kernels, no nbgrader): every check runs in milliseconds.
"""

from __future__ import annotations

import json
import re
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from grader import basics

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


@pytest.fixture(autouse=True, scope="module")
def _warm_torch() -> None:
    """Pay torch's one-time lazy imports (autograd.grad with grad_outputs imports torch.fx) before timing."""
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    torch.autograd.grad(x * 2, x, grad_outputs=torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("check, fn, kwargs", CORRECT, ids=lambda p: getattr(p, "__name__", str(p)))
def test_correct_answers_pass_quietly_and_fast(check, fn, kwargs, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning escaping the check fails the test
        start = time.perf_counter()
        check(fn, **kwargs)
        elapsed = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert err == ""
    assert re.fullmatch(r"✓ (vjp|accumulate|secondderiv): [^\n]+ on \d+ probes\n", out), out
    assert elapsed < 0.2, f"{check.__name__} took {elapsed:.3f}s"


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


VJP_WRONG = [
    (basics.check_vjp, stub_nbgrader, ["raised NotImplementedError\n", "replace the `raise NotImplementedError` line"]),
    (basics.check_vjp, stub_named, ["raised NotImplementedError (vjp: not written yet)"]),
    (basics.check_vjp, vjp_no_grad_outputs, ["grad can be implicitly created only for scalar outputs", "pass grad_outputs=v",
                                             "in your code, line"]),
    (basics.check_vjp, vjp_tuple, ["returned a tuple (Tensor)", "take its [0]"]),
    (basics.check_vjp, vjp_ones, ["at element [", "torch.ones_like(...) as grad_outputs"]),
    (basics.check_vjp, vjp_ones_like_x, ["torch.ones_like(...) as grad_outputs"]),
    (basics.check_vjp, vjp_flat_v, ["Mismatch in shape", "shape of the OUTPUT", "x of shape (2, 3)"]),
    (basics.check_vjp, vjp_jacobian, ["returned the whole Jacobian", "received shape (3, 3)"]),
    (basics.check_vjp, vjp_negated, ["wrong sign"]),
    (basics.check_vjp, vjp_none, ["returned None", "`return` statement"]),
    (basics.check_vjp, vjp_numpy, ["returned a ndarray", "torch.Tensor of shape (3,)"]),
    (basics.check_vjp, vjp_summed, ["wrong shape", "expected shape (3,), received ()"]),
    (basics.check_vjp, vjp_off, ["is wrong for f(x) = sin(x) * x, x of shape (3,)", "at element [0]: expected", "received"]),
    (basics.check_vjp, vjp_moves_x, ["changed x itself"]),
    (basics.check_vjp, vjp_detached, ["does not require grad", "do not detach x"]),
    (basics.check_vjp_keeps_grad, vjp_ok_backward_copy, ["changed x.grad", "x.grad was None before the call"]),
    (basics.check_vjp_keeps_grad, vjp_backward_then_zero, ["changed x.grad"]),
    (basics.check_vjp_keeps_grad, stub_nbgrader, ["raised NotImplementedError"]),
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



ACC_WRONG = [
    (basics.check_mean_gradient, stub_nbgrader, ["accumulate: your mean_gradient_over_batches(loss_fn, w, batches) raised NotImplementedError"]),
    (basics.check_mean_gradient, acc_sum, ["SUM of the batch gradients", "divide by len(batches)"]),
    (basics.check_mean_gradient, acc_zero_none, ["'NoneType' object has no attribute 'zero_'", "`w.grad = None`",
                                                 "in your code, line"]),
    (basics.check_mean_gradient, acc_one_backward, ["kept several batch graphs alive", "inside the loop"]),
    (basics.check_mean_gradient, acc_stacked, ["grad can be implicitly created only for scalar outputs"]),
    (basics.check_mean_gradient, acc_reset_in_loop, ["the LAST batch only", "reset inside the loop", "(divided by"]),
    (basics.check_mean_gradient, acc_reset_in_loop_no_div, ["the LAST batch only", "reset inside the loop"]),
    (basics.check_mean_gradient, acc_divide_twice, ["divided by len(batches) once more"]),
    (basics.check_mean_gradient, acc_steps, ["changed w itself", "no optimizer step"]),
    (basics.check_mean_gradient, acc_backward_twice, ["Trying to backward through the graph a second time",
                                                      "fresh loss_fn(w, batch)"]),
    (basics.check_mean_gradient, acc_no_backward, ["never backpropagated the loss of batch 0"]),
    (basics.check_mean_gradient, vjp_ok, ["raised an error", "TypeError"]),
    (basics.check_mean_gradient_stale, acc_keeps_stale, ["stale values on entry", "`w.grad = None`"]),
    (basics.check_mean_gradient_stale, acc_sum, ["SUM of the batch gradients"]),
    (basics.check_mean_gradient_copy, acc_alias, ["returned w.grad itself", "w.grad.clone()"]),
    (basics.check_mean_gradient_copy, acc_alias_view, ["returned w.grad itself (or a view of it)"]),
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


SECOND_WRONG = [
    (basics.check_second_derivative, stub_nbgrader, ["secondderiv: your second_derivative(f, x) raised NotImplementedError"]),
    (basics.check_second_derivative, second_no_create_graph, ["element 0 of tensors does not require grad",
                                                              "create_graph=True to the FIRST"]),
    (basics.check_second_derivative, second_first_derivative, ["FIRST derivative f'(x)"]),
    (basics.check_second_derivative, second_no_grad_outputs, ["grad can be implicitly created only for scalar outputs",
                                                              "grad_outputs=torch.ones_like"]),
    (basics.check_second_derivative, second_doubled, ["factor of 2"]),
    (basics.check_second_derivative, second_summed, ["wrong shape", "expected shape (3,), received ()"]),
    (basics.check_second_derivative_general, second_backward, ["changed x.grad", "x = 2.0 (a 0-d tensor)"]),
    (basics.check_second_derivative_general, second_only_1d, ["IndexError", "in your code, line"]),
]


def _ids(param: Any) -> str:
    return getattr(param, "__name__", "msg")


@pytest.mark.parametrize("check, fn, fragments", VJP_WRONG + ACC_WRONG + SECOND_WRONG, ids=_ids)
def test_wrong_answers_fail_with_a_helpful_message(check, fn, fragments, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError) as info:
            check(fn)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    _assert_message_shape(message)
    out, err = capsys.readouterr()
    assert "✓" not in out and err == ""
    assert info.value.__cause__ is None and info.value.__suppress_context__ is False
    assert info.value.__context__ is None, "the student's exception must not be chained into the traceback"


def _assert_message_shape(message: str) -> None:
    lines = message.splitlines()
    exercise = lines[0].split(":")[0]
    assert exercise in basics.SECTIONS, lines[0]
    assert lines[0].startswith(f"{exercise}: your {basics.SIGNATURES[exercise]} ")
    assert all(line.startswith("  ") for line in lines[1:]), message
    assert lines[-1].startswith("  Hint: ")
    assert lines[-1].endswith(f'(see section "{basics.SECTIONS[exercise]}")')
    assert 3 <= len(lines) <= 5, message
    assert "Traceback" not in message and "basics.py" not in message


def test_mismatch_message_names_element_and_values():
    with pytest.raises(AssertionError) as info:
        basics.check_vjp(vjp_off)
    second = str(info.value).splitlines()[1]
    assert re.fullmatch(r"  at element \[\d+\]: expected -?\d+\.\d{4}, received -?\d+\.\d{4}", second), second


def test_sections_exist_in_the_notebook():
    if not NOTEBOOK.exists():
        pytest.skip("solutions notebook not built")
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    headings = {
        line[3:].strip()
        for cell in cells
        if cell["cell_type"] == "markdown"
        for line in "".join(cell["source"]).splitlines()
        if line.startswith("## ")
    }
    for title in basics.SECTIONS.values():
        assert title in headings


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
