"""Feedback in the student's language (issue 23): chosen by the notebook itself (metadata
``autograd_course.language``), never by the machine's locale; every sentence a student reads comes from the messages
table, so that a Chinese notebook's diagnoses, ✓ lines and self-checks are Chinese, and the English stay as they were."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from conftest import EXAMPLES, MISTAKES, REPO, SOLUTIONS, CatalogueEntry
from grader.judge.diagnosis import CheckFailed
from grader.spec import exercises, functions, messages
from grader.spec.findings import Finding, student_traceback

# --- which language -------------------------------------------------------------------------------------------------


def test_the_language_is_the_notebooks_own_and_anything_unknown_is_english():
    assert messages.language_of({"metadata": {"autograd_course": {"language": "zh"}}}) == "zh"
    assert messages.language_of(nbformat.from_dict({"metadata": {"autograd_course": {"language": "zh-CN"}}})) == "zh"
    for metadata in [{}, {"autograd_course": {}}, {"autograd_course": {"language": "klingon"}},
                     {"autograd_course": {"language": ["zh"]}}, {"autograd_course": "zh"}, {"language": "zh"}]:
        assert messages.language_of({"metadata": metadata}) == "en", metadata


def test_the_machines_locale_chooses_nothing(monkeypatch):
    for name in ("LANG", "LC_ALL", "LANGUAGE", "LC_MESSAGES"):
        monkeypatch.setenv(name, "zh_CN.UTF-8")
    code = "from grader.spec import messages; print(messages.current(), messages.say('not_reached'))"
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_LANGUAGE", "JPY_SESSION_NAME")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["en", "not", "reached"]


def test_a_language_chosen_in_one_thread_is_that_threads_alone():
    """The trusted side judges several notebooks at once, one thread each: each writes in its notebook's language."""
    said: dict[str, list[str]] = {"en": [], "zh": []}
    barrier = threading.Barrier(2)

    def judge(language: str) -> None:
        with messages.using(language):
            barrier.wait()  # both inside their `using` at once
            for _ in range(200):
                said[language].append(messages.say("not_reached"))

    threads = [threading.Thread(target=judge, args=(lang,)) for lang in ("en", "zh")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(said["en"]) == {messages.EN["not_reached"].title}
    assert set(said["zh"]) == {messages.TABLES["zh"]["not_reached"].title}
    assert messages.current() == "en"


def test_grader_language_overrides_and_a_kernel_reads_its_notebooks_metadata(tmp_path):
    """In the student's kernel: $GRADER_LANGUAGE, else the notebook jupyter_server names in $JPY_SESSION_NAME."""
    notebook = tmp_path / "03_double_backward.ipynb"
    nbformat.write(nbformat.v4.new_notebook(metadata={"autograd_course": {"language": "zh"}}), notebook)
    code = "import sys; sys.modules.setdefault('ipykernel', sys); from grader.spec import messages; print(messages.current())"

    def language(**env: str) -> str:
        base = {k: v for k, v in os.environ.items() if k not in ("GRADER_LANGUAGE", "JPY_SESSION_NAME")}
        return subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                              check=True, cwd=tmp_path).stdout.strip()

    assert language(JPY_SESSION_NAME=str(notebook)) == "zh"
    assert language(JPY_SESSION_NAME=notebook.name) == "zh"  # relative: the kernel starts in the notebook's folder
    assert language(JPY_SESSION_NAME=str(notebook), GRADER_LANGUAGE="en") == "en"
    assert language(GRADER_LANGUAGE="zh") == "zh"
    assert language(JPY_SESSION_NAME=str(tmp_path / "gone.ipynb")) == "en"
    assert language() == "en"
    # nbgrader validate's kernel: unnamed, in the notebook's folder
    assert language(NBGRADER_VALIDATING="1") == "zh"


# --- the words of a Chinese diagnosis -------------------------------------------------------------------------------

