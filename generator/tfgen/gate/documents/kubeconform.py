"""kubeconform as a second validator of rendered objects.

kubeconform (a Go binary) is not required to use tfgen; when it is on PATH (or named by
`$TFGEN_KUBECONFORM`), `tfgen check --validator kubeconform|both` runs it over the rendered
objects against exactly the schemas the builtin validator uses (tfgen's own test suite always
does, with the pinned kubeconform `make dev` builds). Its findings are told as tfgen tells the
builtin validator's: the object, a `$.pointer` into it and the innermost error, never
kubeconform's text with its temporary paths.

kubeconform wants one self-contained ("standalone") schema file per kind under
`<dir>/v<version>-standalone-strict/<kind>-<group>-<version>.json`, and never a reference it
would have to fetch, so `write_schema_layout` inlines the referenced Kubernetes definitions
into the Kubernetes kinds' and the CRD kinds' schemas.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import EnvironmentProblem
from .manifests import ManifestValidator, RenderedObject, in_words, json_pointer, kind_suffix

INSTALL_HINT = (
    "kubeconform is optional: put it on PATH or name it in $TFGEN_KUBECONFORM, "
    "or use `--validator builtin` (as strict: same schemas, unknown fields rejected)"
)
# kubeconform's text of a failed validation: `... - at '/spec/x': <what is wrong> - at ...`
_AT = re.compile(r"\s*- at '((?:[^'\\]|\\.)*)': ")
_ENCLOSING = "validation failed"  # what it says of an object holding a failing field
_NO_SCHEMA = "could not find schema for"
# What it says of metadata it cannot read (before any schema): Go's JSON decoder's words.
_UNREADABLE = re.compile(r"cannot unmarshal (\w+) into Go struct field \.([\w.]+) of type (\w+)")
_K8S_REF = "/api/_definitions.json#/$defs/"


def find_kubeconform() -> str | None:
    """Path of kubeconform (`$TFGEN_KUBECONFORM` or PATH), None when absent."""
    return os.environ.get("TFGEN_KUBECONFORM") or shutil.which("kubeconform")


def require_kubeconform() -> str:
    found = find_kubeconform()
    if not found:
        raise EnvironmentProblem(f"kubeconform not found on PATH; {INSTALL_HINT}")
    return found


def _is_kubernetes_ref(ref: str) -> bool:
    return ref.split("#", 1)[0].endswith("/api/_definitions.json")


def _standalone(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Copy of a schema with every referenced Kubernetes definition inlined in `$defs`.

    References into the Kubernetes definitions (`/api/_definitions.json#/$defs/X`, relative or
    absolute) become local `#/$defs/X`; the schema's own local references stay as they are.
    """
    needed: set[str] = set()
    pending: list[str] = []

    def rewrite(node: Any, inside_k8s: bool) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and "#/$defs/" in value and (
                    inside_k8s or _is_kubernetes_ref(value)
                ):
                    name = value.split("#/$defs/", 1)[1]
                    if name not in needed:
                        needed.add(name)
                        pending.append(name)
                    out[key] = f"#/$defs/{name}"
                    continue
                out[key] = rewrite(value, inside_k8s)
            return out
        if isinstance(node, list):
            return [rewrite(item, inside_k8s) for item in node]
        return node

    top = rewrite({k: v for k, v in schema.items() if k != "$id"}, False)
    defs: dict[str, Any] = dict(top.get("$defs") or {})
    while pending:
        name = pending.pop()
        if name in defs:
            raise ValueError(f"definition {name} exists in the schema and in Kubernetes")
        # inside the Kubernetes definitions every `#/$defs/` points at a Kubernetes definition
        defs[name] = rewrite(definitions[name], True)
    if defs:
        top["$defs"] = defs
    return top


def layout_dirname(kube_version: str) -> str:
    """`v1.30.0-standalone-strict`: what kubeconform's `{{ .NormalizedKubernetesVersion }}-
    standalone{{ .StrictSuffix }}` expands to for `-kubernetes-version 1.30.0 -strict`."""
    return f"v{kube_version}.0-standalone-strict"


