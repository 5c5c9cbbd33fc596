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

from .changes import ABSENT, PER_PART, LiveChange, change_text, changed_keys, leaf_changes
from .imported import ImportedJob, JobSource

# The container every runtime finds by name: the training operator adds the port and TF_CONFIG
# to it, a JobSet's pods get them from the chart, and a podFailurePolicy names it.
CONTAINER = "tensorflow"
# The port of every TensorFlow task (the training operator's default, `tfjob-port`).
PORT_NAME = "tfjob-port"
PORT = 2222
# The env var that holds a task's TensorFlow cluster and its place in it.
TF_CONFIG_ENV = "TF_CONFIG"
# Linux refuses to start a process given any one argument or environment string ("NAME=value")
# longer than this, its closing NUL byte included (MAX_ARG_STRLEN, 32 pages: execve fails with
# E2BIG, "Argument list too long"): the container never starts, whatever the API server took.
MAX_ARG_STRLEN = 131_072
# How a refusal names the Kubernetes version it was judged by: tfgen.yaml's one version, which
# the validate stage replaces by the cluster's where tfgen.yaml declares clusters.
VERSION_SOURCE = "tfgen.yaml's kubernetesVersion"


def exec_bytes(text: str) -> int:
    """The bytes one argument or environment string takes in execve, its NUL included (a lone
    surrogate, which a YAML escape can make, counts as the UTF-8 the writer escapes it to)."""
    return len(text.encode("utf-8", "surrogatepass")) + 1


