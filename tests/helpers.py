"""Test helpers: tiny repositories built inline, shared fixture data."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"

ARGOCD = {
    "namespace": "argocd",
    "project": "tfgen-experiments",
    "repoURL": "https://github.com/example-org/ml-experiments.git",
    "targetRevision": "main",
    "destinationServer": "https://kubernetes.default.svc",
    "namespaces": ["default", "ml-team"],
}


def build_file_tree(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative path -> text) under `root`; returns root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def mnist_spec(**metadata: Any) -> dict[str, Any]:
    """The walkthrough's distributed-mnist as a validated spec (defaults applied)."""
    data = json.loads((FIXTURES / "render" / "distributed-mnist.json").read_text())
    data = copy.deepcopy(data)
    data["metadata"].update(metadata)
    return data
