"""The Pod Security Standards, checked on every rendered pod template before merge.

A namespace labelled `pod-security.kubernetes.io/enforce: <level>` refuses pods that break the
level: a TFJob whose pods are refused sits in the cluster with no pods, and nobody is told at
review time. `tfgen.yaml` declares each namespace's level; this module checks every pod template
an experiment renders (the TFJob's replicas and TensorBoard's Deployment) against it, control by
control, as the official Pod Security Standards define `baseline` and `restricted`
(kubernetes.io/docs/concepts/security/pod-security-standards). `privileged` has no controls.

Each list of allowed values lives here once, named after the control it belongs to.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")  # each includes the controls of those before

# --- baseline ---------------------------------------------------------------------------------
# Capabilities: what `capabilities.add` may hold (the container runtimes' default set).
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")
# AppArmor: profile types, and the values of the legacy per-container annotation.
APPARMOR_TYPES = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
# "" (no profile), runtime/default, localhost/<profile>
APPARMOR_ANNOTATION_VALUES = ("", "runtime/default", "localhost/")
# SELinux types, by the Kubernetes minor version that allowed each ("" is unset).
SELINUX_TYPES = {
    0: ("", "container_t", "container_init_t", "container_kvm_t"),
    31: ("container_engine_t",),
}
PROC_MOUNT_TYPES = frozenset({"Default"})
SECCOMP_FORBIDDEN = frozenset({"Unconfined"})
# Sysctls: the safe set, by the Kubernetes minor version that added each name.
SAFE_SYSCTLS = {
    0: ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range"),
    27: ("net.ipv4.ip_local_reserved_ports",),
    29: ("net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
         "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"),
    32: ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"),
}

# --- restricted -------------------------------------------------------------------------------
RESTRICTED_VOLUME_TYPES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                     "persistentVolumeClaim", "projected", "secret"})
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
RESTRICTED_SECCOMP = frozenset({"RuntimeDefault", "Localhost"})

CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Violation:
    """One control a pod template breaks: where (a pointer below the pod spec, or `metadata`
    for an annotation), the control's name, and what would be allowed."""

    pointer: str
    control: str
    message: str


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


Containers = list[tuple[str, dict[str, Any]]]


def _containers(pod: dict[str, Any]) -> Containers:
    """(pointer, container) of every container of a pod spec, of every kind."""
    out = []
    for kind in CONTAINER_KINDS:
        items = pod.get(kind)
        if isinstance(items, list):
            out += [(f"{kind}[{index}]", container) for index, container in enumerate(items)
                    if isinstance(container, dict)]
    return out


def _minor(kube_version: str) -> int:
    try:
        return int(kube_version.split(".")[1])
    except (IndexError, ValueError):
        return 99  # an unparsable version gets the newest list; config validation reports it


def _since(table: dict[int, tuple[str, ...]], kube_version: str) -> frozenset[str]:
    """The values of a table by the minor version that added each, up to `kube_version`."""
    minor = _minor(kube_version)
    return frozenset(name for since, names in table.items() if minor >= since
                     for name in names)


@functools.lru_cache(maxsize=16)
def safe_sysctls(kube_version: str) -> frozenset[str]:
    return _since(SAFE_SYSCTLS, kube_version)


@functools.lru_cache(maxsize=16)
def selinux_types(kube_version: str) -> frozenset[str]:
    return _since(SELINUX_TYPES, kube_version)


# Each control is one function yielding its violations; `baseline` and `restricted` run them in
# a fixed order (the order problems are reported in). A scope is a securityContext and where it
# is: the pod's own, then each container's.
Scope = tuple[str, dict[str, Any]]
Found = Iterator[Violation]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _host_namespaces(pod: dict[str, Any]) -> Found:
    for key in HOST_NAMESPACES:
        if pod.get(key):
            yield Violation(key, "Host Namespaces", f"{key} is true; must be unset or false")


def _host_process(where: str, sc: dict[str, Any], kube_version: str) -> Found:
    if _dict(sc.get("windowsOptions")).get("hostProcess"):
        yield Violation(f"{where}.windowsOptions.hostProcess", "HostProcess",
                        "HostProcess containers are not allowed")


