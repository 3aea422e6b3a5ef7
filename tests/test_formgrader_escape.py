"""formgrader's pages escape every value (issue 29, item 6; grader.classroom.formgrader_escape): a student id is a
folder name in submitted/, and nbgrader 0.9.6 wrote it into formgrader's pages as it was."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HOSTILE = 'x"</script><script>document.title="owned"</script><b class="score">6/6'


@pytest.fixture
def formgrader_settings(monkeypatch):
    """formgrader's ``init_tornado_settings`` as nbgrader 0.9.6 writes it (its jinja2 environment, no autoescape),
    then the course's extension over it: the settings a server's formgrader would render its pages with."""
    from jinja2 import Environment, FileSystemLoader
    from nbgrader.server_extensions.formgrader import handlers
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    def nbgraders_own(self, webapp):
        webapp.settings["nbgrader_jinja2_env"] = Environment(loader=FileSystemLoader([handlers.template_path]))

    monkeypatch.setattr(FormgradeExtension, "init_tornado_settings", nbgraders_own)
    from grader.classroom import formgrader_escape

    assert formgrader_escape.escape_formgrader_pages()

    class WebApp:
        settings: dict = {}

    webapp = WebApp()
    FormgradeExtension.init_tornado_settings(object(), webapp)
    return webapp.settings


@pytest.mark.parametrize("template", ["manage_students_assignments.tpl", "manage_students_notebook_submissions.tpl",
                                      "manage_submissions.tpl", "gradebook_notebooks.tpl"])
def test_an_id_a_submission_controls_is_text_in_formgraders_pages(formgrader_settings, template):
    page = formgrader_settings["nbgrader_jinja2_env"].get_template(template).render(
        base_url="/base", url_prefix="", student_id=HOSTILE, assignment_id=HOSTILE, notebook_id=HOSTILE,
        course_dir="/course", exchange="/exchange", windows=False, mathjax_url="", current_config={})
    assert "<script>document.title" not in page and '<b class="score">' not in page, page
    assert "&lt;/script&gt;&lt;script&gt;document.title=&#34;owned&#34;" in page  # shown, as text


def test_make_install_enables_the_extension_for_the_environments_servers(tmp_path):
    from grader.classroom import formgrader_escape, lab

    assert lab.write_settings(str(tmp_path)) == ""
    written = tmp_path / "etc" / "jupyter" / "jupyter_server_config.d" / formgrader_escape.CONFIG_NAME
    assert json.loads(written.read_text()) == formgrader_escape.CONFIG
    listed = subprocess.run([str(Path(sys.executable).with_name("jupyter")), "server", "extension", "list"],
                            capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # (jupyter colours its words)
    assert "grader.classroom.formgrader_escape enabled" in text and "OK" in text.split(
        "grader.classroom.formgrader_escape", 1)[1][:200], text
