"""Team policy: what each namespace's team agreed to in tfgen.yaml `policy.<namespace>`.

Whoever can merge a spec can start GPU pods in a team's namespace, so validate enforces the
namespace's policy on every spec: image registries and digests, GPUs per experiment, allowed
service accounts, priority classes and schedulers, TensorBoard's Service type and NAS servers;
and across the namespace's specs, its GPU quota. Each problem points at the spec field (or the
tfgen.yaml default it came from) and names the policy and its line in tfgen.yaml. An image
that floats (no tag, or `:latest`) is refused where the policy asks for digests and warned
about everywhere else: the same spec may run other code tomorrow.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ...problems import WARNING, Problem
from ...repo import images as refs
from ..config.load import RepoConfig
from ..experiment import sweep
from ..experiment.checked import Checked, Collector, lookup, roles, spec_is_retired
from ..schema.messages import shown
from ..yaml.document import PointerParts


def images(spec: dict[str, Any]) -> Iterable[tuple[PointerParts, str]]:
    """(pointer, image) of every image the spec runs: the default, each role's own, TensorBoard's
    when it is enabled."""
    if isinstance(spec.get("image"), str) and spec["image"]:
        yield ("spec", "image"), spec["image"]
    for name, role in roles(spec):
        if isinstance(role.get("image"), str) and role["image"]:
            yield ("spec", "roles", name, "image"), role["image"]
    board = spec.get("tensorboard")
    if isinstance(board, dict) and board.get("enabled") and isinstance(board.get("image"), str):
        yield ("spec", "tensorboard", "image"), board["image"]


def gpus(spec: dict[str, Any]) -> int:
    """GPUs an experiment requests: replicas times gpus, summed over its roles, times its
    sweep's runs (they all run at once, each a TFJob of its own)."""
    roles = spec.get("roles")
    total = 0
    for role in (roles.values() if isinstance(roles, dict) else []):
        if isinstance(role, dict):
            count, each = role.get("replicas", 1), role.get("gpus", 0)
            if isinstance(count, int) and isinstance(each, int):
                total += count * each
    return total * sweep.run_count(spec)


def active(spec: dict[str, Any]) -> bool:
    """A suspended or retired experiment has no pods, so it holds no GPUs."""
    return not lookup(spec, "runPolicy", "suspend") and not spec_is_retired({"spec": spec})


def queued(spec: dict[str, Any]) -> bool:
    """Whether a Kueue queue admits the experiment's runs."""
    return bool(spec.get("queue"))


def holds_quota(spec: dict[str, Any]) -> bool:
    """Whether the experiment's GPUs count against its namespace's `gpuQuota`: an active one
    that no Kueue queue admits (a queued run's GPUs are its ClusterQueue's to admit)."""
    return active(spec) and not queued(spec)


class _Policy:
    def __init__(self, config: RepoConfig, namespace: str, out: Collector) -> None:
        self.config, self.namespace, self.out = config, namespace, out
        self.rules = config.namespace_policy(namespace)

    def name(self, key: str) -> str:
        where = self.config.policy_source(self.namespace, key)
        return f"policy.{self.namespace}.{key} ({where})"

    def one_of(self, key: str, parts: PointerParts, value: Any, what: str) -> None:
        """`value` (empty: the cluster's default, always allowed) must be in the list `key`."""
        allowed = self.rules.get(key)
        if allowed is None or not isinstance(value, str) or not value or value in allowed:
            return
        self.out.add(parts, f"{what} {shown(value)} is not allowed in namespace "
                     f"{self.namespace} by {self.name(key)}",
                     "one of: " + (", ".join(allowed) or "none besides the default"), key=False)


def _image_policy(policy: _Policy, parts: PointerParts, text: str) -> None:
    """The namespace's registries and pinning on one image, read as the runtime reads it (a
    reference that is none is the schema's to report)."""
    try:
        image = _parsed(text)
    except refs.ImageError:
        return
    _registry_policy(policy, parts, text, image)
    _digest_policy(policy, parts, text, image)


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> refs.Image:
    """An image reference, read once: a repository's specs name a few images thousands of
    times, and reading one costs more than the rest of the namespace's policy."""
    return refs.parse(text)


def _registry_policy(policy: _Policy, parts: PointerParts, text: str, image: refs.Image) -> None:
    """The image comes from a source the namespace's `registries` allows (any, without one)."""
    entries = policy.rules.get("registries")
    if entries is None:
        return
    allowed = _prefixes(entries or [])
    if not any(p.admits(image) for p in allowed):
        policy.out.add(parts, f"image {shown(text)} (read as {shown(image.full)}) comes from a "
                       f"source namespace {policy.namespace} does not allow by "
                       f"{policy.name('registries')}",
                       "use an image under " + (", ".join(map(str, allowed)) or "none"),
                       key=False)


def _digest_policy(policy: _Policy, parts: PointerParts, text: str, image: refs.Image) -> None:
    """An image not pinned by digest where the namespace's `requireDigest` asks for one is
    refused; a floating one anywhere else is warned about."""
    if policy.rules.get("requireDigest") and not image.digest:
        floating = (f" and {'has no tag' if not image.tag else 'is tagged :latest'}, so what "
                    "runs may change under the same spec" if image.floating else "")
        policy.out.add(parts, f"image {shown(text)} is not pinned by digest{floating}, which "
                       f"{policy.name('requireDigest')} requires",
                       "append @sha256:<digest> (e.g. from `docker buildx imagetools inspect`)",
                       key=False)
    elif image.floating:
        _floating_warning(policy.out, parts, text, image)


