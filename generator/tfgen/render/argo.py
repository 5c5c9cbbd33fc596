"""The Argo CD wiring in argo/: rendered from tfgen.yaml, and resolved back as Argo CD would.

Rendering: the AppProject, the ApplicationSet, the bootstrap Application and the argocd-cm
health-check patch come from Jinja2 templates packaged with tfgen (`templates/`), filled from
the `argocd` block of the repository config. Per experiment, `app.yaml` is the small file the
ApplicationSet's git files generator reads; it always carries every key the template uses,
because `missingkey=error` turns a missing key into a generator failure.

Resolving: `resolve_applications` reads the committed ApplicationSet and app.yaml files and
produces the Applications Argo CD would create (Go-template placeholders substituted with
missing keys as errors, value files resolved against the chart path under Argo CD's rules),
so tests and `tfgen check` can render exactly what the cluster will get.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml

from ..problems import Problem
from .generated import GeneratedFile, dump_yaml

ARGO_DIR = "argo"
EXPERIMENTS_DIR = "argo/experiments"
CHART_PATH = "charts/tfjob-experiment"
CONFIG_SOURCE = "tfgen.yaml"
HEALTH_LUA_SOURCE = "generator/tfgen/templates/tfjob-health.lua"
APPLICATIONSET_NAME = "tfgen-experiments"
BOOTSTRAP_NAME = "tfgen-bootstrap"
GENERATOR_GLOB = f"{EXPERIMENTS_DIR}/*/app.yaml"
# Keys of app.yaml, all always present: the ApplicationSet template uses every one.
APP_KEYS = ("name", "namespace", "owner", "source")

# The argo/ files rendered from the repository config, with their templates.
ARGO_TEMPLATES = {
    f"{ARGO_DIR}/project.yaml": "project.yaml.j2",
    f"{ARGO_DIR}/applicationset.yaml": "applicationset.yaml.j2",
    f"{ARGO_DIR}/bootstrap.yaml": "bootstrap.yaml.j2",
    f"{ARGO_DIR}/argocd-cm-tfjob-health.yaml": "argocd-cm-tfjob-health.yaml.j2",
}


def _go_placeholder(key: str) -> str:
    """`{{.key}}` for the ApplicationSet template (Jinja2 would otherwise eat the braces)."""
    return "{{." + key + "}}"


def _yaml_scalar(value: Any) -> str:
    # A JSON string is a valid double-quoted YAML scalar: safe for any character.
    return json.dumps(value, ensure_ascii=False)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tfgen", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["q"] = _yaml_scalar
    env.globals["go"] = _go_placeholder
    return env


def health_lua() -> str:
    """The Lua health check for kubeflow.org/TFJob, as shipped in the argocd-cm patch."""
    return resources.files("tfgen").joinpath("templates/tfjob-health.lua").read_text("utf-8")


def argo_files(argocd: Mapping[str, Any]) -> list[GeneratedFile]:
    """The cluster-wide argo/ files for the `argocd` block of tfgen.yaml."""
    context = {
        "argocd": argocd,
        "namespaces": sorted(set(argocd.get("namespaces") or ())),
        "applicationset_name": APPLICATIONSET_NAME,
        "bootstrap_name": BOOTSTRAP_NAME,
        "generator_glob": GENERATOR_GLOB,
        "chart_path": CHART_PATH,
        "experiments_dir": EXPERIMENTS_DIR,
        "health_lua": health_lua().rstrip("\n"),
    }
    files = []
    for path, template in ARGO_TEMPLATES.items():
        sources: tuple[str, ...] = (CONFIG_SOURCE,)
        if template.startswith("argocd-cm"):
            sources = (CONFIG_SOURCE, HEALTH_LUA_SOURCE)
        body = _environment().get_template(template).render(context)
        files.append(GeneratedFile(path=path, sources=sources, body=body))
    return files


def app_file(name: str, namespace: str, owner: str, source: str) -> GeneratedFile:
    """argo/experiments/<name>/app.yaml: the git files generator's parameters for one run."""
    data = {"name": name, "namespace": namespace, "owner": owner, "source": source}
    return GeneratedFile(
        path=f"{EXPERIMENTS_DIR}/{name}/app.yaml", sources=(source,), body=dump_yaml(data)
    )


