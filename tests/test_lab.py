"""`make lab`, run for real: JupyterLab as root (how `make install` is run) and as an ordinary user, in a temporary
copy of the course, on loopback with a token and a free port, stopped with its kernels whatever happens.

What a student or an instructor would notice: the server starts (JupyterLab refuses root without --allow-root), it
lists the working copy work/autograd/ (made from notebooks/autograd/, which only `make release` writes), nbgrader's
extensions see the course (formgrader said "The course directory root is not a subdirectory of the notebook server
root"; Validate answers), opening and saving a notebook and Validate leave every committed notebook as it was (and
`python -m grader.classroom.notebooks check` passes), and JupyterLab asks nothing about news.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import REPO
from grader.classroom import lab as grader_lab

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks" / "autograd").glob("*.ipynb"))
COURSE_FILES = ["Makefile", "nbgrader_config.py", "pyproject.toml", "requirements.lock"]
NEWS_QUESTION = "Would you like to get notified about official Jupyter news?"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_course(dest: Path) -> Path:
    """The course as a clone has it (times kept: make sees the environment as up to date), sharing this .venv."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES:
        shutil.copy2(REPO / name, dest / name)
    for folder in ("notebooks", "solutions"):
        shutil.copytree(REPO / folder, dest / folder)
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def snapshot(course: Path) -> dict[str, str]:
    return {str(p.relative_to(course)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in ("notebooks", "solutions") for p in sorted((course / folder).rglob("*")) if p.is_file()}


class Lab:
    def __init__(self, url: str, token: str, course: Path, log: Path):
        self.url, self.token, self.course, self.log = url, token, course, log

    def request(self, path: str, method: str = "GET", body: dict | None = None, timeout: float = 30):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", "replace")

    def json(self, path: str, method: str = "GET", body: dict | None = None, timeout: float = 30):
        status, text = self.request(path, method, body, timeout)
        assert status in (200, 201), f"{method} {path}: {status} {text[:2000]}\n{self.tail()}"
        return json.loads(text)

    def tail(self) -> str:
        return f"make lab's output ({self.log}):\n" + self.log.read_text(errors="replace")[-4000:]


def _stop(process: subprocess.Popen) -> None:
    import signal

    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def make_lab(course: Path, base: Path, user: str | None = None):
    """`make lab PORT=<free> NO_BROWSER=1` in ``course``, as root or as ``user``; every Jupyter folder in ``base``
    (no settings of this machine's users); the token from JUPYTER_TOKEN. Stopped, with its kernels, at the end."""
    port, token = _free_port(), secrets.token_hex(16)
    homes = {"HOME": base / "home", "JUPYTER_CONFIG_DIR": base / "config", "JUPYTER_DATA_DIR": base / "data",
             "JUPYTER_RUNTIME_DIR": base / "runtime", "IPYTHONDIR": base / "ipython",
             "JUPYTERLAB_SETTINGS_DIR": base / "settings", "JUPYTERLAB_WORKSPACES_DIR": base / "workspaces"}
    for folder in homes.values():
        folder.mkdir(parents=True, exist_ok=True)
        if user:
            shutil.chown(folder, user)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "JUPYTER", "PYTEST"))}
    env.update({k: str(v) for k, v in homes.items()}, JUPYTER_TOKEN=token)
    # -o: the shared .venv is never rebuilt by a test, whatever the copied files' times say.
    command = ["make", "-o", ".venv/.installed", "lab", f"PORT={port}", "NO_BROWSER=1"]
    if user:  # runuser sets HOME and friends from the account: env puts the test's back
        command = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in homes.items()), *command]
    log = base / "make-lab.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = Lab(f"http://127.0.0.1:{port}", token, course, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"make lab exited with {process.returncode}\n{server.tail()}")
            with contextlib.suppress(OSError):
                if server.request("/api/status", timeout=2)[0] == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"make lab did not answer on {server.url} within 90 s\n{server.tail()}")
            time.sleep(0.3)
        yield server
    finally:
        with contextlib.suppress(Exception):
            for kernel in json.loads(server.request("/api/kernels", timeout=5)[1]):
                server.request(f"/api/kernels/{kernel['id']}", "DELETE", timeout=10)
        _stop(process)


