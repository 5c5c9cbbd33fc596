"""The control plane's command lines: etcd, kube-apiserver, controller-manager, scheduler, KWOK.

Everything listens on 127.0.0.1 on the ports Layout chose. The apiserver advertises loopback,
which only works with `--endpoint-reconciler-type=none` (the default reconciler refuses to
write a loopback address into the `kubernetes` Endpoints). The controller-manager and the
scheduler serve nothing (`--secure-port=0`): their readiness is their leader lease.
"""

from __future__ import annotations

from .layout import Layout

SERVICE_CIDR = "10.0.0.0/24"


def etcd(lay: Layout) -> list[str]:
    client = f"http://127.0.0.1:{lay.ports['etcd']}"
    peer = f"http://127.0.0.1:{lay.ports['etcd-peer']}"
    return [str(lay.bin / "etcd"), "--name=lab", f"--data-dir={lay.etcd_data}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=lab={peer}", "--log-level=warn"]


def apiserver(lay: Layout) -> list[str]:
    c = lay.certs
    return [str(lay.bin / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{lay.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={lay.ports['apiserver']}", "--endpoint-reconciler-type=none",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--authorization-mode=RBAC",
            f"--token-auth-file={c / 'tokens.csv'}", f"--client-ca-file={c / 'ca.crt'}",
            f"--tls-cert-file={c / 'serving.crt'}", f"--tls-private-key-file={c / 'serving.key'}",
            f"--service-account-key-file={c / 'sa.pub'}",
            f"--service-account-signing-key-file={c / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc", "--allow-privileged=true",
            f"--cert-dir={c}", "--v=1"]


def controller_manager(lay: Layout) -> list[str]:
    # the serviceaccount controller (on by default, with the others) creates each
    # namespace's `default` ServiceAccount, without which no pod is admitted
    return [str(lay.bin / "kube-controller-manager"), f"--kubeconfig={lay.kubeconfig}",
            "--secure-port=0", "--leader-elect=true", "--controllers=*",
            f"--service-account-private-key-file={lay.certs / 'sa.key'}",
            f"--root-ca-file={lay.certs / 'ca.crt'}", "--use-service-account-credentials=false",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--v=1"]


def scheduler(lay: Layout) -> list[str]:
    return [str(lay.bin / "kube-scheduler"), f"--kubeconfig={lay.kubeconfig}",
            "--secure-port=0", "--leader-elect=true", "--v=1"]


# The kinds whose objects tell KWOK's kubelet API what a pod serves: a pod's log (a file) and
# where a port-forward to it lands (a local address); tests create them per pod.
KWOK_CRDS = ("Logs", "PortForward")


def kwok(lay: Layout) -> list[str]:
    """KWOK manages only the nodes the lab creates (by annotation) and serves the kubelet's
    logs/exec/port-forward API on loopback, over TLS as the apiserver speaks to a kubelet,
    at the port each node advertises (`--node-port`); its stages come from its own module."""
    stages = lay.manifests / "kwok-stages.yaml"
    port = lay.ports["kwok"]
    return [str(lay.bin / "kwok"), f"--kubeconfig={lay.kubeconfig}",
            f"--config={stages}", "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--node-ip=127.0.0.1", "--node-name=127.0.0.1", f"--node-port={port}",
            f"--server-address=127.0.0.1:{port}", f"--enable-crds={','.join(KWOK_CRDS)}",
            f"--tls-cert-file={lay.certs / 'serving.crt'}",
            f"--tls-private-key-file={lay.certs / 'serving.key'}",
            "--node-lease-duration-seconds=40", "--v=INFO"]
