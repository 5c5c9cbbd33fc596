"""Strict validation of rendered objects: unknown fields, types, kinds, project schemas."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest
import yaml
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.errors import EnvironmentProblem, InputError
from tfgen.gate.documents import kubeyaml, manifests
from tfgen.gate.documents.manifests import (
    ManifestValidator,
    json_pointer,
    kind_suffix,
    parse_manifest,
)
from tfgen.gate.helm import command as helm_mod
from tfgen.gate.helm import umbrella
from tfgen.gate.helm.command import find_helm
from tfgen.repo import resources

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "mnist-tensorboard", "namespace": "default"},
    "spec": {
        "selector": {"matchLabels": {"app": "tb"}},
        "template": {
            "metadata": {"labels": {"app": "tb"}},
            "spec": {"containers": [{"name": "tensorboard", "image": "tensorflow/tensorflow"}]},
        },
    },
}

TFJOB_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kubeflow.org/v1"},
        "kind": {"const": "TFJob"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "additionalProperties": False,
                 "properties": {"tfReplicaSpecs": {"type": "object"}}},
    },
}


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> ManifestValidator:
    schemas = tmp_path_factory.mktemp("schemas")
    (schemas / "kubeflow.org").mkdir()
    (schemas / "kubeflow.org" / "tfjob_v1.json").write_text(json.dumps(TFJOB_SCHEMA))
    return ManifestValidator("1.30", schemas)


def test_valid_object_has_no_errors(validator: ManifestValidator) -> None:
    assert validator.errors(DEPLOYMENT) == []


def test_unknown_field_is_reported_with_pointer(validator: ManifestValidator) -> None:
    bad = copy.deepcopy(DEPLOYMENT)
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    errors = validator.errors(bad)
    assert len(errors) == 1
    pointer, message = errors[0]
    assert pointer == "$.spec.template.spec.containers[0]"
    assert "imagePullPolicyy" in message


def test_wrong_type_is_reported(validator: ManifestValidator) -> None:
    bad = copy.deepcopy(DEPLOYMENT)
    bad["spec"]["replicas"] = "two"
    assert [p for p, _ in validator.errors(bad)] == ["$.spec.replicas"]


def test_problem_names_object_and_file(validator: ManifestValidator) -> None:
    bad = copy.deepcopy(DEPLOYMENT)
    bad["spec"]["bogus"] = 1
    [obj] = parse_manifest(json.dumps(bad))
    [problem] = validator.problems(obj, "experiments/mnist.yaml")
    assert problem.path == "experiments/mnist.yaml"
    assert problem.pointer == "Deployment/mnist-tensorboard $.spec"
    assert "bogus" in problem.message and problem.hint


def test_unknown_kind_is_an_error(validator: ManifestValidator) -> None:
    errors = validator.errors({"apiVersion": "v1", "kind": "Secretz", "metadata": {"name": "x"}})
    assert errors and "no schema for v1 Secretz" in errors[0][1]


def test_crd_schema_is_found_by_group_kind_and_version(validator: ManifestValidator) -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "m"},
           "spec": {"tfReplicaSpecs": {}, "ttl": 1}}
    assert [p for p, _ in validator.errors(job)] == ["$.spec"]
    assert validator.schema_file("kubeflow.org/v1", "TFJob") == (
        validator.schema_dir / "kubeflow.org" / "tfjob_v1.json")
    assert validator.schema_file("kubeflow.org/v2", "TFJob") is None


@pytest.mark.parametrize(("api_version", "kind", "name"), [
    ("kubeflow.org/v1", "TFJob", "kubeflow.org/tfjob_v1.json"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet", "jobset.x-k8s.io/jobset_v1alpha2.json"),
    ("argoproj.io/v1alpha1", "AppProject", "argoproj.io/appproject_v1alpha1.json"),
    ("apps/v1", "Deployment", None),           # a Kubernetes group: no CRD of tfgen's
    ("v1", "Pod", None),
    ("../../etc/v1", "TFJob", None),            # never a path outside schemas/
    ("kubeflow.org/v1", "../TFJob", None),
    ("kubeflow.org/v1/x", "TFJob", None),
])
def test_crd_schema_names(api_version: str, kind: str, name: str | None) -> None:
    assert resources.crd_schema_name(api_version, kind) == name


def test_unsupported_kubernetes_version_is_an_environment_problem(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="ships 1.25"):
        ManifestValidator("1.12", tmp_path).errors(DEPLOYMENT)
    with pytest.raises(InputError):
        ManifestValidator("latest", tmp_path).errors(DEPLOYMENT)


def test_parse_manifest_keeps_source_and_drops_empty_documents() -> None:
    text = ("---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: Service\nmetadata:\n"
            "  name: a\n---\n# Source: c/templates/empty.yaml\n---\n")
    [obj] = parse_manifest(text)
    assert obj.source == "c/templates/a.yaml"
    assert obj.ref == "Service/a"


def test_pointer_and_suffix_helpers() -> None:
    assert json_pointer(["spec", "containers", 0, "env"]) == "$.spec.containers[0].env"
    assert json_pointer(["metadata", "annotations", "a/b"]) == '$.metadata.annotations["a/b"]'
    assert kind_suffix("v1") == "-v1"
    assert kind_suffix("apps/v1") == "-apps-v1"
    assert kind_suffix("kubeflow.org/v1") == "-kubeflow-v1"


def test_scalars_read_as_kubernetes_reads_them() -> None:
    # Kubernetes decodes with go-yaml v2 (yes and y = true, 0755 = 493, 1e3 = 1000, 60:30 = a
    # string, unlike PyYAML's YAML 1.1); the fast YAML 1.2 parser is only used where both agree
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: yes\n  b: 0755\n" \
           "  c: 1e3\n  d: 'yes'\n  e: 6006\n  f: y\n  g: 60:30\n  h: 2001-12-14\n"
    [obj] = parse_manifest(text)
    assert obj.doc["data"] == {"a": True, "b": 493, "c": 1000.0, "d": "yes", "e": 6006,
                               "f": True, "g": "60:30", "h": "2001-12-14"}


_DEEP = ["a: " + "[" * 150 + "]" * 150, "a:\n  " + "- " * 150 + "x",
         "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v"]


@pytest.mark.parametrize("deep", _DEEP, ids=["flow", "dashes", "indentation"])
def test_a_document_nested_too_deep_is_refused_in_words(deep: str) -> None:
    # yaml_rs alone crashes the process on a hundred thousand levels; the schema check gives up
    # at a few hundred
    with pytest.raises(InputError, match="nested more than 100 levels deep"):
        parse_manifest(deep + "\n")


def test_duplicate_keys_are_refused() -> None:
    with pytest.raises(InputError, match="not valid YAML"):
        parse_manifest("# Source: c/templates/a.yaml\nkind: A\nkind: B\n")


def test_duplicate_keys_are_refused_in_yaml_1_1_documents_too() -> None:
    with pytest.raises(InputError, match="duplicate mapping key"):
        parse_manifest("kind: A\nmetadata: {name: a}\ndata:\n  x: yes\n  x: no\n")


def test_a_lone_merge_key_is_the_text_as_kubernetes_reads_it() -> None:
    # helm's toYaml prints an argument "<<" unquoted; go-yaml v2 reads it back as the string,
    # and a real merge key still merges
    text = ("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
            "    args:\n    - <<\n    - x\nbase: &b {k: 1}\nmerged:\n  <<: *b\n")
    [obj] = parse_manifest(text)
    assert obj.doc["spec"]["containers"][0]["args"] == ["<<", "x"]
    assert obj.doc["merged"] == {"k": 1}


# --- splitting helm's output ----------------------------------------------------------------
# helm output is split without a regular expression per line (10,000 experiments' worth of it
# per cold check); these compare the fast ways with the plain ones kept next to them.

_PIECES = st.sampled_from([
    "a", "b: c", ":", "-", " ", "\n", "\r", "\u2028", "#", "---", "--- \n", "---\n",
    "# Source: chart/templates/x.yaml\n", "# Source: y\n", "yes", "0755", "1:30", "<<",
])
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(_TEXTS)
def test_documents_are_split_as_the_separator_pattern_splits_them(text: str) -> None:
    # helm's output at every document separator, and an umbrella render's at the templates'
    # separators (`gate/helm/umbrella.py`)
    for separator in (manifests.DOCUMENT_SEPARATOR, umbrella._DOC_SPLIT):
        assert manifests.split_at_separators(text, separator) == separator.split(text)


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(_TEXTS)
def test_each_document_reads_as_its_lines_read_one_by_one(text: str) -> None:
    by_lines = [manifests._source_and_body_by_lines(chunk)
                for chunk in manifests.split_at_separators(
                    text, manifests.DOCUMENT_SEPARATOR)]
    assert list(manifests.documents(text)) == [(s, b) for s, b in by_lines if b.strip()]


def test_documents_give_each_template_and_its_yaml() -> None:
    text = ("---\n# Source: chart/templates/a.yaml\na: 1\n---\n# Source: chart/templates/b.yaml"
            "\nb: 2\n# Source: not/the/first\n---\n---\n")
    assert list(manifests.documents(text)) == [
        ("chart/templates/a.yaml", "a: 1\n"),
        ("chart/templates/b.yaml", "b: 2\n# Source: not/the/first\n"),
    ]


# --- read as go-yaml v2 reads it -------------------------------------------------------------
# Plain scalars go-yaml v2 (Kubernetes' reader, YAML 1.1 but not to the letter), PyYAML's YAML
# 1.1 and yaml_rs's YAML 1.2 read differently, and their neighbours, in every place the fast
# parser's scan looks (`kubeyaml`).
SCALARS = [
    "yes", "No", "ON", "off", "y", "N", "0755", "-017", "0o17", "0x1F", "1e3", "1.5e-3", "-1E+2",
    "1_000", "60:30", "-1:30:00.5", ".5", "+1", "007", "8", "0", "1.0", ".inf", "-.Inf", ".NaN",
    "~", "null", "true", "False", "4Gi", "500m", "6006", "--port", "v1", "a:b",
    "1e3x", "0755abc", "y-n", "<<", "x", '"yes"', "'0755'",
]
PLACES = [
    "key: {}", "- {}", "list: [{}, x]", "list: [x,{}]", "list: [ {} ]", "map: {{k: {}}}",
    "map: {{k:{}}}", "key: {} # note", "- [{}]", "key: [[{}]]", "- - {}", "map: {{{}: k}}",
    "- {}: key", "{}: v", "key:\n  {}", "key: |\n  {}", "key: x\n  {}", "key:\t{}", "key: \t{}",
    "- [\t{}]",
]
_SCALARS, _PLACES = st.sampled_from(SCALARS), st.sampled_from(PLACES)
# where go-yaml v2 parts from YAML 1.1 as PyYAML reads it (tests below)
MORE_SCALARS = ["0b101", "+0o17", "0O17", "1E3", "1.5E3", "1:2", "190:20:30", ".5e3", "1e+3",
                "12e03", "1.", "+.5", "09", "0_7", "0_10", "1__0", "0x_1F", "2001-12-14",
                "2001-12-14t21:59:43.10-05:00", "99999999999999999999", "-0x1F", "1١"]
_DOCS = st.lists(st.tuples(_PLACES, _SCALARS), min_size=1, max_size=6).map(
    lambda items: "".join(
        place.format(value).replace("key:", f"key{i}:").replace("list:", f"list{i}:")
        .replace("map:", f"map{i}:") + "\n" for i, (place, value) in enumerate(items)))


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(_DOCS)
def test_the_fast_parser_reads_as_strict_loader_does(body: str) -> None:
    lines = body.splitlines(keepends=True)
    # a mapping's entries, or a list's items, as one document may hold either
    mapping = "".join(line for line in lines if not line.startswith("- "))
    listing = "".join(line for line in lines if line.startswith("- "))
    for text in (mapping, listing):
        if not text:
            continue
        try:
            expected = yaml.load(text, Loader=kubeyaml.StrictLoader)  # noqa: S506
        except yaml.YAMLError:
            continue
        assert repr(kubeyaml.load_document(text)) == repr(expected), text  # NaN is no NaN's equal


def test_a_document_reads_as_helm_reads_it(tmp_path: Path) -> None:
    # The same places and scalars as values, one per document, read by helm's own YAML
    # library (go-yaml v2 under sigs.k8s.io/yaml, as Kubernetes and Argo CD decode manifests)
    # through `fromYaml`: the scan and StrictLoader held to the real reader.
    docs = []
    value_places = [place for place in PLACES if "{}:" not in place]  # keys become text there
    for place, scalar in itertools.product(value_places, [*SCALARS, *MORE_SCALARS]):
        text = place.format(scalar) + "\n"
        if text.startswith("- "):  # fromYaml wants a mapping
            text = "items:\n" + "".join("  " + line for line in text.splitlines(True))
        docs.append(text)
    chart = tmp_path / "reader"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: reader\nversion: 0.1.0\n")
    (chart / "templates" / "docs.yaml").write_text(
        "{{- range $i, $doc := .Values.docs }}\n"
        "doc{{ $i }}: {{ $doc | fromYaml | toJson | quote }}\n{{- end }}\n")
    values = tmp_path / "docs.json"
    values.write_text(json.dumps({"docs": docs}))  # JSON: helm takes every string as it is
    out = helm_mod.run([find_helm(4), "template", "x", str(chart), "--values", str(values)])
    seen = yaml.safe_load(out.split("\n", 2)[2])  # after `---` and `# Source:`
    compared = 0
    for index, text in enumerate(docs):
        by_helm = json.loads(seen[f"doc{index}"] or "null", parse_int=float)
        if not isinstance(by_helm, dict) or "Error" in by_helm:
            continue  # helm cannot read it (or print it: NaN, infinities)
        ours = json.loads(json.dumps(kubeyaml.load_document(text)), parse_int=float)
        assert ours == by_helm, text
        compared += 1
    assert compared > len(docs) * 3 // 4
