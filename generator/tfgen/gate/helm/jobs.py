"""What the gate asks helm to render and what comes back: one `helm template` per Application,
with exactly its parameters (`jobs_for`), and each one's manifest or helm's error
(`RenderResult`), whether a batch rendered it, a plain `helm template` or the cache gave it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..argo.applications import ResolvedApplication
from .command import RenderJob


def jobs_for(applications: Sequence[ResolvedApplication], kube_version: str) -> list[RenderJob]:
    """One helm run per Application, with exactly the Application's parameters."""
    return [job_for(app, kube_version) for app in applications]


def job_for(app: ResolvedApplication, kube_version: str,
            values_files: Sequence[Path] | None = None) -> RenderJob:
    """The helm run of one Application; with `values_files` in place of its own (its values
    at another revision, or as `tfgen render` would write them)."""
    files = app.value_files if values_files is None else values_files
    return RenderJob(name=app.release_name, namespace=app.namespace, chart=app.chart_dir,
                     values_files=tuple(files), kube_version=kube_version)


@dataclass
class RenderResult:
    """The canonical manifest of one job, or helm's error for it; `values`: what the judge
    reads of the job's value files merged (`chart.job_values`), when the batch read them (then
    the judge need not read them again; a batch waiting to be judged holds no more)."""

    job: RenderJob
    manifest: str = ""
    error: str = ""
    values: dict[str, Any] | None = None
