"""Attacks on the grading sandbox itself (issue 7), run the way the grader runs them: as root, through
``grader.isolation.pool`` (a pool of ONE worker, so that who follows whom is certain) and ``grader.isolation.sandbox``.

Each test states what must hold once the sandbox is fixed; on the code they were written against, every one
of them fails because the attack works (what each did is in its docstring). The end-to-end versions (whole
classes through ``nbgrader autograde``) are cases in tests/adversarial/ (``pid1-*``, ``forgery-*``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import nbformat
import pytest

from grader.classroom import course
from grader.judge import runner
from grader.isolation import sandbox

AVAILABLE, WHY = sandbox.available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")]

CASES = Path(__file__).resolve().parent / "adversarial"
RELEASE = course.REPO / "notebooks" / course.ASSIGNMENT
SOLUTIONS = course.REPO / "solutions" / course.ASSIGNMENT
FULL = {"square": 6.0, "exp": 6.0, "sinh": 6.0, "cube": 6.0}  # notebook 03, the instructor's answers


# --- helpers ---------------------------------------------------------------------------------------------


def _report_code(body: str) -> str:
    """A code cell that runs ``body`` (which fills the dict ``info``) and hands ``info`` back as the cell's
    error, which the child reports in its "done" event (the pool returns results unjudged)."""
    return "import json as _j, os as _o\ninfo = {}\ntry:\n" + textwrap.indent(textwrap.dedent(body), "    ") + (
        "\nexcept BaseException as _e:\n    info['crashed'] = repr(_e)\n"
        "raise RuntimeError('REPORT' + _j.dumps(info, default=str))\n")


def _reports(data: bytes) -> list[dict[str, Any]]:
    found = []
    for line in data.decode(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        error = str(entry.get("error", "")).removeprefix("RuntimeError: ") if isinstance(entry, dict) else ""
        if error.startswith("REPORT"):
            found.append(json.loads(error[len("REPORT"):]))
    return found


# One pool of ONE worker for the whole module, as a grading run keeps one pool for a whole class: every test's
# notebooks run on the worker the notebooks of the tests before it left (or on the fresh one the pool put in its
# place), so each test also shows that nothing an earlier attack did costs a later notebook. (A pool per test
# spent 2 s of CPU starting its worker: a minute of the suite.)
_SHARED: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _one_worker_pool():
    from grader.isolation.pool import Pool

    hidden = Path(tempfile.mkdtemp(prefix="attack-hidden-"))  # the pool hides it: submissions are built there
    try:
        with Pool(hide=[hidden], workers=1) as pool:
            _SHARED.update(pool=pool, hidden=hidden)
            yield pool
    finally:
        _SHARED.clear()
        shutil.rmtree(hidden, ignore_errors=True)


def _one_cell_notebooks(sources: list[str], timeout: float) -> list[tuple[bytes, Any]]:
    """Each source as a one-cell notebook, in order, on the module's worker: [(what it reported, outcome)]."""
    pool = _SHARED["pool"]
    return [pool.run_plan([{"kind": "code", "index": 0, "source": source, "restricted": False}], timeout)
            for source in sources]


def _run_in_one_worker(sources: list[str], timeout: float = 20) -> list[tuple[list[dict[str, Any]], Any]]:
    """Each source as a one-cell notebook, in order, in the pool of one worker: [(reports, outcome)]."""
    return [(_reports(data), outcome) for data, outcome in _one_cell_notebooks(sources, timeout)]


def _answers(case_file: str) -> tuple[dict[str, str], tuple[str, ...]]:
    from test_adversarial import _solution_cells, read_case

    case = read_case(CASES / case_file)
    answers = dict(_solution_cells()) if case.others == "solution" else {}
    answers.update(case.cells)
    return answers, case.notebooks


def _grade_in_one_worker(students: list[tuple[str, dict[str, str], str]],
                         timeout: float = 20) -> list[dict[str, Any]]:
    """Grade (name, answer cells, notebook) one after the other in a pool of ONE worker, as nbgrader's plugin
    does (``runner.grade_cells`` with the pool); [{exercise: points}, problem] per notebook."""
    pool, hidden = _SHARED["pool"], _SHARED["hidden"]
    folder = hidden / uuid.uuid4().hex[:8]
    results = []
    for name, answers, notebook in students:
        built = folder / name
        course.build_submission(RELEASE, answers, built)
        submitted = nbformat.read(str(built / notebook), as_version=4)
        instructor = nbformat.read(str(SOLUTIONS / notebook), as_version=4)
        cells = runner.cells_to_run(submitted, runner.instructor_cells(instructor), policy=False)  # the layers beneath the policy
        result = runner.grade_cells(f"{name}/{notebook}", cells, "the gradebook", timeout, False, [hidden], pool)
        data = result.as_dict()
        results.append({"student": name, "scores": {e: v["score"] for e, v in data["exercises"].items()},
                        "problem": data["problem"], "flags": data.get("flags")})
    return results


def _honest(name: str, marker: str = "", extra: str = "") -> tuple[str, dict[str, str], str]:
    """The instructor's answers to notebook 03; ``marker`` as a comment and ``extra`` code after square's answer."""
    from test_adversarial import _solution_cells

    answers = dict(_solution_cells())
    if marker:
        answers["square"] += f"\n# {marker}\n"
    if extra:
        answers["square"] += "\n" + textwrap.dedent(extra)
    return name, answers, "03_double_backward.ipynb"


