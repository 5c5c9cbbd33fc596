"""Team policy: tfgen.yaml `policy.<namespace>` enforced by validate (and so by check), each
refusal naming the policy and its line in tfgen.yaml, at the spec field to change."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import copy_repo_parts, git_init
from tfgen.cli import main

SPEC = "experiments/resnet-chief-eval.yaml"  # namespace ml-team: chief 1 GPU, 4 workers x 1


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    # SPEC is the one ml-team spec each policy below is tried on: the bundled JobSet example
    # there would answer every rule too
    (root / "experiments" / "mnist-jobset.yaml").unlink()
    monkeypatch.chdir(root)
    return root


def set_policy(root: Path, **rules: Any) -> dict[str, int]:
    """ml-team's policy becomes `rules`; the tfgen.yaml line of each rule."""
    config = root / "tfgen.yaml"
    data = yaml.safe_load(config.read_text())
    data["policy"] = {"ml-team": rules}
    text = yaml.safe_dump(data, sort_keys=False)
    config.write_text(text)
    lines = text.splitlines()
    start = lines.index("policy:")
    return {key: next(i for i, line in enumerate(lines[start:], start + 1)
                      if line.strip().startswith(f"{key}:")) for key in rules}


def edit_spec(root: Path, rel: str, change: Any, new_name: str | None = None) -> Path:
    path = root / rel
    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    data = yaml.safe_load(text)
    data = copy.deepcopy(data)
    change(data)
    if new_name:
        data["metadata"]["name"] = new_name
        path = root / "experiments" / f"{new_name}.yaml"
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
    return path


def validate(*paths: str) -> Result:
    return CliRunner().invoke(main, ["validate", *paths], catch_exceptions=False)


def test_the_bundled_policy_passes(repo: Path) -> None:
    result = validate()
    assert result.exit_code == 0, result.output


def test_image_from_a_registry_not_allowed(repo: Path) -> None:
    line = set_policy(repo, registries=["registry.example.com/ml-team/"])["registries"]
    result = validate()
    assert result.exit_code == 1
    assert (f'image "tensorflow/tensorflow:2.16.1-gpu" (read as '
            f'"docker.io/tensorflow/tensorflow:2.16.1-gpu") comes from a source namespace ml-team '
            f"does not allow by policy.ml-team.registries (tfgen.yaml:{line})") in result.output
    assert f"{SPEC}:" in result.output


def test_digest_required(repo: Path) -> None:
    line = set_policy(repo, requireDigest=True)["requireDigest"]
    result = validate()
    assert result.exit_code == 1
    assert (f"is not pinned by digest, which policy.ml-team.requireDigest (tfgen.yaml:{line}) "
            "requires") in result.output
    digest = "sha256:" + "a" * 64
    edit_spec(repo, SPEC, lambda d: (d["spec"].update(image=f"tensorflow/tensorflow@{digest}"),
                                     d["spec"].setdefault("tensorboard", {}).update(
                                         image=f"tensorflow/tensorflow:2.16.1@{digest}")))
    assert validate().exit_code == 0, validate().output


def test_gpus_per_experiment(repo: Path) -> None:
    line = set_policy(repo, maxGpusPerExperiment=4)["maxGpusPerExperiment"]
    result = validate()
    assert result.exit_code == 1
    assert (f"the experiment requests 5 GPUs; policy.ml-team.maxGpusPerExperiment "
            f"(tfgen.yaml:{line}) allows 4 per experiment") in result.output


