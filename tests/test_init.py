"""`tfgen init` through the CLI: a new repository that validates, renders and passes
`tfgen check` from its first commit, also on a checkout with core.autocrlf; refusals that write
nothing; the files it adapts from this project (workflow, pre-commit hooks, .gitattributes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import REPO_ROOT, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.repo.owned import DOCS, NOT_COPIED, TEAM_READMES, owned_files
from tfgen.repo.runtimes import RUNTIMES
from tfgen.scaffold import InitSettings, SettingsError, defaults
from tfgen.scaffold.init import config_text, gitattributes, gitignore, workflow
from tfgen.scaffold.source import check_line, parse_source

SOURCE = "git+https://github.com/acme/tfgen.git@v0.1.0"
FLAGS = ["--repo-url", "https://github.com/acme/ml.git", "--namespace", "ml",
         "--namespace", "vision", "--nas-server", "nas.example.com", "--tfgen-source", SOURCE]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           "-c", "init.defaultBranch=main", *args], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout


def start_repository(repo: Path, runner: CliRunner) -> Path:
    """A repository `tfgen init` started in `repo` with FLAGS, committed."""
    result = runner.invoke(main, ["init", str(repo), *FLAGS], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    return repo


@pytest.fixture
def started(tmp_path: Path, runner: CliRunner) -> Path:
    """A repository `tfgen init` started, committed."""
    return start_repository(tmp_path / "team", runner)


def test_init_writes_a_repository_and_lists_it(started: Path) -> None:
    tracked = set(git(started, "ls-files").split())
    for path in ("tfgen.yaml", ".gitattributes", ".gitignore", ".pre-commit-config.yaml",
                 ".github/workflows/pr.yaml", "README.md", "experiments/README.md",
                 "argo/README.md",
                 "charts/tfjob-experiment/Chart.yaml", "schemas/experiment.schema.json",
                 "argo/project.yaml", "argo/applicationset.yaml"):
        assert path in tracked
    config = yaml.safe_load((started / "tfgen.yaml").read_text())
    assert config["argocd"]["repoURL"] == "https://github.com/acme/ml.git"
    assert config["argocd"]["namespaces"] == ["ml", "vision"]
    assert config["defaults"]["metadata"]["namespace"] == "ml"
    assert config["defaults"]["spec"]["storage"]["nas"]["server"] == "nas.example.com"
    # the chart and the schemas are tfgen's own, byte for byte, but for their READMEs, which
    # speak of the team's copies (tfgen's describe its source tree: make, tests/, generator/)
    chart = REPO_ROOT / "charts" / "tfjob-experiment"
    for source in chart.rglob("*"):
        rel = f"charts/tfjob-experiment/{source.relative_to(chart).as_posix()}"
        if source.is_file() and rel not in DOCS:
            assert (started / rel).read_bytes() == source.read_bytes(), source
    for rel in DOCS:
        copied = started / rel
        assert not copied.exists() if rel in NOT_COPIED else copied.read_text() == (
            TEAM_READMES[rel])
    for readme in TEAM_READMES.values():
        assert not any(word in readme for word in ("make ", "tests/", "generator/"))


@pytest.mark.parametrize("command", [["validate"], ["render", "--check"], ["check"]])
def test_commands_pass_on_the_new_repository(
    started: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(started)
    result = runner.invoke(main, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "built-in defaults" not in result.stderr


def test_a_crlf_checkout_passes_render_check(
    started: Path, tmp_path: Path, runner: CliRunner
) -> None:
    clone = tmp_path / "windows"
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "-q", str(started), str(clone))
    assert b"\r\n" not in (clone / "argo" / "project.yaml").read_bytes()
    result = runner.invoke(main, ["render", "--check", "--root", str(clone)],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_refuses_a_tfgen_repository_and_writes_nothing(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / "tfgen.yaml").write_text("apiVersion: tfgen.io/v1\nkind: RepoConfig\n")
    result = runner.invoke(main, ["init", str(tmp_path), "--yes", "--tfgen-source", SOURCE],
                           catch_exceptions=False)
    assert result.exit_code == 2
    assert "already holds tfgen.yaml" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["tfgen.yaml"]


def test_refuses_to_overwrite_a_file(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / ".gitignore").write_text("mine\n")
    result = runner.invoke(main, ["init", str(tmp_path), "--yes", "--tfgen-source", SOURCE],
                           catch_exceptions=False)
    assert result.exit_code == 2
    assert "already holds .gitignore" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == [".gitignore"]


@pytest.mark.parametrize(("flags", "expected"), [
    (["--repo-url", "not a url"], '--repo-url: "not a url" is not valid'),
    (["--namespace", "ok", "--namespace", "Bad_NS"], '--namespace: "Bad_NS" is not valid'),
    (["--kubernetes-version", "latest"], "--kubernetes-version: "),
    (["--nas-server", "has space"], '--nas-server: "has space" is not valid'),
    (["--tfgen-source", "tfgen==0.1.0"], "--tfgen-source: 'tfgen==0.1.0' is not a pinned source"),
    (["--tfgen-source", "git+https://github.com/acme/tfgen.git"], "without @<commit or tag>"),
    (["--tfgen-source", "http://pypi.acme.example/simple/"], "plain http"),
    (["--tfgen-source", "https://user:secret@pypi.acme.example/simple/"], "is not a pinned"),
    (["--runtime", "mpijob"], "Invalid value for '--runtime'"),
    (["--queue", "GPU_team"], '--queue: "GPU_team" is not valid'),
    (["--queue", "gpu", "--priority", "High"], '--priority: "High" is not valid'),
    (["--priority", "research"], "--priority: a Kueue WorkloadPriorityClass orders the runs of "
                                 "a queue, and no queue is given"),
])
def test_an_invalid_setting_names_its_flag(
    tmp_path: Path, runner: CliRunner, flags: list[str], expected: str
) -> None:
    target = tmp_path / "new"
    result = runner.invoke(main, ["init", str(target), "--yes", "--tfgen-source", SOURCE, *flags],
                           catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.output
    assert not target.exists()


def test_this_repository_has_the_gitattributes_init_writes() -> None:
    assert (REPO_ROOT / ".gitattributes").read_text() == gitattributes()


def test_this_repository_ignores_what_init_ignores() -> None:
    ours = set((REPO_ROOT / ".gitignore").read_text().splitlines())
    wanted = [line for line in gitignore().splitlines() if line and not line.startswith("#")]
    assert len(wanted) >= 5
    assert set(wanted) <= ours, set(wanted) - ours


@pytest.mark.parametrize(("source", "env"), [
    (SOURCE, {"TFGEN_REQUIREMENT": SOURCE}),
    ("https://pypi.acme.example/simple/", {"TFGEN_REQUIREMENT": "tfgen-gitops==0.1.0",
                                           "PIP_INDEX_URL": "https://pypi.acme.example/simple/"}),
])
def test_the_workflow_installs_tfgen_from_the_pinned_source(
    source: str, env: dict[str, str]
) -> None:
    text = workflow(parse_source(source))
    assert "make setup" not in text and "tfgen==" not in text
    data = yaml.safe_load(text)
    assert data["env"] == env
    for job in data["jobs"].values():
        runs = [step.get("run", "") for step in job["steps"]]
        setup = next(run for run in runs if "pip install" in run)
        assert setup.split("\n")[:3] == [
            "python3 -m venv .venv", '.venv/bin/python -m pip install "$TFGEN_REQUIREMENT"',
            ".venv/bin/tfgen install-helm"]
    runs = [step.get("run", "") for step in data["jobs"]["check"]["steps"]]
    assert any(run.startswith(".venv/bin/tfgen check --base") for run in runs), runs


def test_the_readme_gives_set_up_and_check(started: Path) -> None:
    text = (started / "README.md").read_text()
    assert ("python3 -m venv .venv && .venv/bin/python -m pip install "
            f"{SOURCE} && .venv/bin/tfgen install-helm") in text
    assert "\n.venv/bin/tfgen check\n" in text
    for link in ("experiments/README.md", "argo/README.md", "schemas/repo-config.schema.json"):
        assert link in text and (started / link).is_file()


def test_the_distribution_name_is_not_the_public_tfgen() -> None:
    """pyproject.toml names the distribution the package says it is (its one home for code),
    and never the public index's unrelated `tfgen`."""
    from tfgen import DISTRIBUTION

    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "tfgen"
    assert project["scripts"] == {"tfgen": "tfgen.cli:main"}


