"""`tfgen diff --base REF`: what a pull request changes in the cluster, object by object.

The experiments touched since REF (or those named) are rendered twice with the real helm, as
Argo CD would render them before and after the merge (the base tree exported by `base`, both
sides through the cached batch renderer), and their objects are paired by kind, namespace and
name. Each experiment is added, removed or changed, with the GPUs it requests on each side
(`gpus`); each added, removed or changed object becomes one unified diff of helm's own YAML.
How this is shown (a summary table, the full diffs on request, text or one pull-request
comment) is `report`'s job.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import InputError, OptionsError
from ...problems import Problem, errors_of
from ...repo import layout, naming
from ...repo.cache import CACHE_DIRNAME, Cache
from ...validate import RepoConfig, load_config, validate_repo
from ...validate.yaml.loader import load_file
from ..argo.applications import ResolvedApplication, resolve_applications
from ..documents.manifests import documents, parse_manifest
from ..helm.batch import BatchRenderer
from ..helm.command import find_helm
from ..helm.jobs import RenderResult, jobs_for
from ..objects.policy import kept_by_argo
from ..revisions import base, immutability, moves
from .gpus import (
    GpuRequest,
    NamespaceGpus,
    gpu_table,
    gpus_at,
    gpus_by_experiment,
    gpus_by_namespace,
)


@dataclass
class ObjectDiff:
    """One object that differs between the base and now."""

    experiment: str
    kind: str
    namespace: str
    name: str
    status: str  # added | removed | changed | kept (left in the cluster: Prune/Delete=false)
    diff: str

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class ExperimentChange:
    """One experiment whose objects differ: added, removed or changed, and the GPUs its active
    spec requests before and after (None: no such spec on that side, or not readable), queued
    or not; `queued`: a Kueue queue admits it (now, or at the base when it is removed)."""

    name: str
    status: str  # added | removed | changed
    gpus_before: int | None
    gpus_after: int | None
    queued: bool = False
    # what a started run cannot take of the change, as `tfgen check --base` refuses it
    refused: tuple[Problem, ...] = ()
    # the cluster its runs go to on each side (`moves.cluster_words`; None: no such side)
    cluster_before: str | None = None
    cluster_after: str | None = None


@dataclass(frozen=True)
class CopyDiff:
    """An added experiment that records its source (`tfgen new --from`, `tfgen rerun`): the
    unified diff of the source's spec (at the base, else now) against the copy's."""

    name: str
    source: str
    diff: str


@dataclass
class DiffResult:
    base: str
    experiments: list[str] = field(default_factory=list)  # those whose objects differ
    changes: list[ExperimentChange] = field(default_factory=list)  # the same, described
    diffs: list[ObjectDiff] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    gpus: list[NamespaceGpus] = field(default_factory=list)
    copies: list[CopyDiff] = field(default_factory=list)


ObjectId = tuple[str, str, str]  # kind, namespace, name
Place = tuple[ResolvedApplication, dict[str, Any]]  # an Application, its app.yaml's parameters


def _documents(manifest: str) -> tuple[dict[ObjectId, str], set[ObjectId]]:
    """(kind, namespace, name) -> the document's YAML as helm printed it (minus `# Source:`),
    and those Argo CD keeps in the cluster once they leave Git (`policy.kept_by_argo`)."""
    out: dict[ObjectId, str] = {}
    kept: set[ObjectId] = set()
    for _, body in documents(manifest):
        for obj in parse_manifest(body):
            out[(obj.kind, obj.namespace, obj.name)] = body
            if kept_by_argo(obj):
                kept.add((obj.kind, obj.namespace, obj.name))
    return out, kept


def diff_manifests(experiment: str, before: str, after: str) -> list[ObjectDiff]:
    """Per-object unified diffs between two rendered manifests of one experiment. An object
    that leaves the rendering but that Argo CD keeps (the PV and PVC) is `kept`: the cluster
    keeps it, with its data, whether the spec is retired or deleted."""
    (old, keeps), (new, _) = _documents(before), _documents(after)
    out = []
    for key in sorted(set(old) | set(new)):
        kind, namespace, name = key
        label = f"{kind}/{namespace + '/' if namespace else ''}{name}"
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        status = _object_status(a, b, kept=key in keeps)
        text = "".join(difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
            f"a/{label}" if a is not None else "/dev/null",
            f"b/{label}" if b is not None else "/dev/null",
        ))
        out.append(ObjectDiff(experiment, kind, namespace, name, status, text))
    return out


def _object_status(before: str | None, after: str | None, *, kept: bool) -> str:
    """How an object that differs changes; one removed from Git that Argo CD keeps is `kept`."""
    if before is None:
        return "added"
    if after is not None:
        return "changed"
    return "kept" if kept else "removed"


def _render(
    renderer: BatchRenderer, apps: Sequence[ResolvedApplication], kube: str
) -> dict[str, RenderResult]:
    return {r.job.name: r for r in renderer.render(jobs_for(apps, kube))}


@dataclass(frozen=True)
class _Gpus:
    """The GPUs each experiment requests (`gpus_by_experiment`) at the base and now; `before`
    is None when the base's tfgen.yaml is not valid (its GPUs are unknown)."""

    before: dict[str, GpuRequest] | None
    now: dict[str, GpuRequest]

    def table(self, config: RepoConfig) -> list[NamespaceGpus]:
        """The namespaces' GPUs on both sides (`gpu_table`)."""
        before = None if self.before is None else gpus_by_namespace(self.before)
        return gpu_table(config, before, gpus_by_namespace(self.now))

    def change(self, name: str, status: str, refused: Sequence[Problem] = (),
               clusters: tuple[str | None, str | None] = (None, None)) -> ExperimentChange:
        """The experiment's change, with the GPUs it requests and the cluster it goes to on
        each side."""
        old = None if self.before is None else self.before.get(name)
        new = self.now.get(name)
        shown = new or old
        return ExperimentChange(name, status, None if old is None else old.gpus,
                                None if new is None else new.gpus,
                                queued=shown is not None and shown.queued,
                                refused=tuple(refused), cluster_before=clusters[0],
                                cluster_after=clusters[1])


