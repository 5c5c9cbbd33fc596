"""The lab fixture: one real control plane per pytest session (see scripts/lab/).

Tests that use it are marked `lab`; the fixture starts the lab once, gives each test its own
namespace, and stops the lab at the end of the session, even after a failure. Tests that need
two clusters take `two_clusters`: the session's lab (cluster `lab-a`, with Argo CD) and a
second cluster (`lab-b`, without JobSet) that lab-a's Argo CD manages, started beside it once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from lab import Cluster, Lab, start  # noqa: E402  (scripts/ is not a package on the path)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    # under pytest-xdist each worker has a session of its own: one lab each, side by side
    # (better: keep the lab tests on one worker, `--dist loadgroup` and an xdist_group mark)
    running = start(ROOT, instance=os.environ.get("PYTEST_XDIST_WORKER", ""))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def two_clusters(lab: Lab) -> Iterator[tuple[Lab, Cluster]]:
    """(lab-a, lab-b): the session's lab and a second cluster beside it, without JobSet,
    registered in lab-a's Argo CD as `lab-b.argocd_name`; stopped at the end of the session,
    even after a failure (one lab and one Argo CD for both)."""
    second = lab.start_cluster(jobset=False)
    try:
        yield lab, second
    finally:
        lab.stop_cluster(second)


@contextlib.contextmanager
def own_namespace(cluster: Cluster) -> Iterator[str]:
    """A namespace of the test's own in `cluster`, deleted afterwards with all it holds."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def namespace(lab: Lab) -> Iterator[str]:
    with own_namespace(lab) as name:
        yield name


@pytest.fixture
def b_namespace(two_clusters: tuple[Lab, Cluster]) -> Iterator[str]:
    """A namespace of the test's own in lab-b."""
    with own_namespace(two_clusters[1]) as name:
        yield name