def _attacker(case_file: str, notebook: str = "03_double_backward.ipynb") -> tuple[str, dict[str, str], str]:
    answers, notebooks = _answers(case_file)
    assert notebook in notebooks, f"{case_file} does not hand in {notebook}"
    return Path(case_file).stem, answers, notebook


# --- 1. pid 1 (bubblewrap's init) -------------------------------------------------------------------------


_SCAN_FOR_CHECKS = r"""
import gc, re
pattern = re.compile(rb"Q7x[0-9]{9}xQ7")  # the later check's marker; this text does not match itself
info["objects"] = sum(1 for o in gc.get_objects() if isinstance(o, (dict, list)) and pattern.search(repr(o).encode()))
hits = 0
import ctypes  # (the process is not dumpable: /proc/self/mem is closed to it, its own pointers are not)
with open("/proc/self/maps") as maps:
    for row in maps:
        fields = row.split()
        start, end = (int(a, 16) for a in fields[0].split("-"))
        if fields[1].startswith("rw") and end - start <= 1 << 29:
            hits += len(pattern.findall(ctypes.string_at(start, end - start)))
info["memory"] = hits
"""


def test_the_childs_memory_holds_no_check_before_it_runs():
    """The checks are the trusted side's: the notebook's process gets each one when its turn comes, after the cells
    before it ran (issue 29: an escape printed every hidden check call, shapes and seeds, into the feedback). A cell
    running as unrestricted code (what an escape from the policy gains) searches its own process, its objects and
    every writable page, for the call of the check that comes after it. Old code: the whole plan was there."""
    marker = "Q7x%09dxQ7" % (uuid.uuid4().int % 10**9)
    plan = [{"kind": "code", "index": 0, "source": _report_code(_SCAN_FOR_CHECKS), "restricted": False},
            {"kind": "test", "index": 1, "grade_id": "square-first-order",
             "calls": [{"module": "grader.checks", "entry": "check_" + marker, "check": "first_order",
                        "kwargs": {"exercise": "square", "seed": 3}}]}]
    data, outcome = _SHARED["pool"].run_plan(plan, 60)
    (found,) = _reports(data)
    assert "crashed" not in found, found
    assert found == {"objects": 0, "memory": 0}, f"the child held a later check's call before it ran: {found}"
    assert any('"observed"' in line for line in data.decode().splitlines()), "the check did not run after the cell"


def test_pid1_stdout_forged_answer_earns_nothing_and_costs_the_next_notebook_nothing():
    """The notebook writes a complete forged answer (its own task id, forged observations) into /proc/1/fd/1:
    bwrap's init holds the worker's stdout pipe. Old code: the attacker got square=6 (its backward has the wrong
    sign: 2 at most) and the next notebook on the worker read the real, stale answer: "the grading worker died",
    every point lost."""
    attacker, honest = _grade_in_one_worker([_attacker("pid1-stdout-forgery.py"), _honest("honest-after")])
    wrong = []
    if attacker["scores"]["square"] > 2:
        wrong.append(f"the forged answer was taken: {attacker}")
    if honest["scores"] != FULL or honest["problem"]:
        wrong.append(f"the honest student graded next on that worker lost points: {honest}")
    assert not wrong, "\n".join(wrong)


def test_pid1_takeover_cannot_read_the_next_students_task():
    """The notebook compiles a ptrace injector with the sandbox's gcc and makes bwrap's init (pid 1: same uid,
    dumpable, spared by the worker's cleanup) execve a relay of its own, which replaces the worker and keeps a
    copy of every later task in /dev/shm. Old code: the attacker got square=6, pid 1 was taken over, and the
    next student's task (its code, with a marker, and the hidden test calls) was readable by a later notebook."""
    marker = f"victim-secret-{uuid.uuid4().hex[:8]}"
    look = _honest("looks-for-the-victim", extra=f"""
import os as _o
_stolen = []
def _writable(_path):
    try:
        return not _o.statvfs(_path).f_flag & _o.ST_RDONLY
    except OSError:
        return True  # looked into, to be sure
for _top, _recurse in (("/dev", True), ("/tmp", True), ("/", False)):
    for _folder, _dirs, _files in _o.walk(_top):
        # only where a notebook can write (a copy of a task cannot be anywhere else): not into the read-only
        # folders bound inside, such as a venv under /tmp, whose gigabytes of files took longer than the time limit
        _dirs[:] = [_d for _d in _dirs if _recurse and _writable(_o.path.join(_folder, _d))]
        for _name in _files:
            _path = _o.path.join(_folder, _name)
            try:
                if _o.path.isfile(_path) and _o.path.getsize(_path) < 2**24 and {marker!r} in open(_path, errors="replace").read():
                    _stolen.append(_path)
            except OSError:
                pass
if _stolen:  # the leak costs this notebook its square points: the test sees it in the scores
    Square = None
""")
    attacker, victim, looker = _grade_in_one_worker([_attacker("pid1-ptrace-takeover.py"), _honest("victim", marker),
                                                     look])
    wrong = []
    if attacker["scores"]["square"] > 2:
        wrong.append(f"the attacker's forged answer was taken: {attacker}")
    if victim["scores"] != FULL or victim["problem"]:
        wrong.append(f"the victim lost points: {victim}")
    if looker["scores"] != FULL:
        wrong.append(f"a later notebook read the victim's task (stolen through pid 1): {looker}")
    assert not wrong, "\n".join(wrong)


