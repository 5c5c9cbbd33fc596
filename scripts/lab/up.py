"""Start and stop the lab; the `Lab` handle the tests use.

Start: etcd and kube-apiserver first (everything else talks to the apiserver); then, at once,
what needs no CRD (controller-manager, scheduler, KWOK, Redis, git daemon, Argo CD's repo
server) while the CRDs, webhook configurations, Secrets and nodes are applied (bootstrap.py);
then the controllers of custom resources; return when every part answers (ready.py).
Stop: every process the lab started, by the PIDs it recorded (procs.py). All state is in
.lab/; etcd's data on tmpfs is removed at stop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import argocd, bootstrap, controllers, core, procs, ready
from .host import LabError, say
from .layout import TOKEN, Layout, write_kubeconfig
from .versions import DEBIAN, GPU_NODES, PARTS

START_TIMEOUT = 120.0  # generous: the target is 30 s, a loaded CI machine may need more


@dataclass
class Lab:
    """A running lab: where its kubeconfig is, its ports, a kubectl bound to it."""

    layout: Layout

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    @property
    def ports(self) -> dict[str, int]:
        return dict(self.layout.ports)

    @property
    def git_root(self) -> Path:
        """A repository put (or pushed) at git_root/<name> (bare, or <name>/.git, or
        <name>.git) is served as git_url(name)."""
        return self.layout.git_root

    def git_url(self, name: str) -> str:
        """The URL Argo CD clones git_root/<name> from."""
        return f"git://127.0.0.1:{self.layout.ports['git']}/{name}"

    def kubectl(self, *args: str, input: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the lab's kubectl against the lab; raise LabError with its message on failure
        unless check=False."""
        done = subprocess.run([str(self.layout.bin / "kubectl"),
                               f"--kubeconfig={self.kubeconfig}", *args],
                              input=input, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise LabError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def stop(self) -> None:
        stop(self.root, self.layout.instance)


def _missing(lay: Layout) -> list[str]:
    """What the lab runs and is not there: a binary not built, a Debian command missing."""
    built = [b for p in PARTS for b in p.binaries if not (lay.bin / b).exists()]
    return built + [cmd for cmd in DEBIAN if shutil.which(cmd) is None]


def _spawn(lay: Layout, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    procs.spawn(lay.state, name, argv, env or {**os.environ, "KUBECONFIG": str(lay.kubeconfig)})


def _dead(lay: Layout, names: list[str]) -> str | None:
    """A one-line failure naming the first started process that has exited, with the last
    line of its log; None when all run."""
    alive = procs.recorded(lay.state)
    for name in names:
        if name not in alive:
            log = lay.state / "logs" / f"{name}.log"
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            return f"{name} exited: {tail[0] if tail else 'no output'} (log: {log})"
    return None


def _start_apiserver(lay: Layout) -> None:
    lay.etcd_data.mkdir(parents=True, exist_ok=True)
    _spawn(lay, "etcd", core.etcd(lay))
    _spawn(lay, "kube-apiserver", core.apiserver(lay))
    check = ready.https_ok(f"{lay.server()}/readyz", lay.certs / "ca.crt", TOKEN)
    ready.wait_all({"kube-apiserver": check}, 60,
                   lambda: _dead(lay, ["etcd", "kube-apiserver"]))


def _early(lay: Layout) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """name -> (argv, environment or None for the default) of the processes that need no
    CRD: they start while the CRDs are applied (the apiserver takes seconds over them)."""
    return {
        "kube-controller-manager": (core.controller_manager(lay), None),
        "kube-scheduler": (core.scheduler(lay), None),
        "kwok": (core.kwok(lay), None),
        "redis": (argocd.redis(lay), None),
        "git-daemon": (argocd.git_daemon(lay), None),
        "argocd-repo-server": (argocd.repo_server(lay), argocd.env(lay, "argocd-repo-server")),
    }


def _spawn_all(lay: Layout, batch: dict[str, tuple[list[str], dict[str, str] | None]],
               ) -> list[str]:
    say(f"starting {', '.join(batch)} ...")
    for name, (argv, env) in batch.items():
        _spawn(lay, name, argv, env)
    return list(batch)


def _late(lay: Layout) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """The controllers of custom resources: started once their CRDs are Established (Kueue
    turns off an integration whose kind it does not find at start)."""
    roles = {"argocd-application-controller": argocd.application_controller,
             "argocd-applicationset-controller": argocd.applicationset_controller}
    return {
        "jobset": (controllers.jobset(lay), None),
        "kueue": (controllers.kueue(lay), None),
        "training-operator": (controllers.training_operator(lay), None),
        **{role: (make(lay), argocd.env(lay, role)) for role, make in roles.items()},
    }


def _checks(lay: Layout, lab: Lab) -> dict[str, ready.Check]:
    """What "ready" means for each part."""
    ca, p = lay.certs / "ca.crt", lay.ports
    nodes = " ".join(f"{n}=True" for n in sorted(GPU_NODES))
    node_status = "{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")]" \
                  ".status} {end}"
    return {
        "nodes Ready": ready.kubectl_ok(lab.kubectl, "get", "nodes", "-o",
                                        f"jsonpath={node_status}",
                                        expect=lambda out: out.strip() == nodes),
        "controller-manager and scheduler leases": ready.kubectl_ok(
            lab.kubectl, "-n", "kube-system", "get", "lease", "kube-controller-manager",
            "kube-scheduler"),
        "default ServiceAccount": ready.kubectl_ok(lab.kubectl, "get", "sa", "default"),
        "jobset": ready.http_ok(f"http://127.0.0.1:{p['jobset-probe']}/readyz"),
        "jobset webhook": ready.tls_answers(p["jobset-webhook"], ca),
        "kueue": ready.http_ok(f"http://127.0.0.1:{p['kueue-probe']}/readyz"),
        "kueue webhook": ready.tls_answers(p["kueue-webhook"], ca),
        "training-operator": ready.http_ok(
            f"http://127.0.0.1:{p['training-operator-probe']}/readyz"),
        "training-operator webhook": ready.tls_answers(p["training-operator-webhook"], ca),
        "redis": ready.tcp_open(p["redis"]),
        "git daemon": ready.tcp_open(p["git"]),
        "argocd-repo-server": ready.http_ok(
            f"http://127.0.0.1:{p['argocd-repo-server-metrics']}/healthz"),
        "argocd-application-controller": ready.http_ok(
            f"http://127.0.0.1:{p['argocd-controller-metrics']}/healthz"),
        # its probe server registers no check (upstream's Deployment has no probe): it
        # answers once the manager runs
        "argocd-applicationset-controller": ready.http_answers(
            f"http://127.0.0.1:{p['argocd-appset-probe']}/healthz"),
    }


