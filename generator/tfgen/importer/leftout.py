"""What an import leaves out, and why: every input field no spec carries, grouped by reason.

The conversion (`mapping`, `pods`) marks each field it used on its manifest; every other leaf
is said here with the reason the spec cannot carry it, at the line where its object starts.
Two groups are counted, not listed (`QUIET`): what the cluster and kubectl write on every
object (`BOOKKEEPING`: status, uid, resourceVersion, managedFields, the last-applied copy), as
an export holds dozens of such fields per object and nobody needs them named; and what the
runtime makes of the spec itself (`RUNTIME_MADE`: each task's Service, TF_CONFIG, the task
index, the task port), which tfgen writes again from the spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..repo import chart, runtimes
from .manifests import RUNTIME_MADE, Manifest, Path_, pointer

# Fields the cluster writes; an export from `kubectl get -o yaml` is full of them.
CLUSTER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                  "selfLink", "finalizers", "ownerReferences", "deletionTimestamp")

# What the cluster and kubectl write on every object: left out, counted, never listed field by
# field (an export holds dozens per object and nobody needs them named).
BOOKKEEPING = "what the cluster and kubectl write on every object"
# The counted groups, each with the examples that say what it holds.
# What tfgen's own chart wrote, in input that is its rendering (`chart.PART_OF`): tfgen writes
# it again from the spec.
CHART_MADE = "what tfgen's chart writes itself (the input is its rendering)"
QUIET = {
    BOOKKEEPING: "status, uid, resourceVersion, managedFields, ...",
    RUNTIME_MADE: f"each task's Service, TF_CONFIG, the task index, the port {runtimes.PORT_NAME}",
    CHART_MADE: "names, labels, ports, probes, the NetworkPolicies, ...",
}
_JOBS = " or ".join(sorted(runtimes.JOB_KINDS))
NO_FIELD = "the spec has no field for it"
# Why a field the spec cannot express is left out, by the last keys of its path.
REASONS: tuple[tuple[Path_, str], ...] = (
    (("status",), BOOKKEEPING),
    *((("metadata", key), BOOKKEEPING) for key in CLUSTER_FIELDS),
    (("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
     BOOKKEEPING),
    (("metadata", "name"),
     "tfgen derives every object name from the experiment name"),
    (("template", "metadata"), "tfgen sets the pod labels and annotations itself"),
    (("selector", "matchLabels"), "tfgen selects its pods by the labels it sets on them"),
    (("ttlSecondsAfterFinished",),
     "tfgen never sets a TTL: Argo CD would recreate the deleted TFJob and train again"),
    (("tensorBoard",), "v1alpha1's built-in TensorBoard; tfgen runs its own from the spec"),
    (("volumeHandle",), "tfgen sets it to the PV's name, as the NAS CSI driver requires"),
    (("limits", "cpu"), "tfgen sets no CPU limit (throttling slows training); the request "
                        "is kept"),
    (("ports",), "tfgen sets the container ports itself (the operator's tfjob-port 2222, "
                 "TensorBoard's 6006)"),
    (("tfPort",), "the operator gives each replica port 2222"),
)


def _reason(manifest: Manifest, parts: Path_) -> str:
    """Why the field at `parts` is left out: the reason the conversion recorded, else the
    first of the general reasons that applies."""
    for reason in (_recorded, _of_metadata, _of_field, _of_prefix):
        why = reason(manifest, parts)
        if why is not None:
            return why
    return NO_FIELD


def _recorded(manifest: Manifest, parts: Path_) -> str | None:
    """The reason the conversion gave for the field or one of its parents."""
    for length in range(len(parts), 0, -1):
        if parts[:length] in manifest.why:
            return manifest.why[parts[:length]]
    return None


def _of_metadata(manifest: Manifest, parts: Path_) -> str | None:
    """Labels, annotations and namespace of the objects around the job: tfgen's own."""
    if parts[:2] == ("metadata", "namespace"):
        return "tfgen puts every object in the spec's namespace (the training job's)"
    if parts[:1] != ("metadata",) or parts[1:2] not in (("labels",), ("annotations",)):
        return None
    last_applied = parts[-1:] == ("kubectl.kubernetes.io/last-applied-configuration",)
    if manifest.kind in runtimes.JOB_KINDS or last_applied:
        return None
    return "tfgen labels every object from the spec's metadata (taken from the training job)"


