"""What the lab writes into the fresh API server before the controllers of custom resources
start (a controller that starts before its CRDs are served gives up on them: Kueue turns an
integration off when its kind is missing).

The CRDs first; while the apiserver establishes them, the webhook configurations pointed at
loopback, the pre-created webhook Secrets (see certs.py), Argo CD's settings objects and the
GPU nodes KWOK keeps Ready; then, once the CRDs are Established, Argo CD's `default` project.
Of the upstream manifests only what the cluster runs is applied (its Plan, clusters.py): the
CRDs and webhooks of the kinds served (SERVED, CRDS_ONLY below); a cluster without JobSet
serves no JobSet CRD and registers no webhook for JobSets.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from . import argocd, manifests, ready
from .clusters import CLUSTER_LABEL, Plan
from .layout import Layout

Doc = dict[str, Any]
# part -> the namespace its objects live in (KWOK's, none: they live beside their pods)
NAMESPACES = {"jobset": "jobset-system", "kueue": "kueue-system",
              "training-operator": "kubeflow", "argocd": argocd.NAMESPACE}
# part -> the port its webhooks answer on (Argo CD's CRDs have no webhook)
WEBHOOK_PORTS = {"jobset": "jobset-webhook", "kueue": "kueue-webhook",
                 "training-operator": "training-operator-webhook", "argocd": None,
                 "kwok": None}
# Kueue and the training operator ship a webhook per kind they know; only the kinds enabled
# are served (Kueue: its own and the enabled integrations; the operator: TFJob). A webhook
# registered but not served answers 404 and, failing closed, blocks every write of its kind.
# part -> {API group: resources served, "*" for all}
SERVED: dict[str, dict[str, Any]] = {
    "kueue": {"kueue.x-k8s.io": "*", "batch": ("jobs",), "jobset.x-k8s.io": ("jobsets",),
              "kubeflow.org": ("tfjobs",)},
    "training-operator": {"kubeflow.org": ("tfjobs",)},
}


# The training operator ships a CRD for each job kind it knows; the lab runs TFJob only, and
# every CRD costs the apiserver seconds at start (schemas, CEL rules).
CRDS_ONLY = {"training-operator": ("tfjobs.kubeflow.org",),
             # KWOK: those of core.KWOK_CRDS, what a pod's kubelet API serves (core.py)
             "kwok": ("logs.kwok.x-k8s.io", "portforwards.kwok.x-k8s.io")}


def _served_by(served: dict[str, Any]) -> Callable[[Doc], bool]:
    """A test keeping a webhook whose every rule names only served kinds."""
    def wanted(hook: Doc) -> bool:
        for rule in hook.get("rules") or []:
            for group in rule.get("apiGroups") or [""]:
                resources = served.get(group)
                if resources is None:
                    return False
                if resources != "*" and not set(rule.get("resources") or []) <= set(resources):
                    return False
        return True
    return wanted


def served(part: str, plan: Plan) -> dict[str, Any]:
    """What the part's webhooks serve in a cluster of this plan: JobSets only where JobSet
    runs."""
    return {group: kinds for group, kinds in SERVED[part].items()
            if plan.jobset or group != "jobset.x-k8s.io"}


def upstream(lay: Layout, plan: Plan) -> list[Doc]:
    """The CRDs and webhook configurations of every part the cluster runs, webhooks reached
    on loopback."""
    ca = (lay.certs / "ca.crt").read_bytes()
    docs: list[Doc] = []
    for part in plan.parts():
        port_name = WEBHOOK_PORTS[part]
        objs = manifests.load(lay.manifests / f"{part}.json")
        if part in CRDS_ONLY:
            objs = [d for d in objs if d["kind"] != "CustomResourceDefinition"
                    or d["metadata"]["name"] in CRDS_ONLY[part]]
        if part in SERVED:
            objs = manifests.drop_webhooks(objs, _served_by(served(part, plan)))
        if port_name:
            objs = manifests.point_at_loopback(objs, lay.ports[port_name], ca)
        docs += objs
    return docs


def _secret(lay: Layout, name: str, namespace: str) -> Doc:
    files = {"ca.crt": "ca.crt", "ca.key": "ca.key", "tls.crt": "serving.crt",
             "tls.key": "serving.key"}
    data = {key: base64.b64encode((lay.certs / f).read_bytes()).decode()
            for key, f in files.items()}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": data,
            "metadata": {"name": name, "namespace": namespace}}


def gpu_node(name: str, gpus: int, plan: Plan) -> Doc:
    """A node KWOK manages (its annotation), with GPUs; KWOK's stages make it Ready. Its
    labels say which cluster it is in and which GPU it has."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "type": "kwok",
                                    "nvidia.com/gpu.present": "true",
                                    "nvidia.com/gpu.product": plan.gpu_product,
                                    CLUSTER_LABEL: plan.name}},
            "status": {"allocatable": resources, "capacity": resources}}


def lab_objects(lay: Layout, plan: Plan) -> list[Doc]:
    """Secrets, Argo CD's settings and the nodes (applied once the CRDs are established)."""
    return [_secret(lay, "training-operator-webhook-cert", "kubeflow"),
            _secret(lay, "kueue-webhook-server-cert", "kueue-system"),
            *(argocd.settings_objects() if plan.argocd else []),
            *(gpu_node(n, g, plan) for n, g in plan.nodes.items())]


def apply(kubectl: Callable[..., Any], docs: list[Doc]) -> None:
    """Server-side apply, as a platform engineer applies upstream manifests."""
    listing = {"apiVersion": "v1", "kind": "List", "items": docs}
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=tfgen-lab",
            "-f", "-", input=json.dumps(listing))


def _wait_established(kubectl: Callable[..., Any]) -> None:
    """Until every CRD is Established (`kubectl wait` fails on a CRD whose status the
    apiserver has not written yet, so poll)."""
    status = '{range .items[*]}{.status.conditions[?(@.type=="Established")].status},{end}'

    def all_true(out: str) -> bool:
        return all(s == "True" for s in out.strip(",").split(","))
    check = ready.kubectl_ok(kubectl, "get", "crd", "-o", f"jsonpath={status}", expect=all_true)
    ready.wait_all({"CRDs Established": check}, 60, lambda: None)


def run(lay: Layout, plan: Plan, kubectl: Callable[..., Any]) -> None:
    apply(kubectl, [{"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": NAMESPACES[part]}} for part in plan.parts()
                    if part in NAMESPACES])  # KWOK's objects live beside their pods
    docs = upstream(lay, plan)
    apply(kubectl, [d for d in docs if d["kind"] == "CustomResourceDefinition"])
    # the rest needs no CRD: applied while the apiserver establishes them
    apply(kubectl, [d for d in docs if d["kind"] != "CustomResourceDefinition"])
    apply(kubectl, lab_objects(lay, plan))
    _wait_established(kubectl)
    if plan.argocd:
        apply(kubectl, [argocd.default_project()])
