"""What tfgen knows about the objects its Helm chart renders.

The AppProject whitelists exactly these kinds (least privilege), the gate's rules recognise the
TFJob and the storage by them, and helm is told about the TFJob API as Argo CD tells it about
the cluster's APIs. A test renders every ci scenario and bundled experiment and checks that
the chart emits exactly these kinds.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from . import naming


@dataclass(frozen=True)
class Kind:
    """One kind the chart renders, and whether Kubernetes serves it per namespace."""

    group: str  # API group, "" for the core group
    kind: str
    namespaced: bool = True


TFJOB_API_VERSION = "kubeflow.org/v1"
TFJOB = (TFJOB_API_VERSION, "TFJob")
# The second runtime: a JobSet (kubernetes-sigs JobSet v0.12) runs each role as batch Jobs.
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET = (JOBSET_API_VERSION, "JobSet")
# The label that queues a TFJob or JobSet in a Kueue LocalQueue (Kueue v0.19); Kueue's webhook
# then creates it suspended and unsuspends it on admission.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# The training operator finds the port and injects TF_CONFIG into this container only.
TFJOB_CONTAINER = "tensorflow"
VOLUME = "PersistentVolume"
# The volume sources the chart's PersistentVolume uses (storage.nas.driver): the NAS CSI driver,
# the 2018 FlexVolume driver, or in-tree NFS. Anything else (hostPath above all) is not NAS.
NAS_CSI_DRIVER = "nasplugin.csi.alibabacloud.com"
NAS_FLEX_DRIVER = "alicloud/nas"
CLAIM = "PersistentVolumeClaim"

# The chart's values key that retires an experiment, and its two states (the spec's
# spec.lifecycle, whose enum and default live in the experiment schema). Retired, the chart
# renders only the volume and claim (and TensorBoard with tensorboard.keep): no TFJob.
LIFECYCLE_KEY = "lifecycle"
ACTIVE = "active"
RETIRED = "retired"
# The values that name the TFJobs an experiment's render must hold: a sweep's runs, else the
# experiment, none once retired. The objects stage checks each render against them.
RUNS_KEY = "runs"
EXPERIMENT_KEY = "experiment"
JOB_VALUES = (LIFECYCLE_KEY, RUNS_KEY, EXPERIMENT_KEY)


def api_group(api_version: str) -> str:
    """`kubeflow.org` of `kubeflow.org/v1`: the group Argo CD's settings name a kind by ("" for
    the core group's `v1`)."""
    return api_version.rpartition("/")[0]


def job_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """What JOB_VALUES names of an experiment's values (shared, not copied): all its render is
    judged by, where the whole values take a dozen kilobytes as Python objects."""
    return {key: values[key] for key in JOB_VALUES if key in values}


# Sorted by group, then kind: the order of the AppProject's whitelists.
KINDS = (
    Kind("", VOLUME, namespaced=False),
    Kind("", CLAIM),
    Kind("", "Service"),
    Kind("apps", "Deployment"),
    Kind("kubeflow.org", "TFJob"),
    Kind("networking.k8s.io", "Ingress"),
    Kind("networking.k8s.io", "NetworkPolicy"),
)

# APIs helm is told the cluster serves (`--api-versions`), as Argo CD passes every group/version
# of the cluster; the training operator's is the one the chart needs beyond Kubernetes itself.
API_VERSIONS = (TFJOB_API_VERSION,)

# The labels training-operator v1.9 puts on every pod of a TFJob (GenLabels in the common job
# controller, plus replica type and index in its pod reconciler; job-role on the Chief or
# Master, or on worker 0 of a job with neither). Kept in one place here; the chart's
# NetworkPolicy selects on the first two, and a test holds the chart and this in step.
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
OPERATOR_NAME = "tfjob-controller"  # the TFJob controller's name in the operator
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"  # the replica type, lower-cased
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


def operator_pod_labels(
    job: str, replica_types: Collection[str], replica_type: str, index: int
) -> dict[str, str]:
    """The labels the operator sets on pod `index` of `replica_type` of TFJob `job`, whose
    replica types are `replica_types`."""
    labels = {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job,
              REPLICA_TYPE_LABEL: replica_type.lower(), REPLICA_INDEX_LABEL: str(index)}
    if any(t in replica_types for t in naming.LEADER_REPLICA_TYPES):
        leader = replica_type in naming.LEADER_REPLICA_TYPES
    else:
        leader = replica_type == "Worker" and index == 0
    if leader:
        labels[JOB_ROLE_LABEL] = "master"
    return labels
