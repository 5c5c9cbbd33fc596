"""The argo/ wiring: strict schemas, least privilege, the ApplicationSet resolved as Argo CD
would, Kueue's fields ignored, and the TFJob and JobSet Lua health checks run in a real Lua
5.1 interpreter with only the libraries Argo CD opens."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import lupa
import lupa.lua51
import pytest
import yaml
from helpers import ARGOCD, build_file_tree, examples, experiment, mnist_spec
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.gate.argo import applications
from tfgen.gate.documents.manifests import ManifestValidator
from tfgen.render import apply_plan, argo, plan_render
from tfgen.repo import chart, layout, resources, runtimes

# The Argo CD kinds' schemas, converted from Argo CD's CRDs, as the gate finds them.
VALIDATOR = ManifestValidator("1.30", resources.schema_dir())


def schema_errors(document: dict[str, Any]) -> list[str]:
    assert VALIDATOR.schema_file(document["apiVersion"], document["kind"]) is not None
    return [f"{pointer}: {message}" for pointer, message in VALIDATOR.errors(document)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    experiments = [
        experiment(mnist_spec()),
        experiment(mnist_spec(name="team-run", namespace="ml-team")),
    ]
    apply_plan(plan_render(root, experiments, ARGOCD))
    return root


def load(root: Path, rel: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((root / rel).read_text())
    return data


@pytest.mark.parametrize("rel", ["argo/project.yaml", "argo/applicationset.yaml",
                                 "argo/bootstrap.yaml"])
def test_generated_argo_files_match_strict_schemas(repo: Path, rel: str) -> None:
    document = load(repo, rel)
    assert document["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tfgen"
    assert schema_errors(document) == []


def test_schemas_are_strict() -> None:
    appset = load(Path(__file__).parent / "golden" / "render", "argo/applicationset.yaml")
    appset["spec"]["template"]["spec"]["syncPolicy"]["automated"]["prunne"] = True
    appset["spec"]["syncPolicy"]["applicationsSync"] = "delete-everything"
    appset["spec"]["template"]["spec"]["syncPolicy"]["syncOptions"].append("CreateNamespace=yes")
    errors = schema_errors(appset)
    assert len(errors) == 2, errors  # sync options are strings to Argo CD's CRD
    assert any("prunne" in e for e in errors)
    assert any("applicationsSync" in e for e in errors)


def test_project_is_least_privilege(repo: Path) -> None:
    spec = load(repo, "argo/project.yaml")["spec"]
    assert spec["sourceRepos"] == [ARGOCD["repoURL"]]
    assert spec["destinations"] == [
        {"server": ARGOCD["destinationServer"], "namespace": ns} for ns in ARGOCD["namespaces"]
    ]
    assert spec["clusterResourceWhitelist"] == [{"group": "", "kind": "PersistentVolume"}]
    assert sorted((k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]) == [
        ("", "PersistentVolumeClaim"), ("", "Service"), ("apps", "Deployment"),
        ("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "TFJob"), ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
    ]
    assert spec["orphanedResources"] == {"warn": True}


def test_applicationset_safety_settings(repo: Path) -> None:
    spec = load(repo, "argo/applicationset.yaml")["spec"]
    assert spec["goTemplate"] is True and spec["goTemplateOptions"] == ["missingkey=error"]
    assert spec["syncPolicy"] == {"applicationsSync": "create-update",
                                  "preserveResourcesOnDeletion": True}
    template = spec["template"]["spec"]
    assert template["project"] == ARGOCD["project"]  # hard-coded, not a placeholder
    assert template["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True,
                                                   "allowEmpty": False}
    assert "CreateNamespace=false" in template["syncPolicy"]["syncOptions"]
    # No ServerSideApply, so no ServerSideDiff needed; if one is added, both must be.
    options = " ".join(template["syncPolicy"]["syncOptions"])
    assert ("ServerSideApply=true" in options) == ("ServerSideDiff" in json.dumps(spec))


def test_applications_leave_what_kueue_writes_to_kueue(repo: Path) -> None:
    template = load(repo, "argo/applicationset.yaml")["spec"]["template"]["spec"]
    # written out by hand from what Kueue v0.19 writes at admission, as the lab finds it
    # (tests/lab/test_argo_sync.py): suspend where Kueue's field manager owns it, and in each
    # pod template its nodeSelector, tolerations, three labels and one annotation
    def added(template: str) -> list[str]:
        return [f"{template}.spec.nodeSelector", f"{template}.spec.tolerations",
                f'{template}.metadata.labels["kueue.x-k8s.io/podset"]',
                f'{template}.metadata.labels["kueue.x-k8s.io/local-queue-name"]',
                f'{template}.metadata.labels["kueue.x-k8s.io/cluster-queue-name"]',
                f'{template}.metadata.annotations["kueue.x-k8s.io/workload"]']
    assert template["ignoreDifferences"] == [
        {"group": "kubeflow.org", "kind": "TFJob", "managedFieldsManagers": ["kueue"],
         "jqPathExpressions": added(".spec.tfReplicaSpecs[]?.template")},
        {"group": "jobset.x-k8s.io", "kind": "JobSet", "managedFieldsManagers": ["kueue"],
         "jqPathExpressions": added(".spec.replicatedJobs[]?.template.spec.template")},
    ]
    # no JSON pointer: an unqueued run's suspend is Git's
    assert "jsonPointers" not in json.dumps(template["ignoreDifferences"])
    # ... from the kinds' one home
    assert [(rule["group"], rule["kind"]) for rule in template["ignoreDifferences"]] == [
        (runtime.group, runtime.kind) for runtime in runtimes.RUNTIMES]
    # and a sync applies them as they are live, so self-heal never writes Git's back
    assert "RespectIgnoreDifferences=true" in template["syncPolicy"]["syncOptions"]


def test_bootstrap_syncs_only_project_and_applicationset(repo: Path) -> None:
    source = load(repo, "argo/bootstrap.yaml")["spec"]["source"]
    assert source["path"] == "argo" and source["directory"]["recurse"] is False
    assert source["directory"]["include"] == "{project.yaml,applicationset.yaml}"


def test_resolved_applications(repo: Path) -> None:
    resolution = applications.resolve_applications(repo)
    assert resolution.problems == []
    apps = {a.name: a for a in resolution.applications}
    assert sorted(apps) == ["distributed-mnist", "team-run"]
    app = apps["team-run"]
    assert (app.namespace, app.project, app.release_name) == ("ml-team", ARGOCD["project"],
                                                              "team-run")
    assert app.source_path == layout.CHART_PATH
    assert app.value_files == [repo / "argo/experiments/team-run/values.yaml"]
    assert app.manifest_generate_paths == ["charts/tfjob-experiment",
                                           "argo/experiments/team-run"]
    manifests = {m["metadata"]["name"]: m for m in applications.generated_applications(repo)}
    assert sorted(manifests) == sorted(apps)
    metadata = manifests["team-run"]["metadata"]
    assert metadata["annotations"]["tfgen.io/source"] == "experiments/team-run.yaml"
    assert metadata["namespace"] == ARGOCD["namespace"]
    assert "finalizers" not in metadata  # preserveResourcesOnDeletion
    assert manifests["team-run"]["spec"]["destination"]["server"] == app.destination_server
    for manifest in manifests.values():
        assert schema_errors(manifest) == []


def test_missing_key_is_an_error_like_missingkey_error(tmp_path: Path) -> None:
    apply_plan(plan_render(tmp_path, [experiment(mnist_spec())], ARGOCD))
    build_file_tree(tmp_path, {"argo/experiments/broken/app.yaml": "name: broken\n"})
    resolution = applications.resolve_applications(tmp_path)
    assert [a.name for a in resolution.applications] == ["distributed-mnist"]
    [problem] = resolution.problems
    assert problem.path == "argo/experiments/broken/app.yaml"
    assert "map has no entry for key 'owner'" in problem.message


@pytest.mark.parametrize(("value_file", "ok"), [
    ("../../argo/experiments/x/values.yaml", True),
    ("/argo/experiments/x/values.yaml", True),
    ("../../../outside.yaml", False),
])
def test_value_files_must_stay_in_the_repository(tmp_path: Path, value_file: str,
                                                 ok: bool) -> None:
    chart = tmp_path / "charts/tfjob-experiment"
    if ok:
        assert applications.resolve_value_file(tmp_path, chart, value_file) == \
            tmp_path.resolve() / "argo/experiments/x/values.yaml"
    else:
        with pytest.raises(ValueError, match="outside the repository"):
            applications.resolve_value_file(tmp_path, chart, value_file)


def test_a_value_file_is_resolved_through_links_as_the_file_system_has_them(
        tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "argo/experiments").mkdir(parents=True)
    outside.mkdir()
    (repo / "argo/experiments/away").symlink_to(outside, target_is_directory=True)
    (repo / "argo/experiments/here").symlink_to("../experiments", target_is_directory=True)
    (tmp_path / "via-link").symlink_to(repo, target_is_directory=True)
    chart = repo / "charts/tfjob-experiment"
    with pytest.raises(ValueError, match="outside the repository"):
        applications.resolve_value_file(repo, chart, "../../argo/experiments/away/values.yaml")
    assert applications.resolve_value_file(
        tmp_path / "via-link", tmp_path / "via-link/charts/tfjob-experiment",
        "/argo/experiments/here/x/values.yaml") == repo.resolve() / "argo/experiments/x/values.yaml"


def test_a_value_file_is_named_as_argo_cd_joins_it_before_its_links_are_followed(
        tmp_path: Path) -> None:
    # Argo CD joins the chart path and the value file as text (Go's filepath.Join: `..` goes
    # up the path as written), then refuses a path outside the repository. With the chart
    # folder a link, that is not where `..` would go from the link's target.
    repo = tmp_path / "repo"
    (repo / "argo/experiments/x").mkdir(parents=True)
    (repo / "argo/experiments/x/values.yaml").write_text("a: 1\n")
    (repo / "vendor/deep/charts/tfjob-experiment").mkdir(parents=True)
    (repo / "charts").mkdir()
    (repo / "charts/tfjob-experiment").symlink_to(
        repo / "vendor/deep/charts/tfjob-experiment", target_is_directory=True)
    chart = repo / "charts/tfjob-experiment"
    assert applications.resolve_value_file(repo, chart, "../../argo/experiments/x/values.yaml") \
        == repo.resolve() / "argo/experiments/x/values.yaml"
    # up three from the link's target is still inside (vendor/); as written, it is not
    with pytest.raises(ValueError, match="outside the repository"):
        applications.resolve_value_file(repo, chart, "../../../vendor/values.yaml")


# What a folder below argo/ may hold: files, links to a file, a folder or nowhere, and a
# folder with an app.yaml. A link to a folder is not entered: pathlib's rglob does not either.
ENTRIES = ["app.yaml", "values.yaml", "link-to-file", "link-to-folder", "dangling", "x/"]
GLOBS = ["argo/experiments/*/app.yaml", "argo/experiments/*/*", "argo/experiments/*/*/app.yaml"]


@settings(max_examples=examples(30), deadline=None)
@given(tree=st.dictionaries(st.sampled_from(["a", "b", "c/d"]),
                            st.sets(st.sampled_from(ENTRIES), max_size=4), max_size=3))
def test_the_generator_files_are_those_pathlib_finds(tree: dict[str, set[str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "argo/experiments").mkdir(parents=True)
        (root / "elsewhere").mkdir()
        (root / "elsewhere/app.yaml").write_text("name: a\n")
        for folder, entries in tree.items():
            base = root / "argo/experiments" / folder
            base.mkdir(parents=True, exist_ok=True)
            for entry in entries:
                if entry == "x/":
                    (base / "x").mkdir()
                    (base / "x/app.yaml").write_text("name: a\n")
                elif entry.startswith("link-to-"):
                    (base / entry).symlink_to(root / "elsewhere" / (
                        "app.yaml" if entry == "link-to-file" else ""))
                elif entry == "dangling":
                    (base / entry).symlink_to(base / "nowhere")
                else:
                    (base / entry).write_text("name: a\n")
        seen_by_pathlib = sorted(
            rel for rel in (p.relative_to(root).as_posix()
                            for p in (root / "argo").rglob("*") if p.is_file())
            if any(applications._glob_match(glob, rel) for glob in GLOBS))
        assert applications._generator_files(root, GLOBS) == seen_by_pathlib


@settings(max_examples=examples(50), deadline=None)
@given(folders=st.lists(st.text(st.sampled_from("aZ9_.-"), min_size=1, max_size=5)
                        .filter(lambda name: name not in (".", "..")), max_size=3),
       filename=st.sampled_from(["app.yaml", "App_1.YAML", "config.json"]))
def test_a_generator_files_path_parameters_are_its_folder_and_name_as_pathlib_splits_them(
        folders: list[str], filename: str) -> None:
    rel = "/".join(["argo", *folders, filename])
    path = applications._generator_params({"name": "x"}, rel)["path"]
    folder = PurePosixPath(rel).parent
    assert (path["path"], path["basename"], path["filename"], path["segments"]) == (
        str(folder), folder.name, PurePosixPath(rel).name, list(folder.parts))
    # what Argo CD's *Normalized make of a name: lower case, anything else than a-z, 0-9, - and
    # . turned into -
    assert path["basenameNormalized"] == "".join(
        c if c in "abcdefghijklmnopqrstuvwxyz0123456789-." else "-" for c in folder.name.lower())
    assert path["filenameNormalized"] == filename.lower().replace("_", "-")


def test_refresh_paths_relative_and_rooted() -> None:
    assert applications.refresh_paths(".;../shared; /argo/x", "apps/one") == [
        "apps/one", "apps/shared", "argo/x"]


# --- the Lua health checks ------------------------------------------------------------------

TFJOB_LUA = resources.templates_dir() / runtimes.TFJOB.health_lua
JOBSET_LUA = resources.templates_dir() / runtimes.JOBSET.health_lua
TFJOB_KEY = "resource.customizations.health.kubeflow.org_TFJob"
JOBSET_KEY = "resource.customizations.health.jobset.x-k8s.io_JobSet"
HEALTH_PATCH = "argo/argocd-cm-health.yaml"


def test_patch_embeds_the_standalone_lua(repo: Path) -> None:
    patch = load(repo, HEALTH_PATCH)
    assert patch["metadata"]["name"] == "argocd-cm"
    assert patch["data"] == {TFJOB_KEY: TFJOB_LUA.read_text(), JOBSET_KEY: JOBSET_LUA.read_text()}
    # the keys come from the kinds' one home
    assert argo.health_key(*runtimes.TFJOB.key) == TFJOB_KEY
    assert argo.health_key(*runtimes.JOBSET.key) == JOBSET_KEY


def argo_lua(script: Path, obj: dict[str, Any]) -> dict[str, str]:
    """A health check run as Argo CD runs it: gopher-lua speaks Lua 5.1 and opens only the
    base, table and package libraries (no string.*, not even as methods on strings)."""
    runtime = lupa.lua51.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute('getmetatable("").__index = nil')
    for library in ("string", "math", "io", "os", "debug", "coroutine"):
        runtime.globals()[library] = None
    runtime.globals().obj = runtime.table_from(obj, recursive=True)
    result = runtime.execute(script.read_text())
    return dict(result)


def test_the_sandbox_refuses_the_string_library(tmp_path: Path) -> None:
    script = tmp_path / "uses-string.lua"
    for body in ('return {status = string.upper("x")}', 'return {status = ("x"):upper()}'):
        script.write_text(body)
        with pytest.raises(lupa.lua51.LuaError):
            argo_lua(script, {})


def condition(kind: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": f"TFJob{kind}",
            "message": message or f"TFJob default/mnist is {kind.lower()}."}


def health(obj: dict[str, Any]) -> dict[str, str]:
    return argo_lua(TFJOB_LUA, obj)


CREATED = condition("Created")
RUNNING = condition("Running", message="TFJob default/mnist is running.")


@pytest.mark.parametrize(("conditions", "status", "message"), [
    (None, "Progressing", "Waiting for the training operator to report status"),
    ([CREATED], "Progressing", "Created: TFJob default/mnist is created."),
    ([CREATED, RUNNING], "Progressing", "Running: TFJob default/mnist is running."),
    ([CREATED, condition("Running", "False"), condition("Restarting", message="worker-1 OOM")],
     "Progressing", "Restarting: worker-1 OOM"),
    ([CREATED, condition("Running", "False"), condition("Succeeded", message="done")],
     "Healthy", "Succeeded: done"),
    ([CREATED, condition("Running", "False"), condition("Failed", message="ps-0 exited 1")],
     "Degraded", "Failed: ps-0 exited 1"),
    ([CREATED, condition("Suspended", message="suspended by user")],
     "Suspended", "Suspended: suspended by user"),
    ([CREATED, condition("Suspended", "False"), RUNNING],
     "Progressing", "Running: TFJob default/mnist is running."),
])
def test_tfjob_health(conditions: list[dict[str, str]] | None, status: str,
                      message: str) -> None:
    obj: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                           "metadata": {"name": "mnist"}}
    if conditions is not None:
        obj["status"] = {"conditions": conditions, "replicaStatuses": {"Worker": {"active": 2}}}
    assert health(obj) == {"status": status, "message": message}


def test_tfjob_health_with_empty_status() -> None:
    obj = {"kind": "TFJob", "status": {}}
    assert health(obj)["status"] == "Progressing"


# JobSet v0.12's conditions, with the reasons and messages its controller writes
# (pkg/constants/constants.go, pkg/controllers/jobset_controller.go, failure_policy.go).
def js_condition(kind: str, reason: str, message: str, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


SUSPENDED = js_condition("Suspended", "SuspendedJobs", "jobset is suspended")
RESUMED = js_condition("Suspended", "ResumeJobs", "jobset is resumed", "False")
NOT_RESTARTING = js_condition("RestartingJobSet", "JobsReady", "all jobs are ready", "False")
RESTARTING = js_condition("RestartingJobSet", "DefaultFailurePolicy",
                          "applying RestartJobSet failure policy action "
                          "(first failed job: mnist-worker-1)")
IN_ORDER = js_condition("StartupPolicyInProgress", "InOrderStartupPolicyInProgress",
                        "in order startup policy is in progress")
IN_ORDER_DONE = js_condition("StartupPolicyCompleted", "InOrderStartupPolicyCompleted",
                             "in order startup policy has completed")
COMPLETED = js_condition("Completed", "AllJobsCompleted", "jobset completed successfully")
FAILED = js_condition("Failed", "FailedJobs", "jobset failed due to one or more job failures "
                      "(first failed job: mnist-worker-0)")
QUEUE = {"kueue.x-k8s.io/queue-name": "team-gpus"}


def jobs(ps: int, worker: int, succeeded: int = 0) -> list[dict[str, Any]]:
    return [{"name": "ps", "ready": ps, "succeeded": 0, "failed": 0, "active": ps,
             "suspended": 0},
            {"name": "worker", "ready": worker, "succeeded": succeeded, "failed": 0,
             "active": worker, "suspended": 0}]


# Each row: spec.suspend, labels, status, and the health Argo CD shows.
JOBSET_ROWS = {
    "created, no status yet": (
        None, {}, None,
        "Progressing", "Waiting for the JobSet controller to report status"),
    "empty status": (
        None, {}, {},
        "Progressing", "Waiting for the JobSet controller to report status"),
    "queued by Kueue, before the controller saw it": (
        True, QUEUE, None,
        "Progressing", "Queued: suspended until Kueue admits it to LocalQueue team-gpus"),
    "queued by Kueue": (
        True, QUEUE, {"conditions": [SUSPENDED], "replicatedJobsStatus": jobs(0, 0)},
        "Progressing", "Queued: suspended until Kueue admits it to LocalQueue team-gpus"),
    "suspended by Git or a person, no queue": (
        True, {}, {"conditions": [SUSPENDED]},
        "Suspended", "Suspended: jobset is suspended"),
    "suspended, no status yet": (
        True, {}, None,
        "Suspended", "Suspended: spec.suspend is true"),
    "an empty queue label is no queue": (
        True, {"kueue.x-k8s.io/queue-name": ""}, {"conditions": [SUSPENDED]},
        "Suspended", "Suspended: jobset is suspended"),
    "admitted, jobs starting": (
        False, QUEUE, {"conditions": [RESUMED], "replicatedJobsStatus": jobs(1, 0)},
        "Progressing", "Running: 1/4 jobs ready"),
    "running": (
        None, {}, {"conditions": [NOT_RESTARTING], "replicatedJobsStatus": jobs(2, 2)},
        "Progressing", "Running: 4/4 jobs ready"),
    "running after a restart, a worker done": (
        False, {}, {"conditions": [NOT_RESTARTING], "restarts": 1,
                    "replicatedJobsStatus": jobs(2, 1, succeeded=1)},
        "Progressing", "Running: 4/4 jobs ready, restarts: 1"),
    "restarting after a failed job": (
        None, {}, {"conditions": [RESTARTING], "replicatedJobsStatus": jobs(2, 1)},
        "Progressing", "RestartingJobSet: applying RestartJobSet failure policy action "
                       "(first failed job: mnist-worker-1)"),
    "starting in order": (
        None, {}, {"conditions": [IN_ORDER], "replicatedJobsStatus": jobs(1, 0)},
        "Progressing", "StartupPolicyInProgress: in order startup policy is in progress"),
    "started in order": (
        None, {}, {"conditions": [{**IN_ORDER, "status": "False"}, IN_ORDER_DONE],
                   "replicatedJobsStatus": jobs(2, 1)},
        "Progressing", "Running: 3/4 jobs ready"),
    "completed": (
        None, {}, {"conditions": [NOT_RESTARTING, COMPLETED], "terminalState": "Completed",
                   "replicatedJobsStatus": jobs(0, 0, succeeded=2)},
        "Healthy", "Completed: jobset completed successfully"),
    "failed": (
        None, {}, {"conditions": [NOT_RESTARTING, FAILED], "terminalState": "Failed"},
        "Degraded", "Failed: jobset failed due to one or more job failures "
                    "(first failed job: mnist-worker-0)"),
    "failed while queued again: finished wins": (
        True, QUEUE, {"conditions": [SUSPENDED, FAILED], "terminalState": "Failed"},
        "Degraded", "Failed: jobset failed due to one or more job failures "
                    "(first failed job: mnist-worker-0)"),
    "failed without a message": (
        None, {}, {"conditions": [{**FAILED, "message": ""}], "terminalState": "Failed"},
        "Degraded", "Failed: FailedJobs"),
    "terminal state alone": (
        None, {}, {"terminalState": "Failed"}, "Degraded", "Failed"),
    "a condition turned False does not count": (
        None, {}, {"conditions": [{**FAILED, "status": "False"}],
                   "replicatedJobsStatus": jobs(2, 2)},
        "Progressing", "Running: 4/4 jobs ready"),
}


@pytest.mark.parametrize("row", JOBSET_ROWS)
def test_jobset_health(row: str) -> None:
    suspend, labels, status, health_status, message = JOBSET_ROWS[row]
    spec: dict[str, Any] = {"replicatedJobs": [{"name": "ps", "replicas": 2},
                                               {"name": "worker", "replicas": 2}]}
    if suspend is not None:
        spec["suspend"] = suspend
    obj: dict[str, Any] = {"apiVersion": runtimes.JOBSET.api_version, "kind": runtimes.JOBSET.kind,
                           "metadata": {"name": "mnist", "labels": labels}, "spec": spec}
    if status is not None:
        obj["status"] = status
    assert argo_lua(JOBSET_LUA, obj) == {"status": health_status, "message": message}


def test_jobset_health_reads_the_queue_label_of_its_one_home() -> None:
    assert f'"{chart.KUEUE_QUEUE_LABEL}"' in JOBSET_LUA.read_text()
    assert set(QUEUE) == {chart.KUEUE_QUEUE_LABEL}


def test_jobset_replicas_default_to_one() -> None:
    obj = {"kind": "JobSet", "spec": {"replicatedJobs": [{"name": "w"}, {"name": "ps"}]},
           "status": {"replicatedJobsStatus": [{"name": "w", "ready": 1}]}}
    assert argo_lua(JOBSET_LUA, obj) == {"status": "Progressing",
                                         "message": "Running: 1/2 jobs ready"}


def test_health_patch_is_a_valid_configmap(repo: Path) -> None:
    import kubernetes_validate

    patch = load(repo, HEALTH_PATCH)
    kubernetes_validate.validate(patch, "1.30", strict=True)  # raises on any unknown field
    assert set(patch["data"]) == {TFJOB_KEY, JOBSET_KEY}


ODD_APPLICATIONSETS = {
    "a list": "- a\n- b\n",
    "no spec": "kind: ApplicationSet\nspec:\n",
    "generators not a list": "spec: {generators: {git: {}}}\n",
    "a files entry without path": "spec: {generators: [{git: {files: [{}, 7]}}]}\n",
    "template not a mapping": (
        "spec: {goTemplate: true, goTemplateOptions: [missingkey=error], template: 5, "
        "generators: [{git: {files: [{path: argo/experiments/*/app.yaml}]}}]}\n"
    ),
    "template metadata null": (
        "metadata: null\nspec: {goTemplate: true, template: {metadata: null, spec: null}, "
        "generators: [{git: {files: [{path: argo/experiments/*/app.yaml}]}}]}\n"
    ),
}


@pytest.mark.parametrize("case", ODD_APPLICATIONSETS)
def test_an_odd_applicationset_gives_problems_not_exceptions(tmp_path: Path, case: str) -> None:
    apply_plan(plan_render(tmp_path, [experiment(mnist_spec())], ARGOCD))
    (tmp_path / "argo/applicationset.yaml").write_text(ODD_APPLICATIONSETS[case])
    resolution = applications.resolve_applications(tmp_path)
    assert resolution.problems, "an unusable ApplicationSet is reported"
    for app in resolution.applications:  # whatever resolves still names a chart and values
        assert isinstance(app.name, str) and isinstance(app.value_files, list)


@pytest.mark.parametrize(("version", "named"), [(None, False), ("3.2", False), ("3.3", True),
                                                ("3.10", True), ("4.0", True)])
def test_volumes_narrowed_by_name_from_argocd_3_3(
    tmp_path: Path, version: str | None, named: bool
) -> None:
    argocd = {**ARGOCD, "version": version} if version else dict(ARGOCD)
    apply_plan(plan_render(tmp_path, [experiment(mnist_spec())], argocd))
    project = load(tmp_path, "argo/project.yaml")
    assert not schema_errors(project)
    entries = project["spec"]["clusterResourceWhitelist"]
    if named:
        assert entries == [{"group": "", "kind": "PersistentVolume",
                            "name": f"{ns}-*-data"} for ns in sorted(ARGOCD["namespaces"])]
    else:
        assert entries == [{"group": "", "kind": "PersistentVolume"}]
    assert "signatureKeys" not in project["spec"]


def test_signature_keys(tmp_path: Path) -> None:
    argocd = {**ARGOCD, "signatureKeys": ["4AEE18F83AFDEB23", "0123456789ABCDEF"]}
    apply_plan(plan_render(tmp_path, [experiment(mnist_spec())], argocd))
    project = load(tmp_path, "argo/project.yaml")
    assert not schema_errors(project)
    assert project["spec"]["signatureKeys"] == [{"keyID": "4AEE18F83AFDEB23"},
                                                {"keyID": "0123456789ABCDEF"}]
