"""Run every replica of an experiment as a local process, wired like the cluster would wire it.

Each pod `tfgen explain` lists becomes one child process running the pod's command and args (or
a `--command` in their place), with the TF_CONFIG the training operator would inject, except
that the Service addresses are replaced by free ports on 127.0.0.1 and the volume's mount path
by a local folder (`datadir`; what each process runs: `localpods`). Output is prefixed with the
pod name. When the chief/master (worker 0 when there is none) exits, the remaining processes
are stopped, as the operator's cleanPodPolicy Running deletes the pods still running once the
job has finished; a replica failing ends the run too (the local stand-in for restartPolicy
Never). Every child runs in its own process group and is always stopped and reaped: on normal
exit, timeout, SIGINT/SIGTERM and errors.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EnvironmentProblem, InputError, OptionsError
from ..repo import layout, naming, runtimes
from ..repo.runtimes import tfconfig
from ..words import counted
from . import processes
from .datadir import check_options, data_folder
from .localpods import LocalPod, LocalVolume, PodRunOptions, plan
from .processes import EXIT_TIMEOUT, Output

__all__ = ["EXIT_TIMEOUT", "RunLocalOptions", "RunResult", "run_local", "run_pods"]


@dataclass(frozen=True)
class RunLocalOptions:
    """The options of `tfgen run-local`, as given; `run_local` checks them before helm runs.

    `command` is one string, split as a shell would (`split_command`). `data_dir` stands in
    for the volume (default: `.tfgen-run/<job>/`, the experiment's name or a sweep run's,
    reused by every run and emptied first with `clean`; see `datadir`). `run` is a sweep's
    run suffix, required when there are several.
    """

    command: str | None = None
    keep_args: bool = False
    data_dir: str | None = None
    clean: bool = False
    timeout: float | None = None
    tensorboard: bool = False
    run: str | None = None


@dataclass
class RunResult:
    """How the local run ended."""

    exit_code: int
    reason: str  # human sentence: "master-0 exited with 0", "timed out after 30s", ...
    leader: str
    exit_codes: dict[str, int | None] = field(default_factory=dict)  # pod -> code, None=stopped
    notes: list[str] = field(default_factory=list)
    data_dir: str = ""
    tensorboard_url: str = ""


def leader_of(pods: Sequence[tfconfig.Pod]) -> tfconfig.Pod:
    """The pod whose end ends the job: chief/master, else worker 0 (the operator's default
    success policy), else the first pod."""
    # Chief before Master (display order), should a TFJob have both.
    for replica_type in [*sorted(naming.LEADER_REPLICA_TYPES, key=tfconfig.sort_key), "Worker"]:
        for pod in pods:
            if (pod.replica_type, pod.index) == (replica_type, 0):
                return pod
    return pods[0]


def find_tensorboard() -> str | None:
    """`tensorboard` next to this interpreter (the venv) or on PATH."""
    sibling = Path(sys.executable).with_name("tensorboard")
    if sibling.exists():
        return str(sibling)
    return shutil.which("tensorboard")


def run_pods(
    pods: Sequence[tfconfig.Pod],
    tfjob: Mapping[str, Any],
    volume: LocalVolume,
    *,
    emit: Output,
    status: Output | None = None,
    options: PodRunOptions | None = None,
) -> RunResult:
    """Start every pod locally, supervise them and return how the run ended; the pods' output
    goes to `emit`, tfgen's own lines about the run to `status` (default: `emit`).

    `tfjob` is the rendered TFJob the pods come from; its TF_CONFIG is rebuilt with local
    addresses so the shape (dense or sparse, evaluator included) stays the operator's.
    """
    if not pods:
        raise InputError("the TFJob has no pods to run")
    options = options or PodRunOptions()
    Path(volume.data_dir).mkdir(parents=True, exist_ok=True)
    planned, notes = plan(pods, _on_local_ports(pods, tfjob), volume, options)
    leader = leader_of(pods)
    width = max(len(p.name) for p in pods)
    lock, stop = threading.Lock(), processes.StopRequest()
    children: list[subprocess.Popen[bytes]] = []
    threads: list[threading.Thread] = []
    result = RunResult(exit_code=1, reason="", leader=leader.name, notes=notes,
                       data_dir=volume.data_dir)
    timeout, logdir = options.timeout, options.tensorboard_logdir
    deadline = None if timeout is None else time.monotonic() + timeout
    say = status or emit
    say(
        f"tfgen: {counted(len(pods), 'pod')} on 127.0.0.1, "
        f"{volume.mount_path} -> {layout.shown(volume.data_dir)}; the run ends with {leader.name}"
    )
    with processes.signals_to(stop):
        try:
            board = _start_tensorboard(logdir, result)
            if board is not None:
                children.append(board)
                threads.append(processes.read_output(board, "tensorboard".ljust(width), emit,
                                                     lock))
                say(f"tfgen: TensorBoard at {result.tensorboard_url} on {logdir}")
            by_name = {local.pod.name: _start_pod(local, children) for local in planned}
            threads += [processes.read_output(child, name.ljust(width), emit, lock)
                        for name, child in by_name.items()]
            result.exit_code, result.reason = processes.supervise(
                by_name, leader.name, stop, deadline, timeout, options.poll_seconds
            )
            result.exit_codes = {name: p.poll() for name, p in by_name.items()}
            processes.stop_all(list(by_name.values()))
            if board is not None:
                _keep_board_open(board, result, stop, deadline, options.poll_seconds, say)
        finally:
            _reap(children, threads)
    return result


def _reap(children: list[subprocess.Popen[bytes]], threads: list[threading.Thread]) -> None:
    """Stop every child still running and let the threads copying their output finish (for a
    moment each), whatever ended the run."""
    processes.stop_all(children)
    for thread in threads:
        thread.join(timeout=2)


def _start_pod(
    local: LocalPod, children: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    """Start one pod; `children` learns of it at once, so that cleanup reaps it whatever
    happens next."""
    child = processes.start(local.pod.name, local.argv, local.env, local.cwd)
    children.append(child)
    return child


def _on_local_ports(pods: Sequence[tfconfig.Pod], tfjob: Mapping[str, Any]) -> list[tfconfig.Pod]:
    """The pods again, their TF_CONFIG addressing free ports on 127.0.0.1."""
    ports = processes.free_ports(len(pods))
    local_addr = {
        (p.replica_type, p.index): f"127.0.0.1:{port}" for p, port in zip(pods, ports, strict=True)
    }
    return tfconfig.pods(tfjob, address_of=lambda t, i: local_addr[(t, i)])


def _keep_board_open(
    board: subprocess.Popen[bytes], result: RunResult, stop: processes.StopRequest,
    deadline: float | None, poll_seconds: float, emit: Output,
) -> None:
    """Training is over; the board is what one wants to look at now: until Ctrl-C (or the
    timeout)."""
    if board.poll() is not None or stop.signum is not None:
        return
    emit(
        f"tfgen: {result.reason}; TensorBoard stays at {result.tensorboard_url} "
        "until Ctrl-C" + (" or the timeout" if deadline is not None else "")
    )
    while stop.signum is None and board.poll() is None:
        if deadline is not None and time.monotonic() >= deadline:
            break
        stop.event.wait(poll_seconds)


def _start_tensorboard(logdir: str | None, result: RunResult) -> subprocess.Popen[bytes] | None:
    """The TensorBoard on `logdir`, when one is asked for (a logdir) and installed (else a
    note says it is not)."""
    if not logdir:
        return None
    binary = find_tensorboard()
    if binary is None:
        result.notes.append(
            "--tensorboard: tensorboard is not installed here "
            "(`python -m pip install tensorboard`); running without it"
        )
        return None
    Path(logdir).mkdir(parents=True, exist_ok=True)
    (port,) = processes.free_ports(1)
    result.tensorboard_url = f"http://127.0.0.1:{port}/"
    argv = [binary, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)]
    return processes.start("tensorboard", argv, os.environ, os.getcwd())


def split_command(command: str | None) -> list[str] | None:
    """`--command "python examples/mnist/main.py"` as an argv (shell quoting rules); an
    OptionsError when it is empty or its quoting is broken."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError as exc:  # shlex's only complaint: an unclosed quote or a final backslash
        raise OptionsError(f"--command {command!r}: {str(exc).lower()} (quote as in a shell, "
                           "e.g. --command \"python main.py --flag 'a b'\")") from None
    if not argv:
        raise OptionsError("--command is empty (give the program to run, e.g. "
                           "--command \"python main.py\")")
    return argv


