"""`tfgen list`: one row per experiment of the repository.

Every spec that loads is listed, valid or not (a broken spec still names a run that may be
live); the problems come from the validate stage, as `tfgen validate` reports them. Topology
words follow the roles in their reading order (naming.ROLES); the cluster is the one its runs go
to (the validate stage's `experiment_cluster`), the runtime and the queue are the spec's with
its namespace's defaults filled in; the GPUs held are those the namespace quota
counts (validate/policy/team.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..problems import Problem
from ..repo import chart, layout, naming, runtimes
from ..validate import RepoConfig, experiment_cluster, load_config, validate_repo
from ..validate.config.clusters import IMPLICIT
from ..validate.experiment import sweep
from ..validate.experiment.checked import lookup, roles
from ..validate.experiments import check_file
from ..validate.policy.team import gpus, holds_quota
from ..validate.yaml.loader import LoadError, read_file
from ..words import counted

COLUMNS = ("name", "namespace", "cluster", "owner", "runtime", "queue", "runs", "topology",
           "gpus", "holds", "storage", "state")
# Shown in the text table only when some row has another value than this one (most
# repositories queue nothing, and many have only the one implicit cluster).
SPARSE_COLUMNS = {"queue": "", "cluster": IMPLICIT}
PLURALS = {"master": "masters", "chief": "chiefs", "worker": "workers", "ps": "ps",
           "evaluator": "evaluators"}


@dataclass(frozen=True)
class Row:
    name: str
    namespace: str
    cluster: str  # where its runs go (validate's `experiment_cluster`); "?" when it names none
    owner: str
    runtime: str  # spec.runtime, the namespace's default filled in
    queue: str  # the Kueue LocalQueue that admits its runs, "" when not queued
    runs: int  # a sweep's runs (validate/experiment/sweep.py), 1 without a sweep
    topology: str  # of one run: every run of a sweep has the same roles
    gpus: int
    holds: int  # the GPUs counted against the namespace's quota: none when suspended, retired or
    # queued (Kueue admits a queued run against its ClusterQueue's quota instead)
    storage: str
    state: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def matches(self, namespace: str | None, owner: str | None, state: str | None) -> bool:
        """Whether the row passes `tfgen list`'s filters (None: not filtered on)."""
        for wanted, value in ((namespace, self.namespace), (owner, self.owner),
                              (state, self.state)):
            if wanted is not None and value != wanted:
                return False
        return True


def _role_words(role: str, replicas: int, each: int) -> str:
    """`2x1 GPU workers` (replicas x GPUs each), `1 master (2 GPUs)`, `3 workers`."""
    if replicas == 1:
        return f"1 {role} ({counted(each, 'GPU')})" if each else f"1 {role}"
    if each:
        return f"{replicas}x{each} GPU {PLURALS[role]}"
    return f"{replicas} {PLURALS[role]}"


def topology(spec: Any) -> str:
    """The roles of one run in words, e.g. `1 master (1 GPU), 2x1 GPU workers, 2 ps`."""
    present = dict(roles(spec if isinstance(spec, dict) else {}))
    words = []
    for role in naming.ROLES:
        if role in present:
            replicas, each = present[role].get("replicas", 1), present[role].get("gpus", 0)
            if isinstance(replicas, int) and isinstance(each, int):
                words.append(_role_words(role, replicas, each))
    return ", ".join(words)


def storage(spec: Any) -> str:
    nas, claim = lookup(spec, "storage", "nas"), lookup(spec, "storage", "existingClaim")
    if isinstance(nas, dict):
        return f"{nas.get('server') or '?'}:{nas.get('path', '?')}"
    return f"claim {claim}" if isinstance(claim, str) else "?"


def _counts(spec: Any) -> tuple[int, int, int]:
    """(runs, GPUs of one run, GPUs held of the namespace's quota); for a spec that is no
    mapping (a broken file, listed all the same), one run holding nothing."""
    if not isinstance(spec, dict):
        return 1, 0, 0
    return sweep.run_count(spec), gpus(spec), gpus(spec) if holds_quota(spec) else 0


def _cluster(data: Any, config: RepoConfig) -> str:
    try:
        return experiment_cluster(config, data if isinstance(data, dict) else {}).name
    except InputError:
        return "?"  # a spec.cluster that names no cluster: its problem is listed


def row(data: Any, config: RepoConfig) -> Row:
    spec = data.get("spec") if isinstance(data, dict) else None
    queue = lookup(spec, "queue")
    runs, run_gpus, holds = _counts(spec)
    return Row(
        name=str(lookup(data, "metadata", "name") or "?"),
        namespace=str(lookup(data, "metadata", "namespace") or "?"),
        cluster=_cluster(data, config),
        owner=str(lookup(data, "metadata", "owner") or "?"),
        runtime=runtimes.by_name(lookup(spec, "runtime")).name,
        queue=queue if isinstance(queue, str) else "",
        runs=runs,
        topology=topology(spec),
        gpus=run_gpus,
        holds=holds,
        storage=storage(spec),
        state=str(lookup(spec, "lifecycle") or chart.ACTIVE),
    )


def list_experiments(cwd: Path | None = None) -> tuple[list[Row], list[Problem]]:
    """Every experiment that loads, in file order, and every problem validate finds."""
    result = validate_repo(cwd=cwd)
    config = result.config
    assert config is not None
    rows = []
    for path in result.files:
        shown = layout.shown(path)
        try:
            checked, _ = check_file(path, shown, read_file(path, shown, config.root), config)
        except LoadError:
            continue  # its problem is in the result's
        if checked is not None:
            rows.append(row(checked.data, config))
    return rows, result.problems


def quota_lines(rows: list[Row], cwd: Path | None = None) -> list[str]:
    """Per namespace with a GPU quota: how much of it the listed experiments hold."""
    config = load_config(cwd=cwd)
    lines = []
    for namespace in sorted({r.namespace for r in rows}):
        quota = config.namespace_policy(namespace).get("gpuQuota")
        if isinstance(quota, int):
            held = sum(r.holds for r in rows if r.namespace == namespace)
            over = " (over quota: retire finished runs, `tfgen retire --finished`)" \
                if held > quota else ""
            lines.append(f"namespace {namespace}: {held} of {quota} GPUs of its quota held{over}")
    return lines


def table(rows: list[Row]) -> str:
    """An aligned text table with a header line; a sparse column only when a row fills it."""
    columns = _columns(rows)
    cells = [[c.upper() for c in columns]] + [[str(getattr(r, c)) for c in columns]
                                              for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
                     .rstrip() for line in cells)


def _columns(rows: list[Row]) -> list[str]:
    """The columns of the table: each of COLUMNS but a sparse one that no row fills."""
    return [c for c in COLUMNS if c not in SPARSE_COLUMNS
            or any(getattr(r, c) != SPARSE_COLUMNS[c] for r in rows)]
