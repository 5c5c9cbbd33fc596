"""Pod Security judged as the API server judges it: tfgen's controls against the real evaluator.

tests/go/podsecurity runs the evaluator of k8s.io/pod-security-admission (the version its
go.mod pins: the Kubernetes minor tfgen targets) on pods. Every pod template tfgen renders here
(each chart ci scenario, each bundled experiment), property-generated security contexts,
annotations and volumes, and the upstream module's own test fixtures go through it and through
generator/tfgen/validate/policy/podsecurity.py at baseline and restricted: the verdicts and the
failing controls must be the same.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT, examples, go_tool, rendered_here
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.validate.policy import podsecurity

pytestmark = pytest.mark.go  # runs a Go tool of `make go-tools`


KUBE_VERSION = "1.30"  # the minor of k8s.io/pod-security-admission in tests/go/podsecurity
LEVELS = ("baseline", "restricted")
REFEREE_MODULE = REPO_ROOT / "tests" / "go" / "podsecurity"
# The evaluator's reason for each of its checks -> the control tfgen reports for it.
CONTROL_OF_REASON = {
    "host namespaces": "Host Namespaces",
    "privileged": "Privileged Containers",
    "non-default capabilities": "Capabilities",
    "unrestricted capabilities": "Capabilities",
    "hostPath volumes": "HostPath Volumes",
    "hostPort": "Host Ports",
    "forbidden AppArmor profile": "AppArmor",
    "forbidden AppArmor profiles": "AppArmor",
    "seLinuxOptions": "SELinux",
    "procMount": "/proc Mount Type",
    "seccompProfile": "Seccomp",
    "forbidden sysctls": "Sysctls",
    "hostProcess": "HostProcess",
    "restricted volume types": "Volume Types",
    "allowPrivilegeEscalation != false": "Privilege Escalation",
    "runAsNonRoot != true": "Running as Non-root",
    "runAsUser=0": "Running as Non-root user",
}

Pod = tuple[dict[str, Any], dict[str, Any]]  # (annotations, pod spec)


def referee(pods: list[Pod], level: str) -> list[tuple[bool, set[str]]]:
    """(allowed, failing controls) of each pod, by the API server's evaluator."""
    lines = "".join(json.dumps({"level": level, "version": f"v{KUBE_VERSION}",
                                "metadata": {"annotations": annotations}, "spec": spec}) + "\n"
                    for annotations, spec in pods)
    result = subprocess.run([str(go_tool("podsecurity"))], input=lines, capture_output=True,
                            text=True, check=True)
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(verdicts) == len(pods) and not [v["error"] for v in verdicts if "error" in v]
    return [(v["allowed"], {CONTROL_OF_REASON[r] for r in v["reasons"]}) for v in verdicts]


def tfgen(pods: list[Pod], level: str) -> list[tuple[bool, set[str]]]:
    out = []
    for notes, spec in pods:
        found = podsecurity.violations(spec, notes, level, KUBE_VERSION)
        out.append((not found, {v.control for v in found}))
    return out


def assert_same(pods: list[Pod], level: str) -> None:
    theirs, ours = referee(pods, level), tfgen(pods, level)
    differ = [(pod, their, our) for pod, their, our in zip(pods, theirs, ours, strict=True)
              if their != our]
    assert not differ, f"{len(differ)} of {len(pods)} pods judged otherwise at {level}; " \
                       f"first: {differ[0]}"


def pod_templates(node: Any) -> list[Pod]:
    """Every pod template in an object (anything with a spec holding containers)."""
    found: list[Pod] = []
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and "containers" in spec:
            found.append(((node.get("metadata") or {}).get("annotations") or {}, spec))
        for value in node.values():
            found += pod_templates(value)
    elif isinstance(node, list):
        for value in node:
            found += pod_templates(value)
    return found


RENDERED_PODS = [pod for obj in rendered_here() for pod in pod_templates(obj.doc)]


@pytest.mark.parametrize("level", LEVELS)
def test_every_rendered_pod_is_judged_alike(level: str) -> None:
    assert len(RENDERED_PODS) >= 20
    assert_same(RENDERED_PODS, level)


# --- property-generated pods -----------------------------------------------------------------

BOOL = st.none() | st.booleans()
SECCOMP = st.none() | st.fixed_dictionaries({"type": st.sampled_from(
    ["RuntimeDefault", "Unconfined"])}) | st.just({"type": "Localhost",
                                                   "localhostProfile": "p.json"})
APPARMOR = st.none() | st.fixed_dictionaries({"type": st.sampled_from(
    ["RuntimeDefault", "Unconfined"])}) | st.just({"type": "Localhost",
                                                   "localhostProfile": "p"})
SELINUX = st.none() | st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["", "container_t", "container_init_t", "container_kvm_t",
                             "container_engine_t", "spc_t", "unconfined_t"]),
    "user": st.sampled_from(["", "system_u"]), "role": st.sampled_from(["", "system_r"]),
    "level": st.sampled_from(["", "s0:c1,c2"])})
USER = st.none() | st.sampled_from([0, 1, 1000])
WINDOWS = st.none() | st.fixed_dictionaries({"hostProcess": st.booleans()})
SYSCTLS = st.lists(st.sampled_from(
    ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
     "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
     "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
     "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
     "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
     "kernel.msgmax", "net.core.somaxconn"]), max_size=2).map(
    lambda names: [{"name": n, "value": "1"} for n in names])
CAPABILITIES = st.lists(st.sampled_from(
    ["NET_BIND_SERVICE", "CHOWN", "KILL", "SYS_ADMIN", "NET_RAW", "ALL", "SYS_TIME"]),
    max_size=2, unique=True)
