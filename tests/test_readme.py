"""The examples of the README and docs/*.md are what the commands really print (issue 21, problem 8).

- the demo's table: the README's header and rows are lines `make demo` prints (its columns, its totals), and the
  prose around it counts the same students and exercises; "about N lines" is the demo's output within a few lines;
- `make postgres` prints the stop command docs/cluster.md's example uses (`make postgres-stop`);
- a number of tests, if the README or a page of docs/ gives one, is what `pytest --collect-only -q` collects.

That every `make X` they name is a target of the Makefile, and every link leads somewhere: tests/test_docs.py.

The demo is run once for the session (conftest.py's fixture `demo_run`: `python -m grader.classroom.course demo` in a temporary
folder).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.classroom import course

REPO = course.REPO
README = (REPO / "README.md").read_text(encoding="utf-8")
# The README and every page of docs/, for what may be said on any of them.
DOCS = "\n".join(page.read_text(encoding="utf-8")
                 for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def code_spans(text: str) -> list[str]:
    """A page's code: each fenced block, and each inline `code` span outside them."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return blocks + re.findall(r"`([^`\n]+)`", prose)


def readme_demo_table() -> list[str]:
    """The lines of the README's example of the demo's table (the code block starting with 'student ')."""
    block = next(b for b in re.findall(r"^```[^\n]*\n(.*?)^```", README, flags=re.M | re.S) if b.startswith("student "))
    return block.rstrip("\n").split("\n")


# --- cheap: pytest and make postgres -----------------------------------------------------------------------------


def test_a_test_count_in_the_docs_is_what_pytest_collects():
    stated = {int(n.replace(",", "")) for n in re.findall(r"\b(\d[\d,]*) tests\b", DOCS)}
    if not stated:  # the docs say how to count them instead (docs/design.md): nothing to go stale
        assert "--collect-only" in DOCS
        return
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    found = re.search(r"^(\d+) tests? collected", done.stdout, flags=re.M)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    assert stated == {int(found.group(1))}, f"the docs say {stated} tests; pytest collects {found.group(1)}"


def test_make_postgres_prints_the_stop_command_the_docs_name():
    from grader.classroom import postgres

    example = next(b for b in code_spans(DOCS) if "make postgres " in b or b.startswith("make postgres"))
    stop = re.search(r"^(make postgres-stop)\b", example, flags=re.M)
    assert stop, f"docs/cluster.md's example does not stop the server with make postgres-stop:\n{example}"
    try:
        postgres.binaries()
    except postgres.Unavailable as why:  # (make install installs Debian's postgresql)
        pytest.fail(f"PostgreSQL is not installed, so `make postgres` cannot be checked: {why}")
    folder = Path(tempfile.mkdtemp(prefix="readme-postgres-"))
    os.chmod(folder, 0o755)  # the server's user must reach its folder inside
    server = folder / "server"
    try:
        started = subprocess.run(["make", "-s", "postgres", f"POSTGRES_DIR={server}"], cwd=REPO,
                                 capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
        said = started.stdout + started.stderr
        assert started.returncode == 0, said
        printed = re.search(r"stop it with: (.+)$", said, flags=re.M)
        assert printed and printed.group(1).split(" POSTGRES_DIR=")[0] == stop.group(1), said
        stopped = subprocess.run(printed.group(1).split(), cwd=REPO, capture_output=True, text=True, timeout=300)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    finally:
        subprocess.run(["make", "-s", "postgres-stop", f"POSTGRES_DIR={server}"], cwd=REPO, capture_output=True,
                       timeout=300)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


# --- what the demo prints -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_readmes_demo_table_is_what_the_demo_prints(demo_run):
    _, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    printed = out.rstrip("\n").split("\n")
    shown = readme_demo_table()
    header = next(line for line in printed if line.startswith("student "))
    assert shown[0] == header, f"README: {shown[0]!r}\ndemo:   {header!r}"
    for line in shown[1:]:
        if line.strip() != "...":
            assert line in printed, f"the README's row {line!r} is not printed by the demo:\n{out}"
    after = printed[printed.index(header) + 2:]  # (the header, then a line of dashes, then a row per student)
    rows = after[: after.index("")] if "" in after else after
    exercises = len(header.split()) - 3  # (student lang ... total)
    top = re.search(r"(\d+)/\1\s*$", next(line for line in rows if line.startswith("ada ")))
    counts = re.search(r"(\d+) example students × (\d+) exercises", README)
    assert counts, "the README says how many students and exercises the demo's table has"
    assert (int(counts.group(1)), int(counts.group(2))) == (len(rows), exercises), (counts.group(0), rows)
    chinese = re.search(r"(\d+) of them in Chinese", README)
    assert chinese, "the README says how many of the demo's students hand in the Chinese notebooks"
    assert int(chinese.group(1)) == sum(line.split()[1] == "zh" for line in rows), (chinese.group(0), rows)
    assert any(line.split()[1] == "zh" for line in shown[2:] if line.strip() != "..."), \
        "the README's table shows a Chinese-speaking student's row"
    assert top and any(line.endswith(f"/{top.group(1)}") for line in shown[2:]), \
        "the README's table has the demo's full marks"


@pytest.mark.slow
def test_the_readmes_line_count_of_the_demo_is_what_it_prints(demo_run):
    _, returncode, out = demo_run
    assert returncode == 0, out[-4000:]
    stated = re.search(r"about (\d+) lines in all", README)
    assert stated, "the README says how long the demo's output is"
    lines = len(out.rstrip("\n").split("\n"))
    assert abs(lines - int(stated.group(1))) <= 4, f"README: about {stated.group(1)} lines; the demo prints {lines}"
