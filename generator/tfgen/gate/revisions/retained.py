"""PersistentVolumes that deleted experiments left in the cluster (`tfgen check --base`).

A PV is `Retain` with `Prune=false,Delete=false`: when an experiment is deleted (`tfgen retire
--delete`, then `argocd app delete`), its PV and claim stay in the cluster with the data, as
`tfgen diff` says ("kept"). A later experiment that renders a PV of the same name with another
source (NAS server, path, driver) would meet the retained one: Kubernetes refuses to change a
PV's source, and Argo CD would report the Application out of sync for good. The deleted
experiments are found in the history of the base revision (their generated values files'
deletions), each rendered from its last values with today's chart, and its PV compared with the
new one as a live run's would be (`livechanges`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ...problems import Problem
from ...repo import chart, layout
from ..documents.manifests import RenderedObject, parse_manifest
from ..helm.batch import BatchRenderer
from ..helm.jobs import RenderResult, job_for
from ..objects.verdict import AppObjects
from . import base
from .livechanges import Immutable, immutability_changes


def _volume(objects: Sequence[RenderedObject]) -> RenderedObject | None:
    return next((o for o in objects if o.kind == chart.VOLUME), None)


@dataclass(frozen=True)
class _Reused:
    """An experiment new since the base that takes a deleted experiment's name and renders a
    PV: its generated values file, and the last commit that held it (`base.deleted_files`)."""

    item: AppObjects
    new_pv: RenderedObject
    values_rel: str
    revision: str


def retained_problems(root: Path, ref: str, rendered: Sequence[AppObjects], kube_version: str,
                      renderer: BatchRenderer) -> list[Problem]:
    """Each experiment new since `ref` whose PV takes the name of one a deleted experiment
    left in the cluster, with another source."""
    pending = _reused_names(root, ref, rendered)
    if not pending:
        return []
    results = _render_deleted(root, pending, kube_version, renderer)
    out = []
    for reused, result in zip(pending, results, strict=True):
        old_pv = _old_volume(result)
        if old_pv is None or old_pv.name != reused.new_pv.name:
            continue
        changes = immutability_changes([old_pv], [reused.new_pv])
        if changes:
            out.append(_retained_problem(reused, changes))
    return out


def _reused_names(root: Path, ref: str, rendered: Sequence[AppObjects]) -> list[_Reused]:
    """The experiments rendered now whose generated values file some commit up to `ref`
    deleted and `ref` does not hold, and that render a PV."""
    deleted = base.deleted_files(root, ref, layout.GENERATED_DIR)
    found = []
    for item in rendered:
        values_rel = layout.generated_paths(item.app.name)[0]
        if values_rel not in deleted or base.file_at(root, ref, values_rel) is not None:
            continue
        new_pv = _volume(item.objects)
        if new_pv is not None:
            found.append(_Reused(item, new_pv, values_rel, deleted[values_rel]))
    return found


def _render_deleted(root: Path, pending: Sequence[_Reused], kube_version: str,
                    renderer: BatchRenderer) -> list[RenderResult]:
    """Each deleted experiment rendered from its last values with today's chart."""
    with tempfile.TemporaryDirectory(prefix="tfgen-deleted-") as tmp:
        jobs = []
        for index, reused in enumerate(pending):
            item = reused.item
            values = Path(tmp) / f"{index}.yaml"
            values.write_bytes(base.file_at(root, reused.revision, reused.values_rel) or b"")
            jobs.append(job_for(item.app, kube_version, (values,)))
        return renderer.render(jobs)


def _old_volume(result: RenderResult) -> RenderedObject | None:
    """The PV a deleted experiment's last values render; None when they do not render."""
    try:
        return None if result.error else _volume(parse_manifest(result.manifest))
    except InputError:
        return None


def _retained_problem(reused: _Reused, changes: Sequence[Immutable]) -> Problem:
    """The new PV meets the one its name's deleted experiment left, with another source."""
    item, new_pv = reused.item, reused.new_pv
    was = ", ".join(f"{c.pointer.removeprefix('$.spec.')} {c.change}" for c in changes)
    commit = reused.revision.rstrip("^")[:12]
    return new_pv.problem(
        item.path, "$.spec", f"a PersistentVolume of this name was left in the cluster "
        f"when experiment {item.app.name} was deleted (after commit {commit}): "
        f"reclaim policy Retain, Delete=false; its source differs ({was}), and a PV's "
        "source cannot change", "the retained PV must be removed by an administrator "
        f"first (`kubectl delete pv {new_pv.name}` once its data is safe), or give this "
        "experiment another name")
