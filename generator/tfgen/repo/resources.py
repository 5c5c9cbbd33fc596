"""The files tfgen ships with its code: JSON schemas, Jinja2 templates and the Helm chart.

They are package data, found through `importlib.resources`, so an installed wheel works as well
as a checkout. In the source tree `schemas/` and `charts/tfjob-experiment/` stay where people
edit them (the top-level layout is fixed); the package reaches them through the symlinks
`tfgen/schemas` and `tfgen/chart`, which a wheel build resolves into real copies.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

EXPERIMENT_SCHEMA = "experiment.schema.json"
CONFIG_SCHEMA = "repo-config.schema.json"
# The `$id` of the Kubernetes definitions (kubernetes-validate's `_definitions.json` of the
# target version), through which the CRD schemas refer to ObjectMeta.
KUBERNETES_DEFINITIONS = "https://kubernetes.io/api/_definitions.json"
# Where the schema of a CRD kind lives under schemas/: `kubeflow.org/tfjob_v1.json`, as
# kubeconform names CRD schemas. scripts/crd_schemas.py writes them (from schemas/upstream/).
_CRD_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+)"
                              r"/(v[0-9]+((alpha|beta)[0-9]+)?)")
_CRD_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _package_dir(name: str) -> Path:
    # tfgen is installed as files (helm and kubeconform read schemas and the chart from disk),
    # never zipped, so the package's resources are plain paths.
    return Path(str(resources.files("tfgen").joinpath(name)))


def schema_dir() -> Path:
    """The folder of tfgen's schemas: the spec, tfgen.yaml, and the rendered-object kinds
    (TFJob, Argo CD) that Kubernetes' own schemas do not cover."""
    return _package_dir("schemas")


def templates_dir() -> Path:
    """The Jinja2 templates of the argo/ wiring, and the Lua health checks they embed."""
    return _package_dir("templates")


def chart_dir() -> Path:
    """The Helm chart as shipped with tfgen (a repository renders its own copy, see layout)."""
    return _package_dir("chart")


def crd_schema_name(api_version: str, kind: str) -> str | None:
    """`kubeflow.org/tfjob_v1.json` for `kubeflow.org/v1` `TFJob`: the path under schemas/ of
    a CRD kind's schema; None for what cannot be a CRD's (a core group, or odd characters that
    must never become a path)."""
    group = _CRD_API_VERSION.fullmatch(api_version)
    if group is None or _CRD_KIND.fullmatch(kind) is None:
        return None
    return f"{group.group(1)}/{kind.lower()}_{group.group(5)}.json"


def crd_schema(api_version: str, kind: str, folder: Path | None = None) -> Path | None:
    """The schema file tfgen ships for a CRD kind (in `folder`, by default tfgen's schemas),
    None when it ships none."""
    name = crd_schema_name(api_version, kind)
    if name is None:
        return None
    path = (folder or schema_dir()) / name
    return path if path.is_file() else None


@cache
def schema(name: str) -> dict[str, Any]:
    """One of tfgen's JSON schemas, parsed once per process."""
    with open(schema_dir() / name, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def role_bounds() -> tuple[int, int]:
    """The most replicas a role may have and the most GPUs per replica, as the spec schema
    says (their one home): the command line's ranges read them here."""
    roles = schema(EXPERIMENT_SCHEMA)["$defs"]
    many = roles["roleMany"]["allOf"][0]["properties"]["replicas"]
    return int(many["maximum"]), int(roles["role"]["properties"]["gpus"]["maximum"])


def health_lua(name: str) -> str:
    """One of the Lua health checks that the argocd-cm patch embeds (a runtime's
    `health_lua`)."""
    return (templates_dir() / name).read_text(encoding="utf-8")


def kubernetes_schemas_package() -> Path:
    """The kubernetes-validate package's folder (its `kubernetes-json-schema/` and its
    `version.py`): found, not imported, because importing it costs a fifth of a second that
    only its data files would pay for."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("kubernetes_validate")
    return Path(spec.origin).resolve().parent


def kubernetes_schema_root() -> Path:
    """The folder of Kubernetes JSON schemas shipped inside the kubernetes-validate package."""
    return kubernetes_schemas_package() / "kubernetes-json-schema"


@cache
def kubernetes_versions(root: Path | None = None) -> tuple[str, ...]:
    """The Kubernetes minor versions (`1.30`) whose schemas are available, oldest first: the
    versions tfgen knows (tfgen.yaml's kubernetesVersion is one of them)."""
    found = set()
    for entry in (root or kubernetes_schema_root()).iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match:
            found.add((int(match.group(1)), int(match.group(2))))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))
