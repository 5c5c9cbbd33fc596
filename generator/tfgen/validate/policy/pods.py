"""An experiment's pods judged by its namespace's Pod Security level, at the spec's lines.

The chart fixes most of a training pod's security (each container drops every capability and
refuses privilege escalation; the volumes are claims) and takes the rest from the spec: the
pod's securityContext, the annotations (on every pod template), whether an Istio sidecar is
injected. `pod_template` builds the training pod the chart renders as far as Pod Security reads
it, and the controls of `podsecurity` judge it, so a spec is refused at its own line before
anything is rendered; the gate judges the rendered objects with the same controls as the
backstop, and tests/test_pod_levels.py renders specs with the real helm to prove the two
verdicts equal. TensorBoard's pod differs only in what the chart fixes, so it adds nothing.

An injected Istio sidecar brings an istio-init container that needs NET_ADMIN and NET_RAW,
which baseline and restricted refuse, unless the cluster runs the Istio CNI plugin (tfgen.yaml
`istio.cni`).
"""

from __future__ import annotations

from typing import Any

from ...problems import Problem
from ...repo import layout, naming
from ..config.load import RepoConfig
from ..experiment.checked import Checked, Collector, lookup
from ..yaml.document import PointerParts
from . import podsecurity

# What the chart writes on every training container, whatever the spec says.
CHART_CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
ISTIO_INIT_CAPABILITIES = ("NET_ADMIN", "NET_RAW")


def pod_template(spec: dict[str, Any], annotations: dict[str, Any], run_as_non_root: bool
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod spec, template annotations) of a training pod as the chart renders it, the parts
    Pod Security reads."""
    context = dict(spec.get("securityContext") or {})
    seccomp = context.pop("seccompProfile", "RuntimeDefault")
    if run_as_non_root:
        context["runAsNonRoot"] = True
    context["seccompProfile"] = {"type": seccomp}
    notes = {k: v for k, v in annotations.items() if k != naming.RERUN_ANNOTATION}
    if not spec.get("istioSidecar"):
        notes[naming.SIDECAR_ANNOTATION] = "false"
    pod = {"securityContext": context,
           "containers": [{"name": "tensorflow", "securityContext": CHART_CONTAINER_SECURITY}],
           "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
    return pod, notes


def spec_field(pointer: str) -> PointerParts:
    """Where in the spec a violation's pointer (below the pod spec) is set."""
    if pointer.startswith("metadata.annotations["):
        return ("metadata", "annotations", pointer.split("'")[1])
    field = pointer.rsplit("securityContext.", 1)[-1].split(".")[0]
    if "securityContext." in pointer and field in ("runAsUser", "runAsNonRoot", "seccompProfile"):
        return ("spec", "securityContext", field)
    return ("spec", "securityContext")


def hint(control: str, namespace: str) -> str:
    """What to change for a control a pod breaks; the gate's hint as well."""
    policy = f"policy.{namespace}"
    if control == "Running as Non-root":
        return (f"set spec.securityContext.runAsNonRoot: true (and a runAsUser other than 0 "
                f"unless the image's user is not root), or {policy}.runAsNonRoot: true in "
                f"{layout.CONFIG_NAME}")
    return (f"change the spec; or, if the namespace's label allows more, correct "
            f"{policy}.podSecurity in {layout.CONFIG_NAME}")


def message(namespace: str, level: str, source: str, found: podsecurity.Violation) -> str:
    """The one wording of a broken control, at the spec's line and on a rendered object."""
    return (f"namespace {namespace} enforces Pod Security {level!r} ({source}), control "
            f"{found.control}: {found.message}")


def pod_level_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """The Pod Security level of the experiment's namespace on the pods it asks for."""
    namespace, spec = lookup(checked.data, "metadata", "namespace"), checked.data.get("spec")
    annotations = lookup(checked.data, "metadata", "annotations")
    if not isinstance(namespace, str) or not isinstance(spec, dict) or not isinstance(
            annotations, dict) or not isinstance(spec.get("securityContext"), dict):
        return []
    rules = config.namespace_policy(namespace)
    level, source = rules["podSecurity"], config.policy_source(namespace, "podSecurity")
    out = Collector(checked.locator)
    pod, notes = pod_template(spec, annotations, bool(rules.get("runAsNonRoot")))
    seen = set()
    cluster = config.cluster_of(namespace, spec) or config.clusters[0]
    for found in podsecurity.violations(pod, notes, level, cluster.kubernetes_version):
        said = message(namespace, level, source, found)
        if said not in seen:  # the pod's and its one container's may say the same
            seen.add(said)
            out.add(spec_field(found.pointer), said, hint(found.control, namespace), key=False)
    if spec.get("istioSidecar") and level != "privileged" and not config.data["istio"]["cni"]:
        out.add(("spec", "istioSidecar"), f"an Istio sidecar brings istio-init, which needs "
                f"{' and '.join(ISTIO_INIT_CAPABILITIES)}; namespace {namespace} enforces Pod "
                f"Security {level!r} ({source}), which refuses them, and {layout.CONFIG_NAME} "
                "does not say the cluster runs the Istio CNI plugin (istio.cni)",
                f"set istioSidecar: false, or istio.cni: true in {layout.CONFIG_NAME} when the "
                "cluster runs the Istio CNI plugin", key=False)
    return out.problems
