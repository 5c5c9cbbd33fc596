"""What tfgen.yaml's schema cannot say (`validate/config/rules.py`): no experiment namespace of
the platform's own, a Kubernetes version tfgen has the schemas of (refused by validate and
check alike, at its line), and the revision Argo CD follows a name git takes, judged as the
real `git check-ref-format` judges it (a differential test over generated names)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import copy_repo_parts, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.repo import naming, resources
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


def _versions_around() -> list[str]:
    known = resources.kubernetes_versions()
    major, oldest = (int(part) for part in known[0].split("."))
    newest = int(known[-1].split(".")[1])
    return [f"{major}.{minor}" for minor in range(oldest - 2, newest + 3)]


@pytest.mark.parametrize("version", _versions_around())
def test_a_kubernetes_version_tfgen_has_no_schemas_for_is_refused_at_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """validate and check say the same, at tfgen.yaml's line, exit 1: not check alone when it
    looks for the schemas, with exit 2."""
    repo = copy_repo_parts(tmp_path / "repo")
    config = repo / "tfgen.yaml"
    text = re.sub(r'(?m)^kubernetesVersion: "[^"]*"', f'kubernetesVersion: "{version}"',
                  config.read_text())
    config.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1)
                if row.startswith("kubernetesVersion:"))
    monkeypatch.chdir(repo)
    known = version in resources.kubernetes_versions()
    for command in (["validate"], ["check", "--no-cache"]):
        result = CliRunner().invoke(main, command, catch_exceptions=False)
        said = [row for row in result.output.splitlines() if "is not a version tfgen knows" in row]
        if known:
            assert said == [], result.output
        else:
            assert result.exit_code == 1 and len(said) == 1, result.output
            assert said[0].startswith(f"tfgen.yaml:{line}:") and version in said[0], said
