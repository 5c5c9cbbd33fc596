"""Experiments whose generated files are known to be what `tfgen render` writes.

An experiment's two files are a function of its spec, tfgen.yaml and tfgen. Once a run has
seen them equal to what render would write (or render has just written them), the cache
(`repo.cache`) remembers it under the content hashes of the spec and of both files, the spec's
path (the files' header names it), tfgen.yaml and tfgen. A later run whose snapshot
(`repo.inputs`) has the same hashes neither builds nor reads those files: at ten thousand
experiments that is most of a render's and a check's work. Any change to any of those inputs
is a different key, so a remembered experiment is planned again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..repo import layout
from ..repo.cache import CACHE_DIRNAME, Cache
from ..repo.inputs import INPUT_DIRS, Inputs, snapshot
from ..repo.keys import CacheKeys, content_hash, tool_digest
from ..validate import Experiment
from ..validate.remembered import RememberedVerdicts
from . import argo
from .generated import GeneratedFile

SPACE = "sync"
WIRING = "argo-files"


class InSync:
    """What one run knows and learns of its experiments' generated files."""

    def __init__(self, cache: Cache, keys: CacheKeys, inputs: Inputs) -> None:
        self.cache, self.keys, self.inputs = cache, keys, inputs
        self._known: set[str] = set()

    def _key(self, experiment: Experiment, contents: Collection[str | None]) -> str | None:
        if not all(contents):
            return None
        return self.keys.in_sync(self.inputs.config, experiment.rel, *contents)  # type: ignore[arg-type]

    def _snapshot_key(self, experiment: Experiment) -> str | None:
        return self._key(experiment, [self.inputs.hashes.get(rel) for rel in (
            experiment.rel, *layout.generated_paths(experiment.name))])

    def known(self, experiments: Collection[Experiment]) -> set[str]:
        """The names of the experiments whose files are known to be in sync."""
        keys = {e.name: self._snapshot_key(e) for e in experiments}
        found = self.cache.get_many(SPACE, [key for key in keys.values() if key])
        self._known = {name for name, key in keys.items() if key in found}
        return self._known

    def learn(self, unsettled: Collection[str], experiments: Collection[Experiment],
              written: Mapping[str, str] | None = None) -> None:
        """Remember the experiments whose files a plan found settled (not among its
        `unsettled` paths), or that were `written` as planned (path -> content written)."""
        unsettled = set(unsettled) - set(written or {})
        for experiment in experiments:
            paths = layout.generated_paths(experiment.name)
            if experiment.name in self._known or unsettled.intersection(paths):
                continue
            contents = [self.inputs.hashes.get(experiment.rel)] + [
                content_hash(written[path].encode()) if written and path in written
                else self.inputs.hashes.get(path) for path in paths]
            key = self._key(experiment, contents)
            if key is not None:
                self.cache.put(SPACE, key, "")
                self._known.add(experiment.name)  # learnt once per run


class Memory:
    """What a run (`tfgen render`, `tfgen check`) remembers in the repository's cache: its
    snapshot of the input `folders`, the spec verdicts and the experiments in sync. Without
    `use_cache` it remembers nothing (`--no-cache`), and the snapshot reads every file."""

    def __init__(self, root: Path, folders: Sequence[str] = INPUT_DIRS,
                 use_cache: bool = True) -> None:
        self.cache = Cache(root / CACHE_DIRNAME if use_cache else None)
        self.keys = CacheKeys(tool_digest(), os.getcwd())
        self.inputs = snapshot(root, self.cache, folders)
        self.verdicts = RememberedVerdicts(self.cache, self.keys, self.inputs)
        self.in_sync = InSync(self.cache, self.keys, self.inputs)

    def argo_files(self, argocd: Mapping[str, Any]) -> list[GeneratedFile]:
        """`argo.argo_files`, remembered by tfgen.yaml's `argocd` block and tfgen: rendering
        them imports Jinja2 and compiles four templates, a twentieth of a second each run."""
        key = self.keys.argo_files(json.dumps(argocd, sort_keys=True, default=str))
        stored = self.cache.get_json(WIRING, key)
        if isinstance(stored, list):
            return [GeneratedFile(path, tuple(sources), body) for path, sources, body in stored]
        files = argo.argo_files(argocd)
        self.cache.put_json(WIRING, key, [[f.path, f.sources, f.body] for f in files])
        return files


@contextmanager
def remembering(root: Path | None, enabled: bool = True) -> Iterator[Memory | None]:
    """The memory of the repository at or above `root` (None outside a repository, or when
    not `enabled`), written to the cache when the block ends."""
    found = layout.find_root([], root) if enabled else None
    # render reads experiments/ and argo/ only (the chart and schemas are check's to judge)
    memory = (Memory(found, (layout.EXPERIMENTS_DIR, layout.ARGO_DIR)) if found is not None
              else None)
    try:
        yield memory
    finally:
        if memory is not None:
            memory.cache.close()
