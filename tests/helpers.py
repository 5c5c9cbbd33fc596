"""Test helpers: tiny repositories built inline, shared fixture data."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tfgen.gate.documents.manifests import RenderedObject, parse_manifest
from tfgen.gate.helm.command import RenderJob
from tfgen.gate.helm.command import template as helm_template
from tfgen.validate import Experiment
from tfgen.validate.schema.defaults import apply_defaults

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


def mnist_written(**metadata: Any) -> dict[str, Any]:
    """The walkthrough's distributed-mnist as written (tfgen.yaml defaults merged in), with
    `metadata` overrides; no schema default applied yet."""
    data: dict[str, Any] = json.loads((FIXTURES / "render" / "distributed-mnist.json").read_text())
    data["metadata"].update(metadata)
    return data


def mnist_spec(**metadata: Any) -> dict[str, Any]:
    """The walkthrough's distributed-mnist as the validate stage completes it: every schema default
    applied, as render and the gate receive it."""
    return apply_defaults(mnist_written(**metadata))


def experiment(data: dict[str, Any], rel: str | None = None) -> Experiment:
    """An Experiment of already completed data (e.g. `mnist_spec()`), as if read from
    `rel` (default: experiments/<name>.yaml)."""
    rel = rel or f"experiments/{data['metadata']['name']}.yaml"
    return Experiment.of(Path(rel), rel, rel, data)


# `make test-fast` (TFGEN_TESTS=fast) runs each property test on a tenth of its examples (at
# least 3), the inner loop's share; `make test` and CI run them all.
FAST = os.environ.get("TFGEN_TESTS") == "fast"


def examples(full: int) -> int:
    """How many examples a property test of `full` examples runs in this run."""
    return max(3, full // 10) if FAST else full


REPO_ROOT = Path(__file__).resolve().parents[1]
# The Go tools `make dev` builds (scripts/install_go_tools.py): helm-docs, kubeconform and the
# referees of tests/go/. A test that needs one fails without it, naming `make dev`.
GO_TOOLS = REPO_ROOT / ".tools" / "go"


# Whether the running test is marked `go` (set by conftest before each test).
MARKED_GO = False


def go_tool(name: str) -> Path:
    """The path of a Go tool of `make dev`; the test fails when it is not built, or when it is
    not marked `go` (then `make test-fast`, which runs without Go, would fail on it)."""
    assert MARKED_GO, f"a test that runs {name} must be marked go (@pytest.mark.go)"
    path = GO_TOOLS / name
    assert path.is_file(), f"{path.relative_to(REPO_ROOT)} is missing: run `make dev`"
    return path


def node_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a loaded document (keys and list indexes), its root excluded: where a
    robustness test puts its odd values."""
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += node_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += node_paths(value, (*path, index))
    return out


def copy_repo_parts(dest: Path, parts: tuple[str, ...] = (
    "charts", "schemas", "argo", "experiments", "tfgen.yaml", ".github/CODEOWNERS",
)) -> Path:
    """Copy the real repository's chart, schemas, argo/, specs, config and generated
    CODEOWNERS into `dest` (a copy with all of them is free of drift)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in parts:
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=shutil.ignore_patterns(".tfgen-cache"))
        elif source.is_file():
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / part)
    return dest


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; returns stdout."""
    result = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com",
         "-c", "commit.gpgsign=false", *args],
        capture_output=True, text=True, check=True,
    )
    return result.stdout


def git_init(repo: Path) -> Path:
    """A Git repository of everything under `repo`, one commit on branch main."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


@dataclass(frozen=True)
class HostileRecord:
    """What one hostile case cost: wall time and the peak resident memory of its largest
    process (tfgen or a helm it ran), and whether it passed."""

    case: str
    seconds: float
    max_rss_kib: int
    passed: bool


# test_hostile.py fills this list in the session's stash; conftest prints its summary.
HOSTILE_RECORDS = pytest.StashKey[list[HostileRecord]]()


def hostile_summary(records: list[HostileRecord], slow: float = 2.0) -> list[str]:
    """Lines for the end of the session: cases and failures per class, the slowest case, the
    largest memory peak and every case slower than `slow` seconds."""
    if not records:
        return []
    per_class: dict[str, list[HostileRecord]] = {}
    for record in records:
        per_class.setdefault(record.case.split("/")[0], []).append(record)
    lines = [f"hostile corpus: {len(records)} case(s)"]
    for name, group in sorted(per_class.items()):
        failed = sum(not r.passed for r in group)
        lines.append(f"  {name}: {len(group)} case(s), {failed} failed")
    slowest = max(records, key=lambda r: r.seconds)
    biggest = max(records, key=lambda r: r.max_rss_kib)
    lines.append(f"  slowest: {slowest.case} {slowest.seconds:.2f} s")
    lines.append(f"  max RSS: {biggest.case} {biggest.max_rss_kib / 1024:.0f} MiB")
    lines.append(f"  total wall time of all cases: {sum(r.seconds for r in records):.1f} s")
    over = sorted((r for r in records if r.seconds > slow), key=lambda r: -r.seconds)
    lines.append(f"  over {slow:g} s: {len(over)}"
                 + "".join(f"\n    {r.case} {r.seconds:.2f} s" for r in over))
    return lines


def template(chart: Path, release: str, namespace: str, values: Sequence[Path] = (), *,
             kube_version: str | None = None, helm: str | None = None) -> str:
    """`helm template` of one release of `chart` with these value files (`gate.helm`)."""
    job = RenderJob(release, namespace, chart, tuple(values), kube_version=kube_version)
    return helm_template(job, helm=helm)


@functools.cache
def rendered_here() -> tuple[RenderedObject, ...]:
    """Every object tfgen renders in this repository, by the real helm: each chart ci
    scenario, each bundled experiment as its Application renders it, and the argo/ wiring.
    The corpus the referees of tests/go/ judge beside tfgen."""
    chart = REPO_ROOT / "charts" / "tfjob-experiment"
    out: list[RenderedObject] = []
    for values in sorted((chart / "ci").glob("*-values.yaml")):
        out += parse_manifest(template(chart, values.name.removesuffix("-values.yaml"),
                                       "default", [values], kube_version="1.30"))
    for folder in sorted((REPO_ROOT / "argo" / "experiments").iterdir()):
        namespace = yaml.safe_load((folder / "app.yaml").read_text())["namespace"]
        out += parse_manifest(template(chart, folder.name, namespace, [folder / "values.yaml"],
                                       kube_version="1.30"))
    for wiring in sorted((REPO_ROOT / "argo").glob("*.yaml")):
        out += parse_manifest(wiring.read_text(), helm_output=False)
    return tuple(out)


def case_headers(path: Path, keys: tuple[str, ...]) -> dict[str, list[str]]:
    """The `# key: value` lines heading a fixture case (those of `keys`), each key's values
    in order; the header ends at the first line that is no comment."""
    found: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key in keys:
            found.setdefault(key, []).append(value.strip())
    return found


def assert_expected_problems(problems: Sequence[Any], headers: dict[str, list[str]]
                             ) -> list[str]:
    """Each `# expect:` of a fixture case is in some problem's text, at each `# expect-line:`
    given; the texts, for the case's own further checks."""
    texts = [p.text() for p in problems]
    assert headers.get("expect"), "a case must say what it expects"
    for expected in headers["expect"]:
        matching = [p for p in problems if expected in p.text()]
        assert matching, f"expected {expected!r} in:\n" + "\n".join(texts)
        for line in headers.get("expect-line", []):
            assert int(line) in [p.line for p in matching], "\n".join(texts)
    return texts
