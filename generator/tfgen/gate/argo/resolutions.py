"""The resolved Applications as the gate's cache keeps them (`gate/check.py`).

The whole resolution is kept under everything resolving it reads of argo/
(`resolution_inputs`): a run after a change to one experiment's values answers from it. A run
after an experiment was added or its app.yaml changed resolves again, and then each
Application resolved from a generator file is recalled by that file's content, the
ApplicationSet's and the repository's path (`RememberedApplications`): only the new and changed
generator files are read.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from ...problems import Problem
from ...repo import layout
from ...repo.cache import Cache
from ...repo.inputs import Inputs
from ...repo.keys import CacheKeys
from .applications import Resolution, ResolvedApplication


def resolution_inputs(files: Mapping[str, bytes | str]) -> list[tuple[str, bytes | str]]:
    """What `resolve_applications` reads of a repository's files (path -> content, or its
    hash): argo/, the ApplicationSet and the generator files whole, the values files only as
    present (never their content), so a change to one experiment's values keeps the
    resolution."""
    values = f"/{layout.VALUES_FILE}"
    return [
        (rel, b"" if rel.startswith(layout.GENERATED_DIR + "/") and rel.endswith(values)
         else files[rel])
        for rel in files
        if rel.startswith(layout.ARGO_DIR + "/")
    ]


def resolution_to_json(resolution: Resolution) -> str:
    """A resolution as the cache keeps it."""
    return json.dumps({
        "applications": [application_to_json(app) for app in resolution.applications],
        "problems": [asdict(p) for p in resolution.problems],
    }, separators=(",", ":"))


def resolution_from_json(text: str) -> Resolution:
    data = json.loads(text)
    chart = _shared_paths()
    return Resolution([application_from_json(app, chart) for app in data["applications"]],
                      [Problem(**p) for p in data["problems"]])


def _shared_paths() -> Callable[[str], Path]:
    """A Path per text, made once: ten thousand Applications of one chart share its Path."""
    return functools.cache(Path)


def application_to_json(app: ResolvedApplication) -> dict[str, Any]:
    """One resolved Application as JSON data (its paths as strings)."""
    # fields by hand: asdict() would deep-copy each one first
    data = {f.name: getattr(app, f.name) for f in fields(app)}
    data.update(chart_dir=str(app.chart_dir), generator_file=str(app.generator_file),
                value_files=[str(path) for path in app.value_files])
    return data


def application_from_json(
    data: dict[str, Any], chart: Callable[[str], Path] = Path
) -> ResolvedApplication:
    """`application_to_json`'s data back; `chart` makes the chart's Path (one may be shared)."""
    data["chart_dir"] = chart(data["chart_dir"])
    data["generator_file"] = Path(data["generator_file"])
    data["value_files"] = [Path(v) for v in data["value_files"]]
    return ResolvedApplication(**data)


class RememberedApplications:
    """`applications.KnownApplications` kept in the run's cache, for the run's snapshot.

    An Application is remembered, and recalled, only while each value file it names is what
    resolving it would find again: a plain file (no link) below argo/experiments/ that is an
    input of the run. No folder on the way there is a link: the snapshot refuses argo/, argo/
    experiments/ and an experiment's folder as links, and does not enter one deeper (its files
    are then no input). A values.yaml removed or turned into a link, and the Application is
    resolved again."""

    KIND = "application"

    def __init__(self, cache: Cache, keys: CacheKeys, inputs: Inputs) -> None:
        self.cache, self.keys, self.inputs = cache, keys, inputs
        self.root = str(inputs.root.resolve())
        self.generated = f"{self.root}/{layout.GENERATED_DIR}/"

    def recall(self, appset: str, rels: Sequence[str]) -> Mapping[str, ResolvedApplication]:
        keys = {rel: self.keys.application(self.root, appset, rel, content)
                for rel in rels if (content := self.inputs.hashes.get(rel))}
        stored = self.cache.get_many(self.KIND, list(keys.values()))
        chart = _shared_paths()
        found = {}
        for rel, key in keys.items():
            if key in stored:
                application = application_from_json(json.loads(stored[key]), chart)
                if self._found_again(application):
                    found[rel] = application
        return found

    def remember(self, appset: str, rel: str, content: str,
                 application: ResolvedApplication) -> None:
        if self._found_again(application):
            self.cache.put(self.KIND, self.keys.application(self.root, appset, rel, content),
                           json.dumps(application_to_json(application), separators=(",", ":")))

    def _found_again(self, application: ResolvedApplication) -> bool:
        """Whether resolving the Application again would find each of its value files where
        it names them (see the class docstring)."""
        for path in application.value_files:
            text = str(path)
            try:
                plain = stat.S_ISREG(os.lstat(text).st_mode)
            except OSError:
                return False
            if not (plain and text.startswith(self.generated)
                    and self.inputs.hash_of(path) is not None):
                return False
        return True
