"""What tfgen.yaml's schema cannot say (`validate/config/rules.py`): no experiment namespace of
the platform's own, and the revision Argo CD follows a name git takes, judged as the real
`git check-ref-format` judges it (a differential test over generated names)."""

from __future__ import annotations

import subprocess

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.repo import naming
from tfgen.validate.config.rules import config_rules


def git_takes(ref: str) -> bool:
    """Whether git takes `ref` as a one-level or nested branch or tag name."""
    if ref.startswith("-"):  # git reads it as an option; tfgen refuses it for that reason
        return False
    result = subprocess.run(["git", "check-ref-format", "--allow-onelevel", ref],
                            capture_output=True, check=False)
    return result.returncode == 0


_PIECES = st.sampled_from(["main", "a", "/", ".", "..", "-", "@", "{", "@{", ".lock", "~", "^",
                           ":", "?", "*", "[", "\\", " ", "\t", "x.y", "v1", "é", "\x7f"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=6).map("".join))
def test_ref_names_are_judged_as_git_judges_them(ref: str) -> None:
    assert (naming.ref_name_problem(ref) is None) is git_takes(ref), ref


@pytest.mark.parametrize("ref", ["main", "release/1.2", "v1.0.0", "HEAD", "0123abc"])
def test_ordinary_revisions_pass(ref: str) -> None:
    assert naming.ref_name_problem(ref) is None
    assert git_takes(ref)


def _config(namespaces: list[str], default: str = "default", argocd: str = "argocd",
            revision: str = "main") -> dict[str, object]:
    return {"argocd": {"namespace": argocd, "namespaces": namespaces, "targetRevision": revision},
            "defaults": {"metadata": {"namespace": default}}}


@pytest.mark.parametrize(("config", "pointer", "said"), [
    (_config(["team", "kube-system"]), ("argocd", "namespaces", 1), "the cluster's own"),
    (_config(["team", "ops"], argocd="ops"), ("argocd", "namespaces", 1), "Argo CD itself"),
    (_config(["team"], default="kube-public"), ("defaults", "metadata", "namespace"),
     "public information"),
    (_config(["team", "kube-node-lease"]), ("argocd", "namespaces", 1), "heartbeats"),
    (_config(["team"], revision="-x"), ("argocd", "targetRevision"), "starts with '-'"),
])
def test_config_rules_name_the_field_and_why(config: dict[str, object],
                                             pointer: tuple[object, ...], said: str) -> None:
    found = list(config_rules(config))
    assert [parts for parts, _, _ in found] == [pointer]
    assert said in found[0][1]


def test_an_ordinary_config_passes() -> None:
    assert list(config_rules(_config(["default", "ml-team"]))) == []
