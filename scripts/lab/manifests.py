"""The upstream manifests the lab applies, read from the pinned modules in Go's module cache.

At build time each part's own configuration is rendered the upstream way (`kubectl kustomize`
of the module's `config/` or `manifests/` folder) and only the kinds the lab needs are kept:
CRDs and webhook configurations (the Deployments, Services and RBAC are for running inside a
cluster; the lab runs the same binaries on loopback). The result goes to
.tools/lab/manifests/<part>.json (JSON: the CRDs are megabytes, and every start reads them).
At start the one part that must change is rewritten: a webhook's `clientConfig.service` (a
Service the lab does not have) becomes `url: https://127.0.0.1:<port><path>` with the lab's CA
bundle. Nothing else is touched.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .host import LabError, say

Doc = dict[str, Any]
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
KEEP_KINDS = ("CustomResourceDefinition", *WEBHOOK_KINDS)


def parse(text: str) -> list[Doc]:
    """The documents of a YAML stream, empty ones left out. Only the build parses YAML
    (PyYAML, imported here so that starting and stopping the lab need nothing but Python)."""
    import yaml

    # libyaml's parser where PyYAML has it: the pure-Python one takes seconds on these CRDs
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if d]


@dataclass(frozen=True)
class Source:
    """Where a part keeps its manifests inside its module, and how to read them."""

    part: str
    path: str  # a folder inside the module
    kustomize: bool = True  # False: read every *.yaml under path as it is
    keep: tuple[str, ...] = KEEP_KINDS


def kustomize(kubectl: Path, folder: Path) -> list[Doc]:
    """`kubectl kustomize folder`, parsed."""
    done = subprocess.run([str(kubectl), "kustomize", str(folder)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"kubectl kustomize {folder} failed: {done.stderr.strip()}")
    return parse(done.stdout)


def read_folder(folder: Path) -> list[Doc]:
    """Every YAML document of every *.yaml file under folder (sorted, for a stable order)."""
    docs: list[Doc] = []
    for path in sorted(folder.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += parse(path.read_text())
    return docs


def render(kubectl: Path, module: Path, source: Source, out: Path) -> int:
    """Render one part's manifests into `out`; returns how many objects were kept."""
    folder = module / source.path
    if not folder.is_dir():
        raise LabError(f"{source.part}: no {source.path}/ in {module.name}")
    docs = kustomize(kubectl, folder) if source.kustomize else read_folder(folder)
    kept = [d for d in docs if d.get("kind") in source.keep]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(kept, indent=None))
    say(f"{source.part}: {len(kept)} objects from {source.path}/ -> {out.name}")
    return len(kept)


def load(path: Path) -> list[Doc]:
    """A part's rendered manifests (render's output)."""
    docs: list[Doc] = json.loads(path.read_text())
    return docs


def _to_url(client_config: Doc, port: int, ca_bundle: str) -> None:
    service = client_config.pop("service", None)
    if service is None:
        return
    client_config["url"] = f"https://127.0.0.1:{port}{service.get('path') or '/'}"
    client_config["caBundle"] = ca_bundle


def point_at_loopback(docs: Iterable[Doc], port: int, ca: bytes) -> list[Doc]:
    """Every webhook (admission or CRD conversion) reached at 127.0.0.1:port, trusting ca."""
    bundle = base64.b64encode(ca).decode()
    docs = list(docs)
    for doc in docs:
        if doc.get("kind") in WEBHOOK_KINDS:
            for hook in doc.get("webhooks") or []:
                _to_url(hook["clientConfig"], port, bundle)
        conversion = (doc.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") == "Webhook":
            _to_url(conversion["webhook"]["clientConfig"], port, bundle)
    return docs


def drop_webhooks(docs: Iterable[Doc], wanted: Callable[[Doc], bool]) -> list[Doc]:
    """Keep only the admission webhooks `wanted` accepts: one that is registered but not
    served answers 404 and, failing closed, blocks every create of its kind."""
    docs = list(docs)
    for doc in docs:
        if doc.get("kind") in WEBHOOK_KINDS:
            doc["webhooks"] = [h for h in doc.get("webhooks") or [] if wanted(h)]
    return [d for d in docs if d.get("kind") not in WEBHOOK_KINDS or d["webhooks"]]