def _selinux(where: str, sc: dict[str, Any], kube_version: str) -> Found:
    selinux = _dict(sc.get("seLinuxOptions"))
    allowed = selinux_types(kube_version)
    if str(selinux.get("type") or "") not in allowed:
        yield Violation(f"{where}.seLinuxOptions.type", "SELinux",
                        f"type {selinux.get('type')!r} is not allowed; one of "
                        f"{', '.join(sorted(t for t in allowed if t))} or unset")
    for field in ("user", "role"):
        if selinux.get(field):
            yield Violation(f"{where}.seLinuxOptions.{field}", "SELinux",
                            f"a custom SELinux {field} is not allowed")


def _apparmor_profile(where: str, sc: dict[str, Any], kube_version: str) -> Found:
    apparmor = _dict(sc.get("appArmorProfile")).get("type")
    if apparmor is not None and apparmor not in APPARMOR_TYPES:
        yield Violation(f"{where}.appArmorProfile.type", "AppArmor",
                        f"{apparmor!r} is not allowed; RuntimeDefault, Localhost or unset")


def _seccomp_unconfined(where: str, sc: dict[str, Any], kube_version: str) -> Found:
    seccomp = _dict(sc.get("seccompProfile")).get("type")
    if seccomp in SECCOMP_FORBIDDEN:
        yield Violation(f"{where}.seccompProfile.type", "Seccomp",
                        f"{seccomp} is not allowed; RuntimeDefault or Localhost")


def _privileged(where: str, container: dict[str, Any]) -> Found:
    if _dict(container.get("securityContext")).get("privileged"):
        yield Violation(f"{where}.securityContext.privileged", "Privileged Containers",
                        "privileged containers are not allowed")


def _baseline_capabilities(where: str, container: dict[str, Any]) -> Found:
    sc = _dict(container.get("securityContext"))
    added = _dict(sc.get("capabilities")).get("add") or []
    extra = sorted(str(c) for c in added if c not in BASELINE_CAPABILITIES)
    if extra:
        yield Violation(f"{where}.securityContext.capabilities.add", "Capabilities",
                        f"adds {', '.join(extra)}; only the default set may be added")


def _proc_mount(where: str, container: dict[str, Any]) -> Found:
    proc = _dict(container.get("securityContext")).get("procMount")
    if proc is not None and proc not in PROC_MOUNT_TYPES:
        yield Violation(f"{where}.securityContext.procMount", "/proc Mount Type",
                        f"procMount {proc!r} is not allowed; Default or unset")


def _host_ports(pod: dict[str, Any], containers: Containers) -> Found:
    # With hostNetwork the API server's defaulting makes each container port (of containers
    # and init containers) its host port too, before admission sees the pod.
    host_network = bool(pod.get("hostNetwork"))
    for where, container in containers:
        defaulted = host_network and not where.startswith("ephemeralContainers")
        for index, port in enumerate(_list(container.get("ports"))):
            port = _dict(port)
            if port.get("hostPort") or (defaulted and port.get("containerPort")):
                yield Violation(f"{where}.ports[{index}].hostPort", "Host Ports",
                                "host ports are not allowed (with hostNetwork, every "
                                "container port is one)" if defaulted else
                                "host ports are not allowed")


def _host_path_volumes(pod: dict[str, Any]) -> Found:
    for index, volume in enumerate(_list(pod.get("volumes"))):
        if "hostPath" in _dict(volume):
            yield Violation(f"volumes[{index}].hostPath", "HostPath Volumes",
                            "hostPath volumes are not allowed")


def _sysctls(pod: dict[str, Any], kube_version: str) -> Found:
    safe = safe_sysctls(kube_version)
    sysctls = _dict(pod.get("securityContext")).get("sysctls")
    for index, sysctl in enumerate(_list(sysctls)):
        name = _dict(sysctl).get("name")
        if name not in safe:
            yield Violation(f"securityContext.sysctls[{index}].name", "Sysctls",
                            f"sysctl {name!r} is not in the safe set")


