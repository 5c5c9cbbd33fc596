"""Rendering: specs -> the generated files in argo/, planned in memory, written atomically.

`plan_render` computes every file tfgen wants (per experiment: chart values and the
ApplicationSet generator input; once: the argo/ wiring from tfgen.yaml) and compares it with
the disk, returning a plan of file changes without writing anything. `--check` and
`tfgen check` stop there (the plan's diff is the drift); `apply_plan` writes it: new and
changed files via a temporary file in the same directory, fsync and `os.replace` (a reader
sees the old file or the new one, never half of one), unchanged files untouched (mtime kept),
orphans deleted only on request. A file without tfgen's header is never overwritten or
deleted: it is reported instead.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TfgenError
from ..problems import Problem
from . import argo as gitops
from .generated import GeneratedFile, dump_yaml, is_generated
from .values import build_values

_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,49}[a-z0-9])?$")
CREATE, UPDATE, UNCHANGED, ORPHAN, FOREIGN = "create", "update", "unchanged", "orphan", "foreign"
ACTIONS = (CREATE, UPDATE, UNCHANGED, ORPHAN, FOREIGN)


@dataclass(frozen=True)
class SourceExperiment:
    """A validated experiment and the repository-relative path of its spec file."""

    source: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class FileChange:
    """One generated path and what rendering would do to it.

    `new` is the wanted content (None for orphans), `old` what is on disk (None if absent).
    """

    path: str
    action: str
    new: str | None
    old: str | None
    sources: tuple[str, ...] = ()

    def diff(self) -> str:
        """Unified diff from the committed file to the generated one (git-style labels)."""
        old_label = f"a/{self.path}" if self.old is not None else "/dev/null"
        new_label = f"b/{self.path}" if self.new is not None else "/dev/null"
        return "".join(
            difflib.unified_diff(
                (self.old or "").splitlines(keepends=True),
                (self.new or "").splitlines(keepends=True),
                old_label,
                new_label,
            )
        )


@dataclass
class RenderPlan:
    """Every generated path, what would change, and the problems found while planning."""

    root: Path
    changes: list[FileChange]
    problems: list[Problem] = field(default_factory=list)

    def by_action(self, action: str) -> list[FileChange]:
        return [c for c in self.changes if c.action == action]

    def counts(self) -> dict[str, int]:
        return {action: len(self.by_action(action)) for action in ACTIONS}

    @property
    def drift(self) -> list[FileChange]:
        """Changes that make the committed tree differ from what tfgen generates."""
        return [c for c in self.changes if c.action in (CREATE, UPDATE, ORPHAN)]

    def diff(self) -> str:
        return "".join(change.diff() for change in self.drift)


@dataclass
class ApplyResult:
    """What `apply_plan` did: paths written and removed, plus orphans it left in place."""

    written: list[str]
    removed: list[str]
    kept_orphans: list[str]


def experiment_files(experiment: SourceExperiment) -> list[GeneratedFile]:
    """The two generated files of one experiment: chart values and generator input."""
    values = build_values(experiment.data)
    meta = values["experiment"]
    folder = f"{gitops.EXPERIMENTS_DIR}/{meta['name']}"
    return [
        GeneratedFile(f"{folder}/values.yaml", (experiment.source,), dump_yaml(values)),
        gitops.app_file(meta["name"], meta["namespace"], meta["owner"], experiment.source),
    ]


def wanted_files(
    experiments: Iterable[SourceExperiment], argocd: Mapping[str, Any]
) -> tuple[list[GeneratedFile], list[Problem]]:
    """Everything tfgen generates for these experiments and this Argo CD config."""
    files = gitops.argo_files(argocd)
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    allowed = set(argocd.get("namespaces") or ())
    reserved = {gitops.BOOTSTRAP_NAME: "the bootstrap Application"}
    for experiment in sorted(experiments, key=lambda e: e.source):
        metadata = experiment.data.get("metadata") or {}
        name = metadata.get("name", "")
        namespace = metadata.get("namespace", "default")
        # Names become folder names: never let one escape argo/experiments/ (the validator
        # already enforces DNS-1035; the library does not rely on being called after it).
        if not _DNS_1035.match(name or ""):
            problems.append(Problem(experiment.source, pointer="$.metadata.name",
                                    message=f"{name!r} is not a DNS-1035 label",
                                    hint="lower-case letters, digits and '-', at most 51"))
            continue
        # Application names share one namespace: a second spec with the same name would
        # silently take over the first one's Application.
        if name in seen:
            problems.append(Problem(experiment.source, pointer="$.metadata.name",
                                    message=f"experiment name {name!r} is already used by "
                                            f"{seen[name]}", hint="names are unique repo-wide"))
            continue
        if name in reserved:
            problems.append(Problem(experiment.source, pointer="$.metadata.name",
                                    message=f"{name!r} is the name of {reserved[name]}",
                                    hint="choose another experiment name"))
            continue
        if allowed and namespace not in allowed:
            problems.append(Problem(experiment.source, pointer="$.metadata.namespace",
                                    message=f"namespace {namespace!r} is not allowed by the "
                                            "Argo CD project",
                                    hint=f"one of {', '.join(sorted(allowed))}, or add it to "
                                         "argocd.namespaces in tfgen.yaml"))
            continue
        seen[name] = experiment.source
        files += experiment_files(experiment)
    return files, problems


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:  # bytes then decode: no newline translation, and
            raw = handle.read()  # cheaper than a text-mode file object
    except FileNotFoundError:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd"  # not text, so certainly not ours: reported as foreign


def _files_below(directory: Path) -> list[Path]:
    # Every file at any depth, as Path.rglob("*") + is_file() would find them (symlinked
    # folders are not entered), with one scandir per folder and no stat per plain file.
    found: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            found += _files_below(Path(entry.path))
        elif entry.is_file():
            found.append(Path(entry.path))
    return found


def _existing_generated_candidates(root: Path) -> list[Path]:
    # Only where tfgen writes: argo/*.yaml and everything below argo/experiments/.
    argo = root / gitops.ARGO_DIR
    found = [p for p in argo.glob("*.yaml") if p.is_file()]
    experiments = root / gitops.EXPERIMENTS_DIR
    if experiments.is_dir():
        found += _files_below(experiments)
    return sorted(found)


def plan_render(
    root: Path, experiments: Iterable[SourceExperiment], argocd: Mapping[str, Any]
) -> RenderPlan:
    """Render everything in memory and compare with the files under `root`; writes nothing."""
    files, problems = wanted_files(experiments, argocd)
    changes: list[FileChange] = []
    wanted_paths = set()
    for generated in files:
        wanted_paths.add(generated.path)
        old = _read(root / generated.path)
        new = generated.content
        if old is None:
            action = CREATE
        elif old == new:
            action = UNCHANGED
        elif not is_generated(old):
            action = FOREIGN
            problems.append(Problem(generated.path, message="exists but was not generated by "
                                    "tfgen (no tfgen header); left untouched",
                                    hint="move it away, then run `tfgen render`"))
        else:
            action = UPDATE
        changes.append(FileChange(generated.path, action, new, old, generated.sources))
    for path in _existing_generated_candidates(root):
        rel = path.relative_to(root).as_posix()
        if rel in wanted_paths:
            continue
        old = _read(path)
        if old is not None and is_generated(old):
            changes.append(FileChange(rel, ORPHAN, None, old))
        elif rel.startswith(gitops.EXPERIMENTS_DIR + "/"):
            # argo/experiments/ is fully generated: a hand-made app.yaml there would become
            # an Application, so a stranger is worth a look, but it is not ours to delete.
            changes.append(FileChange(rel, FOREIGN, None, old))
            problems.append(Problem(rel, message="not generated by tfgen (no tfgen header); "
                                    "left untouched", hint="argo/experiments/ holds only "
                                    "files written by `tfgen render`"))
    changes.sort(key=lambda c: c.path)
    return RenderPlan(root=root, changes=changes, problems=problems)


# Staging threads: writing a file is waiting on the file system (create, write, fsync), and
# fsyncs issued together share the journal commits that sequential ones each wait for.
WRITERS = 8


def _stage(target: Path, content: str, temps: dict[Path, Path]) -> None:
    """Write `content` to a new temporary file next to `target` and fsync it."""
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tfgen-tmp")
    temps[target] = Path(temp)  # recorded first, so it is removed whatever happens next
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stage_all(
    jobs: list[tuple[str, Path, str]], temps: dict[Path, Path]
) -> tuple[str, OSError] | None:
    """Stage every (path, target, content) in parallel; the first failure in plan order."""
    if not jobs:
        return None
    pool = ThreadPoolExecutor(max_workers=min(WRITERS, len(jobs)))
    interrupted = True  # by Ctrl-C, say: then the jobs not yet started are dropped
    try:
        futures = [pool.submit(_stage, target, content, temps) for _, target, content in jobs]
        wait(futures)
        interrupted = False
    finally:
        pool.shutdown(wait=True, cancel_futures=interrupted)
    for (rel, _, _), future in zip(jobs, futures, strict=True):
        error = None if future.cancelled() else future.exception()
        if isinstance(error, OSError):
            return rel, error
        if error is not None:
            raise error
    return None


def apply_plan(plan: RenderPlan, *, prune: bool = False) -> ApplyResult:
    """Write the plan: creates and updates atomically, orphans removed only with `prune`.

    All new contents are staged (written and fsynced next to their targets) before the first
    rename, so a failure while writing leaves every target untouched; a failure between
    renames leaves each file either wholly old or wholly new.
    """
    to_write = [c for c in plan.changes if c.action in (CREATE, UPDATE)]
    jobs = [(c.path, plan.root / c.path, c.new or "") for c in to_write]
    temps: dict[Path, Path] = {}
    written: list[str] = []
    folders: dict[Path, str] = {}  # each target folder, with the first path written into it
    current = ""
    try:
        for rel, target, _ in jobs:
            if target.parent not in folders:
                current = rel
                target.parent.mkdir(parents=True, exist_ok=True)
                folders[target.parent] = rel
        failed = _stage_all(jobs, temps)
        if failed:
            current = failed[0]
            raise failed[1]
        for rel, target, _ in jobs:
            current = rel
            os.replace(temps[target], target)
            written.append(rel)
        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            list(pool.map(_fsync_dir, sorted(folders)))
    except OSError as exc:
        raise TfgenError(
            f"cannot write {current}: {exc.strerror or exc}; {len(written)} of "
            f"{len(to_write)} files written, each one complete (run `tfgen render` again)"
        ) from exc
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    removed: list[str] = []
    kept: list[str] = []
    for change in plan.by_action(ORPHAN):
        if not prune:
            kept.append(change.path)
            continue
        path = plan.root / change.path
        # Re-check right before deleting: only ever remove a file that still carries the header.
        on_disk = _read(path)
        if on_disk is None or not is_generated(on_disk):
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise TfgenError(f"cannot remove orphan {change.path}: {exc.strerror or exc}") from exc
        removed.append(change.path)
        _remove_empty_parents(path.parent, plan.root / gitops.EXPERIMENTS_DIR)
    return ApplyResult(written=written, removed=removed, kept_orphans=kept)


def _remove_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _source_experiments(experiments: Iterable[Any], root: Path) -> list[SourceExperiment]:
    # validate.Experiment: `source` is the spec file, `data` the completed document. The
    # source is named relative to the resolved repository root; a file that is not a symlink
    # resolves to its resolved folder plus its name, so each folder is resolved once.
    base = root.resolve()
    folders: dict[Path, Path] = {}
    out = []
    for experiment in experiments:
        path = Path(experiment.source)
        if path.is_symlink():
            resolved = path.resolve()
        else:
            if path.parent not in folders:
                folders[path.parent] = path.parent.resolve()
            resolved = folders[path.parent] / path.name
        try:
            source = resolved.relative_to(base).as_posix()
        except ValueError:
            source = path.as_posix()
        out.append(SourceExperiment(source=source, data=experiment.data))
    return out


def plan_for_repository(root: Path | None = None) -> tuple[RenderPlan | None, list[Problem]]:
    """Validate every spec under the repository's experiments/ and plan the render.

    Returns (None, problems) when any spec is invalid: nothing is rendered from a repository
    that does not validate, so a half-valid tree never reaches Argo CD.
    """
    from ..spec.config import load_config
    from ..spec.validate import is_spec_name, validate_repo

    config = load_config([], cwd=root)
    try:
        specs = [n for n in os.listdir(config.experiments_dir) if is_spec_name(n)]
    except OSError:  # no experiments/ folder
        specs = []
    if not specs:
        # No experiment left (the last one retired) is a valid state: argo/ keeps the wiring
        # and every per-experiment file becomes an orphan.
        return plan_render(config.root, [], config.argocd), []
    result = validate_repo(cwd=root)
    if result.problems:
        return None, list(result.problems)
    assert result.config is not None  # validate_repo always loads one
    repo_root = result.config.root
    experiments = _source_experiments(result.experiments, repo_root)
    return plan_render(repo_root, experiments, result.config.argocd), []
