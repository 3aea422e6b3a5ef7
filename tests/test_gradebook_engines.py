"""grader.classroom.gradebook_engines: nbgrader's many openings of one gradebook share one engine in an nbgrader process."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import sys
    from nbgrader.api import Gradebook
    from grader.classroom import gradebook_engines

    url = "sqlite:///" + sys.argv[1]
    gradebook_engines.share()
    gradebook_engines.share()  # idempotent
    with Gradebook(url) as first:  # creates the tables, as nbgrader's own would
        first.add_student("ada")
        engine = first.engine
    with Gradebook(url) as second:
        assert second.engine is engine, "a second opening made an engine of its own"
        assert [s.id for s in second.students] == ["ada"]
        second.add_student("bo")
    with Gradebook(url, course_id="other") as third:  # a course not checked yet is checked (and added)
        assert third.engine is engine and third.course_id == "other"
    checks = []
    real = Gradebook.check_course
    Gradebook.check_course = lambda self, course_id="default_course", **kw: checks.append(course_id) or real(
        self, course_id=course_id, **kw)
    for _ in range(3):  # once checked in this process, a course is not checked again by each opening
        with Gradebook(url, course_id="other") as again:
            assert again.course_id == "other"
    with Gradebook(url, course_id="third") as new:
        assert new.course_id == "third"
    Gradebook.check_course = real
    assert checks == ["third"], checks
    from nbgrader.api import Course
    with Gradebook(url) as check:
        assert sorted(c.id for c in check.db.query(Course)) == ["default_course", "other", "third"]
    gradebook_engines.dispose()
    with Gradebook(url) as fourth:  # after dispose(): a new engine, the same data
        assert fourth.engine is not engine
        assert sorted(s.id for s in fourth.students) == ["ada", "bo"]
    print("ok")
""")


def test_openings_of_one_gradebook_share_an_engine_and_see_the_same_data(tmp_path):
    from grader.classroom.course import nbgrader_env  # (nbgrader runs the venv's `alembic` when it creates a gradebook)

    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "gradebook.db")], cwd=REPO,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
