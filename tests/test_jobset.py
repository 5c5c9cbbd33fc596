"""Runtime jobset: every pod's TF_CONFIG is what training-operator v1.9 injects for the same
experiment as a TFJob, and a synced JobSet is what the cluster keeps.

The real helm renders each experiment twice, as a TFJob and as a JobSet (the same values, the
runtime switched). The JobSet's pods are expanded as the kubelet expands them: the Job
controller annotates pod `i` with its completion index, the env var declared from that
annotation comes first, and `$(VAR)` in TF_CONFIG's value expands from the variables declared
before it. The result must be byte-identical to tfgen's TF_CONFIG of the TFJob
(repo/runtimes/tfconfig.py, held to the operator's own code by test_tfconfig_referee.py).
Role layouts come from every bundled experiment and from hypothesis. The JobSet's upstream
CRD defaults, applied to what the chart renders, change nothing (a defaulted field inside the
immutable replicatedJobs would be a diff Argo CD can never sync). The gate's own rules on a
JobSet refuse what tfgen's chart would never render.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import copy_repo_parts, examples, mnist_written, node_paths, template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.gate.helm.command import find_helm
from tfgen.render.generated import dump_yaml
from tfgen.repo import naming, runtimes
from tfgen.repo.runtimes import indexedjob, jobset, tfconfig
from tfgen.validate import validate_repo
from tfgen.validate.rules.values import build_values

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tfjob-experiment"
JOBSET_SCHEMA = ROOT / "schemas" / "jobset.x-k8s.io" / "jobset_v1alpha2.json"
BUNDLED = sorted((ROOT / "experiments").glob("*.yaml"))
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\$")


def expand(value: str, declared: dict[str, str]) -> str:
    """The kubelet's `$(VAR)` expansion: a variable declared earlier is replaced, `$$` is `$`,
    anything else stays as written."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return declared.get(match.group(1), match.group(0))
    return _REFERENCE.sub(one, value)