def test_pid1_cannot_be_traced_or_written_through_its_descriptors():
    """The ways in used above, directly: pid 1's descriptors, its memory, ptrace, gcc."""
    body = """
    import ctypes, shutil
    for path, flags in (("/proc/1/fd/1", _o.O_WRONLY), ("/proc/1/fd/0", _o.O_RDONLY), ("/proc/1/mem", _o.O_RDONLY)):
        try:
            _o.close(_o.open(path, flags)); info[path] = "opened"
        except OSError as e:
            info[path] = repr(e)
    libc = ctypes.CDLL(None, use_errno=True)
    info["ptrace-seize-pid1"] = libc.ptrace(0x4206, 1, 0, 0) == 0
    info["gcc"] = shutil.which("gcc")
    """
    ((report,), _), = _run_in_one_worker([_report_code(body)])
    assert report.get("/proc/1/fd/1") != "opened", report
    assert report.get("/proc/1/fd/0") != "opened", report
    assert report.get("/proc/1/mem") != "opened", report
    assert report.get("ptrace-seize-pid1") is False, report


# --- 2. host root's file permissions ---------------------------------------------------------------------

_ROOT_ONLY_PROBE = """
try:
    with open({secret!r}) as f:
        info["read root-only file"] = f.read()
except OSError as e:
    info["read root-only file"] = False
info["access /etc/shadow"] = _o.access("/etc/shadow", _o.R_OK)
try:
    _o.close(_o.open("/proc/sys/kernel/core_pattern", _o.O_WRONLY))  # opened, never written
    info["open core_pattern for writing"] = True
except OSError:
    info["open core_pattern for writing"] = False
"""


@pytest.fixture
def root_only_file():
    """A root-owned, mode 0600 file on a folder the sandbox shows (the venv), removed afterwards."""
    path = Path(os.path.realpath(sys.prefix)) / f".attack-root-only-{uuid.uuid4().hex}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, b"root-only secret")
        os.close(fd)
        os.chown(path, 0, 0)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _assert_not_host_root(report: dict[str, Any]) -> None:
    assert report.get("read root-only file") is False, f"the sandbox read a root-only (0600) file: {report}"
    assert report.get("access /etc/shadow") is False, f"/etc/shadow is readable inside: {report}"
    assert report.get("open core_pattern for writing") is False, f"/proc/sys is writable inside: {report}"


@pytest.mark.skipif(os.geteuid() != 0, reason="about root's permissions: the grader runs as root here")
def test_pool_worker_code_has_no_root_file_permissions(root_only_file):
    """Old code: all three possible (the sandbox's uid 65534 is mapped to host root)."""
    ((report,), _), = _run_in_one_worker([_report_code(_ROOT_ONLY_PROBE.format(secret=str(root_only_file)))])
    _assert_not_host_root(report)


@pytest.mark.skipif(os.geteuid() != 0, reason="about root's permissions: the grader runs as root here")
def test_sandbox_run_has_no_root_file_permissions(root_only_file):
    """The same through ``grader.isolation.sandbox.run_sandboxed`` (the one-shot sandbox)."""
    program = Path(tempfile.mkdtemp(prefix="attack-scratch-")) / "probe.py"  # reachable by the sandbox's user
    program.write_text("import json, os as _o\ninfo = {}\n" + _ROOT_ONLY_PROBE.format(secret=str(root_only_file))
                       + "print('REPORT' + json.dumps(info))\n")
    outcome = sandbox.run_sandboxed([sys.executable, str(program)], scratch=program.parent, expose=[Path(sys.prefix)],
                          limits=sandbox.Limits(wall_seconds=20))
    line = next((l for l in outcome.output.splitlines() if l.startswith("REPORT")), None)
    assert line is not None, outcome.output
    _assert_not_host_root(json.loads(line[len("REPORT"):]))


# --- 3. one student costing another through what the sandbox keeps -------------------------------------


def test_a_mode_000_folder_in_the_scratch_does_not_cost_the_next_notebook():
    """A folder with mode 000 inside the notebook's folder (/tmp/notebook): the worker's cleanup (rmtree,
    errors ignored) cannot remove it, the next notebook's ``os.mkdir('/tmp/notebook')`` fails. Old code: the
    worker died on it, the next notebook (honest) scored 0."""
    trap = """
import os as _o
_o.makedirs("trap/inner")
open("trap/inner/x", "w").write("x")
_o.chmod("trap", 0)
"""
    _, after = _grade_in_one_worker([_honest("trap", extra=trap), _honest("honest-after")])
    assert after["scores"] == FULL and not after["problem"], f"the honest notebook after the trap: {after}"


def test_a_full_tmp_hidden_in_a_mode_000_folder_does_not_cost_later_notebooks():
    """/tmp filled (files of 60 MB, under the file-size limit) inside a folder of /tmp that is then made mode 000:
    cleanup leaves it, so later notebooks find /tmp full. Old code: the next notebook could not write its results
    (ENOSPC): 0 points."""
    fill = """
import os as _o
_o.makedirs("/tmp/full/inner")
try:
    for _k in range(64):
        with open(f"/tmp/full/inner/{_k}", "wb") as _f:
            for _ in range(60):
                _f.write(b"x" * 2**20)
except OSError:
    pass
_o.chmod("/tmp/full", 0)
"""
    _, after = _grade_in_one_worker([_honest("filler", extra=fill), _honest("honest-after")])
    assert after["scores"] == FULL and not after["problem"], f"the honest notebook after the filler: {after}"


