"""After the merge, from the command line: `tfgen status`, `logs` and `tensorboard` read what
the lab's real controllers made of a repository Argo CD synced.

One repository for the module (gitops.py), the bundled experiments left out: a run that
succeeds, one whose pod fails with an exit code, an unqueued JobSet that runs for an hour
(with a TensorBoard), two queued runs that do not fit the ClusterQueue together, and a run
asking more GPUs than a node has. Logs and the port-forward go through the API server to
KWOK, which serves them from its Logs and PortForward objects; the port-forward lands on a
local HTTP server standing for the TensorBoard pod. The tests run in file order.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pty
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gitops import GitOpsRepo, make_repo, namespaces, platform_set_up, tear_down
from tfgen.repo import chart

pytestmark = pytest.mark.lab

DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"  # KWOK completes the pod this long after start
FAIL = "pod-container-running-failed.stage.kwok.x-k8s.io"  # KWOK fails a pod so labelled
DONE, FAILS, LONG, TOO_BIG = "done-run", "fails-run", "long-run", "too-big"
SWEEP = "steps-sweep"  # two runs, each done at once
QUEUED = ("queued-small", "queued-large")  # 2 and 3 GPUs: the queue holds 3
NODE_GPUS = 8  # each lab GPU node's (scripts/lab/versions.py)


def _add_runs(repo: GitOpsRepo) -> None:
    """The module's runs, made with tfgen's own commands from the bundled ones, which then
    go; each given what the lab reads: how long KWOK keeps its pods running, or that one
    fails."""
    bundled = sorted(p.stem for p in (repo.root / "experiments").glob("*.yaml"))
    repo.tfgen("new", DONE, "--from", "cpu-linear")
    repo.tfgen("new", FAILS, "--from", "cpu-linear")
    repo.tfgen("new", LONG, "--from", "mnist-jobset", "--queue", "", "--priority", "")
    repo.tfgen("new", QUEUED[0], "--from", "mnist-jobset")
    repo.tfgen("new", QUEUED[1], "--from", "distributed-mnist", "--queue", "gpu-team")
    repo.tfgen("new", TOO_BIG, "--from", "distributed-mnist")
    repo.tfgen("new", SWEEP, "--from", "cpu-linear")
    for name in bundled:
        repo.spec(name).unlink()
        shutil.rmtree(repo.root / "argo" / "experiments" / name)

    def annotate(doc: dict[str, Any], **annotations: str) -> None:
        doc["metadata"].setdefault("annotations", {}).update(annotations)
    for name in (LONG, *QUEUED, TOO_BIG):
        repo.edit(name, lambda doc: annotate(doc, **{DELAY: "1h"}))

    def failing(doc: dict[str, Any]) -> None:
        doc["metadata"].setdefault("labels", {})[FAIL] = "true"
        annotate(doc, **{f"{FAIL}/exit-code": "3"})
    repo.edit(FAILS, failing)

    def sweep(doc: dict[str, Any]) -> None:
        doc["spec"]["args"] = ["--train_steps=((steps))"]
        doc["spec"]["sweep"] = {"parameters": {"steps": [10, 20]}, "combine": "grid"}
    repo.edit(SWEEP, sweep)

    def too_big(doc: dict[str, Any]) -> None:
        doc["spec"]["roles"]["worker"]["gpus"] = NODE_GPUS + 1
    repo.edit(TOO_BIG, too_big)


@pytest.fixture(scope="module")
def repo(lab: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitOpsRepo]:
    place = tmp_path_factory.mktemp("readside")
    made = make_repo(lab, place, _add_runs)
    platform_set_up(lab, made)
    try:
        yield made
    finally:
        for namespace in namespaces(made):
            lab.kubectl("-n", namespace, "delete", "logs.kwok.x-k8s.io,"
                        "portforwards.kwok.x-k8s.io", "--all", "--timeout=60s", check=False)
        tear_down(lab, made)


def _tfgen(lab: Any, repo: GitOpsRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tfgen", *args,
                           "--kubeconfig", str(lab.kubeconfig)], cwd=repo.root,
                          capture_output=True, text=True, check=False)


@contextlib.contextmanager
def _running(lab: Any, repo: GitOpsRepo, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`tfgen ARGS` running in the background; killed (if still running) and its pipes
    closed at the end, even when the test fails."""
    with subprocess.Popen([sys.executable, "-m", "tfgen", *args,
                           "--kubeconfig", str(lab.kubeconfig)],
                          cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def _line_matching(process: subprocess.Popen[str], pattern: str, timeout: float) -> str:
    """The first line of the process's output that matches `pattern`, read by a thread so
    that a process that prints nothing more fails the test at `timeout` instead of hanging."""
    found: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if re.search(pattern, line):
                found.put(line)
                return
    threading.Thread(target=read, daemon=True).start()
    try:
        return found.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"no line matching {pattern!r} within {timeout:.0f} s: {seen}")


