"""The trusted judge on forged, truncated and oversized observations: it scores only complete observations
(exactly one per probe, one gradient per input, tensors of the expected shapes) and it stays fast."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

from conftest import ENTRY, namespace_for, solution_cells
from grader import basics, checks, observe
from grader.diagnosis import CheckFailed
from grader.exercises import EXERCISES


@functools.lru_cache(maxsize=None)
def _observed(check: str, exercise: str) -> tuple[list, list]:
    ns = namespace_for(exercise)
    exec(solution_cells()[exercise].source, ns)
    ex = EXERCISES[exercise]
    probes = ex.probes(ex.default_shapes, 0)
    return probes, observe.observe(check, ex, ENTRY[exercise](ns), probes)


def good(check: str, exercise: str) -> tuple[list, list]:
    probes, observations = _observed(check, exercise)
    return probes, copy.deepcopy(observations)


def rejected(check: str, exercise: str, probes: list, observations: list) -> str:
    with pytest.raises(CheckFailed) as failure:
        checks.judge(check, exercise, probes, observations)
    return failure.value.finding.mistake


@pytest.mark.parametrize("check", checks.CHECKS)
@pytest.mark.parametrize("exercise", ["square", "linear", "cube"])
def test_complete_observations_of_the_solution_pass(check, exercise):
    probes, observations = good(check, exercise)
    checks.judge(check, exercise, probes, observations)


@pytest.mark.parametrize("check", checks.CHECKS)
def test_a_missing_or_extra_observation_is_never_scored(check):
    probes, observations = good(check, "linear")
    assert rejected(check, "linear", probes, []) == "incomplete_observations"
    assert rejected(check, "linear", probes, observations[:-1]) == "incomplete_observations"
    assert rejected(check, "linear", probes, observations + observations[-1:]) == "incomplete_observations"
    with pytest.raises(CheckFailed, match=r"received 0 observations for \d+ probes"):
        checks.judge(check, "linear", probes, [])


@pytest.mark.parametrize("exercise", ["square", "linear"])
def test_empty_or_short_gradient_lists_fail_the_first_derivatives(exercise):
    probes, observations = good("first derivatives", exercise)
    forged = copy.deepcopy(observations)
    forged[0]["vjp"]["grads"] = []
    assert rejected("first derivatives", exercise, probes, forged) == "incomplete_observations"
    forged = copy.deepcopy(observations)
    forged[-1]["vjp"]["grads"] = forged[-1]["vjp"]["grads"][:-1]
    assert rejected("first derivatives", exercise, probes, forged) == "incomplete_observations"
    forged = copy.deepcopy(observations)
    forged[0]["vjp"]["grads"] = forged[0]["vjp"]["grads"] + forged[0]["vjp"]["grads"][-1:]
    assert rejected("first derivatives", exercise, probes, forged) == "incomplete_observations"


@pytest.mark.parametrize("exercise", ["square", "linear", "cube"])
def test_empty_or_short_second_derivative_lists_fail(exercise):
    """The bug of issue 7: 'second derivatives match PyTorch's' with no second derivative observed at all."""
    probes, observations = good("second derivatives", exercise)
    for k in range(len(observations)):
        forged = copy.deepcopy(observations)
        forged[k]["second"]["grads"] = []
        assert rejected("second derivatives", exercise, probes, forged) == "incomplete_observations"
        forged = copy.deepcopy(observations)
        forged[k]["second"]["grads"] = forged[k]["second"]["grads"][:-1]
        assert rejected("second derivatives", exercise, probes, forged) == "incomplete_observations"
        forged = copy.deepcopy(observations)
        forged[k]["first"]["grads"] = []
        assert rejected("second derivatives", exercise, probes, forged) == "incomplete_observations"


