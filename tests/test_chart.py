"""The tfjob-experiment chart, rendered by the real helm 4 and helm 3.

Every `ci/<scenario>-values.yaml` must lint clean under both helms, render byte-identically under
both, match its golden file (`pytest --update-golden` rewrites them), and produce objects that are
valid under the strict Kubernetes schemas (1.30 and the newest kubernetes-validate ships) and,
for the TFJob, under schemas/kubeflow.org/tfjob_v1.json (converted from the operator's CRD) and
the operator's own rules (gate/objects/policy.py). Bad values are rejected by a real
`helm template` run with a message that names the value. Each scenario is rendered once per helm
(module-scoped fixtures): helm runs are the slow part of this suite.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate.utils as kv
import pytest
import yaml
from helpers import go_tool, template
from referencing import Registry, Resource
from tfgen.errors import HelmError
from tfgen.gate.documents.manifests import RenderedObject
from tfgen.gate.helm.command import find_helm
from tfgen.gate.objects import policy
from tfgen.repo import runtimes

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tfjob-experiment"
CI_DIR = CHART / "ci"
GOLDEN_DIR = ROOT / "tests" / "golden" / "chart"
INVALID_DIR = ROOT / "tests" / "fixtures" / "chart" / "invalid"
TFJOB_SCHEMA = ROOT / "schemas" / "kubeflow.org" / "tfjob_v1.json"
# The runtimes' CRD schemas, by kind (converted from the upstream CRDs, schemas/upstream/).
CRD_SCHEMAS = {"TFJob": TFJOB_SCHEMA,
               "JobSet": ROOT / "schemas" / "jobset.x-k8s.io" / "jobset_v1alpha2.json"}
KUBE_VERSION = "1.30.0"
K8S_VERSIONS = ("1.30", kv.major_minor(kv.latest_version()))  # oldest we target, newest shipped

SCENARIOS = sorted(p.name.removesuffix("-values.yaml") for p in CI_DIR.glob("*-values.yaml"))
INVALID_CASES = sorted(p.stem for p in INVALID_DIR.glob("*.yaml"))
HELMS = {"helm4": 4, "helm3": 3}


def scenario_values(scenario: str) -> dict[str, Any]:
    return yaml.safe_load((CI_DIR / f"{scenario}-values.yaml").read_text())


def render(scenario: str, major: int, *extra: Path) -> str:
    """`helm template` as Argo CD runs it: release = experiment name, namespace = its namespace."""
    experiment = scenario_values(scenario)["experiment"]
    return template(
        CHART,
        experiment["name"],
        experiment["namespace"],
        [CI_DIR / f"{scenario}-values.yaml", *extra],
        kube_version=KUBE_VERSION,
        helm=find_helm(major),
    )


def objects(rendered: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


@pytest.fixture(scope="module")
def renders() -> dict[str, dict[str, str]]:
    """Each scenario rendered once by each helm: {scenario: {"helm4": yaml, "helm3": yaml}}."""
    return {s: {name: render(s, major) for name, major in HELMS.items()} for s in SCENARIOS}


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "TFJob":
        return [spec["template"] for spec in obj["spec"]["tfReplicaSpecs"].values()]
    if obj["kind"] == "Deployment":
        return [obj["spec"]["template"]]
    return []


# --- lint ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("helm_name", HELMS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint_strict(scenario: str, helm_name: str) -> None:
    result = subprocess.run(
        [find_helm(HELMS[helm_name]), "lint", "--strict", str(CHART),
         "--values", str(CI_DIR / f"{scenario}-values.yaml"), "--kube-version", KUBE_VERSION],
        capture_output=True, text=True, check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "0 chart(s) failed" in output
    assert not re.search(r"\[(WARNING|ERROR)\]", output), output


@pytest.mark.parametrize("helm_name", HELMS)
def test_bare_lint_strict(helm_name: str) -> None:
    """`helm lint --strict <chart>` with nothing else, as chart repositories and linters run it:
    the chart's own defaults pass the schema and give valid object names."""
    result = subprocess.run([find_helm(HELMS[helm_name]), "lint", "--strict", str(CHART)],
                            capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not re.search(r"\[(WARNING|ERROR)\]", output), output


TARGET_MINORS = sorted({kv.major_minor(v) for v in kv.all_versions()}, key=lambda m: int(m[2:]))


@pytest.mark.parametrize("helm_name", HELMS)
def test_kube_version_accepts_every_target(helm_name: str) -> None:
    """Chart.yaml's kubeVersion admits every Kubernetes version tfgen validates against, also
    as clusters report them (vendor pre-release suffix), and nothing older. The oldest and the
    newest stand for the range (a render costs a helm process)."""
    assert TARGET_MINORS[0] == "1.25" and len(TARGET_MINORS) >= 13
    helm = find_helm(HELMS[helm_name])
    for minor in (TARGET_MINORS[0], TARGET_MINORS[-1]):
        for reported in (f"{minor}.0", f"v{minor}.4-eks-a737599"):
            template(CHART, "distributed-mnist", "default", [CI_DIR / "walkthrough-values.yaml"],
                     kube_version=reported, helm=helm)
    with pytest.raises(HelmError, match="kubeVersion"):
        template(CHART, "distributed-mnist", "default", [CI_DIR / "walkthrough-values.yaml"],
                 kube_version="1.24.17", helm=helm)


def test_chart_metadata_names_the_project() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert {"home", "sources", "maintainers", "keywords", "kubeVersion"} <= set(meta)
    repo_url = yaml.safe_load((ROOT / "tfgen.yaml").read_text())["argocd"]["repoURL"]
    assert meta["sources"] == [repo_url.removesuffix(".git")]
    assert meta["home"].startswith(meta["sources"][0])


def test_defaults_alone_do_not_render() -> None:
    """The lint-only fallbacks of fullname and namespace never reach a real render: the chart's
    defaults leave name, namespace and owner unset, and validateValues refuses them."""
    with pytest.raises(HelmError) as excinfo:
        template(CHART, "x", "default", [], kube_version=KUBE_VERSION, helm=find_helm(4))
    for key in ("experiment.name", "experiment.namespace", "experiment.owner"):
        assert f"{key}: must be set" in excinfo.value.message


def test_every_ci_scenario_says_what_it_tests() -> None:
    """Each scenario opens with the schema modeline (editors check it as people type, like the
    specs), then a '# Test ...' line."""
    assert len(SCENARIOS) >= 7
    for scenario in SCENARIOS:
        modeline, first = (CI_DIR / f"{scenario}-values.yaml").read_text().splitlines()[:2]
        assert modeline == "# yaml-language-server: $schema=../values.schema.json", scenario
        assert first.startswith("# Test "), f"{scenario}: line 2 must be a '# Test ...' comment"


def test_values_yaml_names_its_schema() -> None:
    first = (CHART / "values.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=values.schema.json"


# --- rendering: both helms, golden files --------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_helm4_and_helm3_render_identically(renders: dict[str, dict[str, str]],
                                            scenario: str) -> None:
    assert renders[scenario]["helm4"] == renders[scenario]["helm3"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_golden(renders: dict[str, dict[str, str]], scenario: str, update_golden: bool) -> None:
    golden = GOLDEN_DIR / f"{scenario}.yaml"
    actual = renders[scenario]["helm4"]
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
        return
    expected = golden.read_text() if golden.exists() else ""
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"golden/{golden.name}", tofile="helm template"))
        pytest.fail(f"rendered {scenario} differs from {golden} "
                    f"(run pytest --update-golden if intended):\n{diff}")


