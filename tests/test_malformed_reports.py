"""A malformed report cannot hurt the class (issue 29).

A report line the receiver kept is signed by the observer, but signed is not well formed: ``{"event": "done",
"index": [1]}`` raised TypeError in the trusted process, nbgrader removed that student's submission and
``make autograde`` exited 1. Every line is now checked against its event's schema
(``grader.boundary.reports``), and any error while reading or judging one notebook makes that notebook alone
"not graded: grader error" (its test cells score 0 with the reason), never an exception: its neighbours are graded.
"""

from __future__ import annotations

import json

import pytest

from grader.boundary import reports
from grader.judge import runner

CALL = runner.testcells.CheckCall("checks", "forward", "Square.apply", {"exercise": "square"})


def _cells() -> list[runner.Cell]:
    return [runner.Cell(0, "x = 1"), runner.Cell(1, "", "square-forward", 2.0, True, [CALL])]


def _outcome():
    from grader.isolation import sandbox

    return sandbox.Outcome(0, "", 0.0, "", sandbox.Limits())


GOOD = [
    {"event": "start", "index": 0},
    {"event": "done", "index": 0, "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi\n"}], "error": ""},
    {"event": "start", "index": 1},
    {"event": "observed", "index": 1, "calls": [{"error": "NameError: name 'Square' is not defined"}], "restored": []},
]

DEEP = "[" * 200_000 + "]" * 200_000

# name -> the lines the trusted side receives (signed by the observer, the signature already checked and removed)
MALFORMED: dict[str, list[str]] = {
    "done-index-a-list": [json.dumps({"event": "done", "index": [1], "outputs": [], "error": ""})],
    "observed-index-a-list": [json.dumps({"event": "observed", "index": [1], "calls": [], "restored": []})],
    "start-index-a-dict": [json.dumps({"event": "start", "index": {"a": 1}})],
    "flag-index-a-list": [json.dumps({"event": "flag", "index": [0], "what": "x"})],
    "index-a-string": [json.dumps({"event": "start", "index": "1"})],
    "index-a-bool": [json.dumps({"event": "start", "index": True})],
    "index-a-float": [json.dumps({"event": "start", "index": 1.0})],
    "index-huge": [json.dumps({"event": "start", "index": 10**30})],
    "index-negative": [json.dumps({"event": "start", "index": -1})],
    "index-not-in-the-plan": [json.dumps({"event": "start", "index": 7})],
    "index-5000-digits": ['{"event": "start", "index": ' + "9" * 5000 + "}"],
    "index-infinite": ['{"event": "start", "index": 1e999}'],
    "index-missing": [json.dumps({"event": "start"})],
    "event-missing": [json.dumps({"index": 1})],
    "event-unknown": [json.dumps({"event": "judged", "index": 1, "score": 6})],
    "event-a-list": [json.dumps({"event": ["done"], "index": 1})],
    "outputs-a-string": [json.dumps({"event": "done", "index": 0, "outputs": "<b>6/6</b>", "error": ""})],
    "outputs-of-numbers": [json.dumps({"event": "done", "index": 0, "outputs": [1, 2], "error": ""})],
    "cell-error-missing-its-index": [json.dumps({"event": "done", "error": "NameError"})],
    "error-a-list": [json.dumps({"event": "done", "index": 0, "outputs": [], "error": ["TypeError"]})],
    "line-a-string": [json.dumps({"event": "done", "index": 0, "outputs": [], "error": "E", "line": "3"})],
    "calls-a-dict": [json.dumps({"event": "observed", "index": 1, "calls": {"0": {}}, "restored": []})],
    "calls-missing": [json.dumps({"event": "observed", "index": 1, "restored": []})],
    "call-a-string": [json.dumps({"event": "observed", "index": 1, "calls": ["ok"], "restored": []})],
    "call-with-both": [json.dumps({"event": "observed", "index": 1, "restored": [],
                                   "calls": [{"observations": [], "error": "x"}]})],
    "observations-a-string": [json.dumps({"event": "observed", "index": 1, "calls": [{"observations": "all good"}],
                                          "restored": []})],
    "observations-of-lists": [json.dumps({"event": "observed", "index": 1, "calls": [{"observations": [[1], [2]]}],
                                          "restored": []})],
    "restored-a-string": [json.dumps({"event": "observed", "index": 1, "calls": [], "restored": "torch.exp"})],
    "restored-of-dicts": [json.dumps({"event": "observed", "index": 1, "calls": [], "restored": [{}]})],
    "flagged-forged": [json.dumps({"event": "observed", "index": 1, "calls": [], "restored": [], "flagged": ""})],
    "what-a-number": [json.dumps({"event": "flag", "index": 0, "what": 42})],
    "too-many-outputs": [json.dumps({"event": "done", "index": 0, "outputs": [{}] * 100_001, "error": ""})],
    "nested-junk": [json.dumps({"event": "done", "index": 0, "outputs": [{"a": [[[{"b": None}]]]}], "error": "",
                                "code": {"nested": [1, [2, [3]]]}})],
    "deeply-nested": ['{"event": "done", "index": 0, "outputs": ' + DEEP + ', "error": ""}'],
    "not-json": ["this is not JSON {"],
    "not-an-object": ["[1, 2, 3]", "null"],
    "a-bare-number": ["12345"],
    "bad-utf-8": ['{"event": "start", "index": 0}\udcff'],
}


