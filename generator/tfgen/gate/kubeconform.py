"""kubeconform as an optional second validator of rendered objects.

kubeconform (a Go binary) is not required; when it is on PATH, `tfgen check --validator
kubeconform|both` runs it over the rendered objects against exactly the schemas the builtin
validator uses. kubeconform wants one self-contained ("standalone") schema file per kind under
`<dir>/v<version>-standalone-strict/<kind>-<group>-<version>.json`, and never a reference it
would have to fetch, so `write_schema_layout` inlines the referenced Kubernetes definitions and
copies the project's TFJob schema into that layout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import EnvironmentProblem
from .manifests import ManifestValidator, RenderedObject, kind_suffix

INSTALL_HINT = (
    "kubeconform is optional: install it from its release page onto PATH, "
    "or use `--validator builtin` (as strict: same schemas, unknown fields rejected)"
)
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


def run(
    objects: list[RenderedObject], validator: ManifestValidator
) -> list[tuple[int, str]]:
    """Validate objects with kubeconform; returns (index into objects, message) per failure."""
    binary = require_kubeconform()
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
            index = int(Path(entry.get("filename", "0")).stem)
            failures.append((index, str(entry.get("msg", "invalid"))))
        return failures
