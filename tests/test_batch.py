"""Batched helm rendering gives exactly the per-experiment output, fails per experiment, caches.

These use a tiny chart written here (values with nulls, a strict values schema, a `required`)
so the umbrella mechanics are proven independently of the real chart; test_check.py proves
the same identity on charts/tfjob-experiment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT, build_file_tree, mnist_spec
from test_yaml_types import TRICKY
from tfgen.gate.helm import command as helm_mod
from tfgen.gate.helm.batch import BatchRenderer
from tfgen.gate.helm.command import RenderJob, find_helm
from tfgen.gate.helm.probe import FAST
from tfgen.gate.helm.umbrella import canonical_manifest
from tfgen.gate.helm.values import coalesce, files_merged, merge_values
from tfgen.render.generated import GeneratedFile, dump_yaml
from tfgen.repo.cache import Cache
from tfgen.repo.keys import content_hash
from tfgen.validate.rules.values import build_values

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
    "values.yaml": "experiment: {name: '', namespace: default}\nreplicas: 1\n"
                   "extra: {a: 1, b: 2}\n",
    "values.schema.json": json.dumps({
        "type": "object", "additionalProperties": False,
        "properties": {"experiment": {"type": "object"}, "replicas": {"type": "integer"},
                       "extra": {"type": "object"}},
    }),
    "templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: {{ required \"experiment.name is required\" .Values.experiment.name }}\n"
        "  namespace: {{ .Values.experiment.namespace }}\n"
        "data:\n  replicas: {{ .Values.replicas | quote }}\n"
        "  extra: {{ toJson .Values.extra | quote }}\n"
    ),
    "templates/svc.yaml": (
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Values.experiment.name }}\n"
        "spec:\n  ports: [{port: 80}]\n"
    ),
    "templates/NOTES.txt": "hello\n",
}


def _jobs(tmp_path: Path, chart: Path) -> list[RenderJob]:
    jobs = []
    for i in range(5):
        values = {"experiment": {"name": f"x{i}"}, "replicas": i,
                  # a null deletes a chart default: Helm 4 ignores parent nulls in subcharts
                  "extra": {"a": None} if i % 2 else {"c": 3}}
        path = tmp_path / f"v{i}.yaml"
        path.write_text(dump_yaml(values))  # as tfgen writes values: batched
        jobs.append(RenderJob(f"x{i}", "team-a", chart, (path,), "1.30"))
    return jobs


@pytest.fixture(params=[4, 3], ids=["helm4", "helm3"])
def helm(request: pytest.FixtureRequest) -> str:
    return find_helm(request.param)


def test_batched_output_is_identical_to_single_runs(tmp_path: Path, helm: str) -> None:
    chart = build_file_tree(tmp_path / "tiny", CHART)
    jobs = _jobs(tmp_path, chart)
    renderer = BatchRenderer(helm=helm, workers=1)
    batched = renderer.render(jobs)
    assert renderer.stats.helm_processes == 2  # the chart's defaults as helm reads them; all
    for job, result in zip(jobs, batched, strict=True):
        single = renderer.render_single(job)
        assert not result.error and not single.error
        assert result.manifest == single.manifest
    assert '"{\\"b\\":2}"' in batched[1].manifest  # the null removed key a
    assert batched[0].manifest.startswith("---\n# Source: tiny/templates/cm.yaml\n")


def test_batches_in_turn_in_one_folder_render_their_own_values(tmp_path: Path,
                                                               helm: str) -> None:
    """One worker renders batch after batch in the one folder it writes umbrella charts in:
    each batch renders its own experiments' values, as a single run of each does."""
    chart = build_file_tree(tmp_path / "tiny", CHART)
    jobs = _jobs(tmp_path, chart)
    renderer = BatchRenderer(helm=helm, workers=1, chunk_size=2)
    batched = renderer.render(jobs)
    assert renderer.stats.helm_processes == 4  # the chart's defaults, then 2 + 2 + 1
    for job, result in zip(jobs, batched, strict=True):
        assert not result.error and result.manifest == renderer.render_single(job).manifest


