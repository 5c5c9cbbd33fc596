"""`tfgen check` with its cache says exactly what `tfgen check --no-cache` says (the same exit
code, the same problems, the same text) after any sequence of edits to a repository: the cache
only chooses the scope of the gate's one sequence of stages (`gate.scope`), it never answers in
words of its own. Hypothesis draws the edits; the real helm renders."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import copy_repo_parts, examples, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.repo import layout
from tfgen.repo.cache import CACHE_DIRNAME

NAMES = ("cpu-linear", "distributed-mnist", "lr-sweep", "resnet-chief-eval")
# How the summary says where its answer came from: the one thing the cache may change.
_REUSE = re.compile(r"; (?:nothing changed since the last check: its whole result reused"
                    r"|\d+ rendered by helm, \d+ reused from the last check)\)")


def tfgen(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def said(result: Result) -> tuple[int, str, str]:
    """What a check tells its reader: exit code, problems (stdout), summary (stderr)."""
    return result.exit_code, result.stdout, _REUSE.sub("; ...)", result.stderr)


def spec(name: str) -> Path:
    return Path(layout.EXPERIMENTS_DIR) / f"{name}{layout.SPEC_SUFFIX}"


def edit_yaml(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def workers(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["spec"]["roles"]["worker"]  # every bundled spec has some
    return found


def add(name: str) -> None:
    copy = f"{name}-copy"
    if spec(name).exists():
        text = spec(name).read_text().replace(f"name: {name}\n", f"name: {copy}\n")
        spec(copy).write_text(text.replace("/logs", f"/logs/{copy}"))


def change(name: str) -> None:
    if spec(name).exists():
        edit_yaml(spec(name), lambda data: workers(data).update(replicas=3))


def share_log_dir(name: str) -> None:
    others = [n for n in NAMES if n != name and spec(n).exists()]
    if spec(name).exists() and others:
        theirs = yaml.safe_load(spec(others[0]).read_text())["spec"].get("tensorboard", {})
        if "logDir" in theirs:
            edit_yaml(spec(name), lambda data: data["spec"].setdefault(
                "tensorboard", {}).update(logDir=theirs["logDir"]))


def rename(name: str) -> None:
    if spec(name).exists():
        new = f"{name[:20]}-renamed"
        spec(new).write_text(spec(name).read_text().replace(f"name: {name}\n",
                                                            f"name: {new}\n"))
        spec(name).unlink()


def delete(name: str) -> None:
    spec(name).unlink(missing_ok=True)


def edit_config(_: str) -> None:
    edit_yaml(Path(layout.CONFIG_NAME), lambda data: data.update(
        clusterDomain="cluster.local" if data.get("clusterDomain") != "cluster.local"
        else "example.internal"))


def edit_chart(_: str) -> None:
    with open(Path(layout.CHART_PATH) / "values.yaml", "a") as values:
        values.write("# a comment\n")


def edit_schema(_: str) -> None:
    path = Path("schemas/experiment.schema.json")
    data = json.loads(path.read_text())
    data["title"] = data.get("title", "") + "."
    path.write_text(json.dumps(data, indent=2) + "\n")


def corrupt_cache(_: str) -> None:
    for path in Path(CACHE_DIRNAME).glob("*"):
        if path.is_file():
            path.write_bytes(b"not a cache\n" * 64)


def delete_cache(_: str) -> None:
    shutil.rmtree(CACHE_DIRNAME, ignore_errors=True)


def switch_branch(_: str) -> None:
    """Commit what is there, then check out the other branch (made at the start)."""
    git(Path.cwd(), "add", "-A", ".")
    git(Path.cwd(), "commit", "-q", "--allow-empty", "-m", "step")
    current = git(Path.cwd(), "branch", "--show-current").strip()
    git(Path.cwd(), "checkout", "-q", "other" if current == "main" else "main")


EDITS: dict[str, Callable[[str], None]] = {
    "add": add, "change": change, "share-log-dir": share_log_dir, "rename": rename,
    "delete": delete, "tfgen.yaml": edit_config, "chart": edit_chart, "schema": edit_schema,
    "corrupt-cache": corrupt_cache, "delete-cache": delete_cache,
    "switch-branch": switch_branch,
}


@settings(max_examples=examples(30), derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.sampled_from(NAMES),
                                st.sampled_from((True, True, False))), min_size=1, max_size=4))
def test_check_with_its_cache_says_what_check_without_it_says(
        steps: list[tuple[str, str, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_repo_parts(Path(tmp) / "repo")
        (root / ".gitignore").write_text(f"{CACHE_DIRNAME}/\n")
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A", ".")
        git(root, "commit", "-q", "-m", "bundled")
        git(root, "branch", "other")
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(root)
            assert tfgen("check").exit_code == 0  # an all-clear check leaves a ledger
            for step, name, rendered in steps:
                EDITS[step](name)
                if rendered:
                    tfgen("render", "--prune")
                cached = said(tfgen("check"))
                assert cached == said(tfgen("check", "--no-cache")), (step, name, rendered)
                assert cached == said(tfgen("check")), "a second cached check says it again"