def write_schema_layout(
    validator: ManifestValidator, kinds: Iterable[tuple[str, str]], dest: Path
) -> Path:
    """Write standalone schemas for (apiVersion, kind) pairs under `dest`; returns the folder
    that holds the files. Kinds without a schema are skipped (kubeconform reports them)."""
    folder = dest / layout_dirname(validator.kube_version)
    folder.mkdir(parents=True, exist_ok=True)
    definitions = json.loads((validator.kube_dir / "_definitions.json").read_text())["$defs"]
    for api_version, kind in sorted(set(kinds)):
        source = validator.schema_file(api_version, kind)
        if source is None:
            continue
        schema = _standalone(json.loads(source.read_text(encoding="utf-8")), definitions)
        target = folder / f"{kind.lower()}{kind_suffix(api_version)}.json"
        target.write_text(json.dumps(schema, indent=1), encoding="utf-8")
    return folder


def schema_location(dest: Path) -> str:
    """The `-schema-location` template that finds files written by `write_schema_layout`."""
    return (
        f"{dest}/{{{{ .NormalizedKubernetesVersion }}}}-standalone{{{{ .StrictSuffix }}}}"
        f"/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"
    )


def _segments(pointer: str, doc: Any) -> list[str | int]:
    """A JSON pointer's segments, list positions as numbers (found by walking `doc`)."""
    out: list[str | int] = []
    node = doc
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit():
            out.append(int(part))
            node = node[int(part)] if int(part) < len(node) else None
        else:
            out.append(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def errors_in(message: str, doc: dict[str, Any], scratch: str) -> list[tuple[str, str]]:
    """(`$.pointer`, what is wrong) of each field kubeconform's message about one object finds
    wrong, its innermost errors there joined; a message of another form whole, without the
    `scratch` folder's path (a kind without a schema points at `$.kind`, as builtin's does)."""
    leaves = _field_errors(message, doc)
    if leaves:
        return [(pointer, "; ".join(texts)) for pointer, texts in sorted(leaves.items())]
    unreadable = _UNREADABLE.search(message)
    if unreadable:
        got, field, want = unreadable.groups()
        pointer = json_pointer(part[:1].lower() + part[1:] for part in field.split("."))
        return [(pointer, f"got {got}, want {'object' if want == 'struct' else want}")]
    text = message.replace(f"file://{scratch}", "").replace(scratch, "").strip()
    return [("$.kind" if text.startswith(_NO_SCHEMA) else "$", text)]


def _field_errors(message: str, doc: dict[str, Any]) -> dict[str, list[str]]:
    """`$.pointer` -> what kubeconform's message finds wrong there, each said once; a field
    said only to hold failing fields (`validation failed`) is left to the fields it holds."""
    parts = _AT.split(message)
    found = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    where = [path for path, _ in found]
    leaves: dict[str, list[str]] = {}
    for path, text in found:
        if text != _ENCLOSING or not any(q.startswith(f"{path}/") for q in where):
            said = leaves.setdefault(json_pointer(_segments(path, doc)), [])
            if in_words(text) not in said:
                said.append(in_words(text))
    return leaves


def _index(entry: dict[str, Any], scratch: str) -> int:
    """The object a report entry is about (its file is named by its position)."""
    stem = Path(str(entry.get("filename", ""))).stem
    if not stem.isdigit():
        text = str(entry.get("msg", "")).replace(scratch, "")
        raise EnvironmentProblem(f"kubeconform failed on no object of tfgen's: {text}")
    return int(stem)


def run(
    objects: list[RenderedObject], validator: ManifestValidator
) -> list[tuple[int, str, str]]:
    """Validate objects with kubeconform; returns (index into objects, `$.pointer`, message)
    per error."""
    binary = require_kubeconform()
    if not objects:  # nothing rendered: nothing to validate (kubeconform would read no folder)
        return []
    with tempfile.TemporaryDirectory(prefix="tfgen-kubeconform-") as tmp:
        root = Path(tmp)
        write_schema_layout(validator, {(o.api_version, o.kind) for o in objects}, root / "s")
        files = []
        for index, obj in enumerate(objects):
            path = root / "in" / f"{index:06d}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(obj.doc), encoding="utf-8")
            files.append(path)
        cmd = [
            binary, "-strict", "-summary=false", "-output", "json",
            "-kubernetes-version", f"{validator.kube_version}.0",
            "-schema-location", schema_location(root / "s"),
            str(root / "in"),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        try:
            report = json.loads(result.stdout or "{}")
        except ValueError as exc:
            raise EnvironmentProblem(
                f"kubeconform printed no JSON report: {result.stderr.strip()}"
            ) from exc
        failures = []
        for entry in report.get("resources", []):
            if entry.get("status") in ("statusValid", "statusSkipped"):
                continue
            index = _index(entry, tmp)
            failures += [(index, pointer, text) for pointer, text in
                         errors_in(str(entry.get("msg", "invalid")), objects[index].doc, tmp)]
        return failures
