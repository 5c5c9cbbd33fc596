"""Problems and how they are shown.

Every check in tfgen (spec validation, rendered-object validation, GitOps wiring) produces
`Problem`s; nothing prints on the way. The caller collects them all and formats them once:
text for people, JSON for bots, GitHub workflow commands for pull-request annotations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong, located as precisely as we can.

    `path` is the file a person should open; `line`/`col` are 1-based (0 = unknown);
    `pointer` is a JSON path into the document (`$.spec.roles.worker.gpus`) or, for rendered
    objects, `Kind/name $.path`; `hint` says what would be right.
    """

    path: str
    line: int = 0
    col: int = 0
    pointer: str = ""
    message: str = ""
    hint: str = ""

    def location(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}:{self.col or 1}"
        return where

    def text(self) -> str:
        out = f"{self.location()}: "
        if self.pointer:
            out += f"{self.pointer}: "
        out += self.message
        if self.hint:
            out += f" ({self.hint})"
        return out


def _github_escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def _as_text(items: list[Problem]) -> str:
    return "\n".join(p.text() for p in items)


def _as_json(items: list[Problem]) -> str:
    return json.dumps([asdict(p) for p in items], indent=2)


def _as_github(items: list[Problem]) -> str:
    """GitHub workflow commands: one annotation per problem on the pull request."""
    lines = []
    for p in items:
        props = f"file={_github_escape(p.path, prop=True)}"
        if p.line:
            props += f",line={p.line},col={p.col or 1}"
        body = (f"{p.pointer}: " if p.pointer else "") + p.message
        if p.hint:
            body += f" ({p.hint})"
        lines.append(f"::error {props}::{_github_escape(body)}")
    return "\n".join(lines)


FORMATTERS: dict[str, Callable[[list[Problem]], str]] = {
    "text": _as_text,  # for people
    "json": _as_json,  # for tools
    "github": _as_github,  # for pull-request annotations
}
FORMATS = tuple(FORMATTERS)


def format_problems(problems: Iterable[Problem], fmt: str) -> str:
    """Render problems in one of FORMATS, sorted; no problems give an empty string (json: `[]`)."""
    return FORMATTERS[fmt](sorted(problems))
