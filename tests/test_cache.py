"""The gate's cache is keyed by every input of what it keeps: after a change to any of them
(tfgen itself and the schemas it ships, tfgen.yaml, the chart, helm, the Kubernetes version),
`tfgen check` answers from the new inputs, never from what an earlier run stored. And it
cannot lie: edited or foreign entries (a MAC under this machine's key) are misses, and a
committed cache is neither read nor written, but reported."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, git, git_init, go_tool
from hypothesis import given
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.gate.check import CheckOptions, run_check
from tfgen.gate.helm.command import find_helm
from tfgen.gate.result import CheckResult
from tfgen.render import argo
from tfgen.repo.cache import CACHE_DIRNAME, DATABASE, KEY_BYTES, KEY_ENV, Cache
from tfgen.repo.keys import (
    VERDICT_LIBRARIES,
    CacheKeys,
    digest,
    installed_distributions,
    path_digest,
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def check(root: Path, **options: object) -> CheckResult:
    return run_check(root, CheckOptions(**options))  # type: ignore[arg-type]


def warm(root: Path) -> None:
    first = check(root)
    specs = len(list((root / "experiments").glob("*.yaml")))
    assert first.ok and first.checked == specs > 0, first.problems
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


def test_the_argo_wiring_is_remembered_by_tfgen_yamls_argocd_block(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm(repo)  # the wiring rendered from its templates once, and remembered
    rendered = argo.argo_files

    def not_rendered(argocd: object) -> None:
        raise AssertionError("rendered again, not remembered")

    monkeypatch.setattr(argo, "argo_files", not_rendered)
    applicationset = repo / "argo/applicationset.yaml"
    applicationset.write_text(applicationset.read_text() + "# edited by hand\n")
    assert drifted(check(repo)) == {"argo/applicationset.yaml"}
    applicationset.write_text(applicationset.read_text().replace("# edited by hand\n", ""))
    monkeypatch.setattr(argo, "argo_files", rendered)
    edit_config(repo, lambda d: d["argocd"].update(project="another-project"))
    assert {"argo/project.yaml", "argo/applicationset.yaml"} <= drifted(check(repo))


def drifted(result: CheckResult) -> set[str]:
    return {p.path for p in result.problems if "generated file is" in p.text()}


@pytest.mark.parametrize("edit", ["values.yaml", "app.yaml", "tfgen.yaml"])
def test_files_found_in_sync_are_compared_again_once_anything_they_come_from_changes(
    repo: Path, edit: str
) -> None:
    warm(repo)  # every experiment's generated files remembered as in sync
    folder = repo / "argo/experiments/distributed-mnist"
    if edit == "values.yaml":
        path = folder / "values.yaml"
        path.write_text(path.read_text().replace("replicas: 2", "replicas: 3", 1))
    elif edit == "app.yaml":
        path = folder / "app.yaml"
        path.write_text(path.read_text().replace("owner: ", "owner: x", 1))
    else:  # changes what every values.yaml should hold
        edit_config(repo, lambda d: d["networkPolicy"].update(enabled=False))
    drifted = {p.path for p in check(repo).problems if "generated file is out of date" in p.text()}
    if edit == "tfgen.yaml":
        assert drifted == {f"argo/experiments/{folder.name}/values.yaml"
                           for folder in (repo / "argo/experiments").iterdir()}
    else:
        assert drifted == {f"argo/experiments/distributed-mnist/{edit}"}


def test_render_writes_again_a_file_edited_after_it_was_remembered_in_sync(
    runner: CliRunner, repo: Path
) -> None:
    for _ in range(2):  # the second render finds every file in sync and remembers it
        assert runner.invoke(main, ["render"]).exit_code == 0
    path = repo / "argo/experiments/distributed-mnist/values.yaml"
    path.write_text(path.read_text().replace("replicas: 2", "replicas: 3", 1))
    result = runner.invoke(main, ["render"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["updated argo/experiments/distributed-mnist/values.yaml"]


def test_the_cache_folder_keeps_itself_out_of_git(runner: CliRunner, repo: Path) -> None:
    git_init(repo)  # a repository whose .gitignore does not name the cache
    assert not (repo / ".gitignore").exists()
    assert runner.invoke(main, ["render"]).exit_code == 0
    assert (repo / CACHE_DIRNAME).is_dir()
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    assert CACHE_DIRNAME not in status, status


def test_a_cache_of_another_format_is_deleted_not_left_behind(
    runner: CliRunner, repo: Path
) -> None:
    folder = repo / CACHE_DIRNAME
    folder.mkdir()
    old = [folder / "cache-v1.sqlite3", folder / "cache-v1.sqlite3-wal"]
    for path in old:
        path.write_bytes(b"a cache an earlier tfgen wrote")
    assert runner.invoke(main, ["render"]).exit_code == 0
    assert not any(path.exists() for path in old)
    assert cache_file(repo).stat().st_size > 0, "the current format's cache is kept"


def test_a_cache_another_tfgen_filled_is_emptied_not_kept_for_good(repo: Path) -> None:
    warm(repo)

    def plant(filled_by: str | None = None) -> None:
        with contextlib.closing(sqlite3.connect(cache_file(repo))) as db, db:
            db.execute("INSERT OR REPLACE INTO entry VALUES ('x', 'planted', 'v', 'm')")
            if filled_by is not None:
                db.execute("UPDATE filled_by SET tool = ?", (filled_by,))

    def planted() -> bool:
        with contextlib.closing(sqlite3.connect(cache_file(repo))) as db:
            return db.execute("SELECT count(*) FROM entry WHERE key = 'planted'").fetchone() \
                == (1,)

    plant()
    assert check(repo).from_cache
    assert planted(), "this tfgen's own cache is kept from run to run"
    plant(filled_by="another tfgen")
    size = cache_file(repo).stat().st_size
    opened = Cache(repo / CACHE_DIRNAME)
    assert opened.get("x", "planted") is None
    opened.close()
    assert not planted()
    assert cache_file(repo).stat().st_size < size / 2, "its pages are given back"
    result = check(repo)
    assert not result.from_cache and result.cache_hits == 0


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


@pytest.mark.go
def test_kubeconform_on_path_keeps_the_ledger_and_is_said(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --validator auto takes kubeconform on when it is there, as a team's CI image with helm
    # often has it: its verdicts stand in the ledger too, keyed by its build
    program = tmp_path / "bin" / "kubeconform"
    program.parent.mkdir()
    shutil.copy2(go_tool("kubeconform"), program)  # the one the kubeconform tests use
    monkeypatch.setenv("TFGEN_KUBECONFORM", str(program))
    cold = check(repo)
    assert cold.ok and any("kubeconform" in note for note in cold.notes), cold.notes
    spec = repo / "experiments/distributed-mnist.yaml"
    spec.write_text(spec.read_text().replace('value: "128"', 'value: "256"'))
    assert CliRunner().invoke(main, ["render"]).exit_code == 0
    with contextlib.closing(sqlite3.connect(cache_file(repo))) as db, db:
        db.execute("DELETE FROM entry WHERE space = 'render'")  # the others' manifests gone
    one = check(repo)
    # the others stand as the ledger has them: neither rendered again nor read by kubeconform
    specs = len(list((repo / "experiments").glob("*.yaml")))
    assert one.ok and one.cache_hits == specs - 1 and not one.notes, one
    with open(program, "ab") as changed:  # another kubeconform build: nothing stands
        changed.write(b"\0")
    again = check(repo)
    assert again.ok and not again.from_cache and any("kubeconform" in n for n in again.notes)


def test_a_tightened_schema_of_a_new_tfgen_is_not_answered_from_the_cache(
    repo: Path, tmp_path: Path
) -> None:
    """tfgen runs from a copy of its package laid out as a checkout (the shipped schemas
    behind a symlink), whose experiment schema is then tightened, as an upgrade of tfgen
    does: the same repository fails at once."""
    package = tmp_path / "site" / "tfgen"
    shutil.copytree(REPO_ROOT / "generator" / "tfgen", package, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    # links to this project's own files (init's templates) lead out of the package: keep them
    for link in [p for p in package.rglob("*") if p.is_symlink() and not p.exists()]:
        source = REPO_ROOT / "generator" / "tfgen" / link.relative_to(package)
        link.unlink()
        link.symlink_to(source.resolve())
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
    assert "nothing changed since the last check: its whole result reused" in first.stderr
    schema_file = schemas / "experiment.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["metadata"]["properties"]["owner"]["maxLength"] = 3
    schema_file.write_text(json.dumps(schema))
    after = tfgen_check()
    assert after.returncode == 1, after.stdout + after.stderr
    assert "$.metadata.owner: is " in after.stdout and "at most 3 allowed" in after.stdout


# -- the cache cannot lie ----------------------------------------------------------------

def cache_file(root: Path) -> Path:
    [database] = (root / CACHE_DIRNAME).glob("cache-v*.sqlite3")
    return database


def forge_no_problems(root: Path, key: bytes | None) -> int:
    """Rewrite every stored verdict to "no problems": with the entries' old MACs when `key`
    is None (an edited cache), else signed with `key` (a cache made on another machine)."""
    with sqlite3.connect(cache_file(root)) as db:
        rows = db.execute("SELECT space, key, value, mac FROM entry").fetchall()
        forged = 0
        for space, entry, value, mac in rows:
            if space == "check" or space in ("spec", "objects"):
                data = json.loads(value)
                data["problems"] = []
                value = json.dumps(data)
            else:
                continue
            if key is not None:
                mac = Cache(None, key)._mac(space, entry, value)
            db.execute("UPDATE entry SET value=?, mac=? WHERE space=? AND key=?",
                       (value, mac, space, entry))
            forged += 1
    return forged


@pytest.mark.parametrize("forger", ["edited", "another machine"])
def test_a_forged_cache_does_not_pass_an_invalid_spec(repo: Path, forger: str) -> None:
    spec = repo / "experiments/distributed-mnist.yaml"
    spec.write_text(spec.read_text().replace("replicas: 2", "replicas: -2", 1))
    first = check(repo)
    assert not first.ok
    assert forge_no_problems(repo, None if forger == "edited" else b"k" * 64) >= 2
    again = check(repo)
    assert not again.from_cache
    assert [p.text() for p in again.problems] == [p.text() for p in first.problems]
    assert check(repo).from_cache  # the forged entries were written again, with this key


def test_the_key_is_private_to_this_machine_and_never_in_the_repository(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "keys" / "tfgen-key"
    monkeypatch.setenv(KEY_ENV, str(key))
    warm(repo)
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) >= 32
    inside = repo / "keys" / "key"
    monkeypatch.setenv(KEY_ENV, str(inside))
    for _ in range(2):
        result = check(repo)
        assert result.ok and not result.from_cache  # no key to be had: nothing cached
    assert not inside.exists()


@pytest.mark.parametrize("length", [KEY_BYTES, 65, KEY_BYTES * 4])
def test_a_key_file_of_any_length_read_keys_the_cache(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    # keyed BLAKE2b takes 64 bytes at most: a longer key file is made into a key that fits
    key = tmp_path / "key"
    key.write_bytes(b"k" * length)
    monkeypatch.setenv(KEY_ENV, str(key))
    assert not check(repo).from_cache
    assert check(repo).from_cache


def test_a_committed_cache_is_ignored_and_reported(runner: CliRunner, repo: Path) -> None:
    warm(repo)
    shutil.copy(REPO_ROOT / ".gitignore", repo / ".gitignore")
    git_init(repo)
    assert not git(repo, "ls-files", CACHE_DIRNAME)  # .gitignore keeps it out
    git(repo, "add", "-f", CACHE_DIRNAME)
    git(repo, "commit", "-q", "-m", "a cache that should not be here")
    assert git(repo, "ls-files", CACHE_DIRNAME)
    before = cache_file(repo).read_bytes()
    for _ in range(2):
        out = runner.invoke(main, ["check"], catch_exceptions=False)
        assert out.exit_code == 1, out.output
        assert (".tfgen-cache/: the cache is committed" in out.output
                and "git rm -r --cached .tfgen-cache" in out.output), out.output
        assert "whole result reused" not in out.output
    assert cache_file(repo).read_bytes() == before  # neither read nor written


def test_no_cache_is_committed_or_restored_in_pull_requests() -> None:
    assert ".tfgen-cache/" in (REPO_ROOT / ".gitignore").read_text().splitlines()
    workflow = yaml.safe_load((REPO_ROOT / ".github/workflows/pr.yaml").read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    assert steps and not [s for s in steps if "cache" in str(s.get("uses", ""))]
    assert not [s for s in steps if "tfgen-cache" in str(s.get("run", ""))]


def test_a_new_version_of_a_validator_or_parser_is_a_new_tfgen() -> None:
    # the cache is emptied when the digest changes: each library a verdict depends on must be
    # in it by its installed version (jsonschema_rs names none when imported)
    import importlib.metadata

    installed = [name.lower() for name in installed_distributions(VERDICT_LIBRARIES)]
    for distribution in ("jsonschema_rs", "jsonschema", "referencing", "pyyaml", "yaml_rs"):
        version = importlib.metadata.version(distribution)
        assert f"{distribution}-{version}.dist-info" in installed, distribution


parts = st.lists(st.one_of(st.text(), st.binary()), max_size=4)


@given(prefix=parts, rest=parts, other=parts)
def test_a_key_made_from_a_remembered_prefix_is_the_digest_of_all_its_parts(
    prefix: list[bytes | str], rest: list[bytes | str], other: list[bytes | str]
) -> None:
    keys = CacheKeys("tool", "/repo")
    assert keys._after(tuple(prefix), *rest) == digest(*prefix, *rest)
    # the prefix's hashed state is copied, never extended: a second key starts from it afresh
    assert keys._after(tuple(prefix), *other) == digest(*prefix, *other)


def _break_the_tfjob_kind(template: Path) -> None:
    template.write_text(template.read_text().replace("kind: TFJob\n", "kind: TFJobX\n"))


@pytest.mark.parametrize("linked", ["the chart", "its templates folder"])
def test_a_chart_changed_behind_a_folder_link_is_rendered_again(repo: Path, linked: str) -> None:
    # helm follows a link to a folder in a chart; the snapshot does not enter one (its files
    # are no input), so a stored result stands only while the chart helm reads is unchanged
    chart = repo / "charts/tfjob-experiment"
    folder = chart if linked == "the chart" else chart / "templates"
    shutil.move(folder, repo / "elsewhere")
    folder.symlink_to(repo / "elsewhere", target_is_directory=True)
    warm(repo)
    _break_the_tfjob_kind(repo / "elsewhere" / ("templates" if folder == chart else "")
                          / "tfjob.yaml")
    result = check(repo)
    assert not result.from_cache
    assert any("TFJobX" in p.message for p in result.problems), result.problems


def test_a_charts_digest_reads_behind_its_links_each_folder_once(tmp_path: Path) -> None:
    chart, other = tmp_path / "chart", tmp_path / "other"
    chart.mkdir()
    other.mkdir()
    (chart / "Chart.yaml").write_text("name: c\n")
    (other / "t.yaml").write_text("a: 1\n")
    (chart / "loop").symlink_to(chart, target_is_directory=True)  # helm refuses; no hang here
    (chart / "templates").symlink_to(other, target_is_directory=True)
    before = path_digest(chart)
    (other / "t.yaml").write_text("a: 2\n")
    assert path_digest(chart) != before


def test_a_value_file_outside_the_listed_folders_changed_is_rendered_again(repo: Path) -> None:
    # an ApplicationSet that reads one more value file, from a folder tfgen does not list
    appset = repo / "argo/applicationset.yaml"
    appset.write_text(appset.read_text().replace(
        '- "../../argo/experiments/{{.name}}/values.yaml"\n',
        '- "../../argo/experiments/{{.name}}/values.yaml"\n'
        '            - "../../shared/values.yaml"\n'))
    (repo / "shared").mkdir()
    (repo / "shared/values.yaml").write_text("{}\n")
    first = check(repo)
    assert check(repo).from_cache
    (repo / "shared/values.yaml").write_text("notAValue: 1\n")
    result = check(repo)
    assert not result.from_cache and set(result.problems) > set(first.problems), result.problems


def test_a_new_cache_database_has_large_pages_and_gives_freed_ones_back(tmp_path: Path) -> None:
    cache = Cache(tmp_path / CACHE_DIRNAME, b"k" * 64)
    cache.put("render", "key", "manifest")
    cache.close()
    with sqlite3.connect(tmp_path / CACHE_DIRNAME / DATABASE) as db:
        assert db.execute("PRAGMA page_size").fetchone() == (16384,)
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
    assert Cache(tmp_path / CACHE_DIRNAME, b"k" * 64).get("render", "key") == "manifest"