def _interrupted(process: subprocess.Popen[str]) -> int:
    """Ctrl-C, as a person stops it; its exit code."""
    process.send_signal(signal.SIGINT)
    return process.wait(timeout=20)


def _status(lab: Any, repo: GitOpsRepo, *names: str) -> tuple[int, dict[str, Any]]:
    done = _tfgen(lab, repo, "status", *names, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    return done.returncode, {e["name"]: e for e in doc["experiments"]}


def _until(lab: Any, repo: GitOpsRepo, what: str,
           ok: Callable[[dict[str, Any]], bool], timeout: float = 240) -> dict[str, Any]:
    """`tfgen status` until `ok` accepts it (a hang guard, not a speed claim)."""
    deadline = time.monotonic() + timeout
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline:
        _, shown = _status(lab, repo)
        if ok(shown):
            return shown
        time.sleep(2)
    pytest.fail(f"{what}: not within {timeout:.0f} s; tfgen status said:\n"
                f"{json.dumps(shown, indent=1)[:6000]}")


def _run(shown: dict[str, Any], name: str) -> dict[str, Any]:
    run: dict[str, Any] = shown[name]["runs"][0]
    return run


def _phases(shown: dict[str, Any]) -> dict[str, str]:
    return {name: _run(shown, name)["phase"] for name in shown}


def test_status_says_each_state_the_controllers_reach(lab: Any, repo: GitOpsRepo) -> None:
    def settled(shown: dict[str, Any]) -> bool:
        phases = _phases(shown)
        return (phases.get(DONE) == "succeeded" and phases.get(FAILS) == "failed"
                and phases.get(LONG) == "running"
                and sorted(phases[q] for q in QUEUED) == ["queued", "running"]
                and phases.get(TOO_BIG) == "starting"
                and any("cannot be scheduled" in w for w in _run(shown, TOO_BIG)["why"])
                and all(e["sync"] == "Synced" for e in shown.values())
                and shown[FAILS]["health"] == "Degraded" and shown[DONE]["health"] == "Healthy")
    shown = _until(lab, repo, "every run in its state, every Application Synced", settled)

    assert shown[DONE]["health"] == "Healthy" and not shown[DONE]["failing"]

    failed = _run(shown, FAILS)
    assert shown[FAILS]["failing"] and shown[FAILS]["health"] == "Degraded"
    assert "failed" in failed["why"][0], failed  # the operator's condition message
    # the first failed pod, its exit code and the reason its runtime gave (KWOK's here)
    # (every worker fails, each in its own time: whichever ended first)
    assert re.fullmatch(rf"{FAILS}-worker-\d exited with code 3 \(\w+\)", failed["why"][1]), \
        failed

    long = _run(shown, LONG)
    assert long["pods"] == {"chief": {"ready": 1, "wanted": 1},
                            "worker": {"ready": 2, "wanted": 2},
                            "ps": {"ready": 2, "wanted": 2}}, long
    assert long["gpus"] == 2 and long["restarts"] == 0 and long["why"] == [], long

    admitted = next(q for q in QUEUED if _run(shown, q)["phase"] == "running")
    waiting = next(q for q in QUEUED if q != admitted)
    assert _run(shown, admitted)["gpus"] in (2, 3)
    waits = _run(shown, waiting)["why"]
    assert any(w.startswith("Kueue: ") and "insufficient unused quota for nvidia.com/gpu" in w
               for w in waits), waits
    assert any(re.fullmatch(r"\d+ pending in LocalQueue gpu-team", w) for w in waits), waits
    assert not shown[waiting]["failing"]  # waiting for quota is not a failure

    unschedulable = [w for w in _run(shown, TOO_BIG)["why"] if "cannot be scheduled" in w]
    assert unschedulable and all("Insufficient nvidia.com/gpu" in w for w in unschedulable)
    assert _run(shown, TOO_BIG)["gpus"] == 1  # its master's: the workers are not scheduled

    code, _ = _status(lab, repo)
    assert code == 1  # one run failed
    code, _ = _status(lab, repo, DONE, LONG)
    assert code == 0


def test_status_text_puts_the_reasons_under_their_run(lab: Any, repo: GitOpsRepo) -> None:
    done = _tfgen(lab, repo, "status", FAILS, LONG)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["EXPERIMENT", "SYNC", "HEALTH", "PHASE", "PODS", "RESTARTS",
                                "GPUS", "AGE"]
    row = next(line for line in lines if line.startswith(LONG))
    assert "running" in row and "chief 1/1, worker 2/2, ps 2/2" in row, lines
    at = next(i for i, line in enumerate(lines) if line.startswith(FAILS))
    assert lines[at + 1].startswith("  - ") and "failed" in lines[at + 1], lines
    assert "1 failing (fails-run)" in done.stderr


def test_a_sweep_shows_its_runs_under_it(lab: Any, repo: GitOpsRepo) -> None:
    def done(shown: dict[str, Any]) -> bool:
        return [r["phase"] for r in shown[SWEEP]["runs"]] == ["succeeded"] * 2
    _until(lab, repo, f"{SWEEP}'s runs succeeded", done)
    output = _tfgen(lab, repo, "status", SWEEP).stdout.splitlines()
    assert [line.split()[:3] for line in output[1:]] == [
        [SWEEP, "Synced", "Healthy"],
        [f"{SWEEP}-10", "succeeded", "worker"],
        [f"{SWEEP}-20", "succeeded", "worker"]], output
    assert output[1].split()[3:5] == ["2", "succeeded"], output  # its runs counted by phase
    # Worker 0's success ends a run, and the operator then deletes the pods still running
    # (cleanPodPolicy Running): a worker KWOK had not completed by then is gone, not done.
    assert all(re.fullmatch(r"[123]/3,", line.split()[3]) for line in output[2:]), output
    assert all(line.startswith(f"  {SWEEP}-") for line in output[2:]), output


def test_a_job_the_spec_does_not_render_is_named(lab: Any, repo: GitOpsRepo) -> None:
    """A TFJob labelled as an experiment's, made by hand beside it: status names it."""
    stray = f"{DONE}-by-hand"
    lab.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": stray, "namespace": "default", "labels": {
            "app.kubernetes.io/part-of": "tfgen", "app.kubernetes.io/instance": DONE}},
        "spec": {"runPolicy": {"suspend": True}, "tfReplicaSpecs": {"Worker": {
            "replicas": 1, "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "example.com/train:1"}]}}}}}}))
    try:
        _, shown = _status(lab, repo, DONE)
        assert f"the cluster holds TFJob {stray}, which this spec does not render" \
            in shown[DONE]["why"], shown[DONE]
    finally:
        lab.kubectl("-n", "default", "delete", "tfjob", stray, "--timeout=60s", check=False)


def _cri_log(path: Path, lines: list[str]) -> None:
    """A log file as the container runtime writes it, which KWOK serves."""
    path.write_text("".join(f"2026-01-01T00:00:0{i}.000000000Z stdout F {line}\n"
                            for i, line in enumerate(lines)))


@pytest.fixture(scope="module")
def long_logs(lab: Any, repo: GitOpsRepo, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Path]:
    """Each of long-run's pods gets a log naming its role and index; pod shown -> log file."""
    folder = tmp_path_factory.mktemp("podlogs")
    pods = json.loads(lab.kubectl("-n", "ml-team", "get", "pods", "-l",
                                  f"jobset.sigs.k8s.io/jobset-name={LONG}", "-o",
                                  "json").stdout)["items"]
    assert len(pods) == 5
    files = {}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        role = labels["jobset.sigs.k8s.io/replicatedjob-name"]
        index = labels["batch.kubernetes.io/job-completion-index"]
        shown = f"{LONG}-{role}-{index}"
        files[shown] = folder / f"{pod['metadata']['name']}.log"
        _cri_log(files[shown], [f"{shown} step 1", f"{shown} step 2"])
        lab.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {"name": pod["metadata"]["name"], "namespace": "ml-team"},
            "spec": {"logs": [{"containers": ["tensorflow"], "logsFile": str(files[shown]),
                               "follow": True}]}}))
    return files


