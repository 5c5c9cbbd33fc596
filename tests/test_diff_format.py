"""Per-object diffs of two rendered manifests, and their text/Markdown presentation."""

from __future__ import annotations

from tfgen.gate.diff import COMMENT_MARKER, DiffResult, diff_manifests, format_diff

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
    result = DiffResult(base="origin/main", experiments=["mnist"])
    huge = BEFORE.replace("      replicas: 2", "\n".join(f"      r{i}: {i}" for i in range(2000)))
    for i in range(40):
        result.diffs += diff_manifests(f"e{i}", BEFORE, huge)
    text = format_diff(result, "markdown", max_chars=20_000, max_object_lines=50)
    assert text.startswith(COMMENT_MARKER + "\n")
    assert len(text) < 21_000
    assert "more diff lines" in text
    assert "more object diff(s) not shown" in text
    assert text.count("<details>") == text.count("</details>")


def test_text_without_changes() -> None:
    assert "no rendered object changes" in format_diff(DiffResult(base="HEAD"), "text")
    assert "No rendered object changes." in format_diff(DiffResult(base="HEAD"), "markdown")


def test_markdown_opens_with_the_gpu_table() -> None:
    from tfgen.gate.diff import NamespaceGpus

    result = DiffResult(base="main", gpus=[NamespaceGpus("default", 3, 3, None),
                                           NamespaceGpus("ml-team", 5, 10, 8),
                                           NamespaceGpus("new-team", None, 2, 4)])
    text = format_diff(result, "markdown")
    lines = text.splitlines()
    assert lines[:2] == [COMMENT_MARKER, "### tfgen diff against `main`"]
    assert lines[3:8] == [
        "| Namespace | GPUs before | GPUs after | Quota |",
        "| --- | ---: | ---: | ---: |",
        "| `default` | 3 | 3 | none |",
        "| `ml-team` | 5 | 10 (+5) **over quota** | 8 |",
        "| `new-team` | ? | 2 | 4 |",
    ]
    assert "No rendered object changes." in text
    assert "GPUs" not in format_diff(result, "text")  # the table is for the comment
    assert "| Namespace |" not in format_diff(DiffResult(base="main"), "markdown")