def pod_env(container: dict[str, Any], index: int) -> dict[str, str]:
    """The env of pod `index` of an Indexed Job: fieldRefs to the completion-index annotation
    read as the Job controller writes it, each value expanded from those before it."""
    declared: dict[str, str] = {}
    for entry in container.get("env") or []:
        ref = ((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref == f"metadata.annotations['{indexedjob.COMPLETION_INDEX_ANNOTATION}']":
            declared[entry["name"]] = str(index)
        elif "value" in entry:
            declared[entry["name"]] = expand(entry["value"], declared)
    return declared


def render(values: dict[str, Any], runtime: str, tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / f"{runtime}.yaml"
    path.write_text(dump_yaml({**values, "runtime": runtime}), encoding="utf-8")
    name, namespace = values["experiment"]["name"], values["experiment"]["namespace"]
    text = template(CHART, name, namespace, [path], helm=find_helm())
    return [d for d in yaml.safe_load_all(text) if d]


def jobs_of(objects: list[dict[str, Any]], runtime: runtimes.Runtime) -> list[dict[str, Any]]:
    return [o for o in objects if runtimes.of_object(o["apiVersion"], o["kind"]) is runtime]


def jobset_tf_configs(job: dict[str, Any]) -> dict[tuple[str, int], str | None]:
    """(replica type, index) -> the TF_CONFIG each pod of a rendered JobSet sees."""
    out = {}
    for replicated in job["spec"]["replicatedJobs"]:
        spec = replicated["template"]["spec"]
        [container] = [c for c in spec["template"]["spec"]["containers"]
                       if c["name"] == runtimes.CONTAINER]
        replica_type = naming.REPLICA_TYPES[replicated["name"]]
        for index in range(spec["completions"]):
            out[replica_type, index] = pod_env(container, index).get("TF_CONFIG")
    return out


def operator_tf_configs(job: dict[str, Any], domain: str) -> dict[tuple[str, int], str | None]:
    return {(p.replica_type, p.index): p.tf_config for p in tfconfig.pods(job, domain)}


def assert_same_tf_config(values: dict[str, Any], tmp_path: Path) -> int:
    """The JobSet's TF_CONFIG, pod by pod, is the operator's for the TFJob; the pods compared."""
    tfjobs = jobs_of(render(values, "tfjob", tmp_path), runtimes.TFJOB)
    jobsets = jobs_of(render(values, "jobset", tmp_path), runtimes.JOBSET)
    assert [j["metadata"]["name"] for j in tfjobs] == [j["metadata"]["name"] for j in jobsets]
    compared = 0
    for tfjob, job in zip(tfjobs, jobsets, strict=True):
        ours = jobset_tf_configs(job)
        theirs = operator_tf_configs(tfjob, values["clusterDomain"])
        assert ours == theirs, job["metadata"]["name"]
        compared += len(ours)
    return compared


@pytest.mark.parametrize("spec", BUNDLED, ids=lambda p: p.stem)
def test_bundled_experiments_get_the_operators_tf_config(spec: Path, tmp_path: Path) -> None:
    result = validate_repo([spec])
    assert not result.problems
    values = build_values(result.experiments[0].data, cluster_domain="cluster.local")
    assert assert_same_tf_config(values, tmp_path) >= 2


ROLE_LAYOUTS = st.fixed_dictionaries(
    {"worker": st.integers(1, 4)},
    optional={"ps": st.integers(1, 3), "evaluator": st.just(1),
              "leader": st.sampled_from(["chief", "master"])})


@settings(max_examples=examples(12), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=ROLE_LAYOUTS, domain=st.sampled_from(["", "cluster.local"]))
def test_any_role_layout_gets_the_operators_tf_config(layout: dict[str, Any], domain: str,
                                                      tmp_path: Path) -> None:
    result = validate_repo([ROOT / "experiments" / "distributed-mnist.yaml"])
    data = json.loads(json.dumps(result.experiments[0].data))
    base = data["spec"]["roles"]["worker"]
    roles: dict[str, Any] = {"worker": {**base, "replicas": layout["worker"]}}
    for role in ("ps", "evaluator"):
        if role in layout:
            roles[role] = {**base, "replicas": layout[role], "gpus": 0}
    if "leader" in layout:
        roles[layout["leader"]] = {**base, "replicas": 1}
    data["spec"]["roles"] = roles
    data["spec"]["runPolicy"]["successPolicy"] = "AllWorkers"
    values = build_values(data, cluster_domain=domain)
    total = sum(role["replicas"] for role in roles.values())
    assert assert_same_tf_config(values, tmp_path) == total


def _defaults(schema: dict[str, Any], node: Any) -> Any:
    """`node` with every default of the CRD schema filled in where absent, as the API server
    fills in a custom resource's defaults."""
    types = schema.get("type")
    if isinstance(node, dict) and "object" in (types if isinstance(types, list) else [types]):
        out = dict(node)
        for key, sub in (schema.get("properties") or {}).items():
            if key not in out and "default" in sub:
                out[key] = sub["default"]
            if key in out:
                out[key] = _defaults(sub, out[key])
        return out
    if isinstance(node, list) and isinstance(schema.get("items"), dict):
        return [_defaults(schema["items"], item) for item in node]
    return node


def test_crd_defaults_change_no_rendered_jobset(tmp_path: Path) -> None:
    schema = json.loads(JOBSET_SCHEMA.read_text())
    jobsets = []
    for spec in BUNDLED:
        values = build_values(validate_repo([spec]).experiments[0].data)
        jobsets += jobs_of(render(values, "jobset", tmp_path), runtimes.JOBSET)
    assert len(jobsets) >= len(BUNDLED)
    for job in jobsets:
        assert _defaults(schema, job) == job, job["metadata"]["name"]
    # the test can fail: a port without its protocol would be defaulted
    broken = json.loads(json.dumps(jobsets[0]))
    pod = broken["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del pod["containers"][0]["ports"][0]["protocol"]
    assert _defaults(schema, broken) != broken


def test_expansion_follows_the_declared_order() -> None:
    """TF_CONFIG declared before the index would keep `$(JOB_COMPLETION_INDEX)` as written."""
    late = {"env": [{"name": "TF_CONFIG", "value": '{"index":$(JOB_COMPLETION_INDEX)}'},
                    {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "fieldPath": "metadata.annotations"
                                     "['batch.kubernetes.io/job-completion-index']"}}}]}
    assert pod_env(late, 3)["TF_CONFIG"] == '{"index":$(JOB_COMPLETION_INDEX)}'
    assert pod_env({"env": late["env"][::-1]}, 3)["TF_CONFIG"] == '{"index":3}'


@pytest.fixture(scope="module")
def walkthrough_jobset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    values = build_values(validate_repo([ROOT / "experiments" / "mnist-jobset.yaml"])
                          .experiments[0].data)
    [job] = jobs_of(render(values, "jobset", tmp_path_factory.mktemp("js")), runtimes.JOBSET)
    return job


def _broken(job: dict[str, Any], change: Any) -> list[str]:
    copy = json.loads(json.dumps(job))
    change(copy)
    return [f"{p.pointer}: {p.message}" for p in runtimes.JOBSET.job_problems(copy, "")]


def _replicated(job: dict[str, Any], index: int = 0) -> dict[str, Any]:
    replicated: dict[str, Any] = job["spec"]["replicatedJobs"][index]
    return replicated


def _container(job: dict[str, Any], index: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = (
        _replicated(job, index)["template"]["spec"]["template"]["spec"]["containers"][0])
    return container


@pytest.mark.parametrize(("change", "expected"), [
    (lambda j: _container(j, 1)["env"][1].update(value='{"cluster":{}}'),
     "PS 0 would see TF_CONFIG"),
    (lambda j: _container(j)["env"].reverse(), "the training operator gives it"),
    (lambda j: _container(j).update(name="trainer"), "no container named 'tensorflow'"),
    (lambda j: j["spec"].update(ttlSecondsAfterFinished=60), "ttlSecondsAfterFinished"),
    (lambda j: _replicated(j).update(replicas=2), "a role is one Job"),
    (lambda j: _replicated(j, 1)["template"]["spec"].update(parallelism=1),
     "every task of a TensorFlow cluster runs at once"),
    (lambda j: _replicated(j).update(name="launcher"), "is not a role"),
])
def test_the_gate_refuses_a_jobset_tfgen_would_not_render(
        walkthrough_jobset: dict[str, Any], change: Any, expected: str) -> None:
    assert runtimes.JOBSET.job_problems(walkthrough_jobset, "") == []
    found = _broken(walkthrough_jobset, change)
    assert any(expected in line for line in found), found


def test_the_gates_expansion_is_the_kubelets() -> None:
    """runtimes/indexedjob.py's expansion against this file's, on hostile text."""
    declared = {"A": "1", "B": "$(A)"}
    for value in ["$(A)", "$$(A)", "$(C)", "$(A", "x$", "$(A)$(B)", "$$$(A)", "(A)$", ""]:
        assert indexedjob.expand(value, declared) == expand(value, declared), value


def test_explain_and_run_local_see_the_operators_tfjob() -> None:
    """explain (and run-local, which runs what explain lists) sees a JobSet as the TFJob the
    operator would run: the same TF_CONFIG, and none of the runtime's own env in the pods."""
    from tfgen.run.explain import explain_spec  # runs helm

    explanation = explain_spec(ROOT / "experiments" / "mnist-jobset.yaml")
    assert explanation.runtime == runtimes.JOBSET.name
    assert len(explanation.pods) == 5
    for pod in explanation.pods:
        assert not {str(e.get("name")) for e in pod.env} & set(jobset.RUNTIME_ENV), pod.name
        assert pod.tf_config is not None and f'"type":"{pod.task_type}"' in pod.tf_config



@pytest.mark.parametrize("domain", ["", "cluster.local"])
def test_one_reading_of_the_cluster_domain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           domain: str) -> None:
    """tfgen.yaml's clusterDomain is the operator's CUSTOM_CLUSTER_DOMAIN, read the same way by
    every command on both runtimes: the chart writes it into a JobSet's TF_CONFIG, explain
    shows it for either runtime, and check holds the JobSet to the operator running with it."""
    from tfgen.cli import main

    repo = copy_repo_parts(tmp_path / "repo")
    config = repo / "tfgen.yaml"
    config.write_text(re.sub(r"(?m)^clusterDomain: .*$", f'clusterDomain: "{domain}"',
                             config.read_text()))
    monkeypatch.chdir(repo)
    runner = CliRunner()
    for command in (["validate"], ["render"], ["check", "--no-cache"]):
        result = runner.invoke(main, command, catch_exceptions=False)
        assert result.exit_code == 0, (command, result.output)
    suffix = f".svc{'.' + domain if domain else ''}:2222"
    for name in ("mnist-jobset", "distributed-mnist"):
        result = runner.invoke(main, ["explain", "--format", "json", name],
                               catch_exceptions=False)
        assert result.exit_code == 0, result.output
        explained = json.loads(result.stdout)
        addresses = [a for group in explained["cluster"].values() for a in group]
        assert addresses and all(a.endswith(suffix) and a.count(".svc") == 1
                                 for a in addresses), addresses
    # a JobSet written for another domain is not what the operator's reading gives
    other = "" if domain else "cluster.local"
    values = build_values(validate_repo([repo / "experiments" / "mnist-jobset.yaml"])
                          .experiments[0].data, cluster_domain=other)
    [job] = jobs_of(render(values, "jobset", tmp_path), runtimes.JOBSET)
    found = runtimes.JOBSET.job_problems(job, domain)
    assert found and all("the training operator gives it" in p.message for p in found), found


@pytest.mark.parametrize(("version", "refused"), [("1.25", True), ("1.26", False)])
def test_exit_code_needs_the_jobs_pod_failure_policy(tmp_path: Path, version: str,
                                                     refused: bool) -> None:
    """restartPolicy ExitCode is the Job podFailurePolicy on runtime jobset: alpha and off
    before Kubernetes 1.26, so refused there, at the role's line, as worker 0's success is
    refused before 1.33."""
    from tfgen.validate import load_config, validate_paths

    (tmp_path / "tfgen.yaml").write_text(
        f'apiVersion: tfgen.io/v1\nkind: RepoConfig\nkubernetesVersion: "{version}"\n')
    (tmp_path / "experiments").mkdir()
    data = json.loads(json.dumps(mnist_written(name="exit-code")))
    data["spec"].update(runtime="jobset")
    data["spec"]["roles"]["worker"]["restartPolicy"] = "ExitCode"
    spec = tmp_path / "experiments" / "exit-code.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    found = [p for p in validate_paths([spec], load_config(cwd=tmp_path)).problems
             if "podFailurePolicy" in p.message]
    if not refused:
        assert found == []
        return
    assert [p.pointer for p in found] == ["$.spec.roles.worker.restartPolicy"]
    line = next(i for i, row in enumerate(spec.read_text().splitlines(), 1)
                if "restartPolicy: ExitCode" in row)
    assert found[0].line == line and "Kubernetes 1.26" in found[0].message, found


def test_any_node_of_any_type_gives_problems_never_a_crash(
        walkthrough_jobset: dict[str, Any]) -> None:
    """A chart may render anything (it is the repository's own): every node of a rendered
    JobSet replaced by every other type gives problems from both runtimes' rules, or none."""
    paths = node_paths(walkthrough_jobset)
    assert len(paths) > 100
    for path in paths:
        for other in (None, 1, "x", [], {}, [1], [None]):
            copy = json.loads(json.dumps(walkthrough_jobset))
            node = copy
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = other
            runtimes.JOBSET.job_problems(copy, "")
            runtimes.TFJOB.job_problems(runtimes.JOBSET.as_tfjob(copy), "")


def test_the_network_policy_selects_the_runs_pods_by_the_runtimes_labels(
        tmp_path: Path) -> None:
    """The chart's selector of a JobSet run's pods and repo/runtimes/jobset.py name the same
    labels (the JobSet controller's): one fact, held in step, for each runtime."""
    values = build_values(validate_repo([ROOT / "experiments" / "mnist-jobset.yaml"])
                          .experiments[0].data)
    for runtime in runtimes.RUNTIMES:
        objects = render(values, runtime.name, tmp_path)
        [policy] = [o for o in objects if o["kind"] == "NetworkPolicy"
                    and o["metadata"]["name"] == values["experiment"]["name"]]
        selector = runtime.run_selector(values["experiment"]["name"])
        assert policy["spec"]["podSelector"] == {"matchLabels": selector}, runtime.name
        assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {
            "matchLabels": selector}}]}], runtime.name