def test_helm_runs_with_tfgens_collector_settings_unless_the_user_has_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the output is the same either way: the repo-server test below renders without them
    print_env = [sys.executable, "-c", "import os; print(os.environ.get('GOGC'), "
                 "os.environ.get('GOMEMLIMIT'))"]
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    assert helm_mod.run(print_env).split() == [helm_mod.GC_SETTINGS["GOGC"],
                                              helm_mod.GC_SETTINGS["GOMEMLIMIT"]]
    monkeypatch.setenv("GOMEMLIMIT", "1GiB")
    assert helm_mod.run(print_env).split() == ["None", "1GiB"]


def test_failing_experiment_gets_its_own_error(tmp_path: Path) -> None:
    chart = build_file_tree(tmp_path / "tiny", CHART)
    jobs = _jobs(tmp_path, chart)
    bad = tmp_path / "bad.yaml"
    bad.write_text(dump_yaml({"experiment": {"name": ""}}))
    jobs.insert(2, RenderJob("bad", "team-a", chart, (bad,), "1.30"))
    renderer = BatchRenderer(workers=1)
    results = renderer.render(jobs)
    # helm names the failing alias: the chart's defaults, one batch, the failing one alone,
    # the rest together
    assert renderer.stats.helm_processes == 4
    assert [bool(r.error) for r in results] == [False, False, True, False, False, False]
    assert "experiment.name is required" in results[2].error
    assert "tiny/templates/cm.yaml" in results[2].error  # the per-experiment message


def test_values_the_schema_refuses_get_helms_own_verdict(tmp_path: Path) -> None:
    # Batches skip helm's values-schema check (tfgen checked every alias first), so an
    # experiment the schema refuses must be rendered alone by a plain `helm template`.
    chart = build_file_tree(tmp_path / "tiny", CHART)
    jobs = _jobs(tmp_path, chart)
    bad = tmp_path / "bad.yaml"
    bad.write_text(dump_yaml({"experiment": {"name": "bad"}, "replicas": "three"}))
    jobs.insert(1, RenderJob("bad", "team-a", chart, (bad,), "1.30"))
    renderer = BatchRenderer(workers=1)
    results = renderer.render(jobs)
    # the chart's defaults, the refused one alone, the rest together
    assert renderer.stats.helm_processes == 3
    assert [bool(r.error) for r in results] == [False, True, False, False, False, False]
    assert "replicas" in results[1].error and "schema" in results[1].error
    for job, result in zip(jobs[2:], results[2:], strict=True):
        assert result.manifest == renderer.render_single(job).manifest


def test_cache_makes_unchanged_experiments_free(tmp_path: Path) -> None:
    chart = build_file_tree(tmp_path / "tiny", CHART)
    jobs = _jobs(tmp_path, chart)
    cache = Cache(tmp_path / "cache")
    first = BatchRenderer(cache=cache, workers=1)
    expected = first.render(jobs)
    again = BatchRenderer(cache=cache, workers=1)
    assert [r.manifest for r in again.render(jobs)] == [r.manifest for r in expected]
    assert again.stats.helm_processes == 0 and again.stats.cached == len(jobs)
    # one changed values file: exactly one experiment rendered again
    jobs[3].values_files[0].write_text(dump_yaml({"experiment": {"name": "x3"},
                                                  "replicas": 33}))
    third = BatchRenderer(cache=cache, workers=1)
    results = third.render(jobs)
    assert third.stats.rendered == 1 and third.stats.cached == len(jobs) - 1
    assert 'replicas: "33"' in results[3].manifest
    # a chart change invalidates everything
    (chart / "templates/svc.yaml").write_text(CHART["templates/svc.yaml"] + "  type: NodePort\n")
    fourth = BatchRenderer(cache=cache, workers=1)
    fourth.render(jobs)
    assert fourth.stats.cached == 0


