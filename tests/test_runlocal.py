"""run-local: every replica as a local process with a working TF_CONFIG, and nothing left behind.

The replicas here are a tiny Python program (tests/fixtures/runlocal/replica.py), so these
tests need no TensorFlow; a real TensorFlow run is in test_example_mnist.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tfgen.errors import EnvironmentProblem, InputError, OptionsError
from tfgen.repo.runtimes import tfconfig
from tfgen.run import localpods, runlocal

REPLICA = Path(__file__).parent / "fixtures" / "runlocal" / "replica.py"


def tfjob(roles: dict[str, int], args: list[str]) -> dict[str, Any]:
    def replica(n: int) -> dict[str, Any]:
        container = {
            "name": "tensorflow",
            "image": "example",
            "command": ["python", str(REPLICA)],
            "args": args,
            "volumeMounts": [{"name": "data", "mountPath": "/training"}],
        }
        return {"replicas": n, "template": {"spec": {"containers": [container]}}}

    return {
        "kind": "TFJob",
        "metadata": {"name": "local", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {k: replica(n) for k, n in roles.items()}},
    }


def alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it has ended and only waits for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def markers(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


def run(job: dict[str, Any], data: Path, **kwargs: Any) -> tuple[runlocal.RunResult, list[str]]:
    lines: list[str] = []
    result = runlocal.run_pods(
        tfconfig.pods(job),
        job,
        localpods.LocalVolume("/training", str(data)),
        emit=lines.append,
        options=localpods.PodRunOptions(**kwargs),
    )
    return result, lines


def all_pids(found: dict[str, dict[str, Any]]) -> list[int]:
    return [pid for m in found.values() for pid in (m["pid"], m["grandchild"])]


def test_every_replica_gets_its_own_working_tf_config(tmp_path: Path) -> None:
    roles = {"Chief": 1, "Worker": 2, "PS": 2, "Evaluator": 1}
    job = tfjob(roles, ["--out=/training/markers", "--expect=6"])
    result, lines = run(job, tmp_path, timeout=60)
    assert result.exit_code == 0, (result, lines)
    assert result.leader == "local-chief-0"
    found = markers(tmp_path / "markers")  # /training was mapped to the data dir
    assert sorted(found) == sorted(p.name for p in tfconfig.pods(job))
    clusters = {json.dumps(m["tfConfig"]["cluster"]) for m in found.values()}
    assert len(clusters) == 1  # everyone sees the same cluster, evaluator included
    cluster = found["local-ps-1"]["tfConfig"]["cluster"]
    assert sorted(cluster) == ["chief", "evaluator", "ps", "worker"]
    assert found["local-ps-1"]["tfConfig"]["task"] == {"type": "ps", "index": 1}
    assert len({a for addrs in cluster.values() for a in addrs}) == 6  # distinct ports
    assert any(
        line.startswith("local-worker-1 ") and "listening check ok" in line for line in lines
    )
    # cleanPodPolicy Running: the PS, workers, evaluator and their children are gone.
    assert not [pid for pid in all_pids(found) if alive(pid)]


def test_master_and_worker_zero_lead(tmp_path: Path) -> None:
    job = tfjob({"Master": 1, "Worker": 1}, [f"--out={tmp_path}/m", "--expect=2"])
    result, _ = run(job, tmp_path, timeout=60)
    assert (result.exit_code, result.leader) == (0, "local-master-0")
    job = tfjob({"Worker": 2, "PS": 1}, [f"--out={tmp_path}/w", "--expect=3"])
    result, _ = run(job, tmp_path, timeout=60)
    assert (result.exit_code, result.leader) == (0, "local-worker-0")


def test_a_failing_replica_ends_the_run_with_its_status(tmp_path: Path) -> None:
    job = tfjob({"Chief": 1, "PS": 1}, ["--out=/training/m", "--fail-as=ps", "--leader-sleeps"])
    result, _ = run(job, tmp_path, timeout=60)
    assert result.exit_code == 3
    assert "local-ps-0 failed with 3" in result.reason
    found = markers(tmp_path / "m")
    assert "local-ps-0" in found  # the failing replica writes its marker first
    assert not [pid for pid in all_pids(found) if alive(pid)]


def test_timeout_stops_every_process_group(tmp_path: Path) -> None:
    job = tfjob({"Chief": 1, "Worker": 1}, ["--out=/training/m", "--leader-sleeps"])
    result, _ = run(job, tmp_path, timeout=2)
    assert result.exit_code == runlocal.EXIT_TIMEOUT
    assert "timed out after 2s" in result.reason
    found = markers(tmp_path / "m")
    assert len(found) == 2
    assert not [pid for pid in all_pids(found) if alive(pid)]


def test_command_replaces_command_and_args_and_uses_this_interpreter(tmp_path: Path) -> None:
    pod = tfconfig.pods(tfjob({"Worker": 1}, ["--log_dir=/training/logs", "/trainingX"]))[0]
    planned, _ = localpods.plan(
        [pod], [pod], localpods.LocalVolume("/training", "/tmp/d"),
        localpods.PodRunOptions(command=("python3", "x.py", "--out=/training/o")),
    )
    assert planned[0].argv == [sys.executable, "x.py", "--out=/tmp/d/o"]
    assert "TF_CONFIG" not in planned[0].env  # one replica in total: the operator sets none


def test_keep_args_appends_the_specs_args_to_the_command() -> None:
    pod = tfconfig.pods(tfjob({"Worker": 1}, ["--log_dir=/training/logs", "/trainingX"]))[0]
    planned, _ = localpods.plan([pod], [pod], localpods.LocalVolume("/training", "/tmp/d"),
                               localpods.PodRunOptions(command=("python3", "x.py"),
                                                      keep_args=True))
    assert planned[0].argv == [sys.executable, "x.py", "--log_dir=/tmp/d/logs", "/trainingX"]
    without, _ = localpods.plan([pod], [pod], localpods.LocalVolume("/training", "/tmp/d"))
    assert without[0].argv == [sys.executable, str(REPLICA), "--log_dir=/tmp/d/logs",
                               "/trainingX"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("--data_dir=/training/tensorflow/input_data", "--data_dir=/data/tensorflow/input_data"),
        ("/training", "/data"),
        ("/trainingset", "/trainingset"),
        ("/x/training/y", "/x/training/y"),
        ("a:/training,b", "a:/data,b"),
    ],
)
def test_mount_path_mapping_respects_path_boundaries(text: str, expected: str) -> None:
    assert localpods.map_mount_path(text, "/training", "/data") == expected


def test_env_from_secrets_is_reported_not_invented(tmp_path: Path) -> None:
    job = tfjob({"Worker": 1}, [])
    container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "DATA", "value": "/training/in"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ]
    pods = tfconfig.pods(job)
    planned, notes = localpods.plan(pods, pods, localpods.LocalVolume("/training", "/d"),
                                    base_env={})
    assert planned[0].env["DATA"] == "/d/in"
    assert "TOKEN" not in planned[0].env
    assert notes == ["env TOKEN comes from a Secret or ConfigMap; not set locally"]


def test_no_posix_no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "name", "nt")
    with pytest.raises(EnvironmentProblem):
        runlocal.require_posix()


# --- through the command line, from a spec -------------------------------------------------

SPEC = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata: {{name: local-run, namespace: default, owner: someone@example.com}}
spec:
  image: example.com/train:1
  command: [python, {replica}]
  args: [--out=/data/markers, {extra}]
  roles:
    chief: {{replicas: 1}}
    worker: {{replicas: 1}}
    ps: {{replicas: 1}}
  storage: {{existingClaim: shared, mountPath: /data}}
  tensorboard: {{enabled: false}}
"""


