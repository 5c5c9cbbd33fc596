"""Rules on rendered objects: TFJob, data safety, live-run immutability, Argo CD whitelists."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.gate.argo.wiring import Project, kind_allowed
from tfgen.gate.documents import kubeyaml
from tfgen.gate.documents.manifests import RenderedObject, parse_manifest
from tfgen.gate.objects.policy import (
    JSON_PER_CHARACTER,
    applied_size_problems,
    data_safety_problems,
    job_problems,
)
from tfgen.gate.revisions.immutability import immutability_changes

KEEP = {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}


def pod(image: str = "tf:1", name: str = "tensorflow", **extra: Any) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [{"name": name, "image": image, **extra}]}},
            "replicas": 1}


def tfjob(**replicas: dict[str, Any]) -> RenderedObject:
    return RenderedObject({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                           "metadata": {"name": "mnist", "namespace": "default",
                                        "annotations": {"argocd.argoproj.io/sync-wave": "0"}},
                           "spec": {"tfReplicaSpecs": replicas,
                                    "runPolicy": {"cleanPodPolicy": "Running"}}})


def storage(reclaim: str = "Retain", server: str = "nas-1") -> list[RenderedObject]:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "default-mnist-data",
                       "annotations": {**KEEP, "argocd.argoproj.io/sync-wave": "-2"}},
          "spec": {"persistentVolumeReclaimPolicy": reclaim, "capacity": {"storage": "1Gi"},
                   "csi": {"driver": "nasplugin.csi.alibabacloud.com",
                           "volumeHandle": "default-mnist-data",
                           "volumeAttributes": {"server": server, "path": "/"}}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "mnist-data", "namespace": "default",
                        "annotations": {**KEEP, "argocd.argoproj.io/sync-wave": "-1"}},
           "spec": {"storageClassName": "tfgen-nas", "volumeName": "default-mnist-data",
                    "resources": {"requests": {"storage": "1Gi"}}}}
    return [RenderedObject(pv), RenderedObject(pvc)]


def messages(problems: list[Any]) -> str:
    return "\n".join(p.text() for p in problems)


def test_good_tfjob_passes() -> None:
    assert job_problems(tfjob(Master=pod(), Worker=pod()), "s.yaml", "") == []


def test_tfjob_rules() -> None:
    job = tfjob(Chief=pod(), Master=pod(), Worker=pod(name="trainer"),
                PS=pod(env=[{"name": "TF_CONFIG", "value": "{}"}]))
    job.doc["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60
    text = messages(job_problems(job, "s.yaml", ""))
    assert "both Chief and Master" in text
    assert "TFJob/mnist $.spec.tfReplicaSpecs.Worker.template.spec.containers: no container " \
           "named 'tensorflow'" in text
    assert "$.spec.tfReplicaSpecs.PS.template.spec.containers[0].env[0]: TF_CONFIG" in text
    assert "ttlSecondsAfterFinished deletes the finished TFJob" in text


def test_storage_safe_by_default() -> None:
    assert data_safety_problems([*storage(), tfjob(Worker=pod())], "s.yaml") == []


def test_storage_unsafe() -> None:
    pv, pvc = storage(reclaim="Delete")
    del pvc.doc["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
    writer = RenderedObject({"apiVersion": "batch/v1", "kind": "Job",
                             "metadata": {"name": "cleanup", "annotations": {
                                 "helm.sh/hook": "post-delete",
                                 "argocd.argoproj.io/sync-wave": "-1"}},
                             "spec": {"template": {"spec": {
                                 "volumes": [{"name": "d", "persistentVolumeClaim": {
                                     "claimName": "mnist-data"}}],
                                 "containers": [{"name": "c", "image": "x", "volumeMounts": [
                                     {"name": "d", "mountPath": "/d"}]}]}}}})
    text = messages(data_safety_problems([pv, pvc, writer], "s.yaml"))
    assert "PersistentVolume/default-mnist-data $.spec.persistentVolumeReclaimPolicy" in text
    assert "PersistentVolumeClaim/mnist-data" in text and "missing Prune=false" in text
    assert "hooks are not allowed" in text
    assert "mounts the experiment's volume writable" in text
    assert "sync wave -1 is not after the storage" in text


def test_pv_without_pvc() -> None:
    pv, _ = storage()
    assert "without its PersistentVolumeClaim" in messages(data_safety_problems([pv], "s"))


def test_live_changes_need_a_new_run() -> None:
    before = [*storage(), tfjob(Master=pod(), Worker=pod())]
    after_objs = [*storage(server="nas-2"), tfjob(Master=pod(), Worker=pod())]
    after_objs[2].doc["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    after_objs[2].doc["spec"]["runPolicy"]["suspend"] = True  # allowed: re-read live
    changes = immutability_changes(before, after_objs)
    text = "\n".join(f"{c.ref} {c.pointer}: {c.message}" for c in changes)
    assert ("PersistentVolume/default-mnist-data $.spec.csi.volumeAttributes.server: the volume "
            'source changed ("nas-1" -> "nas-2")') in text
    assert "Worker replicas changed 1 -> 4" in text
    assert "suspend" not in text
    # the TensorBoard and capacity may change freely
    grown = copy.deepcopy(before)
    grown[0].doc["spec"]["capacity"]["storage"] = "2Gi"
    grown[1].doc["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert immutability_changes(before, grown) == []
    # a bound claim takes a new size, nothing else
    reclassed = copy.deepcopy(before)
    reclassed[1].doc["spec"]["storageClassName"] = "fast"
    [change] = immutability_changes(before, reclassed)
    assert (change.ref, change.pointer) == ("PersistentVolumeClaim/mnist-data",
                                            "$.spec.storageClassName")
    assert change.message == ('changed ("tfgen-nas" -> "fast"); a bound claim\'s spec is '
                              "immutable except its size")


def test_project_whitelists() -> None:
    project = Project("p", "argo/project.yaml", ["*"], [],
                      cluster_whitelist=[{"group": "", "kind": "PersistentVolume"}],
                      cluster_blacklist=[],
                      namespace_whitelist=[{"group": "kubeflow.org", "kind": "TFJob"},
                                           {"group": "", "kind": "*"}],
                      namespace_blacklist=[{"group": "", "kind": "Secret"}])
    assert kind_allowed(project, "", "PersistentVolume")
    assert not kind_allowed(project, "storage.k8s.io", "StorageClass")
    assert kind_allowed(project, "kubeflow.org", "TFJob")
    assert not kind_allowed(project, "apps", "Deployment")
    assert not kind_allowed(project, "", "Secret")


def test_project_whitelist_by_name_pattern() -> None:
    """Argo CD 3.3 name globs: a volume named outside tfgen's pattern is refused."""
    project = Project("p", "argo/project.yaml", ["*"], [],
                      cluster_whitelist=[{"group": "", "kind": "PersistentVolume",
                                          "name": "default-*-data"}],
                      cluster_blacklist=[{"group": "", "kind": "PersistentVolume",
                                          "name": "default-keep-*"}],
                      namespace_whitelist=None, namespace_blacklist=[])
    assert kind_allowed(project, "", "PersistentVolume")  # the kind, for some names
    assert kind_allowed(project, "", "PersistentVolume", "default-mnist-data")
    assert not kind_allowed(project, "", "PersistentVolume", "ml-team-mnist-data")
    assert not kind_allowed(project, "", "PersistentVolume", "pvc-4f1c")
    assert not kind_allowed(project, "", "PersistentVolume", "default-keep-x-data")


