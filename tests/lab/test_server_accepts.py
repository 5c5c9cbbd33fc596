"""Every object tfgen renders is accepted by the real API server: each chart ci scenario (both
runtimes), each bundled experiment as its Application renders it, and the argo/ wiring, sent
by server-side apply (dry run: admission, the CRDs' schemas and CEL rules, every mutating and
validating webhook of the lab's JobSet, Kueue, training operator and Argo CD run; nothing is
stored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, template
from tfgen.cli import main
from tfgen.gate.documents.manifests import RenderedObject, parse_manifest

pytestmark = pytest.mark.lab

CHART = REPO_ROOT / "charts" / "tfjob-experiment"


def _scenarios() -> list[Any]:
    """(id, namespace, release, values files) of every rendering the repository makes."""
    out = [pytest.param("default", values.name.removesuffix("-values.yaml"), [values],
                        id=f"ci/{values.name.removesuffix('-values.yaml')}")
           for values in sorted((CHART / "ci").glob("*-values.yaml"))]
    for folder in sorted((REPO_ROOT / "argo" / "experiments").iterdir()):
        namespace = yaml.safe_load((folder / "app.yaml").read_text())["namespace"]
        out.append(pytest.param(namespace, folder.name, [folder / "values.yaml"],
                                id=f"experiment/{folder.name}"))
    return out


def _apply(lab: Any, objects: list[RenderedObject], namespace: str) -> list[str]:
    """kubectl's refusals of `objects` (none when all are accepted), each object sent to its
    own namespace (`namespace` when it names none)."""
    refused = []
    for where in sorted({o.namespace or namespace for o in objects}):
        lab.kubectl("create", "namespace", where, check=False)  # there already: fine
        items = [o.doc for o in objects if (o.namespace or namespace) == where]
        done = lab.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=tfgen",
                           "-n", where, "-f", "-", check=False,
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        if done.returncode != 0 or len(done.stdout.splitlines()) != len(items):
            refused.append(f"in {where}: {done.stderr or done.stdout}")
    return refused


@pytest.mark.parametrize(("namespace", "release", "values"), _scenarios())
def test_every_rendered_object_is_accepted(lab: Any, namespace: str, release: str,
                                           values: list[Path]) -> None:
    objects = parse_manifest(template(CHART, release, namespace, values))
    assert objects, "the chart rendered nothing"
    assert not _apply(lab, objects, namespace)


def test_the_argo_wiring_for_the_labs_argo_cd_is_accepted(lab: Any, tmp_path: Path,
                                                          runner: CliRunner,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    # The lab runs Argo CD 3.2: a repository says so in tfgen.yaml, and tfgen wires it for that
    # release (no PersistentVolume name patterns in the AppProject, which 3.3 brought).
    root = copy_repo_parts(tmp_path / "repo")
    config = root / "tfgen.yaml"
    text = config.read_text()
    assert 'version: "3.3"' in text
    config.write_text(text.replace('version: "3.3"', 'version: "3.2"', 1))
    monkeypatch.chdir(root)
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    objects = [o for wiring in sorted((root / "argo").glob("*.yaml"))
               for o in parse_manifest(wiring.read_text(), helm_output=False)]
    assert {o.kind for o in objects} >= {"AppProject", "ApplicationSet", "Application"}
    assert not _apply(lab, objects, "argocd")
