"""The shape of ``grader/``: its layers (docs/design.md, "How the grader is built") and the rules that keep it so.

- the import contracts in pyproject.toml ([tool.importlinter]) hold: ``lint-imports`` passes;
- no module grows past ``MAX_LINES`` (the ones already over it may only shrink);
- every ``grader.…`` name written in the grader, nbgrader_config.py, the Makefile and the adversarial corpus names
  a module (or a module's attribute) that exists;
- the top level of ``grader/`` holds only what the notebooks import (issue 30: the ten-line kept names went);
- the package's fingerprint covers every file of every layer.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.boundary import fingerprint
from grader.isolation import sandbox

REPO = Path(__file__).resolve().parents[1]
GRADER = REPO / "grader"
MAX_LINES = 800
# Over MAX_LINES today, each at most its current length until it is split (issue 22): shrink them, never grow.
OVERSIZED: dict[str, int] = {}
EXEMPT = {"grader/spec/messages.py": "every sentence a student reads, in one table: long by nature"}
# The top level of grader/: what the course's notebooks import (grader.checks, grader.basics, grader.graphs).
TOP_LEVEL = {"__init__.py", "checks.py", "basics.py", "graphs.py"}
# Names an attack writes on purpose although they no longer exist: what it patched became a closure or a method so
# that a notebook cannot reach it; the attack stays as the regression test of that fix.
STALE_IN_ATTACKS = {
    "grader.sandboxed.child.restore": "grader-child-restore.py: the module-level restore became Guard.restore, a "
                                      "closure (ee34bb2); its observe.observe patch still attacks",
}
LAYERS = ("spec", "boundary", "sandboxed", "isolation", "judge", "classroom")
NAME = re.compile(r"(?:(?<![\w.])|(?<=\\n))grader(?:\.[A-Za-z_]\w*)+")  # (also after a \n in a string)


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    assert lint.exists(), f"{lint} is missing: run `make install` (import-linter is pinned in requirements.lock)"
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"an import crosses the grader's layers (pyproject.toml, [tool.importlinter]; "
                                  f"docs/design.md, 'How the grader is built'):\n"
                                  f"{done.stdout[-6000:]}{done.stderr[-2000:]}")


def test_no_contract_ignores_an_import() -> None:
    """The four crossings the layering started with are gone (issue 22); a new one is a design to change."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) == 5
    assert [c["name"] for c in contracts if c.get("ignore_imports")] == []


def test_no_module_grows_past_the_limit() -> None:
    too_long = {}
    for path in sorted(GRADER.rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        lines = len(path.read_text().splitlines())
        if name not in EXEMPT and lines > OVERSIZED.get(name, MAX_LINES):
            too_long[name] = lines
    assert not too_long, (f"modules over {MAX_LINES} lines (or longer than their recorded size in OVERSIZED): "
                          f"{too_long}: split them along their seams (tests/test_shape.py)")
    for name, ceiling in OVERSIZED.items():
        path = REPO / name
        lines = len(path.read_text().splitlines()) if path.exists() else 0
        assert lines > MAX_LINES, f"{name} has {lines} lines now: remove it from OVERSIZED (tests/test_shape.py)"


def unresolved(name: str) -> str | None:
    """Why ``name`` (``grader.a.b`` or ``grader.a.b.attribute``) names nothing, or None when it does."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            value = importlib.import_module(module)
            for part in parts[i:]:
                if not hasattr(value, part):
                    return f"{module} has no {'.'.join(parts[i:])}"
                value = getattr(value, part)
            return None
    return "no such module"


def problems(text: str, *, attack: bool = False) -> list[str]:
    found = []
    for match in NAME.finditer(text):
        name = match.group(0)
        why = None if attack and name in STALE_IN_ATTACKS else unresolved(name)
        if why:
            found.append(f"{name}: {why}")
    return found


def test_a_name_of_a_missing_module_is_found() -> None:
    """The check itself: the lookup the issue saw fail silently after a move, a name inside a cell's source
    (after a ``\\n``), and a kept name that went (issue 30)."""
    assert problems(r'"import grader.sandboxed.child\ngrader.child.ALWAYS_FLAGGED.clear()"') == [
        "grader.child.ALWAYS_FLAGGED.clear: grader has no child.ALWAYS_FLAGGED.clear"]
    assert problems('pool = sys.modules.get("grader.pool_that_moved")') == [
        "grader.pool_that_moved: grader has no pool_that_moved"]
    assert problems('BOOT = "from grader.sandboxed.worker import main"') == []
    assert problems("grader.isolation.pool.Pool") == []
    assert problems("grader.isolation.pool.NoSuchClass") == ["grader.isolation.pool.NoSuchClass: grader.isolation.pool "
                                                             "has no NoSuchClass"]
    assert problems("import grader.course", attack=True) == ["grader.course: grader has no course"]


@pytest.mark.parametrize("where", ["grader", "nbgrader_config.py", "Makefile", "README.md", "docs",
                                   "tests/adversarial"])
def test_every_grader_name_names_a_module_that_exists(where: str) -> None:
    root = REPO / where
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if root.is_dir() \
        else [root]
    assert files, f"nothing found under {root}"
    found = {f"{path.relative_to(REPO)}: {problem}"
             for path in files for problem in problems(path.read_text(errors="replace"),
                                                       attack=where == "tests/adversarial")}
    assert not found, "names of grader modules that do not exist (after a move?):\n" + "\n".join(sorted(found))


def test_every_grader_file_path_written_exists() -> None:
    """``grader/<...>.py`` as the README, docs/, the Makefile, nbgrader_config.py, the tests and the grader write it."""
    places = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "Makefile", REPO / "nbgrader_config.py",
              *sorted((REPO / "tests").glob("*.py")), *sorted(GRADER.rglob("*.py"))]
    missing = sorted({f"{place.relative_to(REPO)}: {path}" for place in places
                      for path in re.findall(r"(?<![\w/.])grader/[\w/]+\.py", place.read_text(errors="replace"))
                      if not (REPO / path).exists()})
    assert not missing, "paths of grader files that do not exist (after a move?):\n" + "\n".join(missing)


def test_the_top_level_of_grader_holds_only_what_the_notebooks_import() -> None:
    """The modules the course's notebooks import stay where students' code finds them; every other module lives in
    its layer, named by its real name everywhere (issue 30: ten-line modules that only stood for another went)."""
    top = {p.name for p in GRADER.glob("*.py")}
    assert top == TOP_LEVEL, f"top-level modules beyond the notebooks' own: {sorted(top - TOP_LEVEL)}"


def test_nbgrader_config_names_trusted_execute_by_any_of_its_names() -> None:
    """The exporter starts the pool before nbgrader's first student when the pipeline holds TrustedExecute: named
    as nbgrader_config.py names it (the kept name) or by its real module. Compared as text, the move to layers
    made it miss the kept name silently (grading then stopped midway instead of before anything was recorded)."""
    from grader.classroom.plugins.exporter import is_trusted_execute
    from grader.classroom.plugins.trusted_execute import TrustedExecute

    assert is_trusted_execute("grader.classroom.nbgrader_plugins.TrustedExecute")
    assert is_trusted_execute("grader.classroom.plugins.trusted_execute.TrustedExecute")
    assert is_trusted_execute(TrustedExecute)
    assert not is_trusted_execute("nbgrader.preprocessors.Execute") and not is_trusted_execute("grader.nope.X")


def test_the_fingerprint_covers_every_layer(tmp_path: Path) -> None:
    copy = tmp_path / "grader"
    shutil.copytree(GRADER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = sandbox.package_fingerprint(copy)
    assert before == sandbox.package_fingerprint(copy) == fingerprint.digest(copy).hex()[:16]
    seen = {before}
    for layer in sorted(p for p in copy.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        target = sorted(layer.glob("*.py"))[-1]
        target.write_text(target.read_text() + "\n# edited\n")
        now = sandbox.package_fingerprint(copy)
        assert now not in seen, f"editing {target.relative_to(tmp_path)} left the fingerprint at {now}"
        seen.add(now)
    (copy / "judge" / "added.py").write_text("")
    assert sandbox.package_fingerprint(copy) not in seen, "a file added to a layer left the fingerprint unchanged"
    assert len(seen) == 7, seen  # the six layers edited, each once


GUARD_PROBE = """
import json, sys, types
from grader.sandboxed import worker, child
from grader.sandboxed import guarded as guarded_modules
worker.warm_up()
loaded = sorted(n for n, m in sys.modules.items() if (n == "grader" or n.startswith("grader.")))
import grader.judge.testcells  # a module the warm-up does not load, named nowhere in the guard
guard = child.Guard()
guarded = sorted(o.__name__ for o, kept, strict, rebound in guard.namespaces
                 if isinstance(o, types.ModuleType) and o.__name__.startswith("grader") and strict)
print(json.dumps({"loaded": loaded, "guarded": guarded, "unguarded": guarded_modules.UNGUARDED}))
"""


def test_the_guard_covers_every_grader_module_the_worker_loads_but_those_named_with_a_reason() -> None:
    """After the worker's warm-up, every ``grader.*`` module in the notebook's process is guarded (dict, additions
    removed, functions, classes, tables) or in ``guarded.UNGUARDED`` with a reason; the list is computed, so a module
    the grader adds (here one loaded after the warm-up) is guarded without being named."""
    import json

    done = subprocess.run([sys.executable, "-c", GUARD_PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    unguarded = seen["unguarded"]
    neither = [name for name in seen["loaded"] if name not in seen["guarded"] and name not in unguarded]
    assert not neither, f"grader modules in the notebook's process neither guarded nor in guarded.UNGUARDED: {neither}"
    assert "grader.judge.testcells" in seen["guarded"], "a grader module loaded later is not guarded"
    layers = {"grader", *(f"grader.{layer}" for layer in LAYERS)}  # packages: listed whether loaded or not
    stale = [name for name in unguarded if name not in seen["loaded"] and name not in layers]
    assert not stale, f"guarded.UNGUARDED names modules the worker does not load: {stale}"
    assert all(isinstance(why, str) and len(why) > 20 for why in unguarded.values()), unguarded
    assert not set(seen["guarded"]) & set(unguarded)
    # what the guard covered before the list was computed, still covered
    assert {"grader.basics", "grader.spec.functions", "grader.spec.function_probes", "grader.boundary.wire",
            "grader.judge.diagnosis", "grader.sandboxed.observe_functions", "grader.sandboxed.child", "grader.sandboxed.observe",
            "grader.spec.exercises"} <= set(seen["guarded"])
