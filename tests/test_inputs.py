"""The gate's snapshot of its input files: a file whose status is known is not read again,
any edit is seen (even one that keeps the size and puts the mtime back), and a file changed
too recently to be told apart from a second edit in the same tick is hashed by every run."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.repo import inputs
from tfgen.repo.cache import Cache
from tfgen.repo.files import Refused

KEY = b"k" * 32
SPEC = "experiments/a.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "experiments").mkdir(parents=True)
    (repo / "tfgen.yaml").write_text("kubernetesVersion: '1.30'\n")
    (repo / SPEC).write_text("name: one\n")
    (repo / "experiments/b.yaml").write_text("name: two\n")
    return repo


def run(root: Path) -> inputs.Inputs:
    """One snapshot as a check takes it: its own connection to the cache, written at the end."""
    cache = Cache(root / ".tfgen-cache", key=KEY)
    try:
        return inputs.snapshot(root, cache)
    finally:
        cache.close()


def test_known_files_are_not_read_again(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    first = run(root)
    assert first.hashed == 3
    again = run(root)
    assert again.hashed == 1, "only tfgen.yaml, read alone, is hashed again"
    assert again.digest == first.digest
    assert again.files[SPEC] == b"name: one\n"


def test_only_the_file_whose_status_moved_is_read_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    first = run(root)
    (root / "experiments/b.yaml").write_text("name: changed\n")
    again = run(root)
    assert again.hashed == 2, "tfgen.yaml, read alone, and b.yaml: not its neighbour a.yaml"
    assert again.hashes[SPEC] == first.hashes[SPEC]
    assert again.files["experiments/b.yaml"] == b"name: changed\n"
    assert again.digest != first.digest


def test_an_edit_that_restores_size_and_mtime_is_seen(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    path = root / SPEC
    before = path.stat()
    first = run(root)
    path.write_text("name: bad\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the ctime moves all the same
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    again = run(root)
    assert again.digest != first.digest
    assert again.files[SPEC] == b"name: bad\n"


def test_a_recent_change_is_hashed_by_every_run(root: Path) -> None:
    # written just now, within RACY_NS: a second edit in the same timestamp tick could keep
    # the status, so the table does not vouch for these files yet
    run(root)
    assert run(root).hashed == 3


def test_a_forged_table_is_not_trusted(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    run(root)
    (root / SPEC).write_text("name: new\n")
    other = Cache(root / ".tfgen-cache", key=b"x" * 32)  # another machine's key signs it
    status = (root / SPEC).stat()
    ident = (f"{status.st_mode} {status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} "
             f"{status.st_ino} {status.st_dev}")
    # experiments/: listing not vouched for, a.yaml with its status now and the old bytes' hash
    table = {"experiments": ["", [], ["a.yaml"], [ident], [inputs.content_hash(b"name: one\n")]]}
    other.put_json("stat", inputs.CacheKeys.stat_table(str(root.absolute())), table)
    other.close()
    assert run(root).files[SPEC] == b"name: new\n"


def test_bytes_changed_after_the_snapshot_are_refused(root: Path) -> None:
    taken = run(root)
    (root / SPEC).write_text("name: later\n")
    with pytest.raises(Refused, match="changed while tfgen was reading it") as changed:
        taken.files[SPEC]
    assert changed.value.exit_code == 2  # a race, not a fault of the file


def _next_tick() -> None:
    """File timestamps come from a clock that moves in ticks (at most 10 ms on Linux): wait
    for the next one, so that the change a test makes next moves its folder's status."""
    time.sleep(0.02)


def test_a_folder_whose_status_is_known_is_not_listed_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    first = run(root)
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(inputs.os, "scandir", lambda path: listed.append(path) or scandir(path))
    again = run(root)
    assert again.hashes == first.hashes and list(again.hashes) == list(first.hashes)
    assert [p for p in listed if str(p).startswith(str(root / "experiments"))] == [], (
        "experiments/ is known: only its files' statuses are looked at")
    assert any("tfgen-cache" in str(p) for p in listed), "the spy sees the listings made"


