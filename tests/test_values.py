"""Spec -> chart values: the contract's shape, resources, env, determinism."""

from __future__ import annotations

from helpers import mnist_spec, mnist_written
from tfgen.validate.rules.values import build_values, env_var, resources
from tfgen.validate.schema.defaults import apply_defaults

CONTRACT_TOP_KEYS = [
    "experiment", "lifecycle", "runtime", "kueue", "clusterDomain", "image", "imagePullPolicy",
    "imagePullSecrets", "command", "args", "workingDir", "env", "roles", "storage", "tensorboard",
    "runPolicy", "priorityClassName", "schedulerName", "serviceAccountName", "podSecurityContext",
    "istioSidecar", "networkPolicy",
]
ROLE_KEYS = ["replicas", "image", "command", "args", "env", "resources", "nodeSelector",
             "tolerations", "restartPolicy"]


def test_values_have_exactly_the_contract_keys() -> None:
    values = build_values(mnist_spec())
    assert list(values) == CONTRACT_TOP_KEYS
    assert list(values["roles"]) == ["master", "worker", "ps"]  # fixed order, not spec order
    for role in values["roles"].values():
        assert list(role) == ROLE_KEYS
    assert list(values["storage"]["nas"]) == [
        "driver", "server", "path", "vers", "options", "mountOptions", "mode", "capacity",
        "storageClassName",
    ]
    assert values["experiment"] == {
        "name": "distributed-mnist", "namespace": "default", "owner": "someone@example.com",
        "labels": {"team": "vision"}, "annotations": {}, "rerunOf": "",
    }


def test_network_policy_comes_from_the_repository_not_the_spec() -> None:
    assert build_values(mnist_spec())["networkPolicy"] == {
        "enabled": True, "ingressNamespace": "ingress-nginx"}  # tfgen.yaml's schema defaults
    off = build_values(mnist_spec(), {"enabled": False, "ingressNamespace": "traefik"})
    assert off["networkPolicy"] == {"enabled": False, "ingressNamespace": "traefik"}


def test_role_resources_from_cpu_memory_gpus() -> None:
    roles = build_values(mnist_spec())["roles"]
    assert roles["worker"]["resources"] == {
        "requests": {"cpu": "4", "memory": "8Gi"},
        "limits": {"memory": "8Gi", "nvidia.com/gpu": "1"},
    }
    assert roles["ps"]["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"},
    }
    assert roles["master"]["resources"] == {"requests": {}, "limits": {"nvidia.com/gpu": "1"}}
    assert roles["worker"]["replicas"] == 2 and roles["ps"]["replicas"] == 2


def test_custom_gpu_resource_and_zero_gpus() -> None:
    assert resources("1", "2Gi", 2, "amd.com/gpu")["limits"] == {
        "memory": "2Gi", "amd.com/gpu": "2"}
    assert resources("1", None, 0)["limits"] == {}
    assert resources(None, None)["requests"] == {}


def test_env_to_kubernetes_envvar() -> None:
    assert env_var({"name": "A", "value": 1}) == {"name": "A", "value": "1"}
    assert env_var({"name": "T", "secretKeyRef": {"name": "tokens", "key": "api"}}) == {
        "name": "T", "valueFrom": {"secretKeyRef": {"name": "tokens", "key": "api"}},
    }
    assert env_var({"name": "M", "configMapKeyRef": {"name": "cfg", "key": "mode"}}) == {
        "name": "M", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}},
    }
    env = build_values(mnist_spec())["env"]
    assert [e["name"] for e in env] == ["BATCH_SIZE", "API_TOKEN", "MODE"]  # order kept


def test_everything_explicit_with_defaults() -> None:
    written = mnist_written()
    del written["spec"]["runPolicy"]
    values = build_values(apply_defaults(written))
    assert values["runPolicy"] == {
        "cleanPodPolicy": "Running", "activeDeadlineSeconds": None, "backoffLimit": None,
        "successPolicy": "", "suspend": False, "schedulingPolicy": {},
    }
    assert values["tensorboard"]["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "500m", "memory": "1Gi"},  # TensorBoard's CPU is capped
    }
    assert values["podSecurityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    strict = build_values(apply_defaults(written), run_as_non_root=True)["podSecurityContext"]
    assert strict == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert values["tensorboard"]["service"] == {"type": "ClusterIP", "port": 6006}
    assert values["storage"]["existingClaim"] == ""


def test_user_maps_sorted_for_stable_output() -> None:
    a = mnist_spec(labels={"b": "2", "a": "1"})
    b = mnist_spec(labels={"a": "1", "b": "2"})
    assert list(build_values(a)["experiment"]["labels"]) == ["a", "b"]
    assert build_values(a) == build_values(b)
