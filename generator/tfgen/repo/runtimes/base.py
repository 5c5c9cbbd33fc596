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
    # JSON pointer to the node of the job that is this role's: its replica count and its
    # template lie under it, so a change found there is the role's
    role_pointer: str

    @property
    def spec(self) -> Mapping[str, Any] | None:
        pod = self.template.get("spec")
        return pod if isinstance(pod, Mapping) else None


@dataclass(frozen=True)
class JobProblem:
    """Something wrong in a rendered job: where (a JSON pointer), what, and what instead."""

    pointer: str
    message: str
    hint: str = ""


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
    controller: str  # what runs its jobs: "the training operator"
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

    # Argo CD: the Lua health check of the job's kind (a file of tfgen's templates; Argo CD
    # ships none for either runtime), and what Kueue's webhook writes into a queued job, which
    # every Application ignores: the suspend field (a JSON pointer) and every pod spec (jq).
    health_lua: str
    suspend_pointer: str
    pod_specs_jq: str
    # Where a job's ttlSecondsAfterFinished would be: it deletes the finished job, which Argo
    # CD's self-heal then creates again, and it trains again.
    ttl_keys: tuple[str, ...]

    @abstractmethod
    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        """Every pod template of a rendered job object."""

    @abstractmethod
    def shape_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        """What the runtime's controller refuses of the job's shape (its roles, their counts)."""

    @abstractmethod
    def tf_config_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        """Where the job's pods would not get the TF_CONFIG the training operator gives them."""

    def job_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        """Every problem of a rendered job: its shape, its training container, TF_CONFIG, TTL."""
        out = self.shape_problems(job)
        for template in self.pod_templates(job):
            out += _container_problems(template)
        out += self.tf_config_problems(job)
        node: Any = job
        for key in self.ttl_keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None:
            out.append(JobProblem("$." + ".".join(self.ttl_keys),
                                  f"ttlSecondsAfterFinished deletes the finished {self.kind}, "
                                  "and Argo CD self-heal recreates it, which trains again",
                                  "remove it; the finished job's pods are cleaned up already"))
        return out

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


def _container_problems(template: PodTemplate) -> list[JobProblem]:
    """The training container is there by its name, and every container has an image."""
    pod = template.spec or {}
    where = f"{template.pointer}.spec.containers"
    containers = [c for c in listed(pod.get("containers")) if isinstance(c, Mapping)]
    if not any(c.get("name") == CONTAINER for c in containers):
        return [JobProblem(where, f"no container named {CONTAINER!r} (the runtime finds the "
                           "training container, its port and TF_CONFIG by that name)",
                           f"name the training container {CONTAINER!r}")]
    return [JobProblem(f"{where}[{index}].image",
                       f"container {container.get('name', '')!r} has no image",
                       "give every container an image")
            for index, container in enumerate(containers) if not container.get("image")]


def env_entries(template: PodTemplate) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(pointer, entry) of every env entry of every container of a pod template."""
    pod = template.spec or {}
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(listed(pod.get(kind))):
            env = container.get("env") if isinstance(container, Mapping) else None
            for env_index, entry in enumerate(listed(env)):
                if isinstance(entry, Mapping):
                    yield f"{template.pointer}.spec.{kind}[{index}].env[{env_index}]", entry


def listed(value: Any) -> list[Any]:
    """A list a rendered object should hold there, or none when it holds something else (the
    schema says what is wrong; the rules read on)."""
    return value if isinstance(value, list) else []


def group_of(api_version: str) -> str:
    """`kubeflow.org` of `kubeflow.org/v1`; "" for the core group."""
    return api_version.rpartition("/")[0]
