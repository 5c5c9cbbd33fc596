"""Each fact has one home in tfgen (repo/naming.py, repo/chart.py, the experiment schema's
defaults); the copies that other tools need (the JSON schemas, the Helm chart) must agree with
it. The chart is rendered by the real helm for every ci scenario and bundled experiment, and
what it renders is compared with what tfgen says it renders."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from helpers import REPO_ROOT
from tfgen.gate.argo.applications import resolve_applications
from tfgen.gate.documents.manifests import parse_manifest
from tfgen.gate.helm.batch import BatchRenderer
from tfgen.gate.helm.command import RenderJob
from tfgen.gate.helm.jobs import jobs_for
from tfgen.repo import chart, layout, naming, resources, runtimes
from tfgen.validate.rules.values import build_values
from tfgen.validate.schema.defaults import apply_defaults

CHART = REPO_ROOT / layout.CHART_PATH
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))


@cache
def rendered() -> dict[Path, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every ci scenario and bundled experiment: {values file: (values, rendered objects)},
    all in one helm process."""
    jobs = jobs_for(resolve_applications(REPO_ROOT).applications, "1.30")
    for values in CI_VALUES:
        experiment = yaml.safe_load(values.read_text())["experiment"]
        jobs.append(RenderJob(experiment["name"], experiment["namespace"], CHART, (values,),
                              "1.30"))
    results = BatchRenderer(workers=1).render(jobs)
    out = {}
    for job, result in zip(jobs, results, strict=True):
        assert not result.error, (job.name, result.error)
        values = yaml.safe_load(job.values_files[0].read_text())
        out[job.values_files[0]] = (values, [o.doc for o in parse_manifest(result.manifest)])
    assert len(out) == len(jobs) >= len(CI_VALUES) + 3
    return out


