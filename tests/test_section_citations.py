"""Every notebook section a student's feedback sends them to exists, in their own notebook, in English and in Chinese,
and teaches what the message is about.

Two kinds of pointers (issue 32: Exp's saved copy was sent to Sinh's section 4; notebook 4's hvp returning a tuple was
sent to "4. Vector outputs and grad_outputs", a heading of notebook 1 only):

- the registry's: ``grader.spec.exercises.SECTIONS`` and each ``Exercise.sections`` (custom Functions),
  ``grader.spec.functions.SECTIONS`` / ``MISTAKE_SECTIONS`` (notebooks 1 and 4's functions). They are checked as a
  student reads them: rendered by ``Exercise.section`` / ``functions.section`` in each language, then looked up among
  the headings of the notebook they name (the exercise's own when they name none), English or Chinese;
- the sentences': "section 4", "§4", "notebook 2, section 8", "notebook 3", "第 4 节", "笔记本 2 第 8 节" written in a
  message (grader/spec/messages.py, the compiled Chinese grader/spec/messages_zh.py, and any other string of grader/).
  Each must resolve to a heading of the notebook it names (or, unnamed, of every notebook whose exercises can say the
  message), and that section (its heading and the cells up to the next heading of its level) must mention what the
  message is about: an identifier the citing sentence writes in backticks, or else the terms ``TERMS`` gives it.

The checker is plain functions over notebooks given as data, so the fakes below prove it fails.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

import nbformat
import pytest

from grader.spec import exercises, functions, messages, messages_zh

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIRS = {"en": REPO / "solutions" / "autograd", "zh": REPO / "solutions" / "autograd-zh"}

# What a citation must find in its section when its sentence names nothing in backticks: (message key, notebook
# number or None, section number or None) -> terms, every one of which the section must mention. Each is what the
# message's own words say the section teaches.
TERMS: dict[tuple[str, int | None, int | None], tuple[str, ...]] = {
    # "{names} is written in the classic style (forward takes ctx), as notebook 3 teaches"
    ("hvp_torch_func_through_classic_function", 3, None): ("def forward(ctx",),
    # "with your {name} from notebook 3": {name} is Square, Exp or Sinh (grader.judge.second_order's own Functions)
    ("probe_own_function", 3, None): ("class Square(", "class Exp(", "class Sinh("),
    # "paste your {names} into the cell of section 0" / "section 0 is not pasted yet": section 0 is where the
    # Functions named in OWN_FUNCTIONS are pasted (notebooks 4 and 5), in either language (the code is the same)
    ("note_paste_skipped", None, 0): ("OWN_FUNCTIONS",),
    ("note_capstone_not_pasted", None, 0): ("OWN_FUNCTIONS",),
}


# --- notebooks as data ---------------------------------------------------------------------------------------------

@dataclass
class Notebook:
    """A notebook's text as lines (markdown and code, in order) and where its headings are."""

    name: str
    lines: list[str]
    headings: list[tuple[int, int, str]] = field(default_factory=list)  # (line index, level, heading text)

    @classmethod
    def of(cls, name: str, cells: list[tuple[str, str]]) -> "Notebook":
        """From (cell type, source) pairs."""
        nb = cls(name, [])
        for kind, source in cells:
            for line in source.splitlines():
                heading = re.match(r"(#{1,6}) +(.+?)\s*$", line) if kind == "markdown" else None
                if heading:
                    nb.headings.append((len(nb.lines), len(heading.group(1)), heading.group(2)))
                nb.lines.append(line)
        return nb

    def titles(self) -> list[str]:
        return [text for _, _, text in self.headings]

    def numbered(self, number: int) -> str | None:
        """The ``## N. Title`` heading of section N."""
        return next((text for _, level, text in self.headings if level == 2 and text.startswith(f"{number}. ")), None)

    def section(self, heading: str) -> str | None:
        """The heading's section: its line and every line (markdown and code) up to the next heading of its level or
        above; None if there is no such heading."""
        for k, (start, level, text) in enumerate(self.headings):
            if text == heading:
                end = next((i for i, lv, _ in self.headings[k + 1:] if lv <= level), len(self.lines))
                return "\n".join(self.lines[start:end])
        return None


def read_notebook(path: Path) -> Notebook:
    nb = nbformat.read(str(path), as_version=4)
    return Notebook.of(path.name, [(c.cell_type, c.source) for c in nb.cells])


