"""Bounded waits: every wait has a deadline, and a timeout says what was last seen.

Readiness is asked of each part the way its own probes do: the apiserver's /readyz, each
controller-runtime manager's /readyz (which they answer only once their webhook server is
listening with its certificates), a TLS answer from each webhook, a leader lease for the
controller-manager and scheduler, the nodes' Ready condition.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .host import LabError, say

Check = Callable[[], "str | None"]  # None: ready; a string: what is not ready yet


def wait_all(checks: dict[str, Check], timeout: float, alive: Callable[[], str | None]) -> None:
    """Poll every check until all pass; fail when `timeout` passes or `alive` reports a dead
    process (no point waiting for a webhook whose server has exited)."""
    pending = dict(checks)
    last: dict[str, str] = {}
    started = time.monotonic()
    deadline = started + timeout
    while pending:
        dead = alive()
        if dead:
            raise LabError(dead)
        for name, check in list(pending.items()):
            status = check()
            if status is None:
                del pending[name]
                say(f"ready: {name} ({time.monotonic() - started:.1f} s)")
            else:
                last[name] = status
        if not pending:
            return
        if time.monotonic() > deadline:
            raise LabError(f"not ready after {timeout:.0f} s: " + "; ".join(
                f"{n}: {last.get(n, '?')}" for n in pending))
        time.sleep(0.25)


def https_ok(url: str, ca: Path, token: str | None = None) -> Check:
    """Ready when GET url answers 200 (certificate checked against the lab's CA)."""
    context = ssl.create_default_context(cafile=str(ca))

    def check() -> str | None:
        request = urllib.request.Request(url)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                return None if answer.status == 200 else f"HTTP {answer.status}"
        except urllib.error.HTTPError as err:
            return f"HTTP {err.code}"
        except (OSError, ssl.SSLError) as err:
            return str(getattr(err, "reason", err))
    return check


def http_ok(url: str) -> Check:
    """Ready when GET url answers 200 over plain HTTP (a probe endpoint)."""
    def check() -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return None if answer.status == 200 else f"HTTP {answer.status}"
        except urllib.error.HTTPError as err:
            return f"HTTP {err.code}"
        except OSError as err:
            return str(getattr(err, "reason", err))
    return check


def http_answers(url: str) -> Check:
    """Ready when GET url gets any HTTP answer (a server with no check to call)."""
    def check() -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return None
        except urllib.error.HTTPError:
            return None
        except OSError as err:
            return str(getattr(err, "reason", err))
    return check


def tls_answers(port: int, ca: Path) -> Check:
    """Ready when a TLS handshake with 127.0.0.1:port succeeds with the lab's certificate: the
    webhook server is listening and serving the certificate the webhook configuration trusts."""
    context = ssl.create_default_context(cafile=str(ca))

    def check() -> str | None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return None
        except (OSError, ssl.SSLError) as err:
            return str(err)
    return check


def tcp_open(port: int) -> Check:
    def check() -> str | None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return None
        except OSError as err:
            return str(err)
    return check


def kubectl_ok(kubectl: Callable[..., subprocess.CompletedProcess[str]], *args: str,
               expect: Callable[[str], bool] = bool) -> Check:
    """Ready when `kubectl args` succeeds and `expect` accepts its output."""
    def check() -> str | None:
        done = kubectl(*args, check=False)
        if done.returncode != 0:
            return (done.stderr.strip().splitlines() or ["kubectl failed"])[-1]
        return None if expect(done.stdout) else f"got {done.stdout.strip()[:200]!r}"
    return check