def test_gpu_quota_over_the_namespace(repo: Path) -> None:
    line = set_policy(repo, gpuQuota=8)["gpuQuota"]
    assert validate().exit_code == 0  # 5 of 8
    edit_spec(repo, SPEC, lambda d: d["spec"]["tensorboard"].update(  # its own logs
        logDir="/mnt/nas/resnet-second/logs"), new_name="resnet-second")  # 10 of 8
    result = validate()
    assert result.exit_code == 1
    message = (f"namespace ml-team's active experiments request 10 GPUs together (5 here); "
               f"policy.ml-team.gpuQuota (tfgen.yaml:{line}) is 8; holding them: "
               "resnet-chief-eval (5), resnet-second (5)")
    assert result.output.count(message) == 1, result.output  # once, naming every holder
    # on the spec being added, when the command knows which: the file it is given
    added = validate("experiments/resnet-second.yaml")
    assert added.output.startswith("experiments/resnet-second.yaml:"), added.output
    assert added.output.count(message) == 1, added.output
    # a suspended experiment holds none
    edit_spec(repo, "experiments/resnet-second.yaml",
              lambda d: d["spec"].setdefault("runPolicy", {}).update(suspend=True))
    assert validate().exit_code == 0, validate().output
    # and neither does a retired one
    edit_spec(repo, "experiments/resnet-second.yaml",
              lambda d: d["spec"].update(runPolicy={}, lifecycle="retired"))
    assert validate().exit_code == 0, validate().output


def test_check_base_reports_the_quota_once_on_the_spec_the_change_adds(repo: Path) -> None:
    line = set_policy(repo, gpuQuota=8)["gpuQuota"]
    edit_spec(repo, SPEC, lambda d: d["spec"]["tensorboard"].update(
        logDir="/mnt/nas/resnet-second/logs"), new_name="resnet-second")
    assert CliRunner().invoke(main, ["render"], catch_exceptions=False).exit_code == 1
    (repo / "experiments" / "resnet-second.yaml").rename(repo / "second.yaml.txt")
    git_init(repo)  # the base: resnet-chief-eval alone, within its quota
    (repo / "second.yaml.txt").rename(repo / "experiments" / "resnet-second.yaml")
    result = CliRunner().invoke(main, ["check", "--base", "main", "--no-cache"],
                                catch_exceptions=False)
    assert result.exit_code == 1
    quota = [p for p in result.stdout.splitlines() if f"(tfgen.yaml:{line}) is 8" in p]
    assert len(quota) == 1, result.stdout
    assert quota[0].startswith("experiments/resnet-second.yaml:"), quota


def test_load_balancer_not_allowed_by_default(repo: Path) -> None:
    """No serviceTypes in the policy: ClusterIP only (the schema's default)."""
    set_policy(repo, podSecurity="baseline")
    edit_spec(repo, SPEC, lambda d: d["spec"].setdefault("tensorboard", {}).update(
        service={"type": "LoadBalancer"}))
    result = validate()
    assert result.exit_code == 1
    assert ('Service type "LoadBalancer" is not allowed in namespace ml-team by '
            "policy.ml-team.serviceTypes (tfgen.yaml default) (one of: ClusterIP)"
            ) in result.output
    set_policy(repo, serviceTypes=["ClusterIP", "LoadBalancer"])
    assert validate().exit_code == 0


def test_accounts_schedulers_and_nas_servers(repo: Path) -> None:
    lines = set_policy(repo, serviceAccounts=["trainer"], schedulers=["kube-batch"],
                       nasServers=["nas.example.com"])
    edit_spec(repo, SPEC, lambda d: d["spec"].update(serviceAccountName="admin"))
    result = validate()
    assert result.exit_code == 1
    out = result.output
    assert ('ServiceAccount "admin" is not allowed in namespace ml-team by '
            f"policy.ml-team.serviceAccounts (tfgen.yaml:{lines['serviceAccounts']})") in out
    assert ('scheduler "volcano" is not allowed in namespace ml-team by '
            f"policy.ml-team.schedulers (tfgen.yaml:{lines['schedulers']})") in out
    assert ('NAS server "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com" is not allowed in namespace '
            f"ml-team by policy.ml-team.nasServers (tfgen.yaml:{lines['nasServers']})") in out
    assert f"{SPEC}:63:15: $.spec.storage.nas.server: NAS server" in out  # at the field


