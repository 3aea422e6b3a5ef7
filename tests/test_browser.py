"""End-to-end in a real browser: what a student and an instructor see, read back from the rendered page.

Debian's chromium, driven by Selenium through Debian's chromedriver (both installed by `make install`; the
driver's path is given, so Selenium Manager never tries to download one). JupyterLab runs from the venv on
loopback with a token, in a temporary copy of the student notebooks, and is stopped whatever happens.

1. JupyterLab: a student writes a wrong Square (a minus sign in backward), runs the setup, the answer cell and
   the `square-first-order` self-check; the rendered error is the grader's diagnosis.
2. JupyterLab: nbgrader's Validate button on an untouched notebook reports the failing cells in its dialog.
3. The feedback page nbgrader writes for an autograded submission, opened from disk: verdicts and scores.
4. formgrader (nbgrader's instructor pages in a second JupyterLab, on that course): the same submission with
   the student's answer, the checks' outputs and the autograded score of each cell.
5. JupyterLab on the Chinese notebooks (notebooks/autograd-zh): the same wrong Square; the page shows the Chinese
   text with real glyphs (no empty boxes: each character is drawn unlike a character no font has) and the
   self-check's diagnosis in Chinese.

Every step leaves a screenshot (NN-step.png) in the test's temporary folder; the path is in failure messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import EXAMPLES, RELEASE, REPO, nbgrader_meta
from grader.graphs import has_cjk

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
JUPYTER = Path(sys.executable).with_name("jupyter")


def _missing() -> str:
    for path, package in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")]:
        if not os.access(path, os.X_OK):
            return f"{package} is not installed ({path}): `make install` installs it as root (apt-get install {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: `make install` installs requirements.lock"
    if not JUPYTER.exists():
        return f"jupyter is not installed next to {sys.executable}: `make install`"
    return ""


MISSING = _missing()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(MISSING), reason=f"browser tests: {MISSING}")]

if not MISSING:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

STDERR = "application/vnd.jupyter.stderr"
WRONG_SQUARE = (EXAMPLES / "mistakes" / "square-wrong-sign.py").read_text(encoding="utf-8")
WRONG_SQUARE = "\n".join(line for line in WRONG_SQUARE.splitlines() if not line.startswith("# ")).strip() + "\n"
# JupyterLab settings for a test: every cell in the DOM (no windowing), and no news or update checks (no network).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


# --- the browser and the server --------------------------------------------------------------------------------


class Steps:
    """Screenshots of each step, numbered, in one folder."""

    def __init__(self, driver, folder: Path):
        self.driver, self.folder, self.count = driver, folder, 0
        folder.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def __str__(self) -> str:
        return f"screenshots in {self.folder}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """Stop a process started in its own session, and everything it started (kernels included)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
    try:  # kernels left in the group after the server exited
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _shut_down_kernels(url: str, token: str) -> None:
    """Kernels run in sessions of their own: ask the server to stop them before stopping the server."""
    try:
        with urllib.request.urlopen(f"{url}/api/kernels?token={token}", timeout=5) as answer:
            kernels = json.load(answer)
        for kernel in kernels:
            request = urllib.request.Request(f"{url}/api/kernels/{kernel['id']}?token={token}", method="DELETE")
            urllib.request.urlopen(request, timeout=10).close()
    except OSError:
        pass  # the server is gone already: its own shutdown stopped its kernels


class Lab:
    def __init__(self, url: str, token: str, root: Path, log: Path):
        self.url, self.token, self.root, self.log = url, token, root, log

    def notebook_url(self, name: str, reset: bool = False) -> str:
        return f"{self.url}/lab/tree/{name}?{'reset&' if reset else ''}token={self.token}"