# Names a Chinese sentence keeps in English: the course's exercises, classes, inputs and checks, PyTorch's and
# Python's APIs and error types (any word ending in Error), and a few proper names.
_NAMES = {
    *{w for ex in exercises.EXERCISES.values() for w in (ex.id, ex.title, *ex.classes, *ex.input_names, *ex.outputs)},
    *{w for s in functions.SIGNATURES.values() for w in re.findall(r"[A-Za-z_]\w*", s)},
    *functions.SECTIONS, *functions.CHECKS,
    "PyTorch", "NumPy", "torch", "autograd", "Function", "Functions", "forward", "backward", "ctx", "apply", "grad",
    "gradcheck", "gradgradcheck", "vmap", "jvp", "vjp", "hvp", "func", "None", "True", "False", "float", "float64",
    "float32", "int64", "HVP", "WGAN", "GP", "Rosenbrock", "Softplus", "sum", "sin", "tanh", "exp", "logsumexp",
    "mean", "softplus", "ipynb", "requires", "dim", "result", "penalty", "loss", "fn", "batches", "norms", "norm",
    "sigmoid", "detach", "item", "numpy", "data", "tensor", "Tensor", "inf", "nan", "jacobian", "hessian", "tuple",
    "ndarray", "Python", "dx", "dy", "reshape", "scatter", "gather", "batch", "expx", "expnegx",
    "bug",  # (a word Chinese programmers write as it is)
}


def english_words(text: str, finding: Finding | None = None) -> list[str]:
    """The English words of ``text`` outside code: not in `code spans` or the line of the student's code, not code-like
    tokens (with . _ ( [ = or digits), not names (``_NAMES``, *Error), and not what the student's code or PyTorch
    said (a finding's error, code, detail)."""
    if finding is not None:
        from grader.spec.findings import check_label

        text = text.replace(check_label(finding.exercise, finding.check), " ")
        raws = (finding.fields.get("error"), finding.code, finding.fields.get("detail"), finding.fields.get("why"))
        for raw in sorted((str(r) for r in raws if r), key=len, reverse=True):  # (the code may hold the error)
            text = text.replace(raw, " ")
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"[\w-]+ · [\w ]+?(?=[:：])", " ", text)  # "square · first derivatives": a check's name
    code_label = messages.TABLES["zh"]["label_code"].title
    text = re.sub(rf"^\s*{code_label}.*$", " ", text, flags=re.M)  # the line of the student's code that raised
    words = []
    for token in re.split(r"[\s\u2e80-\u9fff\u3000-\u303f\uff00-\uffef“”‘’—…·]+", text):
        token = token.strip(",;:!?\"'")
        if token[:1] in "([{<" and token[-1:] in ")]}>":  # "(scalar)": a word in brackets; "len()" stays code
            token = token[1:-1]
        if re.fullmatch(r"[A-Za-z]{2,}", token) and token not in _NAMES and not token.endswith(("Error", "Backward")):
            words.append(token)
    return words


def test_the_word_check_finds_english_and_spares_code():
    assert english_words("the gradient for `x` is wrong") == ["the", "gradient", "for", "is", "wrong"]
    assert english_words("`x` 的梯度不对（见 `exp-first-order`）：Square.backward 返回了 torch.ones_like(x)。") == []


def _rendered_in_chinese(failure: CheckFailed) -> str:
    with messages.using("zh"):
        return failure.finding.render()


def _assert_chinese(text: str, finding: Finding | None, what: str) -> None:
    assert re.search(r"[\u4e00-\u9fff]", text), f"{what}: not Chinese:\n{text}"
    words = english_words(text, finding)
    assert not words, f"{what}: English words {words} in the Chinese diagnosis:\n{text}"


