"""A team repository's first week, through the CLI in a repository `tfgen init` started: every
file, folder and command the CLI points at exists there (no Makefile, no examples/ of tfgen's
own), helm comes from `tfgen install-helm`, and the specs tfgen writes explain without a
warning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_init import FLAGS, git
from tfgen.cli import main

# What reads as a pointer in a message: a repository path with a suffix, a folder, a make
# target, a tfgen command in backquotes.
PATH_WORD = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.(?:md|py|yaml|json|txt))\b")
COMMAND = re.compile(r"`tfgen ([a-z-]+)")


@pytest.fixture
def team(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "team"
    result = runner.invoke(main, ["init", str(repo), *FLAGS], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    monkeypatch.chdir(repo)
    return repo


def pointers_exist(text: str, repo: Path) -> list[str]:
    """Every pointer in `text`; fails naming those that do not exist in `repo`."""
    found = []
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("removed "))
    for word in PATH_WORD.findall(kept):
        if word.startswith(("tfgen.io", "kubernetes.io")) or "@" in word:
            continue
        found.append(word)
        assert (repo / word).exists(), f"{word!r} is not in the repository: {text}"
    assert "make " not in text, text
    for command in COMMAND.findall(text):
        found.append(command)
        assert command in main.commands, f"`tfgen {command}` is no command: {text}"
    return found


def test_what_the_cli_points_at_exists_in_a_team_repository(
    team: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    # no helm anywhere: check says how to get one
    monkeypatch.delenv("TFGEN_HELM", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    checked = runner.invoke(main, ["check"], catch_exceptions=False)
    assert checked.exit_code == 2
    assert "`tfgen install-helm`" in checked.stderr
    seen += pointers_exist(checked.output, team)
    monkeypatch.undo()
    monkeypatch.chdir(team)
    new = runner.invoke(main, ["new", "first", "--image", "registry.example.com/a:1",
                               "--owner", "t@example.com"],
                        catch_exceptions=False)
    assert new.exit_code == 0, new.output
    seen += pointers_exist(new.output, team)
    for command in (["explain", "first"], ["retire", "first"], ["retire", "first", "--delete"]):
        result = runner.invoke(main, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        seen += pointers_exist(result.output, team)
    assert {"install-helm", "argo/README.md"} <= set(seen), seen


# --- tfgen new: a chief, GPUs only where asked ------------------------------------------------


@pytest.mark.parametrize(("flags", "roles"), [
    (["--workers", "2", "--gpus", "4", "--ps", "1"],
     {"chief": {"replicas": 1}, "worker": {"replicas": 2, "gpus": 4}, "ps": {"replicas": 1}}),
    (["--workers", "2", "--gpus", "2", "--ps", "0"],
     {"chief": {"replicas": 1, "gpus": 2}, "worker": {"replicas": 2, "gpus": 2}}),
    (["--workers", "3", "--gpus", "1", "--chief-gpus", "1"],
     {"chief": {"replicas": 1, "gpus": 1}, "worker": {"replicas": 3, "gpus": 1},
      "ps": {"replicas": 1}}),
    (["--workers", "0", "--ps", "0"], {"chief": {"replicas": 1}}),
    ([], {"chief": {"replicas": 1}, "worker": {"replicas": 2}, "ps": {"replicas": 1}}),
])
def test_new_scaffolds_a_chief_and_explain_has_nothing_to_warn(
    team: Path, runner: CliRunner, flags: list[str], roles: dict
) -> None:
    made = runner.invoke(main, ["new", "run", "--image", "registry.example.com/a:1",
                                "--owner", "t@example.com", *flags], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    data = yaml.safe_load((team / "experiments" / "run.yaml").read_text())
    assert data["spec"]["roles"] == roles
    explained = runner.invoke(main, ["explain", "run"], catch_exceptions=False)
    assert explained.exit_code == 0, explained.output
    assert "Notes for the training program" not in explained.output
    assert "master" not in explained.output


@pytest.mark.parametrize("option", ["--gpus", "--chief-gpus", "--workers", "--ps"])
def test_new_takes_exactly_the_schemas_range(
    team: Path, runner: CliRunner, option: str
) -> None:
    """Each count option's range is the schema's bound (one home): its maximum is written and
    validates, one more is a usage error."""
    schema = json.loads((team / "schemas" / "experiment.schema.json").read_text())["$defs"]
    most = (schema["role"]["properties"]["gpus"]["maximum"] if "gpus" in option
            else schema["roleMany"]["allOf"][0]["properties"]["replicas"]["maximum"])
    base = ["new", "run", "--image", "registry.example.com/a:1", "--owner", "t@example.com"]
    over = runner.invoke(main, [*base, option, str(most + 1)], catch_exceptions=False)
    assert over.exit_code == 2 and f"{most + 1}" in over.stderr
    at = runner.invoke(main, [*base, option, str(most)], catch_exceptions=False)
    assert at.exit_code in (0, 1), at.output  # 1: a namespace policy may refuse so many
    assert "is not valid" not in at.output and "maximum" not in at.output