def env_bytes(name: str, value: str) -> int:
    """The bytes the environment string `name=value` takes in execve."""
    return exec_bytes(f"{name}={value}")


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
    # Who puts TF_CONFIG into each pod, as `tfgen explain` says it: the runtime's controller,
    # or the chart at render time where no controller does.
    tf_config_by: str
    # The label and annotation prefixes its controllers write on the job and its pods: a spec
    # may not use them (a pod carrying another job's labels would be let into that job).
    label_prefixes: tuple[str, ...]
    # The status conditions whose status "True" says a run ended, successfully or not (what
    # `tfgen retire --finished` reads in a cluster listing, and `tfgen status` words).
    succeeded_condition: str
    failed_condition: str
    # The resource the API serves the job's kind as (`/apis/<group>/<version>/<plural>`), and
    # where a job's own suspend is.
    plural: str
    suspend_keys: tuple[str, ...]

    @property
    def finished_conditions(self) -> tuple[str, ...]:
        return self.succeeded_condition, self.failed_condition

    @property
    def group(self) -> str:
        """The API group of the job's kind."""
        return group_of(self.api_version)

    @property
    def key(self) -> tuple[str, str]:
        """(apiVersion, kind): how a rendered object is known to be this runtime's job."""
        return self.api_version, self.kind

    # Kueue: the entry of its configuration's `integrations.frameworks` that lets it admit
    # this runtime's jobs, and whether Kueue (v0.19) lists it by default.
    kueue_framework: str
    kueue_framework_by_default: bool

    # Argo CD: the Lua health check of the job's kind (a file of tfgen's templates; Argo CD
    # ships none for either runtime), and where the job's pod templates are (a jq path), into
    # which Kueue writes at admission what every Application ignores.
    health_lua: str
    pod_templates_jq: str
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
    def tf_config_problems(self, job: Mapping[str, Any], cluster_domain: str) -> list[JobProblem]:
        """Where the job's pods would not get the TF_CONFIG the training operator gives them
        (running with tfgen.yaml's `clusterDomain` as its CUSTOM_CLUSTER_DOMAIN)."""

    def given_env(self, index: int) -> dict[str, str]:
        """The env vars the runtime's controllers give the pod of a role at `index`, besides
        TF_CONFIG (run-local gives its processes the same)."""
        return {}

    def job_problems(self, job: Mapping[str, Any], cluster_domain: str) -> list[JobProblem]:
        """Every problem of a rendered job: its shape, its training container, TF_CONFIG, TTL.
        `cluster_domain`: tfgen.yaml's `clusterDomain`."""
        out = self.shape_problems(job)
        for template in self.pod_templates(job):
            out += _container_problems(template)
        out += self.tf_config_problems(job, cluster_domain)
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
    def pod_name(self, run: str, role: str, index: int) -> str:
        """How the cluster names pod `index` of a role (`worker`) of run `run`; a random part
        the controller adds is written `xxxxx`. Its headless Service is `<run>-<role>-<index>`
        on every runtime."""

    def longest_pod_suffix(self, replicas: Mapping[str, int]) -> str:
        """The longest text the runtime adds to a run's name to name a pod, for the spec's
        roles and their replicas: the run name's budget is what a DNS label leaves of it."""
        return max((self.pod_name("", role, max(count - 1, 0)) for role, count in
                    replicas.items()), key=len, default="")

    @abstractmethod
    def run_selector(self, run: str) -> dict[str, str]:
        """The labels the runtime's controller sets on every pod of run `run`."""

    @abstractmethod
    def pod_place(self, labels: Mapping[str, str]) -> tuple[str, str, int] | None:
        """(run, role, index) of a pod of one of this runtime's jobs, read from the labels its
        controllers set on it; None for any other pod."""

    @abstractmethod
    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        """What this runtime cannot run of a complete spec, at the spec's fields."""

    @abstractmethod
    def live_changes(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[LiveChange]:
        """What a started job (`old`, as rendered at the base revision) cannot take of its new
        rendering (`new`): what its API refuses, or its controller stores and never acts on."""

    # The API versions of the job's kind that `tfgen import` reads (older ones included).
    @property
    def read_versions(self) -> tuple[str, ...]:
        return (self.api_version,)

    def read_job(self, job: JobSource) -> ImportedJob:
        """A job of this runtime's kind being imported -> its roles and run policy, each field
        taken, set aside or left out on `job` as it is read; refused (`job.refused`) for an API
        version tfgen does not read, or a shape that would not be the same training."""
        if job.api_version not in self.read_versions:
            raise job.refused((), f"apiVersion {job.api_version!r} is not a {self.kind} "
                              f"version tfgen reads ({', '.join(self.read_versions)})")
        return self.read(job)

    @abstractmethod
    def read(self, job: JobSource) -> ImportedJob:
        """`read_job` for a job of a version tfgen reads."""


def _container_problems(template: PodTemplate) -> list[JobProblem]:
    """The training container is there by its name, every container has an image, and no
    container is given a string longer than a process takes."""
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
            for index, container in enumerate(containers) if not container.get("image")
            ] + _exec_string_problems(template)


def _exec_string_problems(template: PodTemplate) -> list[JobProblem]:
    """Each command, args and env string of every container within MAX_ARG_STRLEN. TF_CONFIG
    is the runtime's to measure (tf_config_problems): a JobSet's is written with a variable
    the kubelet expands."""
    pod = template.spec or {}
    out = []
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(listed(pod.get(kind))):
            if not isinstance(container, Mapping):
                continue
            where = f"{template.pointer}.spec.{kind}[{index}]"
            for field in ("command", "args"):
                for at, text in enumerate(listed(container.get(field))):
                    if isinstance(text, str) and exec_bytes(text) > MAX_ARG_STRLEN:
                        out.append(too_long(f"{where}.{field}[{at}]", f"this {field} string",
                                            exec_bytes(text)))
            for at, entry in enumerate(listed(container.get("env"))):
                if not isinstance(entry, Mapping) or entry.get("name") == TF_CONFIG_ENV:
                    continue
                name, value = entry.get("name"), entry.get("value")
                if isinstance(name, str) and isinstance(value, str) and (
                        env_bytes(name, value) > MAX_ARG_STRLEN):
                    out.append(too_long(f"{where}.env[{at}].value", f"env {name}={{value}}",
                                        env_bytes(name, value)))
    return out