def test_logs_of_one_pod_by_role_and_index(lab: Any, repo: GitOpsRepo,
                                           long_logs: dict[str, Path]) -> None:
    def one() -> subprocess.CompletedProcess[str]:
        return _tfgen(lab, repo, "logs", LONG, "--role", "worker", "--index", "1")
    deadline = time.monotonic() + 30  # KWOK reads its new Logs objects within a moment
    done = one()
    while done.returncode != 0 or not done.stdout and time.monotonic() < deadline:
        time.sleep(1)
        done = one()
    assert done.stdout.splitlines() == [f"{LONG}-worker-1 {LONG}-worker-1 step 1",
                                        f"{LONG}-worker-1 {LONG}-worker-1 step 2"], done


def test_logs_of_every_pod_in_role_order(lab: Any, repo: GitOpsRepo,
                                         long_logs: dict[str, Path]) -> None:
    done = _tfgen(lab, repo, "logs", LONG)
    assert done.returncode == 0, done.stderr
    order = ["chief-0", "worker-0", "worker-1", "ps-0", "ps-1"]
    width = len(f"{LONG}-worker-0")
    expected = [f"{f'{LONG}-{pod}'.ljust(width)} {LONG}-{pod} step {step}"
                for pod in order for step in (1, 2)]
    assert done.stdout.splitlines() == expected


