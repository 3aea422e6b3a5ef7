"""The package as pip installs it (a wheel, not an editable install) imports every layer and grades a notebook.

A fresh clone's files (git's list: tracked, and new files not ignored) are copied to a temporary folder, and
``pip install --no-deps --no-build-isolation --no-index`` builds and installs them into a new venv: only the wheel
setuptools builds from pyproject.toml, so a subpackage or file the wheel leaves out fails here. The dependencies are
the repository's .venv's, hard-linked into the new venv's site-packages (torch alone is gigabytes and would have to
be downloaded: this takes seconds, offline; without --no-build-isolation pip would fetch setuptools). Then, from a
folder outside the repository, that venv's ``grader grade`` grades the solutions' notebook 2 in the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, SOLUTIONS, nbgrader_meta
from grader.isolation import sandbox

pytestmark = pytest.mark.slow

NOTEBOOK = "02_custom_function.ipynb"
LEFT_OUT = ("__editable__", "autograd_course_grader-")  # the editable install of this checkout: not linked

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import grader
names = sorted(m.name for m in pkgutil.walk_packages(grader.__path__, "grader.") if m.ispkg)
print(json.dumps({"file": grader.__file__, "packages": {n: importlib.import_module(n).__file__ for n in names}}))
"""


def _sources(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.py") if "__pycache__" not in p.parts}


def _link_dependencies(venv: Path) -> Path:
    """The new venv's site-packages, holding hard links to this environment's packages (the editable grader aside)."""
    ours = Path(sysconfig.get_path("purelib"))
    theirs = venv / ours.relative_to(sys.prefix)
    assert theirs.is_dir(), theirs
    for entry in ours.iterdir():
        if entry.name.startswith(LEFT_OUT) or entry.name == "grader":
            continue
        if entry.is_dir():
            shutil.copytree(entry, theirs / entry.name, copy_function=os.link, dirs_exist_ok=True)
        else:
            os.link(entry, theirs / entry.name)
    return theirs


def _clone(into: Path) -> None:
    """The checkout's files as a fresh clone (plus new files not yet committed), not its venv, caches or builds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)


def test_pip_install_of_the_package_imports_every_layer_and_grades_a_notebook() -> None:
    available, why = sandbox.available()
    if not available:
        pytest.skip(f"no sandbox to grade in: {why}")
    assert shutil.which("git"), "git is needed to list the checkout's files"
    work = Path(tempfile.mkdtemp(prefix="grader-install-"))  # under /tmp, outside the repository
    try:
        work.chmod(0o755)  # the sandbox's user reads the venv (sandbox.available checks it)
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        installed_into = _link_dependencies(venv)
        _clone(work / "clone")
        python = venv / "bin" / "python"
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                               "--no-index", str(work / "clone")], cwd=work, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

        package = installed_into / "grader"
        assert package.is_dir() and not (installed_into / "grader.pth").exists()
        missing = sorted(_sources(REPO / "grader") - _sources(package))
        assert not missing, f"the wheel leaves out these files of grader/ (pyproject.toml's packages): {missing}"

        outside = work / "elsewhere"
        outside.mkdir()
        done = subprocess.run([str(python), "-c", IMPORT_ALL], cwd=outside, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        imported = json.loads(done.stdout.strip().splitlines()[-1])
        assert Path(imported["file"]).parent == package, imported["file"]
        layers = {"grader.spec", "grader.boundary", "grader.sandboxed", "grader.isolation", "grader.judge",
                  "grader.classroom"}
        assert layers <= set(imported["packages"]), sorted(imported["packages"])
        wrong = {n: f for n, f in imported["packages"].items() if not Path(f).is_relative_to(package)}
        assert not wrong, f"imported from elsewhere than the installed package: {wrong}"

        shutil.copy(SOLUTIONS / NOTEBOOK, outside / NOTEBOOK)
        done = subprocess.run([str(venv / "bin" / "grader"), "grade", NOTEBOOK, "--tests", NOTEBOOK, "--json"],
                              cwd=outside, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        result = json.loads(done.stdout)
        cells = nbformat.read(str(SOLUTIONS / NOTEBOOK), as_version=4).cells
        full = sum(nbgrader_meta(c).get("points", 0) for c in cells if nbgrader_meta(c).get("grade"))
        assert full > 0 and result["score"] == full and result["max_score"] == full, (full, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
