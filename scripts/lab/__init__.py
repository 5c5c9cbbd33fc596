"""The lab: a real Kubernetes control plane with the project's controllers, on loopback.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK (fake GPU nodes in place of
kubelets), JobSet, Kueue, the Kubeflow training operator and Argo CD, each the pinned upstream
release (versions.py), built from Go's module proxy into .tools/lab/ and run as local processes
listening on 127.0.0.1, with all state in .lab/.

    python3 scripts/lab build    # once; a pinned binary already built is kept
    python3 scripts/lab up       # start, return when ready; prints how to use it
    python3 scripts/lab up --clusters 2   # and a second cluster, managed by the same Argo CD
    python3 scripts/lab down     # stop every process it started, by PID

From Python (the tests' session fixture): `lab = start(root)`, `lab.kubectl(...)`,
`lab.stop()`; `b = lab.start_cluster(jobset=False)` starts the second cluster (`lab-b`, a
`Cluster`: `b.kubectl(...)`, `b.server`, `b.argocd_name`), `lab.stop_cluster(b)` stops it;
`lab.clusters_kubeconfig` holds a context per running cluster (`lab-a`, `lab-b`).
"""

from .host import LabError
from .up import Cluster, Lab, start, stop

__all__ = ["Cluster", "Lab", "LabError", "start", "stop"]
