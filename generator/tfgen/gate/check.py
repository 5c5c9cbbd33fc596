"""`tfgen check`: the offline pull-request gate over the whole chain.

In order: validate every spec; render the generated files in memory and compare them with what
is committed; resolve the Applications the committed ApplicationSet generates; `helm template`
each of them exactly as Argo CD would (release, namespace, `--kube-version` from tfgen.yaml,
`--api-versions kubeflow.org/v1`), batched and cached (batch.py); validate every rendered
object strictly (manifests.py, optionally kubeconform) and every Argo CD object in argo/;
apply the rules a schema cannot express (policy.py, wiring.py); with a base revision, refuse
changes a live run cannot take. Every finding is a `report.Problem`; nothing is printed here.

Speed comes from three caches under `.tfgen-cache/`, all keyed by content: the whole result
(nothing changed since the last identical run: one hash pass over the inputs), each spec
file's validation, and each experiment's rendered manifest with its object problems.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InputError, TfgenError
from ..problems import Problem
from ..render import argo as gitops
from ..spec.config import RepoConfig, load_config
from . import base as gitbase
from . import policy, wiring
from .batch import BatchRenderer, RenderJob, RenderResult
from .cache import CACHE_DIRNAME, Cache, digest, tree_digest
from .manifests import ManifestValidator, RenderedObject, parse_manifest

VALIDATORS = ("auto", "builtin", "kubeconform", "both")
API_VERSIONS = ("kubeflow.org/v1",)
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# Paths whose change affects every experiment (for --changed).
GLOBAL_INPUTS = ("charts/", "schemas/", "tfgen.yaml")

Progress = Callable[[str, int, int], None]


@dataclass
class CheckOptions:
    base: str | None = None
    changed_only: bool = False
    validator: str = "auto"  # auto: both when kubeconform is on PATH, else builtin
    use_cache: bool = True
    helm: str | None = None
    workers: int | None = None


@dataclass
class CheckResult:
    """Every problem found, and what was done to find them (for the summary line)."""

    problems: list[Problem] = field(default_factory=list)
    specs: int = 0
    applications: int = 0
    checked: int = 0  # applications rendered and validated (the rest: out of --changed scope)
    objects: int = 0
    helm_processes: int = 0
    cache_hits: int = 0  # experiments whose render or verdict came from .tfgen-cache/
    from_cache: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        what = (f"{self.specs} spec(s), {self.checked} of {self.applications} application(s), "
                f"{self.objects} rendered object(s)")
        how = "result cached, inputs unchanged" if self.from_cache else (
            f"{self.helm_processes} helm process(es), {self.cache_hits} experiment(s) from "
            f"cache")
        verdict = f"{len(self.problems)} problem(s)" if self.problems else "no problems"
        return f"{verdict}: {what} ({how})"


def _code_digest() -> str:
    """tfgen's own code and the validators' versions: a new tfgen must not reuse old verdicts."""
    import jsonschema_rs
    import kubernetes_validate

    return digest(__version__, tree_digest(PACKAGE_DIR),
                  getattr(jsonschema_rs, "__version__", ""),
                  getattr(kubernetes_validate, "__version__", str(Path(
                      kubernetes_validate.__file__).parent)))


def _cwd() -> str:
    return _realpath(os.getcwd())


@functools.lru_cache(maxsize=8)
def _realpath(path: str) -> str:
    return os.path.realpath(path)


def _display(root: Path, path: Path | str) -> str:
    """Paths as the spec validator shows them: relative to the working directory if inside.

    String operations only: this runs once per experiment, and Path.resolve() per call
    costs more than the rest of a warm check.
    """
    text = str(path)
    absolute = text if os.path.isabs(text) else os.path.join(str(root), text)
    cwd = _cwd()
    if absolute.startswith(cwd + os.sep) and "/." not in absolute[len(cwd):]:
        return absolute[len(cwd) + 1:]
    if absolute == cwd or absolute.startswith(cwd + os.sep):
        return os.path.relpath(absolute, cwd)
    real = os.path.realpath(absolute)
    if real.startswith(cwd + os.sep):
        return os.path.relpath(real, cwd)
    return absolute


def _problem_dicts(problems: Iterable[Problem]) -> list[dict[str, Any]]:
    return [asdict(p) for p in problems]


def _problems_from(items: Iterable[dict[str, Any]]) -> list[Problem]:
    return [Problem(**item) for item in items]


# --- stage 1: specs --------------------------------------------------------------------------

@dataclass
class SpecStage:
    problems: list[Problem]
    experiments: dict[str, tuple[str, dict[str, Any]]]  # name -> (display path, data)
    files: int


def validate_specs(
    config: RepoConfig, cache: Cache, salt: str, files: dict[str, bytes]
) -> SpecStage:
    """Every spec file, each one's verdict cached by its content (and config, code); the rules
    across files run over the cached data, re-loading only files involved in a clash."""
    from ..spec import rules, validate

    names = sorted(rel for rel in files if rel.count("/") == 1 and
                   rel.startswith("experiments/") and rel.endswith(validate.SPEC_SUFFIXES))
    problems: list[Problem] = []
    if not names:
        problems.append(Problem(_display(config.root, "experiments"),
                                message="no *.yaml experiment files here"))
    config_bytes = files.get("tfgen.yaml", b"")
    paths = [Path(_display(config.root, rel)) for rel in names]
    keys = [digest("spec", salt, config_bytes, str(path), files[rel])
            for rel, path in zip(names, paths, strict=True)]
    known = cache.get_many("spec", keys)
    entries: dict[Path, dict[str, Any]] = {}
    for path, key in zip(paths, keys, strict=True):
        entry = json.loads(known[key]) if key in known else None
        if entry is None:
            checked, found = validate.check_file(path, config)
            entry = {
                "problems": _problem_dicts(found),
                "data": checked.data if checked is not None else None,
            }
            entry = json.loads(json.dumps(entry, default=str))
            cache.put_json("spec", key, entry)
        entries[path] = entry
        problems += _problems_from(entry["problems"])
    # Cross-file rules (unique names, unique PV names) only need the files that share a name;
    # reload just those so their problems carry exact lines.
    def identities(data: dict[str, Any]) -> list[str]:
        meta = data.get("metadata") or {}
        name, ns = meta.get("name"), meta.get("namespace")
        out = [f"name:{name}"]
        if isinstance((data.get("spec") or {}).get("storage", {}).get("nas"), dict):
            out.append(f"pv:{ns}-{name}-data")
        return out

    seen: dict[str, list[Path]] = {}
    for path, entry in entries.items():
        if entry["data"] is not None:
            for ident in identities(entry["data"]):
                seen.setdefault(ident, []).append(path)
    clashing = sorted({p for paths in seen.values() if len(paths) > 1 for p in paths})
    invalid = {path for path, entry in entries.items() if entry["problems"]}
    if clashing:
        checked_items = [c for c in (validate.check_file(p, config)[0] for p in clashing) if c]
        across = rules.repo_problems(checked_items)
        problems += across
        shown = {p.path for p in across}
        invalid |= {c.source for c in checked_items if c.locator.document.path in shown}
    experiments = {}
    for path, entry in entries.items():
        if path in invalid or entry["data"] is None:
            continue
        name = str(entry["data"]["metadata"]["name"])
        experiments[name] = (str(path), entry["data"])
    return SpecStage(problems=problems, experiments=experiments, files=len(names))


# --- stage 2: generated files ----------------------------------------------------------------

def drift_problems(
    config: RepoConfig, specs: SpecStage, files: dict[str, bytes], cache: Cache | None = None,
    salt: str = "",
) -> list[Problem]:
    """Committed generated files that differ from what `tfgen render` would write.

    The same comparison as `tfgen render --check` (render.plan_render), made from the files
    already read for this run: the argo/ wiring from `gitops.argo_files`, each experiment's
    files from `render.wanted_files` once per spec content (cached), compared by hash; files
    tfgen would not write are orphans (with its header) or foreign (without).
    """
    from ..render import plan as render
    from ..render.generated import is_generated

    cache = cache or Cache(None)
    argocd = config.data.get("argocd") or {}
    problems: list[Problem] = []
    wanted: dict[str, str] = {g.path: digest(g.content) for g in gitops.argo_files(argocd)}
    items = []
    for _, (source, data) in sorted(specs.experiments.items()):
        rel = _rel(config.root, source)
        key = digest("generated", salt, rel, json.dumps(data, sort_keys=True, default=str),
                     json.dumps(argocd, sort_keys=True, default=str))
        items.append((rel, data, key))
    known = cache.get_many("generated", [key for _, _, key in items])
    prefix = f"{gitops.EXPERIMENTS_DIR}/"
    missing = [(rel, data, key) for rel, data, key in items if key not in known]
    if missing:
        # one call for all new specs: wanted_files also renders the argo/ wiring each time
        generated, found = render.wanted_files(
            [render.SourceExperiment(rel, data) for rel, data, _ in missing], argocd)
        by_source: dict[str, dict[str, Any]] = {
            rel: {"files": {}, "problems": []} for rel, _, _ in missing}
        for gen in generated:
            if gen.path.startswith(prefix) and gen.sources and gen.sources[0] in by_source:
                by_source[gen.sources[0]]["files"][gen.path] = digest(gen.content)
        for problem in found:
            if problem.path in by_source:
                by_source[problem.path]["problems"].append(asdict(problem))
            else:
                problems.append(problem)
        for rel, _, key in missing:
            known[key] = json.dumps(by_source[rel])
            cache.put("generated", key, known[key])
    for _, _, key in items:
        entry = json.loads(known[key])
        problems += _problems_from(entry["problems"])
        wanted.update(entry["files"])
    for path, sha in wanted.items():
        old = files.get(path)
        if old is None:
            problems.append(_drift(path, "missing"))
        elif digest(old) != sha:
            if is_generated(old.decode("utf-8", errors="replace")):
                problems.append(_drift(path, "out of date"))
            else:
                problems.append(Problem(path, message="exists but was not generated by tfgen "
                                        "(no tfgen header); left untouched",
                                        hint="move it away, then run `tfgen render`"))
    valid = set(specs.experiments)
    stems = _spec_stems(config.root)
    for path, content in files.items():
        top_level = path.startswith(gitops.ARGO_DIR + "/") and path.count("/") == 1 and \
            path.endswith(".yaml")
        if path in wanted or not (top_level or path.startswith(prefix)):
            continue
        if is_generated(content[:200].decode("utf-8", errors="replace")):
            experiment = _experiment_of(path)
            if experiment in stems and experiment not in valid:
                continue  # its spec is invalid (reported above), not gone
            problems.append(_drift(path, "left over (its spec is gone)"))
        elif not top_level:
            # a hand-made app.yaml in argo/experiments/ would become an Application
            problems.append(Problem(path, message="not generated by tfgen (no tfgen header)",
                                    hint="argo/experiments/ holds only files written by "
                                         "`tfgen render`"))
    return problems


def _drift(path: str, what: str) -> Problem:
    return Problem(path, message=f"generated file is {what}",
                   hint="run `tfgen render` and commit the result")


def _rel(root: Path, display: str) -> str:
    """Repository-relative POSIX path of a displayed (cwd-relative) path."""
    absolute = display if os.path.isabs(display) else os.path.join(_cwd(), display)
    top = str(root)
    if absolute.startswith(top + os.sep) and "/." not in absolute[len(top):]:
        return absolute[len(top) + 1:].replace(os.sep, "/")
    rel = os.path.relpath(absolute, top)
    if rel.startswith(".."):
        rel = os.path.relpath(os.path.realpath(absolute), os.path.realpath(root))
    return display if rel.startswith("..") else Path(rel).as_posix()


def _experiment_of(path: str) -> str:
    parts = path.split("/")
    return parts[2] if len(parts) > 3 and path.startswith(gitops.EXPERIMENTS_DIR + "/") else ""


def _spec_stems(root: Path) -> set[str]:
    # An invalid spec's generated files are not orphans; the spec's problems say what to fix.
    names = set()
    for path in (root / "experiments").glob("*.y*ml"):
        names.add(path.stem)
    return names


# --- stage 3: Argo CD objects in argo/ -------------------------------------------------------

def argo_objects(root: Path) -> tuple[list[tuple[str, RenderedObject]], list[Problem]]:
    """Every Kubernetes object in argo/*.yaml (the per-experiment files carry no kind)."""
    out: list[tuple[str, RenderedObject]] = []
    problems: list[Problem] = []
    for path in sorted((root / gitops.ARGO_DIR).glob("*.y*ml")):
        shown = _display(root, path)
        try:
            objects = parse_manifest(path.read_text(encoding="utf-8"))
        except InputError as exc:
            problems.append(Problem(shown, message=exc.message))
            continue
        out += [(shown, obj) for obj in objects]
    return out, problems


# --- the gate --------------------------------------------------------------------------------

def affected_experiments(changed: Iterable[str]) -> set[str] | None:
    """Experiment names touched by these changed paths; None when a change (chart, schemas,
    tfgen.yaml, argo/ templates) affects every experiment."""
    scope: set[str] = set()
    for path in changed:
        if path.startswith(GLOBAL_INPUTS) or (
            path.startswith(gitops.ARGO_DIR + "/")
            and not path.startswith(gitops.EXPERIMENTS_DIR + "/")
        ):
            return None
        if path.startswith(gitops.EXPERIMENTS_DIR + "/"):
            scope.add(path.split("/")[2])
        elif path.startswith("experiments/"):
            # the spec file is named after its experiment; a mismatch still shows via argo/
            scope.add(Path(path).stem)
    return scope


def _scope(root: Path, options: CheckOptions) -> set[str] | None:
    """Experiments to render for --changed (None = all)."""
    if not options.changed_only:
        return None
    if not options.base:
        raise InputError("--changed needs --base REF (changes are counted since REF)")
    return affected_experiments(gitbase.changed_paths(root, options.base))


INPUT_DIRS = ("experiments", "argo", "charts", "schemas")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every input file of the gate (repo-relative POSIX path -> bytes), each read once per
    run: the run key, the spec keys and the resolution key all hash from here."""
    files: dict[str, bytes] = {}
    config = root / "tfgen.yaml"
    if config.is_file():
        files["tfgen.yaml"] = config.read_bytes()
    for top in INPUT_DIRS:
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in sorted(filenames):
                with open(os.path.join(dirpath, name), "rb") as handle:
                    files[f"{rel_dir}/{name}"] = handle.read()
    return files


def _inputs_digest(files: dict[str, bytes]) -> str:
    parts: list[bytes | str] = []
    for rel, data in files.items():
        parts += [rel, data]
    return digest(*parts)


def jobs_for(
    applications: Sequence[Any], kube_version: str
) -> list[RenderJob]:
    """One helm run per Application, with exactly the Application's parameters."""
    return [
        RenderJob(
            name=app.release_name,
            namespace=app.namespace,
            chart=app.chart_dir,
            values_files=tuple(app.value_files),
            kube_version=kube_version,
            api_versions=API_VERSIONS,
        )
        for app in applications
    ]


def _schema_dir(root: Path) -> Path:
    own = root / "schemas"
    return own if own.is_dir() else PACKAGE_DIR.parents[1] / "schemas"


def run_check(
    root: Path, options: CheckOptions | None = None, progress: Progress | None = None
) -> CheckResult:
    """Run the whole gate over the repository at `root`; returns every problem found."""
    options = options or CheckOptions()
    if options.validator not in VALIDATORS:
        raise InputError(f"--validator {options.validator}: one of {', '.join(VALIDATORS)}")
    from . import kubeconform

    if options.validator == "auto":
        options = replace(options, validator="both" if kubeconform.find_kubeconform()
                          else "builtin")
    if options.validator in ("kubeconform", "both"):
        kubeconform.require_kubeconform()
    config = load_config(cwd=root)
    root = config.root
    wiring.forget_filesystem()
    cache_dir = root / CACHE_DIRNAME if options.use_cache else None
    cache = Cache(cache_dir)
    # the renderer works in its own thread: its own connection to the same cache file
    renderer = BatchRenderer(helm=options.helm, cache=Cache(cache_dir), workers=options.workers)
    code = _code_digest()
    base_commit = gitbase.resolve(root, options.base) if options.base else ""
    files = snapshot(root)
    # cwd is part of the key: problems name files relative to it
    run_key = digest("check", code, renderer.helm_version, json.dumps(asdict(options)),
                     base_commit, str(Path.cwd()), _inputs_digest(files))
    stored = cache.get_json("check", run_key)
    if stored is not None:
        cache.close()
        renderer.cache.close()
        result = CheckResult(**{**stored, "problems": _problems_from(stored["problems"])})
        result.from_cache = True
        return result

    result = CheckResult()
    # Helm runs in other processes: start it first and validate specs, generated files and
    # argo/ while it renders (on two cores this hides most of the Python work).
    resolution = resolve_cached(root, cache, code, files)
    applications = resolution.applications
    scope = _scope(root, options)
    # an Application whose chart path is wrong is reported by the wiring checks; helm is not
    # asked to render it
    in_scope = [a for a in applications if (scope is None or a.name in scope)
                and (Path(a.chart_dir) / "Chart.yaml").is_file()]
    jobs = jobs_for(in_scope, config.kubernetes_version)
    validator = ManifestValidator(config.kubernetes_version, _schema_dir(root))
    argo, argo_problems = argo_objects(root)
    projects = wiring.load_projects(argo)
    schema_check = options.validator != "kubeconform"
    # A verdict on an experiment's objects is a function of what its helm run reads (the
    # render key) and of what judges them: known verdicts need neither helm nor the manifest.
    salt = digest("objects", code, config.kubernetes_version, str(schema_check),
                  tree_digest(_schema_dir(root)),
                  json.dumps({n: asdict(p) for n, p in sorted(projects.items())}, default=str))
    render_keys = [renderer.key(job) for job in jobs]
    verdict_keys = [digest(salt, key, app.namespace, app.project)
                    for key, app in zip(render_keys, in_scope, strict=True)]
    verdicts = cache.get_many("objects", verdict_keys)
    need_all = bool(options.base) or options.validator in ("kubeconform", "both")
    todo = [i for i, key in enumerate(verdict_keys) if need_all or key not in verdicts]
    with ThreadPoolExecutor(max_workers=1) as pool:
        # Helm runs in other processes: start it first and check specs, generated files and
        # argo/ while it renders (on two cores this hides most of the Python work).
        rendering = pool.submit(renderer.render, [jobs[i] for i in todo],
                                _ticker(progress, len(todo)))

        specs = validate_specs(config, cache, digest(code, str(Path.cwd())), files)
        result.specs = specs.files
        result.problems += specs.problems
        result.problems += drift_problems(config, specs, files, cache, code)

        result.problems += argo_problems
        for shown, obj in argo:
            result.problems += validator.problems(obj, shown)

        result.problems += [
            Problem(_display(root, p.path), p.line, p.col, p.pointer, p.message, p.hint)
            for p in resolution.problems
        ]
        result.applications = len(applications)
        names: dict[str, str] = {}
        for app in applications:
            where = _display(root, app.generator_file)
            if app.name in names:
                result.problems.append(Problem(
                    where, pointer="$.metadata.name",
                    message=f"Application {app.name!r} is also generated from {names[app.name]}"))
            names[app.name] = where
            result.problems += wiring.application_problems(root, app, projects, where)
        fresh = dict(zip(todo, rendering.result(), strict=True))

    rendered = _check_rendered(
        root, in_scope, jobs, fresh, verdict_keys, verdicts, specs, validator, projects,
        renderer, cache, result, schema_check=schema_check,
    )
    result.problems += _collisions(rendered, specs, root)
    if options.validator in ("kubeconform", "both"):
        result.problems += _kubeconform_problems(rendered, validator)
    if options.base:
        result.problems += _base_problems(root, options.base, rendered, config, renderer)
    result.checked = len(in_scope)
    result.helm_processes = renderer.stats.helm_processes
    result.cache_hits = len(jobs) - len(todo) + renderer.stats.cached
    result.problems = sorted(set(result.problems))
    cache.put_json("check", run_key, {**asdict(result), "problems": _problem_dicts(
        result.problems)})
    cache.close()
    renderer.cache.close()
    return result


def _resolution_key(root: Path, code: str, files: dict[str, bytes]) -> str:
    """What `gitops.resolve_applications` reads: the ApplicationSet and generator files, and
    whether value files exist. The values files' content is never read by it, so a change to
    one experiment's values keeps this key (and saves parsing a thousand app.yaml files)."""
    parts: list[bytes | str] = ["resolve", code, str(root)]
    values_prefix = gitops.EXPERIMENTS_DIR + "/"
    for rel, data in files.items():
        if not rel.startswith(gitops.ARGO_DIR + "/"):
            continue
        parts.append(rel)
        if not (rel.endswith("/values.yaml") and rel.startswith(values_prefix)):
            parts.append(data)
    return digest(*parts)


_PATH_FIELDS = ("chart_dir", "generator_file")


def resolve_cached(root: Path, cache: Cache, code: str, files: dict[str, bytes]) -> Any:
    """`gitops.resolve_applications(root)`, remembered by what it reads."""
    key = _resolution_key(root, code, files)
    stored = cache.get_json("resolve", key)
    if stored is not None:
        apps = []
        for data in stored["applications"]:
            for name in _PATH_FIELDS:
                data[name] = Path(data[name])
            data["value_files"] = [Path(v) for v in data["value_files"]]
            apps.append(gitops.ResolvedApplication(**data))
        return gitops.Resolution(apps, _problems_from(stored["problems"]))
    resolution = gitops.resolve_applications(root)
    cache.put_json("resolve", key, {
        "applications": [asdict(app) for app in resolution.applications],
        "problems": _problem_dicts(resolution.problems),
    })
    return resolution


@dataclass
class AppObjects:
    """One Application's rendered objects: identities always, the manifest and parsed objects
    only when someone needs them (a reused verdict carries the identities)."""

    app: Any
    path: str  # where problems about its objects point: the experiment's spec
    keys: list[tuple[str, str, str, str]]
    _manifest: str | None = None
    _objects: list[RenderedObject] | None = None
    _load: Callable[[], str] | None = None

    @property
    def manifest(self) -> str:
        if self._manifest is None:
            self._manifest = self._load() if self._load else ""
        return self._manifest

    @property
    def objects(self) -> list[RenderedObject]:
        if self._objects is None:
            self._objects = parse_manifest(self.manifest)
        return self._objects


def _spec_path(app: Any, specs: SpecStage, root: Path) -> str:
    if app.name in specs.experiments:
        return specs.experiments[app.name][0]
    return _display(root, app.generator_file)


def _ticker(progress: Progress | None, total: int) -> Any:
    done = 0

    def tick(count: int) -> None:
        nonlocal done
        done += count
        if progress:
            progress("render", done, total)

    return tick


def _check_rendered(
    root: Path, apps: Sequence[Any], jobs: Sequence[RenderJob], fresh: dict[int, RenderResult],
    verdict_keys: Sequence[str], verdicts: dict[str, str], specs: SpecStage,
    validator: ManifestValidator, projects: dict[str, wiring.Project],
    renderer: BatchRenderer, cache: Cache, result: CheckResult, *, schema_check: bool = True,
) -> list[AppObjects]:
    """Judge each experiment's rendered objects; a known verdict is reused as it is.

    Verdicts are stored without the spec path (problems name it when they are reported), so
    they only depend on the objects and on what judges them.
    """
    out: list[AppObjects] = []
    for index, (app, job, key) in enumerate(zip(apps, jobs, verdict_keys, strict=True)):
        path = _spec_path(app, specs, root)
        rendered = fresh.get(index)
        if rendered is not None and rendered.error:
            result.problems.append(Problem(path, pointer=f"helm template {app.name}",
                                           message=_helm_message(rendered),
                                           hint="fix the spec (or the chart) so the chart "
                                                "renders"))
            continue
        if key in verdicts:
            entry = json.loads(verdicts[key])
            item = AppObjects(app, path, [tuple(k) for k in entry["keys"]],  # type: ignore[misc]
                              _manifest=rendered.manifest if rendered else None,
                              _load=functools.partial(_manifest_of, renderer, job))
            result.problems += [Problem(path, **{k: v for k, v in p.items() if k != "path"})
                                for p in entry["problems"]]
            result.objects += len(item.keys)
            out.append(item)
            continue
        assert rendered is not None
        try:
            objects = parse_manifest(rendered.manifest)
        except InputError as exc:
            result.problems.append(Problem(path, message=exc.message))
            continue
        found: list[Problem] = []
        for obj in objects:
            if schema_check:
                found += validator.problems(obj, "")
            found += policy.tfjob_problems(obj, "")
        found += policy.data_safety_problems(objects, "")
        found += wiring.object_problems(objects, app, projects.get(app.project), "")
        item = AppObjects(app, path, [o.key for o in objects], _manifest=rendered.manifest,
                          _objects=objects)
        cache.put_json("objects", key, {"problems": _problem_dicts(found), "keys": item.keys})
        result.problems += [Problem(path, p.line, p.col, p.pointer, p.message, p.hint)
                            for p in found]
        result.objects += len(objects)
        out.append(item)
    return out


def _manifest_of(renderer: BatchRenderer, job: RenderJob) -> str:
    """A job's manifest: from the cache, else rendered now (the cache may have been cleared)."""
    text = renderer.cached(job)
    if text is None:
        [rendered] = renderer.render([job])
        text = rendered.manifest
    return text


def _helm_message(rendered: RenderResult) -> str:
    lines = [line for line in rendered.error.splitlines()
             if line.strip() and not line.startswith("Use --debug")]
    return " ".join(lines) or "helm template failed"


def _collisions(rendered: Sequence[AppObjects], specs: SpecStage, root: Path) -> list[Problem]:
    """Two experiments rendering the same object would fight over it in the cluster (a
    PersistentVolume is cluster-wide, so equal names across namespaces collide too)."""
    owners: dict[tuple[str, str, str, str], list[AppObjects]] = {}
    for item in rendered:
        for group, kind, ns, name in item.keys:
            if kind in wiring.CLUSTER_SCOPED:
                ns = ""
            owners.setdefault((group, kind, ns, name), []).append(item)
    out = []
    for (_, kind, ns, name), items in owners.items():
        if len({i.app.name for i in items}) < 2:
            continue
        for item in items:
            others = ", ".join(sorted({o.path for o in items if o is not item}))
            scope = "cluster-wide" if not ns else f"in namespace {ns}"
            out.append(Problem(item.path, pointer=f"{kind}/{name} $.metadata.name",
                               message=f"{kind} {name!r} ({scope}) is also rendered by {others}",
                               hint="rename one of the experiments"))
    return out


def _kubeconform_problems(
    rendered: Sequence[AppObjects], validator: ManifestValidator
) -> list[Problem]:
    from . import kubeconform

    flat = [(item, obj) for item in rendered for obj in item.objects]
    failures = kubeconform.run([obj for _, obj in flat], validator)
    return [Problem(flat[i][0].path, pointer=f"{flat[i][1].ref} $",
                    message=f"kubeconform: {message}") for i, message in failures]


def _base_problems(
    root: Path, base: str, rendered: Sequence[AppObjects], config: RepoConfig,
    renderer: BatchRenderer,
) -> list[Problem]:
    """Live-run immutability against the experiments as they are at `base`."""
    now = {item.app.name: item for item in rendered}
    with gitbase.tree_at(root, base) as tree:
        try:
            base_apps = {a.name: a for a in gitops.resolve_applications(tree).applications}
        except (TfgenError, OSError, ValueError, KeyError, AttributeError):
            return []  # the base predates tfgen or is broken: nothing live to protect
        pairs = [(base_apps[name], now[name]) for name in now if name in base_apps]
        jobs = jobs_for([b for b, _ in pairs], config.kubernetes_version)
        results = renderer.render(jobs)
    out: list[Problem] = []
    for (_, current), before in zip(pairs, results, strict=True):
        if before.error or before.manifest == current.manifest:
            continue
        try:
            old_objects = parse_manifest(before.manifest)
        except InputError:
            continue
        out += policy.immutability_problems(old_objects, current.objects, current.path)
    return out
