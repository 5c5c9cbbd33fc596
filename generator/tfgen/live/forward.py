"""`tfgen tensorboard`: a local port forwarded to the experiment's TensorBoard pod through the
API server, as `kubectl port-forward` does (one port-forward stream per connection), until
Ctrl-C. A sweep's runs share their experiment's one TensorBoard, which compares them."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import OptionsError, TfgenError
from ..repo import chart, naming
from .connect import Connection
from .snapshot import PODS

COMPONENT_LABEL = "app.kubernetes.io/component"
TENSORBOARD_COMPONENT = "tensorboard"  # the chart's component label of TensorBoard's objects
CHUNK = 64 * 1024


def tensorboard_pod(cluster: Connection, name: str, namespace: str) -> str:
    """The running TensorBoard pod of experiment `name`."""
    selector = f"app.kubernetes.io/instance={name},{COMPONENT_LABEL}={TENSORBOARD_COMPONENT}"
    pods = cluster.objects(PODS, namespace, selector)
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if running:
        return str(running[0]["metadata"]["name"])
    deployment = naming.tensorboard_name(name)
    if pods:
        phases = ", ".join(f"{p['metadata']['name']} is {p['status'].get('phase')}"
                           for p in pods)
        raise TfgenError(f"TensorBoard of {name} is not running yet ({phases}): see "
                         f"`tfgen status {name}`")
    raise TfgenError(f"no TensorBoard pod of {name} in {namespace} (Deployment {deployment}): "
                     "is spec.tensorboard.enabled set, and has Argo CD synced it?")


@dataclass
class Forward:
    """A listening local socket; each connection to it is piped to the pod's port."""

    cluster: Connection
    namespace: str
    pod: str
    server: socket.socket
    port: int = chart.TENSORBOARD_PORT

    @property
    def url(self) -> str:
        host, port = self.server.getsockname()[:2]
        return f"http://{host}:{port}/"

    def serve(self, stop: threading.Event) -> None:
        """Accept connections until `stop`; each is served by a thread of its own."""
        self.server.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._pipe, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self.server.close()

    def _pipe(self, conn: socket.socket) -> None:
        from kubernetes import client
        from kubernetes.stream import portforward

        api = client.CoreV1Api(self.cluster.client)
        self.cluster.calls += 1
        try:
            stream = portforward(api.connect_get_namespaced_pod_portforward, self.pod,
                                 self.namespace, ports=str(self.port))
        except Exception:  # the pod went away: this connection ends, the next one tries again
            conn.close()
            return
        remote: Any = stream.socket(self.port)
        remote.setblocking(True)
        with contextlib.closing(conn), contextlib.closing(remote):
            _copy_both_ways(conn, remote)
        stream.close()


def _copy_both_ways(a: Any, b: Any) -> None:
    peers = {a: b, b: a}
    while True:
        readable, _, _ = select.select(list(peers), [], [], 1.0)
        for side in readable:
            data = side.recv(CHUNK)
            if not data:
                return
            peers[side].sendall(data)


def listen(cluster: Connection, name: str, namespace: str, address: str, port: int) -> Forward:
    """Find the TensorBoard pod and bind the local port (0: any free one)."""
    pod = tensorboard_pod(cluster, name, namespace)
    try:
        server = socket.create_server((address, port))
    except OSError as exc:
        raise OptionsError(f"cannot listen on {address}:{port}: {exc.strerror}: choose "
                           "another with --port") from None
    return Forward(cluster, namespace, pod, server)

