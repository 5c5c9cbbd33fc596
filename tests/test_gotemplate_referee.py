"""ApplicationSet templates filled as Argo CD fills them: tfgen's resolver against Go's own.

tests/go/appset fills the committed ApplicationSet's template as Argo CD's controller does with
`goTemplate: true`: every string and key a Go text/template with Argo CD's function map (sprig)
and the ApplicationSet's `missingkey=error`, then the finalizer and namespace rules. (Argo CD's
own applicationset code does not build from the Go module proxy: tests/go/README.md.) For every
generator file of this repository and of property-generated repositories (names, namespaces,
owners and sources of any text, nested folders, keys missing or extra), the Application tfgen
resolves (gate/argo/applications.py with gate/argo/gotemplate.py) must be Go's, field for
field, and a generator file Go cannot fill must be one tfgen refuses, naming the same missing
key.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT, examples, go_tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.gate.argo import applications
from tfgen.gate.argo.gotemplate import TemplateError, compiled
from tfgen.gate.documents.kubeyaml import load_document
from tfgen.render.generated import dump_yaml

pytestmark = pytest.mark.go  # runs a Go tool of `make go-tools`


APPSET = REPO_ROOT / "argo" / "applicationset.yaml"
# Argo CD's words for a missing key (Go's text/template with missingkey=error)
MISSING_GO = re.compile(r'map has no entry for key "([^"]+)"')
MISSING_TFGEN = re.compile(r"map has no entry for key '([^']+)'")


def referee(appset: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    request = {"applicationSet": appset, "params": params}
    result = subprocess.run([str(go_tool("appset"))], input=json.dumps(request) + "\n",
                            capture_output=True, text=True, check=True)
    answer: dict[str, Any] = json.loads(result.stdout)
    assert "error" not in answer, answer.get("error")
    return answer


def tfgen(appset: dict[str, Any], params: list[dict[str, Any]]
          ) -> list[dict[str, Any] | str]:
    """Each Application as tfgen fills it (as `applications` does), or its error's text."""
    fill = compiled(appset["spec"]["template"])
    out: list[dict[str, Any] | str] = []
    for one in params:
        try:
            app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **fill(one)}
        except TemplateError as exc:
            out.append(str(exc))
            continue
        applications._as_the_controller_does(app, appset)
        out.append(app)
    return out


def assert_same(appset: dict[str, Any], params: list[dict[str, Any]]) -> None:
    answer = referee(appset, params)
    for one, our, their, their_error in zip(params, tfgen(appset, params),
                                             answer["applications"], answer["errors"],
                                             strict=True):
        if isinstance(our, str):
            assert their is None, f"Go fills {one} but tfgen says: {our}"
            assert MISSING_GO.findall(their_error) == MISSING_TFGEN.findall(our), (
                their_error, our)
        else:
            assert their == our, f"{one}: {their_error}"


def committed_appset() -> dict[str, Any]:
    document: dict[str, Any] = load_document(APPSET.read_text())
    return document


def test_this_repositorys_applications_are_argo_cds() -> None:
    files = sorted((REPO_ROOT / "argo" / "experiments").glob("*/app.yaml"))
    assert len(files) >= 4
    params = [applications._generator_params(yaml.safe_load(f.read_text()),
                                             f.relative_to(REPO_ROOT).as_posix())
              for f in files]
    ours = applications.generated_applications(REPO_ROOT)
    assert [a["metadata"]["name"] for a in ours] == [p["name"] for p in params]
    assert tfgen(committed_appset(), params) == ours
    assert_same(committed_appset(), params)


# --- property-generated repositories ---------------------------------------------------------

NAME = st.from_regex(r"[a-z]([-a-z0-9]{0,40}[a-z0-9])?", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
KEYS = ("name", "namespace", "owner", "source", "destination")


@st.composite
def generator_files(draw: st.DrawFn) -> dict[str, Any]:
    """One app.yaml's parameters, with its folder's `path` as the git files generator adds."""
    name = draw(NAME)
    data: dict[str, Any] = {"name": name, "namespace": draw(NAME),
                            "owner": draw(TEXT | st.just("someone@example.com")),
                            "source": draw(TEXT | st.just(f"experiments/{name}.yaml")),
                            "cluster": draw(NAME),
                            "destination": draw(st.sampled_from([
                                {"server": "https://kubernetes.default.svc", "name": ""},
                                {"server": "", "name": name}]))}
    for key in draw(st.sets(st.sampled_from(KEYS), max_size=1)):
        del data[key]  # a key the template uses, missing
    data.update(draw(st.dictionaries(st.sampled_from(["extra", "path2", "Name"]), TEXT,
                                     max_size=1)))
    folders = draw(st.lists(NAME, min_size=1, max_size=3))
    return applications._generator_params(data, f"argo/experiments/{'/'.join(folders)}/app.yaml")


@settings(max_examples=examples(25), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(generator_files(), min_size=20, max_size=20))
def test_generated_repositories_resolve_as_argo_cd_resolves_them(
        params: list[dict[str, Any]]) -> None:
    """A repository's generator files, one Argo CD renderer process for them all."""
    assert_same(committed_appset(), params)


def test_a_rendered_repository_resolves_as_argo_cd_resolves_it(tmp_path: Path) -> None:
    """What tfgen itself resolves from generator files on disk, in the writer's form."""
    root = tmp_path / "repo"
    (root / "argo").mkdir(parents=True)
    shutil.copy(APPSET, root / "argo" / "applicationset.yaml")
    params = []
    for index, owner in enumerate(["a@b.c", "{{ not a template }}", "x: y", "100%"]):
        name = f"run-{index}"
        data = {"name": name, "namespace": "ml-team", "owner": owner,
                "source": f"experiments/{name}.yaml", "cluster": "gpu-b",
                "destination": ({"server": "https://kubernetes.default.svc", "name": ""}
                                if index % 2 else {"server": "", "name": "gpu-b"})}
        rel = f"argo/experiments/{name}/app.yaml"
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_text(dump_yaml(data))
        params.append(applications._generator_params(data, rel))
    answer = referee(committed_appset(), params)
    assert answer["errors"] == [""] * len(params)
    assert applications.generated_applications(root) == answer["applications"]
