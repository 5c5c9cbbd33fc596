"""`tfgen diff --base REF`: what a pull request changes in the cluster, object by object.

The experiments touched since REF are rendered twice with the real helm, as Argo CD would
render them before and after the merge (the base tree exported by `base`, both sides
through the cached batch renderer), and their objects are paired by kind, namespace and name.
Each added, removed or changed object becomes one unified diff of helm's own YAML. Text output
is for terminals; Markdown output is one pull-request comment, opening with a marker line and a
table of the GPUs each namespace requests before and after, against its quota, so a
workflow can find and update the comment it posted before, and cut to fit GitHub's comment
size limit with a note saying what was left out.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..problems import Problem
from ..repo import layout
from ..validate import RepoConfig, load_config, team, validate_repo
from ..validate.experiments import check_file
from ..validate.loader import LoadError, read_file
from . import DIFF_FORMATS, base
from .applications import ResolvedApplication, resolve_applications
from .batch import BatchRenderer, RenderResult, jobs_for
from .cache import CACHE_DIRNAME, Cache
from .helm import find_helm
from .manifests import documents, parse_manifest

COMMENT_MARKER = "<!-- tfgen-diff -->"
# GitHub refuses comments over 65,536 characters; leave room for the header and notes.
MAX_MARKDOWN_CHARS = 60_000
MAX_OBJECT_LINES = 300


@dataclass
class ObjectDiff:
    """One object that differs between the base and now."""

    experiment: str
    kind: str
    namespace: str
    name: str
    status: str  # added | removed | changed
    diff: str

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class NamespaceGpus:
    """GPUs a namespace's active experiments request before and after the change (None: the
    base could not be read), and its quota now (None: no quota)."""

    namespace: str
    before: int | None
    after: int
    quota: int | None


@dataclass
class DiffResult:
    base: str
    experiments: list[str] = field(default_factory=list)  # those whose objects differ
    diffs: list[ObjectDiff] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    gpus: list[NamespaceGpus] = field(default_factory=list)


def gpus_by_namespace(config: RepoConfig) -> dict[str, int]:
    """GPUs requested by each namespace's active experiments, from every spec that loads (an
    invalid one counts too: an experiment over quota is exactly what the table must show)."""
    totals: dict[str, int] = {}
    for path in layout.spec_files(config.experiments_dir):
        shown = layout.shown(path)
        try:
            checked, _ = check_file(path, shown, read_file(path, shown, config.root), config)
        except LoadError:
            continue
        data = checked.data if checked is not None else None
        spec = data.get("spec") if isinstance(data, dict) else None
        namespace = (data.get("metadata") or {}).get("namespace") if data else None
        if not isinstance(spec, dict) or not isinstance(namespace, str):
            continue
        if team.active(spec):
            totals[namespace] = totals.get(namespace, 0) + team.gpus(spec)
    return totals


def gpu_table(config: RepoConfig, before: dict[str, int] | None) -> list[NamespaceGpus]:
    """One row per namespace that requests GPUs on either side or has a quota."""
    after = gpus_by_namespace(config)
    quotas = {ns: config.namespace_policy(ns).get("gpuQuota") for ns in config.data["policy"]}
    names = set(after) | set(before or {}) | {ns for ns, q in quotas.items() if q is not None}
    rows = []
    for ns in sorted(names):
        old = None if before is None else before.get(ns, 0)
        new, quota = after.get(ns, 0), quotas.get(ns)
        if old or new or quota is not None:
            rows.append(NamespaceGpus(ns, old, new, quota))
    return rows


def _documents(manifest: str) -> dict[tuple[str, str, str], str]:
    """(kind, namespace, name) -> the document's YAML as helm printed it (minus `# Source:`)."""
    out: dict[tuple[str, str, str], str] = {}
    for _, body in documents(manifest):
        for obj in parse_manifest(body):
            out[(obj.kind, obj.namespace, obj.name)] = body
    return out


def diff_manifests(experiment: str, before: str, after: str) -> list[ObjectDiff]:
    """Per-object unified diffs between two rendered manifests of one experiment."""
    old, new = _documents(before), _documents(after)
    out = []
    for key in sorted(set(old) | set(new)):
        kind, namespace, name = key
        label = f"{kind}/{namespace + '/' if namespace else ''}{name}"
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        status = "added" if a is None else "removed" if b is None else "changed"
        text = "".join(difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
            f"a/{label}" if a is not None else "/dev/null",
            f"b/{label}" if b is not None else "/dev/null",
        ))
        out.append(ObjectDiff(experiment, kind, namespace, name, status, text))
    return out


def _render(
    renderer: BatchRenderer, apps: Sequence[ResolvedApplication], kube: str
) -> dict[str, RenderResult]:
    return {r.job.name: r for r in renderer.render(jobs_for(apps, kube))}


