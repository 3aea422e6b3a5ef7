"""One `nbgrader autograde` process of `make autograde`, started by ``grader.course`` (one, or ``JOBS`` of them
over disjoint groups of students sharing one PostgreSQL gradebook).

    GRADER_DB_URL=URL python -m grader.nbgrader_job --root COURSE [--workers N] [--exclude FILE] [--scores FILE]
                                                -- autograde ASSIGNMENT [nbgrader's options...]

The gradebook comes in the environment (GRADER_DB_URL, as for every nbgrader command of the course), never on
the command line: a database URL may hold a password, and every user of the machine can read a process's
command line. Every line this process logs has that password hidden, and the names nbgrader logs (student ids,
notebooks, cells) have their control characters and ANSI escapes written out (``grader.untrusted``).

It is nbgrader's own command (``nbgrader ...`` with the same arguments, configuration and log), with these
costs taken off:

* the pool of sandboxed workers starts first, in a thread, while this process imports nbgrader (the workers
  import torch in their sandboxes meanwhile); TrustedExecute takes it when its configuration asks for that
  pool (``grader.pool.take_early``);
* jsonschema's ``rfc3987_syntax`` is not imported: it builds a grammar for about a second at import, for the
  "iri" string formats, which nbformat never checks (it validates notebooks without a format checker);
* nbgrader's many openings of the gradebook share one database engine (``grader.gradebook_engines``): its
  compiled SQL and its connections serve every notebook;
* the start-up's imports (nbgrader, nbconvert, torch for the judge) run without the garbage collector, which
  spent a tenth of a second in every second among their objects, all of which live as long as the process; they
  are frozen, and collection turned back on, before nbgrader starts;
* with ``--scores FILE``, the scores of its students (all but the excluded ones) are read from the gradebook here,
  where nbgrader's API is already imported, and written to FILE as JSON: no other Python start for the table.

``--exclude FILE`` names students (a JSON list) nbgrader leaves out (``CourseDirectory.student_id_exclude``,
passed as configuration: a class's list may be longer than one command-line argument can be).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

STARTED = time.monotonic()


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m grader.nbgrader_job [options] -- autograde ASSIGNMENT [...]")
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m grader.nbgrader_job")
    parser.add_argument("--root", type=Path, required=True, help="the course folder")
    parser.add_argument("--db-url", default=os.environ.get("GRADER_DB_URL", "").strip(),
                        help="the gradebook (nbgrader's CourseDirectory.db_url; default: GRADER_DB_URL, which keeps "
                             "a password off the command line)")
    parser.add_argument("--workers", type=int, default=0,
                        help="sandboxed workers of this process (0: one per core); passed to TrustedExecute")
    parser.add_argument("--no-early-pool", action="store_true",
                        help="do not start a local pool early (grading elsewhere, e.g. on a Dask cluster)")
    parser.add_argument("--exclude", type=Path, help="file of students to leave out, a JSON list")
    parser.add_argument("--scores", type=Path, help="write {student: {exercise: [score, max]}} there, as JSON")
    args = parser.parse_args(argv[:cut])
    if not args.db_url:
        parser.error("no gradebook: set GRADER_DB_URL (e.g. sqlite:///<course>/gradebook.db)")
    nbgrader_args = [*argv[cut + 1:], f"--CourseDirectory.root={args.root}"]  # (the gradebook: main, configuration)
    if args.workers:
        nbgrader_args.append(f"--TrustedExecute.workers={args.workers}")
    return args, nbgrader_args


def log(text: str) -> None:
    """A line in nbgrader's log format (grader.course files it with nbgrader's INFO lines)."""
    print(f"[nbgrader_job | INFO] {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args, nbgrader_args = parse(list(sys.argv[1:] if argv is None else argv))
    from .untrusted import escape_log_arguments, redact

    os.environ["GRADER_DB_URL"] = args.db_url  # (what nbgrader_config.py gives nbgrader, and this process's logs hide)
    escape_log_arguments(secrets=[args.db_url])
    if not args.no_early_pool:
        from . import pool, sandbox

        pool.start_early(sandbox.course_hidden(args.root, args.db_url), args.workers or None)
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # (see the module's docstring)
    gc.disable()  # (see the module's docstring) until what this process imports is frozen

    from traitlets.config import Config

    config = Config()
    excluded: list[str] = []
    if args.exclude:
        excluded = [str(s) for s in json.loads(args.exclude.read_text(encoding="utf-8"))]
        config.CourseDirectory.student_id_exclude = ",".join(excluded)
    config.CourseDirectory.db_url = args.db_url
    from nbgrader.apps.nbgraderapp import NbGraderApp

    from . import gradebook_engines, nbgrader_plugins, runner  # noqa: F401 (runner: torch and the judge, imported now)

    gradebook_engines.share()
    gc.freeze()
    gc.enable()

    log(f"nbgrader and the judge imported at {time.monotonic() - STARTED:.2f} s (seconds after this process started)"
        + ("" if args.no_early_pool else "; the sandboxed workers were started at once"))
    code: int = 0
    try:
        NbGraderApp.launch_instance(argv=nbgrader_args, config=config)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        finished = time.monotonic()
        plugins = sys.modules.get("grader.nbgrader_plugins")
        if plugins is not None:
            plugins._CLASSROOM.close()
        early = sys.modules["grader.pool"].EARLY_TIMES if "grader.pool" in sys.modules else {}
        if "ready" in early and "taken" in early:
            log(f"sandboxed workers started at {early['started'] - STARTED:.2f} s, ready at "
                f"{early['ready'] - STARTED:.2f} s, asked for by nbgrader at {early['taken'] - STARTED:.2f} s "
                "(seconds after this process started)")
        log(f"nbgrader finished {finished - STARTED:.2f} s after this process started, having used {time.process_time():.2f} s "
            f"of CPU (its threads included); sandboxed workers closed in {time.monotonic() - finished:.2f} s")
    if args.scores:
        from .course import gradebook_scores

        read = time.monotonic()
        try:
            table = gradebook_scores(args.db_url, _assignment(nbgrader_args), leave_out=set(excluded))
        except Exception as exc:  # the run's own errors are in the log; the table is not there
            log(redact(f"the scores could not be read from the gradebook: {type(exc).__name__}: {exc}", args.db_url))
        else:
            tmp = args.scores.with_name(args.scores.name + ".tmp")
            tmp.write_text(json.dumps(table), encoding="utf-8")
            os.replace(tmp, args.scores)
            log(f"scores of {len(table)} students read from the gradebook in {time.monotonic() - read:.2f} s")
    gradebook_engines.dispose()
    return code


def _assignment(nbgrader_args: list[str]) -> str:
    positional = [a for a in nbgrader_args if not a.startswith("-")]
    return positional[1] if len(positional) > 1 else "autograd"


def exit_now(code: int) -> None:
    """Exit without Python's teardown of torch and nbgrader (a second or more, after the work is done and
    everything is closed and written)."""
    import logging

    pool = sys.modules.get("grader.pool")
    if pool is not None:
        pool.discard_early(wait=True)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
