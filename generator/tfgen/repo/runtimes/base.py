"""What every runtime tells the rest of tfgen: one interface, one module per runtime.

A runtime is what turns an experiment's runs into pods on the cluster: the training operator's
TFJob, or a JobSet. Everything that differs between them (the object's kind and API, where its
pod templates are, the names of its pods, the labels its controller puts on them, what cannot
change once it runs, what the spec may ask of it) is a `Runtime`'s; commands ask the runtime
of an experiment or of an object instead of naming one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# The container every runtime finds by name: the training operator adds the port and TF_CONFIG
# to it, a JobSet's pods get them from the chart, and a podFailurePolicy names it.
CONTAINER = "tensorflow"
# The port of every TensorFlow task (the training operator's default, `tfjob-port`).
PORT_NAME = "tfjob-port"
PORT = 2222


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a rendered job: where it is, and the role whose pods it makes."""

    pointer: str  # JSON pointer to the template (its `.spec` is the pod spec)
    replica_type: str  # Chief | Master | Worker | PS | Evaluator
    template: Mapping[str, Any]

    @property
    def spec(self) -> Mapping[str, Any] | None:
        pod = self.template.get("spec")
        return pod if isinstance(pod, Mapping) else None


@dataclass(frozen=True)
class Refusal:
    """Something a runtime cannot do for a spec: at which spec field, why, and what instead."""

    parts: tuple[str | int, ...]  # the spec field, as keys and list indexes
    message: str
    hint: str


class Runtime(ABC):
    """One runtime. `name` is the spec's `spec.runtime` value."""

    name: str
    api_version: str
    kind: str
    described: str  # how people name it: "a Kubeflow TFJob (training-operator v1.9)"
    pod_names: str  # how its pods are named: "<run>-<role>-<index>"
    # The status conditions whose status "True" says a run ended, successfully or not (what
    # `tfgen retire --finished` reads in a cluster listing).
    finished_conditions: tuple[str, ...]

    @property
    def group(self) -> str:
        """The API group of the job's kind."""
        return group_of(self.api_version)

    @property
    def key(self) -> tuple[str, str]:
        """(apiVersion, kind): how a rendered object is known to be this runtime's job."""
        return self.api_version, self.kind

    @abstractmethod
    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        """Every pod template of a rendered job object."""

    @abstractmethod
    def as_tfjob(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """The TFJob the training operator would run for this job: the same name, namespace
        and pod templates, so its pods and TF_CONFIG are computed once, as the operator does."""

    @abstractmethod
    def longest_pod_suffix(self, replicas: Mapping[str, int]) -> str:
        """The longest text the runtime adds to a run's name to name a pod, for the spec's
        roles and their replicas: the run name's budget is what a DNS label leaves of it."""

    @abstractmethod
    def run_selector(self, run: str) -> dict[str, str]:
        """The labels the runtime's controller sets on every pod of run `run`."""

    @abstractmethod
    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        """What this runtime cannot run of a complete spec, at the spec's fields."""

    # What of a started job's `spec` may still change (the rest its API refuses, or its
    # controller ignores): the top-level keys; None when the gate knows the kind field by field.
    mutable: tuple[str, ...] | None = None


def group_of(api_version: str) -> str:
    """`kubeflow.org` of `kubeflow.org/v1`; "" for the core group."""
    return api_version.rpartition("/")[0]