def _in_scope(apps: Sequence[ResolvedApplication], scope: set[str] | None
              ) -> list[ResolvedApplication]:
    """The Applications of the experiments in scope (all of them when the scope is None)."""
    return [a for a in apps if scope is None or a.name in scope]


@dataclass
class _Sides:
    """The experiments in scope rendered at the base and now, what the added copies change in
    their sources' specs, and the specs at the base (by experiment name, those now in scope
    that the base has: what a refusal compares)."""

    before: dict[str, RenderResult]
    after: dict[str, RenderResult]
    copies: list[CopyDiff]
    base_specs: dict[str, Any]
    # each experiment's Application and its app.yaml's parameters, at the base and now
    places_before: dict[str, Place] = field(default_factory=dict)
    places_after: dict[str, Place] = field(default_factory=dict)


def _render_sides(
    root: Path, ref: str, renderer: BatchRenderer, kube: str, names: Sequence[str],
) -> _Sides:
    """The experiments in scope (touched since `ref`, only those in `names` when given)
    rendered at `ref` and now, and what the added copies change in their sources' specs."""
    scope = base.changed_experiments(root, ref)
    now_all = resolve_applications(root).applications
    with base.tree_at(root, ref) as tree:
        base_all = resolve_applications(tree).applications
        if names:
            _known(names, {a.name for a in (*now_all, *base_all)}, ref)
            scope = set(names) if scope is None else scope & set(names)
        before = {name: _at_ref(result, tree, ref)
                  for name, result in _render(renderer, _in_scope(base_all, scope), kube).items()}
        now_apps = _in_scope(now_all, scope)
        existing = {a.name for a in base_all}
        copies = copy_diffs(root, tree, [a.name for a in now_apps if a.name not in existing])
        base_specs = {a.name: _spec_data(tree / layout.spec_rel(a.name)) for a in now_apps
                      if a.name in existing}
        places_before = {a.name: (a, moves.params(a)) for a in _in_scope(base_all, scope)}
    return _Sides(before, _render(renderer, now_apps, kube), copies, base_specs, places_before,
                  {a.name: (a, moves.params(a)) for a in now_apps})


def _at_ref(result: RenderResult, tree: Path, ref: str) -> RenderResult:
    """A base render whose error names the base's files as `REF:path`, as git does, not by
    the temporary folder they were exported to (gone once the diff is made)."""
    if not result.error:
        return result
    return replace(result, error=result.error.replace(f"{tree}{os.sep}", f"{ref}:"))


def _spec_data(path: Path) -> Any:
    """A spec's data; None when it is not there or does not read."""
    try:
        return load_file(path).data
    except (InputError, OSError):
        return None


def _helm_problems(name: str, old: RenderResult | None, new: RenderResult | None
                   ) -> list[Problem]:
    """helm's error on either side of one experiment, as problems (its objects are then not
    diffed)."""
    problems = []
    for side, rendered in (("base", old), ("now", new)):
        if rendered is not None and rendered.error:
            problems.append(Problem(
                layout.generated_folder(name), pointer=f"helm template ({side})",
                message=" ".join(rendered.error.split())))
    return problems


