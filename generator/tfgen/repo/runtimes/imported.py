"""A training job being imported, as every runtime reads it back into the spec's shape.

`tfgen import` hands each training job to the runtime of its kind (`Runtime.read_job`), which
knows where its roles' pod templates are, how many replicas each has, and which fields its
controller or tfgen's chart writes. The importer holds the job (`JobSource`: a manifest that
knows its file and line) and gets back one shape for every runtime (`ImportedJob`): its roles
(`Replica`, each naming where its pod template is) and its run policy; `importer/` turns that
into a spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Path_ = tuple[str | int, ...]  # a field of the job, as keys and list indexes


class JobSource(Protocol):
    """A job as the importer holds it. Each field the runtime carries into the spec is taken
    (`take`); what the runtime itself makes is set aside (`runtime_made`); what the spec cannot
    carry the way the job says it is left out with the reason (`leave_out`)."""

    doc: dict[str, Any]

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...

    def get(self, *parts: str | int) -> Any:
        """The value at `parts`, None when absent."""

    def sequence(self, *parts: str | int) -> list[Any]:
        """The list at `parts` ([] when absent); refused when it is something else."""

    def take(self, *parts: str | int) -> Any:
        """The value at `parts`, marked as carried into the spec."""

    def runtime_made(self, parts: Path_) -> None:
        """The field at `parts` is the runtime's own: tfgen writes it again from the spec."""

    def leave_out(self, parts: Path_, why: str) -> None:
        """The field at `parts` is not imported, for the reason `why`."""

    def refused(self, parts: Path_, what: str) -> Exception:
        """The error that refuses the job at the field `parts` (the job itself for ())."""


@dataclass
class Replica:
    """One replica group: its spec role, where its pod template is, and what the job says."""

    role: str
    written: str  # the type as the input spells it (MASTER, Worker, ...)
    template: Path_  # path of the pod template in the job
    replicas: int | None
    restart_policy: str | None
    default_image: str | None = None  # v1alpha1's spec.tfImage


@dataclass
class ImportedJob:
    """A training job of any runtime and version in one shape: its replica groups, its run
    policy (the spec's runPolicy fields), and the runtime (the spec's `spec.runtime`)."""

    replicas: list[Replica]
    run_policy: dict[str, Any]
    runtime: str