def test_root_dev_and_dev_shm_keep_nothing_between_notebooks():
    """/, /dev and /dev/shm inside the worker's sandbox are writable tmpfs that cleanup never touches: what one
    notebook leaves there (here 300 MB in /dev/shm; gigabytes the same way) stays for every later notebook of that
    worker, charged to its memory. Old code: writes to / and /dev succeeded, 300 MB in /dev/shm stayed and were
    seen by the next notebook."""
    leave = """
    for folder in ("/", "/dev", "/dev/shm"):
        try:
            with open(_o.path.join(folder, ".attack-left-behind"), "w") as f:
                f.write("left by the previous notebook")
            info["wrote " + folder] = True
        except OSError as e:
            info["wrote " + folder] = False
    written = 0
    try:
        chunk = b"x" * 2**20
        _o.makedirs("/dev/shm/.attack-ballast")
        for k in range(5):  # 5 files of 60 MB: each under the file-size limit
            with open(f"/dev/shm/.attack-ballast/{k}", "wb") as f:
                for _ in range(60):
                    f.write(chunk); written += 1
    except OSError as e:
        info["ballast stopped"] = repr(e)
    info["ballast MB"] = written
    try:
        st = _o.statvfs("/dev/shm")
        info["dev/shm MB"] = st.f_blocks * st.f_frsize // 2**20
    except OSError:
        info["dev/shm MB"] = 0
    """
    look = """
    info["seen"] = [p for p in ("/.attack-left-behind", "/dev/.attack-left-behind", "/dev/shm/.attack-left-behind",
                                "/dev/shm/.attack-ballast") if _o.path.exists(p)]
    """
    ((first,), _), ((second,), outcome) = _run_in_one_worker([_report_code(leave), _report_code(look)])
    wrong = []
    if first.get("wrote /") is not False:
        wrong.append(f"/ is writable inside the sandbox: {first}")
    if first.get("wrote /dev") is not False:
        wrong.append(f"/dev is writable inside the sandbox: {first}")
    if first.get("wrote /dev/shm") and first.get("ballast MB", 0) >= 300:
        wrong.append(f"/dev/shm took 300 MB without a limit (its size: {first.get('dev/shm MB')} MB)")
    if second.get("seen") != []:
        wrong.append(f"the next notebook finds what the previous one left: {second} (outcome {outcome})")
    assert not wrong, "\n".join(wrong)


# --- 4. forged observations (the end-to-end cases, in one worker) -----------------------------------------

FORGERIES = sorted(p.name for p in CASES.glob("forgery-*.py"))


@pytest.mark.parametrize("case_file", FORGERIES)
def test_a_forgery_earns_no_points_for_a_wrong_backward(case_file):
    """tests/adversarial/forgery-*.py (the case's `# why:` says how): square's derivative checks must fail, as
    the wrong sign alone gives (2 points of 6); with `# flagged:`, the notebook is flagged. Old code: square=6
    for every one of them, nothing flagged."""
    from test_adversarial import read_case

    case = read_case(CASES / case_file)
    (attacker,) = _grade_in_one_worker([_attacker(case_file)])
    wrong = []
    if attacker["scores"]["square"] > case.expect["square"][1]:
        wrong.append(f"square={attacker['scores']['square']} (at most {case.expect['square'][1]:g}): {attacker}")
    if case.flagged and not attacker["flags"]:
        wrong.append(f"not flagged (flags = {attacker['flags']!r})")
    assert not wrong, f"{case_file}: " + "; ".join(wrong)


NB4, NB5 = "04_modern_functions.ipynb", "05_markers_and_capstone.ipynb"
NB4_ATTACKS = sorted(p.name for p in CASES.glob("nb4-*.py"))


@pytest.mark.parametrize("case_file", NB4_ATTACKS)
def test_an_attack_on_notebook_4s_checks_earns_nothing_for_its_wrong_part(case_file):
    """tests/adversarial/nb4-*.py (each case's `# why:` says how, and what it earned on the old code): forged
    tangents, vmap and interpreter stacks, records added to the probe function, the grader's tables changed in
    place, lying tensor subclasses, a probe function's globals. Every exercise scores what its `# expect:` says:
    nothing for the wrong part."""
    from test_adversarial import read_case

    case = read_case(CASES / case_file)
    assert set(case.notebooks) <= {NB4, NB5}, case.notebooks  # notebook 4's exercises, split over 4 and 5
    attackers = _grade_in_one_worker([_attacker(case_file, notebook) for notebook in case.notebooks])
    for attacker in attackers:
        # Never more than expected; exactly as expected unless grading stopped early (a loaded machine's timeout).
        lowest = 1 if attacker["problem"] else 0
        wrong = {exercise: score for exercise, score in attacker["scores"].items()
                 if not case.expect.get(exercise, (0.0, 0.0))[0] * (1 - lowest) <= score
                 <= case.expect.get(exercise, (0.0, 0.0))[1]}
        assert not wrong, f"{case_file}: {wrong} (expected {case.expect}): {attacker}"
    if case.flagged:
        assert any(a["flags"] for a in attackers), f"{case_file}: not flagged: {attackers}"


@pytest.mark.parametrize("switch_off", [
    "import grader.sandboxed.child\ngrader.sandboxed.child._suspicious = lambda *args: ''",
    "import grader.sandboxed.child\ngrader.sandboxed.child.ALWAYS_FLAGGED.clear()",
    "import builtins\nbuiltins.len = lambda *args: 99",
    "import os\nos.path.abspath = lambda path, _trusted=os.path.dirname(os.__file__): _trusted + '/x.py'",
], ids=["replace-suspicious", "empty-table", "rebind-len", "rebind-abspath"])
def test_a_notebook_cannot_switch_the_audit_hook_off(switch_off):
    """A cell replaces the hook's judgement (grader.sandboxed.child._suspicious), empties its table of events, or rebinds the
    builtin (len) or os.path function it used, then walks gc and reads a frame: both are flagged. Old code: each
    switched flagging off (the gc walk, or the frame access, went unflagged), after which gc and frame forgeries
    went unnoticed."""
    source = switch_off + "\nimport gc, sys\ngc.get_objects()\nsys._getframe(0)\n"
    (events, outcome), = _run_events([source])
    flags = [e["what"] for e in events if e.get("event") == "flag"]
    assert any("gc.get_objects" in what for what in flags), f"the gc walk was not flagged: {events}"
    assert any("frame access" in what for what in flags), f"the frame access was not flagged: {events}"


