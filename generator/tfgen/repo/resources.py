"""The files tfgen ships with its code: JSON schemas, Jinja2 templates and the Helm chart.

They are package data, found through `importlib.resources`, so an installed wheel works as well
as a checkout. In the source tree `schemas/` and `charts/tfjob-experiment/` stay where people
edit them (the top-level layout is fixed); the package reaches them through the symlinks
`tfgen/schemas` and `tfgen/chart`, which a wheel build resolves into real copies.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

EXPERIMENT_SCHEMA = "experiment.schema.json"
CONFIG_SCHEMA = "repo-config.schema.json"
HEALTH_LUA = "tfjob-health.lua"


def _package_dir(name: str) -> Path:
    # tfgen is installed as files (helm and kubeconform read schemas and the chart from disk),
    # never zipped, so the package's resources are plain paths.
    return Path(str(resources.files("tfgen").joinpath(name)))


def schema_dir() -> Path:
    """The folder of tfgen's schemas: the spec, tfgen.yaml, and the rendered-object kinds
    (TFJob, Argo CD) that Kubernetes' own schemas do not cover."""
    return _package_dir("schemas")


def templates_dir() -> Path:
    """The Jinja2 templates of the argo/ wiring, and the TFJob health check they embed."""
    return _package_dir("templates")


def chart_dir() -> Path:
    """The Helm chart as shipped with tfgen (a repository renders its own copy, see layout)."""
    return _package_dir("chart")


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


def health_lua() -> str:
    """The Lua health check for kubeflow.org/TFJob that the argocd-cm patch embeds."""
    return (templates_dir() / HEALTH_LUA).read_text(encoding="utf-8")


def kubernetes_schemas_package() -> Path:
    """The kubernetes-validate package's folder (its `kubernetes-json-schema/` and its
    `version.py`): found, not imported, because importing it costs a fifth of a second that
    only its data files would pay for."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("kubernetes_validate")
    return Path(spec.origin).resolve().parent
