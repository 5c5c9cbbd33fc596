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
from pathlib import Path

from ...errors import InputError
from ...problems import Problem
from ...repo import chart, layout
from ..documents.manifests import RenderedObject, parse_manifest
from ..helm.batch import BatchRenderer, RenderJob
from ..objects.verdict import AppObjects
from . import base
from .livechanges import immutability_changes


def _volume(objects: Sequence[RenderedObject]) -> RenderedObject | None:
    return next((o for o in objects if o.kind == chart.VOLUME), None)


def retained_problems(root: Path, ref: str, rendered: Sequence[AppObjects], kube_version: str,
                      renderer: BatchRenderer) -> list[Problem]:
    """Each experiment new since `ref` whose PV takes the name of one a deleted experiment
    left in the cluster, with another source."""
    deleted = base.deleted_files(root, ref, layout.GENERATED_DIR)
    pending = []
    for item in rendered:
        values_rel = layout.generated_paths(item.app.name)[0]
        if values_rel in deleted and base.file_at(root, ref, values_rel) is None:
            new_pv = _volume(item.objects)
            if new_pv is not None:
                pending.append((item, new_pv, values_rel, deleted[values_rel]))
    if not pending:
        return []
    out = []
    with tempfile.TemporaryDirectory(prefix="tfgen-deleted-") as tmp:
        jobs = []
        for index, (item, _, values_rel, revision) in enumerate(pending):
            values = Path(tmp) / f"{index}.yaml"
            values.write_bytes(base.file_at(root, revision, values_rel) or b"")
            jobs.append(RenderJob(name=item.app.release_name, namespace=item.app.namespace,
                                  chart=item.app.chart_dir, values_files=(values,),
                                  kube_version=kube_version))
        results = renderer.render(jobs)
    for (item, new_pv, _, revision), result in zip(pending, results, strict=True):
        try:
            old_pv = None if result.error else _volume(parse_manifest(result.manifest))
        except InputError:
            old_pv = None
        if old_pv is None or old_pv.name != new_pv.name:
            continue
        changes = immutability_changes([old_pv], [new_pv])
        if changes:
            was = ", ".join(f"{c.pointer.removeprefix('$.spec.')} {c.change}" for c in changes)
            commit = revision.rstrip("^")[:12]
            out.append(new_pv.problem(
                item.path, "$.spec", f"a PersistentVolume of this name was left in the cluster "
                f"when experiment {item.app.name} was deleted (after commit {commit}): "
                f"reclaim policy Retain, Delete=false; its source differs ({was}), and a PV's "
                "source cannot change", "the retained PV must be removed by an administrator "
                f"first (`kubectl delete pv {new_pv.name}` once its data is safe), or give this "
                "experiment another name"))
    return out