def test_cube_backward_node_lists_must_cover_every_gradient():
    probes, observations = good("second derivatives", "cube")
    forged = copy.deepcopy(observations)
    forged[0]["first"]["backward_node"] = []
    assert rejected("second derivatives", "cube", probes, forged) == "incomplete_observations"
    probes, observations = good("structure", "cube")
    forged = copy.deepcopy(observations)
    forged[0]["backward_nodes"] = forged[0]["backward_nodes"] * 2
    assert rejected("structure", "cube", probes, forged) == "incomplete_observations"


def test_missing_requires_grad_patterns_fail_the_structure_check():
    probes, observations = good("structure", "linear")
    for change in ("delete", "empty", "short", "reorder"):
        forged = copy.deepcopy(observations)
        if change == "delete":
            del forged[0]["patterns"]
        elif change == "empty":
            forged[0]["patterns"] = []
        elif change == "short":
            forged[0]["patterns"] = forged[0]["patterns"][:-1]
        else:
            forged[0]["patterns"] = forged[0]["patterns"][::-1]
        with pytest.raises(CheckFailed):
            checks.judge("structure", "linear", probes, forged)
    forged = copy.deepcopy(observations)
    forged[0]["patterns"][0]["vjp"]["grads"] = []
    assert rejected("structure", "linear", probes, forged) == "incomplete_observations"
    forged = copy.deepcopy(observations)
    forged[0]["patterns"][0]["raw"]["grads"] = []
    with pytest.raises(CheckFailed):
        checks.judge("structure", "linear", probes, forged)


@pytest.mark.parametrize("check", ["first derivatives", "second derivatives", "structure"])
def test_missing_keys_fail(check):
    probes, observations = good(check, "square")
    for key in observations[0]:
        forged = copy.deepcopy(observations)
        del forged[0][key]
        with pytest.raises(CheckFailed):
            checks.judge(check, "square", probes, forged)


def test_observed_tensors_of_the_wrong_shape_fail():
    probes, observations = good("first derivatives", "linear")
    forged = copy.deepcopy(observations)
    forged[0]["vjp"]["grads"][1] = forged[0]["vjp"]["grads"][1].reshape(-1)
    with pytest.raises(CheckFailed):
        checks.judge("first derivatives", "linear", probes, forged)
    forged = copy.deepcopy(observations)
    forged[0]["forward"]["value"] = forged[0]["forward"]["value"][:1]
    with pytest.raises(CheckFailed):
        checks.judge("first derivatives", "linear", probes, forged)
    probes, observations = good("second derivatives", "square")
    forged = copy.deepcopy(observations)
    forged[0]["second"]["grads"][0] = forged[0]["second"]["grads"][0].reshape(-1)
    with pytest.raises(CheckFailed):
        checks.judge("second derivatives", "square", probes, forged)
    forged = copy.deepcopy(observations)
    forged[0]["first"]["grads"][0] = forged[0]["first"]["grads"][0].reshape(-1)
    with pytest.raises(CheckFailed):
        checks.judge("second derivatives", "square", probes, forged)


def _vjp(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return g


def _second(f, x):
    (g,) = torch.autograd.grad(f(x), x, torch.ones_like(x), create_graph=True)
    (h,) = torch.autograd.grad(g, x, torch.ones_like(g))
    return h


@pytest.mark.parametrize("name, fn", [("check_vjp", _vjp), ("check_second_derivative_general", _second)])
def test_basics_judge_scores_only_one_observation_per_probe(name, fn):
    observations = basics.observe(name, fn)
    basics.judge(name, copy.deepcopy(observations))
    for forged in ([], observations[:-1], observations + observations[-1:]):
        with pytest.raises(CheckFailed) as failure:
            basics.judge(name, copy.deepcopy(forged))
        assert failure.value.finding.mistake == "malformed_observations"
    forged = copy.deepcopy(observations)
    forged[0]["result"]["value"] = forged[0]["result"]["value"].reshape(1, -1)
    with pytest.raises(CheckFailed):
        basics.judge(name, forged)
