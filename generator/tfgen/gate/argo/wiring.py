"""Argo CD wiring: would every generated Application sync, and only what the project allows?

Checked against the committed argo/ files (what Argo CD reads), not against tfgen.yaml: each
Application the ApplicationSet generates must name an existing AppProject, a source repository
and destination that project allows, a chart path inside the repository (Argo CD refuses
absolute paths and paths leaving the repository), a release name Helm accepts; and every kind
its chart renders must be on the project's whitelists (PersistentVolume is the only
cluster-scoped kind an experiment may create). Violations here make Argo CD refuse a sync
that `helm template` alone would happily render.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...problems import Problem
from ...repo import layout, naming
from ..documents.manifests import RenderedObject
from .applications import ResolvedApplication

# Kinds Kubernetes serves cluster-wide: Argo CD checks them against clusterResourceWhitelist.
CLUSTER_SCOPED = {
    "APIService", "CSIDriver", "CSINode", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "IngressClass", "MutatingWebhookConfiguration", "Namespace",
    "Node", "PersistentVolume", "PriorityClass", "RuntimeClass", "StorageClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "VolumeAttachment",
}


@dataclass(eq=False)  # hashed by identity: what it allows is remembered per project (below)
class Project:
    """The parts of an AppProject that decide what its Applications may do."""

    name: str
    path: str
    source_repos: list[str]
    destinations: list[dict[str, Any]]
    cluster_whitelist: list[dict[str, Any]] | None
    cluster_blacklist: list[dict[str, Any]]
    namespace_whitelist: list[dict[str, Any]] | None
    namespace_blacklist: list[dict[str, Any]]

    @classmethod
    def from_object(cls, obj: RenderedObject, path: str) -> Project:
        spec = obj.doc.get("spec") or {}

        def entries(key: str) -> list[dict[str, Any]] | None:
            value = spec.get(key)
            return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else None

        return cls(
            name=obj.name,
            path=path,
            source_repos=[str(r) for r in spec.get("sourceRepos") or []],
            destinations=entries("destinations") or [],
            # Argo CD: no clusterResourceWhitelist = no cluster-scoped kind at all
            cluster_whitelist=entries("clusterResourceWhitelist") or [],
            cluster_blacklist=entries("clusterResourceBlacklist") or [],
            # ... but no namespaceResourceWhitelist = every namespaced kind
            namespace_whitelist=entries("namespaceResourceWhitelist"),
            namespace_blacklist=entries("namespaceResourceBlacklist") or [],
        )


def _glob_allowed(patterns: Iterable[str], value: str) -> bool:
    """Argo CD's project glob lists: a match of any pattern, unless a `!pattern` matches."""
    allowed = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(value, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(value, pattern):
            allowed = True
    return allowed


def _kind_listed(
    entries: Iterable[dict[str, Any]], group: str, kind: str, name: str | None = None
) -> bool:
    """An entry matches group and kind, and its `name` glob (Argo CD 3.3; none or empty: any
    name) matches `name`; `name=None` asks about the kind alone. Names of Kubernetes objects
    hold no `/`, so fnmatch and Go's filepath.Match agree on them."""
    return any(
        fnmatch.fnmatchcase(group, str(e.get("group", ""))) and
        fnmatch.fnmatchcase(kind, str(e.get("kind", ""))) and
        (name is None or not e.get("name") or fnmatch.fnmatchcase(name, str(e["name"])))
        for e in entries
    )


def kind_allowed(project: Project, group: str, kind: str, name: str | None = None) -> bool:
    """Whether Argo CD lets an Application of this project manage a kind (and, with `name`,
    that object: whitelist entries may narrow a kind to name patterns)."""
    if name is None or not _narrowed(project, group, kind):
        return _kind_allowed(project, group, kind)  # then the kind's answer is every object's
    return _allowed(project, group, kind, name)


# Worked out once per project and question: ten thousand experiments render the same few kinds
# into the same namespaces, and each answer costs dozens of glob matches.
@functools.lru_cache(maxsize=1024)
def _kind_allowed(project: Project, group: str, kind: str) -> bool:
    return _allowed(project, group, kind, None)


@functools.lru_cache(maxsize=1024)
def _narrowed(project: Project, group: str, kind: str) -> bool:
    """Whether an entry for this kind narrows it to name patterns (Argo CD 3.3)."""
    lists = (project.cluster_whitelist or [], project.cluster_blacklist,
             project.namespace_whitelist or [], project.namespace_blacklist)
    return any(_kind_listed([e for e in entries if e.get("name")], group, kind)
               for entries in lists)


def _allowed(project: Project, group: str, kind: str, name: str | None) -> bool:
    def denied(entries: list[dict[str, Any]]) -> bool:
        # asked about the kind alone, only a blacklist entry for every name denies it
        named = entries if name is not None else [e for e in entries if not e.get("name")]
        return _kind_listed(named, group, kind, name)

    if kind in CLUSTER_SCOPED:
        return (_kind_listed(project.cluster_whitelist or [], group, kind, name)
                and not denied(project.cluster_blacklist))
    if project.namespace_whitelist is not None and not _kind_listed(
        project.namespace_whitelist, group, kind, name
    ):
        return False
    return not denied(project.namespace_blacklist)


@functools.lru_cache(maxsize=1024)
def destination_allowed(project: Project, server: str, name: str, namespace: str) -> bool:
    """Whether a project destination allows an Application's. Offline nothing resolves an Argo
    CD cluster name to its server, so an Application that names its cluster needs an entry of
    that name, and one that gives a server an entry of that server."""
    if not server and not name:
        return False
    for dest in project.destinations:
        if server and not (dest.get("server") and _glob_allowed([str(dest["server"])], server)):
            continue
        if name and not (dest.get("name") and _glob_allowed([str(dest["name"])], name)):
            continue
        if _glob_allowed([str(dest.get("namespace", ""))], namespace):
            return True
    return False


def load_projects(argo_objects: Sequence[tuple[str, RenderedObject]]) -> dict[str, Project]:
    return {
        obj.name: Project.from_object(obj, path)
        for path, obj in argo_objects
        if obj.kind == "AppProject"
    }


@functools.lru_cache(maxsize=64)
def _chart_path_problem(repo_root: str, source_path: str) -> tuple[str, str] | None:
    """Argo CD's rule for a source path, checked once per distinct path (all Applications of
    the ApplicationSet share one)."""
    if source_path.startswith("/") or ".." in Path(source_path).parts:
        return (f"chart path {source_path!r} is absolute or leaves the repository (Argo CD "
                f"refuses it)", "a path relative to the repository root")
    if not (Path(repo_root) / source_path / "Chart.yaml").is_file():
        return f"chart path {source_path!r} holds no Chart.yaml", "charts/tfjob-experiment"
    return None


def forget_filesystem() -> None:
    """Drop what was learnt about files (a new run may see a changed repository)."""
    _chart_path_problem.cache_clear()


def applications_problems(repo_root: Path, applications: Sequence[ResolvedApplication],
                          projects: dict[str, Project],
                          elsewhere: Mapping[str, str] | None = None) -> list[Problem]:
    """Would every generated Application sync, each under its own name? `elsewhere`: the
    names of the Applications not judged here, and where each is generated from."""
    out: list[Problem] = []
    names: dict[str, str] = dict(elsewhere or {})
    for app in applications:
        where = layout.shown(app.generator_file)
        if app.name in names:
            out.append(Problem(where, pointer="$.metadata.name", message=(
                f"Application {app.name!r} is also generated from {names[app.name]}")))
        names[app.name] = where
        out += application_problems(repo_root, app, projects, where)
    return out


def application_problems(
    repo_root: Path, app: ResolvedApplication, projects: dict[str, Project], where: str
) -> list[Problem]:
    """Problems of one resolved Application."""
    out: list[Problem] = []
    if not app.name or len(app.release_name) > naming.MAX_RELEASE_NAME:
        out.append(Problem(where, pointer="$.metadata.name",
                           message=f"release name {app.release_name!r} is empty or longer "
                                   f"than {naming.MAX_RELEASE_NAME} characters (Helm refuses it)"))
    source_path = str(app.source_path)
    chart_problem = _chart_path_problem(str(repo_root), source_path)
    if chart_problem:
        out.append(Problem(where, pointer="$.spec.source.path", message=chart_problem[0],
                           hint=chart_problem[1]))
    project = projects.get(app.project)
    if project is None:
        out.append(Problem(where, pointer="$.spec.project",
                           message=f"project {app.project!r} is not defined in argo/",
                           hint=f"one of {', '.join(sorted(projects)) or '(none)'}"))
        return out
    if not _glob_allowed(project.source_repos, app.repo_url):
        out.append(Problem(where, pointer="$.spec.source.repoURL",
                           message=f"repository {app.repo_url!r} is not in the sourceRepos of "
                                   f"project {project.name!r}"))
    if not destination_allowed(project, app.destination_server, app.destination_name,
                               app.namespace):
        out.append(Problem(where, pointer="$.spec.destination.namespace",
                           message=f"destination namespace {app.namespace!r} is not allowed by "
                                   f"project {project.name!r} ({project.path})",
                           hint="add it to argocd.namespaces in tfgen.yaml, then `tfgen render`"))
    return out


def object_problems(
    objects: Sequence[RenderedObject], app: ResolvedApplication, project: Project | None,
    path: str,
) -> list[Problem]:
    """Every rendered kind on the project's whitelists; namespaced objects in allowed places."""
    if project is None:
        return []
    out: list[Problem] = []
    for obj in objects:
        group, kind, namespace, name = obj.key  # the API group as the identity has it
        cluster_scoped = kind in CLUSTER_SCOPED
        which = "clusterResourceWhitelist" if cluster_scoped else "namespaceResourceWhitelist"
        if not kind_allowed(project, group, kind):
            out.append(Problem(path, pointer=f"{obj.ref} $.kind",
                               message=f"kind {group or 'core'}/{kind} is not on the "
                                       f"{which} of project {project.name!r} ({project.path}); "
                                       f"Argo CD would refuse to sync it",
                               hint="render only kinds the project allows, or extend the "
                                    "project template deliberately"))
        elif not kind_allowed(project, group, kind, name):
            out.append(Problem(path, pointer=f"{obj.ref} $.metadata.name",
                               message=f"{kind} {name!r} matches none of the name "
                                       f"patterns of the {which} of project {project.name!r} "
                                       f"({project.path}); Argo CD would refuse to sync it",
                               hint="keep tfgen's names (<namespace>-<name>-data for volumes)"))
        if not cluster_scoped and namespace and not destination_allowed(
            project, app.destination_server, app.destination_name, namespace
        ):
            out.append(Problem(path, pointer=f"{obj.ref} $.metadata.namespace",
                               message=f"namespace {namespace!r} is not a destination of "
                                       f"project {project.name!r}"))
    return out
