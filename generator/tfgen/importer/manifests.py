"""Reading the manifests to import: files, folders and `kubectl get -o yaml` Lists -> objects.

Input to `tfgen import` comes from anywhere (a tutorial, a cluster dump), so it is read like
any other input: bytes through the one safe reader (`repo.files.read_input`), YAML as
Kubernetes reads it (`gate.kubeyaml.StrictLoader`: go-yaml v2's booleans and numbers,
duplicate keys refused), with a bound on the values a file may expand to (aliases and merge
keys counted as the constructor would expand them, `gate.kubeyaml.expansion`), so a YAML
bomb is refused at once, in time linear in the file's text. Each object remembers where it
came from (file and line) and which of its fields the conversion used, so that every field
left over can be listed (`Manifest.leftovers`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import Node

from ..errors import InputError
from ..gate.documents.kubeyaml import StrictLoader, expansion
from ..gate.documents.manifests import KubeObject
from ..repo import chart, runtimes
from ..repo.files import read_input
from ..repo.layout import YAML_SUFFIXES

# Values one document (or one item of a List) may hold after aliases and merge keys are
# expanded. A spec needs a few hundred (the spec loader's bound is 10,000); a TFJob, volume or
# Deployment as `kubectl get -o yaml` prints it a few thousand. A document nests at most
# gate.kubeyaml.MAX_DEPTH levels, as a rendered one does.
MAX_NODES = 200_000
# `kubectl get -o yaml` of a busy namespace is tens of megabytes. A List is read item by item
# (each within MAX_NODES), and only the kinds an experiment is made of are kept whole; of the
# others (pods, events, config maps ...) only their names, to list what was left out.
MAX_BYTES = 128 << 20
# ... and all of a file's documents and items together (a List of many items that each alias
# one large anchor would otherwise construct it again for every item).
MAX_FILE_NODES = 20_000_000
# ... of which aliases and merge keys may repeat at most this many: what is constructed beyond
# the file's own text. `kubectl get -o yaml` writes no aliases; a hand-written file repeats a
# few lists. Without it, a List whose items alias one large anchor costs the constructor
# seconds per megabyte before MAX_FILE_NODES refuses it.
MAX_REPEATED = MAX_NODES
KEPT_KINDS = frozenset({*runtimes.JOB_KINDS, chart.VOLUME, chart.CLAIM, "Deployment"})

Path_ = tuple[str | int, ...]


class ManifestError(InputError):
    """Input that cannot be imported; the message names the file, line and what to do."""


# What the runtime makes of the spec (the chart writes it for a JobSet, the training operator
# makes it for a TFJob): tfgen writes it again from the spec; counted, never listed
# (`leftout.QUIET`).
RUNTIME_MADE = "what the runtime makes of the spec itself"


class _Loader(StrictLoader):  # type: ignore[misc,valid-type]
    """The input read as Kubernetes reads it (`gate.kubeyaml`), date-like text kept as text
    even where a tag asks for a timestamp, as Kubernetes reads an untyped field."""


class _ListLoader(_Loader, yaml.composer.Composer):  # type: ignore[misc,valid-type]
    """The same reading, able to compose one node at a time (the C parser only composes whole
    documents): a List's items are composed, checked and constructed one by one."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # type: ignore[call-arg]  # the C loader's, first in line
        self.forget_anchors()

    def forget_anchors(self) -> None:
        """A new document: its anchors, and the sizes measured of them, start empty."""
        self.anchors: dict[str, Node] = {}
        self.sizes: dict[int, int] = {}  # expanded size of each measured anchor, by id
        self.fresh: list[Node] = []  # anchors composed since the last measure

    # `anchor` is the anchor's name or None (PyYAML's stubs say otherwise)
    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        node = super().compose_sequence_node(anchor)
        if anchor is not None:
            self.fresh.append(node)
        return node

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        node = super().compose_mapping_node(anchor)
        if anchor is not None:
            self.fresh.append(node)
        return node

    def remember(self, sizes: dict[int, int]) -> None:
        """Keep the sizes just measured of the fresh anchors: an alias of one in a later item
        is measured at once (the anchors, and so their ids, live as long as the document)."""
        for node in self.fresh:
            if id(node) in sizes:
                self.sizes[id(node)] = sizes[id(node)]
        self.fresh = [node for node in self.fresh if id(node) not in self.sizes]


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: str(loader.construct_scalar(node))
)


