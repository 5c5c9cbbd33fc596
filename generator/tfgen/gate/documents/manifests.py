"""Strict validation of rendered Kubernetes objects.

Every object `helm template` produces (and every Argo CD object in argo/) is checked against a
JSON Schema that rejects unknown fields: the Kubernetes schemas of the configured Kubernetes
version as shipped by the `kubernetes-validate` package (its `-strict` variant), and the
schemas in schemas/ for the kinds Kubernetes does not define (TFJob, JobSet, the Argo CD
kinds), converted from their upstream CRDs by scripts/crd_schemas.py. Validators are compiled
once per apiVersion/kind with jsonschema-rs and reused: a compiled validator checks an object
in microseconds, where building one per object (what `kubernetes_validate.validate()` does)
costs milliseconds. Results are `Problem`s whose pointer reads `Kind/name $.json.path`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml

from ...errors import EnvironmentProblem, InputError
from ...problems import Problem
from ...repo import resources
from .kubeyaml import load_document, reading_problem

# helm's comment above each document, naming the template it came from
_SOURCE_LINE = re.compile(r"^# Source: (.+)$\n?", re.MULTILINE)


@dataclass
class KubeObject:
    """A Kubernetes object's document and what every reader asks of it: kind and name."""

    doc: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.doc.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.doc.get("apiVersion", ""))

    @property
    def name(self) -> str:
        meta = self.doc.get("metadata") or {}
        return str(meta.get("name", "")) if isinstance(meta, dict) else ""

    @property
    def namespace(self) -> str:
        meta = self.doc.get("metadata") or {}
        return str(meta.get("namespace", "") or "") if isinstance(meta, dict) else ""

    @property
    def ref(self) -> str:
        """`Kind/name`, how people name an object (`kubectl get TFJob/mnist`)."""
        return f"{self.kind}/{self.name}"


ObjectKey = tuple[str, str, str, str]  # group, kind, namespace, name


def object_key(group: str, kind: str, namespace: str, name: str) -> ObjectKey:
    """An object's identity. A check holds every experiment's (seventy thousand at ten
    thousand experiments), and groups, kinds and namespaces repeat: one string each."""
    return (sys.intern(group), sys.intern(kind), sys.intern(namespace), name)


@dataclass
class RenderedObject(KubeObject):
    """One Kubernetes object from a rendered manifest, with the template that produced it."""

    source: str = ""  # `# Source:` path helm printed, e.g. tfjob-experiment/templates/pv.yaml
    # The characters of the document's text when it writes out every value the object holds
    # (no alias repeats one, no tag makes one), else None: what bounds the object's size as
    # JSON (`policy.applied_size_problems`).
    text_length: int | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> ObjectKey:
        """Identity of the object in a cluster: apiVersion group, kind, namespace, name."""
        return object_key(self.api_version.rpartition("/")[0], self.kind, self.namespace,
                          self.name)

    def problem(self, path: str, pointer: str, message: str, hint: str = "") -> Problem:
        """A problem with this object, reported in the file a person should open (`path`)."""
        return Problem(path=path, pointer=f"{self.ref} {pointer}", message=message, hint=hint)


# A YAML document separator: a `---` line (blanks after it allowed), the last line or not.
DOCUMENT_SEPARATOR = re.compile(r"^---[ \t]*(?:\n|\Z)", re.MULTILINE)


def documents(text: str) -> Iterator[tuple[str, str]]:
    """(template, YAML text) of each document of `helm template` output: the `# Source:`
    path helm printed above it, and the document without that line, as helm wrote it."""
    odd_breaks = any(odd in text for odd in _ODD_BREAKS)  # rare; only then is each one asked
    for chunk in split_at_separators(text, DOCUMENT_SEPARATOR):
        if odd_breaks and any(odd in chunk for odd in _ODD_BREAKS):
            source, body = _source_and_body_by_lines(chunk)
        else:  # the usual case, without a Python loop over its lines
            match = _SOURCE_LINE.search(chunk)
            source = match.group(1).strip() if match else ""
            body = chunk[:match.start()] + chunk[match.end():] if match else chunk
            if body and not body.endswith("\n"):
                body += "\n"
        if body.strip():
            yield source, body