def too_long(pointer: str, what: str, size: int) -> JobProblem:
    """A string a process cannot be given, at `pointer`."""
    return JobProblem(pointer, too_long_message(what, size), TOO_LONG_HINT)


def too_long_message(what: str, size: int) -> str:
    """What is wrong with a string of `size` execve bytes (its NUL included) over the limit."""
    return (f"{what} is {size - 1:,} bytes; Linux gives a process at most "
            f"{MAX_ARG_STRLEN - 1:,} bytes per argument or environment string (MAX_ARG_STRLEN, "
            f"{MAX_ARG_STRLEN:,} with the closing NUL), so the container would never start")


TOO_LONG_HINT = "pass large data in a file on the volume or in a ConfigMap"


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


def frozen_spec_changes(runtime: Runtime, old: Mapping[str, Any], new: Mapping[str, Any],
                        mutable: tuple[str, ...]) -> list[LiveChange]:
    """The changes to a started job whose API refuses any change to its spec but the `mutable`
    keys, each said of the role whose node holds it (`PodTemplate.role_pointer`)."""
    why = (f"a started {runtime.kind} takes no change to its spec but {' and '.join(mutable)} "
           "(its API refuses the rest: field is immutable)")
    roles_old = {t.role_pointer: t.replica_type for t in runtime.pod_templates(old)}
    roles_new = {t.role_pointer: t.replica_type for t in runtime.pod_templates(new)}
    out = _role_changes(roles_old, roles_new, runtime.kind, why)
    # once roles came or went, what changed in or above the roles' nodes is said by that
    nodes, roles_changed = roles_old | roles_new, bool(out)
    said: dict[str | None, int] = {}
    for where, a, b in _spec_leaves(old, new, mutable):
        role = _role_at(where, nodes) or None  # (a role named "" is said of the job)
        if roles_changed and _in_or_above(where, role, nodes):
            continue
        said[role] = said.get(role, 0) + 1
        if said[role] <= PER_PART:
            out.append(LiveChange(where, f"{where.removeprefix('$.spec.')} changed "
                                  f"({change_text(a, b)}); {why}", a, b, why, role))
    return out


def _spec_leaves(old: Mapping[str, Any], new: Mapping[str, Any], mutable: tuple[str, ...]
                 ) -> Iterator[tuple[str, Any, Any]]:
    """(pointer, old, new) of every innermost field of the spec that changed, but the mutable."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    for key in changed_keys(old_spec, new_spec, set(mutable)):
        yield from leaf_changes(old_spec.get(key, ABSENT), new_spec.get(key, ABSENT),
                                f"$.spec.{key}", limit=None)


def _in_or_above(pointer: str, role: str | None, nodes: dict[str, str]) -> bool:
    """Whether `pointer` is in a role's node (`role`) or holds one of them."""
    return role is not None or any(_under(node, pointer) for node in nodes)


def _role_changes(roles_old: dict[str, str], roles_new: dict[str, str], kind: str, why: str
                  ) -> list[LiveChange]:
    """Roles added to or removed from a started job (the others' nodes may shift with them:
    no change of theirs)."""
    where_old = {role: pointer for pointer, role in roles_old.items()}
    where_new = {role: pointer for pointer, role in roles_new.items()}
    out = []
    for role in sorted(set(where_old) ^ set(where_new)):
        removed = role in where_old
        out.append(LiveChange(where_new.get(role) or where_old[role],
                              f"role {role} {'removed from' if removed else 'added to'} a "
                              f"started {kind}; {why}", role if removed else ABSENT,
                              ABSENT if removed else role, why, role))
    return out


def _under(pointer: str, parent: str) -> bool:
    """Whether `pointer` is `parent` or a field within it."""
    return pointer == parent or pointer.startswith((f"{parent}.", f"{parent}["))


def _role_at(pointer: str, roles: dict[str, str]) -> str | None:
    """The role whose node holds `pointer`, None outside every role's node."""
    return next((role for owner, role in roles.items() if _under(pointer, owner)), None)