def test_walkthrough_objects(renders: dict[str, dict[str, str]]) -> None:
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects(renders["walkthrough"]["helm4"])]
    assert kinds == [
        ("NetworkPolicy", "distributed-mnist"),
        ("NetworkPolicy", "distributed-mnist-tensorboard"),
        ("PersistentVolume", "default-distributed-mnist-data"),
        ("PersistentVolumeClaim", "distributed-mnist-data"),
        ("Service", "distributed-mnist-tensorboard"),
        ("Deployment", "distributed-mnist-tensorboard"),
        ("TFJob", "distributed-mnist"),
    ]
    tfjob = objects(renders["walkthrough"]["helm4"])[-1]
    specs = tfjob["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Master": 1, "Worker": 2, "PS": 2}
    gpus = {k: v["template"]["spec"]["containers"][0]["resources"]["limits"].get("nvidia.com/gpu")
            for k, v in specs.items()}
    assert gpus == {"Master": 1, "Worker": 1, "PS": None}
    assert tfjob["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"


def test_existing_claim_renders_no_volume(renders: dict[str, dict[str, str]]) -> None:
    objs = objects(renders["existing-claim"]["helm4"])
    assert not [o for o in objs if o["kind"] in ("PersistentVolume", "PersistentVolumeClaim")]
    templates = [tpl for obj in objs for tpl in pod_templates(obj)]
    assert len(templates) == 2  # the TFJob's Worker and the TensorBoard Deployment
    for tpl in templates:
        claims = [v["persistentVolumeClaim"]["claimName"] for v in tpl["spec"]["volumes"]
                  if "persistentVolumeClaim" in v]
        assert claims == ["team-datasets"]


def test_tensorboard_off_renders_no_tensorboard(renders: dict[str, dict[str, str]]) -> None:
    kinds = {o["kind"] for o in objects(renders["tensorboard-off"]["helm4"])}
    assert kinds == {"NetworkPolicy", "PersistentVolume", "PersistentVolumeClaim", "TFJob"}
    policies = [o for o in objects(renders["tensorboard-off"]["helm4"])
                if o["kind"] == "NetworkPolicy"]
    # the training pods' policy only: no TensorBoard to guard
    assert [p["metadata"]["name"] for p in policies] == ["mnist-quiet"]


# --- strict validation of every rendered object -------------------------------------------------


@cache
def k8s_validator(version: str, kind: str, api_version: str) -> jsonschema.Draft202012Validator:
    """A strict validator for one kind, built as kubernetes_validate.utils.validate builds it
    (the kind schema and `_definitions.json` in a `referencing` Registry, keyed by their $id),
    but loaded once per version and kind instead of once per object."""
    schema_dir = f"kubernetes-json-schema/v{version}.0-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = kv.schema_contents(f"{schema_dir}/{kind.lower()}-{group}.json", version)
    return jsonschema.Draft202012Validator(schema, registry=k8s_registry(version))


@cache
def k8s_registry(version: str) -> Registry:
    definitions = kv.schema_contents(
        f"kubernetes-json-schema/v{version}.0-local-strict/_definitions.json", version)
    return Resource.from_contents(definitions) @ Registry()


@cache
def tfjob_validator(version: str, kind: str = "TFJob") -> jsonschema.Draft202012Validator:
    """A runtime's CRD schema with the Kubernetes definitions of `version`: its $refs to
    https://kubernetes.io/api/_definitions.json (ObjectMeta) resolve to the registered
    `_definitions.json` (that is the file's $id), offline."""
    schema = json.loads(CRD_SCHEMAS[kind].read_text())
    return jsonschema.Draft202012Validator(schema, registry=k8s_registry(version))


def training_job(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run's job, as the TFJob its runtime stands for (`Runtime.as_tfjob`)."""
    job = next(o for o in objs if runtimes.of_object(o["apiVersion"], o["kind"]))
    runtime = runtimes.of_object(job["apiVersion"], job["kind"])
    assert runtime is not None
    return runtime.as_tfjob(job)


def errors_of(validator: jsonschema.Draft202012Validator, obj: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(obj)]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_objects_valid_strict(renders: dict[str, dict[str, str]], scenario: str,
                              version: str) -> None:
    checked = 0
    for obj in objects(renders[scenario]["helm4"]):
        if obj["kind"] in CRD_SCHEMAS:
            validator = tfjob_validator(version, obj["kind"])
        else:
            validator = k8s_validator(version, obj["kind"], obj["apiVersion"])
        assert errors_of(validator, obj) == [], f"{obj['kind']}/{obj['metadata']['name']}"
        checked += 1
    assert checked >= 2


def test_tfjob_schema_and_rules_are_strict(renders: dict[str, dict[str, str]]) -> None:
    """The TFJob's CRD schema and the operator's rules refuse what the operator refuses (so
    the test above can fail)."""
    validator = tfjob_validator(K8S_VERSIONS[0])
    good = objects(renders["walkthrough"]["helm4"])[-1]
    assert errors_of(validator, good) == []

    def broken(mutate: Any) -> list[str]:
        obj = json.loads(json.dumps(good))
        mutate(obj)
        return errors_of(validator, obj)

    def refused(mutate: Any) -> list[str]:
        obj = json.loads(json.dumps(good))
        mutate(obj)
        return [p.message for p in policy.job_problems(RenderedObject(doc=obj), "f", "")]

    assert refused(lambda o: None) == []
    specs = "spec", "tfReplicaSpecs"
    # the schema: unknown fields, wrong types
    assert broken(lambda o: o["spec"]["runPolicy"].update(ttlAfter=5))
    assert broken(lambda o: o["spec"].update(cleanPodPolicy="All"))  # v1beta1 field
    assert broken(lambda o: o["spec"]["tfReplicaSpecs"]["PS"].update(replicas="two"))
    assert broken(lambda o: o["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
                  ["containers"][0].update(gpus=1))
    assert broken(lambda o: o["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"]
                  .update(generateName="x"))  # the API server prunes it from a template
    assert broken(lambda o: o["metadata"].update(labelz={}))  # ObjectMeta is strict
    # the operator's rules
    assert refused(lambda o: o[specs[0]][specs[1]].update(Launcher=o[specs[0]][specs[1]]["PS"]))
    assert refused(lambda o: o[specs[0]][specs[1]].update(Chief=o[specs[0]][specs[1]]["Master"]))
    assert refused(lambda o: o["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
                   ["containers"][0].update(name="trainer"))
    assert refused(lambda o: o["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
                   ["containers"].append({"name": "sidecar"}))  # every container, an image
    assert refused(lambda o: o["metadata"].update(name="Distributed_MNIST"))
    # what the operator itself writes later is allowed
    assert not broken(lambda o: o["spec"]["runPolicy"].update(ttlSecondsAfterFinished=60,
                                                              managedBy="kueue.x-k8s.io/multikueue"))


# --- what must hold in every scenario -----------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pod_templates_carry_no_chart_label_and_no_tf_config(
        renders: dict[str, dict[str, str]], scenario: str) -> None:
    templates = [t for o in objects(renders[scenario]["helm4"]) for t in pod_templates(o)]
    assert templates
    for tpl in templates:
        labels = tpl["metadata"]["labels"]
        assert "helm.sh/chart" not in labels
        assert "app.kubernetes.io/version" not in labels
        for container in tpl["spec"]["containers"]:
            assert "TF_CONFIG" not in {e["name"] for e in container.get("env", [])}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_storage_is_kept_and_synced_first(renders: dict[str, dict[str, str]],
                                          scenario: str) -> None:
    objs = objects(renders[scenario]["helm4"])
    waves = {o["kind"]: o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] for o in objs}
    storage = [o for o in objs if o["kind"] in ("PersistentVolume", "PersistentVolumeClaim")]
    assert len(storage) in (0, 2), "PV and PVC are always rendered (and kept) together"
    assert len(storage) == (0 if scenario_values(scenario)["storage"]["existingClaim"] else 2)
    for obj in storage:
        annotations = obj["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Prune=false,Delete=false"
        assert annotations["helm.sh/resource-policy"] == "keep"
        assert obj["spec"]["accessModes"] == ["ReadWriteMany"]
    if storage:
        pv, pvc = sorted(storage, key=lambda o: o["kind"] != "PersistentVolume")
        assert "namespace" not in pv["metadata"]
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] != ""
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        selector = pvc["spec"]["selector"]["matchLabels"]
        assert selector.items() <= pv["metadata"]["labels"].items()
        assert pvc["spec"]["resources"]["requests"]["storage"] == pv["spec"]["capacity"]["storage"]
        assert (waves["PersistentVolume"], waves["PersistentVolumeClaim"]) == ("-2", "-1")
    assert {w for k, w in waves.items() if k not in ("PersistentVolume",
                                                     "PersistentVolumeClaim")} == {"0"}
    job = next(o for o in objs if runtimes.of_object(o["apiVersion"], o["kind"]))
    assert "ttlSecondsAfterFinished" not in job["spec"].get("runPolicy", job["spec"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_pod_mounts_the_claim(renders: dict[str, dict[str, str]], scenario: str) -> None:
    values = scenario_values(scenario)
    mount_path = values["storage"]["mountPath"]
    pods = [(obj, tpl) for obj in objects(renders[scenario]["helm4"]) for tpl in pod_templates(obj)]
    assert pods
    for obj, tpl in pods:
        mounts = {m["mountPath"]: m for m in tpl["spec"]["containers"][0]["volumeMounts"]}
        assert mount_path in mounts
        assert mounts[mount_path].get("readOnly", False) == (obj["kind"] == "Deployment")


def test_pv_forms(renders: dict[str, dict[str, str]]) -> None:
    def pv(scenario: str) -> dict[str, Any]:
        return next(o for o in objects(renders[scenario]["helm4"])
                    if o["kind"] == "PersistentVolume")

    csi = pv("walkthrough")["spec"]
    assert csi["csi"]["driver"] == "nasplugin.csi.alibabacloud.com"
    assert csi["csi"]["volumeHandle"] == pv("walkthrough")["metadata"]["name"]
    assert set(csi["csi"]["volumeAttributes"]) == {"server", "path", "vers", "options"}
    flex = pv("flexvolume")["spec"]["flexVolume"]
    assert flex["driver"] == "alicloud/nas"
    assert {"server", "path", "vers", "mode"} <= set(flex["options"])
    nfs = pv("nfs")["spec"]
    assert set(nfs["nfs"]) == {"server", "path"}
    assert "nfsvers=4.1" in nfs["mountOptions"]


def test_flexvolume_mode_is_optional(tmp_path: Path) -> None:
    """Without mode the driver leaves permissions alone: no mode option is rendered (with one,
    it runs chmod -R on the whole NAS path at every mount)."""
    unset = tmp_path / "no-mode.yaml"
    unset.write_text('storage: {nas: {mode: ""}}\n')
    pv = next(o for o in objects(render("flexvolume", 4, unset))
              if o["kind"] == "PersistentVolume")
    options = pv["spec"]["flexVolume"]["options"]
    assert {"server", "path", "vers"} <= set(options)
    assert "mode" not in options


def test_tensorboard_deployment(renders: dict[str, dict[str, str]]) -> None:
    def deployment(scenario: str) -> dict[str, Any]:
        return next(o for o in objects(renders[scenario]["helm4"]) if o["kind"] == "Deployment")

    pod = deployment("walkthrough")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] + container["args"] == [
        "tensorboard", "--logdir", "/training/tensorflow/logs", "--bind_all", "--port", "6006",
        "--reload_interval", "30"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (
        10000, 10000)  # high IDs: no user of the node
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]}}
    # trainers at 2000:2000 (below 10000): TensorBoard keeps its high IDs and joins their
    # groups, so that it can read their event files
    chief = deployment("chief-evaluator-csi")["spec"]["template"]["spec"]["securityContext"]
    assert (chief["runAsUser"], chief["runAsGroup"]) == (10000, 10000)
    assert chief["supplementalGroups"] == [3000, 2000]

    ingress_scenario = objects(renders["tensorboard-ingress"]["helm4"])
    ingress = next(o for o in ingress_scenario if o["kind"] == "Ingress")
    container = deployment("tensorboard-ingress")["spec"]["template"]["spec"]["containers"][0]
    prefix = ingress["spec"]["rules"][0]["http"]["paths"][0]["path"]
    assert prefix == "/tb/mnist-web"
    assert container["args"][-2:] == ["--path_prefix", prefix]
    assert container["readinessProbe"]["httpGet"]["path"] == prefix + "/"
    assert container["livenessProbe"]["httpGet"]["path"] == prefix + "/"
    # trainers run as root here; TensorBoard still does not
    assert deployment("tensorboard-ingress")["spec"]["template"]["spec"]["securityContext"][
        "runAsUser"] == 10000


def test_role_env_is_appended_and_wins(renders: dict[str, dict[str, str]]) -> None:
    tfjob = next(o for o in objects(renders["chief-evaluator-csi"]["helm4"])
                 if o["kind"] == "TFJob")
    env = tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["API_TOKEN", "MODE", "BATCH_SIZE"]
    assert env[-1]["value"] == "256"


# --- bad values are refused by a real render ----------------------------------------------------


def expectations(case: str) -> list[str]:
    lines = (INVALID_DIR / f"{case}.yaml").read_text().splitlines()
    return [line.removeprefix("# expect: ") for line in lines if line.startswith("# expect: ")]


# helm 3 and helm 4 share the template engine and the JSON-schema library, so every case runs
# under helm 4 and a sample (a fail() list and schema errors) under helm 3 as well.
HELM3_SAMPLE = ["many-problems", "bad-name", "zero-replicas", "ttl-after-finished",
                "owner-line-separator", "image-newline", "replicas-over-1000"]


@pytest.mark.parametrize(("case", "helm_name"), [(c, "helm4") for c in INVALID_CASES]
                         + [(c, "helm3") for c in HELM3_SAMPLE])
def test_bad_values_rejected(case: str, helm_name: str) -> None:
    expected = expectations(case)
    assert expected, f"{case}.yaml names no '# expect: ' message"
    with pytest.raises(HelmError) as excinfo:
        render("walkthrough", HELMS[helm_name], INVALID_DIR / f"{case}.yaml")
    for text in expected:
        assert text in excinfo.value.message


def test_enough_bad_values_cases() -> None:
    assert len(INVALID_CASES) >= 10


# --- conventions --------------------------------------------------------------------------------


def test_no_release_or_chart_name_in_templates() -> None:
    """Names come from .Values.experiment only (see _names.tpl for why)."""
    templates = sorted((CHART / "templates").iterdir())
    assert len(templates) >= 9  # the nine files the chart has today
    for path in templates:
        code = re.sub(r"\{\{/\*.*?\*/\}\}", "", path.read_text(), flags=re.S)
        for forbidden in (".Release.Name", ".Release.Namespace", ".Chart.Name"):
            assert forbidden not in code, f"{path.name} uses {forbidden}"


def test_umbrella_chart_renders_identical_objects(tmp_path: Path,
                                                  renders: dict[str, dict[str, str]]) -> None:
    """Many experiments in one helm process (aliased dependencies) give the same objects as
    one release per experiment."""
    umbrella = tmp_path / "umbrella"
    shutil.copytree(CHART, umbrella / "charts" / "tfjob-experiment")
    aliases = {"first": "walkthrough", "second": "chief-evaluator-csi"}
    (umbrella / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "experiments", "version": "0.0.1",
        "dependencies": [{"name": "tfjob-experiment", "version": "0.1.0", "alias": alias}
                         for alias in aliases],
    }))
    (umbrella / "values.yaml").write_text(yaml.safe_dump(
        {alias: scenario_values(s) for alias, s in aliases.items()}))
    together = template(umbrella, "all-experiments", "argocd", kube_version=KUBE_VERSION,
                        helm=find_helm(4))

    def by_name(text: str) -> list[dict[str, Any]]:
        return sorted(objects(text), key=lambda o: (o["kind"], o["metadata"]["name"]))

    alone = [o for s in aliases.values() for o in objects(renders[s]["helm4"])]
    assert alone
    assert by_name(together) == sorted(alone, key=lambda o: (o["kind"],
                                                                   o["metadata"]["name"]))