def _apparmor_allowed(value: Any) -> bool:
    return (value in APPARMOR_ANNOTATION_VALUES[:2]
            or str(value).startswith(APPARMOR_ANNOTATION_VALUES[2]))


def _apparmor_annotations(annotations: dict[str, Any]) -> Found:
    for key, value in annotations.items():
        if str(key).startswith(APPARMOR_ANNOTATION) and not _apparmor_allowed(value):
            yield Violation(f"metadata.annotations[{key!r}]", "AppArmor",
                            f"{value!r} is not allowed; runtime/default or localhost/*")


# The baseline controls on every securityContext (the pod's, then each container's; some allow
# more from one Kubernetes version on), then those on each container, in the order they are
# reported.
BASELINE_SCOPE_CONTROLS = (_host_process, _selinux, _apparmor_profile, _seccomp_unconfined)
BASELINE_CONTAINER_CONTROLS = (_privileged, _baseline_capabilities, _proc_mount)


def _scopes(pod: dict[str, Any], containers: Containers) -> list[Scope]:
    scopes: list[Scope] = [("securityContext", _dict(pod.get("securityContext")))]
    scopes += [(f"{where}.securityContext", _dict(c.get("securityContext")))
               for where, c in containers]
    return scopes


def baseline(pod: dict[str, Any], annotations: dict[str, Any], kube_version: str,
             replaced: tuple[Any, ...] = ()) -> list[Violation]:
    """The baseline controls on one pod spec (and its template's annotations), but those
    `replaced` by a stricter control of their own."""
    containers = _containers(pod)
    scope_controls = [c for c in BASELINE_SCOPE_CONTROLS if c not in replaced]
    container_controls = [c for c in BASELINE_CONTAINER_CONTROLS if c not in replaced]
    out = list(_host_namespaces(pod))
    for where, sc in _scopes(pod, containers):
        for scope_control in scope_controls:
            out += scope_control(where, sc, kube_version)
    for where, container in containers:
        for container_control in container_controls:
            out += container_control(where, container)
    out += _host_ports(pod, containers)
    if _host_path_volumes not in replaced:
        out += _host_path_volumes(pod)
    out += _sysctls(pod, kube_version)
    out += _apparmor_annotations(annotations)
    return out


def _volume_types(pod: dict[str, Any]) -> Found:
    for index, volume in enumerate(_list(pod.get("volumes"))):
        kinds = sorted(k for k in _dict(volume) if k != "name" and k not in
                       RESTRICTED_VOLUME_TYPES)
        if kinds:
            yield Violation(f"volumes[{index}]", "Volume Types",
                            f"{kinds[0]} volumes are not allowed; "
                            f"one of {', '.join(sorted(RESTRICTED_VOLUME_TYPES))}")


def _pod_seccomp(context: dict[str, Any]) -> Found:
    seccomp = _dict(context.get("seccompProfile")).get("type")
    if seccomp is not None and seccomp not in RESTRICTED_SECCOMP:
        yield Violation("securityContext.seccompProfile.type", "Seccomp",
                        f"{seccomp!r} is not allowed; RuntimeDefault or Localhost")


def _pod_non_root(context: dict[str, Any]) -> Found:
    if context.get("runAsUser") == 0:
        yield Violation("securityContext.runAsUser", "Running as Non-root user",
                        "runAsUser is 0 (root)")
    if context.get("runAsNonRoot") is False:
        yield Violation("securityContext.runAsNonRoot", "Running as Non-root",
                        "runAsNonRoot is false; must be true")


# Restricted's container controls judge a container with its pod's securityContext (`context`),
# which may set runAsNonRoot and the seccomp profile for every container.


def _privilege_escalation(where: str, container: dict[str, Any], context: dict[str, Any]
                          ) -> Found:
    if _dict(container.get("securityContext")).get("allowPrivilegeEscalation") is not False:
        yield Violation(f"{where}.securityContext.allowPrivilegeEscalation",
                        "Privilege Escalation",
                        f"container {container.get('name')!r} does not set "
                        "allowPrivilegeEscalation: false")


