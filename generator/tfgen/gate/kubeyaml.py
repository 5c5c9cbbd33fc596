"""Reading a rendered document as Kubernetes reads it: YAML 1.1, duplicate keys refused.

yaml_rs, a Rust parser, reads rendered manifests 7.5x faster than PyYAML's C loader, but by
YAML 1.2's rules; a document holding a form the two versions read differently (found by the
scan below) is read by PyYAML, whose rules are those of go-yaml v2 under Kubernetes' decoder.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
import yaml_rs

from ..repo.yamlread import SafeLoader


class StrictLoader(SafeLoader):  # type: ignore[misc]
    """PyYAML refusing duplicate keys, as Kubernetes' strict decoding (and yaml_rs) does."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate mapping key: {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# Plain scalars YAML 1.1 (PyYAML; go-yaml v2, Kubernetes' decoder) reads otherwise than YAML 1.2
# (yaml_rs): yes/no/on/off, 0755, 1_000, 1:30, exponents, merge keys; a document holding one is
# parsed by PyYAML. A cheap scan finds candidates: a token at a line's start (a key, or a value
# alone on its line), after `: ` or `- `, or after `[`, `{`, `,` (spaced or not), that is a 1.1
# boolean word or starts with a digit, sign or dot. A line of a block scalar or of a multi-line
# plain scalar that looks like one sends its document to PyYAML too: slower, read the same. So
# does a merge key, and a tab anywhere: YAML 1.1 takes one as a separator where the scan looks
# for a space (`key: <tab>yes` is true there), and yaml_rs refuses some that PyYAML reads.
_TOKEN = (r"([-+.0-9][-+.0-9A-Za-z_:]{0,39}|[yYnN]|[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF)"
          r"(?= *(?:$|[,\]}#:]))")
# One pattern per place, each starting with literal text: Python's re finds those several
# times faster than a pattern starting with a set of characters (or `^`); the indentation is
# taken whole (`*+`), not given back space by space when no token follows.
_CANDIDATES = (re.compile(": " + _TOKEN, re.MULTILINE), re.compile("- " + _TOKEN, re.MULTILINE),
               re.compile("\n *+" + _TOKEN, re.MULTILINE))
_FIRST_LINE = re.compile(" *+" + _TOKEN, re.MULTILINE)
_IN_FLOW = re.compile(r"[\[,{] ?" + _TOKEN, re.MULTILINE)
_BOOL11 = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON",
           "off", "Off", "OFF"}
_NUMBER11 = re.compile(r"[-+]?0[0-7_]+|[-+]?0o[0-7]+|[-+]?[0-9._]*[0-9][eE][-+]?[0-9]+|"
                       r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?[0-9._]*_[0-9._]*")


def _yaml11_only(chunk: str) -> bool:
    if "<<" in chunk or "\t" in chunk:
        return True
    first = _FIRST_LINE.match(chunk)
    if first and _reads_otherwise(first.group(1)):
        return True
    flow = "[" in chunk or "{" in chunk
    for pattern in (*_CANDIDATES, _IN_FLOW) if flow else _CANDIDATES:
        for match in pattern.finditer(chunk):
            if _reads_otherwise(match.group(1)):
                return True
    return False


def _reads_otherwise(token: str) -> bool:
    if token.isdigit() and token[0] != "0":
        return False  # a decimal number: the same to both (most candidates: ports, sizes)
    return token in _BOOL11 or (token[0] in "+-.0123456789"
                                and _NUMBER11.fullmatch(token) is not None)


def load_document(chunk: str) -> Any:
    """One YAML document as Kubernetes reads it (YAML 1.1); ValueError or yaml.YAMLError when
    it is not valid YAML (duplicate keys included: Kubernetes' strict decoding refuses them)."""
    if not _yaml11_only(chunk):
        try:
            return yaml_rs.loads(chunk, parse_datetime=False)
        except yaml_rs.YAMLDecodeError as exc:
            # duplicate keys and syntax errors: Kubernetes' strict decoding refuses them too
            raise ValueError(str(exc)) from exc
    return yaml.load(chunk, Loader=StrictLoader)  # noqa: S506 - a safe loader
