"""The one safe reader (`repo.files.read_input`): regular files inside the repository only,
every other kind of path refused with one line, without blocking and without reading what it
refuses; and every command reads through it (validate, render, check alike)."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.repo import layout
from tfgen.repo.files import MAX_BYTES, Refused, read_input

SECRET = "root:x:0:0:not-for-any-message"
# what an experiments/ folder may hold: specs, near misses, hidden files (files or folders)
LOOK_ALIKES = ["run.yaml", ".yaml", "run.yml", "run.YAML", ".hidden.yaml", "run.yaml.bak",
               "a.yaml", "README"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "ok.yaml").write_text("a: 1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    return root


def refusal(path: Path, root: Path | None) -> str:
    """The reason `read_input` gives, read in a thread so that a blocking open fails the test
    instead of hanging it."""
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: outcome.append(_attempt(path, root)), daemon=True)
    reader.start()
    reader.join(5)
    assert outcome, f"reading {path} blocked"
    result = outcome[0]
    assert isinstance(result, Refused), f"{path} was read: {result!r}"
    assert SECRET not in result.message
    assert result.message.startswith("shown: ")
    return result.reason


def _attempt(path: Path, root: Path | None) -> BaseException | bytes:
    try:
        return read_input(path, "shown", root)
    except Refused as exc:
        return exc


def test_a_regular_file_is_read(repo: Path) -> None:
    assert read_input(repo / "experiments" / "ok.yaml", "ok", repo) == b"a: 1\n"


def test_a_file_swapped_since_a_walk_looked_at_it_is_refused(repo: Path) -> None:
    # The snapshot hands over the status its walk saw (no link on the way down): what is
    # opened must still be that file, or nothing is read.
    ok = repo / "experiments" / "ok.yaml"
    looked = os.lstat(ok)
    assert read_input(ok, "shown", repo, looked=looked) == b"a: 1\n"
    ok.unlink()
    ok.symlink_to(repo.parent / "outside.txt")  # a link out of the repository in its place
    with pytest.raises(Refused, match="shown: cannot read") as refused:
        read_input(ok, "shown", repo, looked=looked)
    assert SECRET not in refused.value.message
    ok.unlink()
    time.sleep(0.02)  # past the clock tick of the change times (at most 10 ms on Linux)
    ok.write_text("a: 2\n")  # another file in its place, maybe under the same inode number
    with pytest.raises(Refused, match="changed while tfgen was reading it") as changed:
        read_input(ok, "shown", repo, looked=looked)
    assert changed.value.exit_code == 2  # a race, not a fault of the file


def test_a_symlink_inside_the_repository_is_followed(repo: Path) -> None:
    (repo / "experiments" / "link.yaml").symlink_to("ok.yaml")
    assert read_input(repo / "experiments" / "link.yaml", "link", repo) == b"a: 1\n"


def test_a_symlink_out_of_the_repository_is_refused_unread(repo: Path) -> None:
    link = repo / "experiments" / "x.yaml"
    link.symlink_to(repo.parent / "outside.txt")
    assert "leads outside the repository" in refusal(link, repo)


def test_a_symlinked_folder_out_of_the_repository_is_refused(repo: Path) -> None:
    (repo / "linked").symlink_to(repo.parent)
    assert "leads outside the repository" in refusal(repo / "linked" / "outside.txt", repo)


def test_a_file_given_outside_the_repository_is_a_persons_choice(repo: Path) -> None:
    assert read_input(repo.parent / "outside.txt", "o", repo) == SECRET.encode()


@pytest.mark.parametrize("kind, reason", [
    ("fifo", "is a named pipe (FIFO), not a regular file"),
    ("device", "is a device, not a regular file"),
    ("folder", "is a folder, not a regular file"),
    ("loop", "is a symbolic link loop"),
    ("dangling", "is a symbolic link to nothing"),
    ("missing", "no such file"),
])
def test_what_is_no_regular_file_gets_one_line(repo: Path, kind: str, reason: str) -> None:
    path = repo / "experiments" / "x.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
        assert reason in refusal(path, None)  # without a root to leave: the device itself
        return
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to("y.yaml")
        (repo / "experiments" / "y.yaml").symlink_to("x.yaml")
    elif kind == "dangling":
        path.symlink_to("nothing-here.yaml")
    assert reason in refusal(path, repo)


def test_the_size_limit_is_checked_before_reading(repo: Path) -> None:
    huge = repo / "experiments" / "huge.yaml"
    with open(huge, "wb") as handle:
        handle.truncate(64 * MAX_BYTES * 1024)  # 64 GiB, sparse: reading it would never end
    assert refusal(huge, repo) == (
        f"file is {64 * MAX_BYTES * 1024:,} bytes; the limit is {MAX_BYTES:,} bytes (1 MiB)")
    exact = repo / "experiments" / "exact.yaml"
    exact.write_bytes(b"#" * MAX_BYTES)
    assert len(read_input(exact, "exact", repo)) == MAX_BYTES


def test_spec_discovery_lists_every_yaml_entry_and_names_look_alikes(repo: Path) -> None:
    experiments = repo / "experiments"
    os.mkfifo(experiments / "pipe.yaml")
    (experiments / "folder.yaml").mkdir()
    (experiments / "old.yml").write_text("a: 1\n")
    (experiments / "LOUD.YAML").write_text("a: 1\n")
    (experiments / "nested" / "deeper").mkdir(parents=True)
    (experiments / "nested" / "deeper" / "spec.yaml").write_text("a: 1\n")
    (experiments / "notes").mkdir()
    (experiments / "notes" / "readme.md").write_text("no yaml here\n")
    (experiments / "README.md").write_text("not a spec\n")
    names = [p.name for p in layout.spec_files(experiments)]
    assert names == ["folder.yaml", "ok.yaml", "pipe.yaml"]  # the reader refuses two of them
    problems = {Path(p.path).name: p.message + " " + p.hint
                for p in layout.misplaced_specs(experiments)}
    assert sorted(problems) == ["LOUD.YAML", "nested", "old.yml"]
    assert "rename it to old.yaml" in problems["old.yml"]
    assert "rename it to LOUD.yaml" in problems["LOUD.YAML"]
    assert "a folder of YAML files" in problems["nested"]


@settings(max_examples=examples(40), deadline=None)
@given(files=st.sets(st.sampled_from(LOOK_ALIKES), max_size=4),
       folders=st.sets(st.sampled_from(LOOK_ALIKES), max_size=2))
def test_a_folder_holds_specs_when_discovery_lists_some(files: set[str], folders: set[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        experiments = Path(tmp)
        for name in files:
            (experiments / name).write_text("a: 1\n")
        for name in folders - files:
            (experiments / name).mkdir()
        assert layout.holds_specs(experiments) == bool(layout.spec_files(experiments))
    assert not layout.holds_specs(experiments), "a folder that is gone holds none"
