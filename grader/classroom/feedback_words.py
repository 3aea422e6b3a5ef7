"""The words of nbgrader's feedback page in the notebook's language (issue 33): the course's template
(``templates/feedback/index.html.j2``) asks for them through two Jinja filters that ``nbgrader_config.py`` gives every
HTMLExporter, so the page's frame ("Score", "(Top)", "Comments:") is said from the message tables like every other
sentence a student reads, and the page declares its language (a browser then draws Chinese glyph forms)."""

from __future__ import annotations

from typing import Any

HTML_LANG = {"en": "en", "zh": "zh-CN"}


def course_word(key: str, nb: Any, **fields: Any) -> str:
    """``{{ "score" | course_word(nb, value=...) }}``: messages' ``feedback_<key>`` in ``nb``'s language, filled in."""
    from grader.spec import messages

    with messages.using(messages.language_of(nb)):
        return messages.say(f"feedback_{key}", **fields)


def page_language(nb: Any) -> str:
    """``<html lang="{{ nb | page_language }}">``: the notebook's language as HTML names it."""
    from grader.spec import messages

    return HTML_LANG.get(messages.language_of(nb), "en")
