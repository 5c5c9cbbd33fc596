"""The umbrella chart: many experiments in one `helm template` (see gate/helm/batch.py).

An umbrella chart holds one aliased dependency per experiment (`e00000`, `e00001`, ...), all
pointing at one copy of the chart whose own defaults are emptied (the batch merges each
experiment's values over them itself) and whose values schema admits the `global` key Helm adds
to every subchart. helm's output is split back per alias by its `# Source:` comments, rewritten
to what a per-experiment render prints.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema_rs

from ...errors import InputError
from ...render.generated import dump_yaml
from ...repo.keys import path_digest
from ..documents.manifests import DOCUMENT_SEPARATOR, split_at_separators
from .values import load_yaml_file

UMBRELLA = "tfgen-batch"
# Templates that read these would render differently per release; such a chart is rendered one
# experiment per helm process (correct, only slower).
_RELEASE_BOUND = re.compile(r"\.Release\.(Name|Namespace)\b|\.Chart\.Name\b")
_TEMPLATE_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
_ALIAS_IN_ERROR = re.compile(r"(?:charts/|^|\s)e(\d{5})(?:/|:)", re.MULTILINE)
# helm's separator above each template's output: a document separator that a `# Source:` line
# follows (a `---` line in a template's own output is not one: no `# Source:` follows it)
_DOC_SPLIT = re.compile(DOCUMENT_SEPARATOR.pattern + r"(?=# Source: )", DOCUMENT_SEPARATOR.flags)


def alias(index: int) -> str:
    """The umbrella's name for its `index`-th experiment."""
    return f"e{index:05d}"


def aliases_named(error: str) -> set[int]:
    """The experiments (by index) a helm error names: `charts/e00042/templates/...` for a
    template error, `e00042:` in a schema report."""
    return {int(m) for m in _ALIAS_IN_ERROR.findall(error)}


def canonical_manifest(text: str) -> str:
    """helm output normalised to `---\\n# Source: ...\\n<body>\\n` per document.

    Only whitespace between documents is normalised (helm 3 and 4 differ there).
    """
    out = []
    for chunk in split_at_separators(text, _DOC_SPLIT):
        body = chunk.strip("\n")
        if not body.startswith("# Source: "):
            if body.strip("-\n \t"):
                out.append("---\n" + body + "\n")
            continue
        out.append("---\n" + body.rstrip() + "\n")
    return "".join(out)


def split_umbrella(text: str, chart_name: str) -> dict[str, str]:
    """Per alias, its documents from an umbrella render, with `# Source:` rewritten to what a
    per-experiment render prints (`<chart>/templates/...`)."""
    parts: dict[str, list[str]] = {}
    prefix = f"# Source: {UMBRELLA}/charts/"
    for chunk in split_at_separators(text, _DOC_SPLIT):
        body = chunk.strip("\n")
        if not body.startswith(prefix):
            continue
        name, _, rest = body[len(prefix):].partition("/")
        parts.setdefault(name, []).append(
            "---\n# Source: " + chart_name + "/" + rest.rstrip() + "\n"
        )
    return {name: "".join(docs) for name, docs in parts.items()}


class ChartInfo:
    """What the batch renderer needs to know about one chart folder, computed once."""

    def __init__(self, chart: Path) -> None:
        self.path = chart
        meta = load_yaml_file(chart / "Chart.yaml")
        if not isinstance(meta, dict) or "name" not in meta:
            raise InputError(f"{chart / 'Chart.yaml'}: not a chart (no name)")
        self.name = str(meta["name"])
        self.version = str(meta.get("version", "0.0.0"))
        values_path = chart / "values.yaml"
        defaults = load_yaml_file(values_path) if values_path.exists() else {}
        self.defaults: dict[str, Any] = defaults if isinstance(defaults, dict) else {}
        self.digest = path_digest(chart)
        schema_path = chart / "values.schema.json"
        self.values_validator: Any = None
        if schema_path.exists():
            try:
                self.values_validator = jsonschema_rs.validator_for(
                    json.loads(schema_path.read_text(encoding="utf-8")))
            except (ValueError, jsonschema_rs.ValidationError):
                self.values_validator = None  # helm reports a broken schema itself
        self.batchable = not any(
            _RELEASE_BOUND.search(_TEMPLATE_COMMENT.sub("", p.read_text(
                encoding="utf-8", errors="replace")))
            for p in (chart / "templates").rglob("*")
            if p.is_file()
        )


def write_umbrella(root: Path, job_values: Sequence[dict[str, Any]], chart: ChartInfo) -> Path:
    """The umbrella chart for one batch, written under `root`: the chart's copy (empty
    defaults, `global` admitted; copied once, a later batch in `root` finds it there), one
    alias per experiment and each alias's values."""
    umbrella = root / UMBRELLA
    copy_dir = umbrella / "charts" / chart.name
    if not copy_dir.is_dir():
        _copy_chart(chart, copy_dir)
    deps = [{"name": chart.name, "version": chart.version, "alias": alias(index),
             "repository": f"file://./charts/{chart.name}"} for index in range(len(job_values))]
    meta = {"apiVersion": "v2", "name": UMBRELLA, "version": "0.0.0", "dependencies": deps}
    (umbrella / "Chart.yaml").write_text(json.dumps(meta), encoding="utf-8")
    # The writer, not JSON: a JSON file escapes an emoji as a surrogate pair, which helm's YAML
    # reader refuses; the writer's output helm reads exactly as written.
    values = {alias(index): each for index, each in enumerate(job_values)}
    (umbrella / "values.yaml").write_text(dump_yaml(values), encoding="utf-8")
    return umbrella


def _copy_chart(chart: ChartInfo, copy_dir: Path) -> None:
    """The chart as every alias of an umbrella uses it: its own defaults emptied (the batch
    merged them), its values schema admitting `global`."""
    shutil.copytree(chart.path, copy_dir, ignore=shutil.ignore_patterns(".git", "charts"))
    (copy_dir / "values.yaml").write_text("{}\n", encoding="utf-8")
    schema_path = copy_dir / "values.schema.json"
    if schema_path.exists():
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            schema["properties"].setdefault("global", {"type": "object"})
            schema_path.write_text(json.dumps(schema), encoding="utf-8")