def test_without_a_terminal_init_names_every_value_it_needs(
    tmp_path: Path, runner: CliRunner
) -> None:
    target = tmp_path / "unasked"
    result = runner.invoke(main, ["init", str(target), "--nas-server", "nas.example.com"],
                           catch_exceptions=False)
    assert result.exit_code == 2, result.output
    for flag in ("--repo-url", "--namespace", "--tfgen-source"):
        assert f"\n  {flag} (" in result.stderr
    assert "--nas-server" not in result.stderr  # given, and optional anyway
    assert not target.exists()
    given = runner.invoke(main, ["init", str(target), "--repo-url", "https://github.com/a/b.git",
                                 "--namespace", "ml"], catch_exceptions=False)
    assert given.exit_code == 2
    assert "--tfgen-source (" in given.stderr and "--repo-url" not in given.stderr
    # --yes is suggested only where it can stand in for every setting missing
    if defaults().tfgen_source:
        assert "(or --yes to take the defaults)" in given.stderr
    else:
        assert ("(--tfgen-source has no default here, so --yes cannot stand in for it)"
                in given.stderr)
        assert "--yes to take" not in given.stderr
        yes = runner.invoke(main, ["init", str(target), "--yes"], catch_exceptions=False)
        assert yes.exit_code == 2 and "--tfgen-source: needed" in yes.stderr