def check_timeout(timeout: float | None) -> float | None:
    """`--timeout` as given, when it is a positive, finite number of seconds."""
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise OptionsError(f"--timeout {timeout:g}: must be a positive number of seconds")
    return timeout


def require_posix() -> None:
    """Process groups and killpg are POSIX; say so instead of failing half-way."""
    if os.name != "posix":
        raise EnvironmentProblem("tfgen run-local needs a POSIX system (Linux, macOS)")


def run_local(
    spec: Path | str,
    options: RunLocalOptions,
    *,
    emit: Output,
    status: Output | None = None,
) -> RunResult:
    """`tfgen run-local`: explain the spec, then run its pods here.

    A sweep runs one run's TFJob (`options.run`). `emit` gets the pods' output, `status`
    tfgen's own lines about the run (default: `emit`).
    """
    from .explain import explain_spec  # runs helm; imported lazily like the CLI's other paths

    require_posix()
    # Options first: a typo in them is reported before helm runs.
    argv, timeout = split_command(options.command), check_timeout(options.timeout)
    if options.keep_args and argv is None:
        raise OptionsError("--keep-args keeps the spec's args after --command: give --command")
    check_options(options.data_dir, clean=options.clean)
    explanation = explain_spec(spec, options.run)
    local_dir = data_folder(Path(spec), explanation.job, options.data_dir, clean=options.clean)
    volume = LocalVolume(explanation.mount_path, str(local_dir))
    logdir = None
    if options.tensorboard:
        if not explanation.log_dir:
            raise InputError(f"{spec}: TensorBoard is disabled in this experiment (no logDir)")
        logdir = volume.mapped(explanation.log_dir)
    return run_pods(
        explanation.pods,
        explanation.tfjob,
        volume,
        emit=emit,
        status=status,
        options=PodRunOptions(
            command=None if argv is None else tuple(argv),
            keep_args=options.keep_args,
            timeout=timeout,
            tensorboard_logdir=logdir,
            given_env=runtimes.by_name(explanation.runtime).given_env,
        ),
    )