def test_only_nas_volumes() -> None:
    """A hostPath (or any non-NAS) PersistentVolume would hand a node's disk to a spec."""
    objects = storage()
    assert not data_safety_problems(objects, "s.yaml")
    spec = objects[0].doc["spec"]
    spec.pop("csi")
    spec["hostPath"] = {"path": "/"}
    assert ("PersistentVolume/default-mnist-data $.spec: volume source hostPath is not the NAS "
            "(csi with driver nasplugin.csi.alibabacloud.com, flexVolume with driver "
            "alicloud/nas, or nfs)") in messages(data_safety_problems(objects, "s.yaml"))
    spec.pop("hostPath")
    spec["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}
    assert "volume source csi is not the NAS" in messages(data_safety_problems(objects, "s.yaml"))
    spec["csi"] = {"driver": "nasplugin.csi.alibabacloud.com", "volumeHandle": "x"}
    spec["nfs"] = {"server": "s", "path": "/"}  # two sources: not a volume tfgen renders
    assert "volume source csi, nfs is not the NAS" in messages(
        data_safety_problems(objects, "s.yaml"))


# --- the size Argo CD's apply keeps ----------------------------------------------------------
# Scalars that read wider than they are written (go-yaml's booleans, a float's digits, an
# escape, a character of 4 bytes), absent ones, in collections of every style: the texts
# whose JSON is widest per character.
_WIDE = st.sampled_from(["n", "y", "~", "", "1e15", "-.inf", "\U0001F600", '"\\0"', "'\"'",
                         "0x1F", "a", "[]", "{}"])


@st.composite
def _flow(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 2 or draw(st.booleans()):
        return draw(_WIDE) or "~"
    items = draw(st.lists(st.tuples(_WIDE, st.none() | _flow(depth + 1)), max_size=4))
    if draw(st.booleans()):
        return "[" + ",".join(value or key or "~" for key, value in items) + "]"
    return "{" + ",".join(key if value is None else f"{key}: {value}" for key, value in items) + "}"


@st.composite
def _block(draw: st.DrawFn, indent: int = 0) -> str:
    pad, items = " " * indent, draw(st.booleans())
    lines = []
    for key, value in draw(st.lists(st.tuples(_WIDE, st.none() | _flow()), min_size=1,
                                    max_size=4)):
        nested = indent < 4 and draw(st.booleans())
        if items:  # a sequence: an item, an absent one, or a collection below
            lines.append(f"{pad}-\n" + draw(_block(indent + 2)) if nested else
                         f"{pad}- {value or key}\n" if value or key else f"{pad}-\n")
        elif nested:
            lines.append(f"{pad}{key or 'k'}:\n" + draw(_block(indent + 1)))
        else:  # an entry, one with an absent value, or an explicit key
            lines.append(draw(st.sampled_from([f"{pad}{key}: {value or ''}\n",
                                               f"{pad}{key}:\n", f"{pad}? {key}\n"])))
    return "".join(lines)


@settings(max_examples=examples(1000), deadline=None, derandomize=True)
@given(st.one_of(_flow(), _block()))
def test_json_takes_at_most_so_many_bytes_a_character_of_text(text: str) -> None:
    # the bound that spares writing an object's JSON to measure it (a text of no alias or tag)
    try:
        doc = kubeyaml.load_document(text)
        written = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    except (ValueError, TypeError, yaml.YAMLError):
        return  # not a document of JSON values (a duplicate key, a key that is a list)
    assert len(written) <= 12 * len(text) + 2 <= JSON_PER_CHARACTER * len(text), text


def test_an_object_too_big_to_apply_is_refused_with_aliases_too() -> None:
    # a short text whose aliases repeat a long value: measured as written out, not as written
    manifest = ("---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n"
                "metadata:\n  name: big\ndata:\n  a: &long " + "x" * 15_000 + "\n"
                + "".join(f"  a{i}: *long\n" for i in range(20)))
    [big] = parse_manifest(manifest)
    assert len(manifest) * JSON_PER_CHARACTER < 262_144
    [problem] = applied_size_problems(big, "s.yaml")
    assert problem.pointer == "ConfigMap/big $"
    assert problem.message.startswith("ConfigMap is 315,250 bytes as JSON"), problem.message