# Line breaks other than \n that str.splitlines() also splits at.
_ODD_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Python's re finds this literal text twice as fast as str.find does, among a manifest's many
# single dashes.
_DASHES = re.compile("---")


def split_at_separators(text: str, separator: re.Pattern[str]) -> list[str]:
    """`separator.split(text)` for a pattern that matches only at a line start and begins
    with `---`, tried at each `---`: a regex anchored at every line start costs more than
    parsing the documents does. The `---`s are found without overlaps, which misses none at a
    line start (one overlapping another follows a dash, not a line break)."""
    chunks, start = [], 0
    for dashes in _DASHES.finditer(text):
        at = dashes.start()
        if at >= start and (at == 0 or text[at - 1] == "\n"):
            match = separator.match(text, at)
            if match:
                chunks.append(text[start:at])
                start = match.end()
    chunks.append(text[start:])
    return chunks


def _source_and_body_by_lines(chunk: str) -> tuple[str, str]:
    source, lines = "", []
    for line in chunk.splitlines():
        match = _SOURCE_LINE.match(line)
        if match and not source:
            source = match.group(1).strip()
        else:
            lines.append(line + "\n")
    return source, "".join(lines)


def parse_manifest(text: str, helm_output: bool = True) -> list[RenderedObject]:
    """Split `helm template` output into objects, keeping each one's `# Source:` template.

    Empty documents (templates whose `if` was false) are dropped, as kubectl and Argo CD do.
    A message names a document's template. `helm_output` False: a committed file of documents
    (argo/*.yaml), whose `# Source:` comment is tfgen's header, not a template: the documents
    are read whole, and a message names no template (the problem names the file).
    """
    objects: list[RenderedObject] = []
    chunks = (documents(text) if helm_output else
              (("", chunk) for chunk in split_at_separators(text, DOCUMENT_SEPARATOR)
               if chunk.strip()))
    for source, body in chunks:
        where = f"{source or 'rendered manifest'}: " if helm_output else ""
        try:
            doc = load_document(body)
        except (yaml.YAMLError, ValueError) as exc:
            raise InputError(f"{where}not valid YAML: {reading_problem(exc)}") from exc
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{where}a document is not a mapping")
        written_out = "*" not in body and "!" not in body  # no alias, no tag
        objects.append(RenderedObject(doc=doc, source=source,
                                      text_length=len(body) if written_out else None))
    return objects