def course_notebooks(language: str) -> dict[str, Notebook]:
    return {p.name: read_notebook(p) for p in sorted(NOTEBOOK_DIRS[language].glob("*.ipynb"))}


def by_number(notebooks: Mapping[str, Notebook], number: int) -> Notebook | None:
    """Notebook N: the one whose file name starts with its two-digit number."""
    return next((nb for name, nb in notebooks.items() if name.startswith(f"{number:02d}_")), None)


def describe(nb: Notebook) -> str:
    return f"{nb.name}'s headings:\n    " + "\n    ".join(f"{'#' * lv} {t}" for _, lv, t in nb.headings)


# --- the registry's pointers, as rendered ---------------------------------------------------------------------------

def parse_rendered(text: str, language: str) -> tuple[str | None, str]:
    """(notebook named or None, heading) of a rendered section note."""
    table = messages.TABLES[language]
    for key in ("section_in_notebook", "section_here"):
        template = table[key].title
        regex = "".join(f"(?P<{part[1:-1]}>.+)" if part.startswith("{") else re.escape(part)
                        for part in re.split(r"(\{\w+\})", template))
        found = re.fullmatch(regex, text)
        if found:
            return found.groupdict().get("notebook"), found.group("heading")
    raise AssertionError(f"{text!r} is not a section note of {language!r}")


def check_pointer(origin: str, text: str, own_notebook: str, language: str,
                  notebooks: Mapping[str, Notebook]) -> list[str]:
    """Problems of one rendered pointer ``text`` (said by ``origin``) for an exercise of ``own_notebook``."""
    named, heading = parse_rendered(text, language)
    name = named or own_notebook
    nb = notebooks.get(name)
    if nb is None:
        return [f"{origin} [{language}]: points at {text!r}, in {name}, a notebook that does not exist "
                f"(notebooks: {sorted(notebooks)})"]
    if nb.section(heading) is None:
        return [f"{origin} [{language}]: points at {text!r}, but {name} has no heading {heading!r}; "
                f"{describe(nb)}"]
    return []


def registry_pointers() -> Iterator[tuple[str, str, str, str]]:
    """(origin, exercise's notebook, check, mistake) for every pointer the registry can render."""
    for ex in exercises.EXERCISES.values():
        for mistake in sorted({"", *exercises.SECTIONS, *ex.sections}):
            yield f"exercises.EXERCISES[{ex.id!r}].section(..., {mistake!r})", ex.notebook, ex.id, mistake
    for exercise in functions.SECTIONS:
        for mistake in sorted({"", *(m for m in functions.MISTAKE_SECTIONS if exercise in exercises_saying(m))}):
            yield f"functions.section({exercise!r}, {mistake!r})", functions.NOTEBOOKS[exercise], exercise, mistake


def render_pointer(exercise: str, mistake: str, language: str) -> str:
    with messages.using(language):
        if exercise in exercises.EXERCISES:
            return exercises.EXERCISES[exercise].section("", mistake)
        return functions.section(exercise, mistake)


# --- which exercises can say a message, and where they are ------------------------------------------------------------

FUNCTION_PREFIXES = {"vjp": "vjp_", "accumulate": "accumulate_", "secondderiv": "second_", "hvp": "hvp_",
                     "penalty": "penalty_"}


def exercises_saying(key: str) -> set[str]:
    """The exercises whose feedback may say message ``key``: a variant ``<mistake>:<exercise>`` its exercise; a
    function check's mistake named after its exercise that one (``hvp_...``); any other function mistake the five
    function exercises; anything else every exercise."""
    if ":" in key:
        return {key.rsplit(":", 1)[1]}
    own = {ex for ex, prefix in FUNCTION_PREFIXES.items() if key.startswith(prefix)}
    if own:
        return own
    if key in functions.MISTAKES:
        return set(functions.SECTIONS)
    return set(exercises.EXERCISES) | set(functions.SECTIONS)


def notebooks_saying_note(key: str) -> set[str]:
    """A course note (``note_<name>``: printed by ``grader.checks.note``, or by ``skip_while_unwritten`` for a paste
    cell left as released) is said by the notebooks whose code prints it: derived from the solutions' code."""
    name = key.removeprefix("note_")
    found = set()
    for path in sorted((REPO / "solutions" / "autograd").glob("*.ipynb")):
        code = "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code")
        if f'note("{name}"' in code or (name == "paste_skipped" and "skip_while_unwritten" in code):
            found.add(path.name)
    return found


