"""The cluster as the read side reaches it: the user's kubeconfig and context, through the
official Kubernetes client (the optional extra `tfgen-gitops[cluster]`).

Every read is a list (one call per kind and namespace), a watch, a log stream or a
port-forward; objects stay the API server's JSON (the client's typed models cost a
millisecond per pod to build and say nothing more). `Connection.calls` counts the requests.
A cluster that cannot be reached is one line naming the context and the server, exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvironmentProblem

Obj = dict[str, Any]
# How long one request may take before the cluster counts as unreachable (connect, read).
TIMEOUT = (5.0, 30.0)
INSTALL_HINT = "pip install 'tfgen-gitops[cluster]'"


class ClusterUnreachable(EnvironmentProblem):
    """No cluster answered, or the kubeconfig names none (exit code 2)."""


@dataclass(frozen=True)
class Api:
    """Where the API serves a kind: `("", "v1", "pods")`, `("kubeflow.org", "v1", "tfjobs")`."""

    group: str
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str, name: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/namespaces/{namespace}/{self.plural}" + (f"/{name}" if name else "")


@dataclass
class Connection:
    """A connected cluster: the client, the context it came from, the requests made."""

    client: Any  # kubernetes.client.ApiClient
    context: str
    server: str
    calls: int = 0
    not_served: set[Api] = field(default_factory=set)

    def where(self) -> str:
        return f"context {self.context!r} (server {self.server})"

    def _failed(self, exc: Exception, what: str) -> ClusterUnreachable:
        status = getattr(exc, "status", None)
        if status:
            reason = f"HTTP {status} {getattr(exc, 'reason', '') or ''}".strip()
        else:
            # urllib3 wraps the socket's error ("...: [Errno 111] Connection refused")
            inner = getattr(exc, "reason", None)
            text = str(inner if isinstance(inner, Exception) else exc) or type(exc).__name__
            reason = text.splitlines()[0].rsplit("): ", 1)[-1]
        return ClusterUnreachable(f"cannot {what} through {self.where()}: {reason}")

    def request(self, path: str, query: dict[str, Any] | None = None,
                stream: bool = False) -> Any:
        """GET `path` (the raw urllib3 response when `stream`); None when the server does not
        serve it (404: a kind whose CRD is not installed)."""
        from kubernetes.client.exceptions import ApiException

        self.calls += 1
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        try:
            method, url, headers, _, _ = self.client.param_serialize(
                "GET", path, query_params=params, auth_settings=["BearerToken"],
                header_params={"Accept": "application/json"})
            response = self.client.call_api(method, url, header_params=headers,
                                            _request_timeout=None if stream else TIMEOUT)
            if not stream:
                response.read()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise self._failed(exc, f"read {path}") from None
        except Exception as exc:  # urllib3's and the socket's errors alike
            raise self._failed(exc, f"read {path}") from None
        status = response.status
        if status == 404:
            return None
        if not 200 <= status < 300:
            raise self._failed(_HttpError(status, response.reason), f"read {path}")
        return response.response if stream else json.loads(response.data)

    def objects(self, api: Api, namespace: str, selector: str | None = None) -> list[Obj]:
        """Every object of a kind in a namespace (one call); [] where the kind is not served,
        which `not_served` remembers."""
        return self.list_with_version(api, namespace, selector)[0]

    def list_with_version(self, api: Api, namespace: str, selector: str | None = None
                          ) -> tuple[list[Obj], str | None]:
        """The objects and the list's resourceVersion, the point a watch starts from."""
        found = self.request(api.path(namespace), {"labelSelector": selector})
        if found is None:
            self.not_served.add(api)
            return [], None
        return list(found.get("items") or []), found["metadata"].get("resourceVersion")

    def watch(self, api: Api, namespace: str, version: str, selector: str | None = None
              ) -> Iterator[Obj]:
        """The events of a kind in a namespace from `version` on (ADDED, MODIFIED, DELETED,
        BOOKMARK), until the server ends the watch."""
        response = self.request(api.path(namespace), {
            "labelSelector": selector, "watch": "true", "resourceVersion": version,
            "allowWatchBookmarks": "true", "timeoutSeconds": 300}, stream=True)
        if response is None:
            return
        yield from (json.loads(line) for line in lines_of(response) if line.strip())


def lines_of(response: Any) -> Iterator[bytes]:
    """The lines of a streamed response as they arrive (a watch's events, a log's lines),
    without their newline; the connection released at the end."""
    pending = b""
    try:
        for chunk in response.stream(64 * 1024, decode_content=True):
            pending += chunk
            *whole, pending = pending.split(b"\n")
            yield from whole
        if pending:
            yield pending
    finally:
        response.release_conn()


class _HttpError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}")
        self.status, self.reason = status, reason


def connect(kubeconfig: str | None, context: str | None) -> Connection:
    """The cluster of `context` in `kubeconfig` (kubectl's defaults: $KUBECONFIG, then
    ~/.kube/config; the current context)."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise EnvironmentProblem("reading the cluster needs the Kubernetes client, not "
                                 f"installed: {INSTALL_HINT}") from None
    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
        chosen = context or (current or {}).get("name", "")
        settings = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, context=context,
                                client_configuration=settings)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "the kubeconfig ($KUBECONFIG " \
            "or ~/.kube/config)"
        known = ""
        if context and "contexts" in locals():
            known = " (it has: " + ", ".join(c["name"] for c in contexts) + ")"
        raise ClusterUnreachable(f"cannot use {where}"
                                 f"{f' context {context!r}' if context else ''}: "
                                 f"{str(exc).splitlines()[0]}{known}") from None
    # one try per request: an unreachable server is said at once, not after urllib3's retries
    settings.retries = 0
    return Connection(client.ApiClient(configuration=settings), chosen, settings.host)
