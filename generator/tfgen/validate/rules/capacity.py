"""Roles against their cluster's node types: a pod no node can hold stays Pending forever.

tfgen.yaml's node types (of the spec's cluster, `clusters[].nodeTypes`; without clusters,
`cluster.nodeTypes`) say what the cluster's nodes are (GPUs, CPU and memory one
pod may be given there, the labels that select them). Each role of a spec may run on the node
types whose labels its nodeSelector asks for (every node type, without one); when none of them
can hold one of its pods (its GPUs, CPU request and memory), the role is refused at the field
that asks too much, naming the largest node it may run on. A nodeSelector no node type
satisfies is refused at its line. Without node types nothing is checked.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ...problems import Problem
from ...words import counted
from ..config.clusters import Cluster
from ..config.load import RepoConfig
from ..experiment.checked import Checked, Collector, lookup, roles
from .api import quantity

NEEDS = ("gpus", "cpu", "memory")  # what a pod asks of a node, in the order it is said


def _amount(source: dict[str, Any], key: str) -> Decimal | None:
    """A role's or node type's GPUs, CPU or memory as a number (None: not given)."""
    value = source.get(key)
    if key == "gpus":
        return Decimal(value) if isinstance(value, int) else None
    return quantity(value) if isinstance(value, str) else None


def _fits(node: dict[str, Any], role: dict[str, Any]) -> list[str]:
    """What of the role's pod one node of this type cannot give (a node type that does not
    say its CPU or memory gives any)."""
    short = []
    for key in NEEDS:
        need, has = _amount(role, key), _amount(node, key)
        if key == "gpus" and has is None:
            has = Decimal(0)
        if need and has is not None and need > has:
            short.append(key)
    return short


def _size(node: dict[str, Any]) -> tuple[Decimal, ...]:
    return tuple(_amount(node, key) or Decimal(0) for key in NEEDS)


def _words(source: dict[str, Any]) -> str:
    """`8 GPUs, CPU 96, memory 1Ti`: what a node type has or a pod asks for."""
    parts = [counted(int(source.get("gpus") or 0), "GPU")]
    parts += [f"{key.upper() if key == 'cpu' else key} {source[key]}" for key in NEEDS[1:]
              if isinstance(source.get(key), str)]
    return ", ".join(parts)


def _labels(labels: dict[str, Any]) -> str:
    """`accelerator=a100,zone=b`, as kubectl writes a selector; `no labels` for none."""
    return ",".join(f"{k}={v}" for k, v in labels.items()) or "no labels"


def fit_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """Each role of one experiment that no node of its cluster it may be scheduled on can
    hold."""
    spec = checked.data.get("spec")
    cluster = config.cluster_of(lookup(checked.data, "metadata", "namespace"), spec)
    if cluster is None or not cluster.node_types or not isinstance(spec, dict):
        return []
    out = Collector(checked.locator)
    for name, role in roles(spec):
        selector = role.get("nodeSelector") or {}
        allowed = _selected(cluster.node_types, selector)
        if allowed:
            _check_fit(name, role, allowed, cluster, out)
        else:
            _check_unmatched(name, selector, cluster, out)
    return out.problems


def _selected(node_types: list[dict[str, Any]], selector: dict[str, Any]) -> list[dict[str, Any]]:
    """The node types a role may run on: those with every label its nodeSelector asks for."""
    return [node for node in node_types
            if all((node.get("labels") or {}).get(k) == v for k, v in selector.items())]


def _check_unmatched(name: str, selector: dict[str, Any], cluster: Cluster,
                     out: Collector) -> None:
    """A nodeSelector no node type satisfies: the role's pods would never be scheduled."""
    out.add(("spec", "roles", name, "nodeSelector"),
            f"no node type of {_source(cluster)} has the labels "
            f"{_labels(selector)}: the {name} pods would never be scheduled",
            "select labels of a node type: " + "; ".join(
                f"{node['name']} ({_labels(node.get('labels') or {})})"
                for node in cluster.node_types))


def _source(cluster: Cluster) -> str:
    """The node types as messages name them: `cluster.nodeTypes (tfgen.yaml:<line>)`, and the
    cluster when tfgen.yaml declares several."""
    return (f"cluster {cluster.name}'s {cluster.node_types_source}" if cluster.declared
            else cluster.node_types_source)


def _check_fit(name: str, role: dict[str, Any], allowed: list[dict[str, Any]],
               cluster: Cluster, out: Collector) -> None:
    """A pod of the role that none of the `allowed` node types can hold stays Pending: said at
    what it asks too much of, beside the largest node it may run on."""
    shortfalls = [_fits(node, role) for node in allowed]
    if all(shortfalls):
        largest = max(allowed, key=_size)
        short = _fits(largest, role) or shortfalls[0]
        out.add(("spec", "roles", name, short[0]),
                f"a {name} pod asks for {_words(role)}; no node it may run on can hold it, "
                f"the largest being {largest['name']} ({_words(largest)}, "
                f"{_source(cluster)}): the pods would stay Pending",
                f"ask for at most what {largest['name']} has, or select another node type",
                key=False)