@pytest.mark.parametrize("forge", [
    "code = compile(HELPER, os.__file__, 'exec')",
    "code = compile(HELPER, '<helper>', 'exec').replace(co_filename=os.__file__)",
    pytest.param("code = compile(ast.parse(HELPER), os.__file__, 'exec')", marks=pytest.mark.xfail(
        strict=True, reason="open: Python's audit event for compiling a tree carries no file name (compile(tree, "
        "name) reports (tree, None)), and IPython compiles every cell from a tree: nothing tells this compile from a "
        "cell's where it happens")),
], ids=["compile", "code-replace", "compile-ast"])
def test_code_that_names_a_librarys_file_is_still_the_notebooks(forge):
    """An escaped cell (the layers beneath the policy: here a cell run without it) makes a helper whose code names a
    standard-library file (compiled under os.py's name, or a code object's file name replaced), so that the audit
    hook takes its frame walk for the standard library's (issue 29: the escape of 27 Nov walked to the child's
    frames that way). The claim is checked where it is made: the compile (or the code object) is flagged. Old code:
    nothing flagged."""
    source = ("import ast, os, sys\nHELPER = 'def top(tb):\\n    f = tb.tb_frame\\n    while f.f_back is not None:\\n"
              "        f = f.f_back\\n    return f\\n'\n" + forge + "\nns = {}\nexec(code, ns)\n"
              "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    ns['top'](error.__traceback__)\n")
    (events, outcome), = _run_events([source])
    flags = [e["what"] for e in events if e.get("event") == "flag"]
    assert any("library's file name" in what for what in flags), f"not flagged: {flags} {events[-3:]}"


def test_events_judged_by_their_arguments_are_judged_every_time():
    """The audit hook stops judging an event name once found harmless by name (builtins.id, compile, exec ...), never
    one whose verdict depends on its arguments: harmless frame reads, attribute reads and opens first, thousands of
    harmless events, then the same events on student frames and /proc/self/fd: all flagged."""
    source = ("import sys, os\nfor _ in range(3000):\n    id(sys)\n    sys._getframe(0).f_code.co_name\n"
              "open(os.__file__).close()\ndef f():\n    return sys._getframe(0)\nf()\n"
              "def g():\n    yield 1\ng().gi_frame\nos.listdir('/proc/self/fd')\nopen('/proc/self/fd/0').close()\n")
    (events, outcome), = _run_events([source])
    flags = [e["what"] for e in events if e.get("event") == "flag"]
    assert any("sys._getframe" in what for what in flags), f"the student frame was not flagged: {events}"
    assert any("gi_frame" in what for what in flags), f"the generator's frame was not flagged: {events}"
    assert any("/proc/self/fd" in what for what in flags), f"the descriptor was not flagged: {events}"


def test_the_perfect_solution_is_never_flagged():
    (honest,) = _grade_in_one_worker([_honest("perfect")])
    assert honest["scores"] == FULL and not honest["flags"], honest


# --- 5. the report channel: only the notebook's own process, and never unnoticed ------------------------

_FIND_CHANNEL = """
def _channel():
    # the worker's listening socket is abstract: its name is in /proc/net/unix
    with open("/proc/net/unix") as f:
        names = [line.split()[-1] for line in f if "@grader-" in line]
    return "\\0" + names[0][1:]
"""


def _forged_line() -> str:
    return json.dumps({"event": "observed", "index": 1, "calls": [{"observations": []}], "restored": []})


_SOCKET_FDS = """
def _socket_fds():
    # every socket this process holds (the grader's channel among them): no audit event is raised for any of this
    import os as _os, stat as _stat
    found = []
    for fd in range(3, 1024):
        try:
            if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            pass
    return found

def _send_everywhere(data):
    # the worker's socket (by its name in /proc/net/unix: refused once the notebook's connection is taken), and every
    # socket descriptor held (the channel's, written without the grader's code)
    import os as _os, socket as _socket
    sent = []
    try:
        for name in set(line.split()[-1] for line in open("/proc/net/unix") if "@grader-" in line):
            try:
                s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                s.settimeout(1)
                s.connect("\\0" + name[1:])
                s.sendall(data)
                s.close()
                sent.append(name)
            except OSError:
                pass
    except OSError:
        pass
    for fd in _socket_fds():
        try:
            _os.write(fd, data)
            sent.append(fd)
        except OSError:
            pass
    return sent
"""


@pytest.mark.parametrize("fork", ["os.fork", "libc-fork"])
def test_a_process_the_notebook_forks_cannot_report_for_it(fork):
    """A forked helper sends a forged observation, both to the worker's socket and on every socket descriptor it
    inherited (the channel among them): nothing it sent is kept. Forked through Python, it holds no channel (closed
    at fork); forked by libc's fork() (no Python fork hooks run), it holds one, and the worker, which asks the kernel
    who wrote each piece, drops its lines and flags them as another process's."""
    forked = "os.fork()" if fork == "os.fork" else "__import__('ctypes').CDLL(None).fork()"
    source = _SOCKET_FDS + f"""
import os
pid = {forked}
if pid == 0:
    try:
        _send_everywhere({_forged_line()!r}.encode() + b"\\n")
    finally:
        os._exit(0)
os.waitpid(pid, 0)
"""
    (events, outcome), = _run_events([source])
    assert not [e for e in events if e.get("event") == "observed"], f"a forged observation was kept: {events}"
    if fork == "libc-fork":
        flags = [e["what"] for e in events if e.get("event") == "flag"]
        assert any("other than the notebook's own" in what for what in flags), events


