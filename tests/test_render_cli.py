"""`tfgen render` end to end through the CLI: write, re-run, --check, --prune, bad specs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tfgen.cli import main

REPO = Path(__file__).resolve().parents[1]
VALUES = "argo/experiments/distributed-mnist/values.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copy(REPO / "tfgen.yaml", tmp_path / "tfgen.yaml")
    (tmp_path / "experiments").mkdir()
    shutil.copy(REPO / "experiments" / "distributed-mnist.yaml", tmp_path / "experiments")
    return tmp_path


def run(runner: CliRunner, root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(main, ["render", "--root", str(root), *args],
                           catch_exceptions=False)
    return result.exit_code, result.output


def test_the_repository_is_up_to_date(runner: CliRunner) -> None:
    code, output = run(runner, REPO, "--check")
    assert code == 0, output
    assert "up to date" in output


def test_render_then_rerun_then_check(runner: CliRunner, repo: Path) -> None:
    code, output = run(runner, repo)
    assert code == 0, output
    assert f"created {VALUES}" in output
    assert "1 experiment ready for Argo CD: 7 files written, 0 unchanged. Next: commit .github/ " \
           "and argo/, then open a pull request" in output
    code, output = run(runner, repo)
    assert code == 0 and "1 experiment ready for Argo CD: nothing to write, 7 files unchanged" \
        in output
    code, output = run(runner, repo, "--check")
    assert code == 0, output
    assert "generated files are up to date: 1 experiment ready for Argo CD (7 files)" in output


def test_check_fails_on_one_changed_byte_with_a_diff(runner: CliRunner, repo: Path) -> None:
    run(runner, repo)
    path = repo / VALUES
    text = path.read_text()
    path.write_text(text.replace("replicas: 2", "replicas: 9", 1))
    code, output = run(runner, repo, "--check")
    assert code == 1
    assert f"--- a/{VALUES}" in output and "-    replicas: 9" in output
    assert "out of date" in output
    assert path.read_text() != text  # --check wrote nothing


def test_deleted_spec_orphans_need_prune(runner: CliRunner, repo: Path) -> None:
    run(runner, repo)
    (repo / "experiments" / "distributed-mnist.yaml").unlink()
    code, output = run(runner, repo, "--check")
    assert code == 1 and "+++ /dev/null" in output
    code, output = run(runner, repo)
    assert code == 0 and f"left over {VALUES} (no spec generates it; --prune removes it)" in output
    assert "2 left-over files (no spec generates them; --prune deletes them)" in output
    assert (repo / VALUES).exists()
    code, output = run(runner, repo, "--prune")
    assert code == 0 and f"removed {VALUES}" in output
    assert "2 left-over files deleted, 5 unchanged. Next: commit argo/" in output
    assert not (repo / VALUES).exists()
    code, output = run(runner, repo, "--check")
    assert code == 0 and "generated files are up to date: 0 experiments ready for Argo CD " \
        "(5 files)" in output


CODEOWNERS = ".github/CODEOWNERS"


def test_check_reports_a_changed_codeowners(runner: CliRunner, repo: Path) -> None:
    run(runner, repo)
    path = repo / CODEOWNERS
    path.write_text(path.read_text().replace("@example-org/ml-platform", "@someone", 1))
    code, output = run(runner, repo, "--check")
    assert code == 1 and "out of date" in output
    assert f"--- a/{CODEOWNERS}" in output and "+/tfgen.yaml @example-org/ml-platform" in output
    code, output = run(runner, repo)
    assert code == 0 and f"updated {CODEOWNERS}" in output


def test_a_spec_in_a_namespace_without_owners_gets_no_line(runner: CliRunner,
                                                          repo: Path) -> None:
    spec = repo / "experiments" / "distributed-mnist.yaml"
    text = spec.read_text()
    assert "  namespace: default\n" in text
    config = repo / "tfgen.yaml"
    config.write_text(config.read_text().replace(
        '    default: ["@example-org/ml-platform"]\n', ""))
    code, output = run(runner, repo)
    assert code == 0, output
    lines = (repo / CODEOWNERS).read_text().splitlines()
    assert "/tfgen.yaml @example-org/ml-platform" in lines
    assert not [line for line in lines if line.startswith("/experiments/")]


def test_no_owners_no_codeowners_and_a_generated_one_is_an_orphan(runner: CliRunner,
                                                                  repo: Path) -> None:
    run(runner, repo)
    assert (repo / CODEOWNERS).is_file()
    config = repo / "tfgen.yaml"
    text = config.read_text()
    start = text.index("owners:")
    config.write_text(text[:start] + text[text.index("defaults:", start):])
    code, output = run(runner, repo, "--check")
    assert code == 1 and f"--- a/{CODEOWNERS}" in output and "+++ /dev/null" in output
    code, output = run(runner, repo, "--prune")
    assert code == 0 and f"removed {CODEOWNERS}" in output
    assert not (repo / CODEOWNERS).exists()


def test_invalid_spec_writes_nothing(runner: CliRunner, repo: Path) -> None:
    spec = repo / "experiments" / "distributed-mnist.yaml"
    spec.write_text(spec.read_text().replace("replicas: 2", "replicas: two", 1))
    code, output = run(runner, repo)
    assert code == 1
    assert "distributed-mnist.yaml:" in output and "replicas" in output
    assert not (repo / "argo").exists()


def test_json_format(runner: CliRunner, repo: Path) -> None:
    code, output = run(runner, repo, "--format", "json")
    data = json.loads(output)
    assert code == 0 and data["counts"]["create"] == 7 and VALUES in data["written"]
    code, output = run(runner, repo, "--check", "--format", "json")
    assert code == 0 and json.loads(output)["upToDate"] is True


def test_usage_error_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(main, ["render", "--format", "xml"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "Invalid value for '--format': 'xml' is not one of" in result.output


def test_render_is_documented(runner: CliRunner) -> None:
    result = runner.invoke(main, ["render", "--help"], catch_exceptions=False)
    assert result.exit_code == 0 and "--check" in result.output and "--prune" in result.output
    readme = (REPO / "docs" / "running-the-repository.md").read_text()
    assert "## `tfgen render`" in readme and "--check" in readme and "--prune" in readme


def test_readme_add_an_experiment_example_renders(runner: CliRunner, tmp_path: Path) -> None:
    readme = (REPO / "docs" / "running-experiments.md").read_text()
    start = readme.index("   # experiments/resnet-imagenet.yaml\n")
    block = readme[start:readme.index("   ```", start)]
    spec = "\n".join(line[3:] for line in block.splitlines()[1:]) + "\n"
    shutil.copy(REPO / "tfgen.yaml", tmp_path / "tfgen.yaml")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "resnet-imagenet.yaml").write_text(spec)
    code, output = run(runner, tmp_path)
    assert code == 0, output
    assert "created argo/experiments/resnet-imagenet/values.yaml" in output