@contextlib.contextmanager
def jupyterlab(root: Path, base: Path):
    """JupyterLab on 127.0.0.1, a free port, a token, no browser, serving ``root`` (its working directory too,
    where nbgrader looks for its config); stopped, with its kernels, whatever happens."""
    for name, values in LAB_SETTINGS.items():
        path = base / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "IPYTHONDIR": str(base / "ipython"),
           "PATH": f"{JUPYTER.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = base / "jupyterlab.log"
    command = [str(JUPYTER), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--LabApp.user_settings_dir={base / 'settings'}", f"--LabApp.workspaces_dir={base / 'workspaces'}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer on {url} within 60 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield Lab(url, token, root, log)
    finally:
        _shut_down_kernels(url, token)
        _stop(process)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab in a copy of the student notebooks."""
    base = tmp_path_factory.mktemp("jupyterlab")
    shutil.copytree(RELEASE, base / "notebooks")
    with jupyterlab(base / "notebooks", base) as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     # nothing leaves the machine (the feedback page links MathJax on a CDN): only loopback resolves
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))  # a path: no Selenium Manager
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, condition, seconds: float, what: str, steps: Steps | None = None):
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.2).until(condition)
    except TimeoutException:
        where = steps.shot("timeout") if steps else None
        pytest.fail(f"waited {seconds:g} s for {what}" + (f"; screenshot {where}" if where else ""))


def cell_index(notebook: Path, grade_id: str) -> int:
    cells = nbformat.read(str(notebook), as_version=4).cells
    return next(i for i, c in enumerate(cells) if nbgrader_meta(c).get("grade_id") == grade_id)


def shown_notebook(driver):
    """The notebook panel on screen (other open notebooks stay in the DOM, hidden)."""
    panels = [p for p in driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel") if p.is_displayed()]
    return panels[0] if len(panels) == 1 else None


def open_notebook(driver, lab: Lab, name: str, steps: Steps) -> tuple:
    """Open a notebook alone in JupyterLab (a fresh workspace); return its panel and its cells (all in the DOM:
    windowing is off)."""
    driver.get(lab.notebook_url(name, reset=True))
    total = len(nbformat.read(str(lab.root / name), as_version=4).cells)

    def cells(d):
        panel = shown_notebook(d)
        found = panel.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell") if panel else []
        return (panel, found) if len(found) == total else None

    panel, found = wait_for(driver, cells, 60, f"JupyterLab to show the {total} cells of {name}", steps)
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator[data-status='idle']"),
             60, "the kernel to be idle", steps)
    steps.shot(f"opened-{Path(name).stem}")
    return panel, found


def editor_text(cell) -> str:
    return "\n".join(line.text for line in cell.find_elements(By.CSS_SELECTOR, ".cm-content .cm-line"))


def replace_source(driver, cell, source: str) -> None:
    """Type a new source into a cell as a student would replace it: select all in its editor, insert the text."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    cell.find_element(By.CSS_SELECTOR, ".cm-content").click()
    modifier = Keys.COMMAND if sys.platform == "darwin" else Keys.CONTROL
    webdriver.ActionChains(driver).key_down(modifier).send_keys("a").key_up(modifier).perform()
    # One text insertion (like a paste): typing key by key would add the editor's auto-indentation and brackets.
    driver.execute_cdp_cmd("Input.insertText", {"text": source})
    webdriver.ActionChains(driver).send_keys(Keys.ESCAPE).perform()  # back to command mode


def run_cell(driver, cell) -> None:
    """Select a cell and run it in place (command mode Ctrl+Enter)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
    webdriver.ActionChains(driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()


def outputs(cell, mime: str | None = None) -> list:
    selector = ".jp-OutputArea-output" + (f"[data-mime-type='{mime}']" if mime else "")
    return cell.find_elements(By.CSS_SELECTOR, selector)


# --- 1. a self-check's diagnosis in JupyterLab ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def self_check_error(lab, browser, tmp_path_factory) -> tuple[str, Steps]:
    """The rendered error of `square-first-order` after a wrong Square, as text read from the page."""
    steps = Steps(browser, tmp_path_factory.mktemp("self-check-screenshots"))
    name = "03_double_backward.ipynb"
    started = time.monotonic()
    _, cells = open_notebook(browser, lab, name, steps)
    setup, answer, check = (cell_index(lab.root / name, g) for g in ("setup", "square", "square-first-order"))
    assert "class Square" in editor_text(cells[answer]), f"cell {answer} is not the square answer cell; {steps}"

    replace_source(browser, cells[answer], WRONG_SQUARE)
    typed = editor_text(cells[answer])
    assert "return -grad_out * 2 * x" in typed and "NotImplementedError" not in typed, f"{typed!r}; {steps}"
    assert typed.strip() == WRONG_SQUARE.strip(), f"the editor holds {typed!r}; {steps}"
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cells[answer])
    steps.shot("wrong-square-typed")

    for index in (setup, answer, check):
        run_cell(browser, cells[index])
    wait_for(browser, lambda d: outputs(cells[check]), 120, "the self-check's output", steps)
    assert "setup done" in cells[setup].find_element(By.CSS_SELECTOR, ".jp-OutputArea").text, steps
    errors = outputs(cells[check], STDERR)
    assert errors, f"the self-check shows no error output: {cells[check].text!r}; {steps}"
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cells[check])
    steps.shot("self-check-error-top")
    browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", errors[-1])
    steps.shot("self-check-error-diagnosis")
    text = "\n".join(e.text for e in errors)
    (steps.folder / "rendered-error.txt").write_text(text, encoding="utf-8")
    print(f"\nself-check rendered in {time.monotonic() - started:.1f} s; {steps}\n" + "\n".join(text.splitlines()[:12]))
    return text, steps


def test_a_failing_self_check_renders_the_diagnosis_in_jupyterlab(self_check_error):
    text, steps = self_check_error
    assert "✗ square · first derivatives" in text, f"{text[:2000]}\n{steps}"
    assert "hint" in text.lower(), f"{text[:2000]}\n{steps}"


def test_self_check_error_shows_no_grader_internals(self_check_error):
    """A failing self-check renders the diagnosis only (`_render_traceback_`), never the grader's own frames."""
    text, steps = self_check_error
    assert "grader/" not in text, f"the student sees the grader's frames:\n{text[:2000]}\n{steps}"
    assert "Traceback" not in text and "File " not in text, f"{text[:2000]}\n{steps}"


# --- 2. nbgrader's Validate button --------------------------------------------------------------------------------


def test_the_validate_button_reports_the_failing_cells_of_an_untouched_notebook(lab, browser, tmp_path):
    steps = Steps(browser, tmp_path / "screenshots")
    name = "02_custom_function.ipynb"
    panel, cells = open_notebook(browser, lab, name, steps)
    graded = sum(1 for c in nbformat.read(str(lab.root / name), as_version=4).cells if nbgrader_meta(c).get("grade"))
    buttons = panel.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel-toolbar .validate-button")
    assert buttons, f"no Validate button in the notebook's toolbar (nbgrader's lab extension); {steps}"
    label = buttons[0].find_elements(By.CSS_SELECTOR, ".jp-ToolbarButtonComponent-label")
    assert label and label[0].text == "Validate", buttons[0].get_attribute("outerHTML")
    label[0].click()
    dialog = wait_for(browser, lambda d: [e for e in d.find_elements(By.CSS_SELECTOR, ".jp-Dialog-content")
                                          if "cell" in e.text.lower() or "fail" in e.text.lower()],
                      180, "the validation dialog", steps)[0]
    steps.shot("validate-dialog")
    text = dialog.text
    (steps.folder / "validate-dialog.txt").write_text(text, encoding="utf-8")
    assert text.count("The following cell failed") == graded, f"{graded} graded cells fail: {text[:2000]}\n{steps}"
    assert "✗ linear · forward: LinearFunction.forward is not implemented yet" in text, f"{text[:2000]}\n{steps}"
    assert "Success" not in text, f"{text[:2000]}\n{steps}"
    assert "NotImplementedError" in text, f"the failures should show the stubs' error: {text[:2000]}\n{steps}"
    webdriver.ActionChains(browser).send_keys(Keys.ESCAPE).perform()


# --- 3. the feedback page of an autograded submission ---------------------------------------------------------------

STUDENT = "ada"
FEEDBACK_NOTEBOOK = "03_double_backward"
# square: forward and structure pass, first and second derivatives fail (2 of 6); exp and sinh right; cube untouched.
EXPECTED_SCORES = {"square": (2.0, 6.0), "exp": (6.0, 6.0), "sinh": (6.0, 6.0), "cube": (0.0, 6.0)}


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory) -> Path:
    """A one-student course: nbgrader releases, autogrades notebook 3 (a wrong Square, Exp and Sinh right, Cube
    untouched) and writes the feedback page."""
    from grader.classroom import course
    from grader.isolation import sandbox

    available, why = sandbox.available()
    if not available:
        pytest.skip(f"autograding needs the sandbox: {why}")
    root = tmp_path_factory.mktemp("course")
    os.symlink(REPO / "solutions", root / "solutions")
    release = "--CourseDirectory.release_directory=release"
    only = f"--CourseDirectory.notebook_id={FEEDBACK_NOTEBOOK}"  # one notebook is enough: each costs seconds
    course.nbgrader(["generate_assignment", course.ASSIGNMENT, "--force", release, only], root)
    solutions = course.answer_sources(REPO / "solutions" / course.ASSIGNMENT)
    answers = {"square": WRONG_SQUARE, "exp": solutions["exp"], "sinh": solutions["sinh"]}
    submission = root / "submitted" / STUDENT / course.ASSIGNMENT
    course.build_submission(root / "release" / course.ASSIGNMENT, answers, submission)
    course.nbgrader(["autograde", course.ASSIGNMENT, "--force", release], root)
    course.nbgrader(["generate_feedback", course.ASSIGNMENT, "--force", release], root)
    page = root / "feedback" / STUDENT / course.ASSIGNMENT / f"{FEEDBACK_NOTEBOOK}.html"
    assert page.is_file(), f"nbgrader wrote no feedback page at {page}"
    got = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")[STUDENT]
    assert {e: got[e] for e in EXPECTED_SCORES} == EXPECTED_SCORES, got
    return root


