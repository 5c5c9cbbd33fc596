"""A copy of an experiment's spec as a new run (`tfgen new --from`, `tfgen rerun`).

The text is copied (comments and layout kept) and everything that identifies the old run is
changed at the positions the text's nodes give: the name, and every string under `spec` that
contains the old name as a whole name (log and checkpoint directories, args, env values, the
Ingress path); images, the claim and the NAS server are kept. The copy always gets a log
directory of its own: the one asked for (`--log-dir`), else the old one renamed, else (it does
not name the old run) the old one with the new name added; every arg and env value that used
the old directory is pointed at the new one. Where the copy came from is recorded in an
annotation (`tfgen.io/copy-of`, or `tfgen.io/rerun-of` for a rerun), which `tfgen diff` reads
to show what the copy changes. Each field changed is returned (`Change`), to be shown.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from yaml.nodes import MappingNode, ScalarNode

from ..errors import OptionsError
from ..repo import chart, naming
from ..validate.experiment.logdir import LOG_DIR, repointer, uses_args_or_env
from ..validate.yaml.document import pointer_text
from .edit import Path, Scalar, TextEdit, compose, find, renamer, scalars

# Fields a copy keeps even when they contain the old name: what the run uses, not what it
# writes (images, the claim and NAS server it mounts).
KEPT_KEYS = frozenset({"image", "existingClaim", "server"})
EMPTY = '""'  # how an empty value is said, as YAML writes it (`queue: ""`)


@dataclass(frozen=True)
class Change:
    """One field the copy changed: where (`$.spec.args[0]`), from what (None: added), to what."""

    pointer: str
    old: str | None
    new: str

    def __str__(self) -> str:
        new = self.new or EMPTY
        if self.old is None:
            return f"{self.pointer}: set to {new}"
        return f"{self.pointer}: {self.old or EMPTY} -> {new}"


@dataclass(frozen=True)
class CopyRequest:
    """What a copy is asked for: the old and the new name, the fields the options replace
    (None: kept), the log directory (None: derived), and whether it is a rerun."""

    old: str
    new: str
    owner: str | None = None
    namespace: str | None = None
    image: str | None = None
    log_dir: str | None = None
    rerun: bool = False
    scheduling: Mapping[str, str] = field(default_factory=dict)  # spec.cluster, runtime, queue..

    @property
    def annotation(self) -> str:
        return naming.RERUN_ANNOTATION if self.rerun else naming.COPY_ANNOTATION


def _new_log_dir(root: Any, request: CopyRequest) -> tuple[str, str] | None:
    """(the old log directory as renamed, the copy's own), or None without a log directory."""
    node = find(root, LOG_DIR)
    if node is None or not isinstance(node.value, str) or not node.value:
        if request.log_dir:
            raise OptionsError("--log-dir: the spec has no tensorboard.logDir to replace; "
                               "set one in the copy instead")
        return None
    renamed = renamer(request.old, request.new)(node.value)
    if request.log_dir:
        return renamed, request.log_dir
    if renamed != node.value:
        return renamed, renamed
    return renamed, posixpath.join(node.value, request.new)


def _changed_value(scalar: Scalar, rename: Callable[[str], str],
                   repoint: Callable[[str], str] | None) -> str:
    value = rename(scalar.value)
    if repoint is not None and (scalar.path == LOG_DIR or uses_args_or_env(scalar.path)):
        value = repoint(value)
    return value


def _rename(edit: TextEdit, root: Any, request: CopyRequest, changes: list[Change]) -> None:
    """The name, every string under spec that names the old run (but KEPT_KEYS), the log
    directory and every arg and env value that used it."""
    rename = renamer(request.old, request.new)
    logs = _new_log_dir(root, request)
    repoint = repointer(*logs) if logs and logs[0] != logs[1] else None
    for scalar in scalars(root):
        if scalar.path == ("metadata", "name"):
            value = request.new
        elif scalar.path[:1] == ("spec",) and not KEPT_KEYS & set(scalar.path):
            value = _changed_value(scalar, rename, repoint)
        else:
            continue
        if value != scalar.value:
            edit.replace(scalar, value)
            changes.append(Change(pointer_text(scalar.path), scalar.value, value))


def _set(edit: TextEdit, mapping: Any, path: Path, value: str, shown: str,
         changes: list[Change]) -> None:
    node = find(mapping, path[-1:])
    old = str(node.value) if node is not None and isinstance(node.value, str) else None
    if old == value:
        return
    edit.set_in_mapping(mapping, str(path[-1]), value, shown)
    changes.append(Change(pointer_text(path), old, value))


def _set_options(edit: TextEdit, root: Any, request: CopyRequest, shown: str,
                 changes: list[Change]) -> None:
    """Make the copy active, and set what the options replace."""
    metadata, spec = find(root, ("metadata",)), find(root, ("spec",))
    if metadata is None or spec is None:
        raise OptionsError(f"{shown}: no metadata or spec to copy; fix it first "
                           f"(`tfgen validate {shown}`)")
    lifecycle = find(spec, ("lifecycle",))
    if lifecycle is not None and lifecycle.value == chart.RETIRED:
        _set(edit, spec, ("spec", "lifecycle"), chart.ACTIVE, shown, changes)
    for key, value in (("owner", request.owner), ("namespace", request.namespace)):
        if value:
            _set(edit, metadata, ("metadata", key), value, shown, changes)
    if request.image:
        _set(edit, spec, ("spec", "image"), request.image, shown, changes)
    for key, value in request.scheduling.items():
        _set(edit, spec, ("spec", key), value, shown, changes)


def _annotate(text: str, shown: str, request: CopyRequest, changes: list[Change]) -> str:
    """`text` with the annotation naming the source (an annotations mapping added first when
    the metadata has none)."""
    metadata = find(compose(text, shown), ("metadata",))
    assert metadata is not None  # checked by _set_options
    if find(metadata, ("annotations",)) is None:
        edit = TextEdit(text)
        edit.set_in_mapping(metadata, "annotations", "{}", shown, raw=True)
        text = edit.apply()
    annotations = find(compose(text, shown), ("metadata", "annotations"))
    assert annotations is not None
    edit = TextEdit(text)
    stale = _stale_source(annotations, request.annotation)
    if stale is not None:  # the source's own record of where it came from: now this one's
        key, value = stale
        edit.replace(key, request.annotation)
        edit.replace(value, request.old)
        changes.append(Change(pointer_text(key.path), f"{key.value}: {value.value}",
                              f"{request.annotation}: {request.old}"))
        return edit.apply()
    _set(edit, annotations, ("metadata", "annotations", request.annotation), request.old,
         shown, changes)
    return edit.apply()


def _stale_source(annotations: Any, wanted: str) -> tuple[Scalar, Scalar] | None:
    """The other source annotation (key and value scalars) when the mapping has it and not
    `wanted`: a copy of a rerun is a copy of the rerun, not a rerun of what it reran."""
    if not isinstance(annotations, MappingNode) or find(annotations, (wanted,)) is not None:
        return None
    for key, value in annotations.value:
        if (isinstance(key, ScalarNode) and key.value in naming.SOURCE_ANNOTATIONS
                and isinstance(value, ScalarNode)):
            path = ("metadata", "annotations")
            return (Scalar((*path, key.value), key.value, key.start_mark.index,
                           key.end_mark.index, key.style in (None, "")),
                    Scalar((*path, key.value), str(value.value), value.start_mark.index,
                           value.end_mark.index, value.style in (None, "")))
    return None


def copied_text(text: str, shown: str, request: CopyRequest) -> tuple[str, list[Change]]:
    """The text of spec `request.old` as spec `request.new`, and each field changed: renamed
    where it names the old run, with a log directory of its own, active, annotated with where
    it came from."""
    root = compose(text, shown)
    edit = TextEdit(text)
    changes: list[Change] = []
    _rename(edit, root, request, changes)
    _set_options(edit, root, request, shown, changes)
    return _annotate(edit.apply(), shown, request, changes), changes
