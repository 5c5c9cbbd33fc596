"""The gate's cache is keyed by every input of what it keeps: after a change to any of them
(tfgen itself and the schemas it ships, tfgen.yaml, the chart, helm, the Kubernetes version),
`tfgen check` answers from the new inputs, never from what an earlier run stored."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from helpers import REPO_ROOT, copy_repo_parts
from tfgen.gate.check import CheckOptions, CheckResult, run_check
from tfgen.gate.helm import find_helm


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def check(root: Path, **options: object) -> CheckResult:
    return run_check(root, CheckOptions(**options))  # type: ignore[arg-type]


def warm(root: Path) -> None:
    first = check(root)
    assert first.ok and first.checked == 3, first.problems
    again = check(root)
    assert again.from_cache, "the cache answers a second identical run"


def edit_config(root: Path, change: Callable[[dict], None]) -> None:
    path = root / "tfgen.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_changed_tfgen_yaml_is_judged_anew(repo: Path) -> None:
    warm(repo)
    edit_config(repo, lambda d: d["argocd"].update(namespaces=["default"]))
    result = check(repo)
    assert not result.from_cache
    texts = [p.text() for p in result.problems]
    assert any('namespace "ml-team" is not one Argo CD may deploy to' in t for t in texts), texts


@pytest.mark.parametrize("change", ["chart", "kubernetes version", "helm"])
def test_every_experiment_is_rendered_again_after(repo: Path, change: str) -> None:
    warm(repo)
    options: dict[str, object] = {}
    if change == "chart":
        template = repo / "charts/tfjob-experiment/templates/pvc.yaml"
        template.write_text(template.read_text() + "\n{{- /* a change of the chart */}}\n")
    elif change == "kubernetes version":
        edit_config(repo, lambda d: d.update(kubernetesVersion="1.31"))
    else:
        options["helm"] = find_helm(3)
    result = check(repo, **options)
    assert result.ok, result.problems
    assert not result.from_cache and result.cache_hits == 0 and result.helm_processes >= 1


def test_a_tightened_schema_of_a_new_tfgen_is_not_answered_from_the_cache(
    repo: Path, tmp_path: Path
) -> None:
    """tfgen runs from a copy of its package laid out as a checkout (the shipped schemas
    behind a symlink), whose experiment schema is then tightened, as an upgrade of tfgen
    does: the same repository fails at once."""
    package = tmp_path / "site" / "tfgen"
    shutil.copytree(REPO_ROOT / "generator" / "tfgen", package, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    schemas = shutil.copytree(REPO_ROOT / "schemas", tmp_path / "schemas")
    for link, target in (("schemas", schemas), ("chart", REPO_ROOT / "charts/tfjob-experiment")):
        (package / link).unlink()
        (package / link).symlink_to(target)
    env = {**os.environ, "PYTHONPATH": str(package.parent)}

    def tfgen_check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from tfgen.cli import main; main()", "check"],
            cwd=repo, env=env, capture_output=True, text=True, check=False)

    for _ in range(2):  # the second run answers from the cache
        first = tfgen_check()
        assert first.returncode == 0, first.stdout + first.stderr
    assert "result cached" in first.stderr
    schema_file = schemas / "experiment.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["metadata"]["properties"]["owner"]["maxLength"] = 3
    schema_file.write_text(json.dumps(schema))
    after = tfgen_check()
    assert after.returncode == 1, after.stdout + after.stderr
    assert "$.metadata.owner: is " in after.stdout and "at most 3 allowed" in after.stdout