@pytest.fixture(scope="module")
def feedback_page(graded_course) -> Path:
    return graded_course / "feedback" / STUDENT / "autograd" / f"{FEEDBACK_NOTEBOOK}.html"


def feedback_cells(driver) -> list[dict]:
    """Every code cell of a feedback page: its source, its grade id and score (graded cells), its outputs."""
    return driver.execute_script("""
        return [...document.querySelectorAll('div.code_cell')].map(cell => {
            const heading = cell.querySelector('.nbgrader_cell .panel-heading');
            const label = heading && heading.querySelector('.nbgrader-label code');
            const score = heading && heading.innerText.match(/Score:\\s*([\\d.]+)\\s*\\/\\s*([\\d.]+)/);
            return {
                source: (cell.querySelector('.input_area') || {innerText: ''}).innerText,
                grade_id: label ? label.innerText : null,
                score: score ? [parseFloat(score[1]), parseFloat(score[2])] : null,
                output: [...cell.querySelectorAll('.output_subarea')].map(o => o.innerText).join('\\n'),
                errors: cell.querySelectorAll('.output_error').length,
                graphs: cell.querySelectorAll('.output_subarea svg, .output_subarea img[src^="data:image/svg"]').length,
            };
        });""")


@pytest.fixture(scope="module")
def feedback(feedback_page, browser, tmp_path_factory):
    steps = Steps(browser, tmp_path_factory.mktemp("feedback-screenshots"))
    browser.get(feedback_page.as_uri())
    title = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".panel-heading h4"), 30,
                     "the feedback page's title", steps)[0].text
    steps.shot("feedback-top")
    first_order = browser.find_element(By.CSS_SELECTOR, "a[name='square-first-order']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", first_order)
    steps.shot("feedback-square-first-order")
    return title, feedback_cells(browser), steps