def _compare(result: DiffResult, name: str, sides: _Sides, gpus: _Gpus, root: Path) -> None:
    """Add to `result` one experiment's helm errors, else its object diffs and its change,
    with what `tfgen check --base` would refuse of it."""
    old, new = sides.before.get(name), sides.after.get(name)
    problems = _helm_problems(name, old, new)
    result.problems += problems
    if problems:
        return
    diffs = diff_manifests(name, old.manifest if old else "", new.manifest if new else "")
    was, goes = sides.places_before.get(name), sides.places_after.get(name)
    move = was is not None and goes is not None and moves.moved(was[0], goes[0])
    if diffs or move:
        result.experiments.append(name)
        result.diffs += diffs
        status = "added" if old is None else "removed" if new is None else "changed"
        refused = []
        spec_path = layout.shown(root / layout.spec_rel(name))
        if old is not None and new is not None:
            refused = immutability.refusals(old.manifest, new.manifest, spec_path,
                                            sides.base_specs.get(name), name)
        if move and was is not None and goes is not None:
            refused.append(moves.move_problem(spec_path, *was, *goes))
        clusters = tuple(None if place is None else moves.cluster_words(*place)
                         for place in (was, goes))
        result.changes.append(gpus.change(name, status, refused, (clusters[0], clusters[1])))


def run_diff(
    root: Path, ref: str, *, use_cache: bool = True, helm: str | None = None,
    names: Sequence[str] = (),
) -> DiffResult:
    """Render the experiments touched since `ref` (only those in `names`, when given) on both
    sides and diff their objects.

    Invalid specs now are problems and nothing is diffed: argo/ cannot be rendered from them,
    so a diff of the committed files would say "no changes" about a change that cannot merge.
    A name that is an experiment on neither side is an OptionsError.
    """
    config = load_config(cwd=root)
    root = config.root
    base.resolve(root, ref)  # a bad --base is a usage error before any work
    gpus = _Gpus(gpus_at(root, ref), gpus_by_experiment(config))
    table = gpus.table(config)
    specs = validate_repo(cwd=root)
    if errors_of(specs.problems):  # (warnings leave the diff whole: `tfgen check` says them)
        return DiffResult(base=ref, problems=errors_of(specs.problems), gpus=table)
    cache = Cache(root / CACHE_DIRNAME if use_cache else None)
    renderer = BatchRenderer(helm=helm or find_helm(root=root), cache=cache)
    result = DiffResult(base=ref, gpus=table)
    sides = _render_sides(root, ref, renderer, config.kubernetes_version, names)
    result.copies = sides.copies
    for name in sorted(set(sides.before) | set(sides.after)):
        _compare(result, name, sides, gpus, root)
    return result


def _source_of(spec: Path) -> str | None:
    """The experiment a spec records as its source (naming.SOURCE_ANNOTATIONS), if any."""
    try:
        data = load_file(spec).data
    except (InputError, OSError):
        return None
    metadata = data.get("metadata") if isinstance(data, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return None
    found = next((annotations[k] for k in naming.SOURCE_ANNOTATIONS if k in annotations), None)
    return found if isinstance(found, str) and naming.is_experiment_name(found) else None


def copy_diffs(root: Path, tree: Path, added: Sequence[str]) -> list[CopyDiff]:
    """What each added experiment that is a copy changes in its source's spec."""
    out = []
    for name in added:
        rel = layout.spec_rel(name)
        source = _source_of(root / rel)
        if source is None:
            continue
        source_rel = layout.spec_rel(source)
        original = next((p for p in (tree / source_rel, root / source_rel) if p.is_file()), None)
        if original is None:
            continue
        text = "".join(difflib.unified_diff(
            original.read_text(encoding="utf-8").splitlines(keepends=True),
            (root / rel).read_text(encoding="utf-8").splitlines(keepends=True),
            f"a/{source_rel}", f"b/{rel}"))
        out.append(CopyDiff(name, source, text))
    return out


def _known(names: Sequence[str], experiments: set[str], ref: str) -> None:
    """Every name given is an experiment at `ref` or now."""
    unknown = [name for name in names if name not in experiments]
    if unknown:
        raise OptionsError(f"{', '.join(unknown)}: no experiment of that name at {ref} or now "
                           "(give names of experiments/<name>.yaml, or their files)")


def experiment_names(arguments: Sequence[str]) -> list[str]:
    """The experiments a person named, each as a name or a spec file (`layout.experiment_path`);
    a bare name whose spec is gone stays a name: it may be an experiment the change removes."""
    names = []
    for argument in arguments:
        try:
            names.append(layout.experiment_path(argument).stem)
        except OptionsError:
            if not naming.is_experiment_name(argument):
                raise
            names.append(argument)
    return list(dict.fromkeys(names))
