"""Per-object diffs of two rendered manifests, and their text/Markdown presentation."""

from __future__ import annotations

from tfgen.gate.diff.changes import DiffResult, ExperimentChange, diff_manifests
from tfgen.gate.diff.gpus import NamespaceGpus
from tfgen.gate.diff.report import COMMENT_MARKER, format_diff, gpus_cell, objects_cell, summary

BEFORE = """---
# Source: c/templates/tfjob.yaml
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  namespace: default
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
---
# Source: c/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: mnist-tensorboard
  namespace: default
"""


def test_changed_added_removed_objects() -> None:
    after = BEFORE.replace("replicas: 2", "replicas: 3").replace(
        "kind: Service", "kind: ConfigMap")
    diffs = diff_manifests("mnist", BEFORE, after)
    assert [(d.ref, d.status) for d in diffs] == [
        ("ConfigMap/mnist-tensorboard", "added"),
        ("Service/mnist-tensorboard", "removed"),
        ("TFJob/mnist", "changed"),
    ]
    changed = diffs[2].diff
    assert "-      replicas: 2\n+      replicas: 3\n" in changed
    assert changed.startswith("--- a/TFJob/default/mnist\n+++ b/TFJob/default/mnist\n")
    assert "# Source:" not in changed
    assert diff_manifests("mnist", BEFORE, BEFORE) == []


def test_markdown_is_one_sticky_comment_and_truncates() -> None:
    result = DiffResult(base="origin/main")
    huge = BEFORE.replace("      replicas: 2", "\n".join(f"      r{i}: {i}" for i in range(2000)))
    for i in range(40):
        result.changes.append(ExperimentChange(f"e{i}", "changed", 1, 1))
        result.diffs += diff_manifests(f"e{i}", BEFORE, huge)
    text = format_diff(result, "markdown", full=True, max_chars=20_000, max_object_lines=50)
    assert text.startswith(COMMENT_MARKER + "\n")
    assert len(text) < 20_000
    assert "more lines" in text
    assert "more objects not shown" in text
    assert text.count("<details>") == text.count("</details>") == 1
    assert text.index("| `e0` | changed | 1 changed: TFJob | 1 |") < text.index("<details>")
    tiny = format_diff(result, "markdown", max_chars=1_000)
    assert len(tiny) < 1_000
    assert "more experiments not shown (comment size limit)" in tiny
    short = format_diff(result, "markdown")
    assert "<details>" not in short and "```" not in short
    assert "Every object in full: `tfgen diff --base origin/main --full`." in short


# One new experiment: its row, and nothing else unless --full.
NEW = DiffResult(base="main", experiments=["mnist-rerun"],
                 changes=[ExperimentChange("mnist-rerun", "added", None, 3)],
                 diffs=diff_manifests("mnist-rerun", "", BEFORE + BEFORE.replace(
                     "name: mnist-tensorboard", "name: other")))


def test_one_new_experiment_is_one_row() -> None:
    assert format_diff(NEW, "text").splitlines() == [
        "EXPERIMENT   CHANGE  OBJECTS                    GPUS",
        "mnist-rerun  added   3 added: 2 Service, TFJob  none -> 3",
    ]
    assert summary(NEW, full=False) == (
        "Against main: 1 experiment added (3 objects added). Next: `tfgen diff --base main "
        "--full` shows every object")
    full = format_diff(NEW, "text", full=True)
    assert full.startswith(format_diff(NEW, "text") + "\n\n=== mnist-rerun: Service/")
    assert full.count("=== mnist-rerun:") == 3
    assert "| `mnist-rerun` | added | 3 added: 2 Service, TFJob | none → 3 |" in format_diff(
        NEW, "markdown")


def test_cells_say_what_changed() -> None:
    diffs = (diff_manifests("a", BEFORE, BEFORE.replace("replicas: 2", "replicas: 3"))
             + diff_manifests("a", "", BEFORE.replace("kind: Service", "kind: ConfigMap")))
    assert objects_cell(diffs) == "2 added: ConfigMap, TFJob; 1 changed: TFJob"
    assert gpus_cell(ExperimentChange("a", "changed", 2, 4)) == "2 -> 4 (+2)"
    assert gpus_cell(ExperimentChange("a", "changed", 2, 2)) == "2"
    assert gpus_cell(ExperimentChange("a", "removed", 2, None)) == "2 -> none"
    assert gpus_cell(ExperimentChange("a", "changed", None, 2)) == "? -> 2"
    # a queued run requests its GPUs all the same; the cell says who admits it
    assert gpus_cell(ExperimentChange("a", "added", None, 12, queued=True)) == "none -> 12 queued"
    assert gpus_cell(ExperimentChange("a", "changed", 4, 4, queued=True)) == "4 queued"
    both = DiffResult(base="HEAD", changes=[ExperimentChange("a", "changed", 2, 4)],
                      diffs=diffs)
    assert summary(both, full=True) == (
        "Against HEAD: 1 experiment changed (3 objects: 2 added, 1 changed). Next: "
        "review the objects above, then open the pull request")


