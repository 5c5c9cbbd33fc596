"""A spec against the cluster it runs on (`config/clusters.py` says which): a `spec.cluster`
that names no cluster of tfgen.yaml, and a runtime whose controller the cluster lacks (a
JobSet on a cluster without the JobSet controller is never run). The cluster's Kubernetes
version, node types and queues are judged by `runtime.py`, `capacity.py` and `queues.py`.
"""

from __future__ import annotations

from ...problems import Problem
from ..config.clusters import Cluster, unknown_cluster
from ..config.load import RepoConfig
from ..experiment.checked import Checked, Collector, lookup
from ..schema.messages import shown


def spec_cluster(checked: Checked, config: RepoConfig) -> Cluster | None:
    """The cluster one checked spec runs on (None: its spec.cluster names none)."""
    return config.cluster_of(lookup(checked.data, "metadata", "namespace"),
                             checked.data.get("spec"))


def cluster_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """Every problem of one spec with its cluster."""
    spec = checked.data.get("spec")
    if not isinstance(spec, dict):
        return []
    out = Collector(checked.locator)
    cluster = spec_cluster(checked, config)
    if cluster is None:
        out.add(("spec", "cluster"), *unknown_cluster(config.clusters, spec.get("cluster")),
                key=False)
        return out.problems
    runtime = spec.get("runtime")
    if isinstance(runtime, str) and runtime not in cluster.runtimes:
        others = [c.name for c in config.clusters if runtime in c.runtimes]
        out.add(("spec", "runtime"), f"runtime {shown(runtime)}: cluster {cluster.name} "
                f"({config.where(cluster.pointer('runtimes'))}) runs "
                f"{' and '.join(cluster.runtimes)} only (no {runtime} controller there): "
                "the run would never start",
                f"runtime: {cluster.runtimes[0]}" + (
                    f", or spec.cluster: {' or '.join(others)}" if others else ""), key=False)
    return out.problems
