"""Problems and how they are shown.

Every check in tfgen (spec validation, rendered-object validation, GitOps wiring) produces
`Problem`s; nothing prints on the way. The caller collects them all and formats them once:
text for people, JSON for bots, GitHub workflow commands for pull-request annotations.

A problem is an error (the default) or a warning. Errors fail a command (exit 1); warnings
are printed with them, counted apart (`tally`), and never change an exit code: a check that
finds only warnings passes. Whatever decides success reads `errors_of`, never the whole list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from .words import counted

ERROR, WARNING = "error", "warning"
SEVERITIES = (ERROR, WARNING)


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong, located as precisely as we can.

    `path` is the file a person should open; `line`/`col` are 1-based (0 = unknown);
    `pointer` is a JSON path into the document (`$.spec.roles.worker.gpus`) or, for rendered
    objects, `Kind/name $.path`; `hint` says what would be right. `severity` is ERROR or
    WARNING (anything but WARNING counts as an error: a problem is never lost as a warning).
    """

    path: str
    line: int = 0
    col: int = 0
    pointer: str = ""
    message: str = ""
    hint: str = ""
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity != WARNING

    def location(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}:{self.col or 1}"
        return where

    def text(self) -> str:
        out = f"{self.location()}: "
        if not self.is_error:
            out += f"{WARNING}: "
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
        command = ERROR if p.is_error else WARNING
        lines.append(f"::{command} {props}::{_github_escape(body)}")
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


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that fail a command."""
    return [p for p in problems if p.is_error]


def warnings_of(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that are said but fail nothing."""
    return [p for p in problems if not p.is_error]


def tally(problems: Iterable[Problem]) -> str:
    """How summaries count problems: errors as problems, warnings apart and only when there
    are any (`2 problems, 1 warning`; `0 problems, 1 warning`; `3 problems`)."""
    items = list(problems)
    warned = len(warnings_of(items))
    said = counted(len(items) - warned, "problem")
    return f"{said}, {counted(warned, 'warning')}" if warned else said


def warned(problems: Iterable[Problem]) -> str:
    """`, 1 warning` for a summary that says nothing of errors (an all-clear), else ""."""
    count = len(warnings_of(problems))
    return f", {counted(count, 'warning')}" if count else ""
