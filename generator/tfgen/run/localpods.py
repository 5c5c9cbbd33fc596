"""Each pod of an experiment as a local process (`plan`): the pod's command and args (or
`--command` in their place), the environment the cluster would give it with its TF_CONFIG
pointing at local ports, and its working directory, the volume's mount path mapped to a local
folder (`LocalVolume`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..repo.runtimes import tfconfig


@dataclass(frozen=True)
class LocalVolume:
    """The experiment's volume as a local folder: `mount_path` in the pods is `data_dir` here."""

    mount_path: str
    data_dir: str

    def mapped(self, text: str) -> str:
        """`text` with the mount path replaced by the local folder (`map_mount_path`)."""
        return map_mount_path(text, self.mount_path, self.data_dir)


@dataclass(frozen=True)
class PodRunOptions:
    """How `run_pods` runs the pods: `command` in place of their command and args (only of
    their command with `keep_args`), stopped after `timeout` seconds, with a TensorBoard on
    `tensorboard_logdir` when given; the supervisor looks at the pods every `poll_seconds`."""

    command: tuple[str, ...] | None = None
    keep_args: bool = False
    timeout: float | None = None
    tensorboard_logdir: str | None = None
    # the env the runtime's controllers give the pod at an index (`Runtime.given_env`)
    given_env: Callable[[int], Mapping[str, str]] | None = None
    poll_seconds: float = 0.1


@dataclass
class LocalPod:
    """One pod as a local process: what to run, with which environment, where."""

    pod: tfconfig.Pod
    argv: list[str]
    env: dict[str, str]
    cwd: str


def map_mount_path(text: str, mount_path: str, local_dir: str) -> str:
    """Replace `mount_path` where it is a whole path prefix (`/training/x`, `--d=/training`)."""
    if not mount_path or mount_path == "/":
        return text
    pattern = r"(?<![\w./-])" + re.escape(mount_path.rstrip("/")) + r"(?=/|$|[^\w.-])"
    return re.sub(pattern, lambda _m: local_dir, text)


def _interpreter(argv: list[str]) -> list[str]:
    # `python` in an image is the image's interpreter; locally the one running tfgen is the
    # one that has the project's optional TensorFlow installed.
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return argv


def plan(
    pods: Sequence[tfconfig.Pod],
    local_pods: Sequence[tfconfig.Pod],
    volume: LocalVolume,
    options: PodRunOptions | None = None,
    *,
    base_env: Mapping[str, str] | None = None,
) -> tuple[list[LocalPod], list[str]]:
    """What each local process runs: argv, environment and working directory, plus notes.

    `options.command` replaces the pod's command and args (the spec's args are usually written
    for the image's program, not the local one), or only its command with `keep_args`;
    `options.given_env(index)` is what the runtime's controllers give the pod besides
    TF_CONFIG."""
    options = options or PodRunOptions()
    notes: list[str] = []
    env_base = dict(os.environ if base_env is None else base_env)
    env_base.pop("TF_CONFIG", None)
    env_base["PYTHONUNBUFFERED"] = "1"  # so lines reach the prefixed output as they happen
    out: list[LocalPod] = []
    skipped: set[str] = set()
    for pod, local in zip(pods, local_pods, strict=True):
        argv = _argv(pod, volume, options.command, options.keep_args)
        env = dict(env_base)
        env.update(options.given_env(pod.index) if options.given_env is not None else {})
        for var in pod.env:
            name = str(var.get("name", ""))
            if "value" in var:
                env[name] = volume.mapped(str(var["value"]))
            elif name not in skipped:
                skipped.add(name)
                notes.append(f"env {name} comes from a Secret or ConfigMap; not set locally")
        if local.tf_config is not None:
            env["TF_CONFIG"] = local.tf_config
        env["TFGEN_POD_NAME"] = pod.name
        out.append(LocalPod(pod=pod, argv=argv, env=env, cwd=_working_dir(pod, volume)))
    return out, notes


def _argv(pod: tfconfig.Pod, volume: LocalVolume, command: Sequence[str] | None,
          keep_args: bool) -> list[str]:
    """What the pod runs here: its command and args, or `command` in their place (in place of
    its command alone with `keep_args`), the volume mapped; InputError without a command."""
    cmd = list(command) if command is not None else list(pod.command)
    args = list(pod.args) if command is None or keep_args else []
    argv = [volume.mapped(a) for a in cmd + args]
    if not cmd:
        raise InputError(
            f"{pod.name} has no command (the image's entrypoint cannot run locally); "
            "pass --command"
        )
    return _interpreter(argv)


def _working_dir(pod: tfconfig.Pod, volume: LocalVolume) -> str:
    """The pod's working directory with the volume mapped, when that is a folder here; else
    the one tfgen runs in."""
    cwd = volume.mapped(pod.working_dir) if pod.working_dir else ""
    if not cwd or not Path(cwd).is_dir():
        cwd = os.getcwd()
    return cwd
