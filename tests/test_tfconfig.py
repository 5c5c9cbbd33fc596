"""TF_CONFIG and pod listing from TFJob objects, against the training operator v1.9 rules.

Expected strings are written out by hand from kubeflow/training-operator v1.9.0
pkg/controller.v1/tensorflow/tensorflow.go (genTFConfigJSONStr): Go's json.Marshal of
{cluster, task, environment}, cluster keys sorted, evaluator included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tfgen.errors import InputError
from tfgen.repo.runtimes import tfconfig


def replica(replicas: int | None, *, port: int | None = None, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "tensorflow", "image": "img", "command": ["python"]}
    if port is not None:
        container["ports"] = [{"name": "tfjob-port", "containerPort": port}]
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus, "memory": "1Gi"}}
    container["volumeMounts"] = [{"name": "data", "mountPath": "/training"}]
    out: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [container],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "j-data"}}],
            }
        }
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out


def tfjob(name: str, ns: str, specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"tfReplicaSpecs": specs, **spec},
    }


def by_name(pods: list[tfconfig.Pod]) -> dict[str, tfconfig.Pod]:
    return {p.name: p for p in pods}


def test_ps_worker_chief_evaluator_dense_form() -> None:
    job = tfjob(
        "exp",
        "ml",
        {
            "Chief": replica(1),
            "Worker": replica(2, gpus=1),
            "PS": replica(1),
            "Evaluator": replica(1),
        },
    )
    pods = tfconfig.pods(job)
    assert [p.name for p in pods] == [
        "exp-chief-0",
        "exp-worker-0",
        "exp-worker-1",
        "exp-ps-0",
        "exp-evaluator-0",
    ]
    cluster = (
        '{"chief":["exp-chief-0.ml.svc:2222"],'
        '"evaluator":["exp-evaluator-0.ml.svc:2222"],'
        '"ps":["exp-ps-0.ml.svc:2222"],'
        '"worker":["exp-worker-0.ml.svc:2222","exp-worker-1.ml.svc:2222"]}'
    )
    got = by_name(pods)
    assert got["exp-evaluator-0"].tf_config == (
        '{"cluster":' + cluster + ',"task":{"type":"evaluator","index":0},"environment":"cloud"}'
    )
    assert got["exp-worker-1"].tf_config == (
        '{"cluster":' + cluster + ',"task":{"type":"worker","index":1},"environment":"cloud"}'
    )
    assert got["exp-worker-1"].gpus == 1
    assert got["exp-chief-0"].gpus == 0
    assert got["exp-worker-1"].address == "exp-worker-1.ml.svc:2222"
    assert got["exp-ps-0"].mounts == (tfconfig.Mount("/training", "data", "pvc/j-data"),)


def test_single_replica_gets_no_tf_config() -> None:
    pods = tfconfig.pods(tfjob("solo", "default", {"Worker": replica(1)}))
    assert len(pods) == 1
    assert pods[0].tf_config is None
    # A missing replica count defaults to 1, as the operator's defaulting does.
    assert tfconfig.pods(tfjob("solo", "default", {"Chief": replica(None)}))[0].tf_config is None


def test_two_replicas_of_one_type_are_distributed() -> None:
    pods = tfconfig.pods(tfjob("pair", "default", {"Worker": replica(2)}))
    assert len(pods) == 2
    assert all(p.tf_config for p in pods)


def test_port_override_is_per_replica_type() -> None:
    job = tfjob("p", "default", {"Worker": replica(1, port=3333), "PS": replica(1)})
    cluster = json.loads(tfconfig.pods(job)[0].tf_config or "")["cluster"]
    assert cluster == {
        "ps": ["p-ps-0.default.svc:2222"],
        "worker": ["p-worker-0.default.svc:3333"],
    }
    # Only the port named tfjob-port of the container named tensorflow counts.
    other = replica(1)
    other["template"]["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 80}]
    assert tfconfig.replica_port(other) == 2222


def test_cluster_domain_is_appended_after_svc() -> None:
    job = tfjob("d", "ns1", {"Worker": replica(2)})
    pods = tfconfig.pods(job, cluster_domain="cluster.local")
    assert pods[1].address == "d-worker-1.ns1.svc.cluster.local:2222"
    assert '"d-worker-0.ns1.svc.cluster.local:2222"' in (pods[1].tf_config or "")


def test_dynamic_worker_sparse_form() -> None:
    job = tfjob(
        "dyn",
        "default",
        {"Chief": replica(1), "Worker": replica(2), "PS": replica(2)},
        enableDynamicWorker=True,
    )
    got = by_name(tfconfig.pods(job))
    ps = '["dyn-ps-0.default.svc:2222","dyn-ps-1.default.svc:2222"]'
    assert got["dyn-worker-1"].tf_config == (
        '{"cluster":{"worker":{"1":"dyn-worker-1.default.svc:2222"},"ps":' + ps + "},"
        '"task":{"type":"worker","index":1}}'
    )
    assert got["dyn-ps-1"].tf_config == (
        '{"cluster":{"worker":{},"ps":["dyn-ps-1.default.svc:2222"]},'
        '"task":{"type":"ps","index":1}}'
    )
    assert got["dyn-chief-0"].tf_config == (
        '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'
    )


def test_dynamic_worker_without_ps_marshals_null() -> None:
    job = tfjob("dyn", "default", {"Worker": replica(2)}, enableDynamicWorker=True)
    assert tfconfig.pods(job)[0].tf_config == (
        '{"cluster":{"worker":{"0":"dyn-worker-0.default.svc:2222"},"ps":null},'
        '"task":{"type":"worker","index":0}}'
    )


def test_replica_keys_in_any_case_are_normalised() -> None:
    pods = tfconfig.pods(tfjob("c", "default", {"ps": replica(1), "WORKER": replica(1)}))
    assert [(p.replica_type, p.name) for p in pods] == [("Worker", "c-worker-0"), ("PS", "c-ps-0")]


def test_address_override_keeps_the_shape() -> None:
    job = tfjob("l", "default", {"Master": replica(1), "Worker": replica(1)})
    ports = {("Master", 0): 4000, ("Worker", 0): 4001}
    pods = tfconfig.pods(job, address_of=lambda t, i: f"127.0.0.1:{ports[(t, i)]}")
    assert pods[0].tf_config == (
        '{"cluster":{"master":["127.0.0.1:4000"],"worker":["127.0.0.1:4001"]},'
        '"task":{"type":"master","index":0},"environment":"cloud"}'
    )


@pytest.mark.parametrize(
    "specs, message",
    [
        ({"Driver": replica(1)}, "unknown replica type 'Driver'"),
        ({}, "no spec.tfReplicaSpecs"),
    ],
)
def test_bad_tfjobs_are_input_errors(specs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        tfconfig.pods(tfjob("bad", "default", specs))


def test_missing_tensorflow_container_is_an_input_error() -> None:
    bad = replica(1)
    bad["template"]["spec"]["containers"][0]["name"] = "main"
    with pytest.raises(InputError, match="no container named 'tensorflow'"):
        tfconfig.pods(tfjob("bad", "default", {"Worker": bad}))


def test_go_json_escapes_like_go() -> None:
    assert tfconfig.go_json({"a": "<&>"}) == '{"a":"\\u003c\\u0026\\u003e"}'


@pytest.mark.parametrize("count", ["abc", 1.5, True, -1, 1001, 10**8])
def test_replica_count_outside_the_operator_range_is_an_input_error(count: object) -> None:
    # The chart is the repository's own: what it renders is input, never trusted to be sane.
    with pytest.raises(InputError, match="expected a whole number from 0 to 1000"):
        tfconfig.replica_count({"replicas": count})


def test_gpu_limit_must_be_whole_devices() -> None:
    replica = {"template": {"spec": {"containers": [
        {"name": "tensorflow", "resources": {"limits": {"nvidia.com/gpu": "500m"}}}]}}}
    with pytest.raises(InputError, match="expected a whole number"):
        tfconfig._gpus(replica)


def test_port_must_be_a_port_number() -> None:
    replica = {"template": {"spec": {"containers": [
        {"name": "tensorflow", "ports": [{"name": "tfjob-port", "containerPort": "abc"}]}]}}}
    with pytest.raises(InputError, match="expected a port number"):
        tfconfig.replica_port(replica)
