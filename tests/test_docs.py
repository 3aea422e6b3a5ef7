"""The documentation: README.md is a newcomer's front page, the guides are docs/*.md, and nothing in them points
nowhere.

- every relative link of README.md and docs/*.md leads to a file that exists, and its `#anchor` to a heading of that
  file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens);
- every `make X` any of them names is a target of the Makefile;
- the README stays a front page (under 200 lines, the two commands) and links every page of docs/, and every page
  links back to it.

What the pages' examples print is tests/test_readme.py's (the demo's table, `make postgres`, the test count).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.classroom import course

REPO = course.REPO
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```[^\n]*\n.*?^[ \t]*```[ \t]*$", flags=re.M | re.S)


def prose(text: str) -> str:
    """The text without its fenced code blocks and inline `code` spans (a link written as code is not a link)."""
    return re.sub(r"`[^`\n]+`", "", FENCE.sub("", text))


def code_spans(text: str) -> list[str]:
    """Each fenced code block, and each inline `code` span outside them."""
    blocks = [re.sub(r"^[ \t]*```[^\n]*\n|^[ \t]*```[ \t]*$", "", b, flags=re.M) for b in FENCE.findall(text)]
    return blocks + re.findall(r"`([^`\n]+)`", FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", FENCE.sub("", text), flags=re.M):
        slug = anchor(heading)
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(text: str) -> list[str]:
    """The targets of a Markdown text's inline links and images, outside code."""
    return re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", prose(text))


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """The relative links of ``page`` whose file, or whose heading, does not exist."""
    text = page.read_text(encoding="utf-8") if text is None else text
    broken = []
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):  # https:, mailto:, ...: not this repository's
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif fragment and not (file.is_file() and file.suffix == ".md" and fragment.lower() in
                               anchors(file.read_text(encoding="utf-8") if path else text)):
            broken.append(f"{target}: no heading #{fragment} in {file.relative_to(REPO)}")
    return broken


def makefile_targets() -> set[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, flags=re.M))


def make_targets_named(text: str) -> set[str]:
    return {target for span in code_spans(text)
            for target in re.findall(r"(?:^|[\s;&|(])make\s+([a-z][a-z0-9-]*)(?=[\s`;&|)]|$)", span, flags=re.M)}


# --- the checks themselves ------------------------------------------------------------------------------------------


def test_the_anchors_are_githubs() -> None:
    assert anchor("What `make autograde` adds to nbgrader's autograde") == "what-make-autograde-adds-to-nbgraders-autograde"
    assert anchor("Large classes: several nbgrader processes, one PostgreSQL gradebook") == \
        "large-classes-several-nbgrader-processes-one-postgresql-gradebook"
    assert anchor("Trusted, fast autograding") == "trusted-fast-autograding"
    assert anchor("中文") == "中文"
    assert anchors("# A\n## B\n```\n# not a heading\n```\n## B\n") == {"a", "b", "b-1"}


def test_a_broken_link_is_found() -> None:
    text = ("[ok](docs/design.md#to-add-an-exercise) [self](#a) [web](https://example.org/x) `[code](nowhere.md)`\n"
            "# A\n[gone](docs/nowhere.md) [no heading](docs/design.md#nowhere) ![img](missing.png)\n"
            "```\n[in code](nowhere.md)\n```\n")
    assert broken_links(README, text) == [
        f"docs/nowhere.md: no file {REPO / 'docs' / 'nowhere.md'}",
        "docs/design.md#nowhere: no heading #nowhere in docs/design.md",
        f"missing.png: no file {REPO / 'missing.png'}"]


def test_make_targets_are_found_in_code_only() -> None:
    text = "Run `make demo`, then\n```bash\nmake lab PORT=1  # and\ncd x && make test\n```\nto make sure, make it."
    assert make_targets_named(text) == {"demo", "lab", "test"}


# --- the pages ------------------------------------------------------------------------------------------------------


def test_there_are_docs_pages() -> None:
    names = {page.name for page in PAGES[1:]}
    assert {"students.md", "instructors.md", "threat-model.md", "design.md"} <= names, names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(REPO)} links to what does not exist:\n" + "\n".join(broken)


def test_every_make_target_the_docs_name_is_a_makefile_target() -> None:
    named = {page.relative_to(REPO).as_posix(): make_targets_named(page.read_text(encoding="utf-8")) for page in PAGES}
    everywhere = set().union(*named.values())
    assert {"demo", "test", "lab", "release", "autograde", "feedback", "report", "postgres", "postgres-stop",
            "shared-server", "shared-env", "cluster-certificates"} <= everywhere, sorted(everywhere)
    targets = makefile_targets()
    missing = {page: sorted(found - targets) for page, found in named.items() if found - targets}
    assert not missing, f"make targets the Makefile does not have: {missing}"


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200, "README.md is the front page: what the course is, two commands, links"
    two = text[text.index("## Two commands"):]
    assert {"demo", "test"} <= make_targets_named(two[:two.index("\n## ")])
    assert "## Documentation" in text
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(text)}
    unlinked = [page.relative_to(REPO).as_posix() for page in PAGES[1:] if page.resolve() not in linked]
    assert not unlinked, f"README.md does not link these pages of docs/: {unlinked}"


@pytest.mark.parametrize("page", PAGES[1:], ids=lambda page: page.name)
def test_every_docs_page_links_back_to_the_readme(page: Path) -> None:
    assert "../README.md" in links(page.read_text(encoding="utf-8")), page.name