def test_the_feedback_page_shows_each_checks_verdict_and_score(feedback):
    title, cells, steps = feedback
    assert title == f"{FEEDBACK_NOTEBOOK} (Score: 14.0 / 24.0)", f"{title!r}; {steps}"
    graded = {c["grade_id"]: c for c in cells if c["grade_id"]}
    assert len(graded) == 16, f"{sorted(graded)}; {steps}"
    for exercise, (score, top) in EXPECTED_SCORES.items():
        got = [graded[g]["score"] for g in graded if g.startswith(exercise + "-")]
        assert (sum(s for s, _ in got), sum(t for _, t in got)) == (score, top), f"{exercise}: {got}; {steps}"
    wrong = graded["square-first-order"]
    assert wrong["score"] == [0.0, 2.0] and wrong["errors"], f"{wrong}; {steps}"
    assert "✗ square · first derivatives: the gradient for `x` has the wrong sign" in wrong["output"], steps
    assert "hint:" in wrong["output"] and "[hidden check, other inputs] ✗ square" in wrong["output"], steps
    right = graded["square-forward"]
    assert right["score"] == [1.0, 1.0] and not right["errors"], f"{right}; {steps}"
    assert "✓ square · forward" in right["output"] and "[hidden check, other inputs] ✓" in right["output"], steps
    for grade_id in ("exp-second-order", "sinh-structure"):
        assert graded[grade_id]["score"][0] == graded[grade_id]["score"][1] > 0, f"{graded[grade_id]}; {steps}"
        assert graded[grade_id]["output"].startswith("✓"), f"{graded[grade_id]}; {steps}"
    stub = graded["cube-forward"]
    assert stub["score"] == [0.0, 1.0] and "not implemented yet" in stub["output"], f"{stub}; {steps}"
    assert "BEGIN HIDDEN TESTS" not in " ".join(c["source"] for c in cells), steps