def test_notes_show_port_forward() -> None:
    values = CI_DIR / "walkthrough-values.yaml"
    result = subprocess.run(
        [find_helm(4), "install", "distributed-mnist", str(CHART), "--dry-run=client",
         "--namespace", "default", "--values", str(values)],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert ("kubectl port-forward -n default svc/distributed-mnist-tensorboard 6006:6006"
            in notes)


def closed_object_problems(node: Any, where: str = "$", partial: bool = False) -> list[str]:
    """Objects with `properties` that are open to unknown keys, remote $refs, undocumented
    properties. Nodes that only narrow a `$ref`d definition (or match some containers) stay open:
    closing them would forbid the fields they do not repeat."""
    problems = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref and not ref.startswith(("#/", "https://kubernetes.io/api/_definitions.json#/")):
            problems.append(f"{where}: remote $ref {ref}")
        partial = partial or "$ref" in node or where.endswith(("/contains", "/containers/items"))
        if "properties" in node and not partial and node.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties is not false")
        for key, child in node.get("properties", {}).items():
            if not partial and "description" not in child and "$ref" not in child:
                problems.append(f"{where}/properties/{key}: no description")
        for key, child in node.items():
            problems += closed_object_problems(child, f"{where}/{key}", partial)
    elif isinstance(node, list):
        for i, child in enumerate(node):
            problems += closed_object_problems(child, f"{where}/{i}", partial)
    return problems


def test_values_schema_is_self_contained_closed_and_documented() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert closed_object_problems(schema) == []
    refs = re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema))
    assert refs and all(ref.startswith("#/") for ref in refs)