def _outcomes_in(language: str, entry: CatalogueEntry) -> dict[str, tuple[str, str, Finding | None]]:
    from test_checks import run_cell

    from conftest import CELLS

    result = {}
    ns = entry.load()
    with messages.using(language):
        for suffix in CELLS[entry.exercise]:
            try:
                with contextlib.redirect_stdout(io.StringIO()) as out:
                    run_cell(entry.exercise, suffix, ns)
                result[suffix] = ("pass", out.getvalue(), None)
            except CheckFailed as failure:
                result[suffix] = (failure.finding.mistake, str(failure), failure.finding)
    return result


@pytest.mark.parametrize("entry", MISTAKES, ids=lambda e: e.id)
def test_every_catalogued_mistake_is_diagnosed_in_chinese_without_an_english_sentence(entry: CatalogueEntry):
    english, chinese = _outcomes_in("en", entry), _outcomes_in("zh", entry)
    assert {k: v[0] for k, v in chinese.items()} == {k: v[0] for k, v in english.items()} == entry.expect
    for suffix, (mistake, text, finding) in chinese.items():
        if mistake == "pass":
            continue
        _assert_chinese(text, finding, f"{entry.id} {suffix}")
        assert not re.search(r"\{[a-z_]+\}", text), text
        # the English diagnosis is the one the English tests know, byte for byte
        assert english[suffix][1] == "\n" + english[suffix][2].render()


def _basics_wrong() -> list[tuple]:
    import test_basics

    return [(c, f, m) for c, f, m, _ in test_basics.WRONG]


@pytest.mark.parametrize("check, fn, mistake", _basics_wrong(), ids=lambda p: getattr(p, "__name__", str(p)))
def test_every_catalogued_mistake_of_the_function_exercises_is_diagnosed_in_chinese(check, fn, mistake):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with messages.using("zh"), pytest.raises(CheckFailed) as info:
            check(fn)
    assert info.value.finding.mistake == mistake
    _assert_chinese(str(info.value), info.value.finding, mistake)


def test_the_second_order_mistakes_are_diagnosed_in_chinese():
    import test_basics

    for check, fn, ns, mistake in test_basics.SECOND_ORDER_WRONG:
        with messages.using("zh"), pytest.raises(CheckFailed) as info:
            test_basics._second_order_check(check, fn, ns())
        assert info.value.finding.mistake == mistake
        _assert_chinese(str(info.value), info.value.finding, f"{check} {mistake}")


def test_a_hint_names_the_chinese_notebooks_section_heading():
    """The section a hint points at is the heading the Chinese notebook shows (from the notebooks' catalogues)."""
    english = exercises.get("exp").section("first derivatives", "tensor_on_ctx")
    with messages.using("zh"):
        chinese = exercises.get("exp").section("first derivatives", "tensor_on_ctx")
    heading = "5. Why tensors must NOT be stored as `ctx` attributes"
    assert english == f'"{heading}" in 02_custom_function.ipynb'
    zh_heading = messages.HEADINGS["zh"][heading]
    assert zh_heading in chinese and "02_custom_function.ipynb" in chinese and re.search(r"[\u4e00-\u9fff]", zh_heading)
    built = {c.source for nb in (SOLUTIONS).glob("*.ipynb") for c in nbformat.read(nb, as_version=4).cells}
    assert any(heading in source for source in built)
    # every heading the grader names, in every section table, has its Chinese
    named = {h for ex in exercises.EXERCISES.values() for h in ex.sections.values()}
    named |= {h for _, h in exercises.SECTIONS.values()} | set(functions.SECTIONS.values())
    named |= set(functions.MISTAKE_SECTIONS.values())
    missing = sorted(h for h in named if h not in messages.HEADINGS["zh"])
    assert not missing, f"no Chinese heading for {missing}: are they headings of the notebooks, translated?"