def test_text_without_changes() -> None:
    assert format_diff(DiffResult(base="HEAD"), "text") == ""  # the summary says it
    assert summary(DiffResult(base="HEAD"), full=False).startswith(
        "Nothing changes in the cluster against HEAD.")
    assert "No rendered object changes." in format_diff(DiffResult(base="HEAD"), "markdown")


def test_markdown_opens_with_the_gpu_table() -> None:
    result = DiffResult(base="main", gpus=[NamespaceGpus("default", 3, 3, None, 4, 16),
                                           NamespaceGpus("ml-team", 5, 10, 8),
                                           NamespaceGpus("new-team", None, 2, 4, None, 1)])
    text = format_diff(result, "markdown")
    lines = text.splitlines()
    assert lines[:2] == [COMMENT_MARKER, "### tfgen diff against `main`"]
    assert lines[3:8] == [
        "| Namespace | GPUs before | GPUs after | Quota | Queued GPUs (Kueue) |",
        "| --- | ---: | ---: | ---: | ---: |",
        "| `default` | 3 | 3 | none | 16 (+12) |",
        "| `ml-team` | 5 | 10 (+5) **over quota** | 8 | 0 |",
        "| `new-team` | ? | 2 | 4 | 1 |",
    ]
    assert "No rendered object changes." in text
    assert "GPUs" not in format_diff(result, "text")  # the table is for the comment
    assert "| Namespace |" not in format_diff(DiffResult(base="main"), "markdown")


JOBSET = BEFORE.replace("apiVersion: kubeflow.org/v1\nkind: TFJob", "apiVersion: "
                        "jobset.x-k8s.io/v1alpha2\nkind: JobSet").replace(
    "  tfReplicaSpecs:\n    Worker:\n      replicas: 2",
    "  replicatedJobs:\n  - name: worker\n    replicas: 1\n    template:\n      spec:\n"
    "        completions: 2")


def test_a_jobset_is_named_as_a_jobset_and_a_new_runtime_as_a_new_job() -> None:
    """The objects cell names each job by its kind: a JobSet's change is a JobSet's, and a
    spec moved to another runtime removes one kind of job and adds the other."""
    changed = diff_manifests("mnist", JOBSET, JOBSET.replace("completions: 2", "completions: 3"))
    assert objects_cell(changed) == "1 changed: JobSet"
    assert changed[0].diff.startswith("--- a/JobSet/default/mnist\n")
    moved = diff_manifests("mnist", BEFORE, JOBSET)
    assert objects_cell(moved) == "1 added: JobSet; 1 removed: TFJob"


def test_the_cluster_column_appears_where_a_repository_names_clusters() -> None:
    moved = DiffResult(base="main", experiments=["a"], changes=[
        ExperimentChange("a", "changed", 2, 2, cluster_before="gpu-a", cluster_after="gpu-b"),
        ExperimentChange("b", "added", None, 1, cluster_after="gpu-a")])
    assert format_diff(moved, "text").splitlines() == [
        "EXPERIMENT  CLUSTER         CHANGE   OBJECTS  GPUS",
        "b           gpu-a           added             none -> 1",
        "a           gpu-a -> gpu-b  changed           2",
    ]
    markdown = format_diff(moved, "markdown")
    assert "| Experiment | Cluster | Change | Objects | GPUs |" in markdown
    assert "| `a` | gpu-a → gpu-b | changed |  | 2 |" in markdown
    # one implicit cluster: no column
    single = DiffResult(base="main", experiments=["a"], changes=[
        ExperimentChange("a", "changed", 2, 2, cluster_before="in-cluster",
                         cluster_after="in-cluster")])
    assert format_diff(single, "text").splitlines()[0].split() == [
        "EXPERIMENT", "CHANGE", "OBJECTS", "GPUS"]
