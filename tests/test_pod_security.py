"""Pod security: the hardening the chart renders, the Pod Security Standard controls one by
one, and `tfgen check` refusing a pod that the namespace's level (declared in tfgen.yaml) would
refuse, with the policy's line in tfgen.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import copy_repo_parts, template
from tfgen.cli import main
from tfgen.gate.helm.command import find_helm
from tfgen.repo.resources import CONFIG_SCHEMA, schema
from tfgen.validate.policy import podsecurity

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tfjob-experiment"
SCENARIOS = sorted(p.name.removesuffix("-values.yaml") for p in (CHART / "ci").glob("*.yaml"))


def pods_of(rendered: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for obj in (d for d in yaml.safe_load_all(rendered) if d):
        if obj["kind"] == "TFJob":
            for rtype, replica in obj["spec"]["tfReplicaSpecs"].items():
                out.append((rtype, replica["template"]))
        elif obj["kind"] == "Deployment":
            out.append(("tensorboard", obj["spec"]["template"]))
    return out


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {s: template(CHART, s, "default", [CHART / "ci" / f"{s}-values.yaml"],
                        kube_version="1.30.0", helm=find_helm(4)) for s in SCENARIOS}


def test_the_scenarios_are_the_charts_ci_files() -> None:
    """The parametrized tests below run once per scenario: none may vanish unseen, and the
    ones named below are among them."""
    assert SCENARIOS and {"walkthrough", "chief-evaluator-csi"} <= set(SCENARIOS)


def test_levels_are_named_once() -> None:
    """The config schema's enum is the module's list of levels."""
    entry = schema(CONFIG_SCHEMA)["properties"]["policy"]["additionalProperties"]
    assert tuple(entry["properties"]["podSecurity"]["enum"]) == podsecurity.LEVELS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_pod_meets_baseline_and_restricted_but_for_non_root(
    scenario: str, rendered: dict[str, str]
) -> None:
    """tfgen's pods meet baseline; restricted only asks more of them: runAsNonRoot, which the
    spec or the namespace's policy sets (the image's user is not known to tfgen), and no UID 0
    (the tensorboard-ingress scenario trains as root on purpose)."""
    pods = pods_of(rendered[scenario])
    assert pods
    for name, tpl in pods:
        spec, notes = tpl["spec"], tpl["metadata"].get("annotations") or {}
        assert podsecurity.violations(spec, notes, "baseline", "1.30") == [], name
        left = {v.control for v in podsecurity.violations(spec, notes, "restricted", "1.30")}
        assert left <= {"Running as Non-root", "Running as Non-root user"}, (name, left)
        if name == "tensorboard":
            assert not left


def test_tensorboard_hardening(rendered: dict[str, str]) -> None:
    for scenario in ("walkthrough", "chief-evaluator-csi"):
        [(_, tpl)] = [p for p in pods_of(rendered[scenario]) if p[0] == "tensorboard"]
        pod = tpl["spec"]["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert pod["runAsUser"] >= 10000 and pod["runAsGroup"] >= 10000
        [container] = tpl["spec"]["containers"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        limits = container["resources"]["limits"]
        assert set(limits) == {"cpu", "memory"}
    # the trainers' groups stay readable: chief-evaluator-csi trains as 2000:2000 with 3000
    [(_, tpl)] = [p for p in pods_of(rendered["chief-evaluator-csi"]) if p[0] == "tensorboard"]
    assert tpl["spec"]["securityContext"]["supplementalGroups"] == [3000, 2000]


def test_a_high_trainer_uid_is_shared_with_tensorboard(tmp_path: Path) -> None:
    values = tmp_path / "v.yaml"
    values.write_text(yaml.safe_dump({"podSecurityContext": {"runAsUser": 20000,
                                                             "runAsGroup": 20001}}))
    text = template(CHART, "x", "default", [CHART / "ci" / "walkthrough-values.yaml", values],
                    kube_version="1.30.0", helm=find_helm(4))
    [(_, tpl)] = [p for p in pods_of(text) if p[0] == "tensorboard"]
    context = tpl["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"]) == (20000, 20001)
    assert "supplementalGroups" not in context


def test_training_containers_are_locked_down(rendered: dict[str, str]) -> None:
    training = [(name, tpl) for name, tpl in pods_of(rendered["walkthrough"])
                if name != "tensorboard"]
    assert sorted(name for name, _ in training) == ["Master", "PS", "Worker"]
    for _, tpl in training:
        assert tpl["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        [container] = tpl["spec"]["containers"]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


GOOD = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]}

# (change to GOOD, annotations, level whose control it breaks, control)
CASES: list[tuple[str, dict[str, Any], dict[str, str], str, str]] = [
    ("hostNetwork", {"hostNetwork": True}, {}, "baseline", "Host Namespaces"),
    ("hostPID", {"hostPID": True}, {}, "baseline", "Host Namespaces"),
    ("hostIPC", {"hostIPC": True}, {}, "baseline", "Host Namespaces"),
    ("privileged", {"c": {"privileged": True}}, {}, "baseline", "Privileged Containers"),
    ("SYS_ADMIN", {"c": {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}}, {},
     "baseline", "Capabilities"),
    ("hostPath", {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, {}, "baseline",
     "HostPath Volumes"),
    ("hostPort", {"ports": [{"containerPort": 80, "hostPort": 80}]}, {}, "baseline",
     "Host Ports"),
    ("apparmor field", {"c": {"appArmorProfile": {"type": "Unconfined"}}}, {}, "baseline",
     "AppArmor"),
    ("apparmor annotation", {}, {"container.apparmor.security.beta.kubernetes.io/c":
                                 "unconfined"}, "baseline", "AppArmor"),
    ("selinux type", {"c": {"seLinuxOptions": {"type": "spc_t"}}}, {}, "baseline", "SELinux"),
    ("selinux user", {"c": {"seLinuxOptions": {"user": "root"}}}, {}, "baseline", "SELinux"),
    ("procMount", {"c": {"procMount": "Unmasked"}}, {}, "baseline", "/proc Mount Type"),
    ("seccomp unconfined", {"pod": {"seccompProfile": {"type": "Unconfined"}}}, {},
     "baseline", "Seccomp"),
    ("unsafe sysctl", {"pod": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}, {},
     "baseline", "Sysctls"),
    ("hostProcess", {"pod": {"windowsOptions": {"hostProcess": True}}}, {}, "baseline",
     "HostProcess"),
    ("nfs volume", {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]}, {},
     "restricted", "Volume Types"),
    ("escalation", {"c": {"allowPrivilegeEscalation": True}}, {}, "restricted",
     "Privilege Escalation"),
    ("root allowed", {"pod": {"runAsNonRoot": False}}, {}, "restricted", "Running as Non-root"),
    ("uid 0", {"c": {"runAsUser": 0}}, {}, "restricted", "Running as Non-root user"),
    ("no seccomp", {"pod": {"seccompProfile": None}}, {}, "restricted", "Seccomp"),
    ("keeps caps", {"c": {"capabilities": {"drop": ["NET_RAW"]}}}, {}, "restricted",
     "Capabilities"),
    ("adds CHOWN", {"c": {"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}}, {},
     "restricted", "Capabilities"),
]


def breaking(change: dict[str, Any]) -> dict[str, Any]:
    pod = json.loads(json.dumps(GOOD))
    for key, value in change.items():
        if key == "c":
            pod["containers"][0]["securityContext"].update(value)
        elif key == "pod":
            for k, v in value.items():
                if v is None:
                    pod["securityContext"].pop(k)
                else:
                    pod["securityContext"][k] = v
        elif key == "ports":
            pod["containers"][0]["ports"] = value
        else:
            pod[key] = value
    return pod


def test_the_good_pod_meets_restricted() -> None:
    assert podsecurity.violations(GOOD, {}, "restricted", "1.30") == []


@pytest.mark.parametrize(("case", "change", "notes", "level", "control"), CASES,
                         ids=[c[0] for c in CASES])
def test_each_control(case: str, change: dict[str, Any], notes: dict[str, str], level: str,
                      control: str) -> None:
    pod = breaking(change)
    found = podsecurity.violations(pod, notes, level, "1.30")
    assert control in {v.control for v in found}, found
    weaker = podsecurity.LEVELS[podsecurity.LEVELS.index(level) - 1]
    assert podsecurity.violations(pod, notes, weaker, "1.30") == []


def test_sysctls_follow_the_kubernetes_version() -> None:
    pod = breaking({"pod": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}]}})
    assert podsecurity.violations(pod, {}, "baseline", "1.28")
    assert not podsecurity.violations(pod, {}, "baseline", "1.30")


# Pods the API server's evaluator (k8s.io/pod-security-admission) judges otherwise than a
# reading of the Pod Security Standards page alone would: (case, change to GOOD, annotations,
# level, Kubernetes version, the controls the pod breaks there). tests/test_podsecurity_referee.py
# runs the evaluator itself.
AS_THE_EVALUATOR_JUDGES: list[tuple[str, dict[str, Any], dict[str, str], str, str, set[str]]] = [
    ("empty apparmor annotation", {}, {"container.apparmor.security.beta.kubernetes.io/c": ""},
     "restricted", "1.30", set()),
    ("container_engine_t before 1.31", {"c": {"seLinuxOptions": {"type": "container_engine_t"}}},
     {}, "baseline", "1.30", {"SELinux"}),
    ("container_engine_t from 1.31", {"c": {"seLinuxOptions": {"type": "container_engine_t"}}},
     {}, "baseline", "1.31", set()),
    # restricted's volume types replace baseline's hostPath rule (OverrideCheckIDs)
    ("hostPath at restricted", {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, {},
     "restricted", "1.30", {"Volume Types"}),
    # with hostNetwork, the API server's defaulting makes a container port a host port
    ("hostNetwork with a port", {"hostNetwork": True, "ports": [{"containerPort": 2222}]}, {},
     "baseline", "1.30", {"Host Namespaces", "Host Ports"}),
    # a Windows pod cannot set these fields, and is not asked to
    ("windows pod", {"os": {"name": "windows"}, "pod": {"seccompProfile": None},
                     "c": {"allowPrivilegeEscalation": None, "capabilities": None}}, {},
     "restricted", "1.30", set()),
    ("linux pod", {"os": {"name": "linux"}, "pod": {"seccompProfile": None},
                   "c": {"allowPrivilegeEscalation": None, "capabilities": None}}, {},
     "restricted", "1.30", {"Seccomp", "Privilege Escalation", "Capabilities"}),
]


@pytest.mark.parametrize(("case", "change", "notes", "level", "version", "controls"),
                         AS_THE_EVALUATOR_JUDGES, ids=[c[0] for c in AS_THE_EVALUATOR_JUDGES])
def test_as_the_evaluator_judges(case: str, change: dict[str, Any], notes: dict[str, str],
                                 level: str, version: str, controls: set[str]) -> None:
    found = podsecurity.violations(breaking(change), notes, level, version)
    assert {v.control for v in found} == controls, found


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def set_policy(root: Path, policy: dict[str, Any]) -> int:
    """Replace tfgen.yaml's policy block; the line of the first namespace's podSecurity."""
    config = root / "tfgen.yaml"
    data = yaml.safe_load(config.read_text())
    data["policy"] = policy
    text = yaml.safe_dump(data, sort_keys=False)
    config.write_text(text)
    return next(i for i, line in enumerate(text.splitlines(), 1) if "podSecurity" in line)


def test_check_refuses_a_pod_the_namespace_would_refuse(repo: Path) -> None:
    runner = CliRunner()
    line = set_policy(repo, {"ml-team": {"podSecurity": "restricted", "runAsNonRoot": False}})
    said = (f"namespace ml-team enforces Pod Security 'restricted' (tfgen.yaml:{line}), "
            "control Running as Non-root")
    # validate refuses it at the spec's line, before anything renders; check says the same
    for command in ("validate", "render", "check"):
        where = [str(repo / "experiments")] if command == "validate" else ["--root", str(repo)]
        result = runner.invoke(main, [command, *where], catch_exceptions=False)
        assert result.exit_code == 1, result.output
        assert said in result.output
        assert "experiments/resnet-chief-eval.yaml:" in result.output
        assert "$.spec.securityContext" in result.output
        assert "distributed-mnist" not in result.output  # namespace default: baseline
    # the team asks for non-root pods: the same check passes (the cached verdict is not reused)
    set_policy(repo, {"ml-team": {"podSecurity": "restricted", "runAsNonRoot": True}})
    assert runner.invoke(main, ["render", "--root", str(repo)]).exit_code == 0
    result = runner.invoke(main, ["check", "--root", str(repo)], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_check_refuses_unconfined_seccomp_under_baseline(repo: Path) -> None:
    runner = CliRunner()
    spec = repo / "experiments" / "distributed-mnist.yaml"
    text = spec.read_text()
    data = yaml.safe_load(text)
    data["spec"].setdefault("securityContext", {})["seccompProfile"] = "Unconfined"
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    spec.write_text(header + yaml.safe_dump(data, sort_keys=False))
    for command in ("validate", "check"):
        where = [str(repo / "experiments")] if command == "validate" else ["--root", str(repo)]
        result = runner.invoke(main, [command, *where], catch_exceptions=False)
        assert result.exit_code == 1, result.output
        assert "namespace default enforces Pod Security 'baseline'" in result.output
        assert "control Seccomp: Unconfined is not allowed" in result.output
        assert "experiments/distributed-mnist.yaml:" in result.output
        assert "$.spec.securityContext.seccompProfile" in result.output

