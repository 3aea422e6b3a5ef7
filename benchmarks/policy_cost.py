"""The policy's cost per notebook: the course's four solution notebooks, every answer and playground cell edited
(so that each runs under grader.sandboxed.policy), graded in one warm sandboxed worker with the policy on and off,
alternately. Prints the median sandbox seconds per notebook for each, and the difference.

    .venv/bin/python benchmarks/policy_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from grader.judge import runner
from grader.isolation.pool import Pool

ROOT = Path(__file__).resolve().parent.parent


def edited(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("locked"):
            cell.source += "\n# edited"  # no longer the instructor's: compiled under the policy
    return nb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    notebooks = sorted((ROOT / "solutions" / "autograd").glob("*.ipynb"))
    prepared = [(p.name, edited(p), runner.instructor_cells(nbformat.read(str(p), as_version=4))) for p in notebooks]
    seconds: dict[bool, list[float]] = {True: [], False: []}
    with Pool(hide=[Path(tempfile.mkdtemp())], workers=1) as pool:
        for round_ in range(args.rounds + 1):
            for policy in (True, False) if round_ % 2 else (False, True):
                started = time.perf_counter()
                for name, nb, trusted in prepared:
                    result = runner.grade_cells(name, runner.cells_to_run(nb, trusted, policy=policy), "solutions", 120,
                                                pool=pool)
                    assert result.score == result.max_score, (name, policy, result.problem)
                if round_:  # the first round warms the worker up
                    seconds[policy].append((time.perf_counter() - started) / len(prepared))
                print(f"round {round_} policy {'on ' if policy else 'off'}: "
                      f"{(time.perf_counter() - started) / len(prepared):.3f} s per notebook", flush=True)
    on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(f"median per notebook: policy on {on:.3f} s, off {off:.3f} s, cost {on - off:+.3f} s ({(on / off - 1):+.1%})")


if __name__ == "__main__":
    main()
