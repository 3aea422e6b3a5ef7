"""`make lab`: JupyterLab on a working copy of the student notebooks, with nbgrader's extension on the course.

    python -m grader.classroom.lab [--port N] [--no-browser]     # what `make lab [PORT=N] [NO_BROWSER=1]` runs
    python -m grader.classroom.lab --write-settings              # only write JupyterLab's defaults into the environment

- work/<assignment>/ is the working copy: each notebook of notebooks/<assignment>/ (the release, written only by
  `make release`) is copied there when it is missing (with the kernel's language_info, as JupyterLab would save
  it), and never overwritten. Students' edits, and what nbgrader's
  Validate button saves, stay in work/ (ignored by git); `python -m grader.classroom.notebooks check` keeps passing.
- The server's root is the course root, so nbgrader's extensions see the course (its formgrader refuses a course
  that is not inside the server's root: "The course directory root is not a subdirectory of the notebook server
  root"), and Validate reads the course's nbgrader_config.py (from the working directory). The page opens on
  work/<assignment>/.
- As root (how `make install` is run) JupyterLab needs --allow-root; it is given only then.
- No news prompt, no news or update requests: the announcements' setting `fetchNews` defaults to "false" in the
  environment's overrides.json (JupyterLab's documented way to change a setting's default), and the server fetches
  no news feed (`LabApp.news_url=None`) and checks for no update.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ASSIGNMENT = "autograd"
WORK = "work"
# JupyterLab's overrides.json: new defaults for settings, read from <sys.prefix>/share/jupyter/lab/settings/.
OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}


def working_copy(root: Path, assignment: str = ASSIGNMENT) -> tuple[Path, list[Path]]:
    """work/<assignment>/ with every released notebook: copy those missing, leave the others as they are.
    Returns the folder and the notebooks copied now."""
    release = root / "notebooks" / assignment
    if not release.is_dir():
        raise SystemExit(f"make lab: {release} does not exist: run `make release` to generate the student notebooks")
    work = root / WORK / assignment
    work.mkdir(parents=True, exist_ok=True)
    copied = []
    for notebook in sorted(release.glob("*.ipynb")):
        target = work / notebook.name
        if not target.exists():
            target.write_text(as_opened(notebook.read_text(encoding="utf-8")), encoding="utf-8")
            copied.append(target)
    return work, copied


def as_opened(text: str) -> str:
    """A released notebook as JupyterLab saves it once the kernel has started: with the kernel's language_info
    (Python's version included, which the committed notebooks leave out to stay the same on every machine).
    Without it, a notebook showed as modified the moment its kernel answered."""
    import nbformat
    from ipykernel.ipkernel import IPythonKernel  # the kernel JupyterLab starts: this Python's ipykernel

    nb = nbformat.reads(text, as_version=4)
    if nb.metadata.get("kernelspec", {}).get("language", "python") == "python":
        nb.metadata["language_info"] = dict(IPythonKernel.language_info)
    return nbformat.writes(nb) + "\n"


def settings_file(prefix: str = sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def write_settings(prefix: str = sys.prefix) -> str:
    """Merge OVERRIDES into the environment's overrides.json, and enable the course's server extension that makes
    formgrader's pages escape every value (``grader.classroom.formgrader_escape``); return a problem ('' when done)."""
    from grader.classroom import formgrader_escape

    extension = Path(prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / formgrader_escape.CONFIG_NAME
    text = json.dumps(formgrader_escape.CONFIG, indent=2, sort_keys=True) + "\n"
    try:
        if not extension.is_file() or extension.read_text(encoding="utf-8") != text:
            extension.parent.mkdir(parents=True, exist_ok=True)
            extension.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {extension} ({exc.strerror}): formgrader would show ids unescaped; run `make install` as its owner"
    path = settings_file(prefix)
    try:
        current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        return f"cannot read {path} ({exc}): fix or remove it"
    merged = {**current, **{k: {**current.get(k, {}), **v} for k, v in OVERRIDES.items()}}
    if merged == current:
        return ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        return f"cannot write {path} ({exc.strerror}): JupyterLab will ask about news; run `make install` as its owner"
    return ""


def command(root: Path, assignment: str = ASSIGNMENT, port: int | None = None, browser: bool = True,
            page: str | None = None) -> list[str]:
    """The jupyter lab command line of `make lab` (``page``: the page it opens, default the working copy; `make
    formgrader` opens "/formgrader")."""
    jupyter = Path(sys.executable).with_name("jupyter")
    args = [str(jupyter), "lab", f"--ServerApp.root_dir={root}",
            f"--LabApp.default_url={page or f'/lab/tree/{WORK}/{assignment}'}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if port is not None:
        args += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not browser:
        args.append("--no-browser")
    if os.geteuid() == 0:
        args.append("--allow-root")  # JupyterLab refuses root without it (exit 2)
    return args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.lab", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="the port to serve on (default: JupyterLab's, 8888 or the next free)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--assignment", default=ASSIGNMENT)
    parser.add_argument("--write-settings", action="store_true", help="only write JupyterLab's overrides.json")
    parser.add_argument("--formgrader", action="store_true",
                        help="open nbgrader's formgrader on the course (make formgrader) instead of the working copy")
    args = parser.parse_args(argv)
    problem = write_settings()
    if args.write_settings:
        if problem:
            print(f"grader.classroom.lab: {problem}", file=sys.stderr)
        return 1 if problem else 0
    if problem:
        print(f"make lab: warning: {problem}", file=sys.stderr)
    root = Path.cwd().resolve()
    if not (root / "nbgrader_config.py").is_file():
        print(f"make lab: {root} is not the course root (no nbgrader_config.py): run make from the course root",
              file=sys.stderr)
        return 2
    if args.formgrader:
        print("make formgrader: nbgrader's formgrader on this course (the gradebook, manual grading, feedback), in "
              "JupyterLab's server: the page opens at /formgrader (the address with its token is printed below); "
              "students' names come from the class list (make roster). Ctrl-C stops it.")
        sys.stdout.flush()
        args_ = command(root, args.assignment, args.port, browser=not args.no_browser, page="/formgrader")
        os.execv(args_[0], args_)
    work, copied = working_copy(root, args.assignment)
    relative = work.relative_to(root)
    if copied:
        print(f"make lab: copied {len(copied)} notebook(s) from notebooks/{args.assignment}/ to {relative}/ "
              "(your working copy; notebooks/ stays as `make release` wrote it)")
    else:
        print(f"make lab: your working copy is {relative}/ (kept as you left it; delete a notebook there to get a "
              f"fresh copy from notebooks/{args.assignment}/)")
    sys.stdout.flush()
    args_ = command(root, args.assignment, args.port, browser=not args.no_browser)
    os.execv(args_[0], args_)  # JupyterLab takes this process's place: Ctrl-C and signals reach it directly
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
