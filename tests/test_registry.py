"""One registry of checks (grader/spec/registry.py): every table that names checks knows exactly the registry's.

The observers (sandboxed side), the judges (trusted side), the facades a notebook imports (``grader.checks``,
``grader.basics``), the test-cell parser and the policy's allowed names must all name the same checks: a check known
to one and not another is a test cell that cannot be graded, a self-check a student cannot call, or a check graded
by nothing. (On 61376af, before the registry, this file fails at ``from grader.spec import registry``.)
"""

from __future__ import annotations

import inspect

import pytest

from grader import basics, checks
from grader.judge import custom_functions, testcells
from grader.sandboxed import observe, policy
from grader.spec import registry

CUSTOM = set(registry.names(registry.CUSTOM_FUNCTIONS))
BASICS = set(registry.names(registry.BASICS))


def test_the_registry_names_each_check_once_and_every_engine_has_checks():
    names = [c.name for c in registry.CHECKS]
    publics = [(c.facade, c.public) for c in registry.CHECKS]
    assert len(set(names)) == len(names) and len(set(publics)) == len(publics)
    assert CUSTOM and BASICS and not CUSTOM & BASICS
    assert set(registry.FACADES) == {"checks", "basics"}


def test_the_observers_and_judges_of_custom_functions_are_the_registrys():
    assert set(observe.OBSERVERS) == CUSTOM, "grader.sandboxed.observe.OBSERVERS differs from the registry"
    assert set(custom_functions.JUDGES) == CUSTOM, "grader.judge.custom_functions.JUDGES differs from the registry"
    assert checks.JUDGES is custom_functions.JUDGES  # the facade's name for it, not a copy


def test_the_checks_that_run_gradcheck_are_those_whose_observer_can():
    can = {name for name, observer in observe.OBSERVERS.items() if "gradcheck" in inspect.signature(observer).parameters}
    assert can == registry.GRADCHECKED and observe.GRADCHECKED == registry.GRADCHECKED
    assert [registry.gradchecked("first derivatives", k) for k in range(3)] == [True, False, False]


def test_the_basics_engine_knows_exactly_the_registrys_checks_each_for_its_exercise():
    assert set(basics.CHECKS) == BASICS, "grader.basics.CHECKS differs from the registry"
    for check in registry.CHECKS:
        if check.engine == registry.BASICS:
            assert basics.CHECKS[check.name].exercise == check.exercise, check.name


def test_the_facades_offer_exactly_the_registrys_public_names():
    assert set(checks.__all__) == registry.public_names("checks")
    assert {n for n in basics.__all__ if n.startswith("check_")} == set(registry.CHECK_FUNCTIONS["basics"])
    for check in registry.CHECKS:
        facade = {"checks": checks, "basics": basics}[check.facade]
        assert callable(getattr(facade, check.public, None)), f"grader.{check.facade}.{check.public} is missing"


@pytest.mark.parametrize("check", [c for c in registry.CHECKS if c.facade == "checks"], ids=lambda c: c.public)
def test_each_public_custom_function_check_runs_the_registrys_check(check, monkeypatch):
    ran = []
    monkeypatch.setattr(checks, "run_check", lambda name, exercise, fn, shapes, seed: ran.append((name, exercise)))
    getattr(checks, check.public)("square", print)
    assert ran == [(check.name, "square")]


@pytest.mark.parametrize("check", registry.CHECKS, ids=lambda c: c.public)
def test_the_test_cell_parser_reads_each_check_under_its_registry_name(check):
    args = '"square", Square.apply' if check.takes_exercise else "f"
    (call,) = testcells.parse(f"from grader import {check.facade}\n{check.facade}.{check.public}({args}, seed=3)", "t")
    assert (call.module, call.check) == (check.facade, check.name)
    assert call.kwargs.get("exercise") == ("square" if check.takes_exercise else None)


@pytest.mark.parametrize("source", ['checks.run_check("forward", "square", Square.apply, None, 0)', "basics.observe(f)",
                                    'checks.skip_if_unfinished("square")', "checks.judge(f)"])
def test_the_test_cell_parser_refuses_what_is_not_a_check_of_the_registry(source):
    with pytest.raises(testcells.UnsupportedTestCell):
        testcells.parse(source, "t")


def test_the_policy_lets_a_notebook_use_exactly_the_registrys_public_names():
    for facade in registry.FACADES:
        assert policy.MODULE_ALLOWED_ONLY[f"grader.{facade}"] == registry.public_names(facade), facade
