"""Helm values as helm reads, merges and compares them, mirrored by the batch renderer: a
YAML file of a chart loaded (`load_yaml_file`), one in the writer's canonical form recognised
(`canonical_values`), successive `-f` files merged (`merge_values`, `files_merged`), user
values coalesced over chart defaults (`coalesce`), and values written for a strict comparison
of two readers (`typed`).

Why a batch may hand helm the values as tfgen read them, and not the committed files that
Argo CD gives helm (go-yaml v2, YAML 1.1 rules: an unquoted `y` is a boolean there and a
string here): only a values file in the writer's canonical form is batched, comment lines of
printable ASCII (the header), then exactly `dump_yaml` of what was read from it
(`canonical_values`). The writer quotes everything the two parsers could read differently, and
tests/test_yaml_types.py shows helm reading such files exactly as written, so for these the
values are the same either way. Any other values file (edited by hand, written by another
tool) is rendered alone by a plain `helm template --values <file>` with helm's own schema
check: the verdict and message Argo CD's repo-server would give. tests/test_batch.py compares
the two ways byte for byte. The chart's own values.yaml is hand-written: tfgen reads it by
go-yaml's rules (`load_yaml_file`), and before a chart is batched helm is asked once (per chart
and helm version, then cached) what its defaults are; if helm reads them otherwise than tfgen
does (a `!!binary` tag, a key that is not text), that chart's experiments are rendered one by
one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ...errors import InputError
from ...render.generated import read_canonical
from ...repo.keys import content_hash
from ..documents.kubeyaml import GoYamlLoader


def load_yaml_file(path: Path) -> Any:
    """A YAML file as helm reads it (a chart's values.yaml or Chart.yaml, a values file):
    go-yaml v2's rules (`kubeyaml.GoYamlLoader`); an empty file is an empty mapping."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=GoYamlLoader)  # noqa: S506
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    return data if data is not None else {}


def canonical_values(text: str, *, written: bool = False) -> dict[str, Any] | None:
    """The values of a file in the writer's canonical form (helm reads it as tfgen does: see the
    module docstring), else None; `written` as in `read_canonical`."""
    data = read_canonical(text, written=written)
    return data if isinstance(data, dict) and data else None


def files_merged(paths: Sequence[Path], written: Mapping[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """Value files merged as helm merges successive `-f` files, or None when one is not in
    the writer's canonical form: helm must read that one itself. `written`: the content
    hashes of files known to be the writer's output, by path (`BatchRenderer.written`)."""
    merged: dict[str, Any] = {}
    for path in paths:
        try:
            raw = path.read_bytes()
            digest = written.get(str(path)) if written else None
            known = digest is not None and digest == content_hash(raw)
            data = canonical_values(raw.decode("utf-8"), written=known)
        except (OSError, UnicodeDecodeError):
            data = None  # helm says what is wrong with the file
        if data is None:
            return None
        merged = merge_values(merged, data)
    return merged


def typed(data: Any) -> str:
    """`data` as JSON with every number a float (helm's values hold float64 only), booleans
    kept apart from numbers and null map entries left out (helm drops them from a chart's
    defaults), for a strict comparison of what two parsers read."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): walk(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    return json.dumps(walk(data), sort_keys=True, default=str)


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of successive `-f` files: maps merge, anything else is replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = value
    return out


def coalesce(values: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of user values over chart defaults: a user `null` deletes the default."""
    out = dict(values)
    for key, default in defaults.items():
        if key not in out:
            out[key] = copy.deepcopy(default)
        elif out[key] is None:
            del out[key]
        elif isinstance(out[key], dict) and isinstance(default, dict):
            out[key] = coalesce(out[key], default)
    return out
