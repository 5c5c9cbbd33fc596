"""Small helpers shared by tests: build a file tree inline, copy the real repository's parts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def build_file_tree(root: Path, files: dict[str, str]) -> Path:
    """Write `{relative path: content}` under `root` (parents created); returns `root`."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


def copy_repo_parts(dest: Path, parts: tuple[str, ...] = (
    "charts", "schemas", "argo", "experiments", "tfgen.yaml",
)) -> Path:
    """Copy the real repository's chart, schemas, argo/, specs and config into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in parts:
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=shutil.ignore_patterns(".tfgen-cache"))
        elif source.is_file():
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
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo
