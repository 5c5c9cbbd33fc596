"""Argo CD syncs a tfgen repository as tfgen wires it, and nothing fights over what it syncs.

One repository for the module (gitops.py): the bundled experiments, plus a queued TFJob, an
unqueued JobSet that runs for minutes, and a run whose pod fails. The platform applies the
bootstrap tfgen renders; from then on every change reaches the cluster by a push, as after a
merge. The tests run in file order, each starting from the state the one before left.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from gitops import (
    GitOpsRepo,
    Watch,
    experiment_names,
    make_repo,
    platform_set_up,
    sync_of,
    tear_down,
)
from helpers import template
from labwait import wait_for
from tfgen.gate.documents.manifests import parse_manifest
from tfgen.render import argo

pytestmark = pytest.mark.lab

DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"  # KWOK completes the pod this long after start
FAIL = "pod-container-running-failed.stage.kwok.x-k8s.io"  # KWOK fails a pod so labelled
FAIL_EXIT_CODE = "3"
QUEUED_RUN = "45s"  # how long KWOK keeps the two queued runs' pods running
# The runs the module adds beside the bundled ones
QUEUED_TFJOB = "queued-mnist"
LONG_JOBSET = "long-jobset"
FAILING = "failing-mnist"
JOB_KINDS = ("TFJob", "JobSet")
RESYNCS = 2  # how many of Argo CD's comparisons the drift test watches


def _add_runs(repo: GitOpsRepo) -> None:
    """The module's runs, made with tfgen's own commands, then given what the lab reads:
    how long KWOK keeps their pods running, or that one fails."""
    repo.tfgen("new", QUEUED_TFJOB, "--from", "distributed-mnist", "--queue", "gpu-team")
    repo.tfgen("new", LONG_JOBSET, "--from", "mnist-jobset", "--queue", "", "--priority", "")
    repo.tfgen("new", FAILING, "--from", "cpu-linear")

    def annotate(**annotations: str) -> Any:
        def change(doc: dict[str, Any]) -> None:
            doc["metadata"].setdefault("annotations", {}).update(annotations)
        return change
    # mnist-jobset (2 GPUs) and the queued TFJob (3) do not fit the queue's 3 GPUs together;
    # each runs long enough that the first still runs when Argo CD syncs the other (13 s
    # apart has been seen)
    repo.edit("mnist-jobset", annotate(**{DELAY: QUEUED_RUN}))
    repo.edit(QUEUED_TFJOB, annotate(**{DELAY: QUEUED_RUN}))
    repo.edit(LONG_JOBSET, annotate(**{DELAY: "1h"}))

    def failing(doc: dict[str, Any]) -> None:
        doc["metadata"].setdefault("labels", {})[FAIL] = "true"
        doc["metadata"].setdefault("annotations", {})[f"{FAIL}/exit-code"] = FAIL_EXIT_CODE
    repo.edit(FAILING, failing)


@pytest.fixture(scope="module")
def repo(lab: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitOpsRepo]:
    made_repo = make_repo(lab, tmp_path_factory.mktemp("gitops"), _add_runs)
    platform_set_up(lab, made_repo)
    try:
        yield made_repo
    finally:
        tear_down(lab, made_repo)


@pytest.fixture(scope="module")
def watch(repo: GitOpsRepo) -> Watch:
    return Watch(repo)


def _jobs(lab: Any, app: dict[str, Any]) -> list[dict[str, Any]]:
    """The live training jobs an Application made (a TFJob or JobSet each; a sweep's several)."""
    refs = [r for r in app["status"]["resources"] if r["kind"] in JOB_KINDS]
    assert refs, app["metadata"]["name"]
    return [json.loads(lab.kubectl("-n", r["namespace"], "get", f"{r['kind'].lower()}s",
                                   r["name"], "-o", "json", "--show-managed-fields").stdout)
            for r in refs]


def test_the_applicationset_makes_one_synced_application_per_experiment(
        repo: GitOpsRepo, watch: Watch) -> None:
    expected = experiment_names(repo)
    assert len(expected) >= 8, expected  # the bundled runs (a sweep's each) and the module's

    def all_synced(apps: dict[str, Any]) -> bool:
        return set(expected) <= set(apps) and all(
            sync_of(apps[name])[0] == "Synced" for name in expected)
    apps = watch.until("every experiment's Application Synced", all_synced)
    assert set(apps) == {*expected, "tfgen-bootstrap"}
    for name in expected:
        assert apps[name]["spec"]["project"] == "tfgen-experiments"


def test_the_volumes_are_bound_before_the_job_is_created(lab: Any, repo: GitOpsRepo,
                                                         watch: Watch) -> None:
    """Sync waves: Argo CD creates the jobs only once their PV and PVC are in (the PVC bound).
    A run on a claim of the platform's (cpu-linear's existingClaim) renders neither."""
    apps = watch.sample()
    checked = []
    for name in experiment_names(repo):
        resources = apps[name]["status"]["resources"]
        claims = [r for r in resources if r["kind"] == "PersistentVolumeClaim"]
        if not claims:
            continue
        [claim] = claims
        pvc = json.loads(lab.kubectl("-n", claim["namespace"], "get", "pvc", claim["name"],
                                     "-o", "json", "--show-managed-fields").stdout)
        bound_at = [m["time"] for m in pvc["metadata"]["managedFields"]
                    if m.get("subresource") == "status"]
        assert pvc["status"]["phase"] == "Bound" and bound_at, name
        for job in _jobs(lab, apps[name]):
            assert min(bound_at) <= job["metadata"]["creationTimestamp"], name
        checked.append(name)
    assert len(checked) >= 5, checked


def _workload_conditions(lab: Any, namespace: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Each Kueue Workload of the namespace, by the job it stands for: its conditions."""
    workloads = json.loads(lab.kubectl("-n", namespace, "get", "workloads.kueue.x-k8s.io",
                                       "-o", "json").stdout)["items"]
    return {w["metadata"]["ownerReferences"][0]["name"]:
            {c["type"]: c for c in w.get("status", {}).get("conditions", [])}
            for w in workloads}


def _waiting_reasons(lab: Any, namespace: str) -> dict[str, str]:
    """Why Kueue left a Workload of the namespace waiting, by the job it stands for: the
    message of its warning event. The event outlasts the waiting, which admission ends by
    rewriting the Workload's condition, so a sample taken later still finds it."""
    workloads = json.loads(lab.kubectl("-n", namespace, "get", "workloads.kueue.x-k8s.io",
                                       "-o", "json").stdout)["items"]
    owners = {w["metadata"]["uid"]: w["metadata"]["ownerReferences"][0]["name"]
              for w in workloads}
    events = json.loads(lab.kubectl(
        "-n", namespace, "get", "events", "-o", "json",
        "--field-selector", "involvedObject.kind=Workload,type=Warning").stdout)["items"]
    return {owners[e["involvedObject"]["uid"]]: e["message"] for e in events
            if e["involvedObject"].get("uid") in owners}


def test_kueue_admits_within_quota_and_argo_cd_does_not_fight_it(
        lab: Any, repo: GitOpsRepo, watch: Watch) -> None:
    """Two queued runs over the queue's quota: one admitted and run, the other waiting with
    Kueue's reason and admitted once the first is done; both Synced all along."""
    queued = {"mnist-jobset": "ml-team", QUEUED_TFJOB: "default"}

    def both_finished(apps: dict[str, Any]) -> bool:
        finished = 0
        for name, namespace in queued.items():
            conditions = _workload_conditions(lab, namespace).get(name, {})
            finished += (conditions.get("Finished", {}).get("status") == "True"
                         and sync_of(apps.get(name, {}))[1] == "Healthy")
        return finished == len(queued)
    apps = watch.until("both queued runs admitted in turn, finished and Healthy",
                       both_finished)
    # exactly one of them waited for the other, with Kueue's reason
    waited = {name: message for namespace in set(queued.values())
              for name, message in _waiting_reasons(lab, namespace).items() if name in queued}
    assert len(waited) == 1, waited
    [message] = waited.values()
    assert "insufficient unused quota" in message and "nvidia.com/gpu" in message, message
    for name in queued:
        assert sync_of(apps[name]) == ("Synced", "Healthy"), name
        assert not watch.failed_syncs(name), name
        assert not watch.out_of_sync_after_synced(name), (name, watch.seen[name])
        assert len(apps[name]["status"]["history"]) == 1, name  # one sync: the first
        [job] = _jobs(lab, apps[name])
        # what Kueue wrote at admission is Kueue's alone: Argo CD wrote none of it again
        managers = {m["manager"] for m in job["metadata"]["managedFields"]}
        assert argo.KUEUE_MANAGER in managers, (name, managers)
        _assert_only_kueue_added(job, repo, name)


def _rendered_job(repo: GitOpsRepo, name: str) -> dict[str, Any]:
    """The training job as tfgen renders it for the Application (helm, as Argo CD runs it)."""
    folder = repo.root / "argo" / "experiments" / name
    app = yaml.safe_load((folder / "app.yaml").read_text())
    objects = parse_manifest(template(repo.root / "charts" / "tfjob-experiment", name,
                                      app["namespace"], [folder / "values.yaml"]))
    [job] = [o.doc for o in objects if o.kind in JOB_KINDS]
    return job


def _pod_templates(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if job["kind"] == "TFJob":
        return {k: r["template"] for k, r in job["spec"]["tfReplicaSpecs"].items()}
    return {r["name"]: r["template"]["spec"]["template"] for r in job["spec"]["replicatedJobs"]}


def _assert_only_kueue_added(live: dict[str, Any], repo: GitOpsRepo, name: str) -> None:
    """Every pod-template label, annotation and node selector the live job has and Git does
    not is one tfgen's Applications ignore: found here, on the real Kueue."""
    rendered = _pod_templates(_rendered_job(repo, name))
    for role, pod in _pod_templates(live).items():
        want = rendered[role]
        added = {
            "labels": set(pod["metadata"].get("labels", {}))
            - set(want["metadata"].get("labels", {})),
            "annotations": set(pod["metadata"].get("annotations", {}))
            - set(want["metadata"].get("annotations", {})),
            "nodeSelector": set(pod["spec"].get("nodeSelector", {}))
            - set(want["spec"].get("nodeSelector", {})),
        }
        assert added["labels"] == set(argo.KUEUE_POD_LABELS), (name, role, added)
        assert added["annotations"] == set(argo.KUEUE_POD_ANNOTATIONS), (name, role, added)
        assert added["nodeSelector"] <= {"nvidia.com/gpu.present"}, (name, role, added)


def test_health_follows_the_job(lab: Any, repo: GitOpsRepo, watch: Watch) -> None:
    """tfgen's Lua health checks on the real Argo CD: Progressing while the long run runs,
    Healthy once KWOK completes a run's pods, Degraded with the job's message when a pod
    fails."""
    apps = watch.until(
        "the failing run Degraded",
        lambda apps: sync_of(apps.get(FAILING, {}))[1] == "Degraded")
    [health] = [r.get("health", {}) for r in apps[FAILING]["status"]["resources"]
                if r["kind"] in JOB_KINDS]
    assert health.get("status") == "Degraded", health
    # the TFJob's Failed condition, as the training operator words it
    assert health.get("message", "").startswith("Failed:") and '"Worker" replica(s) failed' \
        in health["message"], health
    assert sync_of(apps[LONG_JOBSET]) == ("Synced", "Progressing")
    assert sync_of(apps["distributed-mnist"]) == ("Synced", "Healthy")


def test_nothing_drifts_after_the_sync(repo: GitOpsRepo, watch: Watch) -> None:
    """After every Application synced once, none went OutOfSync again nor failed a sync:
    nothing a webhook or the API server defaults shows as a difference, on either runtime,
    queued or not."""
    watch.observe(RESYNCS * 10)  # the lab's Argo CD compares every 10 s
    for name in experiment_names(repo):
        assert not watch.failed_syncs(name), (name, watch.failed_syncs(name))
        assert not watch.out_of_sync_after_synced(name), (name, watch.seen[name])


# --- changes after the merge, each pushed as a merge would -----------------------------------

def _push_checked(repo: GitOpsRepo, message: str, gate: int = 0) -> tuple[str, str]:
    """Render, run the pull-request gate against the last pushed revision (`gate`: the exit
    code it must give), commit and push; the revision and the gate's output."""
    repo.tfgen("render")
    output = repo.tfgen("check", "--base", "HEAD", expect=gate)
    repo.commit(message)
    return repo.push(), output


def _synced_at(revision: str, name: str) -> Any:
    def ok(apps: dict[str, Any]) -> bool:
        status = apps.get(name, {}).get("status", {})
        return (status.get("sync", {}).get("status") == "Synced"
                and status.get("sync", {}).get("revision") == revision
                and status.get("operationState", {}).get("phase") == "Succeeded")
    return ok


def _get(lab: Any, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    done = lab.kubectl("-n", namespace, "get", kind, name, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def test_suspending_a_started_unqueued_run_in_git_suspends_it(lab: Any, repo: GitOpsRepo,
                                                              watch: Watch) -> None:
    """The gate takes it, Argo CD applies it: no ignore rule keeps Git's suspend from a run
    Kueue does not queue."""
    live = _get(lab, "ml-team", "jobsets", LONG_JOBSET)
    assert live is not None and not live["spec"].get("suspend")
    repo.edit(LONG_JOBSET, lambda doc: doc["spec"].setdefault("runPolicy", {})
              .update(suspend=True))
    revision, _ = _push_checked(repo, f"suspend {LONG_JOBSET}")
    watch.until(f"{LONG_JOBSET} synced at the suspending revision",
                _synced_at(revision, LONG_JOBSET))
    wait_for(lab, f"JobSet {LONG_JOBSET} suspended", ["-n", "ml-team", "jobset", LONG_JOBSET],
             lambda js: js["spec"].get("suspend") is True)


def test_retiring_prunes_the_job_and_keeps_the_data(lab: Any, repo: GitOpsRepo,
                                                    watch: Watch) -> None:
    name, namespace = "distributed-mnist", "default"
    volume = f"{namespace}-{name}-data"
    before = {kind: _get(lab, namespace, kind, obj)
              for kind, obj in (("pv", volume), ("pvc", f"{name}-data"))}
    assert all(before.values()) and _get(lab, namespace, "tfjobs", name)
    repo.tfgen("retire", name)
    revision, _ = _push_checked(repo, f"retire {name}")
    apps = watch.until(f"{name} synced at the retiring revision", _synced_at(revision, name))
    wait_for(lab, f"TFJob {name} pruned", ["-n", namespace, "tfjobs"],
             lambda listing: name not in {j["metadata"]["name"] for j in listing["items"]})
    for kind, old in before.items():
        assert old is not None
        now = _get(lab, namespace, kind, old["metadata"]["name"])
        assert now is not None, f"{kind} deleted"
        assert now["metadata"]["uid"] == old["metadata"]["uid"], kind  # the same, not remade
        assert now["status"]["phase"] == "Bound", kind
    assert sync_of(apps[name]) == ("Synced", "Healthy")


def test_a_rerun_runs_beside_its_source(lab: Any, repo: GitOpsRepo, watch: Watch) -> None:
    source, rerun = "mnist-jobset", "mnist-jobset-again"
    before = _get(lab, "ml-team", "jobsets", source)
    assert before is not None
    repo.tfgen("rerun", source, "--as", rerun)
    revision, _ = _push_checked(repo, f"rerun {source}")
    repo.refresh_applicationset()
    watch.until(f"{rerun} synced and done", lambda apps: _synced_at(revision, rerun)(apps)
                and sync_of(apps[rerun])[1] == "Healthy")
    after = _get(lab, "ml-team", "jobsets", source)
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    again = _get(lab, "ml-team", "jobsets", rerun)
    assert again is not None
    assert again["metadata"]["annotations"].get("tfgen.io/rerun-of") == source


def test_a_change_the_gate_refuses_is_refused_by_the_cluster(lab: Any, repo: GitOpsRepo,
                                                             watch: Watch) -> None:
    """Forced into Git past the gate, a change a started JobSet cannot take makes Argo CD's
    sync fail on the JobSet webhook: the gate's refusal is the cluster's."""
    repo.edit(LONG_JOBSET, lambda doc: doc["spec"]["args"].append("--epochs=2"))
    revision, refusal = _push_checked(repo, f"change {LONG_JOBSET}'s args", gate=1)
    assert "--epochs=2" in refusal and "start a new run" in refusal, refusal

    def refused(apps: dict[str, Any]) -> bool:
        operation = apps.get(LONG_JOBSET, {}).get("status", {}).get("operationState", {})
        return (operation.get("syncResult", {}).get("revision") == revision
                and "field is immutable" in operation.get("message", ""))
    apps = watch.until(f"{LONG_JOBSET}'s sync refused by the webhook", refused)
    message = apps[LONG_JOBSET]["status"]["operationState"]["message"]
    assert 'admission webhook "vjobset.kb.io" denied the request' in message, message
    assert sync_of(apps[LONG_JOBSET])[0] == "OutOfSync"
