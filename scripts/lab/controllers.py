"""The workload controllers' command lines and configuration: JobSet, Kueue, training operator.

Each runs the pinned upstream binary with its own configuration API, as its Deployment would,
except where a pod's environment must be stood in for: the kubeconfig replaces the in-cluster
service account, and the webhook certificates (a mounted Secret in a cluster) are files of the
lab's CA. Every server is asked to listen on 127.0.0.1; where a component has no such setting
it says so below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .layout import Layout

# Where the training operator waits for its webhook certificates: a constant in its code
# (pkg/cert), and controller-runtime's default too. The one path the lab writes outside
# the repository, because no flag moves it.
TRAINING_OPERATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")

KUEUE_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/tfjob")


def webhook_certs(lay: Layout) -> Path:
    """The folder of the serving certificate and key under controller-runtime's file names
    (made by certs.make_all)."""
    return lay.certs / "webhook"


def _write(lay: Layout, name: str, config: dict[str, object]) -> Path:
    # JSON is YAML: the components' configuration loaders read it as it is
    path = lay.state / "config" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path


def jobset(lay: Layout) -> list[str]:
    config = _write(lay, "jobset.yaml", {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        # no metrics server: it would want certificates of its own, and the lab reads none
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{lay.ports['jobset-probe']}"},
        "webhook": {"port": lay.ports["jobset-webhook"], "host": "127.0.0.1",
                    "certDir": str(webhook_certs(lay))},
        "internalCertManagement": {"enable": False},
    })
    return [str(lay.bin / "jobset"), f"--config={config}", f"--kubeconfig={lay.kubeconfig}",
            "--zap-log-level=info"]


def kueue(lay: Layout, jobset: bool = True) -> list[str]:
    """Kueue with its internal certificate management on, fed the lab's pre-created Secret:
    with it off, Kueue loads its metrics certificate from a fixed path under /etc whatever its
    configuration says; on, it only waits for the webhook files in the configured folder.
    Its JobSet integration only where JobSet runs."""
    frameworks = [f for f in KUEUE_FRAMEWORKS if jobset or not f.startswith("jobset.")]
    config = _write(lay, "kueue.yaml", {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": "kueue-system",
        "leaderElection": {"leaderElect": False},
        "metrics": {"bindAddress": f"127.0.0.1:{lay.ports['kueue-metrics']}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{lay.ports['kueue-probe']}"},
        "webhook": {"port": lay.ports["kueue-webhook"], "host": "127.0.0.1",
                    "certDir": str(webhook_certs(lay))},
        "internalCertManagement": {"enable": True},
        "integrations": {"frameworks": frameworks},
    })
    # VisibilityOnDemand starts an API server on 0.0.0.0 that the lab does not use
    return [str(lay.bin / "kueue"), f"--config={config}", f"--kubeconfig={lay.kubeconfig}",
            "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=info"]


def training_operator(lay: Layout) -> list[str]:
    """TFJob only. Its webhook server takes a port but no host: it listens on every
    interface (nothing else of the lab does)."""
    TRAINING_OPERATOR_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        # written aside and renamed: another lab may be reading the same files right now
        temp = TRAINING_OPERATOR_CERT_DIR / f".{name}.{os.getpid()}"
        temp.write_bytes((webhook_certs(lay) / name).read_bytes())
        os.replace(temp, TRAINING_OPERATOR_CERT_DIR / name)
    return [str(lay.bin / "training-operator"), f"--kubeconfig={lay.kubeconfig}",
            "--enable-scheme=tfjob", "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{lay.ports['training-operator-probe']}",
            f"--webhook-server-port={lay.ports['training-operator-webhook']}",
            "--zap-log-level=info"]
