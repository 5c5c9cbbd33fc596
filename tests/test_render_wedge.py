"""`tfgen render` never wedges a repository: a render killed mid-write leaves only temporary
files that the next render removes; two renders at once are serialised by the lock (one
waits, or gives up with exit 2 naming the holder), never printing bogus orphans; files get the
umask's mode; outside a tfgen repository nothing is written; a symlinked folder under argo/
never makes a write leave the repository. Killed and concurrent renders are real processes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import ARGOCD, REPO_ROOT, experiment, mnist_spec
from tfgen.cli import main
from tfgen.render import apply_plan, lock, plan_render
from tfgen.repo import layout

SPEC = (REPO_ROOT / "experiments" / "distributed-mnist.yaml").read_text(encoding="utf-8")


def make_repo(root: Path, count: int) -> Path:
    """A repository of `count` copies of the walkthrough experiment (names run-000...)."""
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tfgen.yaml", root / "tfgen.yaml")
    for i in range(count):
        name = f"run-{i:03d}"
        text = SPEC.replace("name: distributed-mnist", f"name: {name}", 1)
        text = text.replace("distributed-mnist", name)
        text = text.replace("/training/tensorflow/logs", f"/training/{name}/logs")  # own logs
        (root / "experiments" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


# tfgen's command line in a process of its own (as the installed `tfgen` script runs it).
TFGEN = [sys.executable, "-c", "from tfgen.cli import main; main()"]


def tfgen(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TFGEN, *args], cwd=root, text=True, capture_output=True,
                          timeout=timeout, check=False)


def temps(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "argo").rglob("*")
                  if layout.TEMP_MARK in p.name)


# A render that kills itself with SIGKILL after the first rename: some files new, the rest
# still staged as temporary files, exactly as a render killed by the machine leaves them.
KILLED_MID_WRITE = textwrap.dedent("""
    import os, signal, sys
    from tfgen.render import write
    real_replace, calls = os.replace, []

    def replace_then_die(source, target):
        calls.append(target)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(source, target)

    write.os.replace = replace_then_die
    from tfgen.cli import main
    main(["render"])
""")


def test_a_render_killed_mid_write_does_not_wedge_the_next(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", 12)
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE], cwd=root, text=True,
                            capture_output=True, timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = temps(root)
    assert len(left) > 10  # the staged files of the killed render are still there
    assert all(Path(rel).name.startswith(".") for rel in left)
    assert (root / layout.RENDER_LOCK).exists()  # its lock file too: the kernel freed the lock
    check = tfgen(root, "render", "--check")
    assert "no tfgen header" not in check.stdout + check.stderr  # temps are not foreign
    again = tfgen(root, "render")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no tfgen header" not in again.stdout + again.stderr
    assert temps(root) == [] and not (root / layout.RENDER_LOCK).exists()
    final = tfgen(root, "render", "--check")
    assert final.returncode == 0 and "generated files are up to date" in final.stderr, final.stderr


def test_concurrent_renders_are_serialised(tmp_path: Path) -> None:
    for attempt in range(3):
        root = make_repo(tmp_path / f"repo-{attempt}", 40)
        command = [*TFGEN, "render"]
        runs = [subprocess.Popen(command, cwd=root, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for _ in range(3)]
        outcomes = [(run.wait(timeout=60), *run.communicate()) for run in runs]
        for code, out, err in outcomes:
            assert code in (0, 2), out + err
            assert "orphan" not in out and "no tfgen header" not in out + err
            if code == 2:
                assert "another tfgen render" in err
        assert any(code == 0 for code, _, _ in outcomes)
        assert temps(root) == [] and not (root / layout.RENDER_LOCK).exists()
        final = tfgen(root, "render", "--check")
        assert final.returncode == 0, final.stdout + final.stderr


def test_the_loser_of_renders_over_written_files_exits_2(tmp_path: Path) -> None:
    """Renders that start together over files already written (each rewrites every one): a
    loser that finds a file changing under it while it plans (another is writing it) meets
    an environment condition, exit 2, never the exit 1 of a fault in the repository."""
    root = make_repo(tmp_path / "repo", 40)
    assert tfgen(root, "render").returncode == 0
    seen: dict[int, int] = {}
    for attempt in range(4):
        for spec in (root / "experiments").glob("*.yaml"):
            text = spec.read_text(encoding="utf-8")
            spec.write_text(re.sub(r'value: "\d+"', f'value: "{300 + attempt}"', text, count=1),
                            encoding="utf-8")
        runs = [subprocess.Popen([*TFGEN, "render"], cwd=root, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(3)]
        for run in runs:
            code = run.wait(timeout=120)
            out, err = run.communicate()
            seen[code] = seen.get(code, 0) + 1
            assert code in (0, 2), out + err
            if code == 2:
                assert ("changed while tfgen was reading it" in err
                        or "another tfgen render" in err), err
    assert seen.get(0)
    final = tfgen(root, "render", "--check")
    assert final.returncode == 0, final.stdout + final.stderr


def test_a_held_lock_gives_exit_2_naming_the_holder(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "repo", 1)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from tfgen.render.lock import render_lock\n"
         "with render_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n"
         "    time.sleep(60)\n", str(root)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(lock, "LOCK_WAIT_SECONDS", 0.3)
        result = runner.invoke(main, ["render", "--root", str(root)], catch_exceptions=False)
        assert result.exit_code == 2
        assert f"another tfgen render (process {holder.pid}) is writing argo/" in result.output
        assert not (root / "argo" / "experiments").exists()  # it wrote nothing
    finally:
        holder.kill()
        holder.communicate()
    result = runner.invoke(main, ["render", "--root", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output  # the kernel let go of the dead holder's lock


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_files_get_the_umasks_mode(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        apply_plan(plan_render(tmp_path, [experiment(mnist_spec())], ARGOCD))
    finally:
        os.umask(old)
    written = [p for p in (tmp_path / "argo").rglob("*.yaml")]
    assert len(written) == 6
    assert {oct(p.stat().st_mode & 0o777) for p in written} == {oct(mode)}


def test_outside_a_repository_render_writes_nothing(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "distributed-mnist.yaml").write_text(SPEC)
    result = runner.invoke(main, ["render", "--root", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"no tfgen.yaml in {tmp_path} or any folder above" in result.output
    assert "start one with `tfgen init DIR`" in result.output
    assert "built-in defaults" not in result.output  # render refuses; it uses no defaults
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiments"]


def test_a_symlinked_experiment_folder_is_never_written_through(
    tmp_path: Path, runner: CliRunner
) -> None:
    root = make_repo(tmp_path / "repo", 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "argo" / "experiments").mkdir(parents=True)
    (root / "argo" / "experiments" / "run-000").symlink_to(outside)
    for args in (["render"], ["render", "--prune"], ["render", "--check"]):
        result = runner.invoke(main, [*args, "--root", str(root)], catch_exceptions=False)
        assert result.exit_code == 1
        assert "argo/experiments/run-000: is a symbolic link, where tfgen writes a real folder" \
            in result.output
    assert list(outside.iterdir()) == []
