"""`tfgen validate` through the real CLI: hostile files, several mistakes at once, output
formats, cross-file rules, repo defaults, the bundled examples."""

from __future__ import annotations

import json
import os
import textwrap
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from tfgen.cli import main
from tfgen.errors import InputError
from tfgen.repo.files import MAX_BYTES
from tfgen.validate.yaml import nodes
from tfgen.validate.yaml.loader import load_bytes

# The summary line ends with the next step.
AGAIN = ". Next: fix them, then run `tfgen validate` again"
VALID = ". Next: `tfgen render`, then open a pull request"

REPO = Path(__file__).resolve().parents[1]

CONFIG = """\
apiVersion: tfgen.io/v1
kind: RepoConfig
argocd:
  namespaces: [default, ml-team]
defaults:
  spec:
    storage:
      nas: {server: nas.example.com}
"""

GOOD = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata:
  name: {name}
  owner: someone@example.com
spec:
  image: tensorflow/tensorflow:2.16.1
  roles:
    worker: {{replicas: 2}}
    ps: {{replicas: 1}}
  storage:
    mountPath: /training
  tensorboard:
    logDir: /training/{name}/logs
"""


def build_file_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write a tiny repository: {relative path: text or bytes}."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    build_file_tree(
        tmp_path, {"tfgen.yaml": CONFIG, "experiments/good.yaml": GOOD.format(name="good")}
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(runner: CliRunner, *args: str):
    return runner.invoke(main, ["validate", *args], catch_exceptions=False)


def test_valid_repo_default_path(runner, repo):
    result = run(runner)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "1 experiment valid" + VALID


def test_bundled_examples_are_valid(runner, monkeypatch):
    monkeypatch.chdir(REPO)
    result = run(runner)
    assert result.exit_code == 0, result.output
    names = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))
    assert {"distributed-mnist", "resnet-chief-eval", "cpu-linear"} <= set(names)
    assert result.output.strip() == f"{len(names)} experiments valid" + VALID


def test_examples_start_with_schema_modeline():
    paths = sorted((REPO / "experiments").glob("*.yaml"))
    assert paths
    for path in paths:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schemas/experiment.schema.json"


def _billion_laughs() -> bytes:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return ("\n".join(lines) + "\n").encode()


HOSTILE = {
    "billion-laughs": (_billion_laughs(), "too many values after expanding YAML aliases"),
    "duplicate-keys": (
        b"apiVersion: tfgen.io/v1\nkind: Experiment\nkind: Experiment\n",
        'duplicate key "kind" (first defined on line 2)',
    ),
    "huge": (b"a: " + b"x" * (10 * 1024 * 1024) + b"\n", "the limit is 1,048,576 bytes (1 MiB)"),
    "binary": (bytes(range(256)), "binary file"),
    "latin-1": ("owner: Jos\u00e9\n".encode("latin-1"), "not valid UTF-8"),
    "empty": (b"", "file is empty"),
    "only-comments": (b"# nothing here\n\n", "file is empty"),
    "multi-document": (b"a: 1\n---\nb: 2\n", "more than one YAML document"),
    "top-level-list": (b"- a\n- b\n", "top level must be a mapping"),
    "tabs": (b"apiVersion: tfgen.io/v1\nmetadata:\n\tname: x\n", "tab character in indentation"),
    "recursive-alias": (b"a: &a [*a]\n", "nested more than"),
    "syntax": (b"a: [1, 2\nb: 3\n", "invalid YAML"),
    "custom-tag": (b"a: !python/object:os.system echo\n", "could not determine a constructor"),
}


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """What a command does with its input, counted: the bytes read from files, and the most
    YAML values one document's walk visited (a walk past the node budget fails at once)."""
    done = {"bytes": 0, "values": 0}
    walked: Counter[int] = Counter()
    read, walk = os.read, nodes._Walker.walk

    def counting_read(fd: int, n: int) -> bytes:
        chunk = read(fd, n)
        done["bytes"] += len(chunk)
        return chunk

    def counting_walk(self: nodes._Walker, *args: object) -> object:
        walked[id(self)] += 1
        done["values"] = max(walked.values())
        assert done["values"] <= nodes.MAX_NODES + 1, "the walk went past the node budget"
        return walk(self, *args)

    monkeypatch.setattr(os, "read", counting_read)
    monkeypatch.setattr(nodes._Walker, "walk", counting_walk)
    return done


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_input_gives_one_clear_line(runner, repo, work, case):
    content, expected = HOSTILE[case]
    build_file_tree(repo, {f"hostile/{case}.yaml": content})
    result = run(runner, f"hostile/{case}.yaml")
    # the work is bounded by the limits, not by what the file would expand to
    assert work["bytes"] <= MAX_BYTES and work["values"] <= nodes.MAX_NODES + 1, work
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert len(lines) == 2, result.output  # the problem, then the summary
    assert lines[0].startswith(f"hostile/{case}.yaml:"), lines[0]
    assert expected in lines[0]
    assert "Traceback" not in result.output
    assert lines[1] == "1 problem in 1 of 1 file" + AGAIN