def test_feedback_shows_the_students_own_outputs(feedback):
    """Autograded notebooks keep the student's own outputs: the feedback shows their prints and graphs."""
    title, cells, steps = feedback
    setup = next(c for c in cells if "- setup done" in c["source"])
    assert "setup done" in setup["output"], f"the setup cell's print is missing: {setup}; {steps}"
    try_exp = next(c for c in cells if "gradcheck(Exp.apply" in c["source"])
    assert "gradgradcheck: True" in try_exp["output"] and "d(grad_x)/dx" in try_exp["output"], \
        f"the 'try it yourself' cell of Exp lost its prints: {try_exp}; {steps}"
    if shutil.which("dot"):
        assert try_exp["graphs"], f"the graph drawn by the Exp 'try it yourself' cell is missing: {try_exp}; {steps}"


def test_the_feedback_page_wraps_long_lines_without_sideways_scrolling_at_1024_px(feedback_page, browser,
                                                                                   tmp_path_factory):
    """Issue 21: a diagnosis line (or a traceback's, or a line of code) longer than the window wraps; the page has
    no horizontal scroll at 1024 px, and no block of text scrolls sideways inside it either."""
    steps = Steps(browser, tmp_path_factory.mktemp("feedback-1024-screenshots"))
    browser.set_window_size(1024, 900)
    try:
        browser.get(feedback_page.as_uri())
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".panel-heading h4"), 30,
                 "the feedback page's title", steps)
        first_order = browser.find_element(By.CSS_SELECTOR, "a[name='square-first-order']")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", first_order)
        where = steps.shot("feedback-1024")
        page, window, longest, overflowing = browser.execute_script("""
            const pres = [...document.querySelectorAll('pre')];
            return [document.documentElement.scrollWidth, document.documentElement.clientWidth,
                    Math.max(...pres.map(p => Math.max(...p.textContent.split('\\n').map(l => l.length)))),
                    pres.filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 80))];""")
    finally:
        browser.set_window_size(1400, 1000)
    assert window <= 1024 and longest > 150, f"no line long enough to need wrapping ({longest} characters)"
    assert page <= window, f"the page scrolls sideways: {page} px wide in a {window} px window; screenshot {where}"
    assert not overflowing, f"text blocks scroll sideways: {overflowing}; screenshot {where}"


# --- 4. formgrader: the instructor's view of the same submission -----------------------------------------------

# formgrade.js calls MathJax (linked on a CDN, unreachable here) before it loads the scores: a stand-in that
# typesets nothing and says it has started.
MATHJAX_STAND_IN = """window.MathJax = {Hub: {Config() {}, Queue() {}, Typeset() {}, Register: {StartupHook() {}},
    Startup: {signal: {Interest(callback) { setTimeout(() => callback("End"), 0); }}}}};"""


