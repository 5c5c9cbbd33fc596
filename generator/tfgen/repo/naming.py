"""Names: the rules Kubernetes, Helm and the training operator put on them, and every name tfgen
derives from an experiment's name.

The experiment name is the base of every object name (convention over configuration): the
TFJob, the Argo CD Application and Helm release, the claim, the TensorBoard, and the pods the
operator creates. Its length budget follows from the longest name derived from it, so the two
are defined here together. The Helm chart derives the same names in its `templates/_*.tpl`
helpers and the schemas state the same rule; tests render the chart and read the schemas to
prove they agree.
"""

from __future__ import annotations

import re

# A DNS-1035 label: what Kubernetes requires of Service names, and so of TFJob names (the
# operator names one headless Service per pod after the job).
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL = 63  # DNS labels, label values and Service names
MAX_SUBDOMAIN = 253  # DNS subdomains: object names, hosts, the prefix of a label key
MAX_ANNOTATIONS_BYTES = 256 * 1024  # all annotations of one object, keys and values together
MAX_RELEASE_NAME = 53  # Helm's limit; the Argo CD Application name is the release name

# Spec role keys and the TFJob replica types the operator accepts for them, in the order
# people read them (the leader first).
REPLICA_TYPES = {
    "chief": "Chief",
    "master": "Master",
    "worker": "Worker",
    "ps": "PS",
    "evaluator": "Evaluator",
}
ROLES = tuple(REPLICA_TYPES)
# The leader: the same job under two names, at most one of them. Master first is the order of
# the spec schema's roles and of the message naming both.
LEADER_ROLES = ("master", "chief")
LEADER_REPLICA_TYPES = tuple(REPLICA_TYPES[role] for role in LEADER_ROLES)
SINGLE_REPLICA_ROLES = ("master", "chief", "evaluator")
TRAINING_ROLES = ("master", "chief", "worker")

CLAIM_SUFFIX = "-data"
TENSORBOARD_SUFFIX = "-tensorboard"


def pod_name(job: str, replica_type: str, index: int) -> str:
    """The operator's GenGeneralName: `<job>-<type lowercased>-<index>`; its Service shares it."""
    return f"{job}-{replica_type.lower()}-{index}".replace("/", "-")


# The longest names derived from an experiment name are "<name>-tensorboard" and the
# evaluator's "<name>-evaluator-0" (the only replica of that role; a worker's index has at most
# three digits: "-worker-999" is shorter). Both must stay within a DNS label.
LONGEST_SUFFIX = max(len(TENSORBOARD_SUFFIX), len(pod_name("", "Evaluator", 0)))
MAX_NAME_LENGTH = MAX_LABEL - LONGEST_SUFFIX

# Replica indexes have at most three digits (0..999), the budget LONGEST_SUFFIX assumes: a
# role has at most 1000 replicas. The spec schema and the chart's values schema both say so,
# and tests/test_bounds.py compares them with this number.
MAX_REPLICAS = 1000

NAME_RULE = (
    "must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and "
    f"ending with a letter or digit, at most {MAX_NAME_LENGTH} characters so that "
    f"<name>{TENSORBOARD_SUFFIX} and <name>-evaluator-0 fit Kubernetes' {MAX_LABEL}-character "
    "limit"
)


def is_experiment_name(name: object) -> bool:
    """A name every derived object name can be built from."""
    return (
        isinstance(name, str) and len(name) <= MAX_NAME_LENGTH and bool(DNS1035.match(name))
    )


def claim_name(name: str) -> str:
    """The PersistentVolumeClaim tfgen creates for an experiment."""
    return f"{name}{CLAIM_SUFFIX}"


def volume_name(namespace: str, name: str) -> str:
    """The PersistentVolume: cluster-scoped, so the namespace is part of its name."""
    return f"{namespace}-{name}{CLAIM_SUFFIX}"


def volume_name_pattern(namespace: str) -> str:
    """The glob every PersistentVolume of a namespace's experiments matches (`volume_name`)."""
    return volume_name(namespace, "*")


def job_name(name: str, suffix: str = "") -> str:
    """The TFJob of one run: the experiment's name, and `<name>-<suffix>` for a sweep's run
    (a spec without sweep is one run without suffix, so its TFJob keeps the plain name)."""
    return f"{name}-{suffix}" if suffix else name