def test_the_notebooks_own_socket_to_the_worker_is_flagged_before_it_connects():
    """The notebook's own process opens the channel itself (no fork): the audit hook flags the socket first,
    so whatever it sends comes after a flag and scores nothing."""
    source = _FIND_CHANNEL + f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(_channel())
s.sendall({_forged_line()!r}.encode() + b"\\n")
s.close()
"""
    (events, outcome), = _run_events([source])
    kinds = [e.get("event") for e in events]
    assert "flag" in kinds, events
    forged = [i for i, e in enumerate(events) if e.get("event") == "observed"]
    assert all(kinds.index("flag") < i for i in forged), f"a report came before its flag: {events}"


def _run_events(sources: list[str], timeout: float = 20) -> list[tuple[list[dict[str, Any]], Any]]:
    """Each source as a one-cell notebook in the pool of one worker: [(every event it reported, outcome)]."""
    return [([json.loads(line) for line in data.decode().splitlines() if line.strip()], outcome)
            for data, outcome in _one_cell_notebooks(sources, timeout)]


# --- 6. no honest answer is ever flagged ---------------------------------------------------------------


def test_no_solution_notebook_is_flagged_refused_or_has_anything_restored():
    """The instructor's notebooks, whole, graded in the pool as submissions under the course's policy (on the worker
    the tests above left): the policy refuses nothing, the audit hook flags nothing, the guard puts back nothing, and
    every notebook gets full marks. The answers of examples/ (every catalogued mistake and right answer written
    another way) are checked the same way, hidden checks included, in batches, by tests/test_honest_corpus.py
    (test_no_catalogued_answer_is_flagged_refused_or_has_anything_restored), which grades them for its consistency
    test anyway."""
    pool = _SHARED["pool"]
    results = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        notebook = nbformat.read(str(path), as_version=4)
        cells = runner.cells_to_run(notebook, runner.instructor_cells(nbformat.read(str(path), as_version=4)))
        results.append((path.name, runner.grade_cells(path.name, cells, "solutions", 60, pool=pool)))
    assert len(results) >= 4
    refused = {name: result.problem or "a cell" for name, result in results
               if any(w in json.dumps(result.as_dict(), ensure_ascii=False)
                      for w in ("not available in graded code", "评分代码中不能使用"))}
    flagged = {name: result.flags for name, result in results if result.flags}
    restored = {name: result.restored for name, result in results if result.restored}
    assert not refused, f"the policy refused the instructor's code: {refused}"
    assert not flagged, f"the instructor's notebooks were flagged: {flagged}"
    assert not restored, f"the guard reports patches the instructor's notebooks never made: {restored}"
    short = {name: (r.score, r.max_score) for name, r in results if r.score != r.max_score}
    assert not short, f"the instructor's notebooks lost points: {short}"


# --- 7. what the student's cells show comes back, capped and harmless ----------------------------------


def test_cells_report_their_outputs_and_an_answer_cell_that_raised_shows_its_error():
    """Streams, rich data and errors come back per cell, in order; the trusted side rebuilds them as nbformat
    outputs without any markup of the student's own (an SVG becomes an <img>)."""
    from grader.judge import outputs

    source = """
import sys
from IPython.display import SVG, HTML, display
print("hello")
print("careful", file=sys.stderr)
display(SVG('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'))
display(HTML('<script>alert(2)</script>'))
class Exp:
    raise ValueError("raised while defining Exp")
"""
    (events, outcome), = _run_events([source + "\n"])
    done = next(e for e in events if e.get("event") == "done")
    assert done["error"].startswith("ValueError") and done["line"] == 9, done
    kept = outputs.sanitize(done["outputs"], [outputs.NOTEBOOK_BYTES])
    kinds = [o["output_type"] for o in kept]
    assert kinds == ["stream", "stream", "display_data", "display_data", "error"], kept
    assert kept[0]["text"] == "hello\n" and kept[1]["name"] == "stderr"
    assert "data:image/svg+xml;base64," in kept[2]["data"]["text/html"]
    assert "<script" not in str([o.get("data") for o in kept])  # (tracebacks quote the cell: inert, escaped text)
    assert kept[3]["data"] == {"text/plain": "<IPython.core.display.HTML object>"}  # student HTML never kept
    assert kept[4]["ename"] == "ValueError" and kept[4]["traceback"]


def test_an_error_deep_in_torch_comes_back_as_a_plain_traceback_that_starts_at_the_students_line():
    """A cell whose gradcheck fails inside torch: the student's feedback gets a plain Python traceback (IPython's
    Plain mode), their own line first and the error last, not the Context mode's source of every torch frame (which
    also cost ~0.3 s per error in each child); the worker formats its first traceback while warming up."""
    source = """import torch


class Short(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g[:1]


torch.autograd.gradcheck(Short.apply, (torch.rand(3, dtype=torch.float64, requires_grad=True),))
"""
    (events, _), = _run_events([source])
    done = next(e for e in events if e.get("event") == "done")
    assert done["error"].startswith("RuntimeError") and done["line"] == 14, done
    error = next(o for o in done["outputs"] if o["output_type"] == "error")
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
    assert text.index("line 14") < text.index("gradcheck.py") < text.index("RuntimeError: Function ShortBackward"), text
    assert "torch.autograd.gradcheck(Short.apply" in text and "---->" not in text and len(text) < 4000, text


