"""Applications remembered per generator file (`gate/argo/resolutions.py`): a resolution that
recalls them is the resolution that reads every file again, whatever changed since they were
remembered: an app.yaml, a values.yaml removed, a folder become a link, the ApplicationSet."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import copy_repo_parts
from tfgen.gate.argo.applications import resolve_applications
from tfgen.gate.argo.resolutions import RememberedApplications
from tfgen.repo.cache import CACHE_DIRNAME, Cache
from tfgen.repo.inputs import snapshot
from tfgen.repo.keys import CacheKeys, content_hash

NAME = "distributed-mnist"  # one of the bundled experiments
FOLDER = f"argo/experiments/{NAME}"


def remembering(root: Path) -> RememberedApplications:
    """The memory a check of `root` as it is now would use."""
    cache = Cache(root / CACHE_DIRNAME)
    return RememberedApplications(cache, CacheKeys("tool", str(root)), snapshot(root, cache))


def appset_hash(root: Path) -> str:
    return content_hash((root / "argo/applicationset.yaml").read_bytes())


def generator_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.glob("argo/experiments/*/app.yaml"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    memory = remembering(root)
    resolve_applications(root, memory)  # every Application remembered
    memory.cache.close()
    return root


def test_an_unchanged_repository_is_recalled_whole_and_as_resolved(repo: Path) -> None:
    memory = remembering(repo)
    rels = generator_files(repo)
    assert len(rels) >= 3
    assert set(memory.recall(appset_hash(repo), rels)) == set(rels)
    assert resolve_applications(repo, memory) == resolve_applications(repo)


def _namespace(root: Path) -> None:
    path = root / FOLDER / "app.yaml"
    path.write_text(path.read_text().replace("namespace: default", "namespace: ml-team"))


def _no_values(root: Path) -> None:
    (root / FOLDER / "values.yaml").unlink()


def _values_a_link(root: Path) -> None:
    # the same bytes, through a link: the file resolving names is the link's target
    values = root / FOLDER / "values.yaml"
    shutil.move(values, root / FOLDER / "kept-values.yaml")
    values.symlink_to("kept-values.yaml")


def _project(root: Path) -> None:
    path = root / "argo/applicationset.yaml"
    path.write_text(path.read_text().replace('project: "tfgen-experiments"',
                                             'project: "other"'))


@pytest.mark.parametrize("change", [_namespace, _no_values, _values_a_link, _project],
                         ids=lambda change: change.__name__.strip("_"))
def test_what_changed_since_it_was_remembered_is_resolved_again(
    repo: Path, change: Callable[[Path], None]
) -> None:
    before = resolve_applications(repo)
    change(repo)
    fresh = resolve_applications(repo)
    assert fresh != before, "the change is one the resolution sees"
    memory = remembering(repo)
    recalled = memory.recall(appset_hash(repo), generator_files(repo))
    assert f"{FOLDER}/app.yaml" not in recalled
    assert resolve_applications(repo, memory) == fresh
