"""`tfgen import` end to end: the walkthrough's manifests in every TFJob API version and storage
form become specs that `tfgen check` passes, and render (the real chart, the real helm) to the
replica specs and PV source they were imported from; malformed and hostile input is refused
with one line, exit 1, nothing written.

Fixtures: `fixtures/import/jobs/<apiVersion>.yaml` (1 master, 2 GPU workers, 2 PS, all
mounting the claim mnist-nas) and `fixtures/import/storage/<form>.yaml` (the PV and claim, or
none for an existing claim, and a TensorBoard Deployment on the claim); each test imports one
job with one storage form.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import FIXTURES, REPO_ROOT, copy_repo_parts, node_paths, template
from tfgen.cli import main
from tfgen.importer.manifests import MAX_NODES, MAX_REPEATED, ManifestError, read_manifests
from tfgen.importer.write import MODELINE
from tfgen.repo import layout, naming
from tfgen.repo.runtimes.changes import as_stored

IMPORT = FIXTURES / "import"
JOBS = sorted(p.stem for p in (IMPORT / "jobs").glob("*.yaml"))
STORAGE = sorted(p.stem for p in (IMPORT / "storage").glob("*.yaml"))
CASES = list(itertools.product(JOBS, STORAGE))
OWNER = "someone@example.com"


def spec_name(job: str, storage: str) -> str:
    return f"mnist-{job}-{storage}"


def run_import(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(main, ["import", *map(str, args)], catch_exceptions=False)


# Each case's input with a log directory of its own: one job imported sixteen ways (and the
# walkthrough it came from) would otherwise be sixteen runs writing the same logs, which
# validate refuses.
_CASE_INPUTS = Path(tempfile.mkdtemp(prefix="tfgen-import-cases-"))
atexit.register(shutil.rmtree, _CASE_INPUTS, ignore_errors=True)


def inputs(job: str, storage: str) -> tuple[Path, Path]:
    """The case's job and storage files (copies with the case's own log directory)."""
    out = []
    for source in (IMPORT / "jobs" / f"{job}.yaml", IMPORT / "storage" / f"{storage}.yaml"):
        copy = _CASE_INPUTS / f"{job}-{storage}-{source.parent.name}.yaml"
        if not copy.exists():
            name = spec_name(job, storage)
            copy.write_text(source.read_text()  # the job's mount, and TensorBoard's
                            .replace("/training/tensorflow/logs", f"/training/{name}/logs")
                            .replace("/data/tensorflow/logs", f"/data/{name}/logs"))
        out.append(copy)
    return out[0], out[1]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this repository with every job x storage case imported with --write and
    rendered."""
    root = copy_repo_parts(tmp_path_factory.mktemp("import") / "repo")
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        for job, storage in CASES:
            result = run_import(runner, *inputs(job, storage), "--owner", OWNER,
                                "--name", spec_name(job, storage), "--write")
            assert result.exit_code == 0, result.output
        result = runner.invoke(main, ["render", "--root", str(root)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return root


def test_the_fixtures_cover_every_version_and_storage_form() -> None:
    assert JOBS == ["v1", "v1alpha1", "v1alpha2", "v1beta1"]
    assert STORAGE == ["csi", "existing-claim", "flexvolume", "nfs"]


def test_every_imported_spec_passes_check(runner: CliRunner, imported: Path) -> None:
    result = runner.invoke(main, ["check", "--root", str(imported), "--no-cache"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    bundled = {p.stem for p in (REPO_ROOT / "experiments").glob("*.yaml")}
    written = sorted(p.stem for p in (imported / "experiments").glob("*.yaml")
                     if p.stem not in bundled)
    assert written == sorted(spec_name(*case) for case in CASES)


def test_written_spec_form(imported: Path) -> None:
    for job, storage in CASES:
        path = imported / "experiments" / f"{spec_name(job, storage)}.yaml"
        text = path.read_text()
        assert text.startswith(MODELINE)
        assert yaml.safe_load(text)["metadata"]["name"] == path.stem
        assert oct(path.stat().st_mode & 0o777) != oct(0o600)
    leftovers = [p.name for p in (imported / "experiments").iterdir()
                 if layout.is_temp_name(p.name)]
    assert leftovers == []


# --- round trip -----------------------------------------------------------------------------


def _objects(rendered: str) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(rendered) if doc}


def _input(job: str, storage: str) -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for path in inputs(job, storage):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def _input_replicas(tfjob: dict[str, Any]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Replica type (as v1 spells it) -> (group, pod template), in any API version; written
    here independently of the importer, from the operator's documented shapes."""
    spec = tfjob["spec"]
    out = {}
    if tfjob["apiVersion"].endswith("v1alpha1"):
        for group in spec["replicaSpecs"]:
            template_ = group["template"]
            container = template_["spec"]["containers"][0]
            container.setdefault("image", spec["tfImage"])
            kind = naming.REPLICA_TYPES[group["tfReplicaType"].lower()]
            out[kind] = ({"replicas": group["replicas"],
                          "restartPolicy": template_["spec"]["restartPolicy"]}, template_)
    else:
        for kind, group in spec["tfReplicaSpecs"].items():
            out[kind] = (group, group["template"])
    return out


def _pv_source(pv: dict[str, Any]) -> dict[str, Any]:
    spec = pv["spec"]
    source = {key: spec.get(key) for key in ("capacity", "mountOptions", "storageClassName",
                                             "accessModes", "persistentVolumeReclaimPolicy")}
    if "csi" in spec:
        source["csi"] = {"driver": spec["csi"]["driver"],
                         "volumeAttributes": spec["csi"]["volumeAttributes"]}
    for key in ("flexVolume", "nfs"):
        if key in spec:
            source[key] = spec[key]
    return source


@pytest.mark.parametrize(("job", "storage"), CASES)
def test_round_trip(imported: Path, job: str, storage: str) -> None:
    name = spec_name(job, storage)
    values = imported / layout.generated_folder(name) / layout.VALUES_FILE
    rendered = _objects(template(imported / layout.CHART_PATH, name, "default", [values]))
    given = _input(job, storage)
    tfjob = rendered["TFJob"]
    claim = (rendered["PersistentVolumeClaim"]["metadata"]["name"] if "PersistentVolume" in
             rendered else "mnist-nas")
    replicas = _input_replicas(given["TFJob"][0])
    assert set(tfjob["spec"]["tfReplicaSpecs"]) == set(replicas)
    for kind, (group, pod) in replicas.items():
        out = tfjob["spec"]["tfReplicaSpecs"][kind]
        assert out["replicas"] == group["replicas"], kind
        assert out["restartPolicy"] == group["restartPolicy"], kind
        want, got = pod["spec"]["containers"][0], out["template"]["spec"]["containers"][0]
        for field in ("image", "command", "args", "env"):
            assert got.get(field) == want.get(field), (kind, field)
        # the chart writes `requests: {}` where the input says nothing: the same to Kubernetes
        resources = {k: v for k, v in got.get("resources", {}).items() if v}
        # as the API server stores them: a GPU count written 1 is held as "1"
        assert as_stored(resources) == as_stored(want.get("resources", {})), kind
        for field in ("nodeSelector", "tolerations"):
            assert out["template"]["spec"].get(field) == pod["spec"].get(field), (kind, field)
        mount = want["volumeMounts"][0]["mountPath"]
        assert got["volumeMounts"] == [{"name": "data", "mountPath": mount}], kind
        assert out["template"]["spec"]["volumes"] == [
            {"name": "data", "persistentVolumeClaim": {"claimName": claim}}], kind
    if "PersistentVolume" in given:
        assert _pv_source(rendered["PersistentVolume"]) == _pv_source(
            given["PersistentVolume"][0])
    else:
        assert "PersistentVolume" not in rendered
    board = rendered["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert board["image"] == given["Deployment"][0]["spec"]["template"]["spec"][
        "containers"][0]["image"]
    assert board["args"][:2] == ["--logdir", f"/training/{name}/logs"]


# --- what is left out, and output --------------------------------------------------------


def test_printed_spec_lists_what_is_left_out(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "job.yaml"
    data = yaml.safe_load(inputs("v1", "csi")[0].read_text())
    data["status"] = {"conditions": [{"type": "Created"}]}
    data["spec"]["ttlSecondsAfterFinished"] = 600
    worker = data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"][0]["resources"]["limits"]["cpu"] = "8"
    worker["hostNetwork"] = True
    source.write_text(yaml.safe_dump(data))
    result = run_import(runner, source, inputs("v1", "csi")[1], "--owner", OWNER)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["metadata"]["name"] == "mnist-v1"
    errors = result.stderr
    groups = left_out_groups(errors)
    assert any("spec.ttlSecondsAfterFinished: 600" in line
               for line in groups["tfgen never sets a TTL: Argo CD would recreate the deleted "
                                  "TFJob and train again"])
    assert any("containers[0].resources.limits.cpu: 8" in line for reason, lines in
               groups.items() if reason.startswith("tfgen sets no CPU limit") for line in lines)
    assert any("Worker.template.spec.hostNetwork: True" in line
               for line in groups["the spec has no field for it"])
    assert "spec.csi.volumeHandle: mnist-nas-pv" in errors
    # the cluster's bookkeeping is counted, never listed field by field
    assert "status.conditions" not in errors
    assert ("not imported, what the cluster and kubectl write on every object (status, uid, "
            "resourceVersion, managedFields, ...), not listed: 1 object") in errors
    assert "tfgen validate" in errors and "tfgen render" in errors and "pull request" in errors
    assert not (tmp_path / "experiments").exists()


def left_out_groups(stderr: str) -> dict[str, list[str]]:
    """`not imported, <reason>:` headers and their indented lines, as import prints them."""
    groups: dict[str, list[str]] = {}
    reason = ""
    for line in stderr.splitlines():
        if line.startswith("not imported, ") and line.endswith(":"):
            reason = line[len("not imported, "):-1]
            groups[reason] = []
        elif line.startswith("  ") and reason:
            groups[reason].append(line.strip())
        else:
            reason = ""
    return groups


def test_a_cluster_export_lists_what_matters_at_each_objects_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A `kubectl get -o yaml` List: each left-out field at its own object's line, grouped by
    reason; uid, resourceVersion, managedFields and status counted, not listed."""
    objects = [d for docs in _input("v1", "csi").values() for d in docs]
    for obj in objects:
        obj["metadata"].update(uid="0d7c", resourceVersion="42", generation=1,
                               managedFields=[{"manager": "kubectl", "operation": "Update",
                                               "fieldsV1": {"f:spec": {}}}])
        obj["status"] = {"phase": "Bound"}
    objects[0]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["hostNetwork"] = True
    listing = tmp_path / "cluster.yaml"
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    result = run_import(runner, listing, "--owner", OWNER)
    assert result.exit_code == 0, result.output
    groups = left_out_groups(result.stderr)
    listed = [line for lines in groups.values() for line in lines]
    assert not any(word in line for line in listed
                   for word in ("uid", "resourceVersion", "managedFields", "status", "generation"))
    text = listing.read_text().splitlines()
    starts = {i + 1 for i, line in enumerate(text) if line.startswith("- ")}
    assert len(starts) == len(objects)
    for line in listed:  # each at the line where its own object starts, never the List's
        number = int(line.split(":")[1])
        assert number in starts, line
    assert any("hostNetwork: True" in line for line in groups["the spec has no field for it"])
    assert f"not listed: {len(objects)} objects" in result.stderr


def test_a_kubectl_list_and_a_folder(runner: CliRunner, tmp_path: Path) -> None:
    items = [*_input("v1beta1", "nfs").values()]
    listing = {"apiVersion": "v1", "kind": "List", "items": [d for docs in items for d in docs]}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "all.yaml").write_text(yaml.safe_dump(listing))
    (tmp_path / "in" / "notes.txt").write_text("not read")
    result = run_import(runner, tmp_path / "in", "--owner", OWNER)
    assert result.exit_code == 0, result.output
    spec = yaml.safe_load(result.stdout)
    assert spec["spec"]["storage"]["nas"]["driver"] == "nfs"
    assert spec["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 3}


def test_never_overwrites(runner: CliRunner, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    existing = root / "experiments" / "distributed-mnist.yaml"
    before = existing.read_bytes()
    result = run_import(runner, *inputs("v1", "csi"), "--owner", OWNER,
                        "--name", "distributed-mnist", "--write")
    assert result.exit_code == 1
    assert "exists already" in result.stderr and "never overwrites" in result.stderr
    assert existing.read_bytes() == before


# --- refused input ------------------------------------------------------------------------


def _tfjob_text(**change: Any) -> str:
    data = yaml.safe_load((IMPORT / "jobs" / "v1.yaml").read_text())
    data["spec"].update(change)
    return yaml.safe_dump(data)


CLAIM_WITHOUT_PV = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: mnist-nas, namespace: default}
spec: {accessModes: [ReadWriteMany], storageClassName: nas, volumeName: gone}
"""

REFUSED = {
    "not-an-object": ("- just\n- a list\n", "1:1: not a Kubernetes object"),
    "no-tfjob": (CLAIM_WITHOUT_PV, "no JobSet or TFJob in the input"),
    "two-tfjobs": (_tfjob_text() + "---\n" + _tfjob_text(),
                   "a second training job named 'mnist-v1', a TFJob (the first is at "),
    "claim-without-pv": (_tfjob_text() + "---\n" + CLAIM_WITHOUT_PV,
                         "PersistentVolumeClaim/mnist-nas: no PersistentVolume in the input"),
    "unknown-replica-type": (_tfjob_text(tfReplicaSpecs={"Launcher": {"replicas": 1}}),
                             "unknown replica type 'Launcher'"),
    "no-claim": (_tfjob_text(tfReplicaSpecs={"Worker": {"template": {"spec": {
        "containers": [{"name": "tensorflow", "image": "tf"}]}}}}),
        "its pods mount no PersistentVolumeClaim"),
    "old-version": (_tfjob_text().replace("kubeflow.org/v1", "kubeflow.org/v2"),
                    "not a TFJob version tfgen reads"),
    "bad-yaml": ("a: [b\n", "invalid YAML"),
    "alias-bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)),
        f"more than {MAX_NODES:,} values"),
    "merge-bomb": ("a: &a {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1}\n" + "".join(
        f"{c}: &{c} {{" + ", ".join(f"m{i}: {{<<: *{p}}}" for i in range(8)) + "}\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)),
        f"more than {MAX_NODES:,} values"),
    "deep-nesting": ("a: " + "[" * 120 + "]" * 120 + "\n", "1:1: nested more than 100 levels"),
    "alias-holds-itself": ("a: &a [*a]\n", "nested more than 100 levels deep (or an alias"),
    "binary": ("\x00\x01", "binary file"),
    "items-of-no-list": ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nitems: []\n",
                         "a document with a list of items that is no List"),
    "list-item-alias-bomb": ("apiVersion: v1\nkind: List\nitems:\n- &a {apiVersion: v1, "
                             "kind: ConfigMap, metadata: {name: a}, data: {k: [" + ", ".join(
                                 ["x"] * 50_000) + "]}}\n" + "- *a\n" * 5 + "- *a\n" * 400,
                             "values after expanding YAML aliases and merge keys"),
    "duplicate-key": ("a: 1\na: 2\n", "duplicate mapping key"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_input(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       case: str) -> None:
    root = copy_repo_parts(tmp_path / "repo", ("charts", "schemas", "tfgen.yaml"))
    monkeypatch.chdir(root)
    text, expected = REFUSED[case]
    source = tmp_path / f"{case}.yaml"
    source.write_text(text)
    result = run_import(runner, source, "--owner", OWNER, "--write")
    assert result.exit_code == 1, result.output
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output
    assert not (root / "experiments").exists()


def _aliasing_list(items: int, values: int) -> str:
    """A List whose first ConfigMap's data holds `values` values, aliased by `items` more."""
    return ("apiVersion: v1\nkind: List\nitems:\n- &a {apiVersion: v1, kind: ConfigMap, "
            "metadata: {name: a}, data: {k: [" + ", ".join(["x"] * values) + "]}}\n"
            + "- *a\n" * items)


def test_aliases_may_repeat_up_to_their_bound(tmp_path: Path) -> None:
    # Each alias item repeats its anchor's 1,000 list values and the few around them.
    fits, over = MAX_REPEATED // 1_100, MAX_REPEATED // 1_000
    path = tmp_path / "list.yaml"
    path.write_text(_aliasing_list(fits, 1_000))
    assert len(read_manifests([path])) == fits + 1
    path.write_text(_aliasing_list(over, 1_000))
    copies = f"more than {MAX_REPEATED:,} values after expanding YAML aliases and merge keys are"
    with pytest.raises(ManifestError, match=copies):
        read_manifests([path])


def test_input_is_read_as_kubernetes_reads_it(tmp_path: Path) -> None:
    # go-yaml v2's scalars (gate/documents/kubeyaml.py), not PyYAML's: y is true, 1e3 a number,
    # 60:30 and a date text
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\ndata:\n"
                    "  a: y\n  b: 1e3\n  c: 60:30\n  d: 2001-12-14\n")
    [manifest] = read_manifests([path])
    assert manifest.doc["data"] == {"a": True, "b": 1000.0, "c": "60:30", "d": "2001-12-14"}


@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
def test_hostile_files(runner: CliRunner, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "x.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(path)
    result = run_import(runner, folder, "--owner", OWNER)
    assert result.exit_code == 1, result.output
    assert "x.yaml: " in result.stderr and "Traceback" not in result.output
    assert result.stdout == ""


def test_invalid_spec_is_not_written(runner: CliRunner, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo_parts(tmp_path / "repo", ("charts", "schemas", "tfgen.yaml"))
    monkeypatch.chdir(root)
    source = tmp_path / "job.yaml"
    source.write_text(_tfjob_text().replace("namespace: default", "namespace: elsewhere"))
    result = run_import(runner, source, "--owner", OWNER, "--write")
    assert result.exit_code == 1
    assert "$.metadata.namespace" in result.stdout
    assert "nothing written" in result.stderr
    assert not (root / "experiments").exists()


def test_name_with_two_tfjobs_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "jobs.yaml"
    source.write_text(_tfjob_text() + "---\n" + _tfjob_text().replace("mnist-v1", "other"))
    result = run_import(runner, source, "--owner", OWNER, "--name", "x")
    assert result.exit_code == 2
    assert "--name is for one spec" in result.stderr


def test_what_the_groups_do_not_share_is_listed(runner: CliRunner, tmp_path: Path) -> None:
    data = yaml.safe_load((IMPORT / "jobs" / "v1.yaml").read_text())
    del data["metadata"]["namespace"]
    groups = data["spec"]["tfReplicaSpecs"]
    groups["Worker"]["template"]["spec"]["serviceAccountName"] = "trainer"
    ps = groups["PS"]["template"]["spec"]["containers"][0]
    ps["env"].append({"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    del ps["resources"]["limits"]
    source = tmp_path / "odd\nname.yaml"
    source.write_text(yaml.safe_dump(data))
    result = run_import(runner, source, IMPORT / "storage" / "existing-claim.yaml",
                        "--owner", OWNER)
    assert result.exit_code == 0, result.output
    spec = yaml.safe_load(result.stdout)
    assert "serviceAccountName" not in spec["spec"]
    assert spec["spec"]["roles"]["ps"]["memory"] == "4Gi"
    assert '"' + str(tmp_path) + '/odd\\nname.yaml"' in result.stdout.splitlines()[1]
    errors = result.stderr
    assert ("not imported, the spec sets serviceAccountName once for every role, and the "
            "groups differ (") in errors
    assert "Worker.template.spec.serviceAccountName: trainer\n" in errors
    assert "env[1].valueFrom.fieldRef.fieldPath: metadata.name" in errors
    assert "variable POD of PS is not imported" in errors
    assert "memory 4Gi becomes the limit too" in errors
    assert "names no namespace: the spec takes tfgen.yaml's default" in errors



def test_any_node_of_another_type_gets_a_line_not_a_traceback(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """Every node of a TFJob, PV, claim and TensorBoard replaced by one of another type: the
    library raises tfgen's errors only (the CLI turns them into one line), never another."""
    from tfgen.errors import TfgenError
    from tfgen.importer import import_manifests

    monkeypatch.chdir(tmp_path)
    docs = [*_input("v1", "flexvolume").values()]
    base = [doc for group in docs for doc in group]
    source = tmp_path / "in.yaml"
    tried = 0
    for index, doc in enumerate(base):
        for parts in node_paths(doc):
            # one other type per node: a number for a mapping or list, a list for a scalar
            original = base[index]
            for part in parts:
                original = original[part]
            for replacement in ([7] if isinstance(original, (dict, list)) else [["x"]]):
                changed = yaml.safe_load(yaml.safe_dump_all(base[index:index + 1]))
                target = changed
                for part in parts[:-1]:
                    target = target[part]
                target[parts[-1]] = replacement
                source.write_text(yaml.safe_dump_all([*base[:index], changed,
                                                      *base[index + 1:]]))
                with contextlib.suppress(TfgenError):
                    import_manifests([source], owner=OWNER)
                tried += 1
    assert tried > 150


def test_owner_defaults_to_gits_user_email(runner: CliRunner, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.chdir(tmp_path)
    config.write_text("")
    result = run_import(runner, *inputs("v1", "csi"))
    assert result.exit_code == 2 and "--owner is needed" in result.stderr
    config.write_text("[user]\n\temail = trainer@example.com\n")
    result = run_import(runner, *inputs("v1", "csi"))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["metadata"]["owner"] == "trainer@example.com"


def test_a_kubectl_list_of_megabytes_is_read_item_by_item(tmp_path: Path) -> None:
    """A `kubectl get -o yaml` List larger than a spec may be (1 MiB) is read, one item at a
    time: the TFJob whole, of the thousands of others only what names them (listed as left
    out)."""
    tfjob = yaml.safe_load((IMPORT / "jobs" / "v1.yaml").read_text())
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "default",
                          "annotations": {"n": "x" * 1000}}, "spec": {"containers": []}}
            for i in range(3000)]
    source = tmp_path / "dump.yaml"
    source.write_text(yaml.safe_dump({"apiVersion": "v1", "items": [*pods, tfjob],
                                      "kind": "List", "metadata": {"resourceVersion": ""}}))
    assert source.stat().st_size > 3 * 2**20
    manifests = read_manifests([source])
    assert [m.kind for m in manifests].count("Pod") == 3000
    assert manifests[-1].doc == tfjob
    assert manifests[0].doc == {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "p0", "namespace": "default"}}
    assert manifests[1].line > manifests[0].line  # each item at its own line


# --- an experiment's own rendering, read back --------------------------------------------------


@pytest.fixture
def own_rendering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A copy of this repository, and what its chart renders for distributed-mnist (what
    `helm template` prints, or `kubectl get -o yaml` of the live objects)."""
    repo = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(repo)
    manifests = tmp_path / "mnist.yaml"
    manifests.write_text(template(repo / "charts/tfjob-experiment", "distributed-mnist",
                                  "default", [repo / layout.generated_paths(
                                      "distributed-mnist")[0]]))
    return repo, manifests


def test_an_experiments_own_rendering_imports_beside_it(
    runner: CliRunner, own_rendering: tuple[Path, Path]
) -> None:
    repo, manifests = own_rendering
    # Its log directory is the experiment's own: refused, and the spec is shown as it would be
    refused = run_import(runner, manifests, "--name", "mnist-again", "--owner", OWNER)
    assert refused.exit_code == 1, refused.output
    shown = refused.stdout.split("experiments/mnist-again.yaml:")[0]
    assert yaml.safe_load(shown)["metadata"]["name"] == "mnist-again"
    assert "the log directory of experiments/distributed-mnist.yaml too" in refused.stdout
    assert "the spec is shown as it would be" in refused.stderr
    # --log-dir gives it one of its own, and every arg that used the old one follows
    done = run_import(runner, manifests, "--name", "mnist-again", "--owner", OWNER,
                      "--log-dir", "/training/mnist-again/logs", "--write")
    assert done.exit_code == 0, done.output
    spec = yaml.safe_load((repo / "experiments/mnist-again.yaml").read_text())["spec"]
    assert spec["tensorboard"]["logDir"] == "/training/mnist-again/logs"
    assert "--log_dir=/training/mnist-again/logs" in spec["args"]
    assert ("note: --log-dir: changed $.spec.args[1]: --log_dir=/training/tensorflow/logs -> "
            "--log_dir=/training/mnist-again/logs") in done.stderr
    # what tfgen's chart wrote is counted, not listed field by field
    listed = [line for line in done.stderr.splitlines() if line.startswith("  ")]
    assert listed == [], done.stderr
    assert "what tfgen's chart writes itself (the input is its rendering)" in done.stderr


def test_a_preview_outside_a_repository_takes_any_namespace(
    runner: CliRunner, own_rendering: tuple[Path, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    _, manifests = own_rendering
    elsewhere = manifests.with_name("research.yaml")
    elsewhere.write_text(manifests.read_text().replace('namespace: "default"',
                                                       'namespace: "research"'))
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    result = run_import(runner, elsewhere, "--owner", OWNER)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["metadata"]["namespace"] == "research"