# --- resolving the ApplicationSet as Argo CD does -------------------------------------------

_PLACEHOLDER = re.compile(
    r"\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*-?\}\}"
)


class TemplateError(Exception):
    """A placeholder the resolver cannot substitute (missing key or unsupported syntax)."""


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
    manifest: dict[str, Any] = field(repr=False)


@dataclass
class Resolution:
    """Every Application the committed argo/ would produce, and every problem on the way."""

    applications: list[ResolvedApplication]
    problems: list[Problem]


def substitute(template: Any, params: Mapping[str, Any]) -> Any:
    """Go-template substitution of `{{.key}}`/`{{.a.b}}` with `missingkey=error` semantics.

    Only the placeholder form the ApplicationSet uses is supported; any other `{{` is an
    error rather than a silent pass-through, so the resolver never pretends to understand
    a template it does not.
    """
    if isinstance(template, dict):
        return {substitute(k, params): substitute(v, params) for k, v in template.items()}
    if isinstance(template, list):
        return [substitute(v, params) for v in template]
    if not isinstance(template, str):
        return template

    def lookup(match: re.Match[str]) -> str:
        value: Any = params
        for part in match.group(1).split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise TemplateError(f"map has no entry for key {part!r} (in {match.group(0)})")
            value = value[part]
        if isinstance(value, (dict, list)):
            raise TemplateError(f"{match.group(0)} is not a scalar")
        if isinstance(value, bool):  # Go prints booleans lower-case
            return str(value).lower()
        return "" if value is None else str(value)

    result = _PLACEHOLDER.sub(lookup, template)
    if "{{" in result:
        raise TemplateError(f"unsupported template syntax in {template!r}")
    return result


def _generator_params(data: Mapping[str, Any], rel_path: str) -> dict[str, Any]:
    # The git files generator adds `path` (goTemplate form) next to the file's own keys.
    folder = PurePosixPath(rel_path).parent
    params = dict(data)
    params["path"] = {
        "path": str(folder),
        "basename": folder.name,
        "filename": PurePosixPath(rel_path).name,
        "basenameNormalized": re.sub(r"[^a-z0-9-.]", "-", folder.name.lower()),
        "filenameNormalized": re.sub(r"[^a-z0-9-.]", "-", PurePosixPath(rel_path).name.lower()),
        "segments": list(folder.parts),
    }
    return params


def resolve_value_file(repo_root: Path, chart_dir: Path, value_file: str) -> Path:
    """Argo CD's rule: relative to the chart path, `/`-rooted = repository root; the resolved
    file (symlinks followed) must stay inside the repository. ValueError otherwise."""
    root = repo_root.resolve()
    base = root / value_file.lstrip("/") if value_file.startswith("/") else chart_dir / value_file
    resolved = base.resolve()
    if resolved != root and root not in resolved.parents:
        raise ValueError(f"value file {value_file!r} resolves outside the repository")
    return resolved


def _git_file_globs(appset: Mapping[str, Any]) -> tuple[list[str], list[Problem]]:
    globs: list[str] = []
    problems: list[Problem] = []
    for generator in appset.get("spec", {}).get("generators") or ():
        git = generator.get("git") if isinstance(generator, Mapping) else None
        if not git or not git.get("files"):
            problems.append(Problem(f"{ARGO_DIR}/applicationset.yaml", pointer="$.spec.generators",
                                    message="only git files generators are supported"))
            continue
        globs += [entry["path"] for entry in git["files"] if not entry.get("exclude")]
    return globs, problems


def _glob_match(pattern: str, path: str) -> bool:
    # Go's filepath.Match: `*` never crosses a `/`; compare segment by segment.
    pattern_parts, path_parts = pattern.split("/"), path.split("/")
    return len(pattern_parts) == len(path_parts) and all(
        fnmatch.fnmatchcase(part, pat) for pat, part in zip(pattern_parts, path_parts, strict=True)
    )


