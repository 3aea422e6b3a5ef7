"""The CI a fork gets: the forge's workflow runs `bash .ci/run`, which installs everything and runs the suite."""

from __future__ import annotations

import yaml

from conftest import REPO


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