@pytest.mark.parametrize(("source", "warned"), [
    ("git+file:///srv/tfgen@v0.1.0", True), ("file:///srv/wheels/simple/", True),
    (SOURCE, False), ("https://pypi.acme.example/simple/", False),
])
def test_a_source_on_this_machine_is_warned_about(tmp_path: Path, runner: CliRunner,
                                                  source: str, warned: bool) -> None:
    flags = [*FLAGS[:-1], source]
    result = runner.invoke(main, ["init", str(tmp_path / "r"), *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    warning = (f"warning: --tfgen-source {source} is a path on this machine: a CI runner cannot "
               "reach it")
    assert (warning in result.stderr) is warned, result.stderr


def test_pre_commit_config_runs_the_published_hooks(started: Path) -> None:
    published = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    config = yaml.safe_load((started / ".pre-commit-config.yaml").read_text())
    [local] = config["repos"]
    assert local["repo"] == "local"
    assert [h["id"] for h in local["hooks"]] == [h["id"] for h in published]
    # run by the tfgen the README's set-up installs, with no environment activated: the
    # program the README's check line runs
    tfgen = check_line().split()[0]
    assert [h["entry"] for h in local["hooks"]] == [
        h["entry"].replace("tfgen", tfgen, 1) for h in published]
    assert tfgen in (started / "README.md").read_text()
    assert {h["language"] for h in local["hooks"]} == {"system"}


def test_asks_for_what_the_flags_leave_open(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tfgen.cli.init._interactive", lambda: True)
    target = tmp_path / "asked"
    # repo URL, namespaces, no NAS server, queue, no priority, the runtime offered (jobset:
    # queued), the cluster's name, destination and Kubernetes version, node types, the source
    answers = (f"git@github.com:acme/ml.git\nml, vision\n\ngpu\n\n\n"
               f"gpu-a\ngpu-a\n1.33\ngpu-a100:gpus=8 cpu:cpu=32\n{SOURCE}\n")
    result = runner.invoke(main, ["init", str(target)], input=answers, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((target / "tfgen.yaml").read_text())
    assert config["argocd"]["repoURL"] == "git@github.com:acme/ml.git"
    assert config["argocd"]["namespaces"] == ["ml", "vision"]
    assert "spec" not in config["defaults"]  # no NAS server given: each spec names one
    assert config["policy"] == {namespace: {"runtime": "jobset", "queue": "gpu", "queues": ["gpu"]}
                                for namespace in ("ml", "vision")}
    [cluster] = config["clusters"]
    assert (cluster["name"], cluster["destination"], cluster["kubernetesVersion"]) == (
        "gpu-a", {"name": "gpu-a"}, "1.33")
    assert cluster["nodeTypes"] == [{"name": "gpu-a100", "gpus": 8}, {"name": "cpu", "cpu": "32"}]
    assert "Git URL of the new repository" in result.stderr
    assert "(tfjob, jobset) [jobset]:" in result.stderr  # the runtimes, from runtimes.RUNTIMES


def test_yes_asks_nothing_and_takes_the_schemas_defaults(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tfgen.cli.init._interactive", lambda: True)
    target = tmp_path / "defaults"
    result = runner.invoke(main, ["init", str(target), "--yes", "--tfgen-source", SOURCE],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((target / "tfgen.yaml").read_text())
    assert config["argocd"]["repoURL"] == defaults().repo_url
    assert config["argocd"]["namespaces"] == defaults().namespaces
    # every namespace on the default runtime, queued nowhere
    assert config["policy"] == {namespace: {"runtime": "tfjob"}
                                for namespace in defaults().namespaces}
    assert "Kueue" not in result.stderr


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(repo_url=st.one_of(st.text(max_size=60),
                          st.text(max_size=40).map("https://git.example.com/".__add__)),
       namespace=st.one_of(st.text(max_size=20),
                           st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)))
def test_any_setting_is_refused_or_written_exactly(repo_url: str, namespace: str) -> None:
    try:
        text = config_text(InitSettings(repo_url=repo_url, namespaces=[namespace]))
    except SettingsError as exc:
        assert exc.settings and set(exc.settings) <= {"repo_url", "namespaces"}
        return
    config = yaml.safe_load(text)
    assert config["argocd"]["repoURL"] == (repo_url or defaults().repo_url)
    assert config["argocd"]["namespaces"] == ([namespace] if namespace else defaults().namespaces)


def test_a_url_yaml_would_misread_is_written_exactly() -> None:
    url = "https://git.example.com/ml/'x\"#"  # quotes and a '#', no space
    config = yaml.safe_load(config_text(InitSettings(repo_url=url, namespaces=["on"])))
    assert config["argocd"]["repoURL"] == url
    assert config["argocd"]["namespaces"] == ["on"]  # not YAML 1.1's true


def test_runtime_and_queue_become_each_namespaces_defaults(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--runtime, --queue and --priority fill policy.<namespace> of every namespace; a spec
    `tfgen new` writes there repeats none of them, runs on the namespace's runtime, and the
    repository passes `tfgen check` with it."""
    repo = tmp_path / "queued"
    flags = [*FLAGS, "--runtime", "jobset", "--queue", "gpu-team", "--priority", "research"]
    result = runner.invoke(main, ["init", str(repo), *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = (repo / "tfgen.yaml").read_text()
    assert config_text(InitSettings(**{**vars(defaults()), "tfgen_source": SOURCE,
                                       "repo_url": "https://github.com/acme/ml.git",
                                       "namespaces": ["ml", "vision"],
                                       "nas_server": "nas.example.com", "runtime": "jobset",
                                       "queue": "gpu-team", "priority": "research"})) == text
    policy = {"runtime": "jobset", "queue": "gpu-team", "queues": ["gpu-team"],
              "priority": "research", "priorities": ["research"]}
    assert yaml.safe_load(text)["policy"] == {"ml": policy, "vision": policy}
    assert "runtime: \"jobset\"  # what a spec without spec.runtime runs on: tfjob or jobset" \
        in text
    monkeypatch.chdir(repo)
    made = runner.invoke(main, ["new", "first", "--image", "registry.example.com/a:1",
                                "--owner", "t@example.com"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    spec = yaml.safe_load((repo / "experiments" / "first.yaml").read_text())["spec"]
    assert not {"runtime", "queue", "priority"} & set(spec)
    listed = runner.invoke(main, ["list", "--format", "json"], catch_exceptions=False)
    [row] = json.loads(listed.stdout)
    assert (row["runtime"], row["queue"]) == ("jobset", "gpu-team")
    for command in (["render"], ["check"]):
        done = runner.invoke(main, command, catch_exceptions=False)
        assert done.exit_code == 0, done.output
    values = yaml.safe_load((repo / "argo" / "experiments" / "first" / "values.yaml").read_text())
    assert values["runtime"] == "jobset"
    assert values["kueue"] == {"queue": "gpu-team", "priority": "research"}



def test_a_queue_without_a_runtime_runs_on_the_one_kueue_admits_by_default(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue (v0.19) admits JobSets by default and TFJobs only when configured: `--queue`
    without `--runtime` sets up jobset. In a namespace with a default priority, a spec that
    leaves the queue (`--queue ""`) leaves the priority too."""
    repo = tmp_path / "queued"
    flags = [*FLAGS, "--queue", "gpu-team", "--priority", "research"]
    result = runner.invoke(main, ["init", str(repo), *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    policy = yaml.safe_load((repo / "tfgen.yaml").read_text())["policy"]
    assert {ns: p["runtime"] for ns, p in policy.items()} == {"ml": "jobset", "vision": "jobset"}
    plain = tmp_path / "plain"
    assert runner.invoke(main, ["init", str(plain), *FLAGS]).exit_code == 0
    assert yaml.safe_load((plain / "tfgen.yaml").read_text())["policy"]["ml"]["runtime"] == (
        RUNTIMES[0].name)
    monkeypatch.chdir(repo)
    made = runner.invoke(main, ["new", "unqueued", "--queue", "", "--image",
                                "registry.example.com/a:1", "--owner", "t@example.com"],
                         catch_exceptions=False)
    assert made.exit_code == 0, made.output
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    values = yaml.safe_load(
        (repo / "argo" / "experiments" / "unqueued" / "values.yaml").read_text())
    assert values["kueue"] == {"queue": "", "priority": ""}



def test_node_types_make_node_fit_part_of_a_new_repository(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--node-type fills clusters[0].nodeTypes, so a pod no node can hold is refused from the
    first spec; without it, tfgen.yaml shows where they go."""
    repo = tmp_path / "nodes"
    flags = [*FLAGS, "--node-type", "gpu-a100:gpus=8,cpu=96,memory=1Ti,accelerator=a100",
             "--node-type", "cpu:cpu=32,memory=128Gi"]
    result = runner.invoke(main, ["init", str(repo), *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [cluster] = yaml.safe_load((repo / "tfgen.yaml").read_text())["clusters"]
    assert cluster["nodeTypes"] == [
        {"name": "gpu-a100", "gpus": 8, "cpu": "96", "memory": "1Ti",
         "labels": {"accelerator": "a100"}},
        {"name": "cpu", "cpu": "32", "memory": "128Gi"}]
    monkeypatch.chdir(repo)
    new = ["new", "--image", "registry.example.com/a:1", "--owner", "t@example.com"]
    too_big = runner.invoke(main, [*new, "big", "--gpus", "9"], catch_exceptions=False)
    assert too_big.exit_code == 1, too_big.output
    assert ("$.spec.roles.worker.gpus: a worker pod asks for 9 GPUs; no node it may run on can "
            "hold it, the largest being gpu-a100") in too_big.stdout
    fits = runner.invoke(main, [*new, "fits", "--gpus", "8"], catch_exceptions=False)
    assert fits.exit_code == 0, fits.output
    plain = tmp_path / "plain"
    assert runner.invoke(main, ["init", str(plain), *FLAGS]).exit_code == 0
    text = (plain / "tfgen.yaml").read_text()
    assert "nodeTypes" not in yaml.safe_load(text)["clusters"][0]
    assert "#                             # (tfgen init --node-type NAME:gpus=N," in text


@pytest.mark.parametrize(("node_type", "message"), [
    ("gpu:gpus", '--node-type: "gpu:gpus": "gpus" is not KEY=VALUE (the form is '
                 "NAME:gpus=N,cpu=C,memory=M,LABEL=VALUE"),
    ("gpu:gpus=eight", '--node-type: must be a whole number, not the text "eight"'),
    ("Bad:gpus=1", '--node-type: "Bad" is not valid: it must be a DNS-1123 label'),
    ("gpu:memory=8GB", '--node-type: "8GB" is not valid'),
])
def test_a_bad_node_type_is_refused_naming_its_flag(
    tmp_path: Path, runner: CliRunner, node_type: str, message: str
) -> None:
    result = runner.invoke(main, ["init", str(tmp_path / "r"), *FLAGS, "--node-type", node_type],
                           catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["init", "new"])
def test_runtime_choices_are_the_runtimes(command: str) -> None:
    [option] = [p for p in main.commands[command].params if p.name == "runtime"]
    assert list(option.type.choices) == [runtime.name for runtime in RUNTIMES]


# --- tfgen upgrade ------------------------------------------------------------------------------


def _tfgen(runner: CliRunner, root: Path, *args: str) -> Result:
    return runner.invoke(main, [*args, "--root", str(root)], catch_exceptions=False)


def test_a_fresh_repository_has_nothing_to_upgrade(started: Path, runner: CliRunner) -> None:
    result = _tfgen(runner, started, "upgrade", "--check")
    assert (result.exit_code, result.stdout) == (0, ""), result.output
    assert "nothing to upgrade" in result.stderr
    assert "tfgen upgrade" not in _tfgen(runner, started, "check").output


def test_upgrade_brings_the_copies_level_and_keeps_the_teams_files(
    started: Path, runner: CliRunner
) -> None:
    """As a repository an older tfgen made: its chart and schemas differ from the installed
    tfgen's. check warns, naming which copy is in force; upgrade shows and rewrites them,
    leaves a template of the team's own and every file the team edits."""
    chart, schemas = started / "charts/tfjob-experiment", started / "schemas"
    (chart / "values.yaml").write_text((chart / "values.yaml").read_text() + "# older\n")
    (schemas / "experiment.schema.json").write_text(
        (schemas / "experiment.schema.json").read_text() + "{garbage")
    (schemas / "kubeflow.org/tfjob_v1.json").unlink()
    (chart / "templates/team.yaml").write_text("# the team's own\n")
    edited = {rel: (started / rel).read_text() for rel in ("tfgen.yaml", "README.md",
                                                           ".github/workflows/pr.yaml")}
    checked = _tfgen(runner, started, "check")
    assert ("charts/tfjob-experiment/: warning: 1 file here differs from the installed tfgen "
            "") in checked.stdout
    assert "(values.yaml): Argo CD renders this repository's copy" in checked.stdout
    assert ("schemas/: warning: 2 files here differ from the installed tfgen") in checked.stdout
    assert "tfgen validates with its own copy; editors read this repository's" in checked.stdout
    shown = _tfgen(runner, started, "upgrade", "--check")
    assert shown.exit_code == 1, shown.output
    assert "-# older\n" in shown.stdout
    assert "+++ b/schemas/kubeflow.org/tfjob_v1.json" in shown.stdout
    assert (chart / "values.yaml").read_text().endswith("# older\n")  # --check writes nothing
    done = _tfgen(runner, started, "upgrade")
    assert done.exit_code == 0, done.output
    assert done.stderr.startswith("upgraded 3 files of charts/tfjob-experiment/, schemas/")
    assert "left in place, not shipped by tfgen: charts/tfjob-experiment/templates/team.yaml" \
        in done.stderr
    shipped = owned_files()
    assert all((started / rel).read_text() == text for rel, text in shipped.items())
    assert (chart / "templates/team.yaml").read_text() == "# the team's own\n"
    assert {rel: (started / rel).read_text() for rel in edited} == edited
    again = _tfgen(runner, started, "upgrade", "--check")
    assert again.exit_code == 0 and "nothing to upgrade" in again.stderr


def test_the_first_clusters_flags_fill_its_entry(tmp_path: Path, runner: CliRunner) -> None:
    """--cluster, --destination (a URL is a server, else Argo CD's name), --kubernetes-version,
    --cluster-runtime and --context describe tfgen.yaml's first cluster; its namespaces are
    every --namespace."""
    flags = [*FLAGS, "--cluster", "gpu-b", "--destination", "gpu-b-prod", "--kubernetes-version",
             "1.33", "--cluster-runtime", "tfjob", "--context", "gpu-b-admin"]
    result = runner.invoke(main, ["init", str(tmp_path / "r"), *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((tmp_path / "r" / "tfgen.yaml").read_text())
    assert "kubernetesVersion" not in config and "destinationServer" not in config["argocd"]
    assert config["clusters"] == [{
        "name": "gpu-b", "destination": {"name": "gpu-b-prod"}, "kubernetesVersion": "1.33",
        "runtimes": ["tfjob"], "context": "gpu-b-admin",
        "namespaces": config["argocd"]["namespaces"]}]
    app = yaml.safe_load((tmp_path / "r" / "argo" / "project.yaml").read_text())
    assert {d.get("name") for d in app["spec"]["destinations"]} == {"gpu-b-prod"}
    # a runtime the cluster lacks would refuse every spec: said once, naming the flags
    refused = runner.invoke(main, ["init", str(tmp_path / "s"), *flags, "--runtime", "jobset"],
                            catch_exceptions=False)
    assert refused.exit_code == 2
    assert ("--runtime: jobset is not one the cluster runs (its runtimes: tfjob), and every "
            "spec would be refused") in refused.stderr