def test_a_chinese_diagnosis_is_wrapped_by_the_columns_it_takes():
    finding = Finding("exp", "forward", "tensor_on_ctx", fields={"cls": "Exp", "attrs": "ctx.result", "saved": 0})
    with messages.using("zh"):
        text = finding.render()
    lines = student_traceback(text)
    from grader.spec.findings import RENDER_WIDTH, display_width

    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    assert all(display_width(line) <= RENDER_WIDTH for line in plain), plain
    assert "".join(p.strip() for p in plain).replace(" ", "") .startswith("AssertionError:✗")
    # nothing is lost: every character of the diagnosis is in the wrapped lines, in order
    assert re.sub(r"\s", "", "AssertionError: " + text) == re.sub(r"\s", "", "".join(plain))


# --- the grading paths: a Chinese notebook, graded as it is graded for real -------------------------------------------

_LINEAR_STUB = '''class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        raise NotImplementedError("exercise 'linear': write LinearFunction.forward")

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError("exercise 'linear': write LinearFunction.backward")
'''


@pytest.fixture(scope="module")
def chinese_solutions(tmp_path_factory) -> Path:
    """The Chinese instructor notebooks, built as `translation build --out` builds them."""
    from grader.classroom import translation

    out = tmp_path_factory.mktemp("zh") / "autograd-zh"
    translation.build("zh", out)
    return out


def _submissions(tmp_path: Path, chinese: Path, answers: dict[str, str]) -> tuple[Path, Path]:
    from grader.classroom.demo_class import build_submission

    build_submission(SOLUTIONS, answers, tmp_path / "en")
    build_submission(chinese, answers, tmp_path / "zh")
    return tmp_path / "en", tmp_path / "zh"


@pytest.mark.slow
def test_grader_grade_gives_a_chinese_notebook_the_english_scores_with_chinese_diagnoses(tmp_path, chinese_solutions):
    """`grader grade` on the same mistakes in an English and a Chinese notebook: same cells, same points; the Chinese
    one's verdicts are Chinese, without English sentences, and the English ones are as before."""
    answers = {"square": (EXAMPLES / "mistakes" / "square-wrong-sign.py").read_text(encoding="utf-8"),
               "exp": (EXAMPLES / "mistakes" / "exp-saves-input.py").read_text(encoding="utf-8")}
    en, zh = _submissions(tmp_path, chinese_solutions, answers)
    graded = {}
    for language, folder, tests in (("en", en, SOLUTIONS), ("zh", zh, chinese_solutions)):
        run = subprocess.run([sys.executable, "-m", "grader.classroom.cli", "grade", str(folder / "03_double_backward.ipynb"),
                              "--tests", str(tests / "03_double_backward.ipynb"), "--json"],
                             capture_output=True, text=True, timeout=600, cwd=REPO)
        assert run.returncode == 0, run.stderr
        graded[language] = json.loads(run.stdout)
    assert graded["zh"]["score"] == graded["en"]["score"] < graded["en"]["max_score"] == graded["zh"]["max_score"]
    cells = {lang: {c["grade_id"]: c for ex in graded[lang]["exercises"].values() for c in ex["cells"]}
             for lang in graded}
    assert {k: (c["points"], c["status"]) for k, c in cells["zh"].items()} == \
        {k: (c["points"], c["status"]) for k, c in cells["en"].items()}
    failed = [k for k, c in cells["zh"].items() if c["status"] != "passed"]
    assert {"square-first-order", "exp-first-order"} <= set(failed)
    for grade_id in failed:
        english, chinese = cells["en"][grade_id], cells["zh"][grade_id]
        assert [f["mistake"] for f in chinese["findings"]] == [f["mistake"] for f in english["findings"]]
        assert "hint:" in english["message"] and "提示：" in chinese["message"], chinese["message"]
        words = english_words(chinese["message"])
        assert not words, f"{grade_id}: English words {words} in:\n{chinese['message']}"
    passed = [c["message"] for c in cells["zh"].values() if c["status"] == "passed"]
    assert passed and all("探测样例" in m and "probe" not in m for m in passed), passed
    assert all(" probe" in c["message"] for c in cells["en"].values() if c["status"] == "passed")


