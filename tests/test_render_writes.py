"""Writing many files at once: staged in parallel, yet a failure while staging still leaves
every target untouched, no temporary file behind, and names the file that failed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from helpers import ARGOCD, experiment, mnist_spec
from tfgen.errors import TfgenError
from tfgen.render import apply_plan, plan_render
from tfgen.render import write as render
from tfgen.validate import Experiment


def experiments(count: int, **metadata: str) -> list[Experiment]:
    names = [f"run-{i:02d}" for i in range(count)]
    return [experiment(mnist_spec(name=name, **metadata)) for name in names]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_many_files_are_written_whole_and_in_place(tmp_path: Path) -> None:
    plan = plan_render(tmp_path, experiments(3 * render.WRITERS), ARGOCD)
    result = apply_plan(plan)
    wanted = {c.path: c.new.encode() for c in plan.changes if c.new is not None}
    assert len(result.written) == len(wanted) > 2 * render.WRITERS
    assert files(tmp_path) == wanted
    again = plan_render(tmp_path, experiments(3 * render.WRITERS), ARGOCD)
    assert again.drift == []


def test_failure_while_staging_leaves_every_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply_plan(plan_render(tmp_path, experiments(12), ARGOCD))
    before = files(tmp_path)
    plan = plan_render(tmp_path, experiments(12, owner="someone-else@example.com"), ARGOCD)
    assert len(plan.drift) == 24
    real_fsync, calls, lock = os.fsync, [], threading.Lock()

    def flaky_fsync(fd: int) -> None:
        with lock:
            calls.append(fd)
            fail = len(calls) == 6
        if fail:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(render.os, "fsync", flaky_fsync)
    with pytest.raises(TfgenError, match="cannot write argo/.*: Input/output error; 0 of 24"):
        apply_plan(plan)
    assert files(tmp_path) == before  # nothing renamed, no temporary file left
