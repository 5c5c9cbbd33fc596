"""The pull-request workflow and pre-commit hooks: pinned, least-privileged, wired to tfgen."""

from __future__ import annotations

import re

import yaml
from helpers import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github/workflows/pr.yaml"


def test_actions_are_pinned_by_full_sha_with_version_comment() -> None:
    uses = re.findall(r"uses: (\S+)(.*)", WORKFLOW.read_text())
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), action
        assert re.search(r"# v\d+\.\d+\.\d+", comment), f"{action} lacks a version comment"


def test_least_privilege_and_gate_commands() -> None:
    flow = yaml.safe_load(WORKFLOW.read_text())
    assert flow["permissions"] == {"contents": "read"}
    jobs = flow["jobs"]
    assert "permissions" not in jobs["check"]  # inherits read-only
    assert jobs["diff-comment"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    text = WORKFLOW.read_text()
    assert 'tfgen check --base "origin/${BASE_REF}"' in text
    assert "tfgen diff --base" in text and "--format markdown" in text
    # the sticky comment's marker, as gate/diff/report.py writes it
    assert "<!-- tfgen-diff -->" in text
    assert "${{ github.base_ref }}" not in "\n".join(
        line for line in text.splitlines() if "run:" in line)


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["tfgen-validate"]["entry"] == "tfgen validate"
    assert hooks["tfgen-render-check"]["entry"] == "tfgen render --check"
    assert re.match(hooks["tfgen-validate"]["files"], "experiments/mnist.yaml")
