"""The gate and the API server agree, both ways.

- Every spec tfgen accepts (the valid fixtures, both runtimes) renders to objects the server
  accepts, applied as Argo CD applies them (client-side, dry run): the CRDs' schemas and CEL
  rules, every webhook, the size of what the apply writes.
- Every spec of the corpus below, which tfgen refuses for a reason the server owns (a name or
  label format or length, a quantity, a runtime's own validation), renders (its values built
  as render would build them, without the gate) to an object the server refuses too.

A case where tfgen refuses and the server would not is a refusal tfgen justifies on its own
and is not in this corpus: a TFJob whose name leaves the operator's pod and Service names
longer than 63 characters is taken by the server (the chart cuts its own names at 63), and its
pods never come; tfgen refuses it for that. A case where the server refuses and tfgen does not
is a bug.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, mnist_written, template
from tfgen.cli import main
from tfgen.gate.documents.manifests import parse_manifest
from tfgen.gate.helm.command import RenderJob, find_helm, run, template_command
from tfgen.validate.rules.values import build_values
from tfgen.validate.schema.defaults import apply_defaults

pytestmark = pytest.mark.lab

CHART = REPO_ROOT / "charts" / "tfjob-experiment"
VALID = sorted((REPO_ROOT / "tests" / "fixtures" / "specs" / "valid").glob("*.yaml"))
Doc = dict[str, Any]


def _server_refusals(lab: Any, objects: list[Doc], namespace: str) -> str:
    """What the server says of `objects` applied as Argo CD applies them (`kubectl apply`,
    client-side: the last-applied-configuration annotation written) in a dry run: "" when it
    accepts them all."""
    lab.kubectl("create", "namespace", namespace, check=False)  # there already: fine
    done = lab.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", check=False,
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    if done.returncode != 0 or len(done.stdout.splitlines()) != len(objects):
        return done.stderr or done.stdout
    return ""


@pytest.mark.parametrize("spec", VALID, ids=lambda p: p.stem)
def test_what_tfgen_accepts_the_server_accepts(lab: Any, tmp_path: Path, spec: Path) -> None:
    # the spec alone in a copy of this repository, rendered as its user would
    root = copy_repo_parts(tmp_path / "repo", ("charts", "schemas", "tfgen.yaml"))
    (root / "experiments").mkdir()
    shutil.copy(spec, root / "experiments" / spec.name)
    done = subprocess.run([sys.executable, "-m", "tfgen", "render"], cwd=root,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    apps = sorted((root / "argo" / "experiments").glob("*/app.yaml"))
    assert apps
    for app in apps:
        namespace = yaml.safe_load(app.read_text())["namespace"]
        objects = parse_manifest(template(CHART, app.parent.name, namespace,
                                          [app.parent / "values.yaml"]))
        assert objects, app
        assert _server_refusals(lab, [o.doc for o in objects], namespace) == "", app


def _set(*path: str | int, value: Any) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]  # type: ignore[index]
        node[path[-1]] = value  # type: ignore[index]
    return edit


def _jobset(edit: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def both(doc: Doc) -> None:
        doc["spec"]["runtime"] = "jobset"
        edit(doc)
    return both


# (id, the edit to the walkthrough spec as written, what tfgen's refusal says, what the
# server's says); each a reason the server owns
REFUSED = [
    ("name-not-a-dns-label", _set("metadata", "name", value="Mnist"),
     "name", "RFC 1123"),
    ("label-value-with-a-space", _set("metadata", "labels", value={"team": "vision team"}),
     "team", "a valid label must be an empty string or consist of alphanumeric characters"),
    ("annotation-key-with-a-space", _set("metadata", "annotations", value={"bad key": "x"}),
     "bad key", "name part must consist of alphanumeric characters"),
    ("memory-not-a-quantity", _set("spec", "roles", "worker", "memory", value="8GB"),
     "memory", "quantities must match the regular expression"),
    ("cpu-not-a-quantity", _set("spec", "roles", "ps", "cpu", value="2 cores"),
     "cpu", "quantities must match the regular expression"),
    ("jobset-name-longer-than-its-pods-take",
     _jobset(_set("metadata", "name", value="j" * 50)),
     "name", "JobSet name is too long, pod names generated for this JobSet will exceed 63"),
    # each arg far within what a process takes; every role repeats them, and the apply keeps
    # the whole TFJob in one annotation
    ("too-big-for-the-apply", _set("spec", "args",
                                   value=[f"--flag{i}={'x' * 1200}" for i in range(90)]),
     "last-applied-configuration", "metadata.annotations: Too long: may not be more than 262144"),
]


@pytest.mark.parametrize(("edit", "gate_says", "server_says"),
                         [pytest.param(*case[1:], id=case[0]) for case in REFUSED])
def test_what_tfgen_refuses_for_the_servers_reason_the_server_refuses(
        lab: Any, tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch,
        edit: Callable[[Doc], None], gate_says: str, server_says: str) -> None:
    written = mnist_written()
    edit(written)
    name, namespace = written["metadata"]["name"], written["metadata"]["namespace"]
    # the gate: `tfgen check` of the repository holding the spec
    root = copy_repo_parts(tmp_path / "repo", ("charts", "schemas", "tfgen.yaml"))
    spec = root / "experiments" / f"{name.lower()}.yaml"
    spec.parent.mkdir()
    spec.write_text(yaml.safe_dump(written, sort_keys=False))
    monkeypatch.chdir(root)
    runner.invoke(main, ["render"], catch_exceptions=False)  # refused or not: the gate says
    refused = runner.invoke(main, ["check"], catch_exceptions=False)  # the pull-request gate
    assert refused.exit_code == 1 and gate_says in refused.output, refused.output
    # the server: the objects render would write for it, with neither the gate nor the
    # chart's values schema (tfgen's too) nor helm's release-name rule in the way
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps(build_values(apply_defaults(copy.deepcopy(written)))))
    job = RenderJob("unchecked", namespace, CHART, (values,))
    objects = parse_manifest(run(template_command(find_helm(), job, skip_schema_validation=True)))
    said = _server_refusals(lab, [o.doc for o in objects], namespace)
    assert server_says in said, said
