"""The argo/ wiring: strict schemas, least privilege, the ApplicationSet resolved as Argo CD
would, and the TFJob Lua health check run in a real Lua interpreter."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import lupa
import pytest
import yaml
from helpers import ARGOCD, build_file_tree, experiment, mnist_spec
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.gate import applications
from tfgen.gate.manifests import ManifestValidator
from tfgen.render import apply_plan, plan_render
from tfgen.repo import layout, resources

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


@settings(max_examples=30, deadline=None)
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


@settings(max_examples=50, deadline=None)
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


# --- the Lua health check --------------------------------------------------------------------

LUA_FILE = resources.templates_dir() / resources.HEALTH_LUA


def test_patch_embeds_the_standalone_lua(repo: Path) -> None:
    patch = load(repo, "argo/argocd-cm-tfjob-health.yaml")
    assert patch["metadata"]["name"] == "argocd-cm"
    assert patch["data"]["resource.customizations.health.kubeflow.org_TFJob"] == \
        LUA_FILE.read_text()


def condition(kind: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": f"TFJob{kind}",
            "message": message or f"TFJob default/mnist is {kind.lower()}."}


def health(obj: dict[str, Any]) -> dict[str, str]:
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.globals().obj = runtime.table_from(obj, recursive=True)
    result = runtime.execute(LUA_FILE.read_text())
    return dict(result)


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


def test_health_patch_is_a_valid_configmap(repo: Path) -> None:
    import kubernetes_validate

    patch = load(repo, "argo/argocd-cm-tfjob-health.yaml")
    kubernetes_validate.validate(patch, "1.30", strict=True)  # raises on any unknown field
    assert set(patch["data"]) == {"resource.customizations.health.kubeflow.org_TFJob"}


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