def notebook_of(exercise: str) -> str:
    return exercises.EXERCISES[exercise].notebook if exercise in exercises.EXERCISES else functions.NOTEBOOKS[exercise]


# --- the sentences' citations ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Citation:
    raw: str
    start: int
    notebook: int | None
    section: int | None


CITATION = {
    "en": re.compile(r"\bnotebook (?P<nb>[1-9]\d*)(?:(?:,|'s)? (?:section |§ ?)(?P<sec>\d+))?"
                     r"|(?:\bsection |§ ?)(?P<alone>\d+)", re.I),
    "zh": re.compile(r"笔记本 ?(?P<nb>[1-9]\d*)(?: ?[，,的]? ?(?:第 ?(?P<sec>\d+) ?节|§ ?(?P<sec2>\d+)))?"
                     r"|第 ?(?P<alone>\d+) ?节|§ ?(?P<alone2>\d+)"),
}


def citations(text: str, language: str) -> list[Citation]:
    found = []
    for m in CITATION[language].finditer(text):
        groups = {k: v for k, v in m.groupdict().items() if v}
        nb = int(groups["nb"]) if "nb" in groups else None
        sec = next((int(groups[k]) for k in ("sec", "sec2", "alone", "alone2") if k in groups), None)
        found.append(Citation(m.group(0), m.start(), nb, sec))
    return found


def sentence_at(text: str, position: int) -> str:
    """The sentence of ``text`` around ``position`` (split after . ; : and their Chinese forms)."""
    bounds = [0] + [m.end() for m in re.finditer(r"[.;:]\s+|[。；：]", text)] + [len(text)]
    start = max(b for b in bounds if b <= position)
    end = min((b for b in bounds if b > position), default=len(text))
    return text[start:end]


def terms_for(key: str, text: str, citation: Citation, terms: Mapping = TERMS) -> tuple[tuple[str, ...], bool]:
    """(terms, all of them needed): the citing sentence's backticked identifiers (any one will do), else ``terms``'
    entry for the citation (every one)."""
    quoted = tuple(t for t in re.findall(r"`([^`]+)`", sentence_at(text, citation.start)) if "{" not in t)
    if quoted:
        return quoted, False
    return tuple(terms.get((key, citation.notebook, citation.section), ())), True


def check_text(key: str, text: str, language: str, own_notebooks: set[str], notebooks: Mapping[str, Notebook],
               terms: Mapping = TERMS) -> list[str]:
    """Problems of the citations written in message ``key``'s ``text``, said in the notebooks ``own_notebooks``."""
    problems = []
    for citation in citations(text, language):
        where = f"message {key!r} [{language}] cites {citation.raw!r} in {text!r}"
        if citation.notebook is not None:
            nb = by_number(notebooks, citation.notebook)
            if nb is None:
                problems.append(f"{where}: there is no notebook {citation.notebook} (notebooks: {sorted(notebooks)})")
                continue
            targets = [nb]
        else:
            targets = [notebooks[name] for name in sorted(own_notebooks)]
        wanted, every = terms_for(key, text, citation, terms)
        if not wanted:
            problems.append(f"{where}: name what the section teaches in backticks in that sentence, or add its terms "
                            f"to TERMS[({key!r}, {citation.notebook}, {citation.section})], justified by the wording")
            continue
        for nb in targets:
            heading = nb.numbered(citation.section) if citation.section is not None else None
            if citation.section is not None and heading is None:
                problems.append(f"{where}: {nb.name} has no section {citation.section}; {describe(nb)}")
                continue
            body = nb.section(heading) if heading else "\n".join(nb.lines)
            missing = [t for t in wanted if t not in body]
            if missing if every else len(missing) == len(wanted):
                what = f"section {heading!r}" if heading else "the notebook"
                problems.append(f"{where}: {what} of {nb.name} does not mention {missing if every else wanted} "
                                f"(what the message is about); {describe(nb)}")
    return problems


def message_texts(language: str) -> Iterator[tuple[str, str]]:
    """(key, text) of every title and hint of ``language``'s table (Chinese: as compiled)."""
    if language == "en":
        for key, message in messages.EN.items():
            yield from ((key, text) for text in (message.title, message.hint) if text)
    else:
        for key, (title, hint) in messages_zh.TABLE.items():
            yield from ((key, text) for text in (title, hint) if text)


