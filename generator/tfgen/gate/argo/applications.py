"""The Applications Argo CD would create from the committed argo/, resolved as it would.

`resolve_applications` reads the committed ApplicationSet and the app.yaml files its git files
generator matches, and produces the Applications the controller would generate: Go-template
placeholders substituted with missing keys as errors, value files resolved against the chart
path under Argo CD's rules, the controller's own namespace and finalizer. The gate renders and
checks exactly these, so what it passes is what the cluster gets. A generator file that is
not in the writer's canonical form is reported and not resolved: the controller reads it with
go-yaml v2 (YAML 1.1), and only the canonical form is proven to mean the same there.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import yaml

from ...problems import Problem
from ...render.generated import read_canonical
from ...render.plan import RENDER_HINT
from ...repo import layout
from ...repo.files import look_below
from ...repo.keys import content_hash
from ..documents.kubeyaml import load_document, reading_problem
from .gotemplate import TemplateError, compiled


@dataclass
class ResolvedApplication:
    """One Application as the ApplicationSet controller would generate it."""

    name: str
    namespace: str
    project: str
    repo_url: str
    target_revision: str
    source_path: str
    release_name: str
    chart_dir: Path
    value_files: list[Path]
    manifest_generate_paths: list[str]
    generator_file: Path
    # where it deploys: the project's destinations must allow it
    destination_server: str
    destination_name: str


@dataclass
class Resolution:
    """Every Application the committed argo/ would produce, and every problem on the way."""

    applications: list[ResolvedApplication]
    problems: list[Problem]


def _generator_params(data: Mapping[str, Any], rel_path: str) -> dict[str, Any]:
    # The git files generator adds `path` (goTemplate form) next to the file's own keys.
    # `rel_path` is below argo/ (so it has a folder), taken apart as a string: pathlib would
    # be most of the cost for ten thousand files.
    folder, _, filename = rel_path.rpartition("/")
    basename = folder.rpartition("/")[2]
    params = dict(data)
    params["path"] = {
        "path": folder,
        "basename": basename,
        "filename": filename,
        "basenameNormalized": _NOT_NORMALIZED.sub("-", basename.lower()),
        "filenameNormalized": _NOT_NORMALIZED.sub("-", filename.lower()),
        "segments": folder.split("/"),
    }
    return params


_NOT_NORMALIZED = re.compile(r"[^a-z0-9-.]")  # what the generator's *Normalized turn into "-"


def resolve_value_file(repo_root: Path, chart_dir: Path, value_file: str) -> Path:
    """Argo CD's rule: relative to the chart path, `/`-rooted = repository root, joined as
    text (`..` goes up the path as written, as Go's filepath.Join does), and refused when that
    leaves the repository. The file so named is followed through its links, and refused too
    when they lead out of the repository: stricter than Argo CD, which follows only a link at
    the end, so that no link takes helm out of the repository. ValueError when refused."""
    return Path(_real_value_file(os.path.realpath(repo_root), chart_dir, value_file))


def _real_value_file(real_root: str, chart_dir: Path, value_file: str) -> str:
    """`resolve_value_file` for the repository whose real path is `real_root`, on strings:
    pathlib's parsing would be most of the cost for ten thousand Applications."""
    joined = os.path.normpath(
        os.path.join(real_root, value_file.lstrip("/")) if value_file.startswith("/")
        else os.path.join(chart_dir, value_file))
    # below the real root with no link on the way down, a path is its own real path
    resolved = (joined if look_below(joined, real_root) is not None
                else os.path.realpath(joined))
    inside = real_root.rstrip(os.sep) + os.sep
    for path in (joined, resolved):
        if path != real_root and not path.startswith(inside):
            raise ValueError(f"value file {value_file!r} resolves outside the repository")
    return resolved


def _map(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one: the committed files are read as they
    are, and a wrong shape is the strict schemas' to report (objects.argo_objects), not a
    reason to stop resolving."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _git_file_globs(appset: Mapping[str, Any]) -> tuple[list[str], list[Problem]]:
    globs: list[str] = []
    problems: list[Problem] = []
    for generator in _list(_map(appset.get("spec")).get("generators")):
        files = _list(_map(_map(generator).get("git")).get("files"))
        if not files:
            problems.append(Problem(layout.APPLICATIONSET_FILE, pointer="$.spec.generators",
                                    message="only git files generators are supported"))
            continue
        globs += [str(_map(entry).get("path")) for entry in files
                  if _map(entry).get("path") and not _map(entry).get("exclude")]
    return globs, problems


def _glob_match(pattern: str, path: str) -> bool:
    # Go's filepath.Match: `*` never crosses a `/`; compare segment by segment.
    pattern_parts, path_parts = pattern.split("/"), path.split("/")
    return len(pattern_parts) == len(path_parts) and all(
        fnmatch.fnmatchcase(part, pat) for pat, part in zip(pattern_parts, path_parts, strict=True)
    )


class KnownApplications(Protocol):
    """Applications resolved by earlier runs, by the content they were resolved from (the
    gate keeps them in its cache): a generator file one of them answers for is not read."""

    def recall(self, appset: str, rels: Sequence[str]) -> Mapping[str, ResolvedApplication]:
        """Those known for the generator files `rels` as the run has them, generated by the
        ApplicationSet whose content hash is `appset`."""

    def remember(self, appset: str, rel: str, content: str,
                 application: ResolvedApplication) -> None:
        """`application`, resolved from the generator file `rel` whose content hash is
        `content`, generated by the ApplicationSet whose content hash is `appset`."""


def resolve_applications(
    repo_root: Path, remembered: KnownApplications | None = None,
    among: Collection[str] | None = None,
) -> Resolution:
    """Every Application that argo/applicationset.yaml generates from the committed files;
    those `remembered` recalls are not resolved again (a generator file that does not resolve
    is never remembered: its problems are found anew). `among`: repository-relative files,
    the only ones looked at (those the generator's globs match): the gate's check of the
    experiments changed since its last run (`ledger`)."""
    repo_root = repo_root.resolve()
    problems: list[Problem] = []
    applications = []
    source = _source(repo_root, problems)
    if source is None:
        return Resolution([], problems)
    rels = _files_to_resolve(repo_root, source.globs, among)
    known = remembered.recall(source.content, rels) if remembered else {}
    for rel in rels:
        resolved = known.get(rel)
        if resolved is None:
            content, app = _application(repo_root, source, rel, problems)
            if app is None:
                continue
            resolved, app_problems = _resolved(repo_root, app, rel)
            problems += app_problems
            if resolved and remembered:
                remembered.remember(source.content, rel, content, resolved)
        if resolved:
            applications.append(resolved)
    return Resolution(applications, problems)


def generated_applications(repo_root: Path) -> list[dict[str, Any]]:
    """The Application manifests the ApplicationSet controller would create (those it would
    not are left out: `resolve_applications` says why)."""
    repo_root = repo_root.resolve()
    source = _source(repo_root, [])
    if source is None:
        return []
    found = (_application(repo_root, source, rel, [])[1]
             for rel in _generator_files(repo_root, source.globs))
    return [app for app in found if app is not None]


@dataclass
class _Source:
    """The committed ApplicationSet, ready to generate: the manifest, its content hash, its
    template compiled, the globs of its git files generator."""

    appset: Mapping[str, Any]
    content: str
    fill: Callable[[Mapping[str, Any]], Any]
    globs: list[str]


def _source(repo_root: Path, problems: list[Problem]) -> _Source | None:
    """The committed ApplicationSet; None when it generates nothing (why: in `problems`)."""
    display = layout.APPLICATIONSET_FILE
    try:
        data = (repo_root / layout.APPLICATIONSET_FILE).read_bytes()
        appset = load_document(data.decode("utf-8"))  # as the controller reads it
    except FileNotFoundError:
        problems.append(Problem(display, message="missing", hint="run `tfgen render`"))
        return None
    except OSError as exc:
        problems.append(Problem(display, message=f"cannot be read: {exc}"))
        return None
    # worded as the check of argo/*.yaml words them: the two are then one problem
    except UnicodeDecodeError:
        problems.append(Problem(display, message="not UTF-8 text"))
        return None
    except (ValueError, yaml.YAMLError) as exc:
        problems.append(Problem(display, message=f"not valid YAML: {reading_problem(exc)}"))
        return None
    if not isinstance(appset, Mapping):
        problems.append(Problem(display, message="is not an ApplicationSet (a mapping)"))
        return None
    spec = _map(appset.get("spec"))
    options = _list(spec.get("goTemplateOptions"))
    if not spec.get("goTemplate") or "missingkey=error" not in options:
        problems.append(Problem(display, pointer="$.spec.goTemplate",
                                message="goTemplate with missingkey=error is required"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        problems.append(Problem(display, pointer="$.spec.template",
                                message="the Application template is missing"))
        return None
    globs, glob_problems = _git_file_globs(appset)
    problems += glob_problems
    return _Source(appset, content_hash(data), compiled(dict(template)), globs)


def _application(
    repo_root: Path, source: _Source, rel: str, problems: list[Problem]
) -> tuple[str, dict[str, Any] | None]:
    """(content hash, Application manifest) of one generator file; the manifest is None
    when the controller would not generate it (why: in `problems`)."""
    try:
        data = (repo_root / rel).read_bytes()
        text = data.decode("utf-8")
        found = read_canonical(text)
        if found is None:  # then read again by PyYAML, to say what is wrong with it
            found, canonical = yaml.safe_load(text), False
        else:
            canonical = True
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problems.append(Problem(rel, message=f"cannot be read: {exc}"))
        return "", None
    content = content_hash(data)
    if not isinstance(found, Mapping):
        problems.append(Problem(rel, message="must be a mapping of generator parameters"))
        return content, None
    if not canonical:
        # Argo CD reads it with YAML 1.1 rules (an unquoted `y` is true there): only the
        # writer's form is known to mean to Argo CD what it means here.
        problems.append(Problem(rel, message=(
            "is not in the form tfgen writes, so Argo CD may read it otherwise than tfgen "
            "(YAML 1.1: an unquoted y, on or 1e3 is no string there); not resolved"),
            hint=RENDER_HINT))
        return content, None
    try:
        app = source.fill(_generator_params(found, rel))
    except TemplateError as exc:
        problems.append(Problem(rel, message=f"ApplicationSet template: {exc}",
                                hint="every key the template uses must be in app.yaml"))
        return content, None
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **app}
    _as_the_controller_does(app, source.appset)
    return content, app


def _generator_files(repo_root: Path, globs: Sequence[str]) -> list[str]:
    """The files below argo/ that a glob matches, repository-relative and sorted: links to
    files followed, folders behind a link not entered. Walked as strings: ten thousand
    experiment folders make pathlib's cost show."""
    argo = os.path.join(repo_root, layout.ARGO_DIR)
    found = []
    for folder, _, names in os.walk(argo):
        below = layout.ARGO_DIR + folder[len(argo):].replace(os.sep, "/")
        found += [f"{below}/{name}" for name in names
                  if _generates(globs, f"{below}/{name}")
                  and os.path.isfile(os.path.join(folder, name))]
    return sorted(found)


def _files_to_resolve(repo_root: Path, globs: Sequence[str],
                      among: Collection[str] | None) -> list[str]:
    """The generator files to resolve, sorted: every one the globs match, else those of
    `among` that they match and that exist."""
    if among is None:
        return _generator_files(repo_root, globs)
    return sorted(rel for rel in among
                  if _generates(globs, rel) and os.path.isfile(repo_root / rel))


def _generates(globs: Sequence[str], rel: str) -> bool:
    """Whether the git files generator takes this repository-relative path."""
    return any(_glob_match(glob, rel) for glob in globs)


def _as_the_controller_does(app: dict[str, Any], appset: Mapping[str, Any]) -> None:
    # The ApplicationSet controller puts Applications in its own namespace and adds the
    # cascading-delete finalizer unless preserveResourcesOnDeletion is set.
    metadata = app["metadata"] = dict(_map(app.get("metadata")))
    metadata.setdefault("namespace", _map(appset.get("metadata")).get("namespace", ""))
    policy = _map(_map(appset.get("spec")).get("syncPolicy"))
    if not policy.get("preserveResourcesOnDeletion") and not metadata.get("finalizers"):
        metadata["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]


def _resolved(
    repo_root: Path, app: dict[str, Any], rel: str
) -> tuple[ResolvedApplication | None, list[Problem]]:
    spec = _map(app.get("spec"))
    source = _map(spec.get("source"))
    helm = _map(source.get("helm"))
    source_path = str(source.get("path", ""))
    chart_dir = repo_root / source_path
    problems = []
    value_files = []
    for index, value_file in enumerate(_list(helm.get("valueFiles"))):
        try:  # repo_root is real already (resolve_applications)
            path = _real_value_file(str(repo_root), chart_dir, str(value_file))
        except ValueError as exc:
            problems.append(Problem(rel, pointer=f"$.spec.source.helm.valueFiles[{index}]",
                                    message=str(exc)))
            continue
        if not os.path.isfile(path) and not helm.get("ignoreMissingValueFiles"):
            problems.append(Problem(rel, pointer=f"$.spec.source.helm.valueFiles[{index}]",
                                    message=f"value file {value_file!r} does not exist",
                                    hint="run `tfgen render`"))
            continue
        value_files.append(Path(path))
    if problems:
        return None, problems
    metadata = _map(app.get("metadata"))
    name = str(metadata.get("name", ""))
    paths = str(_map(metadata.get("annotations")).get(
        "argocd.argoproj.io/manifest-generate-paths", ""))
    destination = _map(spec.get("destination"))
    return ResolvedApplication(
        name=name,
        namespace=str(destination.get("namespace", "")),
        project=str(spec.get("project", "")),
        repo_url=str(source.get("repoURL", "")),
        target_revision=str(source.get("targetRevision", "")),
        source_path=source_path,
        release_name=str(helm.get("releaseName") or name),
        chart_dir=chart_dir,
        value_files=value_files,
        manifest_generate_paths=refresh_paths(paths, source_path),
        generator_file=repo_root / rel,
        destination_server=str(destination.get("server", "")),
        destination_name=str(destination.get("name", "")),
    ), []


def refresh_paths(annotation: str, source_path: str) -> list[str]:
    """Repository-relative paths of a manifest-generate-paths annotation, as Argo CD reads it:
    `;`-separated, `/`-rooted = repository root, otherwise relative to the source path."""
    out = []
    for item in (part.strip() for part in annotation.split(";")):
        if not item:
            continue
        if item.startswith("/"):
            out.append(item[1:])
        else:
            out.append(str(PurePosixPath(source_path, item)).replace("/./", "/"))
    return [_normalise(p) for p in out]


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == ".." and parts:
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)