VOLUMES = st.sampled_from([
    {"emptyDir": {}}, {"hostPath": {"path": "/var"}}, {"configMap": {"name": "c"}},
    {"secret": {"secretName": "s"}}, {"nfs": {"server": "n", "path": "/"}},
    {"persistentVolumeClaim": {"claimName": "c"}}, {"csi": {"driver": "d"}},
    {"projected": {"sources": []}}, {"downwardAPI": {}}, {"gitRepo": {"repository": "r"}},
    {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}}, {"iscsi": {
        "targetPortal": "t", "iqn": "i", "lun": 0}}, {"flexVolume": {"driver": "d"}},
    {"cephfs": {"monitors": ["m"]}}])
APPARMOR_ANNOTATION_VALUES = st.sampled_from(
    ["runtime/default", "localhost/p", "unconfined", "", "localhost/"])


def _without_none(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None and value != []}


@st.composite
def security_contexts(draw: st.DrawFn, pod: bool) -> dict[str, Any]:
    common = _without_none(
        runAsUser=draw(USER), runAsNonRoot=draw(BOOL), seccompProfile=draw(SECCOMP),
        appArmorProfile=draw(APPARMOR), seLinuxOptions=draw(SELINUX),
        windowsOptions=draw(WINDOWS))
    if pod:
        return {**common, **_without_none(sysctls=draw(SYSCTLS))}
    capabilities = _without_none(add=draw(CAPABILITIES), drop=draw(CAPABILITIES))
    return {**common, **_without_none(
        privileged=draw(BOOL), allowPrivilegeEscalation=draw(BOOL),
        procMount=draw(st.none() | st.sampled_from(["Default", "Unmasked"])),
        capabilities=capabilities or None)}


@st.composite
def containers(draw: st.DrawFn, name: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "x"}
    context = draw(st.none() | security_contexts(pod=False))
    if context is not None:
        container["securityContext"] = context
    port = draw(st.none() | st.sampled_from([0, 8080]))
    if port is not None:
        container["ports"] = [{"containerPort": 2222, "hostPort": port}]
    return container


@st.composite
def pods(draw: st.DrawFn) -> Pod:
    names = draw(st.lists(st.sampled_from(["tensorflow", "sidecar", "init"]), min_size=1,
                          max_size=3, unique=True))
    spec: dict[str, Any] = {"containers": [draw(containers(n)) for n in names[:2]]}
    if len(names) > 2:
        spec["initContainers"] = [draw(containers(names[2]))]
    if draw(st.booleans()):
        spec["ephemeralContainers"] = [draw(containers("debug"))]
    spec.update(_without_none(hostNetwork=draw(BOOL), hostPID=draw(BOOL), hostIPC=draw(BOOL),
                              os=draw(st.none() | st.fixed_dictionaries(
                                  {"name": st.sampled_from(["linux", "windows"])}))))
    context = draw(st.none() | security_contexts(pod=True))
    if context is not None:
        spec["securityContext"] = context
    volumes = draw(st.lists(VOLUMES, max_size=3))
    if volumes:
        spec["volumes"] = [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]
    annotations = {f"container.apparmor.security.beta.kubernetes.io/{name}": value
                   for name, value in draw(st.dictionaries(
                       st.sampled_from([*names, "debug"]), APPARMOR_ANNOTATION_VALUES,
                       max_size=2)).items()}
    return annotations, spec


@settings(max_examples=examples(25), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(pods(), min_size=40, max_size=40), st.sampled_from(LEVELS))
def test_generated_pods_are_judged_alike(batch: list[Pod], level: str) -> None:
    """A batch per evaluator process: security contexts of the pod and its containers,
    host namespaces and ports, AppArmor annotations, sysctls, volumes of every kind, the
    pod's operating system."""
    assert_same(batch, level)


# --- the upstream module's own fixtures ------------------------------------------------------


def _fixtures_folder() -> Path:
    """test/testdata of k8s.io/pod-security-admission, as the Go module cache holds it."""
    result = subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}",
                             "k8s.io/pod-security-admission"], cwd=REFEREE_MODULE,
                            capture_output=True, text=True, check=True)
    return Path(result.stdout.strip()) / "test" / "testdata"


def _newest_fixtures(level: str) -> Path:
    """The fixtures of the newest Kubernetes version up to the target (a version without
    changes to the checks has no folder of its own)."""
    versions = [p for p in (_fixtures_folder() / level).iterdir()
                if tuple(map(int, p.name[1:].split("."))) <= (1, int(KUBE_VERSION[2:]))]
    return max(versions, key=lambda p: tuple(map(int, p.name[1:].split("."))))


@pytest.mark.parametrize("level", LEVELS)
def test_upstream_fixtures_are_judged_as_upstream_expects(level: str) -> None:
    folder = _newest_fixtures(level)
    cases = {}
    for outcome in ("pass", "fail"):
        for path in sorted((folder / outcome).glob("*.yaml")):
            pod = yaml.safe_load(path.read_text())
            cases[f"{outcome}/{path.name}"] = (
                ((pod.get("metadata") or {}).get("annotations") or {}, pod["spec"]))
    assert len(cases) > 30
    judged = dict(zip(cases, tfgen(list(cases.values()), level), strict=True))
    wrong = [name for name, (allowed, _) in judged.items()
             if allowed is not name.startswith("pass/")]
    assert not wrong, f"tfgen judges these {folder} fixtures otherwise: {wrong}"
    assert_same(list(cases.values()), level)
