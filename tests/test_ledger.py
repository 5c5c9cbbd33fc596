"""A check after an all-clear one works on the experiments changed since (`gate.ledger`): its
answer is the full check's, whatever changed, and it answers only "all clear" itself."""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.gate import check as gate
from tfgen.gate import ledger
from tfgen.gate.argo.applications import resolve_applications
from tfgen.gate.check import CheckOptions, run_check
from tfgen.gate.result import CheckResult
from tfgen.repo import layout
from tfgen.repo.cache import CACHE_DIRNAME, Cache

# the bundled experiments, as many as there are
NAMES = tuple(sorted(p.stem for p in (REPO_ROOT / layout.EXPERIMENTS_DIR).glob("*.yaml")))


@contextlib.contextmanager
def bundled_repository(owners: bool = True) -> Iterator[Path]:
    """A copy of the bundled repository (its specs all clear), as the working directory."""
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_repo_parts(Path(tmp) / "repo")
        with contextlib.chdir(root):
            if not owners:
                edit(root / "tfgen.yaml", lambda data: data.pop("owners"))
                assert render("--prune") == 0  # CODEOWNERS is gone
            yield root


@contextlib.contextmanager
def ledger_answers() -> Iterator[list[CheckResult | None]]:
    """What the ledger answered in each check meanwhile: the result of a pass over the
    experiments changed since it, when that was the run's only pass; None when a pass over
    the whole repository ran. (A run whose whole result was stored makes no pass.)"""
    answers: list[CheckResult | None] = []
    passes: list[gate.Pass] = []
    run, check = gate.Gate.run, gate.Gate.check

    def spied_check(self: gate.Gate, *args: Any) -> gate.Pass:
        passes.append(check(self, *args))
        return passes[-1]

    def spied_run(self: gate.Gate, *args: Any) -> CheckResult:
        passes.clear()
        result = run(self, *args)
        if passes:
            since = len(passes) == 1 and not passes[0].scope.whole
            answers.append(passes[0].result if since else None)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gate.Gate, "check", spied_check)
        patch.setattr(gate.Gate, "run", spied_run)
        yield answers


def check(**options: Any) -> CheckResult:
    return run_check(Path.cwd(), CheckOptions(**options))


