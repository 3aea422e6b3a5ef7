"""The trusted side of the function checks of notebooks 1 and 4: ``judge(check, observations, **kwargs)``.

Runs in the trusted process and never runs student code: it rebuilds the same probes from the same keyword
arguments (``grader.spec.functions.CHECKS``, seeded generators), has each probe's observation judged by the check's
judge (``JUDGES``: ``grader.judge.autograd_basics`` for notebook 1, ``grader.judge.second_order`` for notebook 4)
and returns the one-line summary, or raises ``CheckFailed`` carrying a ``Finding``: a mistake id from
``grader.spec.functions.MISTAKES`` (a key of ``grader.spec.messages``), the probe, the first wrong element, expected
versus received, and a hint naming the notebook section to re-read. Observations may be forged or malformed:
anything unexpected fails the check (``malformed_observations``), never passes it.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

from grader.judge import autograd_basics as nb1, second_order as nb4
from grader.judge.function_fields import _Fail, _Malformed
from grader.spec.findings import CheckFailed, Finding
from grader.spec.messages import EN, say
from grader.spec.functions import (MISTAKES, SIGNATURES, FunctionCheck, Obs, _first_line, _text, _type_name,
                                   arguments, section, spec_of)

#: How each check of ``grader.spec.functions.CHECKS`` judges one probe: (check, probe, stale .grad or None,
#: observation) -> None, or a note for the ✓ line (a probe not counted, and why).
JUDGES: dict[str, Callable[[str, Any, torch.Tensor | None, Obs], str | None]] = {
    "check_vjp": nb1._JUDGE_VJP,
    "check_vjp_keeps_grad": nb1._JUDGE_VJP,
    "check_mean_gradient": nb1._judge_accumulate_probe,
    "check_mean_gradient_stale": nb1._judge_accumulate_probe,
    "check_mean_gradient_copy": nb1._judge_accumulate_probe,
    "check_second_derivative": nb1._JUDGE_SECOND,
    "check_second_derivative_general": nb1._JUDGE_SECOND,
    "check_hvp": nb4._judge_hvp_probe,
    "check_hvp_forward_over_reverse": nb4._judge_hvp_probe,
    "check_penalty_value": nb4._judge_penalty_probe,
    "check_penalty_gradient": nb4._judge_penalty_probe,
}


def _finding(check: str, exercise: str, failure: _Fail) -> Finding:
    mistake, fields = failure.mistake, dict(failure.fields)
    if mistake not in MISTAKES:  # a bug of ours: say so, never an unknown id in the class report
        mistake, fields = "grader_error", {"error_type": "KeyError", "error": f"unknown mistake id {mistake!r}"}
    signature = SIGNATURES.get(check) or SIGNATURES[exercise]
    fields.setdefault("function", signature)
    probe = say("probe_call", signature=signature, probe=failure.probe) if failure.probe else ""
    return Finding(exercise=exercise, check=check, mistake=mistake, probe=probe, where=failure.where,
                   expected=failure.expected, received=failure.received, section=section(exercise, mistake),
                   fields=fields, code=failure.code)


def _judge_all(check: str, spec: FunctionCheck, args: dict[str, Any], observations: Any) -> str:
    setups = spec.setup(args)
    if not isinstance(observations, (list, tuple)):
        raise _Fail("malformed_observations",
                    why=f"expected a list of observations, received a {_type_name(observations)}")
    if len(observations) != len(setups):
        raise _Fail("malformed_observations",
                    why=f"expected {len(setups)} observations (one per probe), received {len(observations)}")
    notes: list[str] = []
    for i, ((probe, stale), obs) in enumerate(zip(setups, observations, strict=True)):
        try:
            if not isinstance(obs, dict):
                raise _Malformed(f"observation {i} is a {_type_name(obs)}, not a dict")
            if obs.get("check") != check or type(obs.get("probe")) is not int or obs.get("probe") != i:
                raise _Malformed(f"observation {i} is not the observation of probe {i} of {check}")
            note = JUDGES[check](check, probe, stale, obs)
            if isinstance(note, str) and note not in notes:
                notes.append(note)  # a probe not counted, and why (notebook 4: an unfit Function of the student's)
        except _Fail as failure:
            failure.probe = probe.desc
            raise
        except _Malformed as bad:
            raise _Fail("malformed_observations", probe=probe.desc, why=_first_line(str(bad))) from None
        except Exception as exc:  # data nothing above anticipated (or a bug of ours): never a pass
            raise _Fail("malformed_observations", probe=probe.desc,
                        why=f"{_type_name(exc)}: {_first_line(_text(exc))}") from None
    key = f"summary_{check}"  # (the ✓ line, in the notebook's language; spec.summary is its English)
    summary = say(key, n=len(setups)) if key in EN else spec.summary.format(n=len(setups))
    return "; ".join([summary, *notes])


def judge(check: str, observations: list[Obs], **kwargs: Any) -> str:
    """Trusted side: judge ``observations`` of ``check`` against references rebuilt here from ``kwargs``.

    Returns the one-line summary printed after ``✓ `` on success; raises ``CheckFailed`` (an
    ``AssertionError`` whose ``.finding.mistake`` is a key of ``MISTAKES``) otherwise. Never runs student
    code and never trusts the observations: anything malformed fails the check.
    """
    spec = spec_of(check)
    args = arguments(check, spec, kwargs)
    finding: Finding | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            summary = _judge_all(check, spec, args, observations)
        except _Fail as failure:
            finding = _finding(check, spec.exercise, failure)
        except Exception as exc:  # a bug of ours: a precise message, never a pass
            finding = _finding(check, spec.exercise, _Fail("grader_error", error_type=_type_name(exc),
                                                           error=_first_line(_text(exc))))
    if finding is not None:
        raise CheckFailed(finding)  # raised outside the handlers: no chained context in the traceback
    return summary