def resolve_applications(repo_root: Path) -> Resolution:
    """Every Application that argo/applicationset.yaml generates from the committed files."""
    repo_root = repo_root.resolve()
    appset_path = repo_root / ARGO_DIR / "applicationset.yaml"
    display = f"{ARGO_DIR}/applicationset.yaml"
    try:
        appset = yaml.safe_load(appset_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Resolution([], [Problem(display, message="missing", hint="run `tfgen render`")])
    except yaml.YAMLError as exc:
        return Resolution([], [Problem(display, message=f"not valid YAML: {exc}")])
    spec = appset.get("spec", {})
    problems: list[Problem] = []
    options = spec.get("goTemplateOptions") or ()
    if not spec.get("goTemplate") or "missingkey=error" not in options:
        problems.append(Problem(display, pointer="$.spec.goTemplate",
                                message="goTemplate with missingkey=error is required"))
    globs, glob_problems = _git_file_globs(appset)
    problems += glob_problems
    candidates = sorted(
        p.relative_to(repo_root).as_posix()
        for p in (repo_root / ARGO_DIR).rglob("*")
        if p.is_file()
    )
    applications = []
    for rel in candidates:
        if not any(_glob_match(g, rel) for g in globs):
            continue
        try:
            data = yaml.safe_load((repo_root / rel).read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            problems.append(Problem(rel, message=f"not valid YAML: {exc}"))
            continue
        if not isinstance(data, Mapping):
            problems.append(Problem(rel, message="must be a mapping of generator parameters"))
            continue
        try:
            app = substitute(spec.get("template", {}), _generator_params(data, rel))
        except TemplateError as exc:
            problems.append(Problem(rel, message=f"ApplicationSet template: {exc}",
                                    hint="every key the template uses must be in app.yaml"))
            continue
        _as_the_controller_does(app, appset)
        resolved, app_problems = _resolved(repo_root, app, rel)
        problems += app_problems
        if resolved:
            applications.append(resolved)
    return Resolution(applications, problems)


def _as_the_controller_does(app: dict[str, Any], appset: Mapping[str, Any]) -> None:
    # The ApplicationSet controller puts Applications in its own namespace and adds the
    # cascading-delete finalizer unless preserveResourcesOnDeletion is set.
    metadata = app.setdefault("metadata", {})
    metadata.setdefault("namespace", appset.get("metadata", {}).get("namespace", ""))
    policy = appset.get("spec", {}).get("syncPolicy") or {}
    if not policy.get("preserveResourcesOnDeletion") and not metadata.get("finalizers"):
        metadata["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]


def _resolved(
    repo_root: Path, app: dict[str, Any], rel: str
) -> tuple[ResolvedApplication | None, list[Problem]]:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **app}
    spec = app.get("spec", {})
    source = spec.get("source", {})
    helm = source.get("helm", {})
    chart_dir = repo_root / source.get("path", "")
    problems = []
    value_files = []
    for index, value_file in enumerate(helm.get("valueFiles") or ()):
        try:
            path = resolve_value_file(repo_root, chart_dir, value_file)
        except ValueError as exc:
            problems.append(Problem(rel, pointer=f"$.spec.source.helm.valueFiles[{index}]",
                                    message=str(exc)))
            continue
        if not path.is_file() and not helm.get("ignoreMissingValueFiles"):
            problems.append(Problem(rel, pointer=f"$.spec.source.helm.valueFiles[{index}]",
                                    message=f"value file {value_file!r} does not exist",
                                    hint="run `tfgen render`"))
            continue
        value_files.append(path)
    if problems:
        return None, problems
    name = app.get("metadata", {}).get("name", "")
    paths = app.get("metadata", {}).get("annotations", {}).get(
        "argocd.argoproj.io/manifest-generate-paths", "")
    return ResolvedApplication(
        name=name,
        namespace=spec.get("destination", {}).get("namespace", ""),
        project=spec.get("project", ""),
        repo_url=source.get("repoURL", ""),
        target_revision=source.get("targetRevision", ""),
        source_path=source.get("path", ""),
        release_name=helm.get("releaseName") or name,
        chart_dir=chart_dir,
        value_files=value_files,
        manifest_generate_paths=refresh_paths(paths, source.get("path", "")),
        generator_file=repo_root / rel,
        manifest=app,
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

