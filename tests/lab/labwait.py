"""One bounded wait for the lab tests: poll, and on timeout show the object as last seen."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(lab: Any, what: str, args: list[str], ok: Callable[[dict[str, Any]], bool],
             timeout: float = 180) -> dict[str, Any]:
    """Poll `kubectl get ARGS -o json` until `ok` accepts it; on timeout fail showing the
    object as last seen. The timeout guards against a hang, it asserts no speed: on a quiet
    machine the lab's controllers answer in seconds."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        done = lab.kubectl("get", *args, "-o", "json", check=False)
        if done.returncode == 0:
            last = json.loads(done.stdout)
            if ok(last):
                return last
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout:.0f} s; last seen:\n"
                f"{json.dumps(last, indent=1)[:4000]}")