def start(root: Path, instance: str = "", timeout: float = START_TIMEOUT) -> Lab:
    """Start the lab of the checkout at `root` (stopping one already running there) and
    return once every part is ready; on failure stop what was started and raise LabError.
    `instance` names a second lab beside it (state in .lab/<instance>/), e.g. one per
    pytest-xdist worker."""
    lay = Layout(Path(root).resolve(), instance)
    missing = _missing(lay)
    if missing:
        raise LabError(f"missing: {', '.join(missing)} (run `python3 scripts/lab build`, or "
                       "`make lab`)")
    stop(lay.root, instance, quiet=True)
    started = time.monotonic()
    try:
        return _start(lay, timeout)
    except BaseException:
        stop(lay.root, instance, quiet=True)
        raise
    finally:
        say(f"start took {time.monotonic() - started:.1f} s")


def _start(lay: Layout, timeout: float) -> Lab:
    from . import certs  # openssl runs only when the lab starts

    lay.choose_ports()
    certs.make_all(lay.certs, f'{TOKEN},admin,admin,"system:masters"')
    write_kubeconfig(lay)
    lab = Lab(lay)
    say(f"etcd and kube-apiserver on 127.0.0.1:{lay.ports['apiserver']} ...")
    _start_apiserver(lay)
    early = _spawn_all(lay, _early(lay))
    say("CRDs, webhook configurations, Secrets, GPU nodes ...")
    bootstrap.run(lay, lab.kubectl)
    late = _spawn_all(lay, _late(lay))
    names = ["etcd", "kube-apiserver", *early, *late]
    ready.wait_all(_checks(lay, lab), timeout, lambda: _dead(lay, names))
    return lab


def stop(root: Path, instance: str = "", quiet: bool = False) -> list[str]:
    """Stop every process the lab of `root` (and `instance`) started, by PID; remove etcd's
    tmpfs data. Idempotent: with nothing running it does nothing."""
    lay = Layout(Path(root).resolve(), instance)
    # etcd last: the apiserver, stopping, deletes its lease there (and waits 10 s for an
    # etcd already gone)
    stopped = procs.stop_all(lay.state, last=("etcd",))
    if lay.etcd_data.is_dir() and not procs.recorded(lay.state):
        shutil.rmtree(lay.etcd_data, ignore_errors=True)
    if not quiet:
        say(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
    return stopped
