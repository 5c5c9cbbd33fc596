"""Warnings: a `Problem` of severity warning is said in every format and counted apart, and
never changes an exit code. The one warning so far: an image that floats (no tag, or `:latest`)
where no namespace policy asks for digests, said at the image's line in the spec, or at
tfgen.yaml's line when the image is one of its defaults. `tfgen check` says the same warnings
from its cache (a spec's remembered verdict, the ledger of an all-clear check) as without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import copy_repo_parts
from tfgen.cli import main
from tfgen.problems import ERROR, WARNING, Problem, errors_of, format_problems, tally, warned
from tfgen.validate import experiments

CPU = "experiments/cpu-linear.yaml"  # namespace default, TensorBoard off
RESNET = "experiments/resnet-chief-eval.yaml"  # namespace ml-team, TensorBoard on
MNIST = "experiments/distributed-mnist.yaml"
FLOATING = "floats"  # the one phrase every floating-image warning says
WARNED = Problem("experiments/a.yaml", 10, 10, "$.spec.image", 'image "x:latest" floats',
                 "pin it", severity=WARNING)
FAILED = Problem("experiments/a.yaml", 3, 1, "$.metadata.name", "bad name", "rename")


def tfgen(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def edit(rel: str, change: Any) -> None:
    path = Path(rel)
    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    data = yaml.safe_load(text)
    change(data)
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))


def line_of(rel: str, text: str) -> int:
    """The 1-based line of `rel` that holds `text` (exactly once)."""
    lines = [i for i, line in enumerate(Path(rel).read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (rel, text, lines)
    return lines[0]


def warned_at(rel: str, change: Any, text: str) -> tuple[Result, int]:
    """`tfgen validate` after `change` to `rel` (it passes: warnings fail nothing), and the
    line of `rel` holding `text`."""
    edit(rel, change)
    result = tfgen("validate")
    assert result.exit_code == 0, result.output
    return result, line_of(rel, text)


def spec_image(image: str) -> Any:
    return lambda data: data["spec"].update(image=image)


def problems_of(result: Result) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


# --- Problem and its formats ------------------------------------------------------------------


def test_a_problem_is_an_error_unless_it_says_warning() -> None:
    assert FAILED.severity == ERROR and FAILED.is_error
    assert not WARNED.is_error
    assert errors_of([FAILED, WARNED]) == [FAILED]
    assert Problem("f", severity="fatal").is_error  # never lost as a warning


def test_text_says_warning_after_the_location() -> None:
    assert WARNED.text() == ('experiments/a.yaml:10:10: warning: $.spec.image: '
                             'image "x:latest" floats (pin it)')
    assert FAILED.text() == "experiments/a.yaml:3:1: $.metadata.name: bad name (rename)"


def test_json_has_a_severity_field() -> None:
    items = json.loads(format_problems([WARNED, FAILED], "json"))
    assert [(p["line"], p["severity"]) for p in items] == [(3, "error"), (10, "warning")]
    assert Problem(**items[1]) == WARNED  # as the cache reads it back


def test_github_annotates_a_warning_as_a_warning() -> None:
    lines = format_problems([WARNED, FAILED], "github").splitlines()
    assert lines == [
        "::error file=experiments/a.yaml,line=3,col=1::$.metadata.name: bad name (rename)",
        "::warning file=experiments/a.yaml,line=10,col=10::$.spec.image: "
        'image "x:latest" floats (pin it)']


def test_summaries_count_warnings_apart() -> None:
    assert tally([FAILED, FAILED, WARNED]) == "2 problems, 1 warning"
    assert tally([WARNED, WARNED]) == "0 problems, 2 warnings"
    assert tally([FAILED]) == "1 problem"
    assert tally([]) == "0 problems"
    assert warned([WARNED]) == ", 1 warning" and warned([FAILED]) == ""


# --- the floating image, through the CLI ------------------------------------------------------


def test_bundled_experiments_pin_their_images(repo: Path) -> None:
    result = tfgen("validate")
    assert result.exit_code == 0 and result.stdout == "", result.output
    assert "warning" not in result.stderr


def specs() -> list[Path]:
    """The repository's spec files (the bundled ones, as many as there are)."""
    return sorted(Path("experiments").glob("*.yaml"))


def test_latest_in_the_spec_is_warned_at_its_line_and_fails_nothing(repo: Path) -> None:
    result, line = warned_at(CPU, spec_image("tensorflow/tensorflow:latest"),
                             "image: tensorflow/tensorflow:latest")
    assert result.stdout.strip() == (
        f'{CPU}:{line}:10: warning: $.spec.image: image "tensorflow/tensorflow:latest" is '
        "tagged :latest, so what runs may change under the same spec (pin a version tag or a "
        "digest: tensorflow/tensorflow:<version> or tensorflow/tensorflow@sha256:<digest>)")
    assert result.stderr.startswith(f"{len(specs())} experiments valid, 1 warning. Next:")
    assert [p["severity"] for p in problems_of(tfgen("validate", "--format", "json"))] == [
        "warning"]
    github = tfgen("validate", "--format", "github")
    assert github.exit_code == 0 and github.stdout.startswith(
        f"::warning file={CPU},line={line},col=10::$.spec.image: ")


