"""Judging what each Application renders: every object, every experiment, and across them.

Each experiment's objects are validated strictly against their schemas (`manifests`), checked
by the TFJob and data-safety rules (`policy`) and against the AppProject's whitelists
(`wiring`). The verdict is a function of the rendered objects and of what judges them, so it is
kept in the cache by the experiment's render key: a known verdict needs neither helm nor the
manifest. Across experiments, two that render the same object would fight over it in the
cluster (`collisions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..problems import Problem
from ..repo import layout
from ..validate.config import RepoConfig, builtin_policy
from . import kubeconform, policy, wiring
from .applications import ResolvedApplication
from .batch import RenderResult
from .helmvalues import load_yaml_file, merge_values
from .manifests import ManifestValidator, RenderedObject, parse_manifest

ObjectKey = tuple[str, str, str, str]  # group, kind, namespace, name


@dataclass
class AppObjects:
    """One Application's rendered objects: their identities always, the manifest and parsed
    objects only when someone needs them (a reused verdict carries the identities only)."""

    app: ResolvedApplication
    path: str  # where problems about its objects point: the experiment's spec
    keys: list[ObjectKey]
    _manifest: str | None = None
    _objects: list[RenderedObject] | None = None
    _load: Callable[[], str] | None = field(default=None, repr=False)

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


@dataclass(frozen=True)
class Verdict:
    """The problems of one experiment's objects (located at no file: the reader adds it) and
    the objects' identities, as the cache keeps them."""

    problems: tuple[Problem, ...]
    keys: tuple[ObjectKey, ...]

    def to_json(self) -> str:
        return json.dumps({"problems": [asdict(p) for p in self.problems],
                           "keys": [list(k) for k in self.keys]}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        data = json.loads(text)
        return cls(tuple(Problem(**p) for p in data["problems"]),
                   tuple(tuple(k) for k in data["keys"]))  # type: ignore[misc]


def expected_jobs(app: ResolvedApplication) -> list[str]:
    """The TFJob names an Application's values ask for: each run's of a sweep, else the
    experiment's (helm merges the value files in order; a later `runs` list replaces one)."""
    values: dict[str, Any] = {}
    for path in app.value_files:
        try:
            data = load_yaml_file(path)
        except InputError:
            continue  # helm's own error for this file is reported with the render
        if isinstance(data, dict):
            values = merge_values(values, data)
    runs = values.get("runs")
    if isinstance(runs, list) and runs:
        return [str(run.get("name")) for run in runs if isinstance(run, dict)]
    experiment = values.get("experiment")
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
                           "podSecurity": policies}, sort_keys=True)

    def verdict(self, app: ResolvedApplication, objects: Sequence[RenderedObject]) -> Verdict:
        found: list[Problem] = []
        for obj in objects:
            if self.schema_check:
                found += self.validator.problems(obj, "")
            found += policy.tfjob_problems(obj, "")
        found += policy.run_tfjob_problems(objects, expected_jobs(app), "")
        found += policy.data_safety_problems(objects, "")
        level, source = self.pod_security(app.namespace)
        found += policy.pod_security_problems(objects, app.namespace, level, source,
                                              self.validator.kube_version, "")
        found += wiring.object_problems(objects, app, self.projects.get(app.project), "")
        return Verdict(tuple(found), tuple(o.key for o in objects))

    def judge(
        self, app: ResolvedApplication, path: str, rendered: RenderResult | None,
        known: Verdict | None, load: Callable[[], str],
    ) -> tuple[AppObjects | None, Verdict | None, list[Problem]]:
        """(the Application's objects, a new verdict to keep, problems located at `path`).

        `rendered` is helm's fresh output (None when the verdict is known and helm was not
        asked); `known` a verdict from the cache; `load` renders the manifest on demand.
        """
        if rendered is not None and rendered.error:
            problem = Problem(path, pointer=f"helm template {app.name}",
                              message=helm_message(rendered.error),
                              hint="fix the spec (or the chart) so the chart renders")
            return None, None, [problem]
        manifest = rendered.manifest if rendered is not None else None
        fresh = None
        if known is None:
            assert manifest is not None
            try:
                objects = parse_manifest(manifest)
            except InputError as exc:
                return None, None, [Problem(path, message=exc.message)]
            known = fresh = self.verdict(app, objects)
            item = AppObjects(app, path, list(known.keys), manifest, objects)
        else:
            item = AppObjects(app, path, list(known.keys), manifest, _load=load)
        located = [Problem(path, p.line, p.col, p.pointer, p.message, p.hint)
                   for p in known.problems]
        return item, fresh, located


def helm_message(error: str) -> str:
    """helm's error on one line, without its advice to run with --debug."""
    lines = [line for line in error.splitlines()
             if line.strip() and not line.startswith("Use --debug")]
    return " ".join(lines) or "helm template failed"


def collisions(rendered: Sequence[AppObjects]) -> list[Problem]:
    """Two experiments rendering the same object would fight over it in the cluster (a
    PersistentVolume is cluster-wide, so equal names across namespaces collide too)."""
    owners: dict[ObjectKey, list[AppObjects]] = {}
    for item in rendered:
        for group, kind, namespace, name in item.keys:
            if kind in wiring.CLUSTER_SCOPED:
                namespace = ""
            owners.setdefault((group, kind, namespace, name), []).append(item)
    out = []
    for (_, kind, namespace, name), items in owners.items():
        if len({i.app.name for i in items}) < 2:
            continue
        for item in items:
            others = ", ".join(sorted({o.path for o in items if o is not item}))
            scope = "cluster-wide" if not namespace else f"in namespace {namespace}"
            out.append(Problem(item.path, pointer=f"{kind}/{name} $.metadata.name",
                               message=f"{kind} {name!r} ({scope}) is also rendered by {others}",
                               hint="rename one of the experiments"))
    return out


def kubeconform_problems(
    rendered: Sequence[AppObjects], validator: ManifestValidator
) -> list[Problem]:
    """Every rendered object through kubeconform, against the same schemas."""
    flat = [(item, obj) for item in rendered for obj in item.objects]
    failures = kubeconform.run([obj for _, obj in flat], validator)
    return [Problem(flat[i][0].path, pointer=f"{flat[i][1].ref} $",
                    message=f"kubeconform: {message}") for i, message in failures]


def argo_objects(
    root: Path, files: Mapping[str, bytes]
) -> tuple[list[tuple[str, RenderedObject]], list[Problem]]:
    """Every Kubernetes object in argo/*.yaml (the per-experiment files carry no kind), with
    the path messages show for its file."""
    out: list[tuple[str, RenderedObject]] = []
    problems: list[Problem] = []
    for rel, raw in sorted(files.items()):
        folder, _, name = rel.rpartition("/")
        if folder != layout.ARGO_DIR or not name.endswith((".yaml", ".yml")):
            continue
        shown = layout.shown(rel, root)
        try:
            objects = parse_manifest(raw.decode("utf-8"))
        except UnicodeDecodeError:
            problems.append(Problem(shown, message="not UTF-8 text"))
            continue
        except InputError as exc:
            problems.append(Problem(shown, message=exc.message))
            continue
        out += [(shown, obj) for obj in objects]
    return out, problems
