"""What a file written by tfgen looks like: its header and its YAML (`repo/yamlwrite.py`).

Every generated file opens with the same three comment lines (that tfgen made it and it must
not be edited, the source it came from, the command that regenerates it). The first line is
also how tfgen recognises its own files: a file without it is never overwritten or deleted.
YAML is written one way only (block style, no line wrapping, keys in the order they were
built) so the same input gives the same bytes on every run; the writer's home, and the
header's, is `repo/yamlwrite.py`, below the stages, so the validate stage measures what render
will write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml_rs

from ..repo.yamlwrite import HEADER_MARK, dump_yaml, header, is_plain, quoted

__all__ = ["HEADER_MARK", "GeneratedFile", "dump_yaml", "header", "is_generated", "is_plain",
           "quoted", "read_canonical"]

def is_generated(text: str) -> bool:
    """True when `text` starts with tfgen's header: the only files tfgen may touch."""
    return text.startswith(HEADER_MARK)


# The comment lines a file in canonical form may open with: printable ASCII only, because
# YAML 1.1 also ends a line (and so a comment) at NEL, U+2028 and U+2029.
_COMMENT_LINES = re.compile(r"(?:#[ -~]*\n)*")


def read_canonical(text: str, *, written: bool = False) -> Any:
    """The data in `text` when it is exactly what this writer writes (comment lines of
    printable ASCII, then `dump_yaml` of the data), else None. Such a file is read alike by
    PyYAML, Helm and Argo CD (tests/test_yaml_types.py); any other may not be. `written`: the
    text is known to be the writer's output (its content hash is that of a file tfgen built),
    so it is not written again to compare."""
    body = text[_COMMENT_LINES.match(text).end():]  # type: ignore[union-attr]
    # Any parser will do here, so the fastest reads: the text is accepted only when it is
    # exactly the writer's output for what was read, and the writer's output is read alike by
    # every parser, so then helm reads it as this parser did.
    try:
        data = yaml_rs.loads(body, parse_datetime=False)
    except yaml_rs.YAMLDecodeError:
        return None
    if written:
        return data
    try:
        return data if data is not None and dump_yaml(data) == body else None
    except (TypeError, ValueError):  # a value the writer never writes
        return None


@dataclass(frozen=True)
class GeneratedFile:
    """A file tfgen wants on disk: repository-relative POSIX path, its sources, its body."""

    path: str
    sources: tuple[str, ...]
    body: str

    @property
    def content(self) -> str:
        return header(self.sources) + self.body