@pytest.mark.go
def test_readme_values_table_is_what_helm_docs_writes(tmp_path: Path) -> None:
    """README.md is helm-docs' output from README.md.gotmpl and the `# --` comments of
    values.yaml, run as `make docs` runs it, into a copy: the committed one must be identical,
    and every value the table lists must have a description."""
    charts = tmp_path / "charts"
    shutil.copytree(CHART, charts / CHART.name)
    result = subprocess.run([str(go_tool("helm-docs")), "--chart-search-root", str(charts),
                             "--sort-values-order", "file", "--log-level", "warning"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    committed = (CHART / "README.md").read_text()
    generated = (charts / CHART.name / "README.md").read_text()
    diff = "".join(difflib.unified_diff(
        committed.splitlines(keepends=True), generated.splitlines(keepends=True),
        "README.md (committed)", "README.md (helm-docs)"))
    assert not diff, "charts/tfjob-experiment/README.md is stale: run `make docs`\n" + diff
    rows = [line for line in generated.splitlines() if re.match(r"^\| [a-zA-Z]", line)
            and "| Type |" not in line]
    assert len(rows) > 40
    undocumented = [row.split(" | ")[0][2:] for row in rows if re.search(r"\|\s*\|$", row)]
    assert not undocumented, f"values without a '# --' comment: {undocumented}"


def test_longest_names_fit(tmp_path: Path) -> None:
    """The longest allowed experiment name (51) in the longest namespace (63) still gives valid
    names: DNS labels of at most 63 for namespaced objects and label values, a PV name that is a
    DNS subdomain (the namespace makes it unique across the cluster)."""
    name, namespace = "e" + "x" * 50, "n" * 63
    values = tmp_path / "long.yaml"
    values.write_text(yaml.safe_dump({"experiment": {"name": name, "namespace": namespace}}))
    rendered = template(CHART, name, namespace, [CI_DIR / "walkthrough-values.yaml", values],
                        kube_version=KUBE_VERSION, helm=find_helm(4))
    objs = objects(rendered)
    # the walkthrough's two NetworkPolicies, PV, PVC, Service, Deployment and TFJob
    assert len(objs) == 7
    for obj in objs:
        meta = obj["metadata"]
        limit = 253 if obj["kind"] == "PersistentVolume" else 63
        assert len(meta["name"]) <= limit, meta["name"]
        assert meta["labels"]
        assert all(len(v) <= 63 for v in meta["labels"].values())
    # the operator's own names: <name>-<role>-<index>
    assert len(f"{name}-worker-999") <= 63
    values.write_text(yaml.safe_dump({"experiment": {"name": name + "x"}}))
    with pytest.raises(HelmError, match="at '/experiment/name': maxLength"):
        template(CHART, name, namespace, [CI_DIR / "walkthrough-values.yaml", values],
                 kube_version=KUBE_VERSION, helm=find_helm(4))


def test_chief_evaluator_gang(renders: dict[str, dict[str, str]]) -> None:
    tfjob = next(o for o in objects(renders["chief-evaluator-csi"]["helm4"])
                 if o["kind"] == "TFJob")
    specs = tfjob["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 4, "Evaluator": 1}
    assert specs["Chief"]["restartPolicy"] == "ExitCode"
    policy = tfjob["spec"]["runPolicy"]["schedulingPolicy"]
    assert policy["minAvailable"] == sum(v["replicas"] for v in specs.values())
    assert {v["template"]["spec"]["schedulerName"] for v in specs.values()} == {"volcano"}
    evaluator = specs["Evaluator"]["template"]["spec"]["containers"][0]
    assert evaluator["image"].endswith("resnet-eval:1.2")
    assert evaluator["command"] == ["python", "/app/eval.py"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_istio_sidecar_only_when_asked(renders: dict[str, dict[str, str]], scenario: str) -> None:
    allowed = scenario_values(scenario)["istioSidecar"]
    tfjob = training_job(objects(renders[scenario]["helm4"]))
    assert tfjob["spec"]["tfReplicaSpecs"]
    for spec in tfjob["spec"]["tfReplicaSpecs"].values():
        annotations = spec["template"]["metadata"]["annotations"]
        assert ("sidecar.istio.io/inject" not in annotations) == allowed
        if not allowed:
            assert annotations["sidecar.istio.io/inject"] == "false"


@pytest.mark.parametrize(("prefix", "path", "args"), [
    ("", "/", []),                                                   # host only: TensorBoard at /
    ("/tb/mnist-web/", "/tb/mnist-web", ["--path_prefix", "/tb/mnist-web"]),  # slash trimmed
])
def test_ingress_prefix_variants(tmp_path: Path, prefix: str, path: str, args: list[str]) -> None:
    overlay = tmp_path / "prefix.yaml"
    overlay.write_text(yaml.safe_dump({"tensorboard": {"ingress": {"pathPrefix": prefix}}}))
    objs = objects(render("tensorboard-ingress", 4, overlay))
    ingress = next(o for o in objs if o["kind"] == "Ingress")
    container = next(o for o in objs if o["kind"] == "Deployment")[
        "spec"]["template"]["spec"]["containers"][0]
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["path"] == path
    assert container["args"][7:] == args
    assert container["readinessProbe"]["httpGet"]["path"] == path.rstrip("/") + "/"
    assert errors_of(k8s_validator(K8S_VERSIONS[0], "Ingress", "networking.k8s.io/v1"),
                     ingress) == []
