"""The lab's commands: build, up, down, status. The only module that prints to stdout or
decides an exit code; a LabError becomes one line on stderr and exit 1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .clusters import FIRST, SECOND
from .host import LabError
from .layout import Layout

ROOT = Path(__file__).resolve().parents[2]


def _build(args: argparse.Namespace) -> None:
    from . import build

    build.build(ROOT, only=args.only or None)


def _up(args: argparse.Namespace) -> None:
    from .up import start

    lab = start(ROOT, clusters=args.clusters)
    p = lab.ports
    print(f"""The lab is up (state in {lab.layout.state}).
  export KUBECONFIG={lab.kubeconfig}
  {lab.layout.bin / 'kubectl'} get nodes
  API server   {lab.server}
  git daemon   git://127.0.0.1:{p['git']}/<name>  serves {lab.git_root}/<name>
  logs         {lab.layout.state / 'logs'}/""")
    for other in lab.others:
        print(f"""Cluster {other.name} (no Argo CD of its own; the lab's Argo CD manages it as
  destination name {other.argocd_name}, server {other.argocd_server}):
  kubeconfig   {other.kubeconfig}
  logs         {other.layout.state / 'logs'}/
  JobSet       {'runs' if other.plan.jobset else 'not served'}""")
    print(f"""Every cluster as a context ({', '.join(c.name for c in (lab, *lab.others))}):
  {lab.clusters_kubeconfig}
Stop it with: python3 scripts/lab down   (or make lab-down)""")


def _down(args: argparse.Namespace) -> None:
    """Stop the lab (its second cluster too), and any lab a test session left beside it
    (.lab/<instance>/)."""
    from .up import stop

    stop(ROOT)
    for pids in sorted((ROOT / ".lab").glob("*/pids")):
        if pids.parent.name != SECOND.folder:  # the second cluster's: stopped with the lab
            stop(ROOT, pids.parent.name)


def _status(args: argparse.Namespace) -> None:
    """What runs in each cluster of the lab, on which ports, with how much memory."""
    report = {plan.name: _cluster_status(Layout(ROOT, cluster=plan.folder))
              for plan in (FIRST, SECOND)}
    print(json.dumps(report, indent=1))


def _cluster_status(lay: Layout) -> dict[str, object]:
    from . import procs

    running = procs.recorded(lay.state) if (lay.state / "pids").is_dir() else {}
    memory = {name: procs.memory_kib(pid) for name, pid in running.items()}
    total = {key: sum(m.get(key, 0) for m in memory.values()) // 1024
             for key in ("VmRSS", "VmHWM")}
    return {"running": running, "ports": _ports(lay) if running else {}, "memory_kib": memory,
            "total_mib": {"rss_now": total["VmRSS"], "sum_of_peaks": total["VmHWM"]}}


def _ports(lay: Layout) -> dict[str, int]:
    path = lay.state / "ports.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 scripts/lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the pinned binaries and render the manifests")
    build.add_argument("only", nargs="*", help="parts to build (default: all)")
    build.set_defaults(run=_build)
    up = sub.add_parser("up", help="start the lab, return when ready")
    up.add_argument("--clusters", type=int, choices=(1, 2), default=1,
                    help="2: a second cluster beside the first, without JobSet, managed by "
                         "the first one's Argo CD (default: 1)")
    up.set_defaults(run=_up)
    for name, run, text in (("down", _down, "stop every process the lab started"),
                            ("status", _status, "what runs in each cluster, on which ports")):
        sub.add_parser(name, help=text).set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except LabError as err:
        print(f"lab: {err}", file=sys.stderr)
        return 1
    return 0
