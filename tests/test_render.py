"""Rendering to disk: golden output, determinism, --check drift, orphans, foreign files,
atomic writes, untouched unchanged files."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from helpers import ARGOCD, build_file_tree, copy_repo_parts, experiment, mnist_spec
from tfgen.errors import TfgenError
from tfgen.render import Committed, RenderPlan, apply_plan, plan_render, write
from tfgen.render.generated import HEADER_MARK
from tfgen.repo import layout
from tfgen.repo.keys import content_hash
from tfgen.validate import Experiment, ValidationResult

GOLDEN = Path(__file__).parent / "golden" / "render"
SOURCE = "experiments/distributed-mnist.yaml"
VALUES = "argo/experiments/distributed-mnist/values.yaml"
APP = "argo/experiments/distributed-mnist/app.yaml"


def mnist(**metadata: str) -> Experiment:
    return experiment(mnist_spec(**metadata))


def rendered(root: Path, *experiments: Experiment, prune: bool = False) -> RenderPlan:
    plan = plan_render(root, list(experiments) or [mnist()], ARGOCD)
    apply_plan(plan, prune=prune)
    return plan


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_golden_files(tmp_path: Path, update_golden: bool) -> None:
    rendered(tmp_path)
    produced = snapshot(tmp_path)
    assert sorted(produced) == [
        "argo/applicationset.yaml", "argo/argocd-cm-health.yaml", "argo/bootstrap.yaml",
        APP, VALUES, "argo/project.yaml",
    ]
    if update_golden:
        for rel, data in produced.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_bytes(data)
    expected = {p.relative_to(GOLDEN).as_posix(): p.read_bytes()
                for p in sorted(GOLDEN.rglob("*")) if p.is_file()}
    problems = []
    for rel in sorted(set(produced) | set(expected)):
        old = expected.get(rel, b"").decode().splitlines(keepends=True)
        new = produced.get(rel, b"").decode().splitlines(keepends=True)
        if old != new:
            problems.append("".join(difflib.unified_diff(old, new, f"golden/{rel}", rel)))
    assert not problems, "output differs from golden files (pytest --update-golden):\n" + \
        "\n".join(problems)


def test_every_generated_file_has_the_header(tmp_path: Path) -> None:
    rendered(tmp_path)
    for rel, data in snapshot(tmp_path).items():
        lines = data.decode().splitlines()
        assert lines[0] == HEADER_MARK, rel
        assert lines[1].startswith("# Source: ") and lines[2] == "# Regenerate: tfgen render", rel
    assert snapshot(tmp_path)[VALUES].decode().splitlines()[1] == f"# Source: {SOURCE}"


def test_byte_identical_across_runs_and_input_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    rendered(a, mnist(), mnist(name="other-run", namespace="ml-team"))
    rendered(b, mnist(name="other-run", namespace="ml-team"), mnist())
    assert snapshot(a) == snapshot(b)
    plan = plan_render(a, [mnist(), mnist(name="other-run", namespace="ml-team")], ARGOCD)
    assert plan.counts()["unchanged"] == 8 and not plan.drift


def test_unchanged_files_keep_their_mtime(tmp_path: Path) -> None:
    rendered(tmp_path)
    past = 1_000_000_000
    for path in tmp_path.rglob("*.yaml"):
        os.utime(path, (past, past))
    rendered(tmp_path)
    assert {p.stat().st_mtime for p in tmp_path.rglob("*.yaml")} == {past}


def test_check_reports_one_edited_byte_with_a_diff(tmp_path: Path) -> None:
    rendered(tmp_path)
    path = tmp_path / VALUES
    path.write_text(path.read_text().replace("replicas: 2", "replicas: 3", 1))
    plan = plan_render(tmp_path, [mnist()], ARGOCD)
    assert [(c.path, c.action) for c in plan.drift] == [(VALUES, "update")]
    diff = plan.diff()
    assert f"--- a/{VALUES}" in diff and "-    replicas: 3" in diff and "+    replicas: 2" in diff


class _Read(Mapping[str, bytes]):
    """Committed bytes that note which files were read."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.read = files, list[str]()

    def __getitem__(self, rel: str) -> bytes:
        self.read.append(rel)
        return self.files[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


@pytest.mark.parametrize("only", [None, {"distributed-mnist"}], ids=["all", "only"])
def test_a_file_with_the_wanted_hash_is_unchanged_unread(tmp_path: Path,
                                                         only: set[str] | None) -> None:
    rendered(tmp_path)
    (tmp_path / VALUES).write_bytes((tmp_path / VALUES).read_bytes() + b"# edited\n")
    committed = _Read(snapshot(tmp_path))
    hashes = {rel: content_hash(data) for rel, data in committed.files.items()}
    plan = plan_render(tmp_path, [mnist()], ARGOCD,
                       committed=Committed(files=committed, hashes=hashes, only=only))
    assert [(c.path, c.action) for c in plan.drift] == [(VALUES, "update")]
    assert committed.read == [VALUES]  # the one that differs is read for its diff, no other


def test_missing_file_is_drift(tmp_path: Path) -> None:
    rendered(tmp_path)
    (tmp_path / APP).unlink()
    plan = plan_render(tmp_path, [mnist()], ARGOCD)
    assert [(c.path, c.action) for c in plan.drift] == [(APP, "create")]
    assert "--- /dev/null" in plan.diff()


def test_deleted_spec_is_an_orphan_removed_only_with_prune(tmp_path: Path) -> None:
    rendered(tmp_path, mnist(), mnist(name="old-run"))
    plan = plan_render(tmp_path, [mnist()], ARGOCD)
    orphans = sorted(c.path for c in plan.by_action("orphan"))
    assert orphans == ["argo/experiments/old-run/app.yaml", "argo/experiments/old-run/values.yaml"]
    assert "+++ /dev/null" in plan.diff()  # --check shows the deletion
    result = apply_plan(plan)
    assert result.kept_orphans == orphans and (tmp_path / orphans[0]).exists()
    result = apply_plan(plan_render(tmp_path, [mnist()], ARGOCD), prune=True)
    assert sorted(result.removed) == orphans
    assert not (tmp_path / "argo/experiments/old-run").exists()
    assert (tmp_path / VALUES).exists()


def test_file_without_header_is_never_touched(tmp_path: Path) -> None:
    hand_made = "# written by a person\nexperiment: {name: distributed-mnist}\n"
    stray = "name: sneaky\nnamespace: kube-system\n"
    build_file_tree(tmp_path, {VALUES: hand_made, "argo/experiments/sneaky/app.yaml": stray})
    plan = plan_render(tmp_path, [mnist()], ARGOCD)
    foreign = sorted(c.path for c in plan.by_action("foreign"))
    assert foreign == [VALUES, "argo/experiments/sneaky/app.yaml"]
    assert {p.path for p in plan.problems} == set(foreign)
    assert all("not generated by tfgen" in p.message for p in plan.problems)
    apply_plan(plan, prune=True)
    assert (tmp_path / VALUES).read_text() == hand_made
    assert (tmp_path / "argo/experiments/sneaky/app.yaml").read_text() == stray
    assert (tmp_path / APP).exists()  # the rest is still rendered


def test_failure_between_writes_leaves_each_file_old_or_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered(tmp_path)
    old = snapshot(tmp_path)
    changed = mnist(labels={"team": "speech"})  # changes values.yaml and nothing else...
    argocd = {**ARGOCD, "targetRevision": "release"}  # ...and the argo/ wiring
    new_plan = plan_render(tmp_path, [changed], argocd)
    new = {c.path: c.new.encode() for c in new_plan.changes if c.new is not None}
    assert len(new_plan.drift) >= 3

    real_replace, calls = os.replace, []

    def flaky_replace(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(write.os, "replace", flaky_replace)
    with pytest.raises(TfgenError, match="No space left on device"):
        apply_plan(new_plan)
    after = snapshot(tmp_path)
    assert set(after) == set(old)  # no temporary files left behind
    drift = [c.path for c in new_plan.drift]
    states = {rel: ("new" if after[rel] == new[rel] else "old" if after[rel] == old[rel]
                    else "PARTIAL") for rel in drift}
    assert "PARTIAL" not in states.values()
    assert list(states.values()).count("new") == 1  # the first rename happened, no other


def test_names_cannot_escape_the_experiments_folder(tmp_path: Path) -> None:
    evil = experiment(mnist_spec(name="../../etc"), "experiments/evil.yaml")
    plan = plan_render(tmp_path, [evil], ARGOCD)
    assert [p.pointer for p in plan.problems] == ["$.metadata.name"]
    assert len(plan.changes) == 4  # the argo/ wiring only, nothing for the refused name
    assert all(c.path.startswith("argo/") and ".." not in c.path for c in plan.changes)


def _measured(result: ValidationResult) -> dict[str, str]:
    """The values files validate measured whole, by repository-relative path: each valid
    experiment's `values_digest`."""
    return {layout.generated_paths(e.name)[0]: e.values_digest for e in result.experiments
            if e.values_digest is not None}


def test_validate_measures_the_values_file_render_writes(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What validate measures of each spec without a sweep is the content hash of the values
    file render wrote (the bundled repository is in sync); a plan given it builds none of
    those files again, and a file edited since is still drift."""
    from tfgen.render import plan as planning
    from tfgen.validate import validate_repo

    repo = copy_repo_parts(tmp_path / "repo")
    result = validate_repo(cwd=repo)
    measured = _measured(result)
    swept = {e.name for e in result.experiments if "sweep" in e.data["spec"]}
    assert swept and {e.name for e in result.experiments} - swept
    assert set(measured) == {f"argo/experiments/{e.name}/values.yaml"
                             for e in result.experiments if e.name not in swept}
    assert measured == {rel: content_hash((repo / rel).read_bytes()) for rel in measured}

    built: list[str] = []
    real = planning.repo_values
    monkeypatch.setattr(planning, "repo_values", lambda data, config: built.append(
        data["metadata"]["name"]) or real(data, config))
    edited = next(iter(measured))
    (repo / edited).write_text((repo / edited).read_text() + "# edited\n")
    hashes = {rel: content_hash(data) for rel, data in snapshot(repo).items()}
    plan = plan_render(repo, result.experiments, result.config.data["argocd"],
                       config=result.config, committed=Committed(hashes=hashes))
    assert [(c.path, c.action) for c in plan.drift] == [(edited, "update")]
    assert sorted(built) == sorted([*swept, edited.split("/")[2]])


def test_validate_tells_each_values_file_as_its_spec_is_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's helm batches take each measured values file while validate goes on: the
    hook hears of each spec's file right after that spec is checked, not once at the end,
    and hears what the result's experiments say they measured."""
    from tfgen.validate import experiments, load_config, repository_specs, validate_paths

    repo = copy_repo_parts(tmp_path / "repo")
    config = load_config(cwd=repo)
    checked: list[str] = []
    real = experiments.check_file
    monkeypatch.setattr(experiments, "check_file", lambda path, shown, raw, config: (
        checked.append(shown) or real(path, shown, raw, config)))
    heard: list[tuple[str, str, int]] = []
    result = validate_paths(repository_specs(config), config, measured=lambda rel, digest: (
        heard.append((rel, digest, len(checked)))))
    assert len(heard) >= 2
    assert {rel: digest for rel, digest, _ in heard} == _measured(result)
    # each heard once its own spec was checked, and before the next one was
    assert [seen for _, _, seen in heard] == sorted({seen for _, _, seen in heard})
    assert heard[0][2] < len(checked)
