"""Which helm renders: a build is known by its content, wherever it is found; a program that
runs a helm (a wrapper, a shim) is not one, and nothing it renders is remembered; each build
takes only the batch shortcuts the probe chart shows it takes; a helm off the fast path is
said once, in one line, and the verdict is the one the pinned helm gives.

The helms are the real pinned builds, copies of them, and scripts that run them (as version
managers' shims do), one of which refuses `--skip-schema-validation` as helm before 3.16 does.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import copy_repo_parts
from tfgen.cli import main
from tfgen.gate.check import CheckOptions, run_check
from tfgen.gate.helm.batch import BatchRenderer
from tfgen.gate.helm.command import find_helm, identify
from tfgen.gate.helm.probe import FAST, HELMS_SCHEMA, ONE_BY_ONE
from tfgen.repo.cache import CACHE_DIRNAME, Cache
from tfgen.repo.keys import content_hash


def wrapper(folder: Path, helm: str, before: str = "") -> Path:
    """A shell script named helm that runs `helm` (after the shell lines `before`)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "helm"
    script.write_text(f"#!/bin/sh\n{before}exec {helm} \"$@\"\n")
    script.chmod(0o755)
    return script


# helm before 3.16 has no such flag, and says so
REFUSES_THE_FLAG = ('for arg in "$@"; do [ "$arg" = --skip-schema-validation ] && '
                   '{ echo "Error: unknown flag: $arg" >&2; exit 1; }; done\n')


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def test_a_helm_build_is_known_by_its_content_wherever_it_is_found(tmp_path: Path) -> None:
    helm4, helm3 = find_helm(4), find_helm(3)
    found = identify(helm4, Cache(None))
    assert found.pinned and found.digest == content_hash(Path(helm4).read_bytes())
    assert found.version.startswith("v4.")
    copy = tmp_path / "copy" / "helm"
    copy.parent.mkdir()
    shutil.copy2(helm4, copy)
    link = tmp_path / "link"
    link.symlink_to(copy)
    assert {identify(str(p), Cache(None)).key for p in (helm4, copy, link)} == {found.key}
    assert identify(helm3, Cache(None)).key != found.key
    # the same release built otherwise (here: a byte more) is another build
    with open(copy, "ab") as program:
        program.write(b"\0")
    rebuilt = identify(str(copy), Cache(None))
    assert rebuilt.version == found.version and rebuilt.pinned and rebuilt.key != found.key


def test_a_program_that_runs_helm_is_not_a_helm_build(tmp_path: Path) -> None:
    script = wrapper(tmp_path / "bin", find_helm(4))
    found = identify(str(script), Cache(None))
    assert found.version == identify(find_helm(4), Cache(None)).version  # helm answers
    assert not found.pinned and found.digest == ""


def test_a_file_replaced_under_the_same_name_is_looked_at_again(tmp_path: Path) -> None:
    cache = Cache(tmp_path / CACHE_DIRNAME)
    program = tmp_path / "bin" / "helm"
    program.parent.mkdir()
    shutil.copy2(find_helm(4), program)
    old = os.stat(program)
    os.utime(program, ns=(old.st_atime_ns, old.st_mtime_ns - 10**10))  # settled: remembered
    first = identify(str(program), cache)
    cache.flush()
    before = os.stat(program)
    # another build put in its place, of the same size (zeros after the program run as it
    # does) and with the first one's times
    other = Path(find_helm(3)).read_bytes()
    assert len(other) < before.st_size
    program.write_bytes(other + bytes(before.st_size - len(other)))
    os.utime(program, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(program).st_size == before.st_size
    second = identify(str(program), cache)
    assert second.version.startswith("v3.") and second.key != first.key


@pytest.mark.parametrize("major", [4, 3])
def test_the_pinned_helms_take_the_fast_path_and_it_is_remembered(
        tmp_path: Path, major: int) -> None:
    cache = Cache(tmp_path / CACHE_DIRNAME)
    assert BatchRenderer(helm=find_helm(major), cache=cache).shortcuts is FAST
    cache.flush()
    later = BatchRenderer(helm=find_helm(major), cache=cache)
    key = later.keys.helm_shortcuts(later.identity.key)
    # once per machine: every repository's check on it asks the same build the same
    assert later.programs.get("helm-shortcuts", key) == FAST.name


def test_a_helm_without_the_flag_batches_with_its_own_schema_check(tmp_path: Path) -> None:
    old = wrapper(tmp_path / "bin", find_helm(4), before=REFUSES_THE_FLAG)
    renderer = BatchRenderer(helm=str(old))
    assert renderer.shortcuts is HELMS_SCHEMA
    # and a helm that renders no batch at all renders one by one
    broken = wrapper(tmp_path / "broken", find_helm(4),
                     before='case "$*" in *tfgen-batch*) exit 1;; esac\n')
    assert BatchRenderer(helm=str(broken)).shortcuts is ONE_BY_ONE


def check(runner: CliRunner, root: Path, *args: str) -> tuple[int, str, list[str], str]:
    """exit code, problems (stdout), the note lines, the summary without what it reused."""
    # the built-in validator only: kubeconform, where one is installed, has a note of its own
    result = runner.invoke(main, ["check", "--root", str(root), "--validator", "builtin", *args],
                           catch_exceptions=False)
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    summary = result.stderr.splitlines()[-1].split(" (")[0]
    return result.exit_code, result.stdout, notes, summary


@pytest.mark.parametrize("before", ["", REFUSES_THE_FLAG], ids=["wrapper", "without-flag"])
def test_a_helm_off_the_fast_path_is_said_once_and_gives_the_same_verdict(
        runner: CliRunner, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        before: str) -> None:
    # a value helm reads otherwise than tfgen (rendered alone, helm's own schema check) and a
    # spec the schema refuses: problems from helm and from tfgen
    values = repo / "argo/experiments/cpu-linear/values.yaml"
    values.write_text(values.read_text().replace("  owner: data-team@example.com\n",
                                                 "  owner: y\n"))
    spec = repo / "experiments/distributed-mnist.yaml"
    spec.write_text(spec.read_text().replace("replicas: 2", "replicas: two", 1))
    pinned = check(runner, repo, "--no-cache")
    assert pinned[0] == 1 and "got boolean, want string" in pinned[1] and not pinned[2]
    monkeypatch.setenv("TFGEN_HELM", str(wrapper(tmp_path / "bin", find_helm(4), before)))
    for _ in range(2):
        code, problems, notes, summary = check(runner, repo)
        assert (code, problems, summary) == (pinned[0], pinned[1], pinned[3])
        assert len(notes) == 1, notes
        assert "wrapper" in notes[0] and "$TFGEN_HELM" in notes[0]
    # nothing of a wrapper's renders is remembered: every run renders every experiment
    again = run_check(repo, CheckOptions(validator="builtin"))
    assert not again.from_cache and again.cache_hits == 0 and again.notes


def test_the_pinned_helm_is_not_noted(runner: CliRunner, repo: Path) -> None:
    for _ in range(2):
        code, _, notes, _ = check(runner, repo)
        assert code == 0 and notes == []