def _data(lines: list[str], before: list[dict] = GOOD[:2], after: list[dict] = GOOD[2:]) -> bytes:
    text = "".join(json.dumps(e) + "\n" for e in before) + "".join(line + "\n" for line in lines)
    text += "".join(json.dumps(e) + "\n" for e in after)
    return text.encode("utf-8", errors="surrogateescape")


def test_well_formed_reports_are_read_as_before():
    reported, problem, restored, flags = runner._read_results(_data([]), {0: 0, 1: 1}, _cells(), _outcome())
    assert runner.GRADER_ERROR not in reported and problem == "" and flags == []
    assert reported[1]["calls"] == [{"error": "NameError: name 'Square' is not defined"}]
    assert reported[("outputs", 0)][0]["text"] == "hi\n"
    for entry in GOOD:
        assert reports.check(dict(entry)) == entry


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_signed_report_raises_nothing_and_sets_the_notebook_aside(name):
    reported, _, _, _ = runner._read_results(_data(MALFORMED[name]), {0: 0, 1: 1}, _cells(), _outcome())
    why = reported.get(runner.GRADER_ERROR)
    assert isinstance(why, str) and "could not be read" in why and "report line 3" in why, (name, why)
    assert set(reported) == {runner.GRADER_ERROR}, "nothing read before the bad line is judged either"
    assert len(why) < 600 and "\n" not in why


@pytest.mark.parametrize("name", ["done-index-a-list", "observations-a-string", "index-5000-digits", "deeply-nested",
                                  "event-unknown", "call-with-both"])
def test_a_malformed_report_makes_its_notebook_not_graded_with_the_reason(monkeypatch, name):
    data = _data(MALFORMED[name])
    monkeypatch.setattr(runner, "_execute",
                        lambda cells, *a, **k: runner._read_results(data, {0: 0, 1: 1}, cells, _outcome()))
    result = runner.grade_cells("alice/autograd/02_custom_function", _cells(), "tests")
    (cell,) = result.cells
    assert (cell.status, cell.points, cell.max_points) == ("not graded", 0.0, 2.0)
    assert cell.message.startswith("not graded: grader error (the notebook's reports could not be read")
    assert "not a verdict on your code" in cell.message and "will grade the notebook again" in cell.message
    assert cell.findings[0]["mistake"] == "not_graded_grader_error"
    assert result.problem_for_instructor.startswith("not graded: grader error") and result.score == 0