def other_strings() -> Iterator[tuple[str, str]]:
    """(file:line, text) of every string constant of grader/ outside the message tables, docstrings excluded."""
    skip = {REPO / "grader" / "spec" / "messages.py", REPO / "grader" / "spec" / "messages_zh.py"}
    for path in sorted((REPO / "grader").rglob("*.py")):
        if path in skip:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                yield f"{path.relative_to(REPO)}:{node.lineno}", node.value


# --- the course ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def notebooks() -> dict[str, dict[str, Notebook]]:
    return {language: course_notebooks(language) for language in NOTEBOOK_DIRS}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_section_the_registry_points_at_is_a_heading_of_the_students_notebook(language, notebooks):
    """A hint's "(See section ...)" names a heading of the notebook the student has open (or names the notebook),
    as that notebook titles it: the Chinese notebook's own heading for a Chinese notebook."""
    problems, seen = [], 0
    for origin, own, exercise, mistake in registry_pointers():
        text = render_pointer(exercise, mistake, language)
        if text:
            seen += 1
            problems += check_pointer(origin, text, own, language, notebooks[language])
    assert seen >= 40, f"only {seen} pointers rendered: the enumeration lost the registry"
    assert not problems, "\n\n".join(problems)


def test_each_function_exercise_is_in_the_notebook_the_registry_says(notebooks):
    """functions.NOTEBOOKS decides whether a pointer names its notebook: it must be where the exercise's checks run."""
    for name, check in functions.CHECKS.items():
        calling = [nb.name for nb in notebooks["en"].values() if any(f"basics.{name}(" in ln for ln in nb.lines)]
        assert calling == [functions.NOTEBOOKS[check.exercise]], (name, calling)
    for ex in exercises.EXERCISES.values():
        calling = [nb.name for nb in notebooks["en"].values()
                   if any(f'checks.forward("{ex.id}"' in ln for ln in nb.lines)]
        assert calling == [ex.notebook], (ex.id, calling)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_section_a_message_cites_exists_and_teaches_what_the_message_is_about(language, notebooks):
    problems, cited = [], 0
    for key, text in message_texts(language):
        own = notebooks_saying_note(key) if key.startswith("note_") else {notebook_of(ex) for ex in exercises_saying(key)}
        cited += len(citations(text, language))
        problems += check_text(key, text, language, own, notebooks[language])
    assert cited >= 2, "no citation found: the patterns no longer read the messages"
    assert not problems, "\n\n".join(problems)


def test_no_other_string_of_the_grader_cites_a_section_it_cannot_resolve(notebooks):
    """Feedback written outside the message tables (a judge's f-string) must name its notebook: nothing tells which
    exercise says it."""
    problems = []
    for origin, text in other_strings():
        for language in ("en", "zh"):
            for citation in citations(text, language):
                if citation.notebook is None:
                    problems.append(f"{origin}: {citation.raw!r} in {text!r} names no notebook")
                else:
                    problems += check_text(origin, text, language, set(), notebooks[language])
    assert not problems, "\n\n".join(problems)


# --- the checker fails when it should ---------------------------------------------------------------------------------

FAKE = {
    "01_basics.ipynb": Notebook.of("01_basics.ipynb", [
        ("markdown", "# Basics\n\n## 1. Leaves\n\nA leaf has `requires_grad`."),
        ("code", "x = torch.ones(1, requires_grad=True)"),
        ("markdown", "## 2. Retaining the graph\n\nPass `retain_graph=True` to call backward twice.\n\n### A demo"),
        ("code", "loss.backward(retain_graph=True)"),
        ("markdown", "## 3. Summary"),
    ]),
    "02_functions.ipynb": Notebook.of("02_functions.ipynb", [
        ("markdown", "## 1. Anatomy\n\n`ctx.save_for_backward` keeps tensors."),
    ]),
}


def test_the_fake_notebooks_sections_end_at_the_next_heading_of_their_level():
    nb = FAKE["01_basics.ipynb"]
    assert nb.numbered(2) == "2. Retaining the graph" and nb.numbered(4) is None
    assert "loss.backward(retain_graph=True)" in nb.section("2. Retaining the graph")
    assert "retain_graph" not in nb.section("1. Leaves") and "Summary" not in nb.section("2. Retaining the graph")