def test_formgrader_shows_the_autograded_submission_with_its_outputs_and_scores(graded_course, browser, tmp_path):
    from nbgrader.api import Gradebook

    steps = Steps(browser, tmp_path / "screenshots")
    with Gradebook(f"sqlite:///{graded_course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook(FEEDBACK_NOTEBOOK, "autograd", STUDENT).id
    (graded_course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(graded_course)!r}\n"
        "c.CourseDirectory.course_id = 'autograd-functions'\n"
        "c.CourseDirectory.source_directory = 'solutions'\n"
        "c.CourseDirectory.release_directory = 'release'\n", encoding="utf-8")
    stand_in = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MATHJAX_STAND_IN})
    try:
        with jupyterlab(graded_course, tmp_path / "formgrader-server") as server:
            page, autograded = _formgrader_page(browser, server, submission, steps)
    finally:  # the other tests' pages get no stand-in
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": stand_in["identifier"]})
    assert len(autograded) == 16, f"{autograded}; {steps}"
    for exercise, (score, _) in EXPECTED_SCORES.items():
        got = sum(float(v) for g, v in autograded.items() if g.startswith(exercise + "-"))
        assert got == score, f"{exercise}: {autograded}; {steps}"
    assert autograded["square-first-order"] == "0" and autograded["square-forward"] == "1", f"{autograded}; {steps}"
    assert "return -grad_out * 2 * x" in page, f"the student's answer is not shown; {steps}"
    assert "✗ square · first derivatives: the gradient for `x` has the wrong sign" in page, steps
    assert "✓ square · forward" in page, steps


def _formgrader_page(driver, server: Lab, submission: str, steps: Steps) -> tuple[str, dict]:
    """formgrader's page of one submitted notebook: its text, and the autograded score of each graded cell."""
    driver.get(f"{server.url}/login")  # a login cookie: formgrader's API calls do not carry the token
    password = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "input[name=password]"), 30,
                        "the login page", steps)[0]
    password.send_keys(server.token)
    password.submit()
    wait_for(driver, lambda d: "/login" not in d.current_url, 30, "the login", steps)
    driver.get(f"{server.url}/formgrader/submissions/{submission}/?index=0")

    def scores(d):
        found = {e.get_attribute("id"): e.get_attribute("placeholder")
                 for e in d.find_elements(By.CSS_SELECTOR, "input.score")}
        return found if found and all(found.values()) else None

    autograded = wait_for(driver, scores, 60, "formgrader to show the autograded scores", steps)
    steps.shot("formgrader-top")
    cell = driver.find_element(By.ID, "square-first-order")
    panel = cell.find_element(By.XPATH, "./ancestor::div[contains(@class, 'nbgrader_cell')]/ancestor::div[1]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", panel)
    driver.execute_script("window.scrollBy(0, -80)")  # formgrader's fixed navigation bar covers the top
    steps.shot("formgrader-square-first-order")
    return driver.find_element(By.TAG_NAME, "body").text, autograded


# --- 5. a Chinese notebook: Chinese text with real glyphs, the self-check's diagnosis in Chinese ----------------------

RELEASE_ZH = REPO / "notebooks" / "autograd-zh"

# The characters of ``text`` that ``element``'s font draws exactly as it draws U+0378 (a code point no font has a
# glyph for: the missing-glyph box, or nothing): empty boxes ("tofu") on screen. A canvas, in the element's font.
TOFU = """
const [element, text] = arguments;
const style = getComputedStyle(element);
const canvas = document.createElement('canvas');
canvas.width = canvas.height = 64;
const context = canvas.getContext('2d');
const draw = character => {
    context.clearRect(0, 0, 64, 64);
    context.font = `40px ${style.fontFamily}`;
    context.textBaseline = 'top';
    context.fillText(character, 8, 8);
    return Array.from(context.getImageData(0, 0, 64, 64).data).join(',');
};
const missing = draw('\u0378');
return {font: style.fontFamily, tells_apart: draw('A') !== missing,
        tofu: [...new Set([...text])].filter(c => c.trim() && draw(c) === missing)};
"""


