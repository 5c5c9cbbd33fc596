"""`tfgen check` and `tfgen diff` end to end: the real repository passes; broken copies of it
fail with exit 1 and a message naming the cause; batched rendering equals Argo CD's rendering.

Each scenario copies the real chart, schemas, argo/, specs and tfgen.yaml into tmp_path,
breaks one thing and runs the real helm through the CLI. Scenarios render the bundled experiments in
one helm process each, so the module stays fast.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import REPO_ROOT, build_file_tree, copy_repo_parts, git, git_init
from tfgen.cli import main
from tfgen.gate.argo.applications import resolve_applications
from tfgen.gate.diff.changes import run_diff
from tfgen.gate.helm.batch import BatchRenderer
from tfgen.gate.helm.command import RenderJob, find_helm
from tfgen.gate.helm.jobs import jobs_for
from tfgen.render.generated import dump_yaml
from tfgen.validate.yaml.loader import load_file
from tfgen.words import counted

MNIST = "experiments/distributed-mnist.yaml"
# The experiments this repository ships (copies of it hold the same): what a full check counts.
BUNDLED = sorted((REPO_ROOT / "experiments").glob("*.yaml"))


def render_repo(root: Path) -> None:
    """Write the generated files of `root` (what `tfgen render` does), through the library."""
    from tfgen.render import apply_plan, plan_repository

    plan, problems = plan_repository(root)
    assert plan is not None and not problems and not plan.problems, problems
    apply_plan(plan, prune=True)


def check(runner: CliRunner, root: Path, *args: str) -> Result:
    return runner.invoke(main, ["check", "--root", str(root), *args], catch_exceptions=False)


def edit_yaml(path: Path, change: Any) -> None:
    """Load, change (a function of the data) and write back a YAML file, header kept."""
    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    data = yaml.safe_load(text)
    change(data)
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def test_real_repository_is_clean(runner: CliRunner) -> None:
    result = runner.invoke(main, ["check", "--root", str(REPO_ROOT), "--no-cache"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert BUNDLED
    assert result.stderr.startswith(f"{counted(len(BUNDLED), 'experiment')} checked: all clear (")


def test_pv_name_collision_across_namespaces(runner: CliRunner, repo: Path) -> None:
    # team-a/x and team/a-x both derive the PersistentVolume name team-a-x-data
    edit_yaml(repo / "tfgen.yaml",
              lambda d: d["argocd"].update(namespaces=[*d["argocd"]["namespaces"],
                                                       "team", "team-a"]))
    # render each on its own (a full render refuses the pair), as two pull requests would
    from tfgen.render import apply_plan, plan, plan_render
    from tfgen.validate import validate_repo

    spec = (repo / MNIST).read_text()
    aside = {}
    for namespace, name in (("team-a", "x"), ("team", "a-x")):
        text = spec.replace("name: distributed-mnist", f"name: {name}")
        text = text.replace("/training/tensorflow/logs", f"/training/{name}/logs")  # own logs
        text = re.sub(r"namespace: \S+", f"namespace: {namespace}", text, count=1)
        build_file_tree(repo, {f"experiments/{name}.yaml": text})
        result = validate_repo([repo / f"experiments/{name}.yaml"], cwd=repo)
        assert not result.problems, result.problems
        for generated in plan.experiment_files(result.experiments[0]):
            build_file_tree(repo, {generated.path: generated.content})
        aside[name] = text
        (repo / f"experiments/{name}.yaml").unlink()
    build_file_tree(repo, {f"experiments/{name}.yaml": text for name, text in aside.items()})
    argocd = result.config.data["argocd"]
    apply_plan(plan_render(repo, [], argocd))  # argo/project.yaml namespaces
    out = check(runner, repo)
    assert out.exit_code == 1
    assert 'PersistentVolume name "team-a-x-data"' in out.output  # the spec rule
    assert "PersistentVolume 'team-a-x-data' (cluster-wide) is also rendered by" in out.output


def test_logdir_outside_the_mount(runner: CliRunner, repo: Path) -> None:
    edit_yaml(repo / MNIST, lambda d: d["spec"]["tensorboard"].update(logDir="/var/log/tb"))
    out = check(runner, repo)
    assert out.exit_code == 1
    assert f"{MNIST}:" in out.output and "$.spec.tensorboard.logDir" in out.output
    assert "not inside storage.mountPath" in out.output


def test_unknown_field_in_a_rendered_object(runner: CliRunner, repo: Path) -> None:
    pvc = repo / "charts/tfjob-experiment/templates/pvc.yaml"
    text = pvc.read_text()
    assert "\nspec:\n" in text
    pvc.write_text(text.replace("\nspec:\n", "\nspec:\n  bogusField: 1\n", 1))
    out = check(runner, repo)
    assert out.exit_code == 1
    assert re.search(r"PersistentVolumeClaim/distributed-mnist-data \$\.spec: .*'bogusField' "
                     r"was unexpected", out.output), out.output


def test_kind_missing_from_the_project_whitelist(runner: CliRunner, repo: Path) -> None:
    def drop_tfjob(project: dict[str, Any]) -> None:
        kept = [k for k in project["spec"]["namespaceResourceWhitelist"]
                if k["kind"] != "TFJob"]
        assert len(kept) < len(project["spec"]["namespaceResourceWhitelist"])
        project["spec"]["namespaceResourceWhitelist"] = kept

    edit_yaml(repo / "argo/project.yaml", drop_tfjob)
    out = check(runner, repo)
    assert out.exit_code == 1
    assert "TFJob/distributed-mnist $.kind: kind kubeflow.org/TFJob is not on the " \
           "namespaceResourceWhitelist" in out.output


def test_values_file_the_applicationset_cannot_resolve(runner: CliRunner, repo: Path) -> None:
    path = repo / "argo/applicationset.yaml"
    text = path.read_text()
    assert "../../argo/experiments/" in text
    path.write_text(text.replace("../../argo/experiments/", "../../../elsewhere/"))
    out = check(runner, repo)
    assert out.exit_code == 1
    assert "$.spec.source.helm.valueFiles[0]" in out.output
    assert "resolves outside the repository" in out.output


def test_an_applicationset_that_is_not_yaml_is_said_in_one_line(runner: CliRunner,
                                                                 repo: Path) -> None:
    path = repo / "argo/applicationset.yaml"
    text = path.read_text()
    path.write_text(text + "broken: [x\n")
    out = check(runner, repo)
    assert out.exit_code == 1
    said = [line for line in out.output.splitlines() if "not valid YAML" in line]
    # once (resolving the Applications and checking argo/ objects find it alike), naming the
    # file, what is wrong and its line, not the parser's drawing of the line below
    line = len(text.splitlines()) + 1
    assert said == ["argo/applicationset.yaml: not valid YAML: unclosed bracket '[' "
                    f"(line {line}, column 9)"], out.output
    assert "|" not in out.output and "^" not in out.output, out.output


def test_storage_change_against_the_base_commit(runner: CliRunner, repo: Path) -> None:
    git_init(repo)
    edit_yaml(repo / MNIST, lambda d: d["spec"]["storage"]["nas"].update(path="/elsewhere"))
    render_repo(repo)
    out = check(runner, repo)
    assert out.exit_code == 0  # without a base the change itself is valid
    assert "all clear" in out.stderr
    out = check(runner, repo, "--base", "HEAD")
    assert out.exit_code == 1
    [line] = out.stdout.splitlines()
    at = load_file(repo / MNIST).locate(("spec", "storage", "nas", "path"))
    assert line.startswith(f"{MNIST}:{at[0]}:{at[1]}: $.spec.storage.nas.path: changed from "
                           '"/training" to "/elsewhere", which a started run cannot take: a '
                           "PV's source (server, path, driver) is immutable "
                           "(PersistentVolume/default-distributed-mnist-data)"), line
    assert "`tfgen rerun distributed-mnist --as NEW`" in line
    # --changed renders only the touched experiment and still finds it
    changed = check(runner, repo, "--base", "HEAD", "--changed")
    assert changed.exit_code == 1 and 'changed from "/training"' in changed.output
    assert changed.stderr.startswith(f"1 of {counted(len(BUNDLED), 'experiment')} checked (the "
                                     "others are untouched since the base): 1 problem (")
    # the base's renders are no experiment checked: the counts add up to the one checked
    assert "; 0 rendered by helm, 1 reused from the last check)" in changed.stderr


def test_a_change_to_a_live_run_is_said_once_whole_at_its_line(
    runner: CliRunner, repo: Path
) -> None:
    long = "--batch_size=64 " + "--flag=" + "x" * 150
    edit_yaml(repo / MNIST, lambda d: d["spec"]["args"].append(long))
    render_repo(repo)
    git_init(repo)
    edit_yaml(repo / MNIST, lambda d: d["spec"]["args"].__setitem__(
        -1, long.replace("=64", "=128")))
    render_repo(repo)
    out = check(runner, repo, "--base", "HEAD", "--no-cache")
    assert out.exit_code == 1
    [line] = out.stdout.splitlines()  # one spec field: once, not once per replica type
    at = load_file(repo / MNIST).locate(("spec", "args", 2))
    assert line.startswith(f"{MNIST}:{at[0]}:{at[1]}: $.spec.args[2]: changed from "
                           f'"{long}" to "{long.replace("=64", "=128")}", which a started run '
                           "cannot take: running pods are not recreated from a changed "
                           "template (TFJob/distributed-mnist Master, TFJob/distributed-mnist "
                           "PS, TFJob/distributed-mnist Worker)"), line
    assert line.endswith("`tfgen rerun distributed-mnist --as NEW`, then make the change "
                         "there)"), line
    rerun = runner.invoke(main, ["rerun", "distributed-mnist", "--as", "mnist-128"],
                          catch_exceptions=False)
    assert rerun.exit_code in (0, 1), rerun.output  # the way out the message names exists


def test_an_odd_base_applicationset_does_not_switch_the_live_run_check_off(
    runner: CliRunner, repo: Path
) -> None:
    # At the base, the ApplicationSet's files generator carries a half-written second entry;
    # resolving the base must still find the running experiments and protect them.
    appset = repo / "argo/applicationset.yaml"
    good = appset.read_text()
    edit_yaml(appset, lambda d: d["spec"]["generators"][0]["git"]["files"].append({}))
    git_init(repo)
    appset.write_text(good)
    edit_yaml(repo / MNIST, lambda d: d["spec"]["storage"]["nas"].update(path="/elsewhere"))
    render_repo(repo)
    out = check(runner, repo, "--base", "HEAD")
    assert out.exit_code == 1, out.output
    assert 'changed from "/training" to "/elsewhere"' in out.output


def test_diff_shows_exactly_a_worker_count_change(runner: CliRunner, repo: Path) -> None:
    git_init(repo)

    def more_workers(spec: dict[str, Any]) -> None:
        spec["spec"]["roles"]["worker"]["replicas"] += 1

    edit_yaml(repo / MNIST, more_workers)
    render_repo(repo)
    git(repo, "commit", "-qam", "one more worker")
    result = run_diff(repo, "HEAD~1")
    assert [(d.experiment, d.ref, d.status) for d in result.diffs] == [
        ("distributed-mnist", "TFJob/distributed-mnist", "changed")]
    changed = [line for line in result.diffs[0].diff.splitlines()
               if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 2 and all("replicas:" in line for line in changed), changed
    assert [(c.name, c.status, c.gpus_before, c.gpus_after, c.queued)
            for c in result.changes] == [("distributed-mnist", "changed", 3, 4, False)]
    out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD~1",
                               "--format", "markdown", "--full"], catch_exceptions=False)
    assert out.exit_code == 0
    assert out.stdout.startswith("<!-- tfgen-diff -->")
    # a started TFJob takes no new worker count: the row says `tfgen check --base` refuses it
    assert ("| `distributed-mnist` | changed, **refused** | 1 changed: TFJob | 3 → 4 (+1) |"
            in out.stdout)
    assert "**`distributed-mnist`: TFJob/distributed-mnist changed**" in out.stdout
    assert out.stderr.startswith("Against HEAD~1: 1 experiment changed (1 object changed).")
    # one more 1-GPU worker in namespace default (whose lr-sweep's six runs hold 12 more);
    # ml-team's quota of 16 is untouched, its queued mnist-jobset's 2 GPUs shown apart
    assert "| `default` | 15 | 16 (+1) | none | 0 |" in out.output
    assert "| `ml-team` | 5 | 5 | 16 | 2 |" in out.output
    # Names or spec files restrict the diff; a name that is no experiment is a usage error.
    other = sorted(p.stem for p in (repo / "experiments").glob("*.yaml")
                   if p.stem != "distributed-mnist")[0]
    for only in (["distributed-mnist"], [other, "experiments/distributed-mnist.yaml"]):
        out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD~1", *only],
                            catch_exceptions=False)
        assert out.stdout.splitlines()[1].startswith("distributed-mnist  changed"), out.output
    out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD~1", other],
                        catch_exceptions=False)
    assert (out.exit_code, out.stdout) == (0, "")
    assert out.stderr.startswith("Nothing changes in the cluster against HEAD~1.")
    out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD~1", "nope"],
                        catch_exceptions=False)
    assert out.exit_code == 2
    assert "error: nope: no experiment of that name at HEAD~1 or now" in out.stderr



def test_diff_shows_the_gpus_a_queued_run_requests(runner: CliRunner, repo: Path) -> None:
    # Kueue admits mnist-jobset's runs: the review still sees every GPU they request, and
    # apart from the namespace's quota, which holds only the runs no queue admits.
    git_init(repo)
    edit_yaml(repo / "experiments/mnist-jobset.yaml",
              lambda spec: spec["spec"]["roles"]["worker"].update(replicas=3))
    render_repo(repo)
    git(repo, "commit", "-qam", "one more queued worker")
    result = run_diff(repo, "HEAD~1")
    assert [(c.name, c.status, c.gpus_before, c.gpus_after, c.queued)
            for c in result.changes] == [("mnist-jobset", "changed", 2, 3, True)]
    out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD~1",
                               "--format", "markdown"], catch_exceptions=False)
    row = next(line for line in out.stdout.splitlines() if line.startswith("| `mnist-jobset`"))
    assert row.endswith("| 2 → 3 (+1) queued |"), row
    assert "| `ml-team` | 5 | 5 | 16 | 3 (+1) |" in out.stdout



def test_diff_names_a_base_file_as_ref_and_path(runner: CliRunner, repo: Path) -> None:
    # helm's error about a file of the base names it as git does, never by the temporary
    # folder the base was exported to
    values = repo / "argo/experiments/distributed-mnist/values.yaml"
    good = values.read_text()
    values.write_text(good + "broken: [\n")
    git_init(repo)
    values.write_text(good)
    out = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD"],
                        catch_exceptions=False)
    assert out.exit_code == 1, out.output
    assert ("argo/experiments/distributed-mnist: helm template (base): Error: failed to parse "
            "HEAD:argo/experiments/distributed-mnist/values.yaml: ") in out.stdout
    assert "tfgen-base-" not in out.output


def test_json_format_and_missing_helm(runner: CliRunner, repo: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    edit_yaml(repo / MNIST, lambda d: d["spec"]["tensorboard"].update(logDir="/var/log/tb"))
    out = check(runner, repo, "--format", "json", "--no-cache")
    assert out.exit_code == 1
    problems = json.loads(out.stdout)
    assert {"path", "line", "col", "pointer", "message", "hint"} <= set(problems[0])
    monkeypatch.setenv("TFGEN_HELM", str(repo / "no-such-helm"))
    out = check(runner, repo, "--no-cache")
    assert out.exit_code == 2
    assert "`tfgen install-helm`" in out.output


@pytest.mark.parametrize("major", [4, 3])
def test_batched_rendering_equals_per_experiment_rendering(major: int, tmp_path: Path) -> None:
    """The real chart, every bundled experiment and every ci/ scenario (written as tfgen
    writes values, so that they are batched): one umbrella render gives byte-identical
    objects to one `helm template` per experiment."""
    apps = resolve_applications(REPO_ROOT).applications
    jobs = jobs_for(apps, "1.30")
    chart = REPO_ROOT / "charts/tfjob-experiment"
    scenarios = sorted((chart / "ci").glob("*.yaml"))
    for values in scenarios:
        data = yaml.safe_load(values.read_text()) or {}
        namespace = (data.get("experiment") or {}).get("namespace") or "default"
        written = tmp_path / values.name
        written.write_text(dump_yaml(data))
        jobs.append(RenderJob(values.stem, namespace, chart, (written,), "1.30"))
    assert apps and scenarios
    assert len(jobs) == len(apps) + len(scenarios)  # one per experiment, one per ci/ scenario
    renderer = BatchRenderer(helm=find_helm(major), workers=1)
    batched = renderer.render(jobs)
    assert renderer.stats.helm_processes == 2  # the chart's defaults as helm reads them; all
    for job, result in zip(jobs, batched, strict=True):
        single = renderer.render_single(job)
        assert not single.error, single.error
        assert result.manifest == single.manifest, job.name


def test_generated_files_out_of_date_and_left_over(runner: CliRunner, repo: Path) -> None:
    def more_workers(spec: dict[str, Any]) -> None:
        spec["spec"]["roles"]["worker"]["replicas"] += 1

    edit_yaml(repo / MNIST, more_workers)  # and no `tfgen render`
    (repo / "experiments/cpu-linear.yaml").unlink()
    out = check(runner, repo)
    assert out.exit_code == 1
    assert "argo/experiments/distributed-mnist/values.yaml: generated file is out of date " \
           "(run `tfgen render` and commit the result)" in out.output
    assert ("argo/experiments/cpu-linear/app.yaml: generated file is left over (no spec "
            "generates it) (run `tfgen render --prune` and commit the result)") in out.output
    # each hint mends what it is given for
    rendered = runner.invoke(main, ["render", "--prune", "--root", str(repo)],
                             catch_exceptions=False)
    assert rendered.exit_code == 0, rendered.output
    assert "generated file" not in check(runner, repo).output


def test_changed_without_base_is_a_usage_error(runner: CliRunner, repo: Path) -> None:
    out = check(runner, repo, "--changed")
    assert out.exit_code == 2 and "--changed needs --base" in out.output


def test_chart_path_the_applicationset_cannot_resolve(runner: CliRunner, repo: Path) -> None:
    path = repo / "argo/applicationset.yaml"
    text = path.read_text()
    assert 'path: "charts/tfjob-experiment"' in text
    path.write_text(text.replace('path: "charts/tfjob-experiment"',
                                 'path: "charts/tfjob-experimnt"'))
    out = check(runner, repo)
    assert out.exit_code == 1
    assert "$.spec.source.path: chart path 'charts/tfjob-experimnt' holds no Chart.yaml" \
        in out.output


def test_changed_scope(repo: Path) -> None:
    from tfgen.gate.revisions.base import changed_experiments

    git_init(repo)
    edit_yaml(repo / MNIST, lambda d: d["spec"]["roles"]["worker"].update(replicas=5))
    (repo / "argo/experiments/cpu-linear/values.yaml").write_text("# changed\n")
    (repo / "README.md").write_text("not an input\n")
    assert changed_experiments(repo, "HEAD") == {"distributed-mnist", "cpu-linear"}
    for everything in ("charts/tfjob-experiment/templates/pv.yaml", "tfgen.yaml",
                       "argo/applicationset.yaml"):
        (repo / everything).write_text((repo / everything).read_text() + "\n")
        assert changed_experiments(repo, "HEAD") is None, everything
        git(repo, "checkout", "--", everything)
    build_file_tree(repo, {"schemas/new.schema.json": "{}"})
    assert changed_experiments(repo, "HEAD") is None


def test_github_annotations(runner: CliRunner, repo: Path) -> None:
    edit_yaml(repo / MNIST, lambda d: d["spec"]["tensorboard"].update(logDir="/var/log/tb"))
    out = check(runner, repo, "--format", "github")
    assert out.exit_code == 1
    assert re.search(rf"^::error file={re.escape(MNIST)},line=\d+,col=\d+::", out.stdout,
                     re.MULTILINE), out.stdout


def test_values_helm_reads_otherwise_are_refused_with_helms_message(
    runner: CliRunner, repo: Path
) -> None:
    # A hand edit that PyYAML reads as the string "y" and helm (YAML 1.1) as true: the file is
    # not in the writer's form, so helm renders it itself, schema check included, as Argo CD.
    values = repo / "argo/experiments/cpu-linear/values.yaml"
    text = values.read_text()
    assert "  owner: data-team@example.com\n" in text
    values.write_text(text.replace("  owner: data-team@example.com\n", "  owner: y\n"))
    out = check(runner, repo, "--no-cache")
    assert out.exit_code == 1
    assert "helm template cpu-linear" in out.output and "got boolean, want string" in out.output
    assert "/experiment/owner" in out.output


def test_an_app_yaml_argo_cd_reads_otherwise_is_not_resolved(
    runner: CliRunner, repo: Path
) -> None:
    # `name: y` is an Application named "true" to Argo CD and "y" to PyYAML.
    app = repo / "argo/experiments/cpu-linear/app.yaml"
    app.write_text(app.read_text().replace("name: cpu-linear\n", "name: y\n"))
    out = check(runner, repo, "--no-cache")
    assert out.exit_code == 1
    assert ("argo/experiments/cpu-linear/app.yaml: is not in the form tfgen writes, so Argo CD "
            "may read it otherwise than tfgen") in out.output
    assert f"{counted(len(BUNDLED) - 1, 'experiment')} checked" in out.output  # all but it


def test_an_argument_that_looks_like_a_merge_key_passes(runner: CliRunner, repo: Path) -> None:
    # helm's toYaml prints it as a plain `- <<`, which Kubernetes reads as the string
    spec = repo / MNIST
    spec.write_text(spec.read_text().replace("  args:\n", "  args:\n    - <<\n", 1))
    render_repo(repo)
    result = check(runner, repo, "--no-cache")
    assert result.exit_code == 0, result.output


def test_an_object_argo_cd_cannot_apply_is_refused(runner: CliRunner, repo: Path) -> None:
    # 90 args of 1,200 bytes: each far within what a process takes, but every role repeats
    # them, and Argo CD's apply keeps the whole TFJob in one annotation
    args = [f"--flag{i}={'x' * 1200}" for i in range(90)]
    edit_yaml(repo / MNIST, lambda d: d["spec"].update(args=args))
    render_repo(repo)
    out = check(runner, repo)
    assert out.exit_code == 1, out.output
    [line] = [line for line in out.output.splitlines() if "last-applied-configuration" in line]
    assert line.startswith(f"{MNIST}: TFJob/distributed-mnist $: TFJob is "), line
    assert "Kubernetes refuses annotations over 262,144 bytes per object" in line, line
    # a third of the args fit
    edit_yaml(repo / MNIST, lambda d: d["spec"].update(args=args[:30]))
    render_repo(repo)
    assert "last-applied-configuration" not in check(runner, repo).output