def test_the_reason_is_said_in_the_notebooks_language(monkeypatch):
    data = _data(MALFORMED["done-index-a-list"])
    monkeypatch.setattr(runner, "_execute",
                        lambda cells, *a, **k: runner._read_results(data, {0: 0, 1: 1}, cells, _outcome()))
    result = runner.grade_cells("nb", _cells(), "tests", language="zh")
    assert result.cells[0].message.startswith("未评分：评分程序出错") and "'index'" in result.cells[0].message
    assert result.problem_for_instructor.startswith("not graded: grader error"), "the instructor's log stays English"


def test_anything_that_fails_while_reading_is_a_grader_error_never_an_exception(monkeypatch):
    def broken(line):
        raise MemoryError("no room")

    monkeypatch.setattr(runner.reports, "check", broken)
    reported, _, _, _ = runner._read_results(_data([]), {0: 0, 1: 1}, _cells(), _outcome())
    assert "MemoryError: no room" in reported[runner.GRADER_ERROR]


def test_flags_before_a_malformed_report_still_reach_the_instructor(monkeypatch):
    flag = json.dumps({"event": "flag", "index": 0, "what": "gc.get_referrers"})
    data = _data([flag, *MALFORMED["done-index-a-list"]])
    monkeypatch.setattr(runner, "_execute",
                        lambda cells, *a, **k: runner._read_results(data, {0: 0, 1: 1}, cells, _outcome()))
    result = runner.grade_cells("nb", _cells(), "tests")
    assert result.cells[0].status == "not graded"
    assert result.flags == [{"cell": "cell 1", "what": "gc.get_referrers"}]


# --- the judge side: a bug of ours while judging one check --------------------------------------------------


def _observed_answer(monkeypatch) -> None:
    reported = {1: {"event": "observed", "index": 1, "calls": [{"observations": []}], "restored": []}}
    monkeypatch.setattr(runner, "_execute", lambda *a, **k: (reported, "", [], []))


def test_a_judge_that_raises_makes_the_notebook_not_graded_never_an_exception(monkeypatch):
    from grader.judge import custom_functions

    def buggy(*args, **kwargs):
        raise ZeroDivisionError("a bug of the judge")

    _observed_answer(monkeypatch)
    monkeypatch.setattr(custom_functions, "judge", buggy)
    result = runner.grade_cells("nb", _cells(), "tests")
    (cell,) = result.cells
    assert cell.status == "not graded" and cell.points == 0
    assert "judging `Square.apply` (forward) failed (ZeroDivisionError: a bug of the judge)" in cell.message


def test_an_error_anywhere_in_judging_a_notebook_is_a_grader_error(monkeypatch):
    def buggy(*args, **kwargs):
        raise KeyError("calls")

    _observed_answer(monkeypatch)
    monkeypatch.setattr(runner, "_judge_cell", buggy)
    result = runner.grade_cells("nb", _cells(), "tests")
    assert [c.status for c in result.cells] == ["not graded"]
    assert "judging failed (KeyError: 'calls')" in result.cells[0].message


# --- end to end: nbgrader autograde on a class where one notebook's reports are malformed --------------------
# tests/test_ungradable.py, test_a_malformed_report_costs_only_its_notebook_and_autograde_succeeds: the student
# m-malformed is graded in the same nbgrader run as the class of unreadable submissions (one run for both).


def test_the_class_report_lists_a_grader_error_apart_from_the_mistakes(tmp_path):
    from grader.classroom import report

    result = runner.not_graded(runner.NotebookResult("m/autograd/01_autograd_basics", "the gradebook"),
                               [("vjp-a", 1.0), ("vjp-b", 2.0)], "the notebook's reports could not be read: x")
    folder = tmp_path / "autograd" / "m-malformed"
    folder.mkdir(parents=True)
    (folder / "01_autograd_basics.json").write_text(json.dumps(result.as_dict()))
    (diagnosis,) = report.diagnoses_from_results(tmp_path, "autograd")
    assert (diagnosis.exercise, diagnosis.kind, diagnosis.students) == ("01_autograd_basics", "grader_error",
                                                                        {"m-malformed"})
    section = report._apart_section([diagnosis])
    assert 'id="grader-errors"' in section and "m-malformed" in section and "--force" in section