def test_billion_laughs_is_refused_in_bounded_memory() -> None:
    # The bound is what a spec needs (a few hundred values, refused past ten thousand), not
    # what a machine can hold: refusing the bomb may not build millions of values first.
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="too many values after expanding YAML aliases"):
            load_bytes(_billion_laughs(), "laughs.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak:,} bytes allocated before refusing"


def test_billion_laughs_line_and_column(runner, repo):
    build_file_tree(repo, {"laughs.yaml": _billion_laughs()})
    result = run(runner, "laughs.yaml")
    assert result.output.startswith("laughs.yaml:")
    line, col = result.output.split(":")[1:3]
    assert int(line) >= 1 and int(col) >= 1


THREE_MISTAKES = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata:
  name: three-mistakes
  owner: someone@example.com
spec:
  image: tensorflow/tensorflow:2.16.1
  roles:
    worker: {replicas: 2, gpus: 1, memory: 8GB}
    ps: {replicas: 1}
    chef: {replicas: 1}
  storage:
    mountPath: /training
  tensorboard:
    logDir: /var/log/tb
"""


def test_three_independent_mistakes_three_problems(runner, repo):
    build_file_tree(repo, {"experiments/three-mistakes.yaml": THREE_MISTAKES})
    result = run(runner, "experiments/three-mistakes.yaml")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[-1] == "3 problems in 1 of 1 file" + AGAIN
    path = "experiments/three-mistakes.yaml"
    assert lines[0].startswith(f"{path}:9:")
    assert '"8GB" is not valid' in lines[0]
    assert lines[1].startswith(f"{path}:11:5: $.spec.roles.chef: unknown key")
    assert 'did you mean "chief"?' in lines[1]
    assert lines[2].startswith(f"{path}:15:13: $.spec.tensorboard.logDir:")
    assert "not inside storage.mountPath" in lines[2]


def test_format_json(runner, repo):
    build_file_tree(repo, {"experiments/three-mistakes.yaml": THREE_MISTAKES})
    result = run(runner, "--format", "json", "experiments/")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)
    assert len(problems) == 3
    assert {p["path"] for p in problems} == {"experiments/three-mistakes.yaml"}
    assert [p["line"] for p in problems] == [9, 11, 15]
    assert problems[1]["pointer"] == "$.spec.roles.chef"
    assert set(problems[0]) == {"path", "line", "col", "pointer", "message", "hint", "severity"}
    assert {p["severity"] for p in problems} == {"error"}


def test_format_json_valid_is_empty_list(runner, repo):
    result = run(runner, "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_format_github(runner, repo):
    build_file_tree(repo, {"experiments/three-mistakes.yaml": THREE_MISTAKES})
    result = run(runner, "--format", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert all(
        line.startswith("::error file=experiments/three-mistakes.yaml,line=") for line in lines
    )
    assert "line=11,col=5::$.spec.roles.chef: unknown key" in lines[1]


def test_usage_errors_exit_2(runner, repo):
    result = run(runner, "--format", "xml")
    assert result.exit_code == 2
    assert "Invalid value for '--format': 'xml' is not one of" in result.output
    result = run(runner, "no/such/path.yaml")
    assert result.exit_code == 2
    assert "Path 'no/such/path.yaml' does not exist" in result.output


def test_every_file_reported_at_once(runner, repo):
    build_file_tree(
        repo,
        {
            "experiments/three-mistakes.yaml": THREE_MISTAKES,
            "experiments/broken.yaml": b"a: [1\n",
            "experiments/other.yaml": GOOD.format(name="other"),
        },
    )
    result = run(runner)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "4 problems in 2 of 4 files" + AGAIN
    assert "experiments/broken.yaml:" in result.output


def test_duplicate_names_reported_in_both_files(runner, repo):
    build_file_tree(repo, {"experiments/copy.yaml": GOOD.format(name="good")})
    result = run(runner)
    assert result.exit_code == 1
    assert (
        'experiments/copy.yaml:4:9: $.metadata.name: experiment name "good" is also used by '
        "experiments/good.yaml" in result.output
    )
    assert (
        'experiments/good.yaml:4:9: $.metadata.name: experiment name "good" is also used by '
        "experiments/copy.yaml" in result.output
    )


def test_derived_pv_names_unique(runner, repo):
    # PV <namespace>-<name>-data: "ml-team" + "a-data" and "ml" + "team-a-data" collide.
    one = GOOD.format(name="a").replace("  owner:", "  namespace: ml-team\n  owner:")
    build_file_tree(
        repo,
        {
            "tfgen.yaml": CONFIG.replace("[default, ml-team]", "[default, ml-team, ml]"),
            "experiments/a.yaml": one,
            "experiments/team-a.yaml": GOOD.format(name="team-a").replace(
                "  owner:", "  namespace: ml\n  owner:"
            ),
        },
    )
    result = run(runner, "experiments/a.yaml", "experiments/team-a.yaml")
    assert result.exit_code == 1
    assert result.output.count('PersistentVolume name "ml-team-a-data"') == 2


def test_bad_default_in_repo_config_points_at_tfgen_yaml(runner, repo):
    build_file_tree(
        repo, {"tfgen.yaml": CONFIG.replace("nas.example.com}", "nas.example.com, vers: 3}")}
    )
    result = run(runner)
    assert result.exit_code == 1
    assert result.output.startswith("tfgen.yaml:8:")
    assert "$.spec.storage.nas.vers" in result.output
    assert "this value comes from tfgen.yaml defaults" in result.output


def test_invalid_repo_config_is_one_clear_error(runner, repo):
    build_file_tree(repo, {"tfgen.yaml": CONFIG + "kubernetesVersion: 1.30\nargocdd: {}\n"})
    result = run(runner)
    assert result.exit_code == 1
    assert "tfgen.yaml:9:20: $.kubernetesVersion: must be text" in result.output
    assert 'unknown key "argocdd" (did you mean "argocd"?)' in result.output
    assert "Traceback" not in result.output


def test_spec_wins_over_repo_defaults_and_lists_are_replaced(repo):
    from tfgen.validate.experiments import validate_repo

    build_file_tree(
        repo,
        {
            "tfgen.yaml": CONFIG.replace(
                "nas: {server: nas.example.com}",
                "nas: {server: nas.example.com, mountOptions: [a, b], capacity: 5Gi}",
            )
        },
    )
    spec = GOOD.format(name="good").replace(
        "  storage:\n", "  storage:\n    nas: {server: other.example.com, mountOptions: [c]}\n"
    )
    build_file_tree(repo, {"experiments/good.yaml": spec})
    result = validate_repo()
    assert [p.text() for p in result.problems] == []
    nas = result.experiments[0].data["spec"]["storage"]["nas"]
    assert nas["server"] == "other.example.com"
    assert nas["mountOptions"] == ["c"]
    assert nas["capacity"] == "5Gi"
    assert nas["driver"] == "csi"  # schema default


def test_existing_claim_drops_nas_default(repo):
    from tfgen.validate.experiments import validate_repo

    spec = GOOD.format(name="good").replace("  storage:\n", "  storage:\n    existingClaim: data\n")
    build_file_tree(repo, {"experiments/good.yaml": spec})
    result = validate_repo()
    assert [p.text() for p in result.problems] == []
    assert result.experiments[0].data["spec"]["storage"] == {
        "existingClaim": "data",
        "mountPath": "/training",
    }


def test_without_tfgen_yaml_builtin_defaults(tmp_path, monkeypatch, runner):
    build_file_tree(
        tmp_path,
        {
            "experiments/good.yaml": GOOD.format(name="good").replace(
                "  storage:\n", "  storage:\n    nas: {server: nas.example.com}\n"
            )
        },
    )
    monkeypatch.chdir(tmp_path)
    result = run(runner)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    # said once, on stderr, though the config is read more than once
    assert result.stderr.splitlines() == [
        "note: no tfgen.yaml in . or above: using tfgen's built-in defaults (`tfgen init` "
        "starts a repository with its own tfgen.yaml)",
        "1 experiment valid" + VALID,
    ]


def test_with_tfgen_yaml_no_defaults_note(runner, repo):
    result = run(runner)
    assert result.exit_code == 0, result.output
    assert "built-in defaults" not in result.output


def test_single_new_file_is_checked_against_the_rest_of_the_repo(runner, repo):
    build_file_tree(repo, {"new/good.yaml": GOOD.format(name="good")})
    result = run(runner, "new/good.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        'new/good.yaml:4:9: $.metadata.name: experiment name "good" is also used by '
        "experiments/good.yaml (names must be unique in the repository: they name the Argo CD "
        "Application)",
        "1 problem in 1 of 1 file" + AGAIN,
    ]


def test_directory_without_specs(runner, repo):
    (repo / "empty").mkdir()
    result = run(runner, "empty")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "empty: no *.yaml experiment files here",
        "1 problem, no experiment files checked" + AGAIN,
    ]


def test_readme_shows_the_real_output(runner, repo):
    build_file_tree(repo, {"experiments/three-mistakes.yaml": THREE_MISTAKES})
    result = run(runner, "experiments/three-mistakes.yaml")
    readme = (REPO / "docs" / "running-experiments.md").read_text(encoding="utf-8")
    lines = result.output.splitlines()
    assert len(lines) == 4  # three problems and the summary
    for line in lines:
        assert line in readme
