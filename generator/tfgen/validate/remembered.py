"""Spec verdicts remembered between runs in the cache (`repo.cache`), by content.

`tfgen check` and `tfgen render` hand `validate_paths` this memory: each spec's verdict (its
problems, what the rules across files read of it, and its completed data) is kept under the
hash of its bytes, its shown path, tfgen.yaml and tfgen itself. The hashes come from the run's
snapshot (`repo.inputs`), so a spec whose verdict is known is not even read; the rules across
files always run.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..problems import Problem
from ..repo.cache import Cache
from ..repo.inputs import Inputs
from ..repo.keys import CacheKeys, content_hash
from .result import SpecVerdict

SLICE = 500  # verdicts fetched and decoded together
# A verdict is kept in two parts: its problems and what the rules across files read (recalled
# for every unchanged spec), and the complete data (loaded only for the experiments a run
# works on).
FACTS, DATA = "spec", "spec-data"


class RememberedVerdicts:
    """The `Verdicts` of validate_paths, kept in a run's cache."""

    def __init__(self, cache: Cache, keys: CacheKeys, inputs: Inputs) -> None:
        self.cache, self.keys, self.inputs = cache, keys, inputs

    def recall(self, files: Sequence[tuple[Path, str]]) -> list[SpecVerdict | None]:
        keys = []
        for path, shown in files:
            content = self.inputs.hash_of(path)
            keys.append(content and self.keys.spec(self.inputs.config, shown, content))
        verdicts: list[SpecVerdict | None] = []
        for start in range(0, len(keys), SLICE):  # a slice's texts at a time, not all of them
            part = keys[start:start + SLICE]
            stored = self.cache.get_many(FACTS, [key for key in part if key])
            verdicts += [_verdict(stored.get(key), functools.partial(self._data, key))
                         if key else None for key in part]
        return verdicts

    def remember(self, path: Path, shown: str, raw: bytes, verdict: SpecVerdict) -> SpecVerdict:
        key = self.keys.spec(self.inputs.config, shown, content_hash(raw))
        self.cache.put_json(FACTS, key, {
            "problems": [asdict(p) for p in verdict.problems], "facts": verdict.facts,
            "valuesDigest": verdict.values_digest})
        if verdict.facts is None or not self.cache.enabled:
            return verdict  # a cache that keeps nothing cannot give the data back
        self.cache.put_json(DATA, key, verdict.load_data())
        return SpecVerdict(verdict.problems, verdict.facts, functools.partial(self._data, key),
                           verdict.values_digest)

    def _data(self, key: str) -> dict[str, Any] | None:
        data = self.cache.get_json(DATA, key)
        return data if isinstance(data, dict) else None


def _verdict(text: str | None, load: Callable[[], dict[str, Any] | None]) -> SpecVerdict | None:
    if text is None:
        return None
    try:
        stored = json.loads(text)
    except ValueError:
        return None
    return SpecVerdict(tuple(Problem(**p) for p in stored["problems"]), stored["facts"], load,
                       stored.get("valuesDigest"))