def json_pointer(path: Iterable[Any]) -> str:
    """`$.spec.containers[0].name` from a jsonschema instance path."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part))}]"
    return out


def schema_dir_for(kube_version: str, root: Path | None = None) -> Path:
    """The strict schema folder for a Kubernetes version (`1.30` or `v1.30.2`)."""
    root = root or resources.kubernetes_schema_root()
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", kube_version.strip())
    versions = resources.kubernetes_versions(root)
    if not match:
        raise InputError(
            f"kubernetesVersion {kube_version!r} is not a version (write it like \"1.30\")"
        )
    wanted = f"{match.group(1)}.{match.group(2)}"
    if wanted not in versions:
        raise EnvironmentProblem(
            f"no Kubernetes schemas for {wanted} in kubernetes-validate (it ships "
            f"{versions[0]} to {versions[-1]}; upgrade it with `python -m pip install "
            "--upgrade kubernetes-validate` or pick one of those)"
        )
    return root / f"v{wanted}.0-local-strict"


def kind_suffix(api_version: str) -> str:
    """Filename suffix for a kind: `-v1`, `-apps-v1`, `-kubeflow-v1` (kubernetes-validate's and
    kubeconform's naming: first label of the group, then the version)."""
    group, _, version = api_version.rpartition("/")
    if not group:
        return f"-{version.lower()}"
    return f"-{group.split('.')[0].lower()}-{version.lower()}"


@dataclass
class ManifestValidator:
    """Validates objects strictly; one compiled validator per apiVersion/kind, built on demand.

    `kube_version` selects the Kubernetes schemas; `schema_dir` is the project's schemas/
    folder, whose CRD schemas (TFJob, JobSet, the Argo CD kinds; converted from the upstream
    CRDs) serve the kinds Kubernetes does not define.
    """

    kube_version: str
    schema_dir: Path
    _compiled: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    @cached_property
    def kube_dir(self) -> Path:
        return schema_dir_for(self.kube_version)

    @cached_property
    def _registry(self) -> Any:
        # The CRD schemas refer to the Kubernetes definitions (ObjectMeta) by their `$id`, so
        # every schema is compiled against this one registry.
        definitions = json.loads((self.kube_dir / "_definitions.json").read_text())
        return jsonschema_rs.Registry([(definitions["$id"], definitions)], retriever=_offline)

    def schema_file(self, api_version: str, kind: str) -> Path | None:
        """The schema file for a kind, or None when neither Kubernetes nor the project has one."""
        crd = resources.crd_schema(api_version, kind, self.schema_dir)
        if crd is not None:
            return crd
        candidate = self.kube_dir / f"{kind.lower()}{kind_suffix(api_version)}.json"
        return candidate if candidate.is_file() else None

    def _validator(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key not in self._compiled:
            path = self.schema_file(api_version, kind)
            if path is None:
                self._compiled[key] = None
            else:
                schema = json.loads(path.read_text(encoding="utf-8"))
                try:
                    self._compiled[key] = jsonschema_rs.validator_for(
                        schema, registry=self._registry, retriever=_offline
                    )
                except (ValueError, jsonschema_rs.ValidationError) as exc:
                    raise InputError(f"{path}: cannot compile schema: "
                                     f"{str(exc).splitlines()[0]}") from exc
        return self._compiled[key]

    def errors(self, doc: dict[str, Any]) -> list[tuple[str, str]]:
        """(JSON pointer, message) for every schema violation of one object."""
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return [("$", "object has no apiVersion/kind (every document must name its type)")]
        validator = self._validator(api_version, kind)
        if validator is None:
            return [
                (
                    "$.kind",
                    f"no schema for {api_version} {kind} in Kubernetes {self.kube_version} "
                    f"or in schemas/ (a typo in kind/apiVersion, or a kind this cluster "
                    f"does not serve)",
                )
            ]
        if validator.is_valid(doc):  # the usual case: no error to collect
            return []
        found = []
        for error in validator.iter_errors(doc):
            found.append((json_pointer(error.instance_path), _tidy(error.message)))
        return sorted(set(found))

    def problems(self, obj: RenderedObject, path: str) -> list[Problem]:
        """Schema violations of one object as Problems located at `path` (the file to open)."""
        return [obj.problem(path, pointer, message, schema_hint(message))
                for pointer, message in self.errors(obj.doc)]


def _offline(uri: str) -> Any:
    """Schemas are never fetched: validation must work without network, the same every time."""
    raise ValueError(f"schema reference {uri} is not available offline")


# The grammar of a Kubernetes quantity, as the CRDs' schemas write it (resources, sizes).
QUANTITY_PATTERN = ("^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$")
QUANTITY_WORDS = "is not a Kubernetes quantity (such as 2, 500m or 4Gi)"


def in_words(message: str) -> str:
    """A schema error with the quantity pattern said in words (the builtin validator's
    `"x" does not match "<pattern>"`, kubeconform's `'x' does not match pattern '<pattern>'`)."""
    if QUANTITY_PATTERN in message and " does not match " in message:
        return f"{message.split(' does not match ', 1)[0]} {QUANTITY_WORDS}"
    return message


def _tidy(message: str) -> str:
    # jsonschema-rs echoes whole sub-documents in some messages; keep a line readable.
    message = in_words(message)
    return message if len(message) <= 300 else message[:297] + "..."


def schema_hint(message: str) -> str:
    """What to do about a schema error, in the builtin validator's words or kubeconform's."""
    lowered = message.lower()
    if "additional properties" in lowered:
        return "remove the field or fix its spelling; Kubernetes rejects unknown fields"
    if "is a required property" in lowered or "missing propert" in lowered:
        return "add the field"
    return ""