def _container_non_root(where: str, container: dict[str, Any], context: dict[str, Any]
                        ) -> Found:
    sc = _dict(container.get("securityContext"))
    non_root = sc.get("runAsNonRoot")
    if non_root is False or (non_root is None and context.get("runAsNonRoot") is not True):
        yield Violation(f"{where}.securityContext.runAsNonRoot", "Running as Non-root",
                        f"container {container.get('name')!r} may run as root: runAsNonRoot "
                        "must be true on the pod or the container")
    if sc.get("runAsUser") == 0:
        yield Violation(f"{where}.securityContext.runAsUser",
                        "Running as Non-root user", "runAsUser is 0 (root)")


def _container_seccomp(where: str, container: dict[str, Any], context: dict[str, Any]
                       ) -> Found:
    seccomp = _dict(_dict(container.get("securityContext")).get("seccompProfile")).get("type")
    pod_seccomp = _dict(context.get("seccompProfile")).get("type")
    if (seccomp is None and pod_seccomp is None) or (
            seccomp is not None and seccomp not in RESTRICTED_SECCOMP):
        yield Violation(f"{where}.securityContext.seccompProfile.type", "Seccomp",
                        f"container {container.get('name')!r} has no RuntimeDefault or "
                        "Localhost seccomp profile (set on the pod or the container)")


def _restricted_capabilities(where: str, container: dict[str, Any], context: dict[str, Any]
                             ) -> Found:
    caps = _dict(_dict(container.get("securityContext")).get("capabilities"))
    if "ALL" not in (caps.get("drop") or []):
        yield Violation(f"{where}.securityContext.capabilities.drop", "Capabilities",
                        f"container {container.get('name')!r} does not drop ALL capabilities")
    extra = sorted(str(c) for c in caps.get("add") or [] if c not in RESTRICTED_CAPABILITIES)
    if extra:
        yield Violation(f"{where}.securityContext.capabilities.add", "Capabilities",
                        f"adds {', '.join(extra)}; only NET_BIND_SERVICE may be added")


RESTRICTED_CONTAINER_CONTROLS = (_privilege_escalation, _container_non_root,
                                 _container_seccomp, _restricted_capabilities)
# The restricted controls on fields a Windows pod cannot set: not applied to one (the API
# server's validation refuses those fields there; the evaluator admits such a pod without them).
LINUX_ONLY = (_privilege_escalation, _container_seccomp, _restricted_capabilities)
# The baseline controls that restricted replaces with a stricter one (the evaluator's
# OverrideCheckIDs): the volume types, the seccomp profiles and the capabilities are then
# judged by restricted's rule alone, and each breach reported once.
REPLACED_AT_RESTRICTED = (_host_path_volumes, _seccomp_unconfined, _baseline_capabilities)


def restricted(pod: dict[str, Any]) -> list[Violation]:
    """The controls restricted adds to baseline, on one pod spec (a Windows pod, `os.name:
    windows`, is spared those whose fields Windows pods cannot set, as the evaluator does)."""
    context = _dict(pod.get("securityContext"))
    windows = _dict(pod.get("os")).get("name") == "windows"
    controls = [c for c in RESTRICTED_CONTAINER_CONTROLS if not (windows and c in LINUX_ONLY)]
    out = list(_volume_types(pod))
    if not windows:
        out += _pod_seccomp(context)
    out += _pod_non_root(context)
    for where, container in _containers(pod):
        for control in controls:
            out += control(where, container, context)
    return out


def violations(pod: dict[str, Any], annotations: dict[str, Any], level: str,
               kube_version: str) -> list[Violation]:
    """Every control of `level` that a pod template breaks (none for privileged)."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    out: list[Violation] = []
    strict = LEVELS.index(level) >= LEVELS.index("restricted")
    if LEVELS.index(level) >= LEVELS.index("baseline"):
        out += baseline(pod, annotations, kube_version,
                        REPLACED_AT_RESTRICTED if strict else ())
    if strict:
        out += restricted(pod)
    return out
