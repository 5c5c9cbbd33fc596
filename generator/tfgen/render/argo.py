"""The Argo CD wiring in argo/, rendered from tfgen.yaml.

The AppProject, the ApplicationSet, the bootstrap Application and the argocd-cm health-check
patch come from Jinja2 templates packaged with tfgen, filled from the `argocd` block of the
repository config. Per experiment, `app.yaml` is the small file the ApplicationSet's git files
generator reads; it always carries every key the template uses, because `missingkey=error`
turns a missing key into a generator failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from ..repo import chart, layout, naming, resources, runtimes
from .generated import GeneratedFile, dump_yaml, quoted

if TYPE_CHECKING:
    import jinja2

    from ..validate import Cluster

# The Lua health checks the argocd-cm patch carries, by the kind each judges: Argo CD ships
# none for either runtime.
HEALTH_CHECKS = tuple((runtime.key, runtime.health_lua) for runtime in runtimes.RUNTIMES)
# The merge patch for argocd-cm that holds them (one file, one `kubectl patch`).
HEALTH_FILE = f"{layout.ARGO_DIR}/argocd-cm-health.yaml"

# What the generated headers name as the source of the cluster-wide files.
CONFIG_SOURCE = layout.CONFIG_NAME
HEALTH_LUA_SOURCES = tuple(f"generator/tfgen/templates/{lua}" for _, lua in HEALTH_CHECKS)
# The files the ApplicationSet's git files generator reads: one per experiment.
GENERATOR_GLOB = f"{layout.GENERATED_DIR}/*/{layout.APP_FILE}"

# The first Argo CD version whose AppProject whitelists match resource names (globs).
NAME_PATTERNS_SINCE = (3, 3)

# The argo/ files rendered from the repository config, with their templates.
ARGO_TEMPLATES = {
    layout.PROJECT_FILE: "project.yaml.j2",
    layout.APPLICATIONSET_FILE: "applicationset.yaml.j2",
    f"{layout.ARGO_DIR}/bootstrap.yaml": "bootstrap.yaml.j2",
    HEALTH_FILE: "argocd-cm-health.yaml.j2",
}

# What Kueue writes into a queued TFJob or JobSet at admission (Kueue v0.19, as the lab's
# tests find it): `suspend`, false, and in every pod template the admitted flavour's
# nodeSelector and tolerations, three labels and an annotation. Every Application ignores them
# in the diff and keeps them as they are live when a sync applies (RespectIgnoreDifferences):
# self-heal never re-suspends an admitted job, nor takes Kueue's labels out of a started
# JobSet's replicatedJobs, which the JobSet webhook holds immutable.
# - `suspend` is ignored where Kueue owns it (managedFieldsManagers: Kueue's field manager wrote
#   it): a job Kueue does not queue keeps Git's suspend, so suspending it in Git stops it.
# - What Kueue adds to a pod template is ignored by its path (jq): Argo CD's managed-fields rule
#   covers only a field that Git sets too.
KUEUE_MANAGER = "kueue"
KUEUE_POD_FIELDS = ("spec.nodeSelector", "spec.tolerations")
KUEUE_POD_LABELS = ("kueue.x-k8s.io/podset", "kueue.x-k8s.io/local-queue-name",
                    "kueue.x-k8s.io/cluster-queue-name")
KUEUE_POD_ANNOTATIONS = ("kueue.x-k8s.io/workload",)


def _go_placeholder(key: str) -> str:
    """`{{.key}}` for the ApplicationSet template (Jinja2 would otherwise eat the braces)."""
    return "{{." + key + "}}"


def _yaml_scalar(value: Any) -> str:
    # Always quoted, whatever the text: the writer's double-quoted form, safe for any character
    # (JSON alone would leave U+2028 or C1 controls raw, which YAML folds or forbids).
    return quoted(value) if isinstance(value, str) else json.dumps(value)


@cache
def _environment() -> jinja2.Environment:
    # imported here: a run that writes no argo/ file (a warm `tfgen check`) never needs it
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(resources.templates_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["q"] = _yaml_scalar
    # The core API group is written "" (as kubectl and Argo CD write it), others plain.
    env.filters["kind_group"] = lambda group: group or '""'
    env.globals["go"] = _go_placeholder
    return env


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def cluster_whitelist(argocd: Mapping[str, Any]) -> list[dict[str, str]]:
    """The AppProject's clusterResourceWhitelist: the chart's cluster-scoped kinds, the
    PersistentVolume narrowed to tfgen's names (one glob per namespace) where Argo CD can
    match names, so an experiment cannot create or take over any other volume of the cluster."""
    by_name = bool(argocd.get("version")) and (
        _version(str(argocd["version"])) >= NAME_PATTERNS_SINCE)
    out = []
    for k in chart.KINDS:
        if k.namespaced:
            continue
        if by_name and k.kind == chart.VOLUME:
            out += [{"group": k.group, "kind": k.kind, "name": naming.volume_name_pattern(ns)}
                    for ns in sorted(set(argocd.get("namespaces") or ()))]
        else:
            out.append({"group": k.group, "kind": k.kind})
    return out


def health_key(api_version: str, kind: str) -> str:
    """The argocd-cm key of a kind's Lua health check: `resource.customizations.health.
    <group>_<kind>`."""
    return f"resource.customizations.health.{runtimes.group_of(api_version)}_{kind}"


def health_checks() -> dict[str, str]:
    """Each argocd-cm health key with the Lua it holds."""
    return {health_key(*kind): resources.health_lua(lua) for kind, lua in HEALTH_CHECKS}


def kueue_ignored() -> list[dict[str, Any]]:
    """The Applications' ignoreDifferences: per runtime kind, what Kueue writes into it."""
    def paths(template: str) -> list[str]:
        return [*(f"{template}.{field}" for field in KUEUE_POD_FIELDS),
                *(f'{template}.metadata.labels["{key}"]' for key in KUEUE_POD_LABELS),
                *(f'{template}.metadata.annotations["{key}"]' for key in KUEUE_POD_ANNOTATIONS)]
    return [{"group": runtime.group, "kind": runtime.kind,
             "managedFieldsManagers": [KUEUE_MANAGER],
             "jqPathExpressions": paths(runtime.pod_templates_jq)}
            for runtime in runtimes.RUNTIMES]


def destinations(argocd: Mapping[str, Any]) -> list[dict[str, str]]:
    """The Argo CD destinations of the repository's clusters (`RepoConfig.argocd`), each a
    `server` or a `name`; without them, the one `destinationServer`."""
    found = argocd.get("destinations")
    if found:
        return [dict(d) for d in found]
    return [{"server": str(argocd["destinationServer"])}]


def argo_files(argocd: Mapping[str, Any]) -> list[GeneratedFile]:
    """The cluster-wide argo/ files for the `argocd` block of tfgen.yaml."""
    context = {
        "argocd": argocd,
        "cluster_whitelist": cluster_whitelist(argocd),
        "signature_keys": list(argocd.get("signatureKeys") or ()),
        "namespaces": sorted(set(argocd.get("namespaces") or ())),
        "destinations": destinations(argocd),
        "applicationset_name": naming.APPLICATIONSET_NAME,
        "bootstrap_name": naming.BOOTSTRAP_NAME,
        "generator_glob": GENERATOR_GLOB,
        "chart_path": layout.CHART_PATH,
        "experiments_dir": layout.GENERATED_DIR,
        "values_file": layout.VALUES_FILE,
        "namespaced_kinds": [k for k in chart.KINDS if k.namespaced],
        "health_checks": {key: lua.rstrip("\n") for key, lua in health_checks().items()},
        "health_file": HEALTH_FILE,
        "kueue_ignored": kueue_ignored(),
    }
    files = []
    for path, template in ARGO_TEMPLATES.items():
        sources: tuple[str, ...] = (CONFIG_SOURCE,)
        if path == HEALTH_FILE:
            sources = (CONFIG_SOURCE, *HEALTH_LUA_SOURCES)
        body = _environment().get_template(template).render(context)
        files.append(GeneratedFile(path=path, sources=sources, body=body))
    return files


def app_file(name: str, namespace: str, owner: str, source: str, cluster: Cluster
             ) -> GeneratedFile:
    """argo/experiments/<name>/app.yaml: the git files generator's parameters for one run,
    with its cluster: tfgen's name for it and its Argo CD destination (`server` or `name`, the
    other empty: the template names both, and `missingkey=error` wants every key)."""
    data = {"name": name, "namespace": namespace, "owner": owner, "source": source,
            "cluster": cluster.name, "destination": cluster.destination}
    _, path = layout.generated_paths(name)
    return GeneratedFile(path=path, sources=(source,), body=dump_yaml(data))


