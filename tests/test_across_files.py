"""A remembered verdict brings back only what the rules across files read of a spec
(`checked.ACROSS_FILES`): unique names and PersistentVolumes, shared log directories, GPU
quotas (which suspended, retired and queued runs do not hold). A run that keeps its verdicts,
and one that recalls them, must report what a run without memory reports, and hand on the
same complete data."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import copy_repo_parts, examples, mnist_written
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.render.insync import Memory
from tfgen.validate import load_config, validate_paths
from tfgen.validate.result import ValidationResult

QUOTA = 6  # ml-team's GPUs, so that a few experiments together go over it

# Few choices each, so that names, volumes and log directories often clash.
SPEC = st.fixed_dictionaries({
    "name": st.sampled_from(["alpha", "beta", "gamma"]),
    "file": st.sampled_from(["a", "b", "c", "d"]),
    "namespace": st.sampled_from(["default", "ml-team"]),
    "storage": st.sampled_from(["nas-1", "nas-2", "claim"]),
    "log_dir": st.sampled_from(["/training/logs", "/training/run/logs", "/training/other"]),
    "workers": st.integers(1, 3),
    "gpus": st.integers(0, 2),
    "state": st.sampled_from(["running", "suspended", "retired", "queued"]),
    "sweep": st.booleans(),
})


def spec_text(choice: dict[str, Any]) -> str:
    data = mnist_written(name=choice["name"], namespace=choice["namespace"])
    spec = data["spec"]
    if choice["storage"] == "claim":
        spec["storage"] = {"existingClaim": "shared-data", "mountPath": "/training"}
    else:
        spec["storage"]["nas"]["path"] = f"/exports/{choice['storage']}"
    spec["tensorboard"]["logDir"] = choice["log_dir"]
    spec["args"] = [f"--log_dir={choice['log_dir']}"]
    spec["roles"]["worker"].update(replicas=choice["workers"], gpus=choice["gpus"])
    if choice["state"] == "suspended":
        spec["runPolicy"] = {"suspend": True}
    if choice["state"] == "retired":
        spec["lifecycle"] = "retired"
    if choice["state"] == "queued":  # Kueue's quota, not the namespace's
        spec.update(runtime="jobset", queue="gpu-team")
    if choice["sweep"]:
        spec["sweep"] = {"parameters": {"lr": [0.1, 0.01]}}
        spec["args"].append("--lr={{lr}}")
    return yaml.safe_dump(data, sort_keys=False)


def judged(root: Path, remember: bool) -> ValidationResult:
    config = load_config(cwd=root)
    if not remember:
        return validate_paths([config.experiments_dir], config)
    memory = Memory(root, folders=("experiments",))
    try:
        return validate_paths([config.experiments_dir], config, verdicts=memory.verdicts)
    finally:
        memory.cache.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_repo_parts(tmp_path_factory.mktemp("across") / "repo")
    config = root / "tfgen.yaml"
    data = yaml.safe_load(config.read_text())
    data["policy"] = {"ml-team": {"gpuQuota": QUOTA}}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def repo_with(template: Path, where: Path, specs: list[dict[str, Any]]) -> Path:
    root = where / "repo"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root, symlinks=True)
    shutil.rmtree(root / "experiments")
    (root / "experiments").mkdir()
    for choice in specs:
        (root / "experiments" / f"{choice['file']}.yaml").write_text(spec_text(choice))
    return root


def assert_recalled_as_judged(root: Path) -> list[str]:
    """The problems a run without memory finds, and a run recalling every verdict finds the
    same, with the same complete data; returns the messages found."""
    fresh = judged(root, remember=False)
    remembering = judged(root, remember=True)  # checks every file, keeps every verdict
    recalled = judged(root, remember=True)
    for run in (remembering, recalled):
        assert run.problems == fresh.problems
        assert [(e.name, e.data) for e in run.experiments] == [
            (e.name, e.data) for e in fresh.experiments]
    return [p.message for p in fresh.problems]


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(SPEC, min_size=2, max_size=4, unique_by=lambda c: c["file"]))
def test_recalled_verdicts_are_judged_as_checked_ones(
    template: Path, tmp_path: Path, specs: list[dict[str, Any]]
) -> None:
    assert_recalled_as_judged(repo_with(template, tmp_path, specs))


def test_every_rule_across_files_is_met_by_recalled_verdicts(
    template: Path, tmp_path: Path
) -> None:
    base = {"namespace": "ml-team", "storage": "nas-1", "workers": 2, "gpus": 2,
            "state": "running", "sweep": False}
    specs = [
        {**base, "file": "alpha", "name": "alpha", "log_dir": "/training/logs"},
        {**base, "file": "b", "name": "alpha", "log_dir": "/training/run/logs"},  # same name
        {**base, "file": "gamma", "name": "gamma", "log_dir": "/training/logs"},  # a's logs
        {**base, "file": "beta", "name": "beta", "log_dir": "/training/other", "sweep": True},
    ]
    messages = assert_recalled_as_judged(repo_with(template, tmp_path, specs))
    for found in ('experiment name "alpha" is also used by',
                  "the log directory of",
                  f"is {QUOTA}"):
        assert any(found in m for m in messages), (found, messages)