def test_a_queued_tfjob_is_warned_naming_the_kueue_setting_it_needs(repo: Path) -> None:
    # Kueue v0.19 turned its TFJob integration off by default: the run would wait suspended,
    # and nothing in the repository could say why. A JobSet, on by default, is not warned.
    jobset = "experiments/mnist-jobset.yaml"
    result, line = warned_at(jobset, lambda data: data["spec"].update(runtime="tfjob"),
                             "queue: gpu-team")
    assert result.stdout.strip() == (
        f'{jobset}:{line}:10: warning: $.spec.queue: queue "gpu-team": Kueue admits a TFJob '
        "only when its configuration lists kubeflow.org/tfjob in integrations.frameworks, "
        "which it does not by default (deprecated since Kueue v0.19); otherwise the run stays "
        "suspended (spec.runtime: jobset runs it as a JobSet (JobSet v0.12), which Kueue admits "
        "by default; or list kubeflow.org/tfjob in the cluster's Kueue configuration)")


def test_untagged_role_and_tensorboard_images_are_warned_each_at_its_line(repo: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["spec"]["roles"]["worker"]["image"] = "registry.example.com/ml/trainer"
        data["spec"]["tensorboard"]["image"] = "tensorflow/tensorflow"

    edit(RESNET, change)
    result = tfgen("validate", "--format", "json")
    assert result.exit_code == 0, result.output
    found = {(p["path"], p["line"], p["pointer"]): p for p in problems_of(result)}
    role_line = line_of(RESNET, "image: registry.example.com/ml/trainer")
    assert set(found) == {(RESNET, role_line, "$.spec.roles.worker.image"),
                          (RESNET, _tensorboard_line(), "$.spec.tensorboard.image")}
    assert {p["severity"] for p in found.values()} == {"warning"}
    role = found[(RESNET, role_line, "$.spec.roles.worker.image")]
    assert role["message"] == ('image "registry.example.com/ml/trainer" has no tag (the '
                               "runtime pulls :latest), so what runs may change under the "
                               "same spec")
    assert role["hint"].endswith("registry.example.com/ml/trainer:<version> or "
                                 "registry.example.com/ml/trainer@sha256:<digest>")


def _tensorboard_line() -> int:
    """The line of TensorBoard's image in RESNET (the only bare `tensorflow/tensorflow`)."""
    lines = Path(RESNET).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1)
                if line.strip() == "image: tensorflow/tensorflow")


def test_a_floating_default_is_warned_once_at_tfgen_yaml_line(repo: Path) -> None:
    config = Path("tfgen.yaml")
    config.write_text(config.read_text().replace("      image: tensorflow/tensorflow:2.16.1\n",
                                                 "      image: tensorflow/tensorflow:latest\n"))
    line = line_of("tfgen.yaml", "image: tensorflow/tensorflow:latest")
    result = tfgen("validate", "--format", "json")
    assert result.exit_code == 0, result.output
    # every spec with TensorBoard takes the default: one warning, where the fix belongs
    assert [(p["path"], p["line"], p["pointer"], p["severity"])
            for p in problems_of(result)] == [
        ("tfgen.yaml", line, "$.spec.tensorboard.image", "warning")]
    assert "this value comes from tfgen.yaml defaults" in problems_of(result)[0]["hint"]


@pytest.mark.parametrize("image", [
    "tensorflow/tensorflow:2.16.1",
    "tensorflow/tensorflow@sha256:" + "a" * 64,
    "tensorflow/tensorflow:latest@sha256:" + "b" * 64,
    "localhost:5000/trainer:v1",
])
def test_a_pinned_tag_or_digest_is_not_warned(repo: Path, image: str) -> None:
    edit(CPU, spec_image(image))
    result = tfgen("validate")
    assert result.exit_code == 0 and result.stdout == "", result.output