def tfgen_cli() -> list[str]:
    script = Path(sys.executable).with_name("tfgen")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from tfgen.cli import main; main()"]


def write_spec(tmp_path: Path, extra: str) -> Path:
    spec = tmp_path / "local-run.yaml"
    spec.write_text(SPEC.format(replica=REPLICA, extra=extra))
    return spec


def wait_for_markers(
    out: Path, count: int, proc: subprocess.Popen[str], seconds: float = 30
) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        found = markers(out) if out.exists() else {}
        if len(found) == count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"only {sorted(markers(out)) if out.exists() else []} started")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_cli_signal_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals) -> None:
    spec = write_spec(tmp_path, "--leader-sleeps")
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [*tfgen_cli(), "run-local", str(spec), "--data-dir", str(data), "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = wait_for_markers(data / "markers", 3, proc)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, (out, err)
    assert f"interrupted by {sig.name}" in err
    assert not [pid for pid in all_pids(found) if alive(pid)]


def test_cli_runs_to_the_chiefs_end(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "--expect=3")
    data = tmp_path / "data"
    result = subprocess.run(
        [*tfgen_cli(), "run-local", str(spec), "--data-dir", str(data), "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "local-run-chief-0 exited with 0" in result.stderr
    found = markers(data / "markers")
    assert sorted(found) == ["local-run-chief-0", "local-run-ps-0", "local-run-worker-0"]
    assert not [pid for pid in all_pids(found) if alive(pid)]


def test_a_pod_without_command_needs_one_given() -> None:
    job = tfjob({"Worker": 1}, ["--steps=1"])
    del job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"]
    pods = tfconfig.pods(job)
    with pytest.raises(InputError, match="pass --command"):
        localpods.plan(pods, pods, localpods.LocalVolume("/training", "/d"))


def test_split_command_follows_shell_quoting() -> None:
    assert runlocal.split_command("python main.py --flag 'a b'") == [
        "python", "main.py", "--flag", "a b"]
    assert runlocal.split_command(None) is None


@pytest.mark.parametrize(("command", "message"), [
    ('python "unbalanced', "no closing quotation"),
    ("python main.py \\", "no escaped character"),
    ("", "--command is empty"),
    ("   ", "--command is empty"),
])
def test_broken_command_is_a_usage_error(command: str, message: str) -> None:
    with pytest.raises(OptionsError, match=message):
        runlocal.split_command(command)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf")])
def test_timeout_must_be_positive_and_finite(timeout: float) -> None:
    with pytest.raises(OptionsError, match="must be a positive number of seconds"):
        runlocal.check_timeout(timeout)
    assert runlocal.check_timeout(2.5) == 2.5
    assert runlocal.check_timeout(None) is None


# --- the data folder: .tfgen-run/<name>/ in the repository, reused, --clean -----------------

REPO_CONFIG = "apiVersion: tfgen.io/v1\nkind: RepoConfig\n"


def spec_repo(tmp_path: Path, extra: str = "--expect=3") -> Path:
    """A tiny tfgen repository holding the local-run experiment."""
    repo = tmp_path / "repo"
    (repo / "experiments").mkdir(parents=True)
    (repo / "tfgen.yaml").write_text(REPO_CONFIG)
    (repo / "experiments" / "local-run.yaml").write_text(SPEC.format(replica=REPLICA,
                                                                     extra=extra))
    return repo


def run_cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tfgen_cli(), "run-local", *args, "--timeout", "60"], cwd=repo,
                          capture_output=True, text=True, timeout=90)


def test_data_folder_is_in_the_repository_reused_and_cleaned(tmp_path: Path) -> None:
    repo = spec_repo(tmp_path)
    first = run_cli(repo, "local-run")  # a name: experiments/local-run.yaml
    assert first.returncode == 0, first.stderr
    folder = repo / ".tfgen-run" / "local-run"
    assert sorted(markers(folder / "markers")) == [
        "local-run-chief-0", "local-run-ps-0", "local-run-worker-0"]
    assert (repo / ".tfgen-run" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert first.stderr.splitlines()[-1] == (
        "tfgen: local-run-chief-0 exited with 0: the run worked; its data is in "
        ".tfgen-run/local-run (kept for the next run). Next: `tfgen render`, then open a pull "
        "request")
    (folder / "from-the-first-run").write_text("kept")
    (folder / "inner").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("never removed")
    (folder / "inner" / "link").symlink_to(outside)

    again = run_cli(repo, "experiments/local-run.yaml")  # a path: the same folder
    assert again.returncode == 0, again.stderr
    assert (folder / "from-the-first-run").read_text() == "kept"

    cleaned = run_cli(repo, "local-run", "--clean")
    assert cleaned.returncode == 0, cleaned.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["markers"]
    assert (outside / "precious").read_text() == "never removed"  # links are not followed


def test_clean_refuses_what_tfgen_did_not_make(tmp_path: Path) -> None:
    repo = spec_repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    (repo / ".tfgen-run").mkdir()
    (repo / ".tfgen-run" / "local-run").symlink_to(elsewhere)
    refused = run_cli(repo, "local-run", "--clean")
    assert refused.returncode == 2
    assert "error: --clean: .tfgen-run/local-run is a symbolic link" in refused.stderr
    (repo / ".tfgen-run" / "local-run").unlink()
    (repo / ".tfgen-run" / "local-run").mkdir()
    unmarked = run_cli(repo, "local-run", "--clean")
    assert unmarked.returncode == 2
    assert "error: --clean: .tfgen-run was not made by tfgen run-local" in unmarked.stderr
    assert (elsewhere / "keep").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["local-run", "--clean", "--data-dir", "d"], "--clean empties only tfgen's own"),
    (["local-run", "--keep-args"], "--keep-args keeps the spec's args after --command"),
    (["no-such-run"], "no-such-run: no such file, and no experiment of that name in "
                      "experiments/"),
])
def test_options_that_cannot_work_are_usage_errors(tmp_path: Path, args: list[str],
                                                   message: str) -> None:
    result = run_cli(spec_repo(tmp_path), *args)
    assert result.returncode == 2, result.stderr
    assert f"error: {message}" in result.stderr
    assert not (tmp_path / "repo" / ".tfgen-run").exists()