# Run suffixes that would give a run's TFJob (and its NetworkPolicy) the name of an object the
# experiment already has.
RESERVED_SUFFIXES = (CLAIM_SUFFIX.lstrip("-"), TENSORBOARD_SUFFIX.lstrip("-"))


def tensorboard_name(name: str) -> str:
    """The TensorBoard Deployment, Service and Ingress."""
    return f"{name}{TENSORBOARD_SUFFIX}"


# Argo CD objects tfgen creates once per repository; no experiment may take their names.
APPLICATIONSET_NAME = "tfgen-experiments"
BOOTSTRAP_NAME = "tfgen-bootstrap"
RESERVED_NAMES = {
    BOOTSTRAP_NAME: "the bootstrap Application",
    APPLICATIONSET_NAME: "the ApplicationSet that generates every experiment's Application",
}

# The annotations under tfgen.io/ a spec carries: where a copy came from. `tfgen rerun` writes
# the first, and the chart writes it on every object (values experiment.rerunOf); `tfgen new
# --from` writes the second, which stays in the spec (`tfgen diff` reads both).
RERUN_ANNOTATION = "tfgen.io/rerun-of"
COPY_ANNOTATION = "tfgen.io/copy-of"
SOURCE_ANNOTATIONS = (RERUN_ANNOTATION, COPY_ANNOTATION)
# Keys the chart writes from a spec field of their own (a second one in the pod template's
# annotations would be a duplicate key, which helm refuses).
SIDECAR_ANNOTATION = "sidecar.istio.io/inject"
RESERVED_KEYS = {SIDECAR_ANNOTATION: "spec.istioSidecar"}


def label_key_prefix_problem(key: str) -> str | None:
    """What is wrong with the DNS prefix of a label, annotation, node selector or taint key
    beyond its grammar (the schemas' pattern): Kubernetes allows at most MAX_SUBDOMAIN
    characters before the '/', a bound a regular expression cannot state."""
    prefix, slash, _ = key.rpartition("/")
    if slash and len(prefix) > MAX_SUBDOMAIN:
        return (
            f"its prefix is {len(prefix)} characters long; a DNS subdomain has at most "
            f"{MAX_SUBDOMAIN}"
        )
    return None


# Namespaces of the platform itself: an experiment there could replace or starve what runs
# the cluster. Argo CD's own namespace (tfgen.yaml argocd.namespace) is one too.
PLATFORM_NAMESPACES = {
    "kube-system": "the cluster's own components",
    "kube-public": "the cluster's public information",
    "kube-node-lease": "the nodes' heartbeats",
}


def platform_namespace(namespace: object, argocd_namespace: object) -> str | None:
    """What platform `namespace` belongs to (None: an ordinary namespace)."""
    if namespace == argocd_namespace:
        return "Argo CD itself: an experiment there could change what deploys every experiment"
    if isinstance(namespace, str) and namespace in PLATFORM_NAMESPACES:
        return PLATFORM_NAMESPACES[namespace]
    return None


# What `git check-ref-format --allow-onelevel` refuses in a branch or tag name, plus a leading
# '-' (git reads one as an option).
_REF_FORBIDDEN = frozenset(" ~^:?*[\\\x7f") | {chr(c) for c in range(0x20)}


def ref_name_problem(ref: str) -> str | None:
    """Why git would not take `ref` as a branch, tag or commit name (None: it would)."""
    bad = next((c for c in ref if c in _REF_FORBIDDEN), None)
    checks = (
        (not ref, "it is empty"),
        (ref.startswith("-"), "it starts with '-', which git reads as an option"),
        (bad is not None, f"it contains {bad!r}"),
        (ref == "@", "it is '@' alone"),
        ("@{" in ref, "it contains '@{'"),
        (".." in ref, "it contains '..'"),
        (ref.startswith("/") or ref.endswith("/") or "//" in ref,
         "it starts or ends with '/', or has '//'"),
        (ref.endswith("."), "it ends with '.'"),
        (any(p.startswith(".") or p.endswith(".lock") for p in ref.split("/")),
         "a '/'-separated part starts with '.' or ends with '.lock'"),
    )
    return next((why for failed, why in checks if failed), None)
