"""The gate's snapshot of its input files: a file whose status is known is not read again,
any edit is seen (even one that keeps the size and puts the mtime back), and a file changed
too recently to be told apart from a second edit in the same tick is hashed by every run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
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
    table = {SPEC: (f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} "
                    f"{status.st_ino} {status.st_dev} {inputs.content_hash(b'name: one')}")}
    other.put_json("stat", inputs.CacheKeys.stat_table(str(root.absolute())), table)
    other.close()
    assert run(root).files[SPEC] == b"name: new\n"


def test_bytes_changed_after_the_snapshot_are_refused(root: Path) -> None:
    taken = run(root)
    (root / SPEC).write_text("name: later\n")
    with pytest.raises(Refused, match="changed while tfgen was reading it"):
        taken.files[SPEC]