def render(*args: str) -> int:
    """`tfgen render`: 0, or 1 when a spec is invalid (then nothing is written)."""
    result = CliRunner().invoke(main, ["render", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code


def edit(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def spec(name: str) -> Path:
    return Path(layout.EXPERIMENTS_DIR) / f"{name}{layout.SPEC_SUFFIX}"


def workers(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["spec"]["roles"]["worker"]  # every bundled spec has some
    return found


def set_replicas(count: int, data: dict[str, Any]) -> None:
    workers(data)["replicas"] = count


def take_log_dir(other: str, data: dict[str, Any]) -> None:
    theirs = yaml.safe_load(spec(other).read_text())["spec"].get("tensorboard", {})
    if "logDir" in theirs:
        data["spec"].setdefault("tensorboard", {})["logDir"] = theirs["logDir"]


def switch_namespace(data: dict[str, Any]) -> None:
    meta = data["metadata"]
    meta["namespace"] = "default" if meta.get("namespace") == "ml-team" else "ml-team"


def set_gpus(data: dict[str, Any]) -> None:
    workers(data)["gpus"] = 8


def apply(edit_name: str, name: str, other: str) -> None:
    """One change a pull request makes, rendered as people do unless it says otherwise."""
    folder = Path(layout.generated_folder(name))
    if not spec(name).exists():
        return  # removed by an earlier edit
    if edit_name == "replicas":
        edit(spec(name), functools.partial(set_replicas, 3))
    elif edit_name == "args":  # what the rules across files read of it stays the same
        edit(spec(name), lambda data: workers(data).update(args=["--steps=7"]))
    elif edit_name == "log-dir-of-another" and spec(other).exists():
        edit(spec(name), functools.partial(take_log_dir, other))
    elif edit_name == "namespace":
        edit(spec(name), switch_namespace)
    elif edit_name == "gpus":
        edit(spec(name), set_gpus)
    elif edit_name == "image-latest":  # a warning: still all clear, kept with the ledger
        edit(spec(name), lambda data: data["spec"].update(image="tensorflow/tensorflow:latest"))
    elif edit_name == "copy":
        copy = f"{name}-copy"
        spec(copy).write_text(spec(name).read_text().replace(f"name: {name}\n",
                                                             f"name: {copy}\n"))
    elif edit_name == "remove":
        spec(name).unlink()
        render("--prune")
        return
    elif edit_name == "remove-spec-only":
        spec(name).unlink()
        return
    elif edit_name == "unrendered":
        edit(spec(name), functools.partial(set_replicas, 2))
        return
    elif edit_name == "values-by-hand" and (folder / layout.VALUES_FILE).exists():
        with open(folder / layout.VALUES_FILE, "a") as values:
            values.write("# edited by hand\n")
        return
    elif edit_name == "app-of-another" and (folder / layout.APP_FILE).exists():
        app = folder / layout.APP_FILE
        app.write_text(app.read_text().replace(f"name: {name}\n", f"name: {other}\n"))
        return
    elif edit_name == "generated-folder-gone":
        shutil.rmtree(folder, ignore_errors=True)
        return
    render()


EDITS = ("replicas", "args", "log-dir-of-another", "namespace", "gpus", "image-latest", "copy",
         "remove",
         "remove-spec-only", "unrendered", "values-by-hand", "app-of-another",
         "generated-folder-gone")


def verdict(result: CheckResult) -> tuple[object, ...]:
    return (sorted(result.problems), result.specs, result.applications, result.checked,
            result.objects)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(owners=st.booleans(), edits=st.lists(
    st.tuples(st.sampled_from(EDITS), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    min_size=1, max_size=3))
def test_a_check_after_an_all_clear_one_is_the_full_check(
    owners: bool, edits: list[tuple[str, str, str]]
) -> None:
    with bundled_repository(owners) as root:
        assert check().ok
        for edit_name, name, other in edits:
            apply(edit_name, name, other)
            with ledger_answers() as answers:
                result = check()
            assert answers or result.from_cache, "the check looked at its ledger"
            assert verdict(result) == verdict(check(use_cache=False)), (edit_name, name, root)
            answered = bool(answers) and answers[0] is not None
            event("answered by the ledger" if answered else "full check")
            if answered:
                assert result.ok, "the ledger answers all clear, or the full check runs"


def test_one_changed_experiment_is_checked_alone_from_the_ledger() -> None:
    with bundled_repository() as root:
        first = check()
        assert first.ok and first.applications == len(NAMES)
        edit(root / spec("distributed-mnist"), functools.partial(set_replicas, 3))
        assert render() == 0
        with ledger_answers() as answers:
            result = check()
        assert answers == [result] and result.ok
        assert (result.helm_processes, result.cache_hits) == (1, len(NAMES) - 1)
        assert verdict(result) == verdict(check(use_cache=False))
        assert (result.specs, result.applications) == (first.specs, first.applications)


@pytest.mark.parametrize("change", ["tfgen.yaml", "chart", "argo wiring"])
def test_a_change_of_no_experiment_is_a_full_check(change: str) -> None:
    with bundled_repository() as root:
        assert check().ok
        if change == "tfgen.yaml":
            edit(root / "tfgen.yaml", lambda data: data.update(clusterDomain="cluster.local"))
        elif change == "chart":
            with open(root / layout.CHART_PATH / "values.yaml", "a") as values:
                values.write("# a comment\n")
        else:
            with open(root / layout.APPLICATIONSET_FILE, "a") as appset:
                appset.write("# a comment\n")
        with ledger_answers() as answers:
            result = check()
        assert answers == [None]
        assert verdict(result) == verdict(check(use_cache=False))


def test_a_problem_a_changed_experiment_makes_elsewhere_is_found_by_the_full_check() -> None:
    # the copy takes the original's log folder: the rule across files reports both files
    with bundled_repository(owners=False):
        assert check().ok
        apply("copy", "distributed-mnist", "")
        with ledger_answers() as answers:
            result = check()
        assert answers == [None]
        assert {p.path for p in result.problems} >= {
            str(spec("distributed-mnist")), str(spec("distributed-mnist-copy"))}


def test_a_ledger_is_kept_only_while_each_application_reads_its_own_experiments_files(
) -> None:
    with bundled_repository() as root:
        apps = resolve_applications(root).applications
        assert len(apps) == len(NAMES) and ledger.keeps(root, apps)
        other = root.resolve() / layout.generated_folder("lr-sweep") / layout.VALUES_FILE
        assert not ledger.keeps(root, [replace(apps[0], value_files=[other])])


def test_a_chart_that_changed_through_a_link_is_a_full_check() -> None:
    # the chart is a link: its files are no input of the snapshot, but helm reads them
    with bundled_repository() as root:
        chart = root / layout.CHART_PATH
        shutil.move(chart, root / "chart-copy")
        chart.symlink_to(root / "chart-copy")
        assert check().ok
        with open(root / "chart-copy" / "values.yaml", "a") as values:
            values.write("# a comment\n")
        edit(root / spec("cpu-linear"), functools.partial(set_replicas, 3))
        assert render() == 0
        with ledger_answers() as answers:
            result = check()
        assert answers == [None] and result.ok


def test_an_added_experiment_is_checked_from_the_ledger_with_codeowners_judged_again() -> None:
    # tfgen.yaml names code owners: CODEOWNERS gains the new spec's line
    with bundled_repository() as root:
        assert check().ok
        apply("copy", "cpu-linear", "")
        assert render() == 0
        with ledger_answers() as answers:
            result = check()
        assert answers == [result] and result.ok and result.helm_processes == 1
        assert verdict(result) == verdict(check(use_cache=False))
        codeowners = root / layout.CODEOWNERS_FILE
        codeowners.write_text(codeowners.read_text().replace("cpu-linear-copy", "cpu-linear-c"))
        with ledger_answers() as answers:
            result = check()
        assert answers == [None] and not result.ok  # the full check says what is wrong


def test_a_ledger_whose_parts_are_of_two_writes_is_not_used(tmp_path: Path) -> None:
    cache = Cache(tmp_path / CACHE_DIRNAME, key=b"k" * 32)
    hashes = {"tfgen.yaml": "1", "experiments/a.yaml": "2", "experiments/b.yaml": "3"}
    entries = {name: ledger.Entry(None, name, (), 0) for name in ("a", "b")}
    ledger.save(cache, "key", ledger.Ledger.of(hashes, {}, entries))
    head = cache.get(ledger.SPACE, "key")
    assert head is not None
    later = ledger.load(cache, "key", hashes)
    assert later is not None and later.changed(hashes) == set()
    now = {**hashes, "experiments/a.yaml": "4"}
    assert later.changed(now) == {"a"}
    later.update(now, {"a"}, {"a": entries["a"]})
    ledger.save(cache, "key", later)
    assert ledger.load(cache, "key", now) is not None
    cache.put(ledger.SPACE, "key", head)  # a's new part with the old head: a run stopped
    assert ledger.load(cache, "key", now) is None
    assert ledger.load(cache, "key", {**now, "tfgen.yaml": "5"}) is None  # head only
