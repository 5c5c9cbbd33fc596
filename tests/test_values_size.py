"""A spec whose values file would pass the one-file limit (repo/files.py's MAX_BYTES) is refused
by the validate stage at its sweep's line, before render writes anything: `validate`, `render`
and `check` say the same; the measure is in UTF-8 bytes, is exactly the file render writes
(header and repository settings included: a file of the limit passes, one byte more is
refused), and a hostile sweep is refused without being built."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts
from tfgen.cli import main
from tfgen.render.generated import dump_yaml
from tfgen.repo.files import MAX_BYTES
from tfgen.validate.config.load import load_config
from tfgen.validate.experiment import sweep
from tfgen.validate.experiments import check_file
from tfgen.validate.rules import valuesfile
from tfgen.validate.rules.values import build_values

FIXTURE = REPO_ROOT / "tests/fixtures/specs/invalid/sweep-values-too-large.yaml"
MNIST = REPO_ROOT / "experiments/distributed-mnist.yaml"


def _spec(name: str, sweep_block: dict[str, Any], args: list[str]) -> str:
    data = yaml.safe_load(MNIST.read_text(encoding="utf-8"))
    data["metadata"]["name"] = name
    data["spec"]["args"] = args
    data["spec"]["tensorboard"]["logDir"] = f"/training/{name}/logs"
    data["spec"]["sweep"] = sweep_block
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _check(text: str, name: str = "big") -> list[str]:
    path = REPO_ROOT / "experiments" / f"{name}.yaml"
    _, problems = check_file(path, f"experiments/{name}.yaml", text.encode("utf-8"),
                             load_config([REPO_ROOT]))
    return [p.text() for p in problems]


def _values_bytes(text: str) -> tuple[int, int]:
    """(the whole values file render writes, its runs) in bytes, built by render itself."""
    path = REPO_ROOT / "experiments" / "big.yaml"
    checked, _ = check_file(path, "experiments/big.yaml", text.encode("utf-8"),
                            load_config([REPO_ROOT]))
    assert checked is not None
    values = build_values(checked.data)
    runs = dump_yaml({"runs": values["runs"]}).encode("utf-8")
    return len(dump_yaml(values).encode("utf-8")), len(runs) - len(b"runs:\n")


@pytest.mark.parametrize("command", ["validate", "render", "check"])
def test_validate_render_and_check_refuse_at_the_sweep_s_line(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    repo = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(repo)
    spec = repo / "experiments" / "sweep-values-too-large.yaml"
    spec.write_bytes(FIXTURE.read_bytes())
    before = sorted(p.relative_to(repo) for p in (repo / "argo").rglob("*"))
    out = runner.invoke(main, [command], catch_exceptions=False)
    assert out.exit_code == 1, out.output
    line = ("experiments/sweep-values-too-large.yaml:21:3: $.spec.sweep: the sweep's 64 runs make "
            "a values file of about 1.23 MB; the limit of one file is 1 MiB (1,048,576 bytes) "
            "(at most 54 runs of this size fit: fewer values, or split the sweep into several "
            "experiments)")
    assert line in out.output, out.output
    assert "bytes; the limit is" not in out.output  # never the gate's refusal of a file
    assert sorted(p.relative_to(repo) for p in (repo / "argo").rglob("*")) == before
    assert not (repo / "argo/experiments/sweep-values-too-large").exists()


def test_the_runs_are_measured_as_render_writes_them() -> None:
    for text in (FIXTURE.read_text(encoding="utf-8"),
                 (REPO_ROOT / "experiments/lr-sweep.yaml").read_text(encoding="utf-8")):
        checked, _ = check_file(REPO_ROOT / "experiments/big.yaml", "big.yaml",
                                text.encode("utf-8"), load_config([REPO_ROOT]))
        assert checked is not None
        spec = checked.data["spec"]
        whole, runs = _values_bytes(text)
        measured = valuesfile._run_sizes(spec, str(checked.data["metadata"]["name"]), 10 * whole)
        assert sum(measured) == runs and len(measured) == sweep.run_count(spec)


def test_the_size_is_counted_in_bytes_not_characters() -> None:
    # 60 runs of a 10,000-character argument of 'é': 0.6 million characters, 1.2 MB of UTF-8.
    block = {"parameters": {"p": [f"v{i}" for i in range(60)]}}
    args = ["--p=((p))", "--text=" + "é" * 10_000]
    text = _spec("big", block, args)
    whole, _ = _values_bytes(text)
    assert len(text) < MAX_BYTES < whole
    found = _check(text)
    assert len(found) == 1 and "$.spec.sweep: the sweep's 60 runs make a values file of " \
        "about 1.23 MB; the limit of one file is 1 MiB" in found[0], found
    # the same runs in ASCII fit: characters, not bytes, would have let the first through
    assert _check(_spec("big", block, ["--p=((p))", "--text=" + "e" * 10_000])) == []


def test_a_sweep_just_under_the_limit_passes_and_render_writes_it_under() -> None:
    block = {"parameters": {"p": [f"v{i}" for i in range(64)]}}
    text = _spec("big", block, ["--p=((p))", "--text=" + "x" * 15_500])
    whole, _ = _values_bytes(text)
    assert whole <= MAX_BYTES and _check(text) == []


# What a refusal from the placeholders' counts may allocate, the spec's text read included (about
# 26 MB for the first case below): less than half of one built run of these sweeps (150 MB), and
# far less than a list of their runs. Memory, not time, so that a loaded machine cannot fail it.
BUILT_NOTHING = 64 << 20


def _check_measured(text: str) -> tuple[list[str], int]:
    """`_check(text)` and the peak of what Python allocated meanwhile, in bytes."""
    tracemalloc.start()
    try:
        return _check(text), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_hostile_sweep_is_refused_without_being_built() -> None:
    # 64 runs, each putting a 1,000-character value in 150,000 times: 150 MB a run, 10 GB in
    # all; measured from the placeholders, never substituted.
    block = {"parameters": {"p": [f"{i:02d}" + "v" * 998 for i in range(64)]}}
    text = _spec("big", block, ["((p))" * 150_000])
    found, peak = _check_measured(text)
    assert peak < BUILT_NOTHING, f"{peak:,} bytes allocated: a run was built"
    assert len(found) == 1 and "the sweep's 64 runs make a values file of about 9.6 GB" \
        in found[0] and "not even one run of this size fits" in found[0], found


def test_a_grid_of_ten_billion_runs_is_refused_by_its_run_count_at_once() -> None:
    block = {"parameters": {f"p{i}": [f"v{j}" for j in range(10)] for i in range(10)}}
    text = _spec("big", block, [f"--p{i}=((p{i}))" for i in range(10)])
    found, peak = _check_measured(text)
    assert peak < BUILT_NOTHING, f"{peak:,} bytes allocated: runs were listed"
    assert any("makes 10000000000 runs, more than the limit" in line for line in found), found
    assert not any("values file" in line for line in found)


def test_a_spec_without_sweep_is_refused_at_spec() -> None:
    # A C1 control character: four bytes in the spec ("\x9f"), six in the values file; four
    # args, each short enough for a process.
    data = yaml.safe_load(_spec("big", {"parameters": {"p": ["a"]}}, ["\x9f" * 50_000] * 4))
    data["spec"].pop("sweep")
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    assert len(text.encode("utf-8")) < MAX_BYTES
    found = _check(text)
    assert len(found) == 1 and ":9:1: $.spec: this experiment makes a values file of 1,2" \
        in found[0], found



def _written(repo: Path, name: str) -> int:
    """The bytes of the values file `tfgen render` wrote for `name`."""
    return len((repo / "argo" / "experiments" / name / "values.yaml").read_bytes())


@pytest.mark.parametrize(("swept", "char", "domain"), [
    (False, "é", ""), (True, "\x9f", "cluster.local"), (True, "𝄞", ""), (False, "a", "x.y")])
def test_the_limit_is_exact_to_the_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        swept: bool, char: str, domain: str) -> None:
    """A spec whose values file is exactly the limit passes validate, render writes exactly
    that many bytes and check takes the file; one byte more is refused by validate at its
    line, and render writes nothing. The header and the repository's settings count too."""
    repo = copy_repo_parts(tmp_path / "repo")
    config = repo / "tfgen.yaml"
    config.write_text(config.read_text().replace('clusterDomain: ""', f'clusterDomain: "{domain}"'))
    monkeypatch.chdir(repo)
    name = "exact"
    runs = [f"v{i}" for i in range(8)] if swept else ["a"]
    # each run repeats the args: together under the limit by a few kilobytes, each arg short
    # enough for a process (\x9f is written \u009f)
    width = 6 if char == "\x9f" else len(char.encode())
    size = (MAX_BYTES - 12_000) // (len(runs) + 1 if swept else 1)
    chunks = -(-size // 100_000)
    big = [char * (size // chunks // width)] * chunks

    def render(note: str) -> tuple[list[str], int | None]:
        data = yaml.safe_load(_spec(name, {"parameters": {"p": runs}}, ["--p=((p))", *big]))
        if not swept:
            data["spec"].pop("sweep")
            data["spec"]["args"] = big
        data["metadata"]["annotations"] = {"note": note}  # written once, one byte a character
        (repo / "experiments" / f"{name}.yaml").write_text(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        result = CliRunner().invoke(main, ["render"], catch_exceptions=False)
        sized = [line for line in result.output.splitlines() if "values file of" in line]
        return sized, (_written(repo, name) if result.exit_code == 0 else None)

    sized, written = render("z")
    assert sized == [] and written is not None and written < MAX_BYTES
    fill = "z" * (1 + MAX_BYTES - written)
    sized, written = render(fill)
    assert sized == [] and written == MAX_BYTES
    if not swept and domain:
        # check takes the file; the TFJob it renders (each role repeats the megabyte of args)
        # is too big for Argo CD's apply, and that alone is said
        out = CliRunner().invoke(main, ["check", "--no-cache"], catch_exceptions=False).output
        problems = [line for line in out.splitlines() if line.startswith("experiments/")]
        assert problems and all("last-applied-configuration" in p for p in problems), out
    sized, written = render(fill + "z")
    assert written is None and len(sized) == 1, sized
    assert (f"{'$.spec.sweep' if swept else '$.spec:'}" in sized[0]
            and "the limit of one file is 1 MiB" in sized[0]), sized
    if not swept:
        assert f"values file of {MAX_BYTES + 1:,} bytes" in sized[0], sized
