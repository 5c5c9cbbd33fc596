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
APPARMOR_ANNOTATION_VALUES = ("runtime/default", "localhost/")  # localhost/<profile>
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})
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


def _containers(pod: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind in CONTAINER_KINDS:
        items = pod.get(kind)
        for index, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                yield f"{kind}[{index}]", container


def _minor(kube_version: str) -> int:
    try:
        return int(kube_version.split(".")[1])
    except (IndexError, ValueError):
        return 99  # an unparsable version gets the newest list; config validation reports it


@functools.lru_cache(maxsize=16)
def safe_sysctls(kube_version: str) -> frozenset[str]:
    minor = _minor(kube_version)
    return frozenset(name for since, names in SAFE_SYSCTLS.items() if minor >= since
                     for name in names)


def baseline(pod: dict[str, Any], annotations: dict[str, Any], kube_version: str
             ) -> list[Violation]:
    """The baseline controls on one pod spec (and its template's annotations)."""
    out: list[Violation] = []
    context = _dict(pod.get("securityContext"))
    for key in HOST_NAMESPACES:
        if pod.get(key):
            out.append(Violation(key, "Host Namespaces", f"{key} is true; must be unset or false"))
    scopes: list[tuple[str, dict[str, Any]]] = [("securityContext", context)]
    scopes += [(f"{where}.securityContext", _dict(c.get("securityContext")))
               for where, c in _containers(pod)]
    for where, sc in scopes:
        if _dict(sc.get("windowsOptions")).get("hostProcess"):
            out.append(Violation(f"{where}.windowsOptions.hostProcess", "HostProcess",
                                 "HostProcess containers are not allowed"))
        selinux = _dict(sc.get("seLinuxOptions"))
        if str(selinux.get("type") or "") not in SELINUX_TYPES:
            out.append(Violation(f"{where}.seLinuxOptions.type", "SELinux",
                                 f"type {selinux.get('type')!r} is not allowed; one of "
                                 f"{', '.join(sorted(t for t in SELINUX_TYPES if t))} or unset"))
        for field in ("user", "role"):
            if selinux.get(field):
                out.append(Violation(f"{where}.seLinuxOptions.{field}", "SELinux",
                                     f"a custom SELinux {field} is not allowed"))
        apparmor = _dict(sc.get("appArmorProfile")).get("type")
        if apparmor is not None and apparmor not in APPARMOR_TYPES:
            out.append(Violation(f"{where}.appArmorProfile.type", "AppArmor",
                                 f"{apparmor!r} is not allowed; RuntimeDefault, Localhost or "
                                 "unset"))
        seccomp = _dict(sc.get("seccompProfile")).get("type")
        if seccomp in SECCOMP_FORBIDDEN:
            out.append(Violation(f"{where}.seccompProfile.type", "Seccomp",
                                 f"{seccomp} is not allowed; RuntimeDefault or Localhost"))
    for where, container in _containers(pod):
        sc = _dict(container.get("securityContext"))
        if sc.get("privileged"):
            out.append(Violation(f"{where}.securityContext.privileged", "Privileged Containers",
                                 "privileged containers are not allowed"))
        added = _dict(sc.get("capabilities")).get("add") or []
        extra = sorted(str(c) for c in added if c not in BASELINE_CAPABILITIES)
        if extra:
            out.append(Violation(f"{where}.securityContext.capabilities.add", "Capabilities",
                                 f"adds {', '.join(extra)}; only the default set may be added"))
        proc = sc.get("procMount")
        if proc is not None and proc not in PROC_MOUNT_TYPES:
            out.append(Violation(f"{where}.securityContext.procMount", "/proc Mount Type",
                                 f"procMount {proc!r} is not allowed; Default or unset"))
        ports = container.get("ports")
        for index, port in enumerate(ports if isinstance(ports, list) else []):
            if _dict(port).get("hostPort"):
                out.append(Violation(f"{where}.ports[{index}].hostPort", "Host Ports",
                                     "host ports are not allowed"))
    volumes = pod.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if "hostPath" in _dict(volume):
            out.append(Violation(f"volumes[{index}].hostPath", "HostPath Volumes",
                                 "hostPath volumes are not allowed"))
    safe = safe_sysctls(kube_version)
    sysctls = context.get("sysctls")
    for index, sysctl in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = _dict(sysctl).get("name")
        if name not in safe:
            out.append(Violation(f"securityContext.sysctls[{index}].name", "Sysctls",
                                 f"sysctl {name!r} is not in the safe set"))
    for key, value in annotations.items():
        if str(key).startswith(APPARMOR_ANNOTATION) and not (
                value == APPARMOR_ANNOTATION_VALUES[0]
                or str(value).startswith(APPARMOR_ANNOTATION_VALUES[1])):
            out.append(Violation(f"metadata.annotations[{key!r}]", "AppArmor",
                                 f"{value!r} is not allowed; runtime/default or localhost/*"))
    return out


def restricted(pod: dict[str, Any]) -> list[Violation]:
    """The controls restricted adds to baseline, on one pod spec."""
    out: list[Violation] = []
    context = _dict(pod.get("securityContext"))
    volumes = pod.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        kinds = sorted(k for k in _dict(volume) if k != "name" and k not in
                       RESTRICTED_VOLUME_TYPES)
        if kinds:
            out.append(Violation(f"volumes[{index}]", "Volume Types",
                                 f"{kinds[0]} volumes are not allowed; "
                                 f"one of {', '.join(sorted(RESTRICTED_VOLUME_TYPES))}"))
    pod_non_root = context.get("runAsNonRoot") is True
    pod_seccomp = _dict(context.get("seccompProfile")).get("type")
    if pod_seccomp is not None and pod_seccomp not in RESTRICTED_SECCOMP:
        out.append(Violation("securityContext.seccompProfile.type", "Seccomp",
                             f"{pod_seccomp!r} is not allowed; RuntimeDefault or Localhost"))
    if context.get("runAsUser") == 0:
        out.append(Violation("securityContext.runAsUser", "Running as Non-root user",
                             "runAsUser is 0 (root)"))
    if context.get("runAsNonRoot") is False:
        out.append(Violation("securityContext.runAsNonRoot", "Running as Non-root",
                             "runAsNonRoot is false; must be true"))
    for where, container in _containers(pod):
        sc = _dict(container.get("securityContext"))
        name = container.get("name")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(Violation(f"{where}.securityContext.allowPrivilegeEscalation",
                                 "Privilege Escalation",
                                 f"container {name!r} does not set allowPrivilegeEscalation: "
                                 "false"))
        non_root = sc.get("runAsNonRoot")
        if non_root is False or (non_root is None and not pod_non_root):
            out.append(Violation(f"{where}.securityContext.runAsNonRoot", "Running as Non-root",
                                 f"container {name!r} may run as root: runAsNonRoot must be "
                                 "true on the pod or the container"))
        if sc.get("runAsUser") == 0:
            out.append(Violation(f"{where}.securityContext.runAsUser",
                                 "Running as Non-root user", "runAsUser is 0 (root)"))
        seccomp = _dict(sc.get("seccompProfile")).get("type")
        if (seccomp is None and pod_seccomp is None) or (
                seccomp is not None and seccomp not in RESTRICTED_SECCOMP):
            out.append(Violation(f"{where}.securityContext.seccompProfile.type", "Seccomp",
                                 f"container {name!r} has no RuntimeDefault or Localhost seccomp "
                                 "profile (set on the pod or the container)"))
        caps = _dict(sc.get("capabilities"))
        if "ALL" not in (caps.get("drop") or []):
            out.append(Violation(f"{where}.securityContext.capabilities.drop", "Capabilities",
                                 f"container {name!r} does not drop ALL capabilities"))
        extra = sorted(str(c) for c in caps.get("add") or [] if c not in
                       RESTRICTED_CAPABILITIES)
        if extra:
            out.append(Violation(f"{where}.securityContext.capabilities.add", "Capabilities",
                                 f"adds {', '.join(extra)}; only NET_BIND_SERVICE may be added"))
    return out


def violations(pod: dict[str, Any], annotations: dict[str, Any], level: str,
               kube_version: str) -> list[Violation]:
    """Every control of `level` that a pod template breaks (none for privileged)."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    out: list[Violation] = []
    if LEVELS.index(level) >= LEVELS.index("baseline"):
        out += baseline(pod, annotations, kube_version)
    if LEVELS.index(level) >= LEVELS.index("restricted"):
        out += restricted(pod)
    return out