@pytest.mark.slow
def test_the_notebooks_own_self_checks_print_chinese_in_the_sandbox(tmp_path, chinese_solutions):
    """The sandbox runs the student's cells; their self-checks' output (kept in the graded notebook and its feedback)
    is in the notebook's language, which the trusted side puts in the plan."""
    from grader.judge import runner

    en, zh = _submissions(tmp_path, chinese_solutions, {"linear": _LINEAR_STUB})
    results = {lang: runner.grade_notebook(folder / "02_custom_function.ipynb", tests / "02_custom_function.ipynb")
               for lang, folder, tests in (("en", en, SOLUTIONS), ("zh", zh, chinese_solutions))}

    def shown(result) -> str:
        return "\n".join(o.get("text", "") for _, outs in result.outputs for o in outs if isinstance(o, dict))

    assert "○ skipped: exercise 'linear' is not done yet" in shown(results["en"])
    assert "○ 已跳过：练习 'linear' 尚未完成" in shown(results["zh"]) and "skipped" not in shown(results["zh"])
    assert [(c.grade_id, c.points, c.status) for c in results["zh"].cells] == \
        [(c.grade_id, c.points, c.status) for c in results["en"].cells]
    for cell in results["zh"].cells:
        if cell.grade_id.startswith("linear-"):
            assert "还没有实现" in cell.message and not english_words(cell.message.split("你的代码")[0]), cell.message


def test_autograde_writes_a_chinese_notebooks_verdicts_in_chinese():
    """TrustedExecute's verdict outputs (what nbgrader scores and the feedback page shows) in the notebook's language:
    a test cell that was not checked says why in it."""
    from grader.classroom.plugins.trusted_execute import _write_verdicts
    from grader.judge.runner import CellResult, NotebookResult

    def written(language: str) -> str:
        nb = nbformat.v4.new_notebook(metadata={"autograd_course": {"language": language}})
        nb.cells.append(nbformat.v4.new_code_cell("checks.forward('square', Square.apply)", metadata={
            "nbgrader": {"grade": True, "grade_id": "square-forward", "points": 1, "solution": False}}))
        result = NotebookResult("nb", "tests", cells=[CellResult("square-forward", 0, 1, "not run", "not reached")])
        with messages.using(messages.language_of(nb)):
            _write_verdicts(nb, result)
        return nb.cells[0].outputs[0]["evalue"]

    assert written("en") == messages.EN["not_checked"].title.format(reason="not reached")
    assert written("zh") == messages.TABLES["zh"]["not_checked"].title.format(reason="not reached")


# --- the student's own kernel ---------------------------------------------------------------------------------------


def _kernel_output(env_notebook: Path, cells: list[str], via_jupyter_server: bool) -> str:
    """Run ``cells`` in a Python kernel started for ``env_notebook``: by jupyter_server's session manager (as
    JupyterLab starts it), or by jupyter_client with JPY_SESSION_NAME set; return what it printed and raised."""
    import asyncio

    async def run() -> str:
        from jupyter_client.manager import AsyncKernelManager

        if via_jupyter_server:
            from jupyter_server.services.contents.filemanager import AsyncFileContentsManager
            from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
            from jupyter_server.services.sessions.sessionmanager import SessionManager

            root = env_notebook.parent
            kernels = AsyncMappingKernelManager(root_dir=str(root))
            sessions = SessionManager(kernel_manager=kernels, contents_manager=AsyncFileContentsManager(root_dir=str(root)))
            sessions.database_filepath = ":memory:"
            model = await sessions.create_session(path=env_notebook.name, name=env_notebook.name, type="notebook",
                                                  kernel_name="python3")
            km = kernels.get_kernel(model["kernel"]["id"])
        else:
            kernels = None
            km = AsyncKernelManager(kernel_name="python3")
            await km.start_kernel(cwd=str(env_notebook.parent), env={**os.environ,
                                                                     "JPY_SESSION_NAME": str(env_notebook)})
        client = km.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=120)
            texts: list[str] = []

            def keep(msg: dict) -> None:
                content = msg["content"]
                if msg["msg_type"] == "stream":
                    texts.append(content["text"])
                elif msg["msg_type"] == "error":
                    texts.append("\n".join(content["traceback"]))

            for code in cells:
                await client.execute_interactive(code, output_hook=keep, timeout=300)
            return "".join(texts)
        finally:
            client.stop_channels()
            if kernels is not None:
                await kernels.shutdown_all(now=True)
            else:
                await km.shutdown_kernel(now=True)

    return asyncio.run(run())


