"""What tfgen knows about the objects its Helm chart renders.

The AppProject whitelists exactly these kinds (least privilege), the gate's rules recognise the
storage by them (and each runtime's job through `runtimes`), and helm is told about the
runtimes' APIs as Argo CD tells it about the cluster's APIs. A test renders every ci scenario
and bundled experiment and checks that the chart emits exactly these kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import runtimes


@dataclass(frozen=True)
class Kind:
    """One kind the chart renders, and whether Kubernetes serves it per namespace."""

    group: str  # API group, "" for the core group
    kind: str
    namespaced: bool = True


# Kueue's labels and annotations (Kueue v0.19). The first queues a job in a Kueue LocalQueue;
# Kueue's webhook then creates it suspended and unsuspends it on admission.
KUEUE_PREFIX = "kueue.x-k8s.io/"
KUEUE_QUEUE_LABEL = f"{KUEUE_PREFIX}queue-name"
# The label that gives it a Kueue WorkloadPriorityClass. Kueue reads both when it admits the
# workload: `tfgen check --base` refuses a change to either on a started run.
KUEUE_PRIORITY_LABEL = f"{KUEUE_PREFIX}priority-class"
# Label and annotation prefixes a spec may not use: those the chart sets itself (names,
# selectors, sync waves, data safety), those the runtimes' controllers set on the pods (the
# NetworkPolicies select on them: a pod carrying another job's labels would be let into that
# job), and Kueue's; a user key there would clash with them or weaken them.
CHART_PREFIXES = ("app.kubernetes.io/", "helm.sh/", "tfgen.io/", "argocd.argoproj.io/")
RESERVED_PREFIXES = (*CHART_PREFIXES, *runtimes.LABEL_PREFIXES, KUEUE_PREFIX)
# The label every object the chart renders carries (`tfjob-experiment.podLabels`): input that
# has it is tfgen's own rendering, which `tfgen import` reads back.
PART_OF = ("app.kubernetes.io/part-of", "tfgen")


def rendered_by_chart(labels: Any) -> bool:
    """Whether an object with these metadata labels is the chart's rendering (`PART_OF`)."""
    key, value = PART_OF
    return isinstance(labels, Mapping) and labels.get(key) == value
VOLUME = "PersistentVolume"
# The volume sources the chart's PersistentVolume uses (storage.nas.driver): the NAS CSI driver,
# the 2018 FlexVolume driver, or in-tree NFS. Anything else (hostPath above all) is not NAS.
NAS_CSI_DRIVER = "nasplugin.csi.alibabacloud.com"
NAS_FLEX_DRIVER = "alicloud/nas"
CLAIM = "PersistentVolumeClaim"

# The chart's values key that retires an experiment, and its two states (the spec's
# spec.lifecycle, whose enum and default live in the experiment schema). Retired, the chart
# renders only the volume and claim (and TensorBoard with tensorboard.keep): no TFJob.
# The port the chart's TensorBoard serves on (its Deployment's containerPort `http`), which
# `tfgen tensorboard` forwards to.
TENSORBOARD_PORT = 6006
LIFECYCLE_KEY = "lifecycle"
ACTIVE = "active"
RETIRED = "retired"
# The values that name the TFJobs an experiment's render must hold: a sweep's runs, else the
# experiment, none once retired. The objects stage checks each render against them.
RUNS_KEY = "runs"
EXPERIMENT_KEY = "experiment"
RUNTIME_KEY = runtimes.VALUES_KEY  # which runtime's job each run is (runtimes.of_values)
JOB_VALUES = (LIFECYCLE_KEY, RUNS_KEY, EXPERIMENT_KEY, RUNTIME_KEY)


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
    *(Kind(runtime.group, runtime.kind)
      for runtime in sorted(runtimes.RUNTIMES, key=lambda r: (r.group, r.kind))),
    Kind("networking.k8s.io", "Ingress"),
    Kind("networking.k8s.io", "NetworkPolicy"),
)

# APIs helm is told the cluster serves (`--api-versions`), as Argo CD passes every group/version
# of the cluster; the runtimes' are the ones the chart needs beyond Kubernetes itself.
API_VERSIONS = tuple(runtime.api_version for runtime in runtimes.RUNTIMES)