def test_entries_added_removed_and_in_new_folders_are_seen(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    run(root)
    _next_tick()
    (root / "experiments/b.yaml").unlink()
    (root / "experiments/c.yaml").write_text("name: three\n")
    (root / "experiments/deeper").mkdir()
    (root / "experiments/deeper/d.yaml").write_text("name: four\n")
    assert list(run(root).hashes) == ["tfgen.yaml", SPEC, "experiments/c.yaml",
                                      "experiments/deeper/d.yaml"]
    _next_tick()
    (root / "experiments/deeper/d.yaml").rename(root / "experiments/deeper/e.yaml")
    assert "experiments/deeper/e.yaml" in run(root).hashes
    # a folder made beside files as they were kept: experiments/ is listed again and its
    # kept entry must take the folder in, or the run after, trusting it, never enters it
    _next_tick()
    (root / "experiments/later").mkdir()
    (root / "experiments/later/f.yaml").write_text("name: six\n")
    assert "experiments/later/f.yaml" in run(root).hashes
    assert "experiments/later/f.yaml" in run(root).hashes, "and in the run after"


def test_a_file_replaced_by_a_link_in_a_known_folder_is_looked_at_carefully(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "RACY_NS", 0)
    run(root)
    outside = tmp_path / "secret.yaml"
    outside.write_text("name: secret\n")
    _next_tick()
    (root / SPEC).unlink()
    (root / SPEC).symlink_to(outside)
    taken = run(root)
    assert SPEC in taken.refused and SPEC not in taken.hashes


def test_files_a_render_removes_while_the_folder_is_listed_are_no_error(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A concurrent render renames its temporary files into place (and a spec may be deleted)
    # between the listing of a folder and the look at each entry: what is gone is no input.
    folder = root / "argo" / "experiments" / "a"
    folder.mkdir(parents=True)
    temporary = folder / ".app.yaml.tfgen-tmp-x1"
    temporary.write_text("half written\n")
    (root / "experiments/c.yaml").write_text("name: three\n")
    listed = os.scandir

    def listing_then_removal(path: str) -> object:
        entries = list(listed(path))  # listed first, as the walk does ...
        for gone in (temporary, root / "experiments/c.yaml"):
            if Path(path) == gone.parent:
                gone.unlink()  # ... then gone before it is looked at

        class Listing:
            def __enter__(self) -> list[os.DirEntry[str]]:
                return entries

            def __exit__(self, *_: object) -> None:
                return None
        return Listing()

    monkeypatch.setattr(inputs.os, "scandir", listing_then_removal)
    taken = run(root)
    assert sorted(taken.hashes) == ["experiments/a.yaml", "experiments/b.yaml", "tfgen.yaml"]
    assert not temporary.exists() and not (root / "experiments/c.yaml").exists()


# Places a change between two runs can touch: specs, a generated experiment folder, and a
# folder below one (the snapshot keeps a listing per folder).
_PLACES = ["experiments/a.yaml", "experiments/b.yaml", "experiments/deeper/c.yaml",
           "argo/experiments/x/app.yaml", "argo/experiments/x/values.yaml",
           "argo/experiments/y/app.yaml"]
_CHANGE = st.tuples(st.sampled_from(["write", "remove", "link", "link out"]),
                    st.sampled_from(_PLACES), st.binary(max_size=3))


@settings(max_examples=examples(40), deadline=None)
@given(rounds=st.lists(st.lists(_CHANGE, max_size=4), min_size=1, max_size=4))
def test_a_remembered_snapshot_is_the_snapshot_read_afresh(
    rounds: list[list[tuple[str, str, bytes]]],
) -> None:
    # Each round changes some files, then a run takes its snapshot with the table the runs
    # before it kept: it must see what a run without any table sees. Time is moved on by hand
    # (every touched file and folder gets a new, old mtime), so that the table may vouch for
    # each status at once (RACY_NS = 0) and the tick of the clock cannot hide an edit.
    ticks = count(1_000_000_000_000_000_000, 1_000_000_000)
    original = inputs.RACY_NS
    inputs.RACY_NS = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            (root / "experiments").mkdir(parents=True)
            (root / "argo/experiments").mkdir(parents=True)
            outside = Path(tmp) / "outside.yaml"
            outside.write_text("secret\n")
            for changes in rounds:
                for action, rel, data in changes:
                    _change(root, rel, action, data, outside, ticks)
                assert _seen(lambda: run(root)) == _seen(lambda: inputs.snapshot(root))
    finally:
        inputs.RACY_NS = original


def _seen(take: Callable[[], inputs.Inputs]) -> object:
    """What a snapshot saw, comparable: its files in order, its refusals and its digest, or
    the refusal that stopped it (a dangling link outside the spec folder does)."""
    try:
        taken = take()
    except Refused as exc:
        return str(exc)
    return list(taken.hashes.items()), taken.refused, taken.digest


def _change(root: Path, rel: str, action: str, data: bytes, outside: Path,
            ticks: count[int]) -> None:
    path = root / rel
    if action == "link" and rel.startswith("argo/"):
        action = "write"  # a link below argo/ stops the whole run: not the point here
    if action == "link out" and rel.startswith("argo/"):
        action = "remove"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    if action == "write":
        path.write_bytes(data)
    elif action == "link":
        path.symlink_to(root / "experiments/a.yaml")  # inside the repository: followed
    elif action == "link out":
        path.symlink_to(outside)  # refused, and recorded as such
    # the file and every folder above it (a folder made in its parent changed that one too)
    for moved in (path, *path.relative_to(root).parents[:-1]):
        moved = root / moved
        if moved.exists() and not moved.is_symlink():
            tick = next(ticks)
            os.utime(moved, ns=(tick, tick))