def _floating_warning(out: Collector, parts: PointerParts, text: str, image: refs.Image) -> None:
    """A floating image where no policy asks for digests: said, not refused (the namespace's
    `requireDigest` makes it the error above instead)."""
    how = "is tagged :latest" if image.tag else "has no tag (the runtime pulls :latest)"
    written = text[:len(text) - len(image.tag) - 1] if image.tag else text  # as it was written
    problem = out.locator.problem(
        parts, f"image {shown(text)} {how}, so what runs may change under the same spec",
        f"pin a version tag or a digest: {written}:<version> or {written}@sha256:<digest>")
    out.problems.append(replace(problem, severity=WARNING))


def _prefixes(entries: Iterable[Any]) -> list[refs.Prefix]:
    """The policy's registry entries as prefixes, but for those that are none (they are
    refused with tfgen.yaml itself)."""
    prefixes = []
    for entry in entries:
        try:
            prefixes.append(refs.parse_prefix(str(entry)))
        except refs.ImageError:
            continue
    return prefixes


def namespace_policy_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """The namespace's policy on one experiment."""
    namespace, spec = lookup(checked.data, "metadata", "namespace"), checked.data.get("spec")
    if not isinstance(namespace, str) or not isinstance(spec, dict):
        return []
    out = Collector(checked.locator)
    policy = _Policy(config, namespace, out)
    rules = policy.rules
    for parts, image in images(spec):
        _image_policy(policy, parts, image)
    limit = rules.get("maxGpusPerExperiment")
    requested = gpus(spec)
    if isinstance(limit, int) and requested > limit:
        out.add(("spec", "roles"), f"the experiment requests {requested} GPUs; "
                f"{policy.name('maxGpusPerExperiment')} allows {limit} per experiment",
                "fewer replicas, GPUs per replica or sweep runs", key=False)
    policy.one_of("serviceAccounts", ("spec", "serviceAccountName"),
                  spec.get("serviceAccountName"), "ServiceAccount")
    policy.one_of("priorityClasses", ("spec", "priorityClassName"),
                  spec.get("priorityClassName"), "PriorityClass")
    policy.one_of("priorityClasses", ("spec", "runPolicy", "schedulingPolicy", "priorityClass"),
                  lookup(spec, "runPolicy", "schedulingPolicy", "priorityClass"), "PriorityClass")
    policy.one_of("schedulers", ("spec", "schedulerName"), spec.get("schedulerName"),
                  "scheduler")
    board = spec.get("tensorboard")
    if isinstance(board, dict) and board.get("enabled"):
        policy.one_of("serviceTypes", ("spec", "tensorboard", "service", "type"),
                      lookup(board, "service", "type"), "Service type")
    policy.one_of("nasServers", ("spec", "storage", "nas", "server"),
                  lookup(spec, "storage", "nas", "server"), "NAS server")
    policy.one_of("queues", ("spec", "queue"), spec.get("queue"), "Kueue LocalQueue")
    policy.one_of("priorities", ("spec", "priority"), spec.get("priority"),
                  "Kueue WorkloadPriorityClass")
    return out.problems


# How many of the experiments that hold a namespace's GPUs a quota problem names.
HOLDERS_SHOWN = 10


def _holders(items: Sequence[tuple[Checked, int]]) -> str:
    """`a (8), b (4)`: the experiments holding GPUs, the largest first, at most HOLDERS_SHOWN."""
    holding = sorted(((count, str(lookup(item.data, "metadata", "name")))
                      for item, count in items if count), key=lambda pair: (-pair[0], pair[1]))
    words = [f"{name} ({count})" for count, name in holding[:HOLDERS_SHOWN]]
    more = len(holding) - HOLDERS_SHOWN
    return ", ".join(words) + (f" and {more} more" if more > 0 else "")


def _quota_owner(items: Sequence[tuple[Checked, int]],
                 focus: Collection[str] | None) -> tuple[Checked, int]:
    """The one experiment a namespace's quota problem is reported on: the first that requests
    GPUs among those being added or changed (`focus`), else the first that requests any."""
    holding = [(item, count) for item, count in items if count]
    focused = [(item, count) for item, count in holding
               if focus is not None and item.shown in focus]
    return (focused or holding)[0]


def quota_problems(experiments: Sequence[Checked], config: RepoConfig,
                   focus: Collection[str] | None = None) -> list[Problem]:
    """Each namespace's active experiments together within its GPU quota: one problem per
    namespace over quota, on the experiment being added or changed (`focus`, shown paths)
    when the caller knows it, naming every experiment that holds the GPUs."""
    by_namespace: dict[str, list[tuple[Checked, int]]] = {}
    for item in experiments:
        namespace, spec = lookup(item.data, "metadata", "namespace"), item.data.get("spec")
        if isinstance(namespace, str) and isinstance(spec, dict) and holds_quota(spec):
            by_namespace.setdefault(namespace, []).append((item, gpus(spec)))
    problems: list[Problem] = []
    for namespace, items in sorted(by_namespace.items()):
        quota = config.namespace_policy(namespace).get("gpuQuota")
        total = sum(count for _, count in items)
        if not isinstance(quota, int) or total <= quota:
            continue
        item, count = _quota_owner(items, focus)
        out = Collector(item.locator)
        name = f"policy.{namespace}.gpuQuota ({config.policy_source(namespace, 'gpuQuota')})"
        out.add(("spec", "roles"), f"namespace {namespace}'s active experiments request "
                f"{total} GPUs together ({count} here); {name} is {quota}; holding them: "
                f"{_holders(items)}",
                "request fewer GPUs, retire the runs that have finished (`tfgen retire "
                "--finished`), suspend one, or agree a larger quota", key=False)
        problems += out.problems
    return problems
