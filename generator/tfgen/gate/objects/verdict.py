"""Judging what each Application renders: every object, every experiment, and across them.

Each experiment's objects are validated strictly against their schemas (`manifests`), checked
by the TFJob and data-safety rules (`policy`) and against the AppProject's whitelists
(`wiring`). The verdict is a function of the rendered objects and of what judges them, so it is
kept in the cache by the experiment's render key: a known verdict needs neither helm nor the
manifest. Across experiments, two that render the same object would fight over it in the
cluster (`collisions`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...problems import Problem
from ...repo import chart, layout, runtimes
from ...validate.config.load import RepoConfig, builtin_policy
from ..argo import wiring
from ..argo.applications import ResolvedApplication
from ..documents import kubeconform
from ..documents.manifests import (
    ManifestValidator,
    ObjectKey,
    RenderedObject,
    object_key,
    parse_manifest,
    schema_hint,
)
from ..helm.jobs import RenderResult
from ..helm.values import load_yaml_file, merge_values
from . import policy

# Experiments per kubeconform process: few processes, and a bounded number of objects held.
KUBECONFORM_SLICE = 500


@dataclass
class AppObjects:
    """One Application's rendered objects: their identities, and the manifest on demand.

    The manifest is loaded (from the render cache, else by helm) on each use and never kept:
    a check holds the identities of every experiment's objects, not the objects themselves,
    so its memory does not grow with the repository's manifests."""

    app: ResolvedApplication
    path: str  # where problems about its objects point: the experiment's spec
    keys: tuple[ObjectKey, ...]
    _load: Callable[[], str] | None = field(default=None, repr=False)

    @property
    def manifest(self) -> str:
        return self._load() if self._load else ""

    @property
    def objects(self) -> list[RenderedObject]:
        return parse_manifest(self.manifest)


