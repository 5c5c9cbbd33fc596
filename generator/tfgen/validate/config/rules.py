"""What tfgen.yaml's schema cannot say: no experiment namespace of the platform's own, every
registry policy entry a registry or repository prefix, a Kubernetes version tfgen has the
schemas of, the revision Argo CD follows a name git takes. Each problem at its line in
tfgen.yaml; `tfgen init` runs the same rules on the file it is about to write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...problems import Problem
from ...repo import images, naming, resources
from ..schema.messages import shown
from ..yaml.document import Document, PointerParts, pointer_text
from .clusters import cluster_rules


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _namespaces(data: dict[str, Any]) -> Iterator[tuple[PointerParts, Any]]:
    """Every place tfgen.yaml names a namespace experiments may run in."""
    argocd = _mapping(data.get("argocd"))
    listed = argocd.get("namespaces")
    for index, namespace in enumerate(listed if isinstance(listed, list) else []):
        yield ("argocd", "namespaces", index), namespace
    defaults = data.get("defaults")
    meta = defaults.get("metadata") if isinstance(defaults, dict) else None
    if isinstance(meta, dict) and "namespace" in meta:
        yield ("defaults", "metadata", "namespace"), meta["namespace"]


def _registries(data: dict[str, Any]) -> Iterator[tuple[PointerParts, Any]]:
    policy = data.get("policy")
    for namespace, rules in (policy.items() if isinstance(policy, dict) else ()):
        entries = rules.get("registries") if isinstance(rules, dict) else None
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            yield ("policy", namespace, "registries", index), entry


def platform_problem(namespace: object, argocd_namespace: object) -> tuple[str, str] | None:
    """(message, hint) when experiments may not run in `namespace`; the one wording for
    tfgen.yaml, `tfgen init --namespace` and every spec."""
    whose = naming.platform_namespace(namespace, argocd_namespace)
    if whose is None:
        return None
    return (f"namespace {shown(str(namespace))} belongs to {whose}; no experiment may run "
            "there", "use a namespace of the team's own")


def config_rules(data: dict[str, Any]) -> Iterator[tuple[PointerParts, str, str]]:
    """(pointer, message, hint) of every problem of a schema-valid tfgen.yaml's data, its
    defaults applied."""
    argocd = _mapping(data.get("argocd"))
    for parts, namespace in _namespaces(data):
        said = platform_problem(namespace, argocd.get("namespace"))
        if said:
            yield parts, *said
    for parts, entry in _registries(data):
        try:
            images.parse_prefix(str(entry))
        except images.ImageError as exc:
            yield (parts, f"{shown(str(entry))} is not a registry or repository prefix: "
                   f"{exc.message}", "a registry host, then optionally repository path parts")
    version = data.get("kubernetesVersion")
    known = resources.kubernetes_versions()
    if isinstance(version, str) and known and version not in known:
        yield (("kubernetesVersion",), f"Kubernetes {shown(version)} is not a version tfgen "
               f"knows: its schemas (kubernetes-validate) cover {known[0]} to {known[-1]}",
               "pick one of those, or upgrade kubernetes-validate: "
               "`python -m pip install --upgrade kubernetes-validate`")
    revision = argocd.get("targetRevision")
    why = naming.ref_name_problem(revision) if isinstance(revision, str) else None
    if why:
        yield (("argocd", "targetRevision"), f"{shown(str(revision))} is not a name git takes "
               f"for a branch, tag or commit: {why}", "e.g. main")


def config_problems(document: Document, data: dict[str, Any]) -> list[Problem]:
    """The rules on tfgen.yaml (`clusters.py`'s among them), each at its line."""
    out = []
    for parts, message, hint in (*config_rules(data), *cluster_rules(document.data, data)):
        line, col = document.locate(parts)
        out.append(Problem(document.path, line, col, pointer_text(parts), message, hint))
    return out