_SELF_CHECK = ["import os\nprint(os.environ.get('JPY_SESSION_NAME'))", """
import torch
from grader import checks

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return -2 * x * grad_output

checks.forward("square", Square.apply)
checks.first_derivatives("square", Square.apply)
"""]


@pytest.mark.slow
@pytest.mark.parametrize("via_jupyter_server", [True, False], ids=["jupyter_server", "jupyter_client"])
def test_a_self_check_in_a_chinese_notebooks_kernel_speaks_chinese(tmp_path, chinese_solutions, via_jupyter_server,
                                                                   monkeypatch):
    """The student's kernel finds its notebook's language without a line of the notebook's code changing: jupyter_server
    names the notebook in the kernel's $JPY_SESSION_NAME (checked here on the installed version)."""
    monkeypatch.delenv("GRADER_LANGUAGE", raising=False)  # (the kernels inherit this process's environment)
    notebook = tmp_path / "03_double_backward.ipynb"
    notebook.write_bytes((chinese_solutions / notebook.name).read_bytes())
    english = tmp_path / "en" / notebook.name
    english.parent.mkdir()
    english.write_bytes((SOLUTIONS / notebook.name).read_bytes())
    out = _kernel_output(notebook, _SELF_CHECK, via_jupyter_server)
    assert str(notebook) in out  # the kernel was told which notebook it runs
    assert "✓ square · forward: x² 与 PyTorch 一致（" in out, out
    assert "✗ square · first derivatives: `x` 的梯度符号错了。" in out and "提示：" in out, out
    assert not english_words(re.sub(r"\x1b\[[0-9;]*m", "", out).replace(str(notebook), " ").replace("AssertionError", "")), out
    if via_jupyter_server:
        out = _kernel_output(english, _SELF_CHECK, True)
        assert "✓ square · forward: x² matches PyTorch on" in out and "hint:" in out, out


