"""The CI a fork gets: the forge's workflow runs `bash .ci/run`, which installs everything and runs the suite."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from conftest import REPO, REQUIRE_EVERY_TEST


def test_the_workflow_runs_the_ci_script_on_every_push_as_root_in_debian():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "push" in triggers and "pull_request" in triggers
    (job,) = workflow["jobs"].values()
    assert job["container"]["image"].startswith("debian:")  # root: make install can apt-get and add the user
    assert "--privileged" in job["container"]["options"]  # bubblewrap creates namespaces
    assert [s["run"] for s in job["steps"] if "run" in s][-1] == "bash .ci/run"


def test_the_ci_script_installs_then_runs_the_whole_suite():
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert script.index("make install") < script.index("make test") and "set -euo pipefail" in script
    assert f"export {REQUIRE_EVERY_TEST}=1" in script and script.index(REQUIRE_EVERY_TEST) < script.index("make test")


def test_in_ci_a_test_that_would_skip_fails_and_says_what_is_missing(tmp_path):
    """A CI host where bubblewrap, PostgreSQL or chromium fails must not go green with the tests that need them
    skipped: with GRADER_REQUIRE_EVERY_TEST=1 every skip (marker or call) is an error naming its reason."""
    (tmp_path / "test_needs.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.skipif(True, reason='sandbox unavailable: bwrap cannot create a user namespace')\n"
        "def test_marked():\n    pass\n\n"
        "def test_called():\n    pytest.skip('no PostgreSQL server can run here')\n\n"
        "@pytest.mark.xfail(strict=True, reason='a known bug')\n"
        "def test_expected_to_fail():\n    assert False\n", encoding="utf-8")

    def run(require: str) -> subprocess.CompletedProcess:
        env = {**os.environ, REQUIRE_EVERY_TEST: require, "PYTHONPATH": str(REPO / "tests")}
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "require_every_test", "-q", "-rA",
                               str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    allowed = run("0")
    assert allowed.returncode == 0 and "2 skipped, 1 xfailed" in allowed.stdout, allowed.stdout
    required = run("1")
    assert required.returncode == 1, required.stdout
    assert "1 xfailed" in required.stdout and "skipped" not in required.stdout.splitlines()[-1], required.stdout
    for reason in ("sandbox unavailable: bwrap cannot create a user namespace", "no PostgreSQL server can run here"):
        assert f"({reason}), and {REQUIRE_EVERY_TEST}=1 (CI) runs every test" in required.stdout, required.stdout


def test_the_files_make_test_starts_first_exist_and_make_test_keeps_that_order():
    """conftest.LONGEST_FIRST names the slowest files, which `make test` starts first: a renamed file would silently
    go back to pytest's order (and, with xdist's default reordering by test count, the 4-test, 80-second shared
    server round trip ran last, alone, for the suite's last minute and a half)."""
    from conftest import LONGEST_FIRST

    missing = [name for name in LONGEST_FIRST if not (REPO / "tests" / name).is_file()]
    assert not missing, f"conftest.LONGEST_FIRST names files that are not in tests/: {missing}"
    recipe = subprocess.run(["make", "-n", "test"], cwd=REPO, capture_output=True, text=True).stdout
    assert "--dist loadfile --no-loadscope-reorder" in recipe, recipe
