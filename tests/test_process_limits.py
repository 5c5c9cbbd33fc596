"""No string longer than a process can be given: Linux refuses any single argument or
environment string over MAX_ARG_STRLEN (its closing NUL included), and the container never
starts. validate refuses each command, args and env string at its line, the exact byte over
the limit and not one before (hypothesis, any UTF-8 width); and every pod's TF_CONFIG, at the
largest role's replicas, with the figure the real pod would get (measured on what the real helm
renders and explain reads) and a count of replicas that does fit, on both runtimes, with and
without a cluster domain. The gate refuses the same objects when they are rendered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import examples, mnist_written
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.gate.documents.manifests import parse_manifest
from tfgen.gate.helm.command import RenderJob, template
from tfgen.repo import runtimes
from tfgen.repo.runtimes import tfconfig
from tfgen.repo.runtimes.base import MAX_ARG_STRLEN, TF_CONFIG_ENV, env_bytes
from tfgen.validate import load_config, validate_paths
from tfgen.validate.rules.values import build_values

CHART = Path(__file__).resolve().parents[1] / "charts" / "tfjob-experiment"

# (where in the spec, the name an env entry gets)
FIELDS = {
    "spec.args": (("spec", "args"), None),
    "spec.command": (("spec", "command"), None),
    "worker.args": (("spec", "roles", "worker", "args"), None),
    "spec.env": (("spec", "env"), "PAYLOAD"),
    "ps.env": (("spec", "roles", "ps", "env"), "P"),
}


def repo(root: Path, domain: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "tfgen.yaml").write_text(
        f'apiVersion: tfgen.io/v1\nkind: RepoConfig\nclusterDomain: "{domain}"\n')
    (root / "experiments").mkdir(exist_ok=True)
    return root


def write(root: Path, data: dict[str, Any]) -> Path:
    path = root / "experiments" / f"{data['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=2**30),
                    encoding="utf-8")
    return path


def problems(root: Path, path: Path) -> list[Any]:
    return list(validate_paths([path], load_config(cwd=root)).problems)


def text_of(size: int, char: str, name: str | None) -> str:
    """A string whose execve bytes (as `name=value` for an env value) are `size`, built of
    `char` and ASCII filler."""
    room = size - (env_bytes(name, "") if name else 1)
    width = len(char.encode())
    return char * (room // width) + "x" * (room % width)


@settings(max_examples=examples(25), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(FIELDS)), char=st.sampled_from(["x", "é", "€", "𝄞"]),
       over=st.integers(-2, 2))
def test_a_string_is_refused_at_its_line_from_the_first_byte_over(
        tmp_path_factory: pytest.TempPathFactory, field: str, char: str, over: int) -> None:
    root = repo(tmp_path_factory.mktemp("limit"))
    data = mnist_written(name="limits")
    parts, env_name = FIELDS[field]
    node: Any = data
    for key in parts[:-1]:
        node = node.setdefault(key, {})
    listed = node.setdefault(parts[-1], [])
    value = text_of(MAX_ARG_STRLEN + over, char, env_name)
    listed.append({"name": env_name, "value": value} if env_name else value)
    found = [p for p in problems(root, write(root, data)) if "MAX_ARG_STRLEN" in p.message]
    if over <= 0:
        assert found == []
        return
    pointer = "$." + ".".join(parts[:]) + f"[{len(listed) - 1}]" + (".value" if env_name else "")
    assert [p.pointer for p in found] == [pointer]
    assert f"is {MAX_ARG_STRLEN + over - 1:,} bytes" in found[0].message
    assert found[0].line > 0


def _spec(workers: int, ps: int, runtime: str) -> dict[str, Any]:
    data = mnist_written(name="t" * 40)  # the longest name a JobSet's pods allow with 1000
    spec = data["spec"]
    spec["roles"]["worker"]["replicas"], spec["roles"]["ps"]["replicas"] = workers, ps
    spec["runtime"] = runtime
    return data


def _refusal(root: Path, data: dict[str, Any]) -> list[Any]:
    return [p for p in problems(root, write(root, data)) if TF_CONFIG_ENV in p.message]


def _rendered_job(root: Path, data: dict[str, Any], domain: str) -> dict[str, Any]:
    """The job the real helm renders for `data` (validated only by the schema's defaults)."""
    from tfgen.validate.experiments import check_file
    config = load_config(cwd=root)
    path = write(root, data)
    checked, _ = check_file(path, path.name, path.read_bytes(), config)
    assert checked is not None
    values = root / "values.yaml"
    values.write_text(yaml.safe_dump(build_values(checked.data, cluster_domain=domain)))
    manifest = template(RenderJob(str(data["metadata"]["name"]), "default", CHART, (values,)))
    [job] = [o.doc for o in parse_manifest(manifest) if o.kind in ("TFJob", "JobSet")]
    return job


@pytest.mark.parametrize("runtime", ["tfjob", "jobset"])
@pytest.mark.parametrize("domain", ["", "cluster.local"])
def test_tf_config_is_refused_with_the_real_figure_and_what_fits(
        tmp_path: Path, runtime: str, domain: str) -> None:
    root = repo(tmp_path, domain)
    data = _spec(1000, 1000, runtime)
    [found] = _refusal(root, data)
    assert found.pointer == "$.spec.roles.worker.replicas"
    # the figure is the TF_CONFIG explain reads from what the real helm renders
    runtime_of = runtimes.by_name(runtime)
    pods = tfconfig.pods(runtime_of.as_tfjob(_rendered_job(root, data, domain)), domain)
    longest = max(pods, key=lambda p: (len(p.tf_config or ""), p.index))
    size = env_bytes(TF_CONFIG_ENV, longest.tf_config or "")
    assert size > MAX_ARG_STRLEN
    assert (f"{longest.task_type} {longest.index}'s TF_CONFIG={{value}} is {size - 1:,} bytes"
            in found.message), found.message
    # what it says fits, fits, and one more does not
    fit = int(found.hint.split("at most ")[1].split(" worker")[0].replace(",", ""))
    assert 0 < fit < 1000
    assert _refusal(root, _spec(fit, 1000, runtime)) == []
    assert _refusal(root, _spec(fit + 1, 1000, runtime))
    # the gate measures the rendered job the same way
    assert not [p for p in runtime_of.job_problems(
        _rendered_job(root, _spec(fit, 1000, runtime), domain), domain)
        if "MAX_ARG_STRLEN" in p.message]
    over = [p for p in runtime_of.job_problems(
        _rendered_job(root, _spec(fit + 1, 1000, runtime), domain), domain)
        if "MAX_ARG_STRLEN" in p.message]
    assert len(over) == 1 and "fewer replicas" in over[0].hint, over


def test_the_gate_refuses_a_rendered_string_over_the_limit(tmp_path: Path) -> None:
    root = repo(tmp_path)
    data = mnist_written(name="gate")
    data["spec"]["args"].append("a" * MAX_ARG_STRLEN)
    data["spec"]["env"].append({"name": "BIG", "value": "b" * (MAX_ARG_STRLEN - 4)})
    for runtime in ("tfjob", "jobset"):
        data["spec"]["runtime"] = runtime
        job = _rendered_job(root, data, "")
        found = [p.pointer for p in runtimes.by_name(runtime).job_problems(job, "")
                 if "MAX_ARG_STRLEN" in p.message]
        assert found and all(p.endswith((".args[2]", ".value")) for p in found), found
        assert any(p.endswith(".args[2]") for p in found) and any(
            p.endswith(".value") for p in found), found
