"""A local PostgreSQL server for the gradebook, in a folder of its own: for trying ``make autograde JOBS=N`` and
for the tests. A course server's real PostgreSQL works as well (give its URL in ``GRADER_DB_URL``).

    python -m grader.classroom.postgres start [--dir .postgres]   # prints the gradebook's URL (GRADER_DB_URL=...)
    python -m grader.classroom.postgres stop  [--dir .postgres]

Uses Debian's ``postgresql`` (``initdb`` and ``pg_ctl``, installed by ``make install``). The server runs as an
unprivileged user (PostgreSQL refuses to run as root: as root, the ``postgres`` user Debian's package creates),
listens on no TCP port, only on a Unix socket inside the folder, and trusts whoever can reach that socket: the
folder is private to that user (and root). Nothing here is meant for a shared or remote server.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

DATABASE = "gradebook"
PORT = 5432  # only names the socket file (.s.PGSQL.5432) in the folder: no TCP port is opened
DRIVER = "postgresql+psycopg"  # SQLAlchemy's dialect for psycopg 3 (pinned in requirements.lock)


class Unavailable(Exception):
    """PostgreSQL cannot run here; str() says why and what to install."""


def binaries() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's /usr/lib/postgresql/<newest>/bin."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if versions and (versions[-1].parent / "initdb").exists():
        return versions[-1].parent
    raise Unavailable("PostgreSQL's server programs (initdb, pg_ctl) are not installed: `make install` installs "
                      "Debian's postgresql as root (or: sudo apt-get install postgresql)")


def server_user() -> str:
    """Whom the server runs as: the current user, or as root Debian's ``postgres`` user."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable("PostgreSQL refuses to run as root and there is no 'postgres' user "
                          "(Debian's postgresql package creates it: apt-get install postgresql)") from None
    if not shutil.which("runuser"):
        raise Unavailable("runuser (util-linux) is needed to start PostgreSQL as the 'postgres' user")
    return "postgres"


class LocalPostgres:
    """A PostgreSQL server in ``folder`` (data/, socket/, server.log), started by ``start()`` (which returns the
    gradebook's URL), stopped by ``stop()``. Also a context manager that stops it whatever happens."""

    def __init__(self, folder: Path, database: str = DATABASE) -> None:
        self.folder = Path(folder).absolute()
        self.database = database
        self.data = self.folder / "data"
        self.socket = self.folder / "socket"
        self.log = self.folder / "server.log"

    @property
    def url(self) -> str:
        return f"{DRIVER}://postgres@/{self.database}?host={self.socket}&port={PORT}"

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        user = server_user()
        prefix = [shutil.which("runuser") or "runuser", "-u", user, "--"] if os.geteuid() == 0 else []
        done = subprocess.run(prefix + args, cwd=self.folder, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})
        return done

    def _check_reachable(self, user: str) -> None:
        """The server's user must be able to reach the folder: each folder above it must let others pass."""
        if os.geteuid() != 0:
            return
        for parent in self.folder.parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                raise Unavailable(f"the '{user}' user cannot reach {self.folder}: {parent} is not traversable by "
                                  f"others (chmod o+x {parent}, or put the server's folder elsewhere)")

    def start(self) -> str:
        """Create the server (once) and start it; return the gradebook's URL. Raises Unavailable."""
        bin_dir = binaries()
        user = server_user()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._check_reachable(user)
        self.socket.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            info = pwd.getpwnam(user)
            for path in (self.folder, self.socket):
                os.chown(path, info.pw_uid, info.pw_gid)
        os.chmod(self.folder, 0o700)
        if not (self.data / "PG_VERSION").exists():
            done = self._run([str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                              "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"])
            if done.returncode != 0:
                raise Unavailable(f"initdb failed in {self.data}: {_last_lines(done.stderr or done.stdout)}")
        if not self.running():
            options = f"-k {self.socket} -p {PORT} -c listen_addresses='' -c fsync=off -c max_connections=200"
            done = self._run([str(bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                              "-o", options, "start"])
            if done.returncode != 0:
                raise Unavailable(f"PostgreSQL did not start: {_last_lines(done.stderr or done.stdout)}; "
                                  f"its log: {self.log}")
        self._create_database()
        return self.url

    def running(self) -> bool:
        if not (self.data / "postmaster.pid").exists():
            return False
        return self._run([str(binaries() / "pg_ctl"), "-D", str(self.data), "status"]).returncode == 0

    def _create_database(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(host=str(self.socket), port=PORT, user="postgres", dbname="postgres",
                                     autocommit=True) as db:
                    if not db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)).fetchone():
                        db.execute(f'CREATE DATABASE "{self.database}"')
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the server (fast shutdown); nothing happens if it is not running."""
        if (self.data / "postmaster.pid").exists():
            self._run([str(binaries() / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop"])

    def __enter__(self) -> "LocalPostgres":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:]) or "no output"


def stop_command(folder: Path) -> str:
    """How to stop the server in ``folder``: `make postgres-stop` when started by `make postgres` (make sets
    MAKELEVEL in its commands' environment), else this module's command."""
    if os.environ.get("MAKELEVEL"):
        return "make postgres-stop" + ("" if Path(folder) == Path(".postgres") else f" POSTGRES_DIR={folder}")
    return f"python -m grader.classroom.postgres stop --dir {folder}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.postgres", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop", "url"])
    parser.add_argument("--dir", type=Path, default=Path(".postgres"), help="the server's folder (default .postgres)")
    args = parser.parse_args(argv)
    server = LocalPostgres(args.dir)
    try:
        if args.action == "start":
            url = server.start()
            print(f"PostgreSQL gradebook running in {server.folder} (log: {server.log}).\n"
                  f"Use it for every nbgrader command of the course:\n  export GRADER_DB_URL='{url}'\n"
                  f"then e.g. make autograde JOBS=2; stop it with: {stop_command(args.dir)}")
        elif args.action == "stop":
            server.stop()
            print(f"PostgreSQL in {server.folder} stopped (its data stays there; delete the folder to forget it).")
        else:
            print(server.url)
    except Unavailable as why:
        print(f"PostgreSQL is not available here: {why}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