def test_where_policy_requires_digests_it_stays_one_error(repo: Path) -> None:
    Path("experiments/mnist-jobset.yaml").unlink()  # RESNET is ml-team's one spec here
    config = Path("tfgen.yaml")
    config.write_text(config.read_text().replace("requireDigest: false", "requireDigest: true"))
    edit(RESNET, spec_image("tensorflow/tensorflow:latest"))
    edit(CPU, spec_image("tensorflow/tensorflow:latest"))  # namespace default: a warning
    result = tfgen("validate", "--format", "json")
    assert result.exit_code == 1
    found = [(p["path"], p["pointer"], p["severity"]) for p in problems_of(result)
             if p["pointer"] == "$.spec.image"]
    assert found == [(CPU, "$.spec.image", "warning"), (RESNET, "$.spec.image", "error")]
    refused = [p for p in problems_of(result) if p["path"] == RESNET]
    assert all("requireDigest" in p["message"] for p in refused)
    assert {p["severity"] for p in refused} == {"error"}  # no warning beside the error
    # its image and TensorBoard's default (pinned by tag, not by digest) are refused
    summary = tfgen("validate").stderr
    assert summary.startswith("2 problems, 1 warning in 1 of 4 files. Next: fix them")


def test_render_writes_and_says_the_warning(repo: Path) -> None:
    edit(CPU, spec_image("tensorflow/tensorflow"))
    result = tfgen("render")
    assert result.exit_code == 0, result.output
    assert f"{CPU}:" in result.stdout and "warning: $.spec.image" in result.stdout
    check = tfgen("render", "--check")
    assert check.exit_code == 0 and "warning: $.spec.image" in check.stdout


def test_new_writes_the_spec_and_says_the_warning(repo: Path) -> None:
    result = tfgen("new", "probe", "--image", "tensorflow/tensorflow")
    assert result.exit_code == 0, result.output
    assert Path("experiments/probe.yaml").is_file()
    assert "experiments/probe.yaml:" in result.stderr and "has no tag" in result.stderr


# --- tfgen check: exit 0, and the same warnings with its cache as without -----------------------


def check(*args: str) -> Result:
    return tfgen("check", *args)


def test_check_with_only_warnings_exits_0_and_says_them(repo: Path) -> None:
    edit(CPU, spec_image("tensorflow/tensorflow:latest"))
    assert tfgen("render").exit_code == 0
    result = check("--no-cache")
    assert result.exit_code == 0, result.output
    assert f"{CPU}:" in result.stdout and "warning: $.spec.image" in result.stdout
    assert "checked: all clear (" in result.stderr
    assert ", 0 problems, 1 warning;" in result.stderr
    github = check("--no-cache", "--format", "github")
    assert github.exit_code == 0 and github.stdout.startswith(f"::warning file={CPU},")
    items = problems_of(check("--no-cache", "--format", "json"))
    assert [p["severity"] for p in items] == ["warning"]


def test_check_with_an_error_and_a_warning_counts_both(repo: Path) -> None:
    edit(CPU, spec_image("tensorflow/tensorflow:latest"))
    assert tfgen("render").exit_code == 0
    edit(CPU, lambda data: data["spec"].update(args=["--train_steps=7"]))  # drift: 1 file
    result = check("--no-cache")
    assert result.exit_code == 1
    assert ": 1 problem, 1 warning (" in result.stderr


def said(result: Result) -> tuple[int, str]:
    return result.exit_code, result.stdout


def test_check_from_remembered_verdicts_says_the_warnings_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit(CPU, spec_image("tensorflow/tensorflow:latest"))
    assert tfgen("render").exit_code == 0
    first = check()
    assert first.exit_code == 0 and "warning: $.spec.image" in first.stdout
    # the chart changes: a whole check, each spec's verdict recalled from the cache
    with open("charts/tfjob-experiment/values.yaml", "a") as values:
        values.write("# a comment\n")
    judged: list[str] = []
    check_file = experiments.check_file

    def spied(path: Path, shown: str, *args: Any) -> Any:
        judged.append(shown)
        return check_file(path, shown, *args)

    monkeypatch.setattr(experiments, "check_file", spied)
    again = check()
    assert judged == [], "every spec's verdict is remembered"
    assert said(again) == said(check("--no-cache"))
    assert judged, "--no-cache judges every spec again"
    # the same warnings, and one more: the chart is no longer the installed tfgen's
    [copy] = [line for line in again.stdout.splitlines() if line.startswith("charts/")]
    assert "warning: 1 file here differs from the installed tfgen" in copy
    assert again.stdout.replace(copy + "\n", "") == first.stdout


def test_check_from_the_ledger_says_the_unchanged_experiments_warnings(repo: Path) -> None:
    edit(CPU, spec_image("tensorflow/tensorflow:latest"))
    assert tfgen("render").exit_code == 0
    first = check()  # all clear, with a warning: the ledger is kept
    assert first.exit_code == 0 and "warning: $.spec.image" in first.stdout
    edit(MNIST, lambda data: data["metadata"].update(owner="someone-else@example.com"))
    assert tfgen("render").exit_code == 0
    since = check()  # cpu-linear unchanged: its verdict is the ledger's
    assert f"1 rendered by helm, {len(specs()) - 1} reused" in since.stderr
    assert said(since) == said(first) == said(check("--no-cache"))
