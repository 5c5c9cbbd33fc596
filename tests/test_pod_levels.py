"""The Pod Security verdict on a spec (`validate/policy/pods.py`, at the spec's lines) is the
verdict on what the chart renders from it (`gate/objects/policy.py` on the real helm's objects): a
differential test over generated security contexts, annotations, sidecars, namespace levels
and `runAsNonRoot` policies. An Istio sidecar is refused at its line where the level refuses
istio-init, unless tfgen.yaml says the cluster runs the Istio CNI plugin."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import examples, mnist_spec, template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.gate.documents.manifests import parse_manifest
from tfgen.gate.helm.command import find_helm
from tfgen.gate.objects import policy
from tfgen.validate.config.load import RepoConfig, builtin_data
from tfgen.validate.experiment.checked import Checked
from tfgen.validate.policy.pods import pod_level_problems
from tfgen.validate.rules.values import build_values

CHART = Path(__file__).resolve().parents[1] / "charts" / "tfjob-experiment"
NAMESPACE = "team"
APPARMOR = "container.apparmor.security.beta.kubernetes.io/tensorflow"

_ABSENT = object()
_CONTEXTS = st.fixed_dictionaries({
    "runAsUser": st.sampled_from([_ABSENT, 0, 1000]),
    "runAsNonRoot": st.sampled_from([_ABSENT, True, False]),
    "seccompProfile": st.sampled_from([_ABSENT, "RuntimeDefault", "Unconfined"]),
})
_ANNOTATIONS = st.sampled_from([{}, {APPARMOR: "unconfined"}, {APPARMOR: "runtime/default"},
                                {APPARMOR: "localhost/train"}, {"team/owner": "x"}])


def config(level: str, run_as_non_root: bool, cni: bool = False) -> RepoConfig:
    data = builtin_data()
    data["policy"] = {NAMESPACE: {"podSecurity": level, "runAsNonRoot": run_as_non_root}}
    data["istio"] = {"cni": cni}
    return RepoConfig(root=Path("."), path=None, data=data)


def spec_with(context: dict[str, Any], annotations: dict[str, str], sidecar: bool
              ) -> dict[str, Any]:
    data = mnist_spec(namespace=NAMESPACE)
    data["metadata"]["annotations"] = dict(annotations)
    data["spec"]["securityContext"] = {k: v for k, v in context.items() if v is not _ABSENT}
    data["spec"]["securityContext"].setdefault("seccompProfile", "RuntimeDefault")
    data["spec"]["istioSidecar"] = sidecar
    return data


def spec_verdict(data: dict[str, Any], repo: RepoConfig) -> set[str]:
    raw = yaml.safe_dump(data).encode()
    checked = Checked(Path("x.yaml"), "x.yaml", copy.deepcopy(data), raw)
    return {p.message for p in pod_level_problems(checked, repo)
            if not p.pointer.endswith("istioSidecar")}


def rendered_verdict(data: dict[str, Any], repo: RepoConfig, folder: Path) -> set[str]:
    rules = repo.namespace_policy(NAMESPACE)
    values = build_values(data, run_as_non_root=bool(rules["runAsNonRoot"]))
    path = folder / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    manifest = template(CHART, data["metadata"]["name"], NAMESPACE, [path],
                        kube_version=f"{repo.kubernetes_version}.0", helm=find_helm(4))
    found = policy.pod_security_problems(
        parse_manifest(manifest), NAMESPACE, rules["podSecurity"],
        repo.policy_source(NAMESPACE, "podSecurity"), repo.kubernetes_version, "x.yaml")
    return {p.message for p in found}


@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(context=_CONTEXTS, annotations=_ANNOTATIONS, sidecar=st.booleans(),
       level=st.sampled_from(["privileged", "baseline", "restricted"]),
       run_as_non_root=st.booleans())
def test_the_spec_verdict_is_the_rendered_verdict(
    tmp_path: Path, context: dict[str, Any], annotations: dict[str, str], sidecar: bool,
    level: str, run_as_non_root: bool,
) -> None:
    repo = config(level, run_as_non_root)
    data = spec_with(context, annotations, sidecar)
    assert spec_verdict(data, repo) == rendered_verdict(data, repo, tmp_path)


def test_the_differential_test_sees_refusals(tmp_path: Path) -> None:
    """Not an agreement of two empty sets: the bad spec is refused on both sides."""
    repo = config("restricted", False)
    data = spec_with({"runAsUser": 0, "seccompProfile": "Unconfined"},
                     {APPARMOR: "unconfined"}, False)
    verdict = spec_verdict(data, repo)
    assert {"Seccomp", "AppArmor", "Running as Non-root user"} <= {
        m.split("control ")[1].split(":")[0] for m in verdict}
    assert verdict == rendered_verdict(data, repo, tmp_path)


def _located(data: dict[str, Any], repo: RepoConfig) -> list[str]:
    raw = yaml.safe_dump(data, sort_keys=False).encode()
    checked = Checked(Path("x.yaml"), "x.yaml", copy.deepcopy(data), raw)
    return [p.text() for p in pod_level_problems(checked, repo)]


def test_refusals_point_at_the_spec_field() -> None:
    data = spec_with({"runAsUser": 0, "seccompProfile": "Unconfined"}, {APPARMOR: "unconfined"},
                     False)
    lines = yaml.safe_dump(data, sort_keys=False).splitlines()
    texts = _located(data, config("restricted", True))
    user = next(i for i, line in enumerate(lines, 1) if line.strip() == "runAsUser: 0")
    assert any(t.startswith(f"x.yaml:{user}:") and "$.spec.securityContext.runAsUser" in t
               for t in texts), texts
    assert any(f'$.metadata.annotations["{APPARMOR}"]' in t for t in texts), texts


@pytest.mark.parametrize(("level", "cni", "refused"), [
    ("restricted", False, True), ("baseline", False, True), ("privileged", False, False),
    ("restricted", True, False),
])
def test_an_istio_sidecar_needs_the_cni_plugin(level: str, cni: bool, refused: bool) -> None:
    data = spec_with({"runAsNonRoot": True, "runAsUser": 1000}, {}, True)
    texts = [t for t in _located(data, config(level, False, cni)) if "istioSidecar" in t]
    assert bool(texts) is refused
    if refused:
        assert "needs NET_ADMIN and NET_RAW" in texts[0]
        assert "does not say the cluster runs the Istio CNI plugin (istio.cni)" in texts[0]
