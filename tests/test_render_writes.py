"""Writing many files at once: staged in parallel, flushed by an fsync each or by one flush of
the file system, yet a failure while staging or flushing still leaves every target untouched,
no temporary file behind, and names what failed."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import pytest
from helpers import ARGOCD, experiment, mnist_spec
from tfgen.errors import TfgenError
from tfgen.render import apply_plan, durable, plan_render
from tfgen.render import write as render
from tfgen.repo import layout
from tfgen.validate import Experiment


def experiments(count: int, **metadata: str) -> list[Experiment]:
    names = [f"run-{i:02d}" for i in range(count)]
    return [experiment(mnist_spec(name=name, **metadata)) for name in names]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(params=["an fsync each", "the file system at once"])
def flushed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of flushing the staged files (`write.SYNC_AT_ONCE`)."""
    if request.param == "the file system at once":
        assert durable._syncfs() is not None  # Linux: the real syncfs is called
        monkeypatch.setattr(render, "SYNC_AT_ONCE", 1)
    else:
        monkeypatch.setattr(render, "SYNC_AT_ONCE", 10**9)
    return str(request.param)


def test_many_files_are_written_whole_and_in_place(tmp_path: Path, flushed: str) -> None:
    plan = plan_render(tmp_path, experiments(3 * render.WRITERS), ARGOCD)
    result = apply_plan(plan)
    wanted = {c.path: c.new.encode() for c in plan.changes if c.new is not None}
    assert len(result.written) == len(wanted) > 2 * render.WRITERS
    assert files(tmp_path) == wanted
    again = plan_render(tmp_path, experiments(3 * render.WRITERS), ARGOCD)
    assert again.drift == []


def test_a_failure_while_staging_or_flushing_leaves_every_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flushed: str
) -> None:
    apply_plan(plan_render(tmp_path, experiments(12), ARGOCD))
    before = files(tmp_path)
    plan = plan_render(tmp_path, experiments(12, owner="someone-else@example.com"), ARGOCD)
    assert len(plan.drift) == 24
    real_fsync, calls, lock = os.fsync, [], threading.Lock()

    def flaky_fsync(fd: int) -> None:  # the sixth file staged fails
        with lock:
            calls.append(fd)
            fail = len(calls) == 6
        if fail:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    def failing_syncfs(fd: int) -> int:  # the flush before the first rename fails
        ctypes.set_errno(5)
        return -1

    monkeypatch.setattr(durable.os, "fsync", flaky_fsync)
    monkeypatch.setattr(durable, "_syncfs", lambda: failing_syncfs)
    with pytest.raises(TfgenError, match="cannot write argo/.*: Input/output error; 0 of 24"):
        apply_plan(plan)
    assert files(tmp_path) == before  # nothing renamed, no temporary file left
    assert bool(calls) == (flushed == "an fsync each")


def test_a_taken_temporary_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.write_text("not tfgen's")
    target = tmp_path / "argo" / "values.yaml"
    target.parent.mkdir()
    (target.parent / f".values.yaml{layout.TEMP_MARK}taken").symlink_to(outside)
    drawn = iter(["taken", "free"])
    monkeypatch.setattr(durable.secrets, "token_hex", lambda size: next(drawn))
    temp = durable.write_temp(target, b"kind: Application\n")
    assert temp.name == f".values.yaml{layout.TEMP_MARK}free"
    assert temp.read_bytes() == b"kind: Application\n"
    assert outside.read_text() == "not tfgen's"


def test_no_folder_is_made_through_a_symbolic_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    outside.mkdir()
    (root / "argo").mkdir(parents=True)
    (root / "argo" / "experiments").symlink_to(outside)
    monkeypatch.chdir(root)
    with pytest.raises(TfgenError, match="cannot write into argo/experiments: it is, or lies "
                                         "under, a symbolic link"):
        render.write_new_files(root, {"argo/experiments/run-00/values.yaml": "x: 1\n"})
    assert list(outside.iterdir()) == []  # not even the experiment's folder


def test_a_file_where_a_folder_belongs_is_named(tmp_path: Path) -> None:
    (tmp_path / "argo").mkdir()
    (tmp_path / "argo" / "experiments").write_text("not a folder\n")
    with pytest.raises(TfgenError, match="cannot write argo/experiments/run-00/values.yaml: "
                                         "Not a directory"):
        render.write_new_files(tmp_path, {"argo/experiments/run-00/values.yaml": "x: 1\n"})