def _of_field(manifest: Manifest, parts: Path_) -> str | None:
    """The reason for a field of this name wherever it is (`REASONS`, by its last keys)."""
    for tail, why in REASONS:
        for start in range(len(parts) - len(tail) + 1):
            if parts[start:start + len(tail)] == tail:
                return why
    return None


def _of_prefix(manifest: Manifest, parts: Path_) -> str | None:
    """A label or annotation under a prefix tfgen, a runtime or Kueue writes."""
    in_labels = parts[:1] in (("metadata",), ("labels",), ("annotations",)) or "labels" in parts
    if in_labels and str(parts[-1]).startswith(chart.RESERVED_PREFIXES):
        return "tfgen sets labels and annotations with this prefix itself"
    return None


@dataclass
class LeftOut:
    """What the specs do not carry: each field a person may want to know of, grouped by the
    reason (`file:line:col: Kind/name path: value`, at the line where its object starts), and
    by each QUIET reason the objects it left something out of, only counted."""

    by_reason: dict[str, list[str]] = field(default_factory=dict)
    counted: dict[str, set[str]] = field(default_factory=dict)  # the objects (Kind/name)

    def add(self, reason: str, line: str) -> None:
        self.by_reason.setdefault(reason, []).append(line)

    def count(self, reason: str, ref: str) -> None:
        self.counted.setdefault(reason, set()).add(ref)


def _unused(manifest: Manifest) -> str:
    """Why a whole object is left out."""
    if () in manifest.why:
        return manifest.why[()]
    if manifest.kind == "Service":
        return "tfgen creates the TensorBoard's Service itself"
    return (f"not part of an imported experiment (a {_JOBS}, the claim its pods mount, that "
            "claim's PV, a TensorBoard Deployment on the same claim)")


def _chart_writes(manifest: Manifest, parts: Path_, reason: str,
                  again: Sequence[dict[str, Any]]) -> bool:
    """Whether a field left over from tfgen's own rendering is one its chart writes: what the
    general reasons say tfgen sets itself (names, labels, ports...), and a field no spec has
    that the chart writes again alike from the imported spec (`again`: its rendering, the
    object of the same kind); not what the conversion found it cannot carry, nor an edit made
    to the rendering."""
    if _recorded(manifest, parts) is not None:
        return False
    if reason != NO_FIELD:
        return True
    same = next((obj for obj in again if obj.get("kind") == manifest.kind), None)
    return same is not None and Manifest(same, "", 0).get(*parts) == manifest.get(*parts)


def leftovers(manifests: list[Manifest], used: list[Manifest],
              again: Sequence[dict[str, Any]] = ()) -> LeftOut:
    """Every input field the specs do not carry, grouped by why. Of tfgen's own rendering
    (`chart.rendered_by_chart`), what its chart writes is counted, not listed (the spec makes
    it again: `again` is the chart's rendering of the imported spec); what the conversion
    itself says it cannot carry, or an edit made to the rendering, is listed still."""
    out = LeftOut()
    for manifest in manifests:
        chart_made = chart.rendered_by_chart(manifest.get("metadata", "labels"))
        if not any(manifest is m for m in used):
            why = _unused(manifest)
            if chart_made and () not in manifest.why:
                why = CHART_MADE
            if why in QUIET:
                out.count(why, manifest.ref)
            else:
                out.add(why, f"{manifest.where}: {manifest.ref}")
            continue
        for parts, value in manifest.leftovers():
            reason = _reason(manifest, parts)
            if chart_made and reason not in QUIET and _chart_writes(manifest, parts, reason,
                                                                    again):
                reason = CHART_MADE
            if reason in QUIET:
                out.count(reason, manifest.ref)
                continue
            shown = repr(value) if not isinstance(value, str) else value
            if len(shown) > 80:
                shown = shown[:77] + "..."
            out.add(reason, f"{manifest.where}: {manifest.ref} {pointer(parts)}: {shown}")
    return out
