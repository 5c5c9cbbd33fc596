"""What the gate reads: every input file of a run, read once.

The whole-run cache key, each spec's verdict, the drift of the generated files, the Argo CD
objects in argo/ and the resolved Applications are all computed from this one snapshot, so one
run judges one consistent state of the repository. Files are read as every command reads
input (`repo.files.read_input`): the gate is not the one place where a pipe hangs tfgen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ..repo import layout
from ..repo.files import Refused, read_input, resolve_input
from .cache import digest

# Folders whose files a check reads (tfgen.yaml too); schemas/ is read by tfgen as package
# data, and in this repository a change to it is a change of tfgen.
INPUT_DIRS = (layout.EXPERIMENTS_DIR, layout.ARGO_DIR, "charts", "schemas")


@dataclass(frozen=True)
class Inputs:
    """Repository-relative POSIX path -> bytes of every input file; `refused`: the files in
    experiments/ the safe reader refused, path -> why (the validate stage reports each one as a
    problem of that file, in the run's format, as `tfgen validate` does)."""

    files: dict[str, bytes]
    refused: dict[str, str] = field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        parts: list[bytes | str] = []
        for rel, data in self.files.items():
            parts += [rel, data]
        for rel, reason in self.refused.items():
            parts += ["refused", rel, reason]
        return digest(*parts)

    @property
    def config(self) -> bytes:
        return self.files.get(layout.CONFIG_NAME, b"")

    def generated(self) -> dict[str, bytes]:
        """The files where tfgen writes, as `layout.generated_files` reads them from disk."""
        return {rel: data for rel, data in self.files.items()
                if layout.is_generated_location(rel)}


def snapshot(root: Path) -> Inputs:
    """Every input file under `root`, in a stable order, read through the one safe reader
    (`Refused` for a pipe, a device, a link out of the repository, a file over the limit; a
    spec the reader refuses is recorded in `refused` instead, for validate to report).

    Symlinked folders are not entered; one that leads out of the repository is refused, and
    so is a tree where `tfgen render` could not write (`layout.check_generated_tree`).
    """
    layout.check_generated_tree(root)
    files: dict[str, bytes] = {}
    refused: dict[str, str] = {}
    config = root / layout.CONFIG_NAME
    if os.path.lexists(config):
        files[layout.CONFIG_NAME] = read_input(config, layout.shown(config), root)
    # The one generated file outside argo/: read alone (the rest of .github/ is no input).
    codeowners = root / layout.CODEOWNERS_FILE
    if os.path.lexists(codeowners):
        files[layout.CODEOWNERS_FILE] = read_input(codeowners, layout.shown(codeowners), root)
    for top in INPUT_DIRS:
        for dirpath, dirnames, filenames in os.walk(root / top):
            for name in dirnames:
                if os.path.islink(os.path.join(dirpath, name)):
                    folder = os.path.join(dirpath, name)
                    resolve_input(folder, layout.shown(folder), root)
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = f"{rel_dir}/{name}"
                if layout.is_temp_name(name) or rel == layout.RENDER_LOCK:
                    continue  # a render at work (or killed): not an input
                try:
                    files[rel] = read_input(path, layout.shown(path), root)
                except Refused as exc:
                    if layout.experiment_of(rel) is None or rel.startswith(layout.ARGO_DIR):
                        raise
                    refused[rel] = exc.reason
    return Inputs(files, refused)