def run_diff(
    root: Path, ref: str, *, use_cache: bool = True, helm: str | None = None
) -> DiffResult:
    """Render the experiments touched since `ref` on both sides and diff their objects.

    Invalid specs now are problems and nothing is diffed: argo/ cannot be rendered from them,
    so a diff of the committed files would say "no changes" about a change that cannot merge.
    """
    config = load_config(cwd=root)
    root = config.root
    base.resolve(root, ref)  # a bad --base is a usage error before any work
    with base.tree_at(root, ref) as tree:
        try:
            base_gpus: dict[str, int] | None = gpus_by_namespace(load_config(cwd=tree))
        except InputError:  # the base's tfgen.yaml is not valid: its GPUs are unknown
            base_gpus = None
    table = gpu_table(config, base_gpus)
    specs = validate_repo(cwd=root)
    if specs.problems:
        return DiffResult(base=ref, problems=list(specs.problems), gpus=table)
    cache = Cache(root / CACHE_DIRNAME if use_cache else None)
    renderer = BatchRenderer(helm=helm or find_helm(root=root), cache=cache)
    scope = base.changed_experiments(root, ref)
    result = DiffResult(base=ref, gpus=table)
    now_apps = [a for a in resolve_applications(root).applications
                if scope is None or a.name in scope]
    with base.tree_at(root, ref) as tree:
        base_apps = [a for a in resolve_applications(tree).applications
                     if scope is None or a.name in scope]
        before = _render(renderer, base_apps, config.kubernetes_version)
    after = _render(renderer, now_apps, config.kubernetes_version)
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        for side, rendered in (("base", old), ("now", new)):
            if rendered is not None and rendered.error:
                result.problems.append(Problem(
                    layout.generated_folder(name), pointer=f"helm template ({side})",
                    message=" ".join(rendered.error.split())))
        if (old and old.error) or (new and new.error):
            continue
        diffs = diff_manifests(name, old.manifest if old else "", new.manifest if new else "")
        if diffs:
            result.experiments.append(name)
            result.diffs += diffs
    return result


def _clip(text: str, max_lines: int) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) <= max_lines:
        return text
    return "".join(lines[:max_lines]) + f"... {len(lines) - max_lines} more diff lines\n"


def _counts(result: DiffResult) -> str:
    by = {s: sum(1 for d in result.diffs if d.status == s) for s in ("added", "changed",
                                                                     "removed")}
    n = len(result.experiments)
    return (f"{n} experiment{'s' if n != 1 else ''} changed: {by['added']} object(s) added, "
            f"{by['changed']} changed, {by['removed']} removed")


def _gpu_rows(rows: Sequence[NamespaceGpus]) -> list[str]:
    """The Markdown GPU table, first thing a reviewer sees: who asks for how many GPUs."""
    if not rows:
        return []
    out = ["| Namespace | GPUs before | GPUs after | Quota |", "| --- | ---: | ---: | ---: |"]
    for row in rows:
        before = "?" if row.before is None else str(row.before)
        change = ""
        if row.before is not None and row.after != row.before:
            change = f" ({row.after - row.before:+d})"
        quota = "none" if row.quota is None else str(row.quota)
        over = " **over quota**" if row.quota is not None and row.after > row.quota else ""
        out.append(f"| `{row.namespace}` | {before} | {row.after}{change}{over} | {quota} |")
    return [*out, ""]


def format_diff(result: DiffResult, fmt: str, *, max_chars: int = MAX_MARKDOWN_CHARS,
                max_object_lines: int = MAX_OBJECT_LINES) -> str:
    """The diff for people (`text`) or for a pull-request comment (`markdown`)."""
    if fmt not in DIFF_FORMATS:
        raise InputError(f"--format {fmt}: one of {', '.join(DIFF_FORMATS)}")
    if fmt == "text":
        if not result.diffs:
            return f"no rendered object changes against {result.base}"
        parts = [_counts(result)]
        for d in result.diffs:
            parts.append(f"=== {d.experiment}: {d.ref} {d.status}\n"
                         + _clip(d.diff, max_object_lines).rstrip("\n"))
        return "\n".join(parts)
    head = [COMMENT_MARKER, f"### tfgen diff against `{result.base}`", ""]
    head += _gpu_rows(result.gpus)
    if not result.diffs:
        head.append("No rendered object changes.")
        return "\n".join(head) + "\n"
    head += [_counts(result) + ".", ""]
    out = "\n".join(head) + "\n"
    shown = 0
    for d in result.diffs:
        block = (f"<details><summary><code>{d.experiment}</code>: {d.ref} "
                 f"<b>{d.status}</b></summary>\n\n````diff\n"
                 f"{_clip(d.diff, max_object_lines).rstrip()}\n````\n</details>\n")
        if len(out) + len(block) > max_chars:
            break
        out += block
        shown += 1
    if shown < len(result.diffs):
        out += (f"\n_{len(result.diffs) - shown} more object diff(s) not shown (comment size "
                f"limit); run `tfgen diff --base {result.base}` locally._\n")
    return out
