"""Where `tfgen run-local` keeps an experiment's data: the local stand-in for its volume.

By default `.tfgen-run/<name>/` at the repository root (`layout.run_folder`), the same folder
every run of that experiment, so a rerun finds its downloaded data and checkpoints as the pods
would on the NAS. `--clean` empties it first, and only a folder tfgen made: a real folder (a
link could lead anywhere) under a `.tfgen-run/` that carries tfgen's mark. `--data-dir` names
any other folder, which tfgen never empties.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import OptionsError
from ..repo import layout


def data_folder(spec: Path, name: str, data_dir: str | None, *, clean: bool) -> Path:
    """The folder standing in for experiment `name`'s volume, created when missing (and
    emptied first with `clean`)."""
    check_options(data_dir, clean=clean)
    if data_dir is not None:
        return Path(data_dir).resolve()
    root = layout.find_root([spec])
    if root is None:
        raise OptionsError(
            f"{layout.shown(spec)} is not in a tfgen repository (no {layout.CONFIG_NAME} "
            f"there or above), so it has no {layout.LOCAL_RUN_DIR}/{name}/: give --data-dir")
    folder = layout.run_folder(root, name)
    _make_run_dir(folder.parent)
    if clean:
        _empty(folder)
    folder.mkdir(exist_ok=True)
    return folder.resolve()


def check_options(data_dir: str | None, *, clean: bool) -> None:
    """--clean empties tfgen's own folder only, never one named by --data-dir."""
    if data_dir is not None and clean:
        raise OptionsError(f"--clean empties only tfgen's own {layout.LOCAL_RUN_DIR}/<name>/; drop "
                           f"--data-dir, or empty {data_dir} yourself")


def _make_run_dir(run_dir: Path) -> None:
    """`.tfgen-run/`, marked as tfgen's when tfgen creates it."""
    if os.path.lexists(run_dir):
        return
    run_dir.mkdir()
    (run_dir / layout.RUN_MARK).write_text(layout.RUN_MARK_TEXT, encoding="utf-8")


def _empty(folder: Path) -> None:
    """Remove everything in `folder`, when tfgen made it; links inside are removed, never
    followed."""
    run_dir = folder.parent
    for path in (run_dir, folder):
        if path.is_symlink():
            raise OptionsError(f"--clean: {_shown(path)} is a symbolic link; tfgen "
                               "empties only a real folder it made (empty it yourself)")
        if os.path.lexists(path) and not path.is_dir():
            raise OptionsError(f"--clean: {_shown(path)} is not a folder; move it away")
    if not (run_dir / layout.RUN_MARK).is_file():
        raise OptionsError(f"--clean: {layout.shown(run_dir)} was not made by tfgen run-local "
                           f"(no {layout.RUN_MARK} in it); empty {layout.shown(folder)} yourself")
    if not folder.exists():
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _shown(path: Path) -> str:
    """A path as messages show it, its last part as it is (showing resolves links)."""
    return os.path.join(layout.shown(path.parent), path.name)
