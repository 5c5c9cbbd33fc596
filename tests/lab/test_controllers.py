"""The real training operator does what `tfgen explain` says: for each bundled TFJob
experiment, its rendered objects are applied to the lab as Argo CD would apply them, and every
pod the operator creates carries the TF_CONFIG `tfgen explain` gives it, byte for byte, with
the Service of the same name beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT
from labwait import wait_for
from tfgen.run.explain import Explanation, explain_spec

pytestmark = pytest.mark.lab

TFJOB_SPECS = sorted(p for p in (REPO_ROOT / "experiments").glob("*.yaml")
                     if yaml.safe_load(p.read_text())["spec"].get("runtime", "tfjob") == "tfjob"
                     and "sweep" not in yaml.safe_load(p.read_text())["spec"])


@pytest.fixture
def applied(lab: Any, request: pytest.FixtureRequest) -> Iterator[Explanation]:
    """The experiment's objects created in the lab (its namespace made when missing); deleted
    again afterwards, the TFJob's pods with it."""
    explanation = explain_spec(request.param)
    lab.kubectl("create", "namespace", explanation.namespace, check=False)
    items = json.dumps({"apiVersion": "v1", "kind": "List", "items": explanation.objects})
    lab.kubectl("apply", "--server-side", "--field-manager=tfgen", "-n", explanation.namespace,
                "-f", "-", input=items)
    try:
        yield explanation
    finally:
        lab.kubectl("delete", "-n", explanation.namespace, "--wait=false",
                    "--ignore-not-found", "-f", "-", input=items, check=False)


def _env(pod: dict[str, Any], name: str) -> str | None:
    for container in pod["spec"]["containers"]:
        for env in container.get("env") or []:
            if env["name"] == name:
                return str(env.get("value"))
    return None


@pytest.mark.parametrize("applied", TFJOB_SPECS, ids=lambda p: Path(p).stem, indirect=True)
def test_the_operators_pods_get_the_tf_config_explain_says(lab: Any,
                                                           applied: Explanation) -> None:
    expected = {p.name: p.tf_config for p in applied.pods}
    assert expected and all(expected.values()), "explain gave no pod or no TF_CONFIG"
    found = wait_for(lab, f"the pods of {applied.job}",
                     ["-n", applied.namespace, "pods", "-l",
                      f"training.kubeflow.org/job-name={applied.job}"],
                     lambda pods: len(pods["items"]) == len(expected))
    assert {p["metadata"]["name"]: _env(p, "TF_CONFIG") for p in found["items"]} == expected
    services = json.loads(lab.kubectl("-n", applied.namespace, "get", "services", "-l",
                                      f"training.kubeflow.org/job-name={applied.job}",
                                      "-o", "json").stdout)
    assert {s["metadata"]["name"] for s in services["items"]} == set(expected)
