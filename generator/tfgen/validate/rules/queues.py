"""A queued run against its ClusterQueue: a run Kueue could never admit waits suspended forever.

Where tfgen.yaml describes a cluster's Kueue queues (`clusters[].queues`), a spec's queue
(`spec.queue`, a LocalQueue) must be one of them, and what the run asks for in all must fit
what its ClusterQueue could ever give it: per resource (the role's GPU resource, cpu, memory)
and flavor, its nominal quota plus what its cohort lets it borrow (the other ClusterQueues'
nominal quota of that flavor and resource, up to its borrowingLimit). Kueue puts each role (a
pod set) on one flavor per resource, which its nodeLabels must allow: a role is judged against
the best flavor it may use, the run against all its roles may use together. What cannot fit is
refused at the role's field, with the figures, the way `capacity.py` reads; a run that fits
only by borrowing is a warning (it waits while the cohort's quota is in use). Lending limits,
preemption and fair sharing are not modelled: they can only lower what a run may get.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from ...problems import WARNING, Problem
from ..config.clusters import Cluster
from ..config.load import RepoConfig
from ..experiment.checked import Checked, Collector, lookup, roles, spec_is_retired
from ..schema.messages import shown
from .api import quantity
from .cluster import spec_cluster

INFINITE = Decimal("Infinity")


@dataclass(frozen=True)
class Offer:
    """What one flavor of a ClusterQueue can give of one resource: its own (nominal) and at
    most, with what it may borrow."""

    flavor: str
    nominal: Decimal
    borrowable: Decimal

    @property
    def most(self) -> Decimal:
        return self.nominal + self.borrowable


def _amount(value: Any) -> Decimal:
    if isinstance(value, int):
        return Decimal(value)
    return quantity(value) or Decimal(0) if isinstance(value, str) else Decimal(0)


def _requests(role: dict[str, Any]) -> dict[str, Decimal]:
    """What one pod of a role asks for, by resource name (only what it asks for)."""
    out = {}
    if isinstance(role.get("gpus"), int) and role["gpus"] > 0:
        out[str(role.get("gpuResource") or "nvidia.com/gpu")] = Decimal(role["gpus"])
    for key in ("cpu", "memory"):
        if isinstance(role.get(key), str) and _amount(role[key]) > 0:
            out[key] = _amount(role[key])
    return out


def _replicas(role: dict[str, Any]) -> int:
    replicas = role.get("replicas")
    return replicas if isinstance(replicas, int) and replicas > 0 else 1


def _words(resource: str, amount: Decimal) -> str:
    """`16 nvidia.com/gpu`, `cpu 8`, `memory 16Gi`: an amount as a person reads it."""
    if resource == "memory":
        for suffix, size in (("Ti", 2 ** 40), ("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10)):
            if amount >= size and amount % size == 0:
                return f"memory {amount // size}{suffix}"
        return f"memory {amount.normalize():f}"
    text = f"{amount.normalize():f}"
    return f"cpu {text}" if resource == "cpu" else f"{text} {resource}"


def _offers(cluster: Cluster, queue: dict[str, Any], resource: str, role: dict[str, Any]
            ) -> tuple[list[Offer], list[str]]:
    """The offers of a ClusterQueue's flavors a role may use for a resource, and the names of
    the flavors that have the resource but whose nodeLabels the role's nodeSelector refuses."""
    selector = role.get("nodeSelector") or {}
    cohort = queue.get("cohort")
    mates = [q for q in (cluster.queues or {}).get("clusterQueues", [])
             if cohort and q.get("cohort") == cohort and q.get("name") != queue.get("name")]
    offers, refused = [], []
    for flavor in queue.get("flavors", []):
        quota = (flavor.get("resources") or {}).get(resource)
        if quota is None:
            continue
        labels = flavor.get("nodeLabels") or {}
        if any(k in selector and selector[k] != v for k, v in labels.items()):
            refused.append(str(flavor["name"]))
            continue
        pool = sum((_amount(((f.get("resources") or {}).get(resource) or {}).get("nominalQuota"))
                    for q in mates for f in q.get("flavors", [])
                    if f.get("name") == flavor["name"]), Decimal(0))
        limit = (_amount(quota["borrowingLimit"]) if "borrowingLimit" in quota else INFINITE)
        offers.append(Offer(str(flavor["name"]), _amount(quota.get("nominalQuota")),
                            min(pool, limit)))
    return offers, refused


def _offer_words(offers: list[Offer], resource: str, cohort: object) -> str:
    """`a100: nominal quota 8 + 4 borrowed from cohort research`, per flavor."""
    parts = []
    for offer in offers:
        text = f"{offer.flavor}: nominal quota {_words(resource, offer.nominal)}"
        if offer.borrowable:
            text += f" + {_words(resource, offer.borrowable)} borrowed from cohort {cohort}"
        parts.append(text)
    return "; ".join(parts)


