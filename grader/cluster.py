"""Grading on many machines: the sandboxed runs on Dask workers (``distributed``), the judging here.

With a scheduler address (``c.TrustedExecute.scheduler = "tcp://host:8786"``, or the environment variable
``GRADER_SCHEDULER``), ``DaskPool`` takes the place of ``grader.pool.Pool`` behind the same interface
(``.size``, ``.run(plan, timeout) -> (bytes, TaskOutcome)``, ``.close()``, ``sandbox.SetupError``). Without
one, nothing here is imported: one machine grades with its own pool, as before.

- Each Dask worker holds warm sandboxed graders: ``SandboxPlugin``, a ``distributed.WorkerPlugin`` registered
  by the client (``dask worker tcp://host:8786`` needs nothing else), starts a ``grader.pool.Pool`` with one
  sandbox per worker thread, with this process's limits and hidden folders, and closes it when grading ends.
  The sandbox is the local one (bubblewrap, seccomp, the ``grader-sandbox`` user): each worker machine needs
  ``make install``.
- Only a notebook's plan (the student's sources and the test cells' check calls) goes to a worker, and only
  the raw results of its sandboxed run come back: the verdicts are decided here (``runner.grade_cells``).
- A worker must run exactly this grader package (``sandbox.package_fingerprint()``); a worker running another
  one, or whose sandbox cannot start, stops grading before anything is recorded, naming its address.
- A Dask worker that dies (a machine lost, a batch job's time over) has its notebooks run again elsewhere by the
  scheduler; a notebook is never charged for it. When no worker is left, or the scheduler is lost, grading stops
  as a setup problem (nothing more is recorded; a re-run grades the rest).

Dask's scheduler does the scheduling: one task per notebook (``pure=False``: two students may hand in the same
plan), its queue, its retries on other workers when one dies. Nothing here schedules.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from distributed import Client, WorkerPlugin, get_worker
from distributed.comm import get_address_host_port
from distributed.scheduler import KilledWorker

from . import pool as local, sandbox

ENV = "GRADER_SCHEDULER"  # the scheduler's address, when c.TrustedExecute.scheduler is not set
PLUGIN_PREFIX = "grader-sandboxes-"
WORKERS_SECONDS = float(os.environ.get("GRADER_WORKERS_SECONDS", "120"))  # to wait for a worker, or with none left
RESUBMIT = 2  # a notebook whose task the scheduler gave up on (its workers kept dying) is submitted again this often
POLL_SECONDS = 2.0


def scheduler_address(configured: str = "") -> str:
    """The Dask scheduler to grade on: ``configured`` (c.TrustedExecute.scheduler), else $GRADER_SCHEDULER, else ""
    (grade on this machine)."""
    return (configured or os.environ.get(ENV, "")).strip()


# --- on each Dask worker ---------------------------------------------------------------------------------------


class SandboxPlugin(WorkerPlugin):
    """Warm sandboxed graders on one Dask worker: a ``grader.pool.Pool`` with one sandbox per worker thread.

    Built on the client with what the sandboxes must be (the client's grader digest, hidden folders, limits);
    sent to every worker by the scheduler, those there and those joining later."""

    def __init__(self, name: str, fingerprint: str, package: str, hide: list[Path], limits: sandbox.Limits):
        self.name = name
        self.fingerprint, self.package, self.hide, self.limits = fingerprint, package, list(hide), limits

    def __getstate__(self) -> dict[str, Any]:  # what travels: the settings, never a pool
        return {k: self.__dict__[k] for k in ("name", "fingerprint", "package", "hide", "limits")}

    async def setup(self, worker: Any) -> None:
        self.address = worker.address
        self.pool: local.Pool | None = None
        self.problem = ""
        self.ready = threading.Event()
        self.closed = False
        try:  # torch's import in each sandbox takes seconds: off the worker's event loop
            pool = await asyncio.to_thread(self._start, worker.state.nthreads)
        except Exception as exc:
            self.problem = _problem_on(self.address, exc)
            self.ready.set()
            raise sandbox.SetupError(self.problem) from None
        if self.closed:  # removed while its sandboxes were starting
            pool.close()
        else:
            self.pool = pool
        self.ready.set()

    def _start(self, threads: int) -> local.Pool:
        mine = sandbox.package_fingerprint()
        if mine != self.fingerprint:
            raise sandbox.SetupError(
                f"it runs a different grader package ({sandbox.trusted_package()}, digest {mine}) than the grading "
                f"process ({self.package}, digest {self.fingerprint}): install the same version of the course on "
                f"that machine (`git pull && make install`) and restart its `dask worker`")
        return local.Pool(hide=self.hide, workers=threads, limits=self.limits)

    def teardown(self, worker: Any) -> None:
        self.closed = True
        pool, self.pool = getattr(self, "pool", None), None
        if pool is not None:
            pool.close()

    def run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        if not self.ready.wait(local.READY_SECONDS + 30):
            raise sandbox.SetupError(f"the Dask worker {self.address}: its sandboxed graders did not start "
                                     f"within {local.READY_SECONDS + 30:g} s")
        if self.pool is None:
            raise sandbox.SetupError(self.problem or f"the Dask worker {self.address} has no sandboxed graders")
        try:
            return self.pool.run(plan, timeout)
        except Exception as exc:  # a sandbox that cannot be replaced there: the worker's problem, not the notebook's
            raise sandbox.SetupError(_problem_on(self.address, exc)) from None


def _problem_on(address: str, exc: BaseException) -> str:
    said = " ".join(str(exc).split()).removeprefix("cannot grade: ").rstrip(".")
    said = said.split(". Nothing was graded")[0]  # the local pool's advice is for this machine, not that one
    if isinstance(exc, sandbox.SandboxUnavailable):
        said = f"the sandbox cannot start there ({said})"
    elif not isinstance(exc, sandbox.SetupError):
        said = f"{type(exc).__name__}: {said}"
    return f"on the Dask worker {address}: {said}"


def run_plan(plugin: str, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
    """The task: one notebook's plan in one of this worker's sandboxes; its raw results go back as they are."""
    worker = get_worker()
    graders = worker.plugins.get(plugin)
    if not isinstance(graders, SandboxPlugin):
        raise sandbox.SetupError(f"on the Dask worker {worker.address}: no sandboxed graders ({plugin}) were started "
                                 "there")
    return graders.run(plan, timeout)


def _plugin_state(plugin: str, dask_worker: Any = None) -> str:
    """'' when the worker's sandboxed graders are ready; 'starting'; or what went wrong (run by ``Client.run``)."""
    graders = dask_worker.plugins.get(plugin)
    if not isinstance(graders, SandboxPlugin) or not hasattr(graders, "ready") or not graders.ready.is_set():
        return "starting"
    return graders.problem if graders.pool is None else ""


def _stale_plugins(prefix: str, dask_scheduler: Any = None) -> list[str]:
    """Sandbox plugins registered by clients no longer connected (an autograde that was killed): to remove."""
    clients = set(dask_scheduler.clients)
    return [name for name in dask_scheduler.worker_plugins
            if name.startswith(prefix) and name.removeprefix(prefix) not in clients]


# --- in the grading process ------------------------------------------------------------------------------------


class DaskPool:
    """``grader.pool.Pool``'s interface over a Dask cluster: ``DaskPool(hide=[...], scheduler="tcp://...")``.

    ``workers``: wait until the cluster has that many threads (default: one worker). ``size`` is the cluster's
    threads, refreshed as workers come and go; ``in_flight`` (how many notebooks the class keeps submitted) is
    taken when grading starts. Raises ``sandbox.SetupError`` saying what happened and what to do."""

    def __init__(self, hide: list[Path], workers: int | None = None, limits: sandbox.Limits = sandbox.Limits(),
                 scheduler: str = ""):
        self.address = scheduler_address(scheduler)
        if not self.address:
            raise sandbox.SetupError(f"no Dask scheduler given (c.TrustedExecute.scheduler or ${ENV})")
        try:
            get_address_host_port(self.address)  # (a Client half-made from a malformed one hangs at exit)
        except ValueError as exc:
            raise sandbox.SetupError(f"{self.address!r} (c.TrustedExecute.scheduler or ${ENV}) is not a Dask "
                                     f"scheduler's address ({exc}): write it as tcp://host:8786") from None
        try:
            self.client = Client(self.address, set_as_default=False)
        except Exception as exc:  # OSError, TimeoutError, ValueError for a malformed address
            raise sandbox.SetupError(
                f"cannot reach the Dask scheduler at {self.address} (c.TrustedExecute.scheduler or ${ENV}): "
                f"{_one_line(exc)}. Start it (`dask scheduler`) and its workers (`dask worker {self.address}`) on "
                f"machines with the course installed, or unset both to grade on this machine") from None
        self.name = PLUGIN_PREFIX + self.client.id
        self._threads_seen, self._seen_at, self._seen_lock = 0, 0.0, threading.Lock()
        try:
            self._wait_for_threads(workers or 1)
            self._start_graders(hide, limits)
        except BaseException:
            self.close()  # the sandboxes started on the workers that could start theirs, too
            raise
        self.in_flight = max(self.size, workers or 0)

    # - starting -

    def _wait_for_threads(self, wanted: int) -> None:
        deadline = time.monotonic() + WORKERS_SECONDS
        while self._threads() < wanted:
            if time.monotonic() > deadline:
                have = self._threads()
                raise sandbox.SetupError(
                    f"the Dask scheduler at {self.address} has {have} worker thread{'s' if have != 1 else ''} after "
                    f"{WORKERS_SECONDS:g} s; {wanted} wanted. Start workers on machines with the course installed "
                    f"(`dask worker {self.address}`, from the course's .venv)")
            time.sleep(0.5)

    def _start_graders(self, hide: list[Path], limits: sandbox.Limits) -> None:
        for stale in self.client.run_on_scheduler(_stale_plugins, PLUGIN_PREFIX):
            try:
                self.client.unregister_worker_plugin(stale)
            except Exception:
                pass  # another client removed it first
        plugin = SandboxPlugin(self.name, sandbox.package_fingerprint(), str(sandbox.trusted_package()),
                               sandbox.default_hidden(hide), limits)
        try:  # every worker starts its sandboxes now; the first failure comes back here
            self.client.register_plugin(plugin, name=self.name)
        except OSError as exc:  # (CommClosedError)
            raise sandbox.SetupError(f"lost the connection to the Dask scheduler at {self.address} (is it running?) "
                                     f"while the workers started their sandboxed graders ({_one_line(exc)})") from None
        except Exception as exc:
            raise sandbox.SetupError(_one_line(exc) if isinstance(exc, sandbox.SetupError) else (
                f"the Dask workers could not start their sandboxed graders ({type(exc).__name__}: {_one_line(exc)}); "
                "each worker machine needs the course installed (`make install`) and `dask worker` started from "
                "its .venv")) from None
        deadline = time.monotonic() + local.READY_SECONDS + 30
        while True:  # workers that joined while registering start theirs on their own: wait for every one
            states = self.client.run(_plugin_state, self.name, on_error="return")
            broken = {a: s for a, s in states.items() if s and s != "starting"}
            if broken:
                address, state = sorted(broken.items())[0]
                raise sandbox.SetupError(_one_line(state) if isinstance(state, str) else _problem_on(address, state))
            if "starting" not in states.values():
                return
            if time.monotonic() > deadline:
                slow = sorted(a for a, s in states.items() if s == "starting")
                raise sandbox.SetupError(f"the sandboxed graders of the Dask worker {slow[0]} did not start within "
                                         f"{local.READY_SECONDS + 30:g} s")
            time.sleep(0.2)

    # - the Pool interface -

    def _threads(self) -> int:
        return sum(self.client.nthreads().values())

    def _threads_lately(self) -> int:
        """The cluster's threads, asked of the scheduler at most every few seconds whatever the threads asking."""
        with self._seen_lock:
            if time.monotonic() - self._seen_at > POLL_SECONDS:
                self._threads_seen, self._seen_at = self._threads(), time.monotonic()
            return self._threads_seen

    @property
    def size(self) -> int:
        """The threads of the cluster's workers (at least 1), refreshed as workers come and go."""
        return max(1, self._threads_lately())

    def describe(self) -> str:
        """'2 workers, 8 threads (tcp://10.0.0.7:40321, ...)': for the log."""
        threads = self.client.nthreads()
        shown = ", ".join(sorted(threads)[:5]) + (", ..." if len(threads) > 5 else "")
        return (f"{len(threads)} worker{'s' if len(threads) != 1 else ''}, {sum(threads.values())} threads, each "
                f"with its sandboxed graders ({shown})")

    def run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        """One notebook's plan on some worker of the cluster: (its raw results, how it ended)."""
        try:
            return self._run(plan, timeout)
        except sandbox.SetupError:
            raise
        except Exception as exc:  # from the worker or the connection: the cluster's trouble, never the notebook's
            raise sandbox.SetupError(f"grading on the Dask cluster at {self.address} failed ({type(exc).__name__}: "
                                     f"{_one_line(exc)})") from None

    def _run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        for _ in range(RESUBMIT + 1):
            future = self.client.submit(run_plan, self.name, plan, timeout, pure=False)
            try:
                return self._result(future)
            except KilledWorker:  # workers died running it, again and again: a few more tries, then a setup problem
                continue
            except CancelledError:  # the connection to the scheduler was lost: Dask reconnects, or closes
                self._reconnected()
                continue
            finally:
                future.release()
        raise sandbox.SetupError(
            f"Dask workers kept dying while running one notebook (the scheduler gave up on it {RESUBMIT + 1} times, "
            "each time after several workers died): look at the workers' logs (memory? killed by the batch "
            "system?); the notebook was not charged")

    def _result(self, future: Any) -> tuple[bytes, local.TaskOutcome]:
        # Waits on a done-callback, not on future.result(timeout=...): that call's timeout can race with the
        # result's arrival inside distributed (dask/distributed#8514: UnboundLocalError 'result'), which a loaded
        # machine hit and which stopped a whole class as "a problem of the grading machines". The result is
        # fetched once the future is done, without a timeout.
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        alone_since = None
        while not done.wait(POLL_SECONDS):
            alone_since = self._watch(alone_since)
        data, ended = future.result()
        if not isinstance(data, bytes) or not isinstance(ended, local.TaskOutcome):
            raise sandbox.SetupError(f"a Dask worker of {self.address} answered something else than results")
        return data, ended

    def _watch(self, alone_since: float | None) -> float | None:
        """While a notebook waits: stop when the scheduler is gone or no worker has been left for too long."""
        status = self.client.status
        if status not in ("running", "connecting"):
            raise sandbox.SetupError(f"lost the connection to the Dask scheduler at {self.address} (is it running?)")
        try:
            threads = self._threads_lately() if status == "running" else None
        except OSError:  # the connection just broke: Dask cancels the future next, then reconnects or closes
            return alone_since
        if threads != 0:
            return None
        alone_since = alone_since or time.monotonic()
        if time.monotonic() - alone_since > WORKERS_SECONDS:
            raise sandbox.SetupError(f"no Dask worker has been connected to {self.address} for {WORKERS_SECONDS:g} s: "
                                     f"start workers (`dask worker {self.address}`)")
        return alone_since

    def _reconnected(self) -> None:
        deadline = time.monotonic() + 60
        while self.client.status == "connecting" and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.client.status != "running":
            raise sandbox.SetupError(f"lost the connection to the Dask scheduler at {self.address} (is it running?)")

    def close(self) -> None:
        """Stop the workers' sandboxed graders started for this run, and disconnect."""
        client, self.client = self.client, None
        if client is None:
            return
        try:
            if client.status == "running":
                client.unregister_worker_plugin(self.name)
        except Exception:
            pass  # the scheduler is gone: so are the plugins' pools, with their workers
        finally:
            client.close()

    def __enter__(self) -> "DaskPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _one_line(exc: Any) -> str:
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