def schema_property(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    node = schema
    for key in path:
        node = node["properties"][key]
    return node


def test_name_rule_and_budget_agree_with_both_schemas() -> None:
    spec_name = schema_property(resources.schema(resources.EXPERIMENT_SCHEMA), "metadata", "name")
    assert spec_name["pattern"] == naming.DNS1035.pattern
    assert spec_name["maxLength"] == naming.MAX_NAME_LENGTH == 51
    values_schema = json.loads((CHART / "values.schema.json").read_text())
    chart_name = schema_property(values_schema, "experiment", "name")
    assert chart_name["maxLength"] == naming.MAX_NAME_LENGTH
    assert chart_name["pattern"] == "^$|" + naming.DNS1035.pattern


def test_the_longest_derived_names_fit_a_dns_label() -> None:
    name = "x" * naming.MAX_NAME_LENGTH
    assert naming.is_experiment_name(name) and not naming.is_experiment_name(name + "x")
    derived = [naming.tensorboard_name(name), naming.claim_name(name),
               naming.pod_name(name, "Evaluator", 0), naming.pod_name(name, "Worker", 999)]
    assert max(len(n) for n in derived) == naming.MAX_LABEL


def test_roles_agree_with_both_schemas_and_the_chart() -> None:
    spec_roles = schema_property(resources.schema(resources.EXPERIMENT_SCHEMA), "spec", "roles")
    assert list(spec_roles["properties"]) == list(naming.LEADER_ROLES) + [
        r for r in naming.ROLES if r not in naming.LEADER_ROLES]
    values_schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(schema_property(values_schema, "roles")["properties"]) == set(naming.ROLES)
    seen: dict[str, str] = {}
    for values, objects in rendered().values():
        runtime = runtimes.of_values(values)
        tfjobs = [runtime.as_tfjob(o) for o in objects
                  if runtimes.of_object(o["apiVersion"], o["kind"]) is runtime]
        assert len(tfjobs) == len(values.get("runs") or [None])  # one job per run
        for tfjob in tfjobs:
            for role in values["roles"]:
                replica_type = naming.REPLICA_TYPES[role]
                assert replica_type in tfjob["spec"]["tfReplicaSpecs"], (role, tfjob["metadata"])
                seen[role] = replica_type
    assert seen == naming.REPLICA_TYPES  # every role is exercised by some scenario


def test_names_the_chart_derives_are_tfgen_s() -> None:
    checked = 0
    for values, objects in rendered().values():
        name, namespace = values["experiment"]["name"], values["experiment"]["namespace"]
        by_kind = {(o["kind"], o["metadata"]["name"]) for o in objects}
        suffixes = [run["suffix"] for run in values.get("runs") or [{"suffix": ""}]]
        kind = runtimes.of_values(values).kind
        for suffix in suffixes:
            assert (kind, naming.job_name(name, suffix)) in by_kind
        if not values["storage"].get("existingClaim"):
            assert (chart.VOLUME, naming.volume_name(namespace, name)) in by_kind
            assert (chart.CLAIM, naming.claim_name(name)) in by_kind
            checked += 1
        if values.get("tensorboard", {}).get("enabled", True):
            assert ("Deployment", naming.tensorboard_name(name)) in by_kind
            assert ("Service", naming.tensorboard_name(name)) in by_kind
    assert checked >= 5


def test_the_chart_renders_exactly_the_kinds_tfgen_lists() -> None:
    kinds: dict[tuple[str, str], set[bool]] = {}
    for _, objects in rendered().values():
        for obj in objects:
            group = obj["apiVersion"].rpartition("/")[0]
            kinds.setdefault((group, obj["kind"]), set()).add("namespace" in obj["metadata"])
    assert kinds == {(k.group, k.kind): {k.namespaced} for k in chart.KINDS}


def test_chart_defaults_are_the_schema_defaults() -> None:
    """What values.yaml says a value defaults to is what an experiment that leaves it out
    gets. Only the fields a minimal experiment must write are left out of the comparison."""
    minimal = apply_defaults({
        "apiVersion": "tfgen.io/v1", "kind": "Experiment",
        "metadata": {"name": "x", "owner": "o"},
        "spec": {"roles": {"worker": {}},
                 "storage": {"existingClaim": "c", "mountPath": "/training"},
                 "tensorboard": {"logDir": "/training/tensorflow/logs"}},
    })
    built = build_values(minimal)
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    # What every experiment writes (the chart's "" means: must be set) and its roles.
    # A sweep's runs are written only for a sweep (a spec without one keeps the values it had).
    written = {"experiment.name", "experiment.namespace", "experiment.owner",
               "storage.existingClaim", "roles", "runs"}
    compared = []
    for path, value in leaves(defaults):
        if path in written:
            continue
        assert lookup(built, path) == value, path
        compared.append(path)
    assert {"imagePullPolicy", "tensorboard.image", "runPolicy.cleanPodPolicy",
            "storage.nas.storageClassName", "tensorboard.service.port"} <= set(compared)
    assert sorted(p for p, _ in leaves(built) if p.split(".")[0] != "roles") == sorted(
        p for p, _ in leaves(defaults) if p not in ("roles", "runs"))


def leaves(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, value) of every leaf; empty mappings are leaves."""
    if isinstance(data, dict) and data:
        out = []
        for key, value in data.items():
            out += leaves(value, f"{prefix}.{key}" if prefix else key)
        return out
    return [(prefix, data)]


def lookup(data: Any, path: str) -> Any:
    for key in path.split("."):
        data = data[key]
    return data


def test_schemas_ship_with_the_package() -> None:
    assert resources.schema_dir().resolve() == (REPO_ROOT / "schemas").resolve()
    assert (resources.chart_dir() / "Chart.yaml").resolve() == (CHART / "Chart.yaml").resolve()
    for lua in (runtimes.TFJOB.health_lua, runtimes.JOBSET.health_lua):
        assert Path(resources.templates_dir(), lua).is_file()
