"""Grading on many machines: the sandboxed runs on Dask workers (``distributed``), the judging here.

With a scheduler address (``c.TrustedExecute.scheduler = "tls://host:8786"``, or the environment variable
``GRADER_SCHEDULER``), ``DaskPool`` takes the place of ``grader.isolation.pool.Pool`` behind the same interface
(``.size``, ``.run_plan(plan, timeout) -> (bytes, TaskOutcome)``, ``.close()``, ``sandbox.SetupError``). Without
one, nothing here is imported: one machine grades with its own pool, as before.

- The cluster is authenticated: mutual TLS with the course's own certificate authority (``python -m
  grader.isolation.cluster certificates`` makes it, with the scheduler's, the workers' and the grading process's
  certificates, in ``cluster-tls/`` or $GRADER_CLUSTER_TLS). The grading process talks only to a ``tls://``
  scheduler, with ``require_encryption``; a worker without a certificate signed by the course's CA cannot join,
  so it never receives a student's code. Dask runs whatever a connected peer sends, and its wire protocol can
  carry pickles (``distributed.protocol.core.loads``' ``__Pickled__`` objects, the exceptions of failed tasks):
  the certificates are what keeps strangers out; what follows limits what a certified worker can do.
- A worker's answer is plain data: the task returns bytes (JSON: the raw results, how the run ended, a proof),
  the client deserializes only msgpack (``DESERIALIZERS``), a failed task's exception is unpickled with an
  allow-list (``_restricted_exception``), and the results are read with the bounds of local results
  (``runner._read_results``). An answer that is anything else fails that notebook, never the class.
- The grading process checks each worker's grader package itself: it sends a fresh nonce, and the worker must
  answer HMAC(key: the digest of its grader sources, the nonce), at start and with every result (the proof
  covers the answer). A worker running other sources cannot answer (one that keeps a copy of the right sources
  can: the certificates, not this check, keep hostile machines out).

- Each Dask worker holds warm sandboxed graders: ``SandboxPlugin``, a ``distributed.WorkerPlugin`` registered
  by the client (``dask worker tls://host:8786`` with the course's worker certificate needs nothing else), starts a ``grader.isolation.pool.Pool`` with one
  sandbox per worker thread, with this process's limits and hidden folders, and closes it when grading ends.
  The sandbox is the local one (bubblewrap, seccomp, the ``grader-sandbox`` user): each worker machine needs
  ``make install``.
- Only a notebook's plan (the student's sources and the test cells' check calls) goes to a worker, and only
  the raw results of its sandboxed run come back: the verdicts are decided here (``runner.grade_cells``).
- A worker must run exactly this grader package (the challenge above); a worker running another one, or whose
  sandbox cannot start, stops grading before anything is recorded, naming its address.
- A Dask worker that dies (a machine lost, a batch job's time over) has its notebooks run again elsewhere by the
  scheduler; a notebook is never charged for it. When no worker is left, or the scheduler is lost, grading stops
  as a setup problem (nothing more is recorded; a re-run grades the rest).

Dask's scheduler does the scheduling: one task per notebook (``pure=False``: two students may hand in the same
plan), its queue, its retries on other workers when one dies. Nothing here schedules.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import datetime
import hashlib
import hmac
import io
import ipaddress
import json
import logging
import os
import pickle
import secrets
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import distributed.client
import distributed.core
from distributed import Client, WorkerPlugin, get_worker
from distributed.comm import get_address_host_port, parse_address
from distributed.scheduler import KilledWorker
from distributed.security import Security

from grader.boundary import fingerprint
from grader.boundary.channel import RESULTS_LIMIT
from grader.isolation import pool as local, sandbox

ENV = "GRADER_SCHEDULER"  # the scheduler's address, when c.TrustedExecute.scheduler is not set
TLS_ENV = "GRADER_CLUSTER_TLS"  # the folder of the course's cluster certificates
TLS_FOLDER = Path(__file__).resolve().parents[2] / "cluster-tls"  # ... when $GRADER_CLUSTER_TLS is not set
ROLES = ("scheduler", "worker", "client")
# What the grading process deserializes of what comes from the cluster: msgpack only (plain data: bytes, str,
# numbers, lists, dicts), never "pickle" or "dask" (which has the registered types, e.g. numpy/torch). Measured
# with distributed 2026.8 on a TLS cluster: a task's bytes/str/tuple results, Client.run's and run_on_scheduler's
# plain results and the scheduler's own messages all come through; a task returning an object with __reduce__
# (pickled by the worker) arrives as "Data serialized with error/pickle but only able to deserialize data with
# ['msgpack']" (a TypeError for that future; nothing is unpickled, the client keeps working). Not covered by this
# list: the exceptions of failed tasks (Dask unpickles them in ``clean_exception``: see _restricted_exception) and
# ``__Pickled__`` objects, which distributed.protocol.core.loads unpickles whatever the list (an honest worker
# never sends one to a client; a certificate is needed to try).
DESERIALIZERS = ["msgpack"]
ANSWER_BYTES = 6 * RESULTS_LIMIT + 2**20  # a worker's JSON answer: a notebook's results, JSON-escaped
OUTCOMES = ("", "timeout", "output", "worker")
log = logging.getLogger(__name__)
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
    """Warm sandboxed graders on one Dask worker: a ``grader.isolation.pool.Pool`` with one sandbox per worker thread.

    Built on the client with what the sandboxes must be (hidden folders, limits); sent to every worker by the
    scheduler, those there and those joining later. It does not check its own grader package: the grading process
    does, with a challenge (``prove``), at start and with every answer."""

    def __init__(self, name: str, hide: list[Path], limits: sandbox.Limits):
        self.name = name
        self.hide, self.limits = list(hide), limits

    def __getstate__(self) -> dict[str, Any]:  # what travels: the settings, never a pool
        return {k: self.__dict__[k] for k in ("name", "hide", "limits")}

    async def setup(self, worker: Any) -> None:
        self.address = worker.address
        self.pool: local.Pool | None = None
        self.problem = ""
        self.ready = threading.Event()
        self.closed = False
        try:  # torch's import in each sandbox takes seconds: off the worker's event loop
            pool = await asyncio.to_thread(self._start, worker.state.nthreads)
        except Exception as exc:  # kept for _plugin_state, as plain text: not raised (an exception travels pickled)
            self.problem = _problem_on(self.address, exc)
            self.ready.set()
            return
        if self.closed:  # removed while its sandboxes were starting
            pool.close()
        else:
            self.pool = pool
        self.ready.set()

    def _start(self, threads: int) -> local.Pool:
        return local.Pool(hide=self.hide, workers=threads, limits=self.limits)

    def teardown(self, worker: Any) -> None:
        self.closed = True
        pool, self.pool = getattr(self, "pool", None), None
        if pool is not None:
            pool.close()

    def run_plan(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        if not self.ready.wait(local.READY_SECONDS + 30):
            raise sandbox.SetupError(f"the Dask worker {self.address}: its sandboxed graders did not start "
                                     f"within {local.READY_SECONDS + 30:g} s")
        if self.pool is None:
            raise sandbox.SetupError(self.problem or f"the Dask worker {self.address} has no sandboxed graders")
        try:
            return self.pool.run_plan(plan, timeout)
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


def run_plan(plugin: str, plan: list[dict[str, Any]], timeout: float, nonce: str) -> bytes:
    """The task: one notebook's plan in one of this worker's sandboxes. Its answer is plain data, JSON bytes:
    {"answer": '{"results": ..., "returncode": ..., "stopped": ..., "worker": ...}' (or "setup_error"), "proof":
    HMAC(this grader's sources, nonce + answer)}. It never raises: a failed task's exception is a pickle."""
    worker = get_worker()
    try:
        graders = worker.plugins.get(plugin)
        if not isinstance(graders, SandboxPlugin):
            raise sandbox.SetupError(f"on the Dask worker {worker.address}: no sandboxed graders ({plugin}) were "
                                     "started there")
        data, ended = graders.run_plan(plan, timeout)
        answer: dict[str, Any] = {"results": data.decode("utf-8", errors="replace"), "returncode": ended.returncode,
                                  "stopped": ended.stopped}
    except sandbox.SetupError as exc:
        answer = {"setup_error": str(exc)}
    except Exception as exc:
        answer = {"setup_error": _problem_on(worker.address, exc)}
    answer["worker"] = worker.address
    text = json.dumps(answer)
    return json.dumps({"answer": text, "proof": prove(nonce, text.encode())}).encode()


def _answer_challenge(nonce: str, dask_worker: Any = None) -> str:
    """A worker's answer to the grading process's challenge (run by ``Client.run``): plain JSON text."""
    return json.dumps({"proof": prove(nonce), "package": str(sandbox.trusted_package())})


# --- the grader package's proof ----------------------------------------------------------------------------------


def _package_key(folder: Path) -> bytes:
    """The full digest of the grader package's sources (the files ``sandbox.package_fingerprint`` covers)."""
    return fingerprint.digest(folder)


_KEY = _package_key(fingerprint.PACKAGE)  # this package's, as this process imported it


def prove(nonce: str, message: bytes = b"") -> str:
    """HMAC-SHA256 keyed by the digest of this process's grader sources, over a fresh nonce (and an answer): a
    process with other sources cannot compute the grading process's value for a nonce it has not seen."""
    return hmac.new(_KEY, nonce.encode("utf-8", errors="surrogatepass") + b"\0" + message, hashlib.sha256).hexdigest()


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
    """``grader.isolation.pool.Pool``'s interface over a Dask cluster: ``DaskPool(hide=[...], scheduler="tls://...")``, with
    the course's client certificate (``certificates``: its folder; default $GRADER_CLUSTER_TLS, else cluster-tls/).

    ``workers``: wait until the cluster has that many threads (default: one worker). ``size`` is the cluster's
    threads, refreshed as workers come and go; ``in_flight`` (how many notebooks the class keeps submitted) is
    taken when grading starts. Raises ``sandbox.SetupError`` saying what happened and what to do."""

    def __init__(self, hide: list[Path], workers: int | None = None, limits: sandbox.Limits = sandbox.Limits(),
                 scheduler: str = "", certificates: str | Path = "", log: Any = None):
        self.client = None
        self.log = log or globals()["log"]  # where a retried notebook is said (nbgrader's log, from TrustedExecute)
        self._lost: dict[str, list[str]] = {}  # task key -> the workers lost while they were running it
        self._lost_lock = threading.Lock()
        self.address = scheduler_address(scheduler)
        if not self.address:
            raise sandbox.SetupError(f"no Dask scheduler given (c.TrustedExecute.scheduler or ${ENV})")
        try:
            get_address_host_port(self.address)  # (a Client half-made from a malformed one hangs at exit)
        except ValueError as exc:
            raise sandbox.SetupError(f"{self.address!r} (c.TrustedExecute.scheduler or ${ENV}) is not a Dask "
                                     f"scheduler's address ({exc}): write it as tls://host:8786") from None
        if parse_address(self.address)[0] != "tls":
            raise sandbox.SetupError(
                f"refusing to grade on the Dask scheduler at {self.address} (c.TrustedExecute.scheduler or ${ENV}): "
                "it is not a tls:// address, and on a cluster without TLS anyone who reaches the scheduler can join "
                "as a worker, receive every student's code and send back forged results. Create the course's "
                "certificates (`python -m grader.isolation.cluster certificates`), start `dask scheduler` and `dask worker` "
                "with them (docs/cluster.md, section \"Grading on many machines\") and give the address as "
                "tls://host:8786")
        folder = tls_folder(certificates)
        security = cluster_security(folder, "client")
        _restrict_unpickling()
        try:
            self.client = Client(self.address, security=security, deserializers=DESERIALIZERS, set_as_default=False)
            self.client.unsubscribe_topic("warn")  # a worker's warnings arrive pickled: not wanted here
            # the scheduler's "remove-worker" events name the tasks the lost worker was running (Dask runs them
            # again elsewhere, silently): each such notebook gets a line (_said_retried)
            self.client.subscribe_topic("all", self._on_event)
        except Exception as exc:  # OSError, TimeoutError, ValueError for a malformed address
            raise sandbox.SetupError(
                f"cannot reach the Dask scheduler at {self.address} (c.TrustedExecute.scheduler or ${ENV}): "
                f"{_one_line(exc)}. Start it (`dask scheduler` with the course's certificates from {folder}) and its "
                f"workers (`dask worker {self.address}` with theirs), on machines with the course installed; a "
                "scheduler whose certificate the course's CA did not sign is refused too. Or unset both to grade "
                "on this machine") from None
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
        self._challenge()
        plugin = SandboxPlugin(self.name, sandbox.default_hidden(hide), limits)
        try:  # every worker starts its sandboxes now; their problems are read below, as text (_plugin_state)
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

    def _challenge(self) -> None:
        """Every connected worker proves it runs this grader package: HMAC(its sources' digest, a fresh nonce),
        computed there, compared here (a worker joining later proves it with each answer, see ``_read_answer``)."""
        nonce = secrets.token_hex(16)
        expected = prove(nonce)
        answers = self.client.run(_answer_challenge, nonce, on_error="return")
        for address, said in sorted(answers.items()):
            try:
                answer = json.loads(said) if isinstance(said, str) else None
            except ValueError:
                answer = None
            proof = answer.get("proof") if isinstance(answer, dict) else None
            if isinstance(proof, str) and hmac.compare_digest(proof, expected):
                continue
            theirs = str(answer.get("package"))[:300] if isinstance(answer, dict) else (
                f"no answer: {_one_line(said)[:300]}")
            raise sandbox.SetupError(
                f"on the Dask worker {address}: it runs a different grader package ({theirs}) than the grading "
                f"process ({sandbox.trusted_package()}, digest {sandbox.package_fingerprint()}): it could not answer "
                "the grading process's challenge (an HMAC of a fresh nonce keyed by the grader's sources). Install "
                "the same version of the course on that machine (`git pull && make install`) and restart its "
                "`dask worker`")

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
        """'2 workers, 8 threads (tls://10.0.0.7:40321, ...)': for the log."""
        threads = self.client.nthreads()
        shown = ", ".join(sorted(threads)[:5]) + (", ..." if len(threads) > 5 else "")
        return (f"{len(threads)} worker{'s' if len(threads) != 1 else ''}, {sum(threads.values())} threads, each "
                f"with its sandboxed graders ({shown})")

    def run_plan(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        """One notebook's plan on some worker of the cluster: (its raw results, how it ended)."""
        try:
            return self._run(plan, timeout)
        except sandbox.SetupError:
            raise
        except Exception as exc:  # from the worker or the connection: the cluster's trouble, never the notebook's
            if getattr(self.client, "status", "running") not in ("running", "connecting"):
                # the scheduler went away and the client closed before the next submit (Dask's ClosedClientError,
                # "Client is closed": seen when the machine is busy): said as the watch says it
                raise sandbox.SetupError(f"lost the connection to the Dask scheduler at {self.address} "
                                         "(is it running?)") from None
            raise sandbox.SetupError(f"grading on the Dask cluster at {self.address} failed ({type(exc).__name__}: "
                                     f"{_one_line(exc)})") from None

    def _on_event(self, event: Any) -> None:
        """A scheduler event (topic "all"): remember the tasks of a worker that was removed."""
        msg = event[1] if isinstance(event, (tuple, list)) and len(event) == 2 else None
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            return
        worker = str(msg.get("worker", "?"))[:200]
        tasks = msg.get("processing-tasks")
        with self._lost_lock:
            for key in tasks if isinstance(tasks, (set, list, tuple, frozenset)) else ():
                self._lost.setdefault(str(key), []).append(worker)

    def _lost_on(self, key: Any) -> list[str]:
        with self._lost_lock:
            return self._lost.pop(str(key), [])

    def _said_retried(self, key: Any, where: str) -> None:
        """One line for a notebook Dask ran again because the worker running it was lost."""
        lost = self._lost_on(key)
        if lost:
            self.log.warning("%s: the Dask worker %s was lost while running it; run again on %s (nothing charged)",
                             local.GRADING.get() or "a notebook", ", ".join(dict.fromkeys(lost)), where)

    def _run(self, plan: list[dict[str, Any]], timeout: float) -> tuple[bytes, local.TaskOutcome]:
        for attempt in range(RESUBMIT + 1):
            nonce = secrets.token_hex(16)  # fresh for each task: an answer for another task is not this one's
            future = self.client.submit(run_plan, self.name, plan, timeout, nonce, pure=False)
            try:
                data, ended, worker = self._read_answer(self._result(future), nonce)
                self._said_retried(getattr(future, "key", None), worker)
                return data, ended
            except KilledWorker:  # workers died running it, again and again: a few more tries, then a setup problem
                lost = self._lost_on(getattr(future, "key", None))
                self.log.warning("%s: Dask gave up on it after its workers died (%s); submitted again (%d of %d, "
                                 "nothing charged)", local.GRADING.get() or "a notebook",
                                 ", ".join(dict.fromkeys(lost)) or "see the scheduler's log", attempt + 1, RESUBMIT)
                continue
            except CancelledError:  # the connection to the scheduler was lost: Dask reconnects, or closes
                self._reconnected()
                continue
            except _Unreadable as exc:  # that notebook fails (no observation: every check 0), the class goes on
                self.log.warning("a Dask worker of %s answered a notebook with something else than its results (%s): "
                            "the notebook is reported as not graded", self.address, exc)
                return b"", local.TaskOutcome(None, "worker")
            finally:
                future.release()
        raise sandbox.SetupError(
            f"Dask workers kept dying while running one notebook (the scheduler gave up on it {RESUBMIT + 1} times, "
            "each time after several workers died): look at the workers' logs (memory? killed by the batch "
            "system?); the notebook was not charged")

    def _result(self, future: Any) -> Any:
        # Waits on a done-callback, not on future.result(timeout=...): that call's timeout can race with the
        # result's arrival inside distributed (dask/distributed#8514: UnboundLocalError 'result'), which a loaded
        # machine hit and which stopped a whole class as "a problem of the grading machines". The result is
        # fetched once the future is done, without a timeout.
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        alone_since = None
        while not done.wait(POLL_SECONDS):
            alone_since = self._watch(alone_since)
        try:
            return future.result()
        except TypeError as exc:  # Dask's refusal to deserialize anything but msgpack (DESERIALIZERS)
            if "only able to deserialize" in str(exc):
                raise _Unreadable(_one_line(exc)[:300]) from None
            raise

    def _read_answer(self, data: Any, nonce: str) -> tuple[bytes, local.TaskOutcome, str]:
        """(results, how the run ended, the address of the worker that answered) from a worker's answer, which
        must be run_plan's JSON with a valid proof. Anything malformed raises _Unreadable (that notebook fails); a
        wrong proof, or a worker's setup problem, sandbox.SetupError (grading stops)."""
        if not isinstance(data, bytes) or len(data) > ANSWER_BYTES:
            raise _Unreadable(f"{type(data).__name__} of {len(data) if isinstance(data, bytes) else '?'} bytes")
        try:
            outer = json.loads(data)
            text, proof = outer["answer"], outer["proof"]
            answer = json.loads(text)
        except (ValueError, TypeError, KeyError, RecursionError):
            raise _Unreadable("not run_plan's JSON") from None
        if not isinstance(text, str) or not isinstance(proof, str) or not isinstance(answer, dict):
            raise _Unreadable("not run_plan's JSON")
        worker = str(answer.get("worker", "?"))[:200]
        if not hmac.compare_digest(proof, prove(nonce, text.encode("utf-8", errors="surrogatepass"))):
            raise sandbox.SetupError(
                f"the Dask worker {worker} answered a notebook without proving it runs the grading process's grader "
                f"package ({sandbox.trusted_package()}, digest {sandbox.package_fingerprint()}): its answer was not "
                "used. It runs a different grader package (or a modified one): install the same version of the "
                "course on that machine (`git pull && make install`) and restart its `dask worker`")
        if "setup_error" in answer:
            raise sandbox.SetupError(_one_line(answer["setup_error"])[:2000])
        results, code, stopped = answer.get("results"), answer.get("returncode"), answer.get("stopped")
        if (not isinstance(results, str) or stopped not in OUTCOMES
                or not (code is None or (type(code) is int and abs(code) < 2**31))):
            raise _Unreadable(f"malformed results from {worker}")
        return results.encode("utf-8", errors="replace"), local.TaskOutcome(code, stopped), worker

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
        client, self.client = getattr(self, "client", None), None
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


class _Unreadable(Exception):
    """A worker's answer that is not run_plan's plain JSON (or an error that could not be read safely)."""


# --- failed tasks' exceptions, read without unpickling code ------------------------------------------------------

_EXCEPTION_ROOTS = ("builtins", "distributed", "dask", "tornado", "asyncio", "concurrent")


class _Dropped:
    """Stands for a traceback's parts (tblib's Frame, Code...): nothing of them is rebuilt."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "_Dropped":
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass


def _exception_with_attrs(func: type, attrs: Any, cause: Any = None, tb: Any = None, context: Any = None,
                          suppress_context: Any = False, notes: Any = None, args: Any = ()) -> BaseException:
    inst = func.__new__(func, *args) if isinstance(args, tuple) else func.__new__(func)
    for key, value in (attrs.items() if isinstance(attrs, dict) else ()):
        if isinstance(key, str) and not key.startswith("__"):
            setattr(inst, key, value)
    inst.__cause__ = cause if isinstance(cause, BaseException) else None
    return inst


def _exception(func: type, args: Any, cause: Any = None, *rest: Any) -> BaseException:
    inst = func(*args) if isinstance(args, tuple) else func()
    inst.__cause__ = cause if isinstance(cause, BaseException) else None
    return inst


class _ExceptionUnpickler(pickle.Unpickler):
    """Loads only exception classes of modules already imported from builtins and Dask's own packages, and tblib's
    pickled exceptions (their tracebacks dropped): any other global (os.system, a worker's own class...) is
    refused before anything is called."""

    SUBSTITUTES = {("tblib.pickling_support", "unpickle_exception_with_attrs"): _exception_with_attrs,
                   ("tblib.pickling_support", "unpickle_exception"): _exception,
                   ("tblib.pickling_support", "unpickle_traceback"): lambda *args, **kwargs: None,
                   ("tblib", "Frame"): _Dropped, ("tblib", "Code"): _Dropped, ("tblib", "Traceback"): _Dropped}

    PLAIN = {"bytes", "str", "int", "float", "bool", "list", "tuple", "dict", "set", "frozenset", "bytearray"}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.SUBSTITUTES:
            return self.SUBSTITUTES[(module, name)]
        if module == "builtins" and name in self.PLAIN:  # (a result's type, reported by the worker)
            return getattr(builtins, name)
        found = getattr(sys.modules.get(module), name, None) if module.split(".")[0] in _EXCEPTION_ROOTS else None
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not an exception class")


_clean_exception = distributed.core.clean_exception


def _restricted_exception(exception: Any = None, traceback: Any = None, **kwargs: Any) -> Any:
    """``distributed.core.clean_exception`` for the grading process. Dask unpickles the exception of a failed task
    (or of a worker's failed ``Client.run``) as soon as it arrives, whatever the client's deserializers: a worker's
    exception with a __reduce__ would run code here. Read with ``_ExceptionUnpickler`` instead; tracebacks are
    dropped; what cannot be read becomes ``_Unreadable``."""
    if isinstance(exception, (bytes, bytearray)):
        try:
            exception = _ExceptionUnpickler(io.BytesIO(bytes(exception))).load()
        except Exception as exc:
            exception = _Unreadable(f"an error from the cluster that was not unpickled ({_one_line(exc)[:200]})")
        if not isinstance(exception, BaseException):
            exception = _Unreadable(f"an error from the cluster that is not an exception ({type(exception).__name__})")
    return _clean_exception(exception, None)


def _restricted_loads(data: Any, **kwargs: Any) -> Any:
    """``distributed.client.loads`` for the grading process: the type of a task's result that a worker reports
    (the client unpickles it as soon as the task is done) and a worker's failed ``Client.run``. Plain types and
    exceptions only; anything else is None (the client then does without the type) or ``_Unreadable``."""
    try:
        return _ExceptionUnpickler(io.BytesIO(bytes(data))).load()
    except Exception as exc:
        return _Unreadable(f"data from the cluster that was not unpickled ({_one_line(exc)[:200]})")


def _restrict_unpickling() -> None:
    """Where the client unpickles what workers send whatever its deserializers (distributed 2026.8: the exceptions
    of failed tasks and of ``Client.run``, a result's type), this process uses the allow-list instead. (The "warn"
    events a worker can send, also pickles, are unsubscribed on the client: ``DaskPool.__init__``.) Not covered:
    ``__Pickled__`` objects in a message (``distributed.protocol.core.loads``), which the scheduler forwards only
    from peers that hold a course certificate."""
    distributed.core.clean_exception = _restricted_exception
    distributed.client.clean_exception = _restricted_exception
    distributed.client.loads = _restricted_loads


# --- the course's certificates -----------------------------------------------------------------------------------


def tls_folder(configured: str | Path = "") -> Path:
    """The folder of the course's cluster certificates: ``configured``, else $GRADER_CLUSTER_TLS, else cluster-tls/
    beside the grader package."""
    return Path(configured or os.environ.get(TLS_ENV, "").strip() or TLS_FOLDER).expanduser()


def _files(folder: Path, role: str) -> tuple[Path, Path, Path]:
    return folder / "ca.pem", folder / f"{role}.pem", folder / f"{role}-key.pem"


def cluster_security(folder: Path, role: str = "client") -> Security:
    """Dask's mutual TLS with the course's certificates for ``role`` (scheduler, worker or client), encryption
    required. Raises sandbox.SetupError saying how to make them when they are missing."""
    missing = [str(p) for p in _files(folder, role) if not p.is_file()]
    if missing:
        raise sandbox.SetupError(
            f"the course's cluster certificates are missing ({', '.join(missing)}): create them on the grading "
            f"machine with `python -m grader.isolation.cluster certificates --folder {folder}` (or point ${TLS_ENV} at the "
            "folder that has them), then start the scheduler and workers with theirs (docs/cluster.md, "
            "section \"Grading on many machines\")")
    ca, cert, key = _files(folder, role)
    return Security(tls_ca_file=str(ca), require_encryption=True,
                    **{f"tls_{role}_cert": str(cert), f"tls_{role}_key": str(key)})


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def make_certificates(folder: Path, hosts: list[str] = (), days: int = 400,  # type: ignore[assignment]
                      force: bool = False) -> Path:
    """The course's certificate authority and the certificates of the scheduler, the workers and the grading
    process (the client), signed by it: ``ca.pem``, ``ca-key.pem``, ``ROLE.pem``, ``ROLE-key.pem`` in ``folder``
    (mode 0700, files 0600). ``hosts``: the scheduler's names or addresses (put in its certificate; Dask does not
    check host names, the CA is what counts). Refuses to replace an existing CA unless ``force``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    if (folder / "ca.pem").exists() and not force:
        raise FileExistsError(f"{folder / 'ca.pem'} exists: the course already has a cluster CA (its workers' "
                              "certificates would stop working). Pass --force to make a new one")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=days)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "autograd course grading"),
                          x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def key_pem(key: Any) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("course cluster CA")).issuer_name(name("course cluster CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    _write_private(folder / "ca-key.pem", key_pem(ca_key))
    _write_private(folder / "ca.pem", ca.public_bytes(serialization.Encoding.PEM))
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(f"course cluster {role}")).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(until)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        _write_private(folder / f"{role}-key.pem", key_pem(key))
        _write_private(folder / f"{role}.pem", cert.public_bytes(serialization.Encoding.PEM))
    return folder


def tls_arguments(folder: Path, role: str) -> list[str]:
    """`dask scheduler` / `dask worker`'s TLS arguments for ``role``."""
    ca, cert, key = _files(folder, role)
    return ["--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.isolation.cluster",
                                     description="The course's Dask cluster: its TLS certificates.")
    sub = parser.add_subparsers(dest="command", required=True)
    certs = sub.add_parser("certificates", help="create the course's CA and the scheduler's, workers' and grading "
                                                "process's certificates (files 0600)")
    certs.add_argument("--folder", default="", help=f"where (default: ${TLS_ENV}, else {TLS_FOLDER})")
    certs.add_argument("--host", action="append", default=[], help="the scheduler's host name or address "
                                                                   "(repeatable)")
    certs.add_argument("--days", type=int, default=400, help="validity (default 400 days)")
    certs.add_argument("--force", action="store_true", help="replace an existing CA (re-copy the workers' files)")
    args = parser.parse_args(argv)
    folder = tls_folder(args.folder).resolve()
    try:
        make_certificates(folder, args.host, args.days, args.force)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    host = args.host[0] if args.host else "grading-host"
    print(f"""created the course's cluster certificates in {folder} (files 0600; keep ca-key.pem on this machine)
scheduler (this machine):  .venv/bin/dask scheduler --protocol tls --port 8786 --no-dashboard \\
    {' '.join(tls_arguments(folder, 'scheduler'))}
workers: copy ca.pem, worker.pem and worker-key.pem (only those) to each worker machine, e.g. into its clone's
    cluster-tls/ (chmod 600), then:  .venv/bin/dask worker tls://{host}:8786 --nthreads 4 \\
    {' '.join(tls_arguments(Path('cluster-tls'), 'worker'))}
grading:   GRADER_SCHEDULER=tls://{host}:8786 make autograde   (uses client.pem from {folder})""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
