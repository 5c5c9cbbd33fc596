"""What tfgen knows about the objects its Helm chart renders.

The AppProject whitelists exactly these kinds (least privilege), the gate's rules recognise the
TFJob and the storage by them, and helm is told about the TFJob API as Argo CD tells it about
the cluster's APIs. A test renders every ci scenario and bundled experiment and checks that
the chart emits exactly these kinds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One kind the chart renders, and whether Kubernetes serves it per namespace."""

    group: str  # API group, "" for the core group
    kind: str
    namespaced: bool = True


TFJOB_API_VERSION = "kubeflow.org/v1"
TFJOB = (TFJOB_API_VERSION, "TFJob")
# The training operator finds the port and injects TF_CONFIG into this container only.
TFJOB_CONTAINER = "tensorflow"
VOLUME = "PersistentVolume"
CLAIM = "PersistentVolumeClaim"

# Sorted by group, then kind: the order of the AppProject's whitelists.
KINDS = (
    Kind("", VOLUME, namespaced=False),
    Kind("", CLAIM),
    Kind("", "Service"),
    Kind("apps", "Deployment"),
    Kind("kubeflow.org", "TFJob"),
    Kind("networking.k8s.io", "Ingress"),
)

# APIs helm is told the cluster serves (`--api-versions`), as Argo CD passes every group/version
# of the cluster; the training operator's is the one the chart needs beyond Kubernetes itself.
API_VERSIONS = (TFJOB_API_VERSION,)
