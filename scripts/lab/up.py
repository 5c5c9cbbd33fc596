"""Start and stop the lab; the handles the tests use (`Lab`, and `Cluster` for a second one).

Start: etcd and kube-apiserver first (everything else talks to the apiserver); then, at once,
what needs no CRD (controller-manager, scheduler, KWOK, Redis, git daemon, Argo CD's repo
server) while the CRDs, webhook configurations, Secrets and nodes are applied (bootstrap.py);
then the controllers of custom resources; return when every part answers (ready.py).
A second cluster (clusters.py) starts the same way beside a running lab, with what its Plan
says (no Argo CD, JobSet only when asked), state in a folder of the lab's, ports and a
kubeconfig of its own; then it is registered in the first cluster's Argo CD, and
clusters.kubeconfig holds a context per running cluster.
Stop: every process the lab started, by the PIDs it recorded (procs.py), a second cluster's
first. All state is in .lab/; etcd's data on tmpfs is removed at stop.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import argocd, bootstrap, clusters, controllers, core, procs, ready
from .clusters import FIRST, SECOND, Plan
from .host import LabError, say
from .layout import CLUSTER_PORTS, PORT_NAMES, TOKEN, Layout, write_kubeconfig
from .versions import DEBIAN, PARTS

START_TIMEOUT = 120.0  # generous: the target is 30 s, a loaded CI machine may need more


@dataclass
class Cluster:
    """A running control plane of the lab: its kubeconfig, ports, a kubectl bound to it."""

    layout: Layout
    plan: Plan

    @property
    def name(self) -> str:
        """Its context in clusters.kubeconfig (and in its own kubeconfig)."""
        return self.plan.name

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
    def server(self) -> str:
        """Its API server's URL, as a kubeconfig and Argo CD's cluster Secret name it."""
        return self.layout.server()

    @property
    def argocd_name(self) -> str:
        """What an Application's `destination.name` says to be synced here."""
        return self.plan.name

    @property
    def argocd_server(self) -> str:
        """What an Application's `destination.server` says to be synced here."""
        return self.server

    def kubectl(self, *args: str, input: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the lab's kubectl against this cluster; raise LabError with its message on
        failure unless check=False."""
        done = subprocess.run([str(self.layout.bin / "kubectl"),
                               f"--kubeconfig={self.kubeconfig}", *args],
                              input=input, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise LabError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done


@dataclass
class Lab(Cluster):
    """The running lab: its first cluster, which runs Argo CD and the git daemon, and any
    cluster started beside it (start_cluster) that this Argo CD manages."""

    others: list[Cluster] = field(default_factory=list)

    @property
    def argocd_name(self) -> str:
        return argocd.IN_CLUSTER_NAME

    @property
    def argocd_server(self) -> str:
        return argocd.IN_CLUSTER_SERVER

    @property
    def git_root(self) -> Path:
        """A repository put (or pushed) at git_root/<name> (bare, or <name>/.git, or
        <name>.git) is served as git_url(name)."""
        return self.layout.git_root

    def git_url(self, name: str) -> str:
        """The URL Argo CD clones git_root/<name> from."""
        return f"git://127.0.0.1:{self.layout.ports['git']}/{name}"

    @property
    def clusters_kubeconfig(self) -> Path:
        """A kubeconfig with a context per running cluster: `lab-a`, and `lab-b` while a
        second cluster runs (the current context is lab-a)."""
        return self.layout.state / "clusters.kubeconfig"

    def start_cluster(self, jobset: bool = False, timeout: float = START_TIMEOUT) -> Cluster:
        """Start the second cluster beside this lab (stopping one left running), register it
        in this lab's Argo CD, and return it once ready; on failure stop what was started
        and raise LabError. `jobset`: whether it runs JobSet (its CRD and controller)."""
        plan = dataclasses.replace(SECOND, jobset=jobset)
        lay = Layout(self.root, self.layout.instance, plan.folder)
        _stop_cluster(lay)  # one left running: replaced
        self.others = [c for c in self.others if c.name != plan.name]
        started = time.monotonic()
        try:
            cluster = Cluster(lay, plan)
            _start(lay, plan, timeout, cluster)
            _register(self, cluster)
        except BaseException:
            self.kubectl("-n", argocd.NAMESPACE, "delete", "secret", "--ignore-not-found",
                         clusters.secret_name(plan.name), check=False)
            _stop_cluster(lay)
            raise
        finally:
            say(f"{plan.name}: start took {time.monotonic() - started:.1f} s")
        self.others.append(cluster)
        self.write_contexts()
        return cluster

    def stop_cluster(self, cluster: Cluster) -> None:
        """Take a second cluster out of Argo CD, then stop it (its processes, by PID)."""
        self.kubectl("-n", argocd.NAMESPACE, "delete", "secret", "--ignore-not-found",
                     clusters.secret_name(cluster.argocd_name), check=False)
        _stop_cluster(cluster.layout)
        self.others = [c for c in self.others if c.layout != cluster.layout]
        self.write_contexts()

    def write_contexts(self) -> None:
        write_kubeconfig(self.clusters_kubeconfig,
                         {c.name: c.server for c in (self, *self.others)}, self.layout.certs)

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


Batch = dict[str, tuple[list[str], dict[str, str] | None]]


def _early(lay: Layout, plan: Plan) -> Batch:
    """name -> (argv, environment or None for the default) of the processes that need no
    CRD: they start while the CRDs are applied (the apiserver takes seconds over them)."""
    batch: Batch = {
        "kube-controller-manager": (core.controller_manager(lay), None),
        "kube-scheduler": (core.scheduler(lay), None),
        "kwok": (core.kwok(lay), None),
    }
    if plan.argocd:
        batch.update({
            "redis": (argocd.redis(lay), None),
            "git-daemon": (argocd.git_daemon(lay), None),
            "argocd-repo-server": (argocd.repo_server(lay),
                                   argocd.env(lay, "argocd-repo-server")),
        })
    return batch


def _spawn_all(lay: Layout, batch: Batch) -> list[str]:
    say(f"starting {', '.join(batch)} ...")
    for name, (argv, env) in batch.items():
        _spawn(lay, name, argv, env)
    return list(batch)


def _late(lay: Layout, plan: Plan) -> Batch:
    """The controllers of custom resources: started once their CRDs are Established (Kueue
    turns off an integration whose kind it does not find at start)."""
    batch: Batch = {"jobset": (controllers.jobset(lay), None)} if plan.jobset else {}
    batch.update({
        "kueue": (controllers.kueue(lay, plan.jobset), None),
        "training-operator": (controllers.training_operator(lay), None),
    })
    if plan.argocd:
        roles = {"argocd-application-controller": argocd.application_controller,
                 "argocd-applicationset-controller": argocd.applicationset_controller}
        batch.update({role: (make(lay), argocd.env(lay, role)) for role, make in roles.items()})
    return batch


def _checks(lay: Layout, plan: Plan, cluster: Cluster) -> dict[str, ready.Check]:
    """What "ready" means for each part the cluster runs."""
    ca, p = lay.certs / "ca.crt", lay.ports
    nodes = " ".join(f"{n}=True" for n in sorted(plan.nodes))
    node_status = "{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")]" \
                  ".status} {end}"
    checks = {
        "nodes Ready": ready.kubectl_ok(cluster.kubectl, "get", "nodes", "-o",
                                        f"jsonpath={node_status}",
                                        expect=lambda out: out.strip() == nodes),
        "controller-manager and scheduler leases": ready.kubectl_ok(
            cluster.kubectl, "-n", "kube-system", "get", "lease", "kube-controller-manager",
            "kube-scheduler"),
        "default ServiceAccount": ready.kubectl_ok(cluster.kubectl, "get", "sa", "default"),
        "kueue": ready.http_ok(f"http://127.0.0.1:{p['kueue-probe']}/readyz"),
        "kueue webhook": ready.tls_answers(p["kueue-webhook"], ca),
        "training-operator": ready.http_ok(
            f"http://127.0.0.1:{p['training-operator-probe']}/readyz"),
        "training-operator webhook": ready.tls_answers(p["training-operator-webhook"], ca),
    }
    if plan.jobset:
        checks.update({
            "jobset": ready.http_ok(f"http://127.0.0.1:{p['jobset-probe']}/readyz"),
            "jobset webhook": ready.tls_answers(p["jobset-webhook"], ca),
        })
    if plan.argocd:
        checks.update(_argocd_checks(p))
    return checks


def _argocd_checks(p: dict[str, int]) -> dict[str, ready.Check]:
    return {
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


def start(root: Path, instance: str = "", timeout: float = START_TIMEOUT,
          clusters: int = 1) -> Lab:
    """Start the lab of the checkout at `root` (stopping one already running there) and
    return once every part is ready; on failure stop what was started and raise LabError.
    `instance` names a second lab beside it (state in .lab/<instance>/), e.g. one per
    pytest-xdist worker. `clusters=2` starts the second cluster too (Lab.start_cluster),
    without JobSet."""
    if clusters not in (1, 2):
        raise LabError(f"the lab runs one or two clusters, not {clusters}")
    lay = Layout(Path(root).resolve(), instance)
    missing = _missing(lay)
    if missing:
        raise LabError(f"missing: {', '.join(missing)} (run `python3 scripts/lab build`, or "
                       "`make lab`)")
    stop(lay.root, instance, quiet=True)
    started = time.monotonic()
    try:
        lab = Lab(lay, FIRST)
        _start(lay, FIRST, timeout, lab)
        lab.write_contexts()
    except BaseException:
        stop(lay.root, instance, quiet=True)
        raise
    finally:
        say(f"start took {time.monotonic() - started:.1f} s")
    if clusters == 2:
        try:
            lab.start_cluster()
        except BaseException:
            stop(lay.root, instance, quiet=True)
            raise
    return lab


def _start(lay: Layout, plan: Plan, timeout: float, cluster: Cluster) -> None:
    """Start one control plane of `plan` and wait until it is ready."""
    from . import certs  # openssl runs only when the lab starts

    lay.choose_ports(PORT_NAMES if plan.argocd else CLUSTER_PORTS)
    certs.make_all(lay.certs, f'{TOKEN},admin,admin,"system:masters"')
    write_kubeconfig(lay.kubeconfig, {plan.name: lay.server()}, lay.certs)
    say(f"{plan.name}: etcd and kube-apiserver on 127.0.0.1:{lay.ports['apiserver']} ...")
    _start_apiserver(lay)
    early = _spawn_all(lay, _early(lay, plan))
    say(f"{plan.name}: CRDs, webhook configurations, Secrets, GPU nodes ...")
    bootstrap.run(lay, plan, cluster.kubectl)
    late = _spawn_all(lay, _late(lay, plan))
    names = ["etcd", "kube-apiserver", *early, *late]
    ready.wait_all(_checks(lay, plan, cluster), timeout, lambda: _dead(lay, names))


def _register(lab: Lab, cluster: Cluster) -> None:
    """Make `cluster` one the lab's Argo CD manages: a token for Argo CD's ServiceAccount
    there, and the cluster Secret holding it in Argo CD's namespace (clusters.py)."""
    bootstrap.apply(cluster.kubectl, clusters.manager_objects())
    namespace, name = clusters.MANAGER
    token = ("-n", namespace, "get", "secret", f"{name}-token", "-o", "jsonpath={.data.token}")
    ready.wait_all({f"{cluster.name}: Argo CD's token": ready.kubectl_ok(cluster.kubectl, *token)},
                   30, lambda: None)
    bearer = base64.b64decode(cluster.kubectl(*token).stdout).decode()
    bootstrap.apply(lab.kubectl, [clusters.cluster_secret(
        cluster.argocd_name, cluster.server, bearer, lab.layout.certs / "ca.crt",
        argocd.NAMESPACE)])


def _stop_cluster(lay: Layout, quiet: bool = True) -> list[str]:
    """Stop one control plane's processes, by PID, etcd last (the apiserver deletes its
    lease there as it stops); remove etcd's tmpfs data."""
    stopped = procs.stop_all(lay.state, last=("etcd",))
    if lay.etcd_data.is_dir() and not procs.recorded(lay.state):
        shutil.rmtree(lay.etcd_data, ignore_errors=True)
    if not quiet and stopped:
        say(f"stopped {', '.join(stopped)}" + (f" ({lay.cluster})" if lay.cluster else ""))
    return stopped


def stop(root: Path, instance: str = "", quiet: bool = False) -> list[str]:
    """Stop every process the lab of `root` (and `instance`) started, by PID, a second
    cluster's first; remove etcd's tmpfs data. Idempotent: with nothing running it does
    nothing."""
    root = Path(root).resolve()
    second = _stop_cluster(Layout(root, instance, SECOND.folder), quiet)
    first = _stop_cluster(Layout(root, instance), quiet)
    if not quiet and not (first or second):
        say("nothing was running")
    return [*first, *(f"{SECOND.folder}/{name}" for name in second)]