def test_check_refuses_what_validate_refuses(repo: Path) -> None:
    set_policy(repo, maxGpusPerExperiment=1)
    result = CliRunner().invoke(main, ["check", "--root", str(repo)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "policy.ml-team.maxGpusPerExperiment" in result.output


@pytest.mark.parametrize("command", [["validate"], ["render"], ["render", "--check"],
                                     ["check", "--no-cache"], ["check"], ["list"]])
def test_a_queued_run_holds_no_quota_in_any_command(repo: Path, command: list[str]) -> None:
    """Kueue admits a queued run's GPUs against its ClusterQueue: every command leaves it out
    of the namespace's gpuQuota, whether it judges the spec now or recalls its verdict."""
    set_policy(repo, gpuQuota=8, queues=["gpu-team"])
    edit_spec(repo, SPEC, lambda d: (d["spec"]["tensorboard"].update(
        logDir="/mnt/nas/resnet-second/logs"), d["spec"].update(
            runtime="jobset", queue="gpu-team"), d["spec"]["runPolicy"].pop("schedulingPolicy")),
        new_name="resnet-second")  # 5 + 5 queued
    if command != ["validate"]:
        rendered = CliRunner().invoke(main, ["render", "--prune"], catch_exceptions=False)
        assert rendered.exit_code == 0, rendered.output
        git_init(repo)
    for _ in range(2):  # the second run recalls what the first remembered
        result = CliRunner().invoke(main, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert "gpuQuota" not in result.output
    edit_spec(repo, "experiments/resnet-second.yaml", lambda d: d["spec"].update(queue=""))
    result = CliRunner().invoke(main, command, catch_exceptions=False)
    if command[0] != "list":  # unqueued, the same two are over the quota
        assert result.exit_code == 1 and "is 8; holding them" in result.output, result.output


# Kueue's webhook takes a queue or priority class name that is a DNS subdomain (its
# ValidateLabelAsCRDName), and as a label value it has at most 63 characters.
KUEUE_NAMES = [("gpu.team-a", True), ("a", True), ("q" * 63, True), ("a.b.c", True),
               ("q" * 64, False), ("a..b", False), (".a", False), ("a.", False),
               ("Gpu", False), ("gpu_team", False), ("-a", False)]


@pytest.mark.parametrize(("name", "taken"), KUEUE_NAMES)
def test_kueue_names_follow_kueues_rules(repo: Path, name: str, taken: bool) -> None:
    """A queue and a priority class named as Kueue allows (a dot included) pass validate,
    render and check, and reach the JobSet's labels; any other is refused at its line, in
    the spec and in tfgen.yaml's policy."""
    lines = set_policy(repo, queues=[name], priorities=[name])
    edit_spec(repo, SPEC, lambda d: (d["spec"].update(runtime="jobset", queue=name,
                                                      priority=name),
                                     d["spec"]["runPolicy"].pop("schedulingPolicy")))
    result = validate()
    if not taken:
        assert result.exit_code == 1
        for key in ("queues", "priorities"):  # the item, on the line after its key
            where = f"tfgen.yaml:{lines[key] + 1}:7: $.policy.ml-team.{key}[0]:"
            assert where in result.output, result.output
        return
    assert result.exit_code == 0, result.output
    rendered = CliRunner().invoke(main, ["render", "--prune"], catch_exceptions=False)
    assert rendered.exit_code == 0, rendered.output
    values = yaml.safe_load((repo / "argo/experiments/resnet-chief-eval/values.yaml").read_text())
    assert values["kueue"] == {"queue": name, "priority": name}
    git_init(repo)
    checked = CliRunner().invoke(main, ["check", "--no-cache"], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize(("name", "taken"), KUEUE_NAMES)
def test_a_spec_s_kueue_names_are_refused_at_their_lines(repo: Path, name: str,
                                                         taken: bool) -> None:
    set_policy(repo)  # any queue and priority class
    edit_spec(repo, SPEC, lambda d: (d["spec"].update(runtime="jobset", queue=name,
                                                      priority=name),
                                     d["spec"]["runPolicy"].pop("schedulingPolicy")))
    result = validate()
    found = [line for line in result.output.splitlines()
             if "$.spec.queue:" in line or "$.spec.priority:" in line]
    assert (found == []) is taken, result.output
    if not taken:
        assert len(found) == 2 and all(line.startswith(f"{SPEC}:") for line in found), found