def pointer(parts: Path_) -> str:
    """`spec.tfReplicaSpecs.Worker.template.spec.containers[0].image`: how a field is named."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass
class Manifest(KubeObject):
    """One Kubernetes object of the input, where it came from and which fields were used."""

    shown: str  # the file, as messages name it
    line: int
    used: set[Path_] = field(default_factory=set)
    why: dict[Path_, str] = field(default_factory=dict)  # reasons for fields left out on purpose

    @property
    def where(self) -> str:
        return f"{self.shown}:{self.line}:1"

    def get(self, *parts: str | int) -> Any:
        """The value at `parts` (None when absent), without marking it used."""
        value: Any = self.doc
        for part in parts:
            if isinstance(part, int):
                if not isinstance(value, list) or part >= len(value):
                    return None
            elif not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def _typed(self, expected: type, what: str, parts: tuple[str | int, ...]) -> Any:
        value = self.get(*parts)
        if value is None:
            return expected()
        if not isinstance(value, expected):
            raise ManifestError(
                f"{self.where}: {self.ref} {pointer(parts)}: expected {what}, found "
                f"{type(value).__name__} {value!r:.40}; Kubernetes would refuse it too")
        return value

    def mapping(self, *parts: str | int) -> dict[str, Any]:
        """The mapping at `parts` ({} when absent); ManifestError when it is something else."""
        return self._typed(dict, "a mapping", parts)  # type: ignore[no-any-return]

    def sequence(self, *parts: str | int) -> list[Any]:
        """The list at `parts` ([] when absent); ManifestError when it is something else."""
        return self._typed(list, "a list", parts)  # type: ignore[no-any-return]

    def take(self, *parts: str | int) -> Any:
        """The value at `parts`, marked as carried into the spec (with everything below it)."""
        value = self.get(*parts)
        if value is not None:
            self.used.add(tuple(parts))
        return value

    def leave_out(self, parts: Path_, why: str) -> None:
        """The field at `parts` is not imported, for the reason `why` (`leftout` says it)."""
        self.why[parts] = why

    def runtime_made(self, parts: Path_) -> None:
        """The field at `parts` is what the runtime makes: left out quietly."""
        self.leave_out(parts, RUNTIME_MADE)

    def refused(self, parts: Path_, what: str) -> ManifestError:
        """The error refusing this object at the field `parts` (the object itself for ())."""
        at = f" {pointer(parts)}" if parts else ""
        return ManifestError(f"{self.where}: {self.ref}{at}: {what}")

    def leftovers(self) -> Iterator[tuple[Path_, Any]]:
        """(path, value) of every leaf the conversion did not use; empty maps and lists count
        as leaves, so that `nodeSelector: {}` is said too."""
        yield from self._walk(self.doc, ())

    def _walk(self, value: Any, parts: Path_) -> Iterator[tuple[Path_, Any]]:
        if parts in self.used:
            return  # used with everything below it (the walk stops at the first used prefix)
        if isinstance(value, dict) and value:
            for key, item in value.items():
                yield from self._walk(item, (*parts, key))
        elif isinstance(value, list) and value:
            for index, item in enumerate(value):
                yield from self._walk(item, (*parts, index))
        else:
            yield parts, value


def _expansion_refused(document: Node, shown: str, what: str) -> ManifestError:
    mark = document.start_mark
    return ManifestError(
        f"{shown}:{mark.line + 1}:{mark.column + 1}: {what} (anchors and merge keys that "
        "expand exponentially are refused; export the objects again without them)")


@dataclass
class _Budget:
    """What the rest of one file may hold: values, and values that aliases repeat."""

    values: int = MAX_FILE_NODES
    repeated: int = MAX_REPEATED


def _checked(node: Node, shown: str, budget: _Budget, loader: _ListLoader) -> Node:
    """`node` when it expands to at most MAX_NODES values and the file's `budget` holds them
    and what its aliases repeat, else ManifestError."""
    try:
        size, sizes = expansion(node, loader.sizes)
    except ValueError as exc:  # nested too deeply, or an alias that holds itself
        raise _expansion_refused(node, shown, str(exc)) from None
    loader.remember(sizes)
    budget.values -= size
    budget.repeated -= size - len(sizes)  # walked once each: the values the text holds
    if size > MAX_NODES or budget.values < 0:
        limit = f"{MAX_NODES:,}" if size > MAX_NODES else f"{MAX_FILE_NODES:,} in the file"
        raise _expansion_refused(node, shown, f"more than {limit} values after expanding "
                                 "YAML aliases and merge keys")
    if budget.repeated < 0:
        raise _expansion_refused(node, shown, f"more than {MAX_REPEATED:,} values after "
                                 "expanding YAML aliases and merge keys are copies they make")
    return node


def _documents(text: str, shown: str) -> Iterator[tuple[Any, int]]:
    """(data, line) of each document of one file, and of each item of a List document as it
    is read (a List is never held whole)."""
    loader: Any = _ListLoader(text)
    budget = _Budget()
    try:
        loader.get_event()  # the stream's start
        while not loader.check_event(yaml.StreamEndEvent):
            loader.get_event()  # the document's start
            if loader.check_event(yaml.MappingStartEvent):
                yield from _mapping_document(loader, shown, budget)
            else:
                node = _checked(loader.compose_node(None, None), shown, budget, loader)
                yield loader.construct_document(node), node.start_mark.line + 1
            loader.get_event()  # the document's end
            loader.forget_anchors()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        raise ManifestError(f"{where}: invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{shown}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ManifestError(f"{shown}: YAML nested too deeply to read") from None
    finally:
        loader.dispose()


def _mapping_document(loader: Any, shown: str, budget: _Budget
                      ) -> Iterator[tuple[Any, int]]:
    """A document that is a mapping: its `items` list streamed one item at a time (then it
    must be a List), else the whole mapping."""
    start = loader.get_event()
    pairs: list[tuple[Node, Node]] = []
    streamed = False
    while not loader.check_event(yaml.MappingEndEvent):
        key = loader.compose_node(None, None)
        if (isinstance(key, yaml.ScalarNode) and key.value == "items"
                and loader.check_event(yaml.SequenceStartEvent)):
            streamed = True
            loader.get_event()
            while not loader.check_event(yaml.SequenceEndEvent):
                node = _checked(loader.compose_node(None, None), shown, budget, loader)
                yield loader.construct_document(node), node.start_mark.line + 1
            loader.get_event()
        else:
            pairs.append((key, loader.compose_node(None, None)))
    end = loader.get_event()
    node = _checked(yaml.MappingNode("tag:yaml.org,2002:map", pairs, start.start_mark,
                                     end.end_mark, flow_style=start.flow_style), shown, budget,
                    loader)
    data = loader.construct_document(node)
    line = start.start_mark.line + 1
    if not streamed:
        yield data, line
    elif not str(data.get("kind", "")).endswith("List") if isinstance(data, dict) else True:
        raise ManifestError(f"{shown}:{line}:1: a document with a list of items that is no "
                            "List; give tfgen import the objects or a List of them")


def _objects(data: Any, shown: str, line: int) -> Iterator[Manifest]:
    """The Kubernetes objects of one document: itself, or the items of a List."""
    if data is None:
        return  # an empty document (a trailing `---`), as kubectl skips it
    kind, metadata = _identity(data, shown, line)
    if kind not in KEPT_KINDS:  # listed as left out: its identity is all that is kept
        meta: dict[str, Any] = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
        if chart.rendered_by_chart(metadata.get("labels")):  # tfgen's own rendering
            meta["labels"] = dict([chart.PART_OF])
        data = {"apiVersion": data["apiVersion"], "kind": kind, "metadata": meta}
    yield Manifest(data, shown, line)


def _identity(data: Any, shown: str, line: int) -> tuple[str, dict[str, Any]]:
    """A document's kind and metadata, when it is one Kubernetes object with a name;
    ManifestError otherwise."""
    if not isinstance(data, dict) or not data.get("kind") or not data.get("apiVersion"):
        raise ManifestError(
            f"{shown}:{line}:1: not a Kubernetes object (a mapping with apiVersion and kind); "
            "give tfgen import the training job, PersistentVolume(Claim) and Deployment "
            "manifests")
    kind = str(data["kind"])
    if kind.endswith("List"):
        raise ManifestError(f"{shown}:{line}:1: a {kind} without a list of items")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(metadata, dict) or not isinstance(name, str) or not name:
        raise ManifestError(f"{shown}:{line}:1: {kind} has no metadata.name")
    return kind, metadata


def _files(path: Path) -> list[tuple[Path, Path | None]]:
    """(file, the folder it must not leave) for a given path: a file, or a folder's YAML."""
    if path.is_dir():
        found = sorted(entry for entry in path.iterdir()
                       if entry.suffix.lower() in (*YAML_SUFFIXES, ".json"))
        if not found:
            raise ManifestError(f"{path}: a folder without .yaml, .yml or .json files")
        return [(entry, path) for entry in found]
    return [(path, None)]


def read_manifests(paths: Sequence[Path | str]) -> list[Manifest]:
    """Every object in `paths` (files, folders of files, Lists), in input order."""
    objects: list[Manifest] = []
    for given in paths:
        for path, folder in _files(Path(given)):
            shown = os.path.normpath(str(path))
            raw = read_input(path, shown, root=folder, limit=MAX_BYTES)
            if b"\x00" in raw:
                raise ManifestError(f"{shown}: a binary file, not YAML (it contains NUL bytes)")
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise ManifestError(f"{shown}: not UTF-8 text") from None
            for data, line in _documents(text, shown):
                objects.extend(_objects(data, shown, line))
    if not objects:
        raise ManifestError("no Kubernetes objects in the input")
    return objects