def test_a_cells_matplotlib_figure_comes_back_as_a_png_and_the_worker_keeps_none():
    """pyplot is imported and warmed up in the worker, before the child forks: a figure a cell draws is still
    shown once, as a PNG of its own (the inline backend flushes it after the cell), and nothing the worker drew
    while warming up shows in any cell."""
    from grader.judge import outputs

    source = ("import matplotlib.pyplot as plt\nplt.plot([0, 1, 4], label='loss')\nplt.title('mine')\n"
              "print(len(plt.get_fignums()))\n")
    (events, outcome), = _run_events([source])
    done = next(e for e in events if e.get("event") == "done")
    kept = outputs.sanitize(done["outputs"], [outputs.NOTEBOOK_BYTES])
    assert [o["output_type"] for o in kept] == ["stream", "display_data"], kept
    assert kept[0]["text"] == "1\n"  # the cell's own figure only
    assert "data:image/png;base64," in kept[1]["data"]["text/html"] and "warm-up" not in str(kept)


def test_a_flood_of_output_is_cut_with_a_note():
    (events, outcome), = _run_events(["for i in range(200000):\n    print('x' * 50)\n"])
    done = next(e for e in events if e.get("event") == "done")
    text = "".join(o.get("text", "") for o in done["outputs"])
    assert len(text) < 300_000 and "more output not kept" in text


# --- 8. the channel cannot be spoken for, nothing survives a notebook, threads (issue 19) ------------------


def _rlimit_gc(restore: bool = True) -> str:
    """A gc walk while the notebook's process may open no descriptor (soft RLIMIT_NOFILE 0), the limit raised again
    afterwards (``restore``): on the old code the audit hook's report could not open its socket and said nothing."""
    return f"""
import gc as _gc, resource as _resource
_soft, _hard = _resource.getrlimit(_resource.RLIMIT_NOFILE)
_resource.setrlimit(_resource.RLIMIT_NOFILE, (0, _hard))
_found = len(_gc.get_objects())
{"_resource.setrlimit(_resource.RLIMIT_NOFILE, (_soft, _hard))" if restore else ""}
"""


def test_a_notebook_without_descriptors_cannot_silence_a_flag():
    """setrlimit(RLIMIT_NOFILE, (0, hard)), a gc walk, the limit raised again: the walk is flagged and square's
    checks score 0. Old code: the flag's socket could not be opened (EMFILE, swallowed), nothing was flagged and the
    instructor's answers scored full marks after a gc walk (through which any observation can be forged)."""
    (attacker,) = _grade_in_one_worker([_honest("rlimit-gc", extra=_rlimit_gc())])
    assert attacker["flags"] and any("gc.get_objects" in f["what"] for f in attacker["flags"]), attacker
    assert attacker["scores"]["square"] == 0, attacker


def test_a_notebook_that_breaks_the_channel_ends_and_its_unobserved_checks_score_0():
    """Every descriptor closed (the channel's among them), no descriptor may be opened, then a gc walk: the flag
    cannot be sent, so the notebook ends there, said as "broke the grader's channel", and the checks after score 0.
    The next notebook on that worker is graded as usual. Old code: nothing flagged, nothing said, the notebook went
    on."""
    breaker = "import os as _os\n_os.closerange(3, 4096)\n" + _rlimit_gc(restore=False)
    attacker, after = _grade_in_one_worker([_honest("channel-breaker", extra=breaker), _honest("honest-after")])
    assert all(score == 0 for score in attacker["scores"].values()), attacker
    assert "broke the grader's channel" in attacker["problem"], attacker
    assert after["scores"] == FULL and not after["problem"], after


def test_a_program_the_notebook_execs_cannot_report_for_it():
    """The notebook makes every descriptor inheritable and execs a fresh interpreter (same pid) that re-runs the
    child's entry point, grader.sandboxed.child.run_cells, on a plan of its own, and writes a forged report on every socket it
    holds. Old code: the worker took the new program's reports as the notebook's (SO_PEERCRED names the same pid):
    its cell's output came back. Now: the channel was closed by exec, the worker no longer listens, and a line
    written on a kept descriptor is not signed: nothing of it is kept."""
    forged_done = json.dumps({"event": "done", "index": 0, "error": "",
                              "outputs": [{"output_type": "stream", "name": "stdout", "text": "forged-by-exec-fd"}]})
    program = _SOCKET_FDS + textwrap.dedent(f"""
    import sys
    sys.path[:0] = PATHS_HERE
    _send_everywhere({forged_done!r}.encode() + b"\\n")
    import grader.sandboxed.child
    names = set(line.split()[-1] for line in open("/proc/net/unix") if "@grader-" in line)
    for name in names:
        try:
            grader.sandboxed.child.run_cells([{{"kind": "code", "index": 0, "source": "print('forged-by-exec-run')"}}], "\\0" + name[1:])
        except OSError:
            pass
    """)
    source = f"""
import os, sys
for _fd in range(3, 1024):
    try:
        os.set_inheritable(_fd, True)
    except OSError:
        pass
_program = {program!r}.replace("PATHS_HERE", repr(sys.path))
os.execv(sys.executable, [sys.executable, "-c", _program])
"""
    (events, outcome), = _run_events([source], timeout=40)
    assert "forged-by-exec" not in json.dumps(events), f"the exec'd program reported for the notebook: {events}"


