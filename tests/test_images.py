"""Image references read as the container runtime reads them (`repo/images.py`): Docker Hub's
aliases are one registry, a registry policy entry matches whole host and path parts, a
reference that is none is refused naming its character and position; tfgen.yaml refuses an
entry that is no registry or repository prefix at its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import copy_repo_parts, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_team_policy import edit_spec, set_policy
from tfgen.cli import main
from tfgen.repo import images
from tfgen.repo.resources import EXPERIMENT_SCHEMA, schema

SPEC = "experiments/resnet-chief-eval.yaml"  # namespace ml-team


@pytest.mark.parametrize(("text", "full"), [
    ("tensorflow/tensorflow:2.16.1", "docker.io/tensorflow/tensorflow:2.16.1"),
    ("busybox", "docker.io/library/busybox:latest"),
    ("docker.io/busybox:1", "docker.io/library/busybox:1"),
    ("index.docker.io/tensorflow/tensorflow:2", "docker.io/tensorflow/tensorflow:2"),
    ("registry-1.docker.io/library/python:3", "docker.io/library/python:3"),
    ("registry.example.com/team/tf:1", "registry.example.com/team/tf:1"),
    ("localhost/tf", "localhost/tf:latest"),
    ("registry:5000/tf", "registry:5000/tf:latest"),
    ("host:5000", "docker.io/library/host:5000"),  # no '/': the ':' starts a tag
    ("tf@sha256:" + "a" * 64, "docker.io/library/tf@sha256:" + "a" * 64),
])
def test_references_read_as_the_runtime_reads_them(text: str, full: str) -> None:
    assert images.parse(text).full == full


@pytest.mark.parametrize(("text", "said"), [
    ("tensorflow/Tensorflow:1", "character 'T' at position 12 is not allowed in the repository "
                                "path (upper case is not allowed)"),
    ("tf/a b", "character ' ' at position 5"),
    ("a//b", "empty repository path part at position 3"),
    ("tf:-1", "character '-' at position 4 is not allowed in the tag"),
    ("tf:", "empty tag after ':' at position 3"),
    ("tf@sha256:12", "has 2 hex digits; it must have 64"),
    ("reg_istry.io/x", "character '_' at position 4 is not allowed in a registry host"),
    ("r.io:5x/a", "the registry port '5x' at position 6 must be digits"),
])
def test_refusals_name_the_character_and_its_position(text: str, said: str) -> None:
    with pytest.raises(images.ImageError) as info:
        images.parse(text)
    assert said in info.value.message


def test_latest_and_untagged_float() -> None:
    assert images.parse("tf").floating and images.parse("tf:latest").floating
    assert not images.parse("tf:2.16").floating
    assert not images.parse("tf:latest@sha256:" + "0" * 64).floating


@pytest.mark.parametrize(("entry", "admitted", "refused"), [
    ("registry.example.com", "registry.example.com/x:1", "registry.example.com.evil.io/x:1"),
    ("registry.example.com/ml/", "registry.example.com/ml/tf:1", "registry.example.com/mlx/tf:1"),
    ("registry.example.com/ml", "registry.example.com/ml/a/b", "registry.example.com/other/ml"),
    ("docker.io/tensorflow/", "index.docker.io/tensorflow/tensorflow:2", "tensorflowx/t:1"),
    ("index.docker.io/library", "python:3", "docker.io/tensorflow/tensorflow:2"),
    ("registry-1.docker.io/tensorflow", "tensorflow/tensorflow:2", "quay.io/tensorflow/t:1"),
])
def test_policy_entries_match_whole_parts(entry: str, admitted: str, refused: str) -> None:
    prefix = images.parse_prefix(entry)
    assert prefix.admits(images.parse(admitted))
    assert not prefix.admits(images.parse(refused))


@pytest.mark.parametrize("entry", ["tensorflow/", "library", "", "x.io/a:1", "x.io/a@sha256",
                                   "x.io/A", "x_y.io"])
def test_entries_that_are_no_prefix_are_refused(entry: str) -> None:
    with pytest.raises(images.ImageError):
        images.parse_prefix(entry)


def _schema_pattern() -> re.Pattern[str]:
    role = schema(EXPERIMENT_SCHEMA)["$defs"]["role"]
    return re.compile(role["properties"]["image"]["pattern"])


_PIECES = st.sampled_from(["a", "b1", "Z", ".", "-", "_", "__", "/", ":", "@", "5000", "io",
                           "localhost", "sha256:" + "a" * 64, "x.y", " ", "--"])


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=8).map("".join))
def test_the_parser_and_the_schema_pattern_agree(text: str) -> None:
    """The schema's pattern (what editors check) accepts exactly what the parser accepts."""
    try:
        images.parse(text)
        parsed = True
    except images.ImageError:
        parsed = False
    assert parsed is bool(_schema_pattern().match(text)), text


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def test_tfgen_yaml_refuses_an_entry_at_its_line(repo: Path) -> None:
    lines = set_policy(repo, registries=["registry.example.com", "tensorflow/"])
    result = CliRunner().invoke(main, ["validate"], catch_exceptions=False)
    assert result.exit_code != 0
    # the second item of the block list under the key
    where = f"tfgen.yaml:{lines['registries'] + 2}:7: $.policy.ml-team.registries[1]"
    assert where in result.output
    assert '"tensorflow/" is not a registry or repository prefix' in result.output
    assert "docker.io/tensorflow/" in result.output


def test_a_look_alike_host_is_refused_and_an_alias_admitted(repo: Path) -> None:
    set_policy(repo, registries=["registry.example.com", "docker.io/tensorflow"])

    def image(text: str):  # type: ignore[no-untyped-def]
        return lambda data: data["spec"].__setitem__("image", text)

    edit_spec(repo, SPEC, image("index.docker.io/tensorflow/tensorflow:2.16.1"))
    result = CliRunner().invoke(main, ["validate"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    edit_spec(repo, SPEC, image("registry.example.com.evil.io/x:1"))
    result = CliRunner().invoke(main, ["validate"], catch_exceptions=False)
    assert result.exit_code == 1
    assert 'image "registry.example.com.evil.io/x:1"' in result.output


def test_requiring_a_digest_says_when_an_image_floats(repo: Path) -> None:
    set_policy(repo, requireDigest=True)
    edit_spec(repo, SPEC, lambda data: data["spec"].__setitem__("image", "tensorflow/tf:latest"))
    result = CliRunner().invoke(main, ["validate"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "is not pinned by digest and is tagged :latest" in result.output