def test_logs_follow_prints_new_lines_until_interrupted(
        lab: Any, repo: GitOpsRepo, long_logs: dict[str, Path]) -> None:
    shown = f"{LONG}-ps-1"
    with _running(lab, repo, "logs", LONG, "--role", "ps", "--index", "1", "--follow") as p:
        assert p.stdout is not None
        assert p.stdout.readline().rstrip("\n") == f"{shown} {shown} step 1"
        assert p.stdout.readline().rstrip("\n") == f"{shown} {shown} step 2"
        with long_logs[shown].open("a") as log:
            log.write("2026-01-01T00:00:09.000000000Z stdout F later\n")
        assert p.stdout.readline().rstrip("\n") == f"{shown} later"
        assert _interrupted(p) == 0


class _Board(http.server.BaseHTTPRequestHandler):
    """Stands for the TensorBoard pod: what answers at the other end of the port-forward."""

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = b"tensorboard of long-run"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_tensorboard_forwards_a_local_port_to_the_pod(lab: Any, repo: GitOpsRepo) -> None:
    import urllib.request

    board = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Board)
    threading.Thread(target=board.serve_forever, daemon=True).start()
    pods = json.loads(lab.kubectl("-n", "ml-team", "get", "pods", "-l",
                                  f"app.kubernetes.io/instance={LONG},"
                                  "app.kubernetes.io/component=tensorboard",
                                  "-o", "json").stdout)["items"]
    assert len(pods) == 1
    container = pods[0]["spec"]["containers"][0]
    assert [p["containerPort"] for p in container["ports"]] == [chart.TENSORBOARD_PORT]
    lab.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
        "metadata": {"name": pods[0]["metadata"]["name"], "namespace": "ml-team"},
        "spec": {"forwards": [{"ports": [chart.TENSORBOARD_PORT], "target": {
            "address": "127.0.0.1", "port": board.server_address[1]}}]}}))
    try:
        with _running(lab, repo, "tensorboard", LONG, "--port", "0") as process:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = re.search(r"http://127\.0\.0\.1:\d+/", line)
            assert url, line
            body = b""
            deadline = time.monotonic() + 30  # KWOK reads its new PortForward within a moment
            while time.monotonic() < deadline and body != b"tensorboard of long-run":
                try:
                    with urllib.request.urlopen(url.group(0), timeout=10) as response:
                        body = response.read()
                except OSError:
                    time.sleep(1)
            assert body == b"tensorboard of long-run"
            assert _interrupted(process) == 0
    finally:
        board.shutdown()
        board.server_close()