def test_connections_that_never_send_do_not_hold_the_worker():
    """The notebook leaves half a line on every socket it holds, then keeps opening connections to the worker's socket
    and never sends on them. Old code: the worker waited up to 5 s on each connection, past the notebook's time
    limit, until the pool gave up on it ("the grading worker died") twice: 2 x (limit + 30) s. Now: the notebook ends
    within its limit, the worker lives, and the next notebook is graded."""
    stall = _SOCKET_FDS + """
import os, socket, time
for fd in _socket_fds():
    try:
        os.write(fd, b'{"event": "start", "index"')
    except OSError:
        pass
held = []
while True:  # until stopped: new connections faster than a worker that waits on each can drain them
    for name in set(line.split()[-1] for line in open("/proc/net/unix") if "@grader-" in line):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(0.2)
            s.connect("\\0" + name[1:])
            held.append(s)
        except OSError:
            pass
    while len(held) > 500:
        held.pop(0).close()
    time.sleep(0.01)
"""
    limit = 6  # seconds (the old code took 2 x (limit + 30) s)
    started = time.monotonic()
    (_, stalled), (after, outcome) = _run_events([stall, "print('next')"], timeout=limit)
    seconds = time.monotonic() - started
    assert stalled.stopped == "timeout", stalled
    assert seconds < limit + 25, f"the stalling notebook held its worker {seconds:.0f} s (limit {limit} s)"
    assert any(e.get("event") == "done" and not e.get("error") for e in after), (after, outcome)


def test_deeply_nested_json_does_not_kill_the_worker_and_flags_are_kept():
    """After a flagged gc walk, the notebook sends a line of 200,000 nested brackets to the worker's socket and on
    every socket it holds. Old code: the worker's json.loads raised RecursionError and the worker died, twice (the
    notebook is retried): the notebook ended as "the grading worker died", its flag lost. Now: the worker lives,
    the gc walk's flag is kept, and the next notebook is graded."""
    deep = _SOCKET_FDS + """
import gc
gc.get_objects()
_send_everywhere(b"[" * 200_000 + b"]" * 200_000 + b"\\n")
"""
    (events, outcome), (after, _) = _run_events([deep, "print('next')"])
    assert outcome.stopped != "worker", (events, outcome)
    flags = [e["what"] for e in events if e.get("event") == "flag"]
    assert any("gc.get_objects" in what for what in flags), events
    assert any(e.get("event") == "done" and not e.get("error") for e in after), after


_SYSV_LEAVER = """
import ctypes as _ctypes
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = _ctypes.c_void_p
_segment = _libc.shmget(0, 512 * 2**20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600: 512 MiB
_address = _libc.shmat(_segment, None, 0)
_ctypes.memset(_address, 1, 512 * 2**20)  # touched: charged to the worker's memory as long as it exists
_libc.shmdt(_ctypes.c_void_p(_address))
_libc.semget(0, 4, 0o1600)
_libc.msgget(0, 0o1600)
"""

_SYSV_LOOK = """
_left = [line for kind in ("shm", "sem", "msg") for line in open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]]
_gib = torch.ones(2**27, dtype=torch.float64)  # 1 GiB, honestly
_gib.add_(1)
del _gib
if _left:  # what an earlier notebook left costs this one its square points: the test sees it in the scores
    Square = None
"""


def test_system_v_ipc_objects_do_not_survive_into_the_next_notebook():
    """A notebook leaves a System V shared memory segment (512 MiB, touched), a semaphore set and a message queue;
    they outlive its process in the worker's IPC namespace. Old code: the next notebook found all three (and the
    segment's memory stayed charged to the worker: with bigger ones, an honest notebook allocating 1 GiB was
    killed). Now: removed between notebooks, and the honest notebook after, which allocates 1 GiB, scores full."""
    _, after = _grade_in_one_worker([_honest("sysv-leaver", extra=_SYSV_LEAVER),
                                     _honest("honest-after", extra=_SYSV_LOOK)])
    assert after["scores"] == FULL and not after["problem"], f"the honest notebook after the leaver: {after}"


def test_posix_message_queues_cannot_be_made():
    """POSIX message queues would outlive the notebook in a file system no one mounts in the sandbox (nothing could
    list and remove them): mq_open is refused."""
    body = """
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    info["mq_open"] = libc.mq_open(b"/grader-left", 0o100 | 0o2, 0o600, None)  # O_CREAT | O_RDWR
    info["errno"] = ctypes.get_errno()
    """
    ((report,), _), = _run_in_one_worker([_report_code(body)])
    assert report.get("mq_open") == -1, f"a POSIX message queue was made: {report}"


def test_an_honest_notebook_that_asks_torch_for_two_threads_scores_full_marks():
    """torch.set_num_threads(2) (and set_num_interop_threads(2)), then 512x512 matmuls: OpenMP would start a thread,
    which the seccomp filter refuses. Old code: the process died, 0 of 24 points. Now: torch and OpenMP stay on the
    one thread the sandbox allows, and the notebook scores full marks."""
    threads = """
import torch as _torch
_torch.set_num_threads(2)
_torch.set_num_interop_threads(2)
_a = _torch.rand(512, 512)
for _ in range(5):
    _b = _a @ _a
_c = _torch.rand(512, 512, dtype=_torch.float64) @ _torch.rand(512, 512, dtype=_torch.float64)
"""
    (honest,) = _grade_in_one_worker([_honest("two-threads", extra=threads)])
    assert honest["scores"] == FULL and not honest["problem"] and not honest["flags"], honest

