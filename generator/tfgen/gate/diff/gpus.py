"""The GPUs a pull request's experiments request, for `tfgen diff`: per experiment (its
namespace, the GPUs its pods ask for, whether a Kueue queue admits them), and per namespace on
both sides of the change, beside its `gpuQuota` (which queued runs do not count against).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...repo import layout
from ...validate import RepoConfig, load_config
from ...validate.experiments import check_file
from ...validate.policy import team
from ...validate.yaml.loader import LoadError, read_file
from ..revisions import base


@dataclass(frozen=True)
class NamespaceGpus:
    """GPUs a namespace's active experiments request before and after the change (None: the
    base could not be read): those its `gpuQuota` holds, its quota now (None: no quota), and
    apart from them those that Kueue queues admit."""

    namespace: str
    before: int | None
    after: int
    quota: int | None
    queued_before: int | None = 0
    queued_after: int = 0


@dataclass(frozen=True)
class GpuRequest:
    """What one experiment's spec asks for: its namespace, the GPUs its pods request (0 when
    it is suspended or retired), and whether a Kueue queue admits them (then they are its
    ClusterQueue's to admit, and do not count against the namespace's `gpuQuota`)."""

    namespace: str
    gpus: int
    queued: bool

    @property
    def held(self) -> int:
        """GPUs that count against the namespace's `gpuQuota`."""
        return 0 if self.queued else self.gpus


def gpus_by_experiment(config: RepoConfig) -> dict[str, GpuRequest]:
    """Experiment -> what its spec requests, from every spec that loads (an invalid one counts
    too: an experiment over quota is exactly what the tables must show)."""
    found: dict[str, GpuRequest] = {}
    for path in layout.spec_files(config.experiments_dir):
        shown = layout.shown(path)
        try:
            checked, _ = check_file(path, shown, read_file(path, shown, config.root), config)
        except LoadError:
            continue
        request = gpu_request(checked.data if checked is not None else None)
        if request is not None:
            name, requested = request
            found[name] = requested
    return found


def gpu_request(data: Any) -> tuple[str, GpuRequest] | None:
    """One loaded spec's experiment name, with what it requests; None when it names no
    namespace or has no spec."""
    spec = data.get("spec") if isinstance(data, dict) else None
    metadata = (data.get("metadata") or {}) if data else {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(spec, dict) or not isinstance(namespace, str) or not name:
        return None
    gpus = team.gpus(spec) if team.active(spec) else 0
    return str(name), GpuRequest(namespace, gpus, team.queued(spec))


NamespaceTotals = dict[str, tuple[int, int]]  # namespace -> (GPUs its quota holds, queued GPUs)


def gpus_by_namespace(experiments: dict[str, GpuRequest]) -> NamespaceTotals:
    """GPUs requested by each namespace's active experiments: those its quota holds, and
    those Kueue queues admit."""
    totals: NamespaceTotals = {}
    for request in experiments.values():
        held, queued = totals.get(request.namespace, (0, 0))
        totals[request.namespace] = (held + request.held,
                                     queued + request.gpus - request.held)
    return totals


def gpu_table(config: RepoConfig, before: NamespaceTotals | None,
              after: NamespaceTotals) -> list[NamespaceGpus]:
    """One row per namespace that requests GPUs on either side or has a quota."""
    quotas = {ns: config.namespace_policy(ns).get("gpuQuota") for ns in config.data["policy"]}
    names = set(after) | set(before or {}) | {ns for ns, q in quotas.items() if q is not None}
    rows = []
    for ns in sorted(names):
        old = None if before is None else before.get(ns, (0, 0))
        new, quota = after.get(ns, (0, 0)), quotas.get(ns)
        if any(old or ()) or any(new) or quota is not None:
            rows.append(NamespaceGpus(ns, None if old is None else old[0], new[0], quota,
                                      None if old is None else old[1], new[1]))
    return rows


def gpus_at(root: Path, ref: str) -> dict[str, GpuRequest] | None:
    """`gpus_by_experiment` at `ref`; None when the base's tfgen.yaml is not valid."""
    with base.tree_at(root, ref) as tree:
        try:
            return gpus_by_experiment(load_config(cwd=tree))
        except InputError:  # the base's tfgen.yaml is not valid: its GPUs are unknown
            return None
