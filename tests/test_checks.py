"""The grader's checks: solutions and other correct styles pass; every catalogued mistake gets its diagnosis."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from conftest import ALTERNATIVES, CHECK_OF_CELL, ENTRY, MISTAKES, CatalogueEntry, namespace_for, solution_cells
from grader import checks, messages
from grader.diagnosis import CheckFailed
from grader.exercises import EXERCISES


# The shapes of the notebooks' visible and hidden checks: an expectation must hold on all of them.
ALL_SHAPES = {"linear": [(4, 3, 2), (1, 5, 3), (7, 2, 6)]}
UNARY_SHAPES = [(3, 3), (), (2, 5, 3)]


def outcomes(entry_exercise: str, ns: dict) -> dict[str, tuple[str, str]]:
    """cell suffix -> (mistake id or 'pass', message) for the four checks, on the visible and hidden shapes."""
    result = {}
    shapes = ALL_SHAPES.get(entry_exercise, UNARY_SHAPES)
    for suffix, check in CHECK_OF_CELL.items():
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(checks, check)(entry_exercise, ENTRY[entry_exercise](ns), shapes=shapes)
            result[suffix] = ("pass", "")
        except CheckFailed as failure:
            result[suffix] = (failure.finding.mistake, str(failure))
    return result


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_instructor_solution_passes_every_check(exercise):
    ns = namespace_for(exercise)
    exec(solution_cells()[exercise].source, ns)
    assert {k: v[0] for k, v in outcomes(exercise, ns).items()} == {k: "pass" for k in CHECK_OF_CELL}


@pytest.mark.parametrize("entry", ALTERNATIVES, ids=lambda e: e.id)
def test_correct_answers_in_other_styles_pass(entry: CatalogueEntry):
    got = outcomes(entry.exercise, entry.load())
    failed = {k: msg for k, (mistake, msg) in got.items() if mistake != "pass"}
    assert not failed, f"{entry.description}: a correct answer was rejected:\n" + "\n".join(failed.values())


@pytest.mark.parametrize("entry", MISTAKES, ids=lambda e: e.id)
def test_each_mistake_gets_its_diagnosis(entry: CatalogueEntry):
    got = outcomes(entry.exercise, entry.load())
    assert {k: v[0] for k, v in got.items()} == entry.expect, (
        f"{entry.description}\n" + "\n".join(f"{k}: {msg or 'pass'}" for k, (_, msg) in got.items()))
    for suffix, (mistake, text) in got.items():
        if mistake == "pass":
            continue
        title = messages.message(mistake).title.split("{")[0].strip()
        assert title in text, f"{suffix}: the message does not say the mistake's sentence {title!r}:\n{text}"
        assert not re.search(r"\{[a-z_]+\}", text), f"{suffix}: a template field was left unfilled:\n{text}"
        assert "hint:" in text and "Traceback" not in text


def test_catalogue_covers_at_least_fifteen_mistakes_across_all_exercises():
    assert len(MISTAKES) >= 15
    assert {e.exercise for e in MISTAKES} == set(EXERCISES)
    assert len({m for e in MISTAKES for m in e.expect.values()} - {"pass"}) >= 15


def test_every_failed_check_says_where_and_expected_versus_received_for_wrong_values():
    entry = next(e for e in MISTAKES if e.id == "square-forgot-grad-out")
    text = outcomes("square", entry.load())["first-order"][1]
    assert "where:" in text and "expected:" in text and "received:" in text
    assert "gradient for `x` at [" in text


def test_a_check_failure_is_an_assertion_error_so_nbgrader_scores_it_zero():
    entry = next(e for e in MISTAKES if e.id == "square-wrong-sign")
    with pytest.raises(AssertionError):
        checks.first_derivatives("square", ENTRY["square"](entry.load()))


def test_every_message_template_formats(capsys):
    for mistake, message in messages.EN.items():
        fragment = mistake.startswith("reason_")  # reasons are clauses of the "stopped" notices
        assert message.title.strip() and (fragment or message.hint.strip()), mistake
        assert message.title[0].isalpha() or message.title[0] in "{`✗", mistake


def test_unknown_exercise_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown exercise 'sqaure'"):
        checks.forward("sqaure", lambda x: x)


def test_self_checks_answer_well_under_a_second_after_the_first_one():
    """Students run the visible checks in their own kernel, again and again: they must feel instant."""
    import time

    timings = {}
    for exercise in sorted(EXERCISES):
        ns = namespace_for(exercise)
        exec(solution_cells()[exercise].source, ns)
        for suffix, check in CHECK_OF_CELL.items():
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(checks, check)(exercise, ENTRY[exercise](ns))  # warm-up: torch loads lazily once
                started = time.perf_counter()
                getattr(checks, check)(exercise, ENTRY[exercise](ns))
            timings[f"{exercise}-{suffix}"] = time.perf_counter() - started
    slow = {k: round(v, 3) for k, v in timings.items() if v > 0.3}
    assert not slow, f"self-checks slower than 0.3 s: {slow}"


def _pytorch_verdicts(entry: CatalogueEntry) -> str:
    """What torch.autograd.gradcheck / gradgradcheck alone say about a catalogued mistake."""
    import warnings

    import torch

    fn = ENTRY[entry.exercise](entry.load())
    ex = EXERCISES[entry.exercise]
    verdicts = []
    for probe in ex.probes(ex.default_shapes, 0, extras=False):  # gradcheck needs float64: the shapes' probes
        inputs = probe.fresh()
        positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]

        def call(*tensors, inputs=inputs, positions=positions):
            args = list(inputs)
            for i, t in zip(positions, tensors):
                args[i] = t
            return fn(*args)

        tensors = tuple(inputs[i] for i in positions)
        for check in (torch.autograd.gradcheck, torch.autograd.gradgradcheck):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    verdicts.append((check.__name__, bool(check(call, tensors, raise_exception=False))))
                except Exception:
                    verdicts.append((check.__name__, False))
    if not all(ok for name, ok in verdicts if name == "gradcheck"):
        return "gradcheck"
    return "gradgradcheck" if not all(ok for _, ok in verdicts) else "neither"


@pytest.mark.parametrize("entry", MISTAKES, ids=lambda e: e.id)
def test_the_catalogue_says_truly_which_pytorch_check_notices_each_mistake(entry: CatalogueEntry):
    assert entry.caught_by in ("gradcheck", "gradgradcheck", "neither"), f"{entry.path}: add '# caught-by:'"
    assert _pytorch_verdicts(entry) == entry.caught_by


def test_the_catalogue_has_mistakes_of_every_kind_and_the_grader_names_them_all():
    kinds = {k: [e for e in MISTAKES if e.caught_by == k] for k in ("gradcheck", "gradgradcheck", "neither")}
    assert all(len(v) >= 5 for v in kinds.values()), {k: len(v) for k, v in kinds.items()}
    assert len(MISTAKES) >= 25
    for entry in kinds["neither"] + kinds["gradgradcheck"]:  # what PyTorch's checks miss, the grader names
        assert any(v not in ("pass", "grader_error") for v in entry.expect.values()), entry.id