def queue_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """A queued spec whose LocalQueue its cluster lacks, or that its ClusterQueue could never
    admit (refused), or could only by borrowing (a warning)."""
    spec = checked.data.get("spec")
    cluster = spec_cluster(checked, config)
    queue_name = spec.get("queue") if isinstance(spec, dict) else None
    if (cluster is None or cluster.queues is None or not queue_name or not isinstance(spec, dict)
            or spec_is_retired(checked.data)):
        return []  # (a retired run renders no job: nothing is queued)
    namespace = lookup(checked.data, "metadata", "namespace")
    out = Collector(checked.locator)
    queues = cluster.queues
    where = config.where(cluster.pointer("queues"))
    local = next((q for q in queues.get("localQueues", []) if q.get("name") == queue_name
                  and q.get("namespace") == namespace), None) or next(
        (q for q in queues.get("localQueues", []) if q.get("name") == queue_name
         and q.get("namespace") is None), None)
    if local is None:
        known = sorted({str(q["name"]) for q in queues.get("localQueues", [])
                        if q.get("namespace") in (None, namespace)})
        out.add(("spec", "queue"), f"queue {shown(queue_name)}: cluster {cluster.name} has no "
                f"LocalQueue of that name in namespace {namespace} ({where}): Kueue would "
                "never admit the run", "one of: " + ", ".join(known) if known else
                "add the LocalQueue to the cluster's queues.localQueues, or leave the queue "
                "with queue: \"\"", key=False)
        return out.problems
    index, queue = next((i, q) for i, q in enumerate(queues.get("clusterQueues", []))
                        if q.get("name") == local["clusterQueue"])  # (config rules: it is)
    where = config.where(cluster.pointer("queues", "clusterQueues", index))
    _judge(spec, cluster, queue, f"ClusterQueue {queue['name']} (LocalQueue {queue_name}, "
           f"cluster {cluster.name}, {where})", out)
    return out.problems


def _judge(spec: dict[str, Any], cluster: Cluster, queue: dict[str, Any], named: str,
           out: Collector) -> None:
    """Each role against the best flavor it may use, then the whole run against every flavor
    its roles may use, resource by resource."""
    demand: dict[str, list[tuple[str, dict[str, Any], Decimal]]] = {}
    for name, role in roles(spec):
        replicas = _replicas(role)
        for resource, each in _requests(role).items():
            demand.setdefault(resource, []).append((name, role, each * replicas))
    cohort = queue.get("cohort")
    for resource, asks in demand.items():
        usable: dict[str, Offer] = {}
        refused = False
        for name, role, total in asks:
            offers, other = _offers(cluster, queue, resource, role)
            usable.update({offer.flavor: offer for offer in offers})
            best = max((offer.most for offer in offers), default=Decimal(0))
            if total > best:
                refused = True
                _refuse_role(_Asked(name, role, resource, total), offers, other,
                             (named, cohort), out)
        total = sum((t for _, _, t in asks), Decimal(0))
        offers = sorted(usable.values(), key=lambda o: o.flavor)
        most = sum((o.most for o in offers), Decimal(0))
        nominal = sum((o.nominal for o in offers), Decimal(0))
        name, role, _ = max(asks, key=lambda a: a[2])
        field = _field(resource, role)
        said = ", ".join(f"{n} {_words(resource, t)}" for n, _, t in asks)
        if not refused and total > most:
            out.add(("spec", "roles", name, field), f"the run asks for "
                    f"{_words(resource, total)} in all ({said}); {named} can never give it "
                    f"more than {_words(resource, most)} ({_offer_words(offers, resource, cohort)}"
                    "): Kueue would never admit the run, which waits suspended",
                    f"ask for at most {_words(resource, most)} in all, or queue it where the "
                    "quota is larger", key=False)
        elif not refused and total > nominal:
            problem = out.locator.problem(
                ("spec", "roles", name, field), f"the run asks for {_words(resource, total)} in "
                f"all ({said}), more than the nominal quota of {named} "
                f"({_offer_words(offers, resource, cohort)}): it is admitted only while its "
                f"cohort {cohort} lends it the rest", f"ask for at most "
                f"{_words(resource, nominal)} in all to be admitted on the queue's own quota",
                key=False)
            out.problems.append(replace(problem, severity=WARNING))


def _field(resource: str, role: dict[str, Any]) -> str:
    """The role's field that asks for a resource."""
    return resource if resource in ("cpu", "memory") else "gpus"


@dataclass(frozen=True)
class _Asked:
    """What all the pods of one role ask for of one resource."""

    name: str
    role: dict[str, Any]
    resource: str
    total: Decimal


def _refuse_role(asked: _Asked, offers: list[Offer], refused: list[str],
                 queue: tuple[str, object], out: Collector) -> None:
    """A role that no flavor it may use could ever hold, at the field that asks for it
    (`queue`: the ClusterQueue as messages name it, and its cohort)."""
    name, role, resource, total = asked.name, asked.role, asked.resource, asked.total
    named, cohort = queue
    replicas = _replicas(role)
    asks = f"the {name} pods ask for {_words(resource, total)} in all ({replicas} x " \
           f"{_words(resource, total / replicas)})"
    if offers:
        out.add(("spec", "roles", name, _field(resource, role)),
                f"{asks}; {named} can never give them more than "
                f"{_words(resource, max(o.most for o in offers))} of one flavor "
                f"({_offer_words(offers, resource, cohort)}): Kueue would never admit the run, "
                "which waits suspended", f"ask for at most "
                f"{_words(resource, max(o.most for o in offers))}, or queue it where the quota "
                "is larger", key=False)
    elif refused:
        selector = ",".join(f"{k}={v}" for k, v in (role.get("nodeSelector") or {}).items())
        out.add(("spec", "roles", name, "nodeSelector"),
                f"{asks}; {named} has {resource} only in flavors whose nodeLabels this "
                f"nodeSelector ({selector}) excludes ({', '.join(refused)}): Kueue would never "
                "admit the run", "select the node labels of one of those flavors, or queue it "
                "where its GPU type has quota", key=False)
    else:
        out.add(("spec", "roles", name, _field(resource, role)),
                f"{asks}; {named} has no quota of {resource} in any flavor: Kueue would never "
                "admit the run", f"queue it where {resource} has quota, or ask for none",
                key=False)
