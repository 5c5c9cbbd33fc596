"""The pods a TFJob becomes and the TF_CONFIG each one receives.

Given a rendered `kubeflow.org/v1` TFJob (a plain dict), this module lists every pod the
training operator v1.9 creates for it (name, replica type, index, Service address, GPUs,
mounts, container command) and the exact TF_CONFIG string the operator injects into the
`tensorflow` container. It reproduces the operator's own rules rather than TensorFlow's, from
kubeflow/training-operator v1.9.0:
`pkg/controller.v1/tensorflow/tensorflow.go` (genTFConfigJSONStr, genClusterSpec,
convertClusterSpecToSparseClusterSpec), `pkg/controller.v1/tensorflow/util.go`
(GetPortFromTFJob, isDistributed), `pkg/controller.v1/tensorflow/tfjob_controller.go`
(SetClusterSpec), `pkg/controller.v1/common/util.go` (GenGeneralName) and
`pkg/apis/kubeflow.org/v1/tensorflow_defaults.go` (replica key casing, default replicas and
port). Pure functions: no helm, no cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InputError
from .. import naming
from .base import CONTAINER

# The operator's constants (pkg/apis/kubeflow.org/v1/tensorflow_types.go).
PORT_NAME = "tfjob-port"
DEFAULT_PORT = 2222

# Replica keys as the operator spells them after defaulting; shown in this order (the cluster
# spec itself is ordered by Go's sorted map keys, not by this list).
REPLICA_TYPES = tuple(naming.REPLICA_TYPES.values())


@dataclass(frozen=True)
class Mount:
    """One volume mount of the `tensorflow` container, with where the volume comes from."""

    mount_path: str
    volume: str
    source: str  # "pvc/<claim>", "configMap/<name>", "emptyDir", ...
    read_only: bool = False
    sub_path: str = ""


@dataclass(frozen=True)
class Pod:
    """One pod the operator creates for a TFJob, and one headless Service of the same name."""

    name: str
    replica_type: str  # TFJob key: Chief | Master | Worker | PS | Evaluator
    index: int
    address: str  # host:port as written in the cluster spec
    port: int
    gpus: int
    mounts: tuple[Mount, ...]
    # the cluster spec every pod of the job shares (one object, not a copy per pod), None when
    # the operator sets no TF_CONFIG; the pod's TF_CONFIG is made from it on demand
    cluster: Mapping[str, Sequence[str]] | None
    dynamic_worker: bool = False
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[Mapping[str, Any], ...] = ()  # the container's EnvVar list, TF_CONFIG excluded
    working_dir: str = ""

    @property
    def task_type(self) -> str:
        """The TF_CONFIG task type: the replica type lowercased."""
        return self.replica_type.lower()

    @property
    def tf_config(self) -> str | None:
        """The exact env value the operator sets, None when it sets none. Made when asked: a
        job of two thousand pods would otherwise hold two thousand copies of its cluster."""
        if self.cluster is None:
            return None
        return tf_config(self.cluster, self.replica_type, self.index,
                         dynamic_worker=self.dynamic_worker)


def go_json(value: Any) -> str:
    """Serialise like Go's `json.Marshal`: compact, UTF-8, `<`, `>`, `&` and U+2028/9 escaped.

    Key order is the caller's: Go writes struct fields in declaration order and map keys
    sorted, so callers build dicts in that order.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def replica_specs(tfjob: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`spec.tfReplicaSpecs` with keys normalised as the operator's defaulting does.

    setTensorflowTypeNamesToCamelCase accepts any case (`ps`, `WORKER`); other keys are
    rejected by the operator's validation, so they are an error here too.
    """
    spec = tfjob.get("spec") or {}
    raw = spec.get("tfReplicaSpecs") or {}
    if not isinstance(raw, Mapping) or not raw:
        raise InputError(f"TFJob {_job_name(tfjob)!r} has no spec.tfReplicaSpecs")
    out: dict[str, Mapping[str, Any]] = {}
    for key, replica in raw.items():
        canonical = next((t for t in REPLICA_TYPES if t.lower() == str(key).lower()), None)
        if canonical is None:
            raise InputError(
                f"TFJob {_job_name(tfjob)!r}: unknown replica type {key!r} "
                f"(expected one of {', '.join(REPLICA_TYPES)})"
            )
        out[canonical] = replica or {}
    return out


def replica_count(replica: Mapping[str, Any]) -> int:
    """Replicas of one replica spec; the operator defaults a missing count to 1. A count that
    is not a whole number from 0 to naming.MAX_REPLICAS is an InputError: listing a million
    pods would explain nothing."""
    count = replica.get("replicas")
    if count is None:
        return 1
    if isinstance(count, bool) or not isinstance(count, int) or not (
            0 <= count <= naming.MAX_REPLICAS):
        raise InputError(f"replicas {count!r}: expected a whole number from 0 to "
                         f"{naming.MAX_REPLICAS}")
    return count


def is_distributed(tfjob: Mapping[str, Any]) -> bool:
    """True unless the job has exactly one replica in total (then no TF_CONFIG is set)."""
    return sum(replica_count(r) for r in replica_specs(tfjob).values()) != 1


def _job_name(tfjob: Mapping[str, Any]) -> str:
    return str((tfjob.get("metadata") or {}).get("name") or "")


def _namespace(tfjob: Mapping[str, Any]) -> str:
    # The chart always writes metadata.namespace; `default` is what the API server would use.
    return str((tfjob.get("metadata") or {}).get("namespace") or "default")


def _containers(replica: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((((replica.get("template") or {}).get("spec") or {}).get("containers")) or [])


def _tensorflow_container(replica: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((c for c in _containers(replica) if c.get("name") == CONTAINER), None)


def replica_port(replica: Mapping[str, Any]) -> int:
    """GetPortFromTFJob: the `tfjob-port` port of the `tensorflow` container, else 2222."""
    container = _tensorflow_container(replica) or {}
    for port in container.get("ports") or []:
        if port.get("name") == PORT_NAME:
            number = port.get("containerPort")
            if isinstance(number, bool) or not isinstance(number, int) or not (
                    0 < number < 65536):
                raise InputError(f"port {PORT_NAME} {number!r}: expected a port number "
                                 "from 1 to 65535")
            return number
    return DEFAULT_PORT


def service_address(
    job: str, namespace: str, replica_type: str, index: int, port: int, cluster_domain: str = ""
) -> str:
    """genClusterSpec's endpoint: `<pod>.<ns>.svc[.<domain>]:<port>`.

    The operator appends its CUSTOM_CLUSTER_DOMAIN after `.svc`, so the domain is given as
    `cluster.local`, not `svc.cluster.local`.
    """
    host = f"{naming.pod_name(job, replica_type, index)}.{namespace}.svc"
    domain = cluster_domain.strip(".")
    if domain:
        host += "." + domain
    return f"{host}:{port}"


def cluster_spec(tfjob: Mapping[str, Any], cluster_domain: str = "") -> dict[str, list[str]]:
    """genClusterSpec: every replica type lowercased -> its addresses, keys sorted.

    Every replica type is included, the evaluator too (v1.9 iterates all of tfReplicaSpecs);
    the keys are sorted because Go's json.Marshal sorts map keys.
    """
    job, namespace = _job_name(tfjob), _namespace(tfjob)
    cluster: dict[str, list[str]] = {}
    for rtype, replica in replica_specs(tfjob).items():
        port = replica_port(replica)
        cluster[rtype.lower()] = [
            service_address(job, namespace, rtype, i, port, cluster_domain)
            for i in range(replica_count(replica))
        ]
    return dict(sorted(cluster.items()))


def tf_config(
    cluster: Mapping[str, Sequence[str]],
    replica_type: str,
    index: int,
    *,
    dynamic_worker: bool = False,
) -> str:
    """genTFConfigJSONStr for one task, byte for byte.

    Dense form: struct TFConfig {cluster, task {type, index}, environment: "cloud"}.
    Sparse form (spec.enableDynamicWorker): struct SparseTFConfig {cluster {worker, ps}, task},
    no environment. A worker sees only itself (`{"<index>": addr}`) and all PS (`null` when
    there are none: Go marshals the nil slice of a missing map key so); a PS sees only itself
    and an empty worker map; any other type gets `{"worker":{},"ps":[]}`.
    """
    task_type = replica_type.lower()
    task = {"type": task_type, "index": index}
    if not dynamic_worker:
        dense = {k: list(v) for k, v in sorted(cluster.items())}
        return go_json({"cluster": dense, "task": task, "environment": "cloud"})
    worker: dict[str, str] = {}
    ps: list[str] | None = []
    if task_type == "ps":
        ps = [cluster["ps"][index]]
    elif task_type == "worker":
        ps = list(cluster["ps"]) if "ps" in cluster else None
        worker[str(index)] = cluster["worker"][index]
    return go_json({"cluster": {"worker": worker, "ps": ps}, "task": task})


def _gpus(replica: Mapping[str, Any]) -> int:
    total = 0
    for container in _containers(replica):
        limits = ((container.get("resources") or {}).get("limits")) or {}
        for resource, amount in limits.items():
            if str(resource).endswith("/gpu"):
                if not str(amount).isdigit():  # GPUs are whole devices, never "500m"
                    raise InputError(f"{resource} limit {amount!r}: expected a whole number")
                total += int(str(amount))
    return total


def _volume_source(volume: Mapping[str, Any]) -> str:
    if "persistentVolumeClaim" in volume:
        return "pvc/" + str(volume["persistentVolumeClaim"].get("claimName", ""))
    for kind in ("configMap", "secret"):
        if kind in volume:
            ref = volume[kind]
            return f"{kind}/{ref.get('name') or ref.get('secretName') or ''}"
    kinds = [k for k in volume if k != "name"]
    return kinds[0] if kinds else "unknown"


def _mounts(replica: Mapping[str, Any], container: Mapping[str, Any]) -> tuple[Mount, ...]:
    volumes = {
        v.get("name"): v
        for v in (((replica.get("template") or {}).get("spec") or {}).get("volumes") or [])
    }
    mounts = []
    for m in container.get("volumeMounts") or []:
        volume = volumes.get(m.get("name"), {})
        mounts.append(
            Mount(
                mount_path=str(m.get("mountPath", "")),
                volume=str(m.get("name", "")),
                source=_volume_source(volume) if volume else "missing volume",
                read_only=bool(m.get("readOnly", False)),
                sub_path=str(m.get("subPath", "")),
            )
        )
    return tuple(mounts)


def sort_key(replica_type: str) -> int:
    """Display order: chief/master first, then workers, PS, evaluator."""
    return REPLICA_TYPES.index(replica_type)


def pods(
    tfjob: Mapping[str, Any],
    cluster_domain: str = "",
    *,
    address_of: Callable[[str, int], str] | None = None,
) -> list[Pod]:
    """Every pod of the TFJob with its TF_CONFIG, chief/master first.

    `address_of(replica_type, index)` replaces the Service addresses in the cluster spec (used
    to run the same job on local ports); the TF_CONFIG keeps the operator's shape either way.
    """
    job = _job_name(tfjob)
    if not job:
        raise InputError("TFJob has no metadata.name")
    specs = replica_specs(tfjob)
    cluster = cluster_spec(tfjob, cluster_domain)
    if address_of is not None:
        cluster = _local_cluster(specs, address_of)
    shared = _Shared(job, cluster if is_distributed(tfjob) else None,
                     bool((tfjob.get("spec") or {}).get("enableDynamicWorker", False)))
    out: list[Pod] = []
    for rtype in sorted(specs, key=sort_key):
        out += _replica_pods(shared, rtype, specs[rtype], cluster[rtype.lower()])
    return out


def _local_cluster(specs: Mapping[str, Mapping[str, Any]],
                   address_of: Callable[[str, int], str]) -> dict[str, list[str]]:
    """The cluster spec with `address_of`'s addresses, keys sorted as the operator sorts them."""
    cluster = {rtype.lower(): [address_of(rtype, i) for i in range(replica_count(replica))]
               for rtype, replica in specs.items()}
    return dict(sorted(cluster.items()))


@dataclass(frozen=True)
class _Shared:
    """What every pod of a job shares: the job's name, the cluster spec of its TF_CONFIG
    (None when the operator sets none), whether each worker sees only itself."""

    job: str
    cluster: dict[str, list[str]] | None
    dynamic_worker: bool


def _replica_pods(shared: _Shared, rtype: str, replica: Mapping[str, Any],
                  addresses: list[str]) -> list[Pod]:
    """The pods of one replica type, each at its address."""
    container = _tensorflow_container(replica)
    if container is None:
        raise InputError(
            f"TFJob {shared.job!r}: replica {rtype} has no container named {CONTAINER!r} "
            "(the operator only configures that container)"
        )
    port = replica_port(replica)
    env = tuple(e for e in container.get("env") or [] if e.get("name") != "TF_CONFIG")
    return [
        Pod(
            name=naming.pod_name(shared.job, rtype, i),
            replica_type=rtype,
            index=i,
            address=addresses[i],
            port=port,
            gpus=_gpus(replica),
            mounts=_mounts(replica, container),
            cluster=shared.cluster,
            dynamic_worker=shared.dynamic_worker,
            image=str(container.get("image", "")),
            command=tuple(str(c) for c in container.get("command") or []),
            args=tuple(str(a) for a in container.get("args") or []),
            env=env,
            working_dir=str(container.get("workingDir", "")),
        )
        for i in range(replica_count(replica))
    ]
