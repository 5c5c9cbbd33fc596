"""The runtimes an experiment can run on, behind one interface (`base.Runtime`).

`spec.runtime` names one (`by_name`); a rendered object is known as a runtime's job by its
apiVersion and kind (`of_object`), a job to import by its kind alone (`of_kind`: import reads
older API versions too). Every command asks these instead of naming a runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import (
    CONTAINER,
    PORT,
    PORT_NAME,
    VERSION_SOURCE,
    PodTemplate,
    Refusal,
    Runtime,
    group_of,
)
from .jobset import JOBSET
from .tfjob import TFJOB

# Every runtime, the default (the schema's default of spec.runtime) first.
RUNTIMES: tuple[Runtime, ...] = (TFJOB, JOBSET)
DEFAULT = RUNTIMES[0]
# The runtime of queued runs where nobody chose one: the first whose Kueue integration is on
# without configuring Kueue.
QUEUED_DEFAULT = next(runtime for runtime in RUNTIMES if runtime.kueue_framework_by_default)
_BY_NAME = {runtime.name: runtime for runtime in RUNTIMES}
_BY_KEY = {runtime.key: runtime for runtime in RUNTIMES}
# The chart values key naming the runtime (`repo/chart.py` lists it among the job's values).
VALUES_KEY = "runtime"
# The job kinds, for whoever counts or finds the training jobs among rendered objects.
JOB_KINDS = frozenset(runtime.kind for runtime in RUNTIMES)
_BY_KIND = {runtime.kind: runtime for runtime in RUNTIMES}
# Every prefix of the labels and annotations the runtimes' controllers write (`repo/chart.py`
# reserves them, with the chart's own and Kueue's).
LABEL_PREFIXES = tuple(prefix for runtime in RUNTIMES for prefix in runtime.label_prefixes)


def by_name(name: object) -> Runtime:
    """The runtime `spec.runtime` names (the default for anything else: the schema refuses it)."""
    return _BY_NAME.get(str(name), DEFAULT)


def of_object(api_version: object, kind: object) -> Runtime | None:
    """The runtime whose job this rendered object is, None for any other object."""
    return _BY_KEY.get((str(api_version), str(kind)))


def of_kind(kind: str) -> Runtime:
    """The runtime whose job kind `kind` is (one of JOB_KINDS: the caller found it there)."""
    return _BY_KIND[kind]


def of_values(values: Mapping[str, Any]) -> Runtime:
    """The runtime of an experiment's chart values."""
    return by_name(values.get(VALUES_KEY))


__all__ = ["CONTAINER", "DEFAULT", "JOB_KINDS", "LABEL_PREFIXES", "PORT", "PORT_NAME",
           "QUEUED_DEFAULT", "RUNTIMES",
           "PodTemplate", "Refusal", "Runtime", "VALUES_KEY", "VERSION_SOURCE", "by_name",
           "group_of", "of_kind", "of_object", "of_values"]