def tofu(driver, element, text: str) -> list[str]:
    found = driver.execute_script(TOFU, element, "".join(c for c in text if has_cjk(c)))
    assert found["tells_apart"], f"the canvas check cannot tell a glyph from a missing one in {found['font']}"
    return found["tofu"]


@pytest.fixture(scope="module")
def lab_zh(tmp_path_factory):
    """JupyterLab in a copy of the Chinese student notebooks."""
    base = tmp_path_factory.mktemp("jupyterlab-zh")
    shutil.copytree(RELEASE_ZH, base / "notebooks")
    with jupyterlab(base / "notebooks", base) as server:
        yield server


@pytest.fixture(scope="module")
def chinese_self_check(lab_zh, browser, tmp_path_factory) -> dict:
    """The Chinese notebook 3 after a wrong Square and its `square-first-order` self-check: the page's text, the
    rendered error, and the characters drawn as empty boxes, in the heading and in the error."""
    steps = Steps(browser, tmp_path_factory.mktemp("self-check-zh-screenshots"))
    name = "03_double_backward.ipynb"
    panel, cells = open_notebook(browser, lab_zh, name, steps)
    setup, answer, check = (cell_index(lab_zh.root / name, g) for g in ("setup", "square", "square-first-order"))
    heading = cells[0].find_element(By.CSS_SELECTOR, ".jp-RenderedMarkdown h1")
    heading_tofu = tofu(browser, heading, heading.text)
    replace_source(browser, cells[answer], WRONG_SQUARE)
    assert "return -grad_out * 2 * x" in editor_text(cells[answer]), f"{editor_text(cells[answer])!r}; {steps}"
    for index in (setup, answer, check):
        run_cell(browser, cells[index])
    wait_for(browser, lambda d: outputs(cells[check]), 120, "the self-check's output", steps)
    errors = outputs(cells[check], STDERR)
    assert errors, f"the self-check shows no error output: {cells[check].text!r}; {steps}"
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", cells[check])
    steps.shot("self-check-zh-error")
    text = "\n".join(e.text for e in errors)
    (steps.folder / "rendered-error.txt").write_text(text, encoding="utf-8")
    return {"page": panel.text, "heading": heading.text, "heading_tofu": heading_tofu, "error": text,
            "error_tofu": tofu(browser, errors[-1], text), "steps": steps}


def test_a_chinese_notebook_shows_its_chinese_text_with_real_glyphs(chinese_self_check):
    """The Chinese notebook's own text (its title, from i18n/zh/03_double_backward.po) is on the page, drawn with
    CJK glyphs: the browser's fonts (fontconfig's) include one with them (fonts-noto-cjk, `make install`)."""
    seen = chinese_self_check
    assert seen["heading"].startswith("笔记本 3") and "双重反向传播" in seen["page"], f"{seen['heading']!r}; {seen['steps']}"
    covering = subprocess.run(["fc-list", ":lang=zh-cn", "family"], capture_output=True, text=True).stdout
    assert covering.strip(), "no font for Chinese is installed (fontconfig): `make install` installs fonts-noto-cjk"
    assert not seen["heading_tofu"], f"drawn as empty boxes: {seen['heading_tofu']}; {seen['steps']}"


def test_a_failing_self_check_in_a_chinese_notebook_gives_its_diagnosis_in_chinese(chinese_self_check):
    """The diagnosis a Chinese student reads is the Chinese one (i18n/zh/messages.po), drawn with real glyphs."""
    from grader.spec import messages

    seen = chinese_self_check
    expected = messages.message("wrong_sign", "zh").title.format(name="x")
    squeezed = lambda text: re.sub(r"\s+", "", text)  # the diagnosis is wrapped to the output's width
    assert has_cjk(seen["error"]) and squeezed(expected) in squeezed(seen["error"]), (
        f"the self-check of a Chinese notebook should say {expected!r}; it shows:\n{seen['error'][:2000]}\n"
        f"{seen['steps']}")
    assert "has the wrong sign" not in seen["error"], f"{seen['error'][:2000]}\n{seen['steps']}"
    assert not seen["error_tofu"], f"drawn as empty boxes: {seen['error_tofu']}; {seen['steps']}"