@pytest.fixture(scope="module")
def root_lab(tmp_path_factory):
    """`make lab` as root (these tests run as root, like `make install`) in a fresh copy of the course."""
    if os.geteuid() != 0:
        pytest.fail("tests/test_lab.py runs `make lab` as root, as `make install` is run: run the tests as root")
    base = tmp_path_factory.mktemp("lab-root")
    course = copy_course(base / "course")
    before = snapshot(course)
    with make_lab(course, base / "jupyter") as server:
        yield server, before


def test_make_lab_starts_as_root_and_lists_the_working_copy(root_lab):
    server, _ = root_lab
    output = server.log.read_text(errors="replace")
    assert "Running as root is not recommended" not in output, server.tail()
    assert f"copied {len(NOTEBOOKS)} notebook(s) from notebooks/autograd/ to work/autograd/" in output, server.tail()
    listing = server.json("/api/contents/work/autograd")
    assert sorted(c["name"] for c in listing["content"] if c["type"] == "notebook") == NOTEBOOKS
    for name in NOTEBOOKS:
        work, release = (nbformat.read(str(server.course / folder / name), as_version=4)
                         for folder in ("work/autograd", "notebooks/autograd"))
        assert work.cells == release.cells, f"work/autograd/{name} is not a copy of notebooks/autograd/{name}"
    assert server.json("/lab/api/settings/@jupyterlab/apputils-extension:notification")  # JupyterLab's own API
    request = urllib.request.Request(f"{server.url}/", headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:  # where a browser opening the lab's address lands
        assert answer.status == 200 and answer.geturl() == f"{server.url}/lab/tree/work/autograd", answer.geturl()


def test_nbgraders_extensions_see_the_course(root_lab):
    server, _ = root_lab
    status, page = server.request("/formgrader/manage_assignments")
    assert status == 200, f"formgrader answers {status}: {page[:1000]}\n{server.tail()}"
    assert "not a subdirectory" not in server.log.read_text(errors="replace"), server.tail()
    assignments = server.json("/formgrader/api/assignments", timeout=120)  # read from the course's solutions/
    assert [a["name"] for a in assignments] == ["autograd", "autograd-zh"], f"{str(assignments)[:2000]}\n{server.tail()}"


def test_a_broken_formgrader_link_gets_a_404_page_not_a_server_error(root_lab):
    """nbgrader's Template404 answered before jupyter_server authenticated the request, and rendering its page raised
    "Calling `Template404.get_current_user()` directly is deprecated" (issue 30): the course's formgrader extension
    authenticates first (grader.classroom.formgrader_escape.mend_not_found_page)."""
    server, _ = root_lab
    status, page = server.request("/formgrader/no-such-page")
    assert status == 404 and "<html" in page.lower(), f"{status}: {page[:500]}"
    log = server.log.read_text(errors="replace")
    assert "Uncaught exception in write_error" not in log and "get_current_user" not in log, server.tail()


def test_make_formgrader_opens_formgrader_on_the_course():
    from grader.classroom import lab

    command = lab.command(Path("/course"), page="/formgrader")
    assert "--LabApp.default_url=/formgrader" in command and "--ServerApp.root_dir=/course" in command
    assert "--LabApp.default_url=/lab/tree/work/autograd" in lab.command(Path("/course"))
    made = subprocess.run(["make", "-n", "-f", str(REPO / "Makefile"), "formgrader", "PORT=9", "NO_BROWSER=1"],
                          cwd=REPO, capture_output=True, text=True)
    assert "-m grader.classroom.lab --formgrader --port 9 --no-browser" in made.stdout, made.stdout + made.stderr


def test_open_save_and_validate_in_the_lab_change_no_committed_notebook(root_lab):
    """What the lab's Validate button does: save the notebook through the contents API, then ask nbgrader's
    validate handler. The working copy is saved unchanged (ids and canonical JSON); notebooks/ and solutions/ stay
    as committed and `python -m grader.classroom.notebooks check` passes."""
    server, before = root_lab
    path = "work/autograd/01_autograd_basics.ipynb"
    on_disk = (server.course / path).read_bytes()
    model = server.json(f"/api/contents/{path}?content=1&type=notebook")
    server.json(f"/api/contents/{path}", "PUT", {"type": "notebook", "format": "json", "content": model["content"]})
    assert (server.course / path).read_bytes() == on_disk, "opening and saving an untouched notebook changed it"
    result = server.json(f"/assignments/validate?path={urllib.parse.quote(path)}", "POST", {}, timeout=300)
    assert result.get("success") is True, f"nbgrader's validate handler failed: {str(result)[:3000]}\n{server.tail()}"
    failed = json.dumps(result["value"])
    assert "not implemented yet" in failed, f"Validate of an untouched notebook lists no stub: {failed[:2000]}"
    assert snapshot(server.course) == before, "a committed notebook changed while the lab ran"
    check = subprocess.run([sys.executable, "-m", "grader.classroom.notebooks", "check"], cwd=server.course,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_jupyterlab_asks_nothing_about_news(root_lab):
    server, _ = root_lab
    settings = server.json("/lab/api/settings/@jupyterlab/apputils-extension:notification")
    # JupyterLab asks when the setting's value (the user's, else the schema's default) is "none" (its default)
    chosen = {**{k: v.get("default") for k, v in settings["schema"]["properties"].items()}, **settings["settings"]}
    assert chosen["fetchNews"] == "false", f"fetchNews is {chosen['fetchNews']!r}: JupyterLab asks about news"
    assert chosen["checkForUpdates"] is False
    assert server.json("/lab/api/news") == {"news": []}, "the server fetches a news feed"


def test_make_lab_works_as_an_ordinary_user():
    """A student's account: no --allow-root (JupyterLab would start as a user anyway), the working copy is theirs."""
    user = f"labtest{secrets.token_hex(3)}"
    base = Path(tempfile.mkdtemp(prefix="grader-lab-user-"))  # not under pytest's root-only folder
    created = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                             capture_output=True, text=True)
    assert created.returncode == 0, f"useradd {user}: {created.stderr}"
    granted: list[Path] = []
    try:
        # The user may pass through (search, not list) the folders on the way to this environment's Python, as
        # `make install` lets the sandbox user (grader/isolation/sandbox.py); undone below.
        for target in (Path(os.path.realpath(REPO / ".venv/bin/python")), REPO / ".venv"):
            for folder in reversed(target.parents):
                searchable = subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(folder)])
                if searchable.returncode != 0:
                    subprocess.run(["setfacl", "-m", f"u:{user}:x", str(folder)], check=True)
                    granted.append(folder)
        os.chmod(base, 0o755)
        course = copy_course(base / "course")
        for path in [course, *course.rglob("*")]:
            if not path.is_symlink():
                os.chown(path, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        before = snapshot(course)
        with make_lab(course, base / "jupyter", user=user) as server:
            output = server.log.read_text(errors="replace")
            assert "--allow-root" not in output and "Running as root" not in output, server.tail()
            listing = server.json("/api/contents/work/autograd")
            assert sorted(c["name"] for c in listing["content"]) == NOTEBOOKS, server.tail()
            assert (course / "work/autograd").stat().st_uid == pwd.getpwnam(user).pw_uid
            status, page = server.request("/formgrader/manage_assignments")
            assert status == 200 and "not a subdirectory" not in server.log.read_text(errors="replace"), server.tail()
        assert snapshot(course) == before
    finally:
        for folder in granted:
            subprocess.run(["setfacl", "-x", f"u:{user}", str(folder)], capture_output=True)
        subprocess.run(["userdel", user], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


# --- the working copy, without a server -----------------------------------------------------------------------------


def test_the_working_copy_is_made_once_and_never_overwritten(tmp_path):
    course = copy_course(tmp_path / "course")
    work, copied = grader_lab.working_copy(course)
    assert work == course / "work/autograd" and [p.name for p in copied] == NOTEBOOKS
    for name in NOTEBOOKS:  # the release's cells, with this Python's language_info (what the kernel reports)
        copy = nbformat.read(str(work / name), as_version=4)
        assert copy.cells == nbformat.read(str(course / "notebooks/autograd" / name), as_version=4).cells
        assert copy.metadata.language_info["version"] == sys.version.split()[0]
    mine = work / NOTEBOOKS[0]
    mine.write_text("my answers", encoding="utf-8")
    (work / NOTEBOOKS[1]).unlink()
    _, copied = grader_lab.working_copy(course)
    assert [p.name for p in copied] == [NOTEBOOKS[1]], "only the missing notebook is copied again"
    assert mine.read_text(encoding="utf-8") == "my answers", "a student's working copy was overwritten"


def test_git_ignores_the_working_copy():
    ignored = subprocess.run(["git", "check-ignore", "-q", "work/autograd/01_autograd_basics.ipynb"], cwd=REPO)
    assert ignored.returncode == 0, "work/ is not in .gitignore: students' answers would show in `git status`"


def test_the_lab_command_passes_allow_root_only_to_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert "--allow-root" in grader_lab.command(REPO)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "--allow-root" not in grader_lab.command(REPO)


# --- in a real browser ----------------------------------------------------------------------------------------------

from test_browser import MISSING, Steps, browser, wait_for  # noqa: E402,F401 (browser: the fixture, Debian's chromium)

if not MISSING:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys


def texts(driver, selector: str) -> list[str]:
    """The text of each element matching ``selector``; JupyterLab re-renders as it loads: [] for a stale one."""
    try:
        return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]
    except StaleElementReferenceException:
        return []


@pytest.mark.skipif(bool(MISSING), reason=f"browser tests: {MISSING}")
def test_in_a_browser_the_lab_opens_on_the_working_copy_asks_nothing_and_opening_modifies_nothing(
        root_lab, browser, tmp_path):
    server, before = root_lab
    steps = Steps(browser, tmp_path / "screenshots")
    browser.get(f"{server.url}/?token={server.token}")

    def listed(d):
        names = texts(d, ".jp-DirListing-item .jp-DirListing-itemText")
        return names if all(n in names for n in NOTEBOOKS) else None

    wait_for(browser, listed, 60, "the file browser to list work/autograd/'s notebooks", steps)
    time.sleep(4)  # the announcements plugin asks as soon as the page is restored
    shot = steps.shot("lab-opened")
    toasts = " ".join(texts(browser, ".Toastify__toast"))
    assert NEWS_QUESTION not in browser.find_element(By.TAG_NAME, "body").text + toasts, f"news prompt: {shot}"
    crumbs = browser.find_element(By.CSS_SELECTOR, ".jp-BreadCrumbs").text
    assert "work" in crumbs and "autograd" in crumbs, f"the file browser is at {crumbs!r}; {shot}"

    name = "02_custom_function.ipynb"
    path = server.course / "work/autograd" / name
    on_disk = path.read_bytes()
    browser.get(f"{server.url}/lab/tree/work/autograd/{name}?reset&token={server.token}")
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell"), 60,
             f"{name} to open", steps)
    wait_for(browser, lambda d: any("| Idle" in t for t in texts(d, ".jp-StatusBar-TextItem")), 90,
             "the kernel to be idle (status bar)", steps)
    time.sleep(2)
    shot = steps.shot("notebook-opened")
    dirty = browser.execute_script(
        "return [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty')].map(e => e.innerText)")
    # the student saves without changing anything (Ctrl+S): the file is written again, as it was
    written = path.stat().st_mtime_ns
    time.sleep(0.05)
    browser.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Notebook").click()
    webdriver.ActionChains(browser).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    wait_for(browser, lambda d: path.stat().st_mtime_ns != written, 30, f"JupyterLab to save {name}", steps)
    time.sleep(0.5)
    steps.shot("notebook-saved")
    saved = path.read_bytes()
    (steps.folder / "saved.ipynb").write_bytes(saved)
    assert not dirty, f"JupyterLab shows {dirty} as modified right after opening it; {shot}"
    assert saved == on_disk, f"saving an untouched notebook changed it: see {steps.folder / 'saved.ipynb'}"
    assert snapshot(server.course) == before
