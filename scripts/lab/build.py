"""`python3 scripts/lab build`: everything the lab runs, into .tools/lab/.

1. the Debian packages (host.py), 2. the Go binaries (gobuild.py), 3. the manifests, rendered
from the same pinned modules in Go's module cache (manifests.py, stages.py). Progress on
stderr throughout; a failure is one line.
"""

from __future__ import annotations

import time
from pathlib import Path

from . import gobuild, host, manifests, stages
from .layout import Layout
from .versions import part

SOURCES = (
    manifests.Source("jobset", "config/default"),
    manifests.Source("kueue", "config/default"),
    manifests.Source("training-operator", "manifests/overlays/standalone"),
    manifests.Source("argocd", "manifests/crds"),
    # the CRDs through which tests give a KWOK pod its logs and a port-forward target
    manifests.Source("kwok", "kustomize/crd/bases", kustomize=False),
)


def render_manifests(go: str, lay: Layout) -> None:
    kubectl = lay.bin / "kubectl"
    for source in SOURCES:
        module = gobuild.module_dir(go, part(source.part))
        manifests.render(kubectl, module, source, lay.manifests / f"{source.part}.json")
    stages.render(kubectl, gobuild.module_dir(go, part("kwok")),
                  lay.manifests / "kwok-stages.yaml")


def build(root: Path, only: list[str] | None = None) -> None:
    """Build (or keep) every part, then render the manifests."""
    started = time.monotonic()
    lay = Layout(root)
    host.ensure_debian()
    go = host.need_go()
    gobuild.build_all(go, lay.bin, only)
    host.say("rendering the upstream manifests from the module cache ...")
    render_manifests(go, lay)
    host.say(f"lab built in {time.monotonic() - started:.0f} s: {lay.tools}")
