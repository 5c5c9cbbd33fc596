"""The lab's clusters: what each control plane runs, and how Argo CD is told of the second.

The lab's first cluster (`lab-a`) runs everything, Argo CD and the git daemon included; a
second (`lab-b`), started beside it on demand, is a control plane of its own (etcd,
kube-apiserver, controller-manager, scheduler, KWOK with fewer GPU nodes of another product,
Kueue, the training operator, JobSet only when asked) that the first one's Argo CD manages.
It is registered the way Argo CD documents for a cluster it does not run in (and as
`argocd cluster add` does): a ServiceAccount `argocd-manager` bound to cluster-admin in the
managed cluster, and in Argo CD's namespace a Secret labelled
`argocd.argoproj.io/secret-type: cluster` holding its name, its server URL and a `config` with
that ServiceAccount's bearer token and the CA that signed the server's certificate.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .versions import GPU_NODES, SECOND_GPU_NODES

Doc = dict[str, Any]
CLUSTER_LABEL = "lab.tfgen.io/cluster"  # on every KWOK node: which cluster it is in
SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
MANAGER = ("kube-system", "argocd-manager")  # namespace, name of Argo CD's ServiceAccount


@dataclass(frozen=True)
class Plan:
    """What one control plane of the lab runs."""

    name: str  # its context in the kubeconfigs; for a second cluster, its name in Argo CD
    folder: str  # its state under the lab's folder ("" for the first: the lab's own)
    nodes: dict[str, int]  # KWOK's GPU nodes: name -> nvidia.com/gpu
    gpu_product: str  # their nvidia.com/gpu.product label, as NVIDIA's feature discovery sets
    jobset: bool = True  # JobSet's CRD and controller
    argocd: bool = False  # Argo CD and the git daemon (the first cluster's, managing all)

    def parts(self) -> tuple[str, ...]:
        """The upstream parts whose CRDs and webhooks it is given (bootstrap.py)."""
        return (*(("jobset",) if self.jobset else ()), "kueue", "training-operator", "kwok",
                *(("argocd",) if self.argocd else ()))


FIRST = Plan("lab-a", "", GPU_NODES, "NVIDIA-A100-SXM4-80GB", argocd=True)
# Lean: one node, no JobSet by default (the cluster tfgen must refuse a JobSet spec for).
SECOND = Plan("lab-b", "b", SECOND_GPU_NODES, "NVIDIA-H100-80GB-HBM3", jobset=False)


def manager_objects() -> list[Doc]:
    """What Argo CD authenticates as in a cluster it manages: a ServiceAccount bound to
    cluster-admin and a token Secret the controller-manager fills in."""
    namespace, name = MANAGER
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": name, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": f"{name}-token", "namespace": namespace,
                      "annotations": {"kubernetes.io/service-account.name": name}}},
    ]


def cluster_secret(name: str, server: str, token: str, ca: Path, namespace: str) -> Doc:
    """Argo CD's declarative cluster: the Secret its controllers find by label (its fields
    as `data`, which server-side apply tracks; Argo CD's documentation writes stringData)."""
    config = {"bearerToken": token,
              "tlsClientConfig": {"insecure": False,
                                  "caData": base64.b64encode(ca.read_bytes()).decode()}}
    fields = {"name": name, "server": server, "config": json.dumps(config)}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": secret_name(name), "namespace": namespace,
                         "labels": {SECRET_TYPE_LABEL: "cluster"}},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in fields.items()}}


def secret_name(cluster: str) -> str:
    return f"cluster-{cluster}"
