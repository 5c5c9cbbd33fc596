"""What tfgen writes means the same to helm as to tfgen: proven with the real helm 4 and 3.

A probe chart (fixtures/probe-chart) prints the Go kind and value of every node of `.Values`.
Each generated file shape (the chart values of every bundled experiment, and `app.yaml`, which
the ApplicationSet's git files generator reads with the same YAML library as helm) is filled
with scalars that YAML 1.1, YAML 1.2 and PyYAML read differently, written by tfgen's writer,
rendered with `--values <file>`, and every node helm saw is compared with the data written.
The same corpus through a hand-written file shows the probe can fail.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT
from tfgen.gate.helm import command as helm_mod
from tfgen.render.argo import app_file
from tfgen.render.generated import GeneratedFile, dump_yaml
from tfgen.render.plan import experiment_files
from tfgen.validate import Cluster, validate_repo

PROBE = Path(__file__).parent / "fixtures" / "probe-chart"

# Strings that some YAML reader takes as a boolean, null, number, date, merge key, comment,
# list item or mapping when written plain, or whose characters YAML folds or forbids.
TRICKY = [
    "y", "n", "Y", "N", "yes", "no", "on", "off", "On", "OFF", "True", "~", "null", "NULL",
    "1e3", "1e-4", "0o17", "0x1F", "08", "017", "1_000", "60:30", "190:20:30.15", ".inf",
    "-.inf", ".nan", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "0b101", "+1", "-1", ".5",
    "", " ", " leading", "trailing ", "- a", "a: b", "a:", "#x", "a #b", "<<", "=", "!x",
    "&a", "*a", "%x", "@x", "`x", "|", ">", "[a]", "{a}", "'q'", '"q"', "{{.name}}",
    "line\nbreak", "tab\there", "cr\rhere", "ls\u2028sep", "ps\u2029sep", "nel\x85line",
    "bom\ufeff", "del\x7f", "ünïcødé", "emoji 😀", "4Gi", "500m", "--flag=1",
]
NON_STRINGS: list[Any] = [True, False, 0, 7, -3, 2**40, 1.5, 1e-05, 2.5e20, None]


def expected_nodes(data: Any, path: tuple[Any, ...] = ()) -> dict[str, tuple[str, Any]]:
    """path -> (Go kind, value) as helm should see `data`: numbers are float64 in helm's
    values (sigs.k8s.io/yaml goes through JSON), maps and lists give their size."""
    key = json.dumps(list(path))
    if isinstance(data, dict):
        nodes = {key: ("map", len(data))}
        for name, child in data.items():
            nodes.update(expected_nodes(child, (*path, name)))
        return nodes
    if isinstance(data, list):
        nodes = {key: ("slice", len(data))}
        for index, child in enumerate(data):
            nodes.update(expected_nodes(child, (*path, index)))
        return nodes
    if isinstance(data, bool):
        return {key: ("bool", data)}
    if isinstance(data, (int, float)):
        return {key: ("float64", float(data))}
    if data is None:
        return {key: ("invalid", None)}
    return {key: ("string", data)}


def helm_nodes(helm: str, values_file: Path) -> dict[str, tuple[str, Any]]:
    """path -> (Go kind, value) of every node of `.Values`, as the probe chart prints them."""
    text = helm_mod.template(helm_mod.RenderJob("probe", "default", PROBE, (values_file,)),
                             helm=helm)
    [document] = [d for d in text.split("\n---\n") if "kind: ConfigMap" in d]
    nodes = {}
    for line in document.split("nodes: |\n", 1)[1].splitlines():
        if line.strip():
            path, kind, _type, value = json.loads(base64.b64decode(line))
            nodes[json.dumps(path)] = (kind, float(value) if kind == "float64" else value)
    return nodes


def fill(data: Any, corpus: itertools.cycle[str]) -> Any:
    """`data` with every string leaf replaced by the next corpus string."""
    if isinstance(data, dict):
        return {key: fill(value, corpus) for key, value in data.items()}
    if isinstance(data, list):
        return [fill(item, corpus) for item in data]
    return next(corpus) if isinstance(data, str) else data


def values_shapes() -> dict[str, dict[str, Any]]:
    """Every bundled experiment's chart values, strings replaced by the corpus (rotated so each
    corpus string lands on other fields in other shapes), labels and annotations keyed by it."""
    result = validate_repo(cwd=REPO_ROOT)
    assert result.experiments, "the bundled experiments validate"
    shapes = {}
    for offset, experiment in enumerate(result.experiments):
        values_file = experiment_files(experiment)[0]
        values = yaml.safe_load(values_file.body)
        corpus = itertools.cycle(TRICKY[offset * 7:] + TRICKY[:offset * 7])
        filled = fill(values, corpus)
        filled["experiment"]["labels"] = {text: text for text in TRICKY}
        filled["experiment"]["annotations"] = {text: value for text, value in zip(
            TRICKY, itertools.cycle(NON_STRINGS), strict=False)}
        filled["env"] = [{"name": text, "value": text} for text in TRICKY]
        filled["args"] = list(TRICKY) + NON_STRINGS
        shapes[experiment.data["metadata"]["name"]] = filled
    # the chart's test scenarios: the value shapes the bundled experiments do not use (NFS,
    # FlexVolume, ingress, tolerations, an existing claim ...)
    scenarios = sorted((REPO_ROOT / "charts/tfjob-experiment/ci").glob("*-values.yaml"))
    assert scenarios
    for offset, path in enumerate(scenarios):
        corpus = itertools.cycle(TRICKY[offset * 5:] + TRICKY[:offset * 5])
        shapes[f"ci/{path.name}"] = fill(yaml.safe_load(path.read_text()), corpus)
    return shapes


@pytest.fixture(params=[4, 3], ids=["helm4", "helm3"])
def helm(request: pytest.FixtureRequest) -> str:
    return helm_mod.find_helm(request.param)


def probe(helm: str, tmp_path: Path, generated: GeneratedFile, written: Any) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(generated.content, encoding="utf-8")
    seen, expected = helm_nodes(helm, path), expected_nodes(written)
    wrong = {k: (seen.get(k), v) for k, v in expected.items() if seen.get(k) != v}
    assert not wrong, f"helm read (seen, written): {wrong}"
    assert seen.keys() == expected.keys()


@pytest.mark.parametrize("name", sorted(values_shapes()))
def test_helm_reads_every_values_file_shape_as_written(
    helm: str, tmp_path: Path, name: str
) -> None:
    data = values_shapes()[name]
    probe(helm, tmp_path, GeneratedFile("values.yaml", (f"experiments/{name}.yaml",),
                                        dump_yaml(data)), data)


def test_helm_reads_app_yaml_as_written(helm: str, tmp_path: Path) -> None:
    # The ApplicationSet fills the Application template from these keys: an owner `y` must
    # stay "y", and a name `y` must not become an Application named "true".
    def one(index: int, text: str) -> None:
        folder = tmp_path / str(index)
        folder.mkdir()
        written = {"name": text, "namespace": text, "owner": text, "source": text,
                   "cluster": text, "destination": {"server": text, "name": text}}
        cluster = Cluster(text, text, text, "1.33", ("tfjob",), None, (), [], None, 0, "", "")
        probe(helm, folder, app_file(text, text, text, text, cluster), written)

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert len(list(pool.map(one, range(len(TRICKY)), TRICKY))) == len(TRICKY)


def test_the_probe_sees_what_plain_yaml_1_1_means(helm: str, tmp_path: Path) -> None:
    # The same strings written plain by hand: helm reads booleans and numbers. Without this,
    # a probe that printed nothing would pass the tests above.
    path = tmp_path / "values.yaml"
    path.write_text("a: y\nb: 1e-4\nc: 0o17\nd: 08\ne: 60:30\nf: 1_000\ny: x\n")
    seen = helm_nodes(helm, path)
    assert seen['["a"]'] == ("bool", True)
    assert seen['["b"]'] == ("float64", 0.0001)
    assert seen['["c"]'] == ("float64", 15.0)
    assert seen['["d"]'] == ("float64", 8.0)
    # PyYAML's YAML 1.1 sexagesimal (3630); go-yaml v2 keeps the string: quoted for PyYAML.
    assert seen['["e"]'] == ("string", "60:30")
    assert seen['["f"]'] == ("float64", 1000.0)
    assert seen['["true"]'] == ("string", "x")


def random_texts(count: int, seed: int) -> list[str]:
    """Deterministic random strings over the characters YAML cares about: indicators, digits
    and signs, the letters of its booleans, spaces, line breaks of every kind, controls."""
    alphabet = ("yYnNoOeEfFtTxXbB0123456789._+-:#&*!|>'\"%@`{}[],?<=~ \t\n\r/\\"
                "\x00\x07\x1b\x7f\x85\x9f\xa0\u2028\u2029\ufeff\ufffe\u00e9\U0001f600")
    rng = random.Random(seed)
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        for _ in range(count)
    ]


def test_helm_reads_random_text_exactly_as_written(helm: str, tmp_path: Path) -> None:
    texts = random_texts(600, seed=10)
    data = {"values": {f"k{i}": text for i, text in enumerate(texts)},
            "keys": {text: i for i, text in enumerate(texts)},
            "list": texts}
    probe(helm, tmp_path, GeneratedFile("values.yaml", ("experiments/x.yaml",),
                                        dump_yaml(data)), data)