def test_watch_on_a_terminal_redraws_the_table_in_place(lab: Any, repo: GitOpsRepo) -> None:
    """On a terminal, `--watch` clears the screen and draws the whole table again (here at
    least once, the first time), until Ctrl-C; then the exit code of what it last showed."""
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tfgen", "status", LONG, "--watch",
         "--kubeconfig", str(lab.kubeconfig)],
        cwd=repo.root, stdin=child, stdout=child, stderr=child, close_fds=True)
    os.close(child)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"(Ctrl-C to stop)" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 1.0)
            if ready:
                seen += os.read(main, 65536)
        assert b"\x1b[H\x1b[2J" in seen, seen  # cursor home, clear the screen
        shown = seen.split(b"\x1b[H\x1b[2J")[-1].decode()
        lines = [line for line in shown.splitlines() if line.strip()]
        assert lines[0].split()[:2] == ["EXPERIMENT", "SYNC"], lines
        assert lines[1].split()[:4] == [LONG, "Synced", "Progressing", "running"], lines
        assert lines[-1] == "1 experiment, none failing  (Ctrl-C to stop)", lines
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)


def test_watch_prints_a_line_when_a_retired_run_is_pruned(lab: Any, repo: GitOpsRepo) -> None:
    with _running(lab, repo, "status", DONE, "--watch") as process:
        assert process.stdout is not None
        first = _line_matching(process, ".", 60)
        assert re.match(rf"\d\d:\d\d:\d\d {DONE} Synced Healthy succeeded ", first), first
        repo.tfgen("retire", DONE)
        repo.tfgen("render")
        repo.commit(f"retire {DONE}")
        repo.push()
        lab.kubectl("-n", "argocd", "annotate", "application", DONE, "--overwrite",
                    "argocd.argoproj.io/refresh=normal")
        # the spec says retired; the line comes when Argo CD has pruned the job
        _line_matching(process, rf"^\d\d:\d\d:\d\d {DONE} Synced \S+ retired [^;]*$", 180)
        assert _interrupted(process) == 0


def test_a_sync_that_fails_is_said_with_its_message(lab: Any, repo: GitOpsRepo) -> None:
    """A change a started JobSet cannot take, committed past the gate: Argo CD's sync fails on
    the JobSet webhook, and status says OutOfSync, the failed sync and what differs."""
    def more_steps(doc: dict[str, Any]) -> None:
        doc["spec"]["args"] = [*doc["spec"].get("args", []), "--steps=2"]
    repo.edit(LONG, more_steps)
    repo.tfgen("render")
    repo.commit(f"{LONG}: more steps, past the gate")
    repo.push()
    lab.kubectl("-n", "argocd", "annotate", "application", LONG, "--overwrite",
                "argocd.argoproj.io/refresh=normal")

    def refused(shown: dict[str, Any]) -> bool:
        return shown[LONG]["sync"] == "OutOfSync" and any(
            w.startswith("sync failed") for w in shown[LONG]["why"])
    shown = _until(lab, repo, f"{LONG}'s failed sync", refused)
    why = shown[LONG]["why"]
    # failed, and retried by the sync policy (5 times, backing off) before it gives up
    assert any(re.match(r"sync failed(, retrying \(attempt \d\))?: ", w)
               and "field is immutable" in w for w in why), why
    assert f"JobSet {LONG} differs from Git: changed in the cluster by hand, or a new " \
        "commit not synced yet" in why
    assert shown[LONG]["failing"]
    assert _run(shown, LONG)["phase"] == "running"  # the run itself goes on


def test_no_cluster_reached_is_one_line_and_exit_2(repo: GitOpsRepo, tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "gone",
              "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:9"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}]}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "tfgen", "status", "--kubeconfig",
                           str(kubeconfig)], cwd=repo.root, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: cannot read /apis/argoproj.io/v1alpha1/namespaces/argocd/applications through "
        "context 'gone' (server https://127.0.0.1:9): Failed to establish a new connection: "
        "[Errno 111] Connection refused"]
    assert "Traceback" not in done.stderr