@dataclass(frozen=True)
class ObjectsVerdict:
    """The problems of one experiment's objects (located at no file: the reader adds it) and
    the objects' identities, as the cache keeps them."""

    problems: tuple[Problem, ...]
    keys: tuple[ObjectKey, ...]

    def to_json(self) -> str:
        return json.dumps({"problems": [asdict(p) for p in self.problems],
                           "keys": [list(k) for k in self.keys]}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ObjectsVerdict:
        data = json.loads(text)
        return cls(tuple(Problem(**p) for p in data["problems"]),
                   tuple(object_key(*k) for k in data["keys"]))


def app_values(app: ResolvedApplication) -> dict[str, Any]:
    """The Application's values files merged as helm merges them (in order; a later `runs`
    list replaces one). A file helm cannot read is skipped: helm's own error for it is
    reported with the render."""
    values: dict[str, Any] = {}
    for path in app.value_files:
        try:
            data = load_yaml_file(path)
        except InputError:
            continue
        if isinstance(data, dict):
            values = merge_values(values, data)
    return values


def app_is_retired(app: ResolvedApplication, values: dict[str, Any] | None = None) -> bool:
    """Whether the Application's values retire the experiment. Read from the values the render
    used, so a cached verdict (keyed by them) never outlives a change of state."""
    values = app_values(app) if values is None else values
    return values.get(chart.LIFECYCLE_KEY) == chart.RETIRED


def expected_jobs(app: ResolvedApplication, values: dict[str, Any] | None = None) -> list[str]:
    """The job names (of the experiment's runtime) an Application's values ask for: none once
    retired, each run's of a sweep, else the experiment's."""
    values = app_values(app) if values is None else values
    if app_is_retired(app, values):
        return []
    runs = values.get(chart.RUNS_KEY)
    if isinstance(runs, list) and runs:
        return [str(run.get("name")) for run in runs if isinstance(run, dict)]
    experiment = values.get(chart.EXPERIMENT_KEY)
    name = experiment.get("name") if isinstance(experiment, dict) else None
    return [str(name) if name else app.release_name]


@dataclass
class Judge:
    """What every experiment's objects are judged by."""

    validator: ManifestValidator
    projects: dict[str, wiring.Project]
    schema_check: bool = True  # False when kubeconform alone validates the schemas
    config: RepoConfig | None = None  # the namespaces' policies (None: tfgen.yaml's defaults)

    def pod_security(self, namespace: str) -> tuple[str, str]:
        """(level, where tfgen.yaml sets it) of a namespace's Pod Security Standard."""
        if self.config is None:
            return builtin_policy()["podSecurity"], f"{layout.CONFIG_NAME} default"
        return (self.config.namespace_policy(namespace)["podSecurity"],
                self.config.policy_source(namespace, "podSecurity"))

    def fingerprint(self) -> str:
        """Everything besides the objects that a verdict depends on, for its cache key."""
        policies = {}
        if self.config is not None:
            policies = {ns: self.pod_security(ns) for ns in sorted(self.config.data["policy"])}
        return json.dumps({"projects": {n: asdict(p) for n, p in sorted(self.projects.items())},
                           "podSecurity": policies, "clusterDomain": self.cluster_domain},
                          sort_keys=True)

    @property
    def cluster_domain(self) -> str:
        """tfgen.yaml's `clusterDomain`: the domain every TF_CONFIG address ends with."""
        return self.config.cluster_domain if self.config is not None else ""

    def verdict(self, app: ResolvedApplication, objects: Sequence[RenderedObject],
                values: dict[str, Any] | None = None) -> ObjectsVerdict:
        """`values`: the Application's value files merged, when the caller has read them."""
        found: list[Problem] = []
        for obj in objects:
            if self.schema_check:
                found += self.validator.problems(obj, "")
            found += policy.job_problems(obj, "", self.cluster_domain)
            found += policy.applied_size_problems(obj, "")
        values = app_values(app) if values is None else values
        found += policy.run_job_problems(objects, expected_jobs(app, values),
                                         runtimes.of_values(values).kind, "")
        found += policy.retired_problems(objects, app_is_retired(app, values), "")
        found += policy.data_safety_problems(objects, "")
        level, source = self.pod_security(app.namespace)
        found += policy.pod_security_problems(objects, app.namespace, level, source,
                                              self.validator.kube_version, "")
        found += wiring.object_problems(objects, app, self.projects.get(app.project), "")
        return ObjectsVerdict(tuple(found), tuple(o.key for o in objects))

    def first_look(self, app: ResolvedApplication, rendered: RenderResult
                   ) -> ObjectsVerdict | Problem:
        """A fresh render judged as soon as helm hands it over, so its manifest can be
        dropped: the verdict (problems located at no file yet), or the one problem of a
        render that helm refused or that cannot be parsed (nothing to keep then)."""
        if rendered.error:
            return Problem("", pointer=f"helm template {app.name}",
                           message=helm_message(rendered.error),
                           hint="fix the spec (or the chart) so the chart renders")
        try:
            objects = parse_manifest(rendered.manifest)
        except InputError as exc:
            return Problem("", message=exc.message)
        return self.verdict(app, objects, rendered.values)


def located(
    app: ResolvedApplication, path: str, outcome: ObjectsVerdict | Problem, load: Callable[[], str]
) -> tuple[AppObjects | None, list[Problem]]:
    """(the Application's objects, its problems located at `path`) from a verdict, fresh or
    from the cache, or from the problem of a failed render (then no objects); `load` gives
    the manifest to whoever needs it later."""
    if isinstance(outcome, Problem):
        return None, [replace(outcome, path=path)]
    return (AppObjects(app, path, outcome.keys, _load=load),
            [replace(p, path=path) for p in outcome.problems])


def helm_message(error: str) -> str:
    """helm's error on one line, without its advice to run with --debug."""
    lines = [line for line in error.splitlines()
             if line.strip() and not line.startswith("Use --debug")]
    return " ".join(lines) or "helm template failed"


def collisions(rendered: Sequence[AppObjects],
               elsewhere: Mapping[str, tuple[str, str]] | None = None) -> list[Problem]:
    """Two experiments rendering the same object would fight over it in the cluster (a
    PersistentVolume is cluster-wide, so equal names across namespaces collide too).
    `elsewhere`: the objects of experiments not rendered here, by `identity_digest`, as
    (their Application's name, where it is)."""
    # the first owner of each object, and the objects more than one experiment renders (few:
    # seventy thousand objects at ten thousand experiments need no list each)
    first: dict[ObjectKey, AppObjects] = {}
    shared: dict[ObjectKey, list[AppObjects]] = {}
    out = []
    for item in rendered:
        for key in map(cluster_identity, item.keys):
            owner = first.setdefault(key, item)
            if owner is not item:
                shared.setdefault(key, [owner]).append(item)
            other = elsewhere.get(identity_digest(key)) if elsewhere else None
            if other is not None and other[0] != item.app.name:
                out.append(_collision(item, key, other[1]))
    return out + _shared(shared)


def _shared(shared: Mapping[ObjectKey, list[AppObjects]]) -> list[Problem]:
    """A collision for each experiment rendering an object that another experiment renders
    too, naming the others' files."""
    out = []
    for key, items in shared.items():
        if len({i.app.name for i in items}) < 2:
            continue
        for item in items:
            others = sorted({o.path for o in items if o is not item})
            out.append(_collision(item, key, ", ".join(others)))
    return out


def _collision(item: AppObjects, key: ObjectKey, others: str) -> Problem:
    _, kind, namespace, name = key
    scope = "cluster-wide" if not namespace else f"in namespace {namespace}"
    return Problem(item.path, pointer=f"{kind}/{name} $.metadata.name",
                   message=f"{kind} {name!r} ({scope}) is also rendered by {others}",
                   hint="rename one of the experiments")


def identity_digest(key: ObjectKey) -> str:
    """A short digest of an object's identity in the cluster (`cluster_identity`), as a check
    keeps the objects of the experiments it does not render again (`ledger`)."""
    return hashlib.blake2b("\0".join(cluster_identity(key)).encode(), digest_size=8).hexdigest()


def cluster_identity(key: ObjectKey) -> ObjectKey:
    """What tells an object apart from every other in the cluster: a cluster-wide object's
    (a PersistentVolume's) namespace is no part of it."""
    group, kind, namespace, name = key
    return group, kind, "" if kind in wiring.CLUSTER_SCOPED else namespace, name


def kubeconform_problems(
    rendered: Sequence[AppObjects], validator: ManifestValidator
) -> list[Problem]:
    """Every rendered object through kubeconform, against the same schemas: a slice of
    experiments per kubeconform process, so the objects in memory are one slice's."""
    out: list[Problem] = []
    for start in range(0, len(rendered), KUBECONFORM_SLICE):
        flat = [(item, obj) for item in rendered[start:start + KUBECONFORM_SLICE]
                for obj in item.objects]
        failures = kubeconform.run([obj for _, obj in flat], validator)
        out += [flat[i][1].problem(flat[i][0].path, pointer, f"kubeconform: {message}",
                                   schema_hint(message))
                for i, pointer, message in failures]
    return out


def argo_objects(
    root: Path, files: Mapping[str, bytes]
) -> tuple[list[tuple[str, RenderedObject]], list[Problem]]:
    """Every Kubernetes object in argo/*.yaml (the per-experiment files carry no kind), with
    the path messages show for its file."""
    out: list[tuple[str, RenderedObject]] = []
    problems: list[Problem] = []
    for rel in sorted(files):  # the names first: only these few files are read
        folder, _, name = rel.rpartition("/")
        if folder != layout.ARGO_DIR or not name.endswith((".yaml", ".yml")):
            continue
        raw = files[rel]
        shown = layout.shown(rel, root)
        try:
            objects = parse_manifest(raw.decode("utf-8"), helm_output=False)
        except UnicodeDecodeError:
            problems.append(Problem(shown, message="not UTF-8 text"))
            continue
        except InputError as exc:
            problems.append(Problem(shown, message=exc.message))
            continue
        out += [(shown, obj) for obj in objects]
    return out, problems
