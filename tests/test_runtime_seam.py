"""A runtime is one module in `repo/runtimes/`: outside that folder no Python names a runtime,
its job kind, its API or its controllers' labels; every schema that lists the runtimes lists
exactly them; the chart refuses a runtime it has no selector for; and every runtime's objects
are selected, explained and imported through the same calls, so that a runtime added there is
held to all of it by this file alone.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, node_paths, template
from structure import PACKAGE
from tfgen.cli import main
from tfgen.gate.helm.command import find_helm
from tfgen.repo import chart, layout, resources, runtimes
from tfgen.repo.runtimes import Runtime, tfconfig

ROOM = PACKAGE / "repo" / "runtimes"
# Modules of the room that every runtime shares (the interface and what it is written in);
# the others are one runtime's own, and only the room imports them.
SHARED = {"__init__", "base", "changes", "imported", "indexedjob", "tfconfig", "tfconfig_size"}


def naming_of_runtimes(path: Path) -> list[str]:
    """Where a module names a runtime: a string that is a runtime's name, kind, API version or
    group, or begins with a prefix of its controllers' labels; the singleton of a runtime or a
    runtime's own module imported; a runtime chosen by comparing with the default one."""
    words = {w for r in runtimes.RUNTIMES for w in (r.name, r.kind, r.api_version, r.group)}
    singletons = {r.name.upper() for r in runtimes.RUNTIMES}
    own = {p.stem for p in ROOM.glob("*.py")} - SHARED
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = node.value in words or node.value.startswith(runtimes.LABEL_PREFIXES)
        elif isinstance(node, ast.Name | ast.Attribute):
            named = (node.id if isinstance(node, ast.Name) else node.attr) in singletons
        elif isinstance(node, ast.ImportFrom):
            modules = {(node.module or "").rpartition(".")[2], *(a.name for a in node.names)}
            named = bool(modules & (own | singletons))
        elif isinstance(node, ast.Compare):
            named = any(isinstance(side, ast.Attribute) and side.attr == "DEFAULT"
                        for side in (node.left, *node.comparators))
        else:
            continue
        if named:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_runtime_is_named_outside_its_room() -> None:
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if ROOM not in p.parents]
    assert len(outside) > 100  # the walk read the package
    found = [where for path in outside for where in naming_of_runtimes(path)]
    assert found == []


def test_the_room_itself_names_every_runtime() -> None:
    """The scan finds what it looks for: each runtime's module names it."""
    for runtime in runtimes.RUNTIMES:
        assert naming_of_runtimes(ROOM / f"{runtime.name}.py"), runtime.name


def _enums(schema: Any) -> list[tuple[str, list[Any], Any]]:
    """(where, enum, default) of every enum in a schema that lists a runtime."""
    names = {r.name for r in runtimes.RUNTIMES}
    out = []
    for path in [(), *node_paths(schema)]:
        node = schema
        for part in path:
            node = node[part]
        enum = node.get("enum") if isinstance(node, dict) else None
        if isinstance(enum, list) and names & set(map(str, enum)):
            out.append(("$" + "".join(f"[{part!r}]" for part in path), enum, node.get("default")))
    return out


SCHEMAS = [resources.schema_dir() / resources.EXPERIMENT_SCHEMA,
           resources.schema_dir() / resources.CONFIG_SCHEMA,
           REPO_ROOT / layout.CHART_PATH / "values.schema.json"]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda path: path.name)
def test_every_schema_lists_exactly_the_runtimes(schema: Path) -> None:
    found = _enums(json.loads(schema.read_text(encoding="utf-8")))
    assert found, f"{schema.name} lists no runtime"
    for where, enum, default in found:
        assert enum == [r.name for r in runtimes.RUNTIMES], where
        assert default in (None, runtimes.DEFAULT.name), where


