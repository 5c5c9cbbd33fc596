"""The import stage: existing training jobs, PV/PVC and TensorBoard manifests -> specs.

`import_manifests` is the way in (`tfgen import`): it reads the input (`manifests`), brings
each training job to one shape (a TFJob of any API version: `versions`; a JobSet of the shape
tfgen renders, through the TFJob it stands for: `jobsets`), maps it with its claim, volume and
TensorBoard to a spec (`mapping`), validates each spec as `tfgen validate` would, and writes
them only when every one is valid and new (`write`). Nothing is dropped silently: the result
lists every input field no spec carries, with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionsError, ProblemsFound
from ..problems import Problem, errors_of, warnings_of
from ..repo import layout, runtimes
from ..validate.config.load import RepoConfig, load_config
from .jobs import Job, read_job, task_services
from .leftout import LeftOut, leftovers
from .manifests import Manifest, ManifestError, read_manifests
from .mapping import Imported, build_spec
from .write import problems_of, refuse_blocked, spec_text, target, write_new

__all__ = ["ImportResult", "ManifestError", "import_manifests"]


@dataclass
class ImportResult:
    """The specs made (name -> text), where they were written, what the input said that they
    do not (`left_out`), and changes in meaning (`notes`)."""

    specs: dict[str, str]
    written: list[str] = field(default_factory=list)
    left_out: LeftOut = field(default_factory=LeftOut)
    notes: list[str] = field(default_factory=list)


def git_email(cwd: Path | None = None) -> str | None:
    """Who runs the import, as Git knows them (`git config user.email`): the default owner."""
    git = shutil.which("git")
    if git is None:
        return None
    found = subprocess.run([git, "config", "user.email"], cwd=cwd, capture_output=True,
                           text=True, check=False)
    return found.stdout.strip() or None if found.returncode == 0 else None


def _repository_for(write: bool, cwd: Path | None) -> RepoConfig:
    config = load_config(cwd=cwd)
    if write and config.path is None:
        raise OptionsError(f"{(cwd or Path.cwd()).resolve()}: not inside a tfgen repository "
                           f"(no {layout.CONFIG_NAME} here or above); run --write in one")
    return config


_KINDS = " or ".join(sorted(runtimes.JOB_KINDS))


def _jobs(manifests: list[Manifest]) -> list[Manifest]:
    """The input's training jobs (any runtime's); ManifestError for none, or for two of one
    name in one namespace."""
    jobs = [m for m in manifests if m.kind in runtimes.JOB_KINDS]
    if not jobs:
        raise ManifestError(f"no {_KINDS} in the input; tfgen import makes one spec per "
                            "training job")
    seen: dict[tuple[str, str], str] = {}
    for job in jobs:
        key = (job.namespace, job.name)
        if key in seen:
            raise ManifestError(f"{job.where}: a second training job named {job.name!r}, a "
                                f"{job.kind} (the first is at {seen[key]}); keep one of them")
        seen[key] = job.where
    return jobs


def _read(job: Manifest, manifests: list[Manifest]) -> Job:
    """A training job in one shape, as its runtime reads it. The Services its runtime makes
    are set aside."""
    read = read_job(job)
    for service in task_services(read, manifests):
        service.runtime_made(())
    return read


def _owner(owner: str | None, cwd: Path | None) -> str:
    owner = owner or git_email(cwd)
    if not owner:
        raise OptionsError("--owner is needed: every spec names who answers for it "
                           "(metadata.owner, e.g. someone@example.com), and Git has no "
                           "user.email here to use instead")
    return owner


def _spec_names(jobs: list[Manifest], name: str | None) -> list[str]:
    names = [name or job.name for job in jobs]
    if len(set(names)) < len(names):
        raise ManifestError("training jobs of the same name in different namespaces would be "
                            "one experiment; import them one at a time with --name")
    return names


def _refuse_existing(config: RepoConfig, imported: list[Imported]) -> None:
    for item in imported:
        path = target(config, item.name)
        if os.path.lexists(path):
            raise ManifestError(f"{layout.shown(path, config.root)}: exists already; tfgen "
                                "import never overwrites a spec (choose another --name, or "
                                "remove the file)")


def _validated(config: RepoConfig, manifests: list[Manifest], imported: list[Imported]
               ) -> ImportResult:
    """The specs' texts, what they leave out and the notes; ProblemsFound if any is invalid."""
    used = [m for item in imported for m in item.used]
    result = ImportResult(specs={}, left_out=leftovers(manifests, used))
    problems: list[Problem] = []
    for item in imported:
        text = spec_text(item.spec, [m.shown for m in item.used])
        result.specs[item.name] = text
        result.notes.extend(item.notes)
        problems += problems_of(config, item.name, text)
    if errors_of(problems):
        raise ProblemsFound(problems, "the imported spec would not be valid (the problems "
                            "name its fields); nothing written: fix those in the input")
    result.notes.extend(p.text() for p in sorted(warnings_of(problems)))
    return result


def import_manifests(
    paths: Sequence[Path | str], *, name: str | None = None, owner: str | None = None,
    write: bool = False, cwd: Path | None = None,
) -> ImportResult:
    """Read `paths`, make one spec per training job, validate every one and, with `write`,
    write them to experiments/ (all or none). ManifestError for input that cannot be imported,
    ProblemsFound when a spec would be invalid, OptionsError for options that do not fit."""
    config = _repository_for(write, cwd)
    manifests = read_manifests(paths)
    jobs = _jobs(manifests)
    if name is not None and len(jobs) > 1:
        raise OptionsError(f"--name names one spec, and the input has {len(jobs)} training "
                           "jobs; import them one at a time or without --name")
    owner = _owner(owner, cwd)
    imported: list[Imported] = [
        build_spec(_read(job, manifests), manifests, spec_name, owner)
        for job, spec_name in zip(jobs, _spec_names(jobs, name), strict=True)
    ]
    if write:  # said first: a spec that exists would also fail validation as a duplicate
        refuse_blocked(config, [item.name for item in imported])
        _refuse_existing(config, imported)
    result = _validated(config, manifests, imported)
    if write:
        for spec_name, text in result.specs.items():
            path = target(config, spec_name)
            write_new(path, text)
            result.written.append(layout.shown(path, config.root))
    return result
