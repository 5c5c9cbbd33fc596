"""Every version the lab runs, in one place.

Each Go part is a small module of ours under `scripts/lab/go/<part>/` whose go.mod requires the
upstream module at exactly the version named here (its go.sum pins everything else); the build
step checks that the two agree, so a version is changed here and in that go.mod together, and
`go build -mod=readonly` refuses anything the go.sum does not pin. The manifests the lab applies
(CRDs, webhook configurations, KWOK's stages) are read from the same module versions in Go's
module cache, never copied into this repository.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GoPart:
    """One Go module of ours under scripts/lab/go/<name>/ and what it builds."""

    name: str
    module: str  # the upstream module whose version go.mod pins
    version: str
    packages: tuple[str, ...]  # main packages to build, "." for the folder's own main.go
    binaries: tuple[str, ...]  # what lands in .tools/lab/bin/, in the order of packages
    ldflags: str = ""


K8S = "v1.35.4"
# Kubernetes' staging modules at the release of the same minor (v1.35.4 -> v0.35.4)
K8S_STAGING = "v0.35.4"

_K8S_LDFLAGS = " ".join(
    f"-X {pkg}.{name}={value}"
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    for name, value in (("gitVersion", K8S), ("gitMajor", "1"), ("gitMinor", "35"),
                        ("gitTreeState", "clean"))
)

PARTS: tuple[GoPart, ...] = (
    GoPart("etcd", "go.etcd.io/etcd/server/v3", "v3.5.21", (".",), ("etcd",)),
    GoPart("kubernetes", "k8s.io/kubernetes", K8S,
           tuple(f"k8s.io/kubernetes/cmd/{c}" for c in (
               "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")),
           ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
           _K8S_LDFLAGS),
    GoPart("kwok", "sigs.k8s.io/kwok", "v0.8.0", ("sigs.k8s.io/kwok/cmd/kwok",), ("kwok",)),
    GoPart("jobset", "sigs.k8s.io/jobset", "v0.12.0", ("sigs.k8s.io/jobset",), ("jobset",)),
    GoPart("kueue", "sigs.k8s.io/kueue", "v0.19.2", ("sigs.k8s.io/kueue/cmd/kueue",),
           ("kueue",)),
    GoPart("training-operator", "github.com/kubeflow/training-operator", "v1.9.4",
           ("github.com/kubeflow/training-operator/cmd/training-operator.v1",),
           ("training-operator",)),
    GoPart("argocd", "github.com/argoproj/argo-cd/v3", "v3.2.11",
           ("github.com/argoproj/argo-cd/v3/cmd",), ("argocd",)),
)

# Debian packages the lab runs as they are: Redis for Argo CD's cache, git for `git daemon`.
# command -> the package that ships it
DEBIAN = {"redis-server": "redis-server", "git": "git", "openssl": "openssl"}

# The GPU nodes KWOK pretends to run (name -> nvidia.com/gpu each): the lab's first cluster's,
# and the one of a second cluster started beside it (clusters.py).
GPU_NODES = {"lab-gpu-0": 8, "lab-gpu-1": 8}
SECOND_GPU_NODES = {"lab-b-gpu-0": 4}


def part(name: str) -> GoPart:
    """The pinned part called `name`."""
    return next(p for p in PARTS if p.name == name)