@pytest.mark.slow
def test_nbgrader_validate_of_a_chinese_notebook_shows_the_diagnosis_in_chinese(tmp_path, chinese_solutions):
    """`nbgrader validate` (the Validate button) runs the notebook in a kernel it names nowhere: the kernel finds the
    language from the notebooks of the folder it runs in, which nbgrader marks (NBGRADER_VALIDATING)."""
    from grader.classroom.demo_class import build_submission

    answers = {"square": (EXAMPLES / "mistakes" / "square-wrong-sign.py").read_text(encoding="utf-8")}
    build_submission(chinese_solutions, answers, tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_LANGUAGE", "JPY_SESSION_NAME")}
    run = subprocess.run([sys.executable, "-m", "nbgrader", "validate", "03_double_backward.ipynb"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout
    assert "VALIDATION FAILED" in out, out + run.stderr
    errors = [block.split("The following cell failed")[0] for block in out.split("The error was:")[1:]]
    assert errors and all("提示：" in e and "✗ square ·" in e for e in errors), out
    for error in errors:
        text = re.sub(r"\s+", " ", error).replace("AssertionError", " ")
        assert not english_words(text), error
    lines = [line for e in errors for line in e.splitlines() if line.strip("=")]
    assert all(len(line) <= 87 for line in lines), "nbgrader cuts lines at 87 characters"


@pytest.mark.slow
def test_nbgrader_autograde_scores_a_chinese_notebook_as_the_english_one_with_chinese_verdicts(tmp_path):
    """`nbgrader autograde` with the course's configuration (TrustedExecute, the class graded ahead in threads): two
    students hand in the same answers, one notebook marked Chinese; same points per cell, the Chinese one's verdicts
    (what nbgrader scores and the feedback page shows) in Chinese, the English one's as before."""
    from grader.classroom import course
    from grader.classroom.demo_class import build_submission
    from grader.judge.runner import exercise_of

    root = tmp_path / "course"
    root.mkdir()
    os.symlink(SOLUTIONS.parent, root / "solutions")
    generated = subprocess.run(course.nbgrader_command("generate_assignment", course.ASSIGNMENT, "--force",
                                                       "--CourseDirectory.release_directory=release",
                                                       f"--CourseDirectory.root={root}"),
                               cwd=REPO, env=course.nbgrader_env(), capture_output=True, text=True, timeout=600)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    answers = {"square": (EXAMPLES / "mistakes" / "square-wrong-sign.py").read_text(encoding="utf-8")}
    for student, language in (("ann", "en"), ("bo", "zh")):
        folder = root / "submitted" / student / course.ASSIGNMENT
        build_submission(root / "release" / course.ASSIGNMENT, answers, folder)
        for path in folder.glob("*.ipynb"):
            if path.name != "03_double_backward.ipynb":
                path.unlink()
            elif language != "en":
                nb = nbformat.read(str(path), as_version=4)
                nb.metadata["autograd_course"] = {"language": language}
                nbformat.write(nb, str(path))
    env = {k: v for k, v in course.nbgrader_env().items() if k not in ("GRADER_LANGUAGE", "JPY_SESSION_NAME")}
    done = subprocess.run(course.nbgrader_command("autograde", course.ASSIGNMENT, "--force",
                                                  f"--CourseDirectory.root={root}",
                                                  "--CourseDirectory.release_directory=release"),
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    def verdicts(student: str) -> dict[str, tuple[str, str]]:
        path = root / "autograded" / student / course.ASSIGNMENT / "03_double_backward.ipynb"
        found = {}
        for cell in nbformat.read(str(path), as_version=4).cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                kind = "error" if any(o.get("output_type") == "error" for o in cell.outputs) else "ok"
                found[meta["grade_id"]] = (kind, " ".join(o.get("evalue", "") or o.get("text", "")
                                                          for o in cell.outputs))
        return found

    english, chinese = verdicts("ann"), verdicts("bo")
    assert {k: v[0] for k, v in chinese.items()} == {k: v[0] for k, v in english.items()}
    assert english["square-first-order"][0] == "error" and "hint:" in english["square-first-order"][1]
    for grade_id, (kind, text) in chinese.items():
        assert re.search(r"[\u4e00-\u9fff]", text), (grade_id, text)
        assert not english_words(text), (grade_id, text)
    scores = course.gradebook_scores(f"sqlite:///{root / 'gradebook.db'}")
    assert scores["bo"] == scores["ann"]
    assert scores["ann"]["square"][0] < scores["ann"]["square"][1] and exercise_of("square-forward") == "square"


def test_a_chinese_notebook_stopped_early_tells_its_student_in_chinese_and_the_instructor_in_english():
    """The reason a notebook stopped is shown to its student (feedback) and logged for the instructor, whose
    terminal stays English whatever the notebook's language."""
    from grader.isolation import sandbox
    from grader.judge import runner

    stopped = sandbox.Outcome(None, "", 0.0, "time limit", sandbox.Limits())
    with messages.using("zh"):
        _, (for_student, for_instructor), _, _ = runner._read_results(b"", {0: 0}, [], stopped)
    assert re.search(r"[\u4e00-\u9fff]", for_student), for_student
    assert not re.search(r"[\u4e00-\u9fff]", for_instructor) and for_instructor, for_instructor
    with messages.using("en"):
        _, (english, also_english), _, _ = runner._read_results(b"", {0: 0}, [], stopped)
    assert english == also_english == for_instructor