def test_outside_a_repository_the_data_folder_must_be_given(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "--expect=3")
    result = run_cli(tmp_path, str(spec))
    assert result.returncode == 2
    assert "is not in a tfgen repository" in result.stderr
    assert "give --data-dir" in result.stderr


def test_a_jobset_pod_runs_locally_with_the_env_its_pod_gets() -> None:
    """run-local of a JobSet experiment gives each process the env the kubelet gives its pod
    (the completion index included, as every JobSet pod has it), TF_CONFIG aside (local
    addresses); a TFJob's pods get no such variable."""
    from helpers import REPO_ROOT, rendered_here
    from tfgen.repo import runtimes
    from tfgen.repo.runtimes.indexedjob import INDEX_ENV, pod_env
    from tfgen.run.explain import explain_spec

    explanation = explain_spec(REPO_ROOT / "experiments" / "mnist-jobset.yaml")
    jobset = next(o.doc for o in rendered_here()  # as its Application renders it
                  if o.kind == "JobSet" and o.name == explanation.job
                  and o.doc["metadata"]["namespace"] == explanation.namespace)
    runtime = runtimes.by_name(explanation.runtime)
    volume = localpods.LocalVolume("/unmapped", "/unmapped")  # the pod's own paths
    planned, _ = localpods.plan(explanation.pods, explanation.pods, volume,
                               localpods.PodRunOptions(given_env=runtime.given_env), base_env={})
    containers = {t.replica_type: (t.spec or {})["containers"][0]
                  for t in runtime.pod_templates(jobset)}
    for local in planned:
        expected = pod_env(containers[local.pod.replica_type], local.pod.index)
        expected.pop("TF_CONFIG")
        got = {k: v for k, v in local.env.items() if k not in ("TF_CONFIG", "TFGEN_POD_NAME",
                                                                 "PYTHONUNBUFFERED")}
        assert got == expected and got[INDEX_ENV] == str(local.pod.index), local.pod.name
    assert runtimes.TFJOB.given_env(3) == {}