@pytest.mark.parametrize("text, language", [
    ("Call backward twice with `retain_graph=True` (section 2).", "en"),
    ("Call backward twice with `retain_graph=True` (§2).", "en"),
    ("Call backward twice with `retain_graph=True` (notebook 1, section 2).", "en"),
    ("Save with `ctx.save_for_backward`, as notebook 2 shows.", "en"),
    ("两次调用 backward 时传入 `retain_graph=True`（见第 2 节）。", "zh"),
    ("两次调用 backward 时传入 `retain_graph=True`（见笔记本 1 第 2 节）。", "zh"),
])
def test_a_right_citation_passes(text, language):
    assert citations(text, language), text
    assert check_text("fake", text, language, {"01_basics.ipynb"}, FAKE) == []


@pytest.mark.parametrize("text, language, said", [
    # the section does not exist
    ("Call backward twice with `retain_graph=True` (section 7).", "en", "01_basics.ipynb has no section 7"),
    ("两次调用 backward 时传入 `retain_graph=True`（见第 7 节）。", "zh", "01_basics.ipynb has no section 7"),
    # the notebook does not exist
    ("Call backward twice with `retain_graph=True` (notebook 9, section 2).", "en", "there is no notebook 9"),
    # the section exists but teaches something else (renumbered: section 1 is about leaves)
    ("Call backward twice with `retain_graph=True` (section 1).", "en", "does not mention"),
    ("Call backward twice with `retain_graph=True` (notebook 2, §1).", "en", "does not mention"),
    # nothing says what the section must teach
    ("Read section 2 again.", "en", "add its terms to TERMS"),
])
def test_a_broken_citation_fails_saying_which_message_citation_notebook_and_headings(text, language, said):
    problems = check_text("fake_key", text, language, {"01_basics.ipynb"}, FAKE)
    assert len(problems) == 1 and said in problems[0], problems
    assert "fake_key" in problems[0] and language in problems[0]
    if "notebook 9" not in said and "TERMS" not in said:
        assert "## 2. Retaining the graph" in problems[0] or "## 1. Anatomy" in problems[0], problems[0]


def test_a_table_entry_supplies_the_terms_and_each_must_appear():
    text = "Read section 2 again."
    terms = {("fake_key", None, 2): ("retain_graph=True",)}
    assert check_text("fake_key", text, "en", {"01_basics.ipynb"}, FAKE, terms) == []
    terms = {("fake_key", None, 2): ("retain_graph=True", "create_graph=True")}
    [problem] = check_text("fake_key", text, "en", {"01_basics.ipynb"}, FAKE, terms)
    assert "create_graph=True" in problem


def test_an_implicit_section_must_exist_in_every_notebook_that_says_the_message():
    text = "Call backward twice with `retain_graph=True` (section 2)."
    [problem] = check_text("fake", text, "en", {"01_basics.ipynb", "02_functions.ipynb"}, FAKE)
    assert "02_functions.ipynb has no section 2" in problem and "## 1. Anatomy" in problem


def test_a_registry_pointer_to_a_missing_heading_fails_naming_the_headings():
    here = messages.TABLES["en"]["section_here"].title.format(heading="2. Retaining the graph")
    assert check_pointer("SECTIONS['x']", here, "01_basics.ipynb", "en", FAKE) == []
    renamed = messages.TABLES["en"]["section_here"].title.format(heading="2. Retain the graph")
    [problem] = check_pointer("SECTIONS['x']", renamed, "01_basics.ipynb", "en", FAKE)
    assert "SECTIONS['x']" in problem and "'2. Retain the graph'" in problem and "## 2. Retaining the graph" in problem
    elsewhere = messages.TABLES["zh"]["section_in_notebook"].title.format(heading="1. Anatomy",
                                                                         notebook="02_functions.ipynb")
    assert check_pointer("SECTIONS['y']", elsewhere, "01_basics.ipynb", "zh", FAKE) == []
    [problem] = check_pointer("SECTIONS['y']", elsewhere, "01_basics.ipynb", "zh",
                              {"01_basics.ipynb": FAKE["01_basics.ipynb"]})
    assert "does not exist" in problem


def test_hvp_returning_a_tuple_is_sent_to_notebook_1s_section_not_to_notebook_4s_section_4(notebooks):
    """The registry bug this test found: "4. Vector outputs and grad_outputs" was cited as if notebook 4 had it."""
    for language in ("en", "zh"):
        text = render_pointer("hvp", "returned_tuple", language)
        assert parse_rendered(text, language)[0] == "01_autograd_basics.ipynb", text
        assert check_pointer("hvp", text, "04_modern_functions.ipynb", language, notebooks[language]) == []
