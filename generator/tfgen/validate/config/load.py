"""The repository configuration, `tfgen.yaml` at the repository root.

The file is read like a spec: loaded strictly, validated against its schema with the same
messages, and completed with the schema's defaults; without a file the built-in defaults apply.
Its `defaults` block is laid under every experiment spec before validation (`merge_defaults`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...repo import layout
from ...repo.resources import CONFIG_SCHEMA
from ..schema.defaults import apply_defaults
from ..schema.validator import schema_problems
from ..yaml.loader import Document, LoadError, load_file
from .clusters import Cluster, cluster_for, clusters_of, unknown_cluster
from .rules import config_problems

# The spec fields a namespace's policy gives a default to (`policy.<namespace>.<field>`): how
# its runs are run and queued. A spec's own value wins, then these, then `defaults`.
NAMESPACE_DEFAULTS = ("runtime", "queue", "priority")


@dataclass
class RepoConfig:
    """tfgen.yaml with every default filled in.

    `root` is the repository root (where tfgen.yaml is, else the starting directory), `path`
    the config file (None when the built-in defaults are used), `data` the complete config as
    a dict (keys as in the contract: kubernetesVersion, clusterDomain, argocd, networkPolicy,
    defaults).
    """

    root: Path
    path: Path | None
    data: dict[str, Any]
    document: Document | None = field(default=None, repr=False)

    @property
    def kubernetes_version(self) -> str:
        """The Kubernetes version the gate validates rendered objects against: the one
        cluster's, or the newest of the declared clusters' (each spec's own rules judge it by
        its cluster's version: `clusters`)."""
        if not self.data.get("clusters"):
            return str(self.data["kubernetesVersion"])
        return max((c.kubernetes_version for c in self.clusters),
                   key=lambda v: tuple(int(p) for p in v.split(".")))

    @functools.cached_property
    def clusters(self) -> list[Cluster]:
        """The clusters experiments run on: tfgen.yaml's `clusters`, else the one implicit
        cluster (`clusters.py`)."""
        return clusters_of(self.data, self.where)

    def cluster_of(self, namespace: object, spec: object) -> Cluster | None:
        """The cluster a spec of `namespace` runs on (`spec`: its `spec`); None when its
        `spec.cluster` names none of tfgen.yaml's (validate refuses it)."""
        return cluster_for(self.clusters, namespace, spec)

    def where(self, parts: tuple[str | int, ...]) -> str:
        """Where tfgen.yaml writes a setting: `tfgen.yaml:<line>`, or `tfgen.yaml default`."""
        if self.document is None or not _has(self.document.data, parts):
            return f"{layout.CONFIG_NAME} default"
        line, _ = self.document.locate(parts, key=True)
        return f"{layout.CONFIG_NAME}:{line}"

    @property
    def cluster_domain(self) -> str:
        return str(self.data["clusterDomain"])

    @property
    def argocd(self) -> dict[str, Any]:
        """The `argocd` block, with `destinations`: each cluster's Argo CD destination (its
        `server` or its `name`), the ones the AppProject allows (render/argo.py)."""
        return {**self.data["argocd"], "destinations": [
            {key: value for key, value in c.destination.items() if value}
            for c in self.clusters]}

    @property
    def namespaces(self) -> list[str]:
        return list(self.data["argocd"]["namespaces"])

    @property
    def network_policy(self) -> dict[str, Any]:
        """`networkPolicy`: whether experiments render NetworkPolicies, and the ingress
        controller's namespace that may reach TensorBoard."""
        return dict(self.data["networkPolicy"])

    def namespace_policy(self, namespace: str) -> dict[str, Any]:
        """The `policy` entry of a namespace, every default filled in (an absent entry is an
        empty one)."""
        entry = self.data["policy"].get(namespace)
        return dict(entry if isinstance(entry, dict) else _builtin_policy())

    def policy_source(self, namespace: str, key: str) -> str:
        """Where a namespace's policy setting is written: `tfgen.yaml:<line>`, or the schema's
        default when tfgen.yaml does not set it."""
        return self.where(("policy", namespace, key))

    @property
    def owners(self) -> dict[str, Any]:
        """`owners`: `platform` (a list) and `namespaces` (namespace -> list), each optional;
        empty when tfgen.yaml declares none (then no CODEOWNERS is generated)."""
        return dict(self.data.get("owners") or {})

    @property
    def max_runs(self) -> int:
        """`sweep.maxRuns`: the most runs one spec's sweep may make."""
        return int(self.data["sweep"]["maxRuns"])

    @property
    def defaults(self) -> dict[str, Any]:
        return dict(self.data["defaults"])

    def spec_defaults(self, namespace: object, spec: object = None) -> dict[str, Any]:
        """What is laid under a spec of `namespace` (`spec`: the spec's own `spec`, as
        written): the `defaults` block, with the namespace policy's own defaults of the spec
        fields it names (NAMESPACE_DEFAULTS) over it. A spec that leaves the queue
        (`queue: ""`) gets no default priority: a WorkloadPriorityClass orders the runs of a
        queue, and a priority without one is refused."""
        policy = self.namespace_policy(namespace) if isinstance(namespace, str) else {}
        own = {key: policy[key] for key in NAMESPACE_DEFAULTS if key in policy}
        unqueued = isinstance(spec, dict) and spec.get("queue") == ""
        defaults = self.defaults
        if not own and not (unqueued and "priority" in (defaults.get("spec") or {})):
            return defaults
        merged = {**(defaults.get("spec") or {}), **own}
        if unqueued:
            merged.pop("priority", None)
        return {**defaults, "spec": merged}

    @property
    def experiments_dir(self) -> Path:
        return self.root / layout.EXPERIMENTS_DIR


def experiment_cluster(config: RepoConfig, data: Mapping[str, Any]) -> Cluster:
    """The cluster an experiment (its data, as validated) runs on: what render sends its
    Application to, what `list` and `diff` show, and where the read side looks (the cluster's
    `context` in the kubeconfig; None: the current context). InputError for a `spec.cluster`
    that names no cluster of tfgen.yaml (validate refuses it first)."""
    meta, spec = data.get("metadata"), data.get("spec")
    cluster = config.cluster_of(meta.get("namespace") if isinstance(meta, Mapping) else None,
                                spec)
    if cluster is None:
        message, hint = unknown_cluster(config.clusters, dict(spec or {}).get("cluster"))
        raise InputError(f"{message} ({hint})")
    return cluster


def builtin_config(root: Path) -> RepoConfig:
    """The config of a repository whose tfgen.yaml sets nothing (tfgen's built-in defaults)."""
    return RepoConfig(root=root, path=None, data=builtin_data())


def builtin_data() -> dict[str, Any]:
    """The complete config of a repository whose tfgen.yaml sets nothing: the schema's
    defaults, their only home."""
    return apply_defaults({"apiVersion": "tfgen.io/v1", "kind": "RepoConfig"}, CONFIG_SCHEMA)


def builtin_policy() -> dict[str, Any]:
    """A namespace's `policy` entry when tfgen.yaml has none: the schema's defaults (a copy
    the caller may change)."""
    return copy.deepcopy(_builtin_policy())


@functools.cache
def _builtin_policy() -> dict[str, Any]:
    # computed once: asked twice per spec, it was a tenth of a render's time
    data = {"apiVersion": "tfgen.io/v1", "kind": "RepoConfig", "policy": {"x": {}}}
    return dict(apply_defaults(data, CONFIG_SCHEMA)["policy"]["x"])


def _has(data: Any, parts: tuple[str | int, ...]) -> bool:
    for part in parts:
        listed = isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        if not listed and not (isinstance(data, dict) and part in data):
            return False
        data = data[part]
    return True


# Who hears that tfgen.yaml is missing and the built-in defaults apply. The library never
# prints: the command line registers a listener that says so once on stderr, because results
# computed from defaults the user never chose (namespaces, NAS server, Kubernetes version) look
# exactly like results computed from their own file.
_builtin_listeners: list[Callable[[Path], None]] = []


def on_builtin_defaults(listener: Callable[[Path], None]) -> None:
    """Call `listener(start)` whenever a config is loaded without a tfgen.yaml (`start` is the
    folder searched from)."""
    _builtin_listeners.append(listener)


def builtin_defaults_note(start: Path) -> str:
    """The one line that says the built-in defaults apply, and how to get a file of one's own."""
    return (f"note: no {layout.CONFIG_NAME} in {layout.shown(start)} or above: using tfgen's "
            f"built-in defaults (`tfgen init` starts a repository with its own "
            f"{layout.CONFIG_NAME})")


def load_config(paths: Iterable[Path | str] = (), cwd: Path | None = None) -> RepoConfig:
    """Find, load, validate and complete tfgen.yaml; InputError listing every problem if invalid.

    The repository root is found from `paths` (else `cwd`) upwards (`layout.find_root`).
    """
    root = layout.find_root(paths, cwd)
    if root is None:
        start = (cwd or Path.cwd()).resolve()
        for listener in _builtin_listeners:
            listener(start)
        return builtin_config(start)
    path = root / layout.CONFIG_NAME
    try:
        document = load_file(path, display=layout.shown(path), root=root)
    except LoadError as exc:
        raise InputError(exc.message) from None
    problems = schema_problems(document, document.data, CONFIG_SCHEMA)
    data = apply_defaults(document.data, CONFIG_SCHEMA) if not problems else {}
    problems = problems or config_problems(document, data)
    if problems:
        raise InputError("invalid repository config:\n" + "\n".join(p.text() for p in problems))
    return RepoConfig(root=root, path=path, data=data, document=document)
