"""`.github/CODEOWNERS`, rendered from tfgen.yaml's `owners`.

GitHub asks a file's code owners to review a pull request that changes it (and a branch rule
can require their approval). The platform owners own what changes every experiment (tfgen.yaml,
the chart, the schemas, the argo/ wiring and this file); each namespace's owners own the specs
of that namespace. Paths are anchored at the repository root (`/experiments/x.yaml`, not any
`x.yaml` below some `experiments/`). The file opens with tfgen's header: its lines are
comments, as CODEOWNERS reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..problems import Problem
from ..repo import layout
from .generated import GeneratedFile

SOURCES = (layout.CONFIG_NAME, f"{layout.EXPERIMENTS_DIR}/")
# What the platform owners own, repository-relative; a trailing "/" is a whole folder.
PLATFORM_PATHS = (
    layout.CONFIG_NAME,
    "charts/",
    "schemas/",
    f"{layout.ARGO_DIR}/*.yaml",
    layout.CODEOWNERS_FILE,
)


# A path CODEOWNERS reads as written: no space (the owners' separator), no "#", "!", "*", "?",
# "[" or "\\" (comment, negation, globs, escapes).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._/+@=-]+")


def _line(path: str, owners: Sequence[str]) -> str:
    return f"/{path} {' '.join(owners)}"


class Owned(Protocol):
    """What CODEOWNERS reads of an experiment (an `Experiment` has both)."""

    @property
    def rel(self) -> str: ...

    @property
    def namespace(self) -> str: ...


def _owned_specs(
    by_namespace: Mapping[str, list[str]], experiments: Iterable[Owned]
) -> tuple[list[tuple[str, list[str]]], list[Problem]]:
    """Each spec with its namespace's owners, sorted by path, and a problem for each owned
    spec whose path CODEOWNERS would misread (kept apart: a line for it would own the wrong
    files)."""
    problems: list[Problem] = []
    owned = []
    for rel, namespace in sorted((e.rel, e.namespace) for e in experiments):
        if not by_namespace.get(namespace):
            continue
        if _PLAIN_PATH.fullmatch(rel):
            owned.append((rel, by_namespace[namespace]))
        else:
            problems.append(Problem(rel, message=f"{layout.CODEOWNERS_FILE} cannot name this "
                                    "file (a space or one of # ! * ? [ \\ in its path)",
                                    hint="rename it to <metadata.name>.yaml"))
    return owned, problems


def codeowners_file(
    owners: Mapping[str, Any], experiments: Iterable[Owned]
) -> tuple[GeneratedFile | None, list[Problem]]:
    """The CODEOWNERS for tfgen.yaml's `owners` and these experiments (None when `owners`
    declares nobody), and a problem for each owned spec whose file name CODEOWNERS cannot
    hold. A spec whose namespace has no owners gets no line."""
    platform: list[str] = list(owners.get("platform") or ())
    by_namespace: Mapping[str, list[str]] = owners.get("namespaces") or {}
    if not platform and not any(by_namespace.values()):
        return None, []
    lines: list[str] = []
    if platform:
        # In CODEOWNERS the last matching line wins: the platform lines come first, so a
        # later, more specific line (an experiment's spec) is never overridden by them.
        lines.append("# Platform: what changes every experiment.")
        lines += [_line(path, platform) for path in PLATFORM_PATHS]
    owned, problems = _owned_specs(by_namespace, experiments)
    if owned:
        lines.append("# Experiments: each spec by its namespace's owners.")
        lines += [_line(rel, names) for rel, names in owned]
    return GeneratedFile(layout.CODEOWNERS_FILE, SOURCES, "\n".join(lines) + "\n"), problems