def test_the_charts_selector_refuses_a_runtime_it_does_not_know(tmp_path: Path) -> None:
    """runSelector is a lookup: a runtime the schema would let through without a selector in
    the chart fails the render instead of selecting another runtime's pods."""
    values = yaml.safe_load((REPO_ROOT / layout.CHART_PATH / "ci" / "walkthrough-values.yaml")
                            .read_text())
    values["runtime"] = "volcano"
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = subprocess.run([find_helm(), "template", "x", str(REPO_ROOT / layout.CHART_PATH),
                             "--skip-schema-validation", "--values", str(path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert 'runtime "volcano": no selector of its pods' in result.stderr


# --- each runtime through the same calls ---------------------------------------------------

SPEC = yaml.safe_load((REPO_ROOT / "experiments" / "mnist-jobset.yaml").read_text())
BARE = ("charts", "schemas", "tfgen.yaml")


def _spec(runtime: Runtime) -> dict[str, Any]:
    """The bundled JobSet example, run by `runtime`, its name and log folder its own."""
    spec = json.loads(json.dumps(SPEC))
    name = f"seam-{runtime.name}"
    spec["metadata"]["name"] = name
    spec["spec"]["runtime"] = runtime.name
    spec["spec"]["args"] = [a.replace("mnist-jobset", name) for a in spec["spec"]["args"]]
    spec["spec"]["tensorboard"]["logDir"] = f"/training/{name}/logs"
    return spec


def _render(root: Path, spec: dict[str, Any]) -> str:
    """`tfgen render` in `root`, then the release of `spec` by the real helm."""
    result = CliRunner().invoke(main, ["render", "--root", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    name = spec["metadata"]["name"]
    values = root / layout.generated_folder(name) / layout.VALUES_FILE
    return template(root / layout.CHART_PATH, name, spec["metadata"]["namespace"], [values])


def _objects(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture(scope="module", params=runtimes.RUNTIMES, ids=lambda r: r.name)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Runtime, Path, list[dict[str, Any]]]:
    """One experiment on each runtime: its repository, and its objects by the real helm."""
    runtime = request.param
    spec = _spec(runtime)
    root = copy_repo_parts(tmp_path_factory.mktemp(runtime.name) / "repo", BARE)
    (root / "experiments").mkdir()
    (root / "experiments" / f"{spec['metadata']['name']}.yaml").write_text(yaml.safe_dump(spec))
    text = _render(root, spec)
    (root.parent / "rendered.yaml").write_text(text)
    return runtime, root, _objects(text)


def _job(runtime: Runtime, objects: list[dict[str, Any]]) -> dict[str, Any]:
    [job] = [o for o in objects if runtimes.of_object(o["apiVersion"], o["kind"]) is runtime]
    assert runtimes.of_kind(job["kind"]) is runtime
    return job


def test_each_runtimes_pods_are_selected_by_its_controllers_labels(
        rendered: tuple[Runtime, Path, list[dict[str, Any]]]) -> None:
    runtime, _, objects = rendered
    job = _job(runtime, objects)
    [policy] = [o for o in objects if o["kind"] == "NetworkPolicy"
                and o["metadata"]["name"] == job["metadata"]["name"]]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector == runtime.run_selector(job["metadata"]["name"])
    assert all(key.startswith(runtime.label_prefixes) for key in selector)
    assert set(runtime.label_prefixes) <= set(chart.RESERVED_PREFIXES)


def test_each_runtime_is_explained_through_the_same_call(
        rendered: tuple[Runtime, Path, list[dict[str, Any]]]) -> None:
    runtime, root, objects = rendered
    name = _job(runtime, objects)["metadata"]["name"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        text = CliRunner().invoke(main, ["explain", name], catch_exceptions=False)
        data = CliRunner().invoke(main, ["explain", name, "--format", "json"],
                                  catch_exceptions=False)
    assert text.exit_code == data.exit_code == 0, text.output + data.output
    assert f"TF_CONFIG {runtime.tf_config_by} in each pod" in text.output
    expected = {pod.name: pod.tf_config
                for pod in tfconfig.pods(runtime.as_tfjob(_job(runtime, objects)))}
    explained = json.loads(data.output)  # each pod's TF_CONFIG: the cluster and its task
    got = {p["name"]: tfconfig.go_json({"cluster": explained["cluster"], "task": p["task"],
                                         "environment": "cloud"})
           for p in explained["pods"]}
    assert len(got) > 1 and got == expected


def test_each_runtime_is_imported_through_the_same_call(
        rendered: tuple[Runtime, Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    runtime, root, objects = rendered
    name = _job(runtime, objects)["metadata"]["name"]
    target = copy_repo_parts(tmp_path / "repo", BARE)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(target)
        result = CliRunner().invoke(main, ["import", str(root.parent / "rendered.yaml"),
                                           "--owner", SPEC["metadata"]["owner"], "--write"],
                                    catch_exceptions=False)
    assert result.exit_code == 0, result.output
    spec = yaml.safe_load((target / "experiments" / f"{name}.yaml").read_text())
    assert runtimes.by_name(spec["spec"].get("runtime")) is runtime
    assert _objects(_render(target, spec)) == objects  # the same training, object for object