def test_release_bound_chart_is_rendered_one_by_one(tmp_path: Path) -> None:
    files = dict(CHART)
    files["templates/svc.yaml"] = CHART["templates/svc.yaml"].replace(
        "{{ .Values.experiment.name }}", "{{ .Release.Name }}")
    chart = build_file_tree(tmp_path / "tiny", files)
    jobs = _jobs(tmp_path, chart)
    renderer = BatchRenderer(workers=1)
    results = renderer.render(jobs)
    assert renderer.stats.helm_processes == len(jobs)
    assert "name: x4\n" in results[4].manifest


def test_values_merge_and_coalesce_follow_helm() -> None:
    assert merge_values({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": 3}, "l": [2]}) == {
        "a": {"b": 3, "c": 2}, "l": [2]}
    assert coalesce({"a": {"b": None}, "x": None}, {"a": {"b": 1, "c": 2}, "x": 1, "y": 0}) == {
        "a": {"c": 2}, "y": 0}


def test_canonical_manifest_normalises_document_separators() -> None:
    helm3 = "---\n# Source: c/templates/a.yaml\nkind: A\n---\n# Source: c/templates/b.yaml\nkind: B"
    helm4 = helm3.replace("kind: A\n", "kind: A\n\n") + "\n\n"
    assert canonical_manifest(helm3) == canonical_manifest(helm4)


# -- the batch renders what Argo CD renders ------------------------------------------------

REAL_CHART = REPO_ROOT / "charts" / "tfjob-experiment"


def repo_server_render(helm: str, job: RenderJob) -> subprocess.CompletedProcess[str]:
    """`helm template` exactly as Argo CD's repo-server runs it: in the chart folder, the
    release by --name-template, value files by absolute path, every API version, CRDs."""
    cmd = [helm, "template", ".", "--name-template", job.name, "--namespace", job.namespace,
           "--kube-version", job.kube_version or ""]
    cmd += [arg for path in job.values_files for arg in ("--values", str(path.resolve()))]
    cmd += [arg for api in job.api_versions for arg in ("--api-versions", api)]
    cmd.append("--include-crds")
    return subprocess.run(cmd, cwd=job.chart, capture_output=True, text=True, check=False)


def tricky_values(name: str, corpus: list[str]) -> dict[str, Any]:
    """The walkthrough's chart values with the corpus in every free-text field."""
    values = build_values(mnist_spec(name=name, owner=corpus[0]))
    values["args"] = list(corpus)
    values["command"] = ["python", *corpus]
    values["env"] = [{"name": f"V{i}", "value": text} for i, text in enumerate(corpus)]
    values["experiment"]["annotations"] = {f"example.com/a{i}": text
                                           for i, text in enumerate(corpus)}
    return values


def test_batched_result_is_what_the_repo_server_renders(tmp_path: Path, helm: str) -> None:
    jobs = []
    for index in range(6):
        corpus = TRICKY[index * 13:] + TRICKY[:index * 13]
        values = tricky_values(f"tricky-{index}", corpus)
        generated = GeneratedFile("values.yaml", (f"experiments/tricky-{index}.yaml",),
                                  dump_yaml(values))
        path = tmp_path / f"tricky-{index}.yaml"
        path.write_text(generated.content, encoding="utf-8")
        jobs.append(RenderJob(f"tricky-{index}", "default", REAL_CHART, (path,), "1.30"))
    # Files not in the writer's form: PyYAML's own dump (it leaves `y` plain, which helm
    # reads as true) and a hand edit that leaves `owner: y` unquoted. Both must fail as they
    # fail in Argo CD, not pass because tfgen read them with PyYAML.
    misread = tmp_path / "pyyaml-dump.yaml"
    misread.write_text(yaml.safe_dump(tricky_values("pyyaml-dump", ["y", "x"])))
    edited = tmp_path / "hand-edited.yaml"
    edited.write_text(jobs[0].values_files[0].read_text().replace(
        f"  owner: {dump_yaml(TRICKY[0]).strip()}\n", "  owner: y\n"))
    assert edited.read_text() != jobs[0].values_files[0].read_text()
    jobs += [RenderJob("pyyaml-dump", "default", REAL_CHART, (misread,), "1.30"),
             RenderJob("hand-edited", "default", REAL_CHART, (edited,), "1.30")]

    renderer = BatchRenderer(helm=helm, workers=1)
    results = renderer.render(jobs)
    if renderer.shortcuts is FAST:  # the pinned helms; another release may batch otherwise
        # the chart's defaults, one batch of the six, each hand-written file alone
        assert renderer.stats.helm_processes == 4
    for job, result in zip(jobs, results, strict=True):
        argo = repo_server_render(helm, job)
        # the repo-server's verdict, whatever this helm's release says of the corpus (3.17
        # and 3.18 refuse U+007F in their schema check)
        assert bool(result.error) == (argo.returncode != 0), (job.name, argo.stderr)
        if argo.returncode == 0:
            assert result.manifest == canonical_manifest(argo.stdout), job.name
        if renderer.shortcuts is FAST:  # the pinned helms take the corpus, refuse `y` as true
            assert (argo.returncode == 0) == job.name.startswith("tricky-"), argo.stderr
            assert job.name.startswith("tricky-") or "got boolean, want string" in result.error


@pytest.mark.parametrize(("default", "kind", "batched"), [
    # go-yaml's `y` is true, and so it is to tfgen: the defaults agree, one batch
    ("y", "bool", True),
    # go-yaml decodes `!!binary` to the text, PyYAML to bytes: helm reads the defaults
    # otherwise than tfgen, so merging them in tfgen's reading would hand helm values it never
    # sees from the file: one by one
    ("!!binary eQ==", "string", False),
])
def test_chart_defaults_are_batched_only_when_helm_reads_them_as_tfgen_does(
        tmp_path: Path, default: str, kind: str, batched: bool) -> None:
    files = dict(CHART)
    files["values.yaml"] = CHART["values.yaml"] + f"mode: {default}\n"
    files["values.schema.json"] = json.dumps({"type": "object"})
    files["templates/mode.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m-{{ .Values.experiment.name }}\n"
        "data:\n  mode: {{ kindOf .Values.mode | quote }}\n")
    chart = build_file_tree(tmp_path / "tiny", files)
    jobs = _jobs(tmp_path, chart)
    renderer = BatchRenderer(workers=1)
    results = renderer.render(jobs)
    # the defaults, then one batch or each job alone
    assert renderer.stats.helm_processes == 1 + (1 if batched else len(jobs))
    assert len(results) == len(jobs) > 1
    assert all(f'mode: "{kind}"' in r.manifest for r in results), results[0].manifest


def test_a_values_file_known_written_is_read_as_written(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A values file whose bytes have the content hash of the file tfgen measured is read
    without being written again to compare; one whose bytes differ from the hash it is given
    (edited by hand: other quoting, the same data) is still refused for helm to read."""
    from tfgen.render import generated

    data = {"name": "y", "roles": {"worker": {"replicas": 2}}}
    text = GeneratedFile("values.yaml", ("experiments/x.yaml",), dump_yaml(data)).content
    mine, edited = tmp_path / "mine.yaml", tmp_path / "edited.yaml"
    mine.write_text(text)
    edited.write_text(text.replace('name: "y"', "name: 'y'"))
    written = {str(path): content_hash(text.encode()) for path in (mine, edited)}
    writes: list[Any] = []
    monkeypatch.setattr(generated, "dump_yaml", lambda value: writes.append(value) or "")
    assert files_merged([mine], written) == data and writes == []
    assert files_merged([edited], written) is None and writes
