"""`tfgen init`: a new GitOps repository for a team, ready for its first pull request.

Everything the new repository holds comes from what tfgen ships (`repo/resources`): the chart
and the schemas as they are, `tfgen.yaml` from a template filled with the team's settings (each
checked against the config schema before anything is written), a README with the two commands
that work on a fresh machine (set up, check), this project's own pull-request workflow,
pre-commit hooks and argo/README.md, adapted to a repository that installs tfgen from the source
the platform team pinned (`source.py`) instead of holding its source. `argo/` is then rendered as
`tfgen render` would, so `tfgen check` passes on the first commit. Nothing is written when the
folder already is a tfgen repository, or when any file init would write is already there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jsonschema import Draft202012Validator

from .. import DISTRIBUTION
from ..errors import OptionsError
from ..problems import Problem
from ..render.generated import dump_yaml, quoted
from ..render.plan import plan_repository
from ..render.write import apply_plan, blocked_paths, write_new_files
from ..repo import cache, layout, owned, resources, runtimes
from ..repo.resources import CONFIG_SCHEMA, EXPERIMENT_SCHEMA
from ..repo.yamlread import SafeLoader
from ..validate.config.load import builtin_data
from ..validate.config.rules import config_problems
from ..validate.schema.defaults import apply_defaults
from ..validate.schema.validator import inlined_schema, schema_problems
from ..validate.yaml.document import pointer_text
from ..validate.yaml.loader import load_text
from . import source as pinned
from .settings import NODE_TYPE_FORM, InitSettings, SettingsError, first_cluster

INIT_TEMPLATES = "init"  # the folder of init's templates inside tfgen's templates
WORKFLOW_FILE = ".github/workflows/pr.yaml"
PRE_COMMIT_FILE = ".pre-commit-config.yaml"
README = "README.md"
EXPERIMENTS_README = f"{layout.EXPERIMENTS_DIR}/README.md"
ARGO_README = f"{layout.ARGO_DIR}/README.md"


# The tfgen.yaml field each setting (and `tfgen init` flag) fills, to name the flag in errors.
SETTING_FIELDS = {
    "$.argocd.repoURL": "repo_url",
    "$.argocd.namespaces": "namespaces",
    "$.defaults.metadata.namespace": "namespaces",
    "$.defaults.spec.storage.nas.server": "nas_server",
    "$.argocd.namespace": "argocd_namespace",
    "$.argocd.version": "argocd_version",
    "$.argocd.targetRevision": "target_revision",
    "$.clusters[0].name": "cluster",
    "$.clusters[0].destination": "destination",
    "$.clusters[0].kubernetesVersion": "kubernetes_version",
    "$.clusters[0].runtimes": "cluster_runtimes",
    "$.clusters[0].context": "context",
    "$.clusters[0].nodeTypes": "node_types",
}
# The fields of each namespace's `policy` entry each setting fills.
POLICY_FIELDS = {"runtime": "runtime", "queue": "queue", "queues": "queue",
                 "priority": "priority", "priorities": "priority"}


def _setting_of(pointer: str, namespaces: list[str]) -> str:
    """The setting behind a tfgen.yaml pointer (`$.argocd.namespaces[1]` -> namespaces,
    `$.policy.ml.queues[0]` -> queue)."""
    fields = {**SETTING_FIELDS, **{pointer_text(("policy", namespace, key)): setting
                                   for namespace in namespaces
                                   for key, setting in POLICY_FIELDS.items()}}
    fields.update({pointer_text(("policy", namespace)): "namespaces" for namespace in namespaces})
    for prefix in sorted(fields, key=len, reverse=True):  # a policy's field before its namespace
        setting = fields[prefix]
        if pointer == prefix or pointer.startswith((prefix + ".", prefix + "[")):
            return setting
    return ""


@dataclass
class InitResult:
    """The repository written: its root and every file, repository-relative, in order."""

    root: Path
    written: list[str]
    warnings: list[str] = field(default_factory=list)  # what the team should see to now


def defaults() -> InitSettings:
    """What `--yes` takes and what the prompts offer: the config schema's defaults."""
    data = builtin_data()
    argocd = data["argocd"]
    installed = pinned.installed_source()
    return InitSettings(
        repo_url=argocd["repoURL"], namespaces=list(argocd["namespaces"]),
        kubernetes_version=data["kubernetesVersion"], argocd_namespace=argocd["namespace"],
        argocd_version=argocd.get("version"), target_revision=argocd["targetRevision"],
        tfgen_source=installed.url if installed else None, runtime=runtimes.DEFAULT.name)


def _defaulted(settings: InitSettings) -> dict[str, Any]:
    """The settings that have a default (the config schema's, `defaults()`), each as given or
    else its default, by the names tfgen.yaml's template uses."""
    base = defaults()
    return {
        "repo_url": settings.repo_url or base.repo_url,
        "namespaces": settings.namespaces or base.namespaces,
        "kubernetes_version": settings.kubernetes_version or base.kubernetes_version,
        "argocd_namespace": settings.argocd_namespace or base.argocd_namespace,
        "argocd_version": settings.argocd_version or base.argocd_version,
        "target_revision": settings.target_revision or base.target_revision,
        "runtime": _runtime(settings, base),
    }


def _runtime(settings: InitSettings, base: InitSettings) -> str:
    """The namespaces' runtime: as given, else the one Kueue admits without configuring it for
    queued runs; one the first cluster runs (else every spec would be refused there)."""
    has = settings.cluster_runtimes or [runtime.name for runtime in runtimes.RUNTIMES]
    if settings.runtime is not None:
        if settings.runtime not in has:
            raise SettingsError(f"these settings make an invalid tfgen.yaml:\nruntime: "
                                f"{settings.runtime} is not one the cluster runs (its runtimes: "
                                f"{', '.join(has)}), and every spec would be refused",
                                ["runtime", "cluster_runtimes"])
        return settings.runtime
    wanted = runtimes.QUEUED_DEFAULT.name if settings.queue else str(base.runtime)
    return wanted if wanted in has else has[0]


def config_text(settings: InitSettings) -> str:
    """tfgen.yaml for these settings; OptionsError naming each value the schema refuses."""
    values: dict[str, Any] = {
        **_defaulted(settings),
        "nas_server": settings.nas_server,
        "project": builtin_data()["argocd"]["project"],
        "runtime_names": " or ".join(runtime.name for runtime in runtimes.RUNTIMES),
        "queue": settings.queue or None,
        "priority": settings.priority or None,
        "node_type_form": NODE_TYPE_FORM,
    }
    values["cluster"] = first_cluster(settings, values["kubernetes_version"])
    if settings.nas_server is not None:
        _check_nas_server(settings.nas_server)
    if values["priority"] and not values["queue"]:
        # validate refuses a priority without a queue on every spec: say it once, here
        raise SettingsError("these settings make an invalid tfgen.yaml:\npriority: a Kueue "
                            "WorkloadPriorityClass orders the runs of a queue, and no queue is "
                            "given (give the queue too, or no priority)", ["priority"])
    text = _environment().get_template("tfgen.yaml.j2").render(**values)
    document = load_text(text, layout.CONFIG_NAME)
    problems = schema_problems(document, document.data, CONFIG_SCHEMA)
    problems = problems or config_problems(document, apply_defaults(document.data,
                                                                    CONFIG_SCHEMA))
    if problems:
        raise _refused(problems, values["namespaces"])
    return text


def _refused(problems: list[Problem], namespaces: list[str]) -> SettingsError:
    """One line per setting and message: --namespace fills three fields of tfgen.yaml (the
    AppProject's list, the specs' default, a policy entry's key), each refused alike."""
    keys = {pointer_text(("policy", namespace)) for namespace in namespaces}
    problems = [p for p in problems if p.pointer not in keys] or problems
    lines = list(dict.fromkeys(
        f"{_setting_of(p.pointer, namespaces) or 'tfgen.yaml'}: {p.message}"
        + (f" ({p.hint})" if p.hint else "") for p in problems))
    return SettingsError("these settings make an invalid tfgen.yaml:\n" + "\n".join(lines),
                         sorted({_setting_of(p.pointer, namespaces) for p in problems} - {""}))


def _check_nas_server(server: str) -> None:
    """The NAS server is a spec default, which the config schema leaves to the spec schema (it
    is checked under every spec): check it now, or a new repository would fail its first spec."""
    spec = inlined_schema(EXPERIMENT_SCHEMA)["properties"]["spec"]
    rule = spec["properties"]["storage"]["properties"]["nas"]["properties"]["server"]
    if not Draft202012Validator(rule).is_valid(server):
        raise SettingsError(f"these settings make an invalid tfgen.yaml:\nnas_server: "
                            f"{quoted(server)} is not valid: it must be a host name such as "
                            f"{rule['examples'][0]}", ["nas_server"])


def gitattributes() -> str:
    """`.gitattributes`: every generated file LF on every checkout, since render --check and
    check compare them byte for byte (a Windows checkout with core.autocrlf would fail both)."""
    generated = [f"{layout.ARGO_DIR}/**", layout.CODEOWNERS_FILE]
    return ("# tfgen compares generated files byte for byte: LF on every checkout, whatever\n"
            "# core.autocrlf says (a CRLF checkout would fail `tfgen check` on each of them).\n"
            "* text=auto eol=lf\n" + "".join(f"{path} text eol=lf\n" for path in generated))


def gitignore() -> str:
    """`.gitignore`: tfgen's local files, which must never reach the repository."""
    return "\n".join([
        cache.WHAT_IT_IS,
        f"{cache.CACHE_DIRNAME}/",
        "# what a killed `tfgen render` can leave behind (the next render removes both)",
        f".*{layout.TEMP_MARK}*",
        layout.RENDER_LOCK,
        "# `tfgen run-local`'s data folders",
        f"{layout.LOCAL_RUN_DIR}/",
        "# the local environment and the helm that `tfgen install-helm` installs",
        ".venv/",
        ".tools/",
        "",
    ])


def pre_commit_config() -> str:
    """`.pre-commit-config.yaml`: tfgen's published hooks, run by the tfgen the README's set-up
    installed into the repository's environment (no activated environment needed)."""
    hooks = yaml.load(_template_text("pre-commit-hooks.yaml"), Loader=SafeLoader)
    local = [{**hook, "language": "system", "entry": pinned.in_venv(hook["entry"])}
             for hook in hooks]
    return ("# pre-commit hooks (see pre-commit.com): tfgen's own, offline and without helm,\n"
            f"# run by the tfgen in {pinned.VENV}/ (README.md's set-up line); `tfgen check` in "
            "the\n# pull-request workflow is the gate.\n"
            + dump_yaml({"repos": [{"repo": "local", "hooks": local}]}))


# How this project's workflow becomes a team repository's: tfgen is installed from the pinned
# source rather than built from a checkout, helm by `tfgen install-helm`. Each edit must apply.
def _workflow_edits(source: pinned.TfgenSource) -> list[tuple[str, str]]:
    env = "".join(f"  {name}: {quoted(value)}\n"
                  for name, value in pinned.workflow_environment(source).items())
    steps = "".join(f"          {line}\n" for line in pinned.workflow_setup_steps())
    return [
        ("helm comes from `make setup`", "helm comes from `tfgen install-helm`"),
        ("\njobs:\n",
         f"\n# Where CI installs tfgen from: the source pinned at `tfgen init` "
         f"({pinned.FLAG}).\n# To upgrade, change it here and in README.md's set-up line.\n"
         f"env:\n{env}\njobs:\n"),
        ("        run: make setup\n", f"        run: |\n{steps}"),
    ]


def workflow(source: pinned.TfgenSource) -> str:
    """The pull-request workflow of this project, adapted (see _workflow_edits)."""
    text = _template_text("pr-workflow.yaml")
    for old, new in _workflow_edits(source):
        if old not in text:  # the workflow changed under us: a bug, caught by the tests
            raise RuntimeError(f"init: the pull-request workflow no longer holds {old!r}")
        text = text.replace(old, new)
    return text


def readme(source: pinned.TfgenSource) -> str:
    """The repository's README: the set-up and check commands, and where to read on."""
    words = (f"the Git repository at `{source.url.rpartition('@')[2]}`" if source.is_git
             else f"the package index {source.url}")
    return _environment().get_template("README.md.j2").render(
        setup_line=pinned.setup_line(source), check_line=pinned.check_line(),
        distribution=DISTRIBUTION, source_words=words)


def tfgen_source(settings: InitSettings) -> pinned.TfgenSource:
    """The pinned source of the settings, else where this tfgen came from (a Git commit);
    SettingsError naming --tfgen-source when there is neither."""
    if settings.tfgen_source:
        try:
            return pinned.parse_source(settings.tfgen_source)
        except OptionsError as exc:
            raise SettingsError(f"these settings make an invalid workflow:\ntfgen_source: "
                                f"{exc.message}", ["tfgen_source"]) from None
    found = pinned.installed_source()
    if found is None:
        raise SettingsError(f"these settings make an invalid workflow:\ntfgen_source: needed: "
                            "where CI installs tfgen from (this tfgen was not installed from a "
                            f"Git commit to offer as the default), e.g. {pinned.EXAMPLES[0]} or "
                            f"{pinned.EXAMPLES[1]}", ["tfgen_source"])
    return found


def _settled(settings: InitSettings) -> tuple[str, pinned.TfgenSource]:
    """tfgen.yaml's text and the pinned source; one SettingsError naming every setting that
    either refuses (tfgen.yaml's first, then the source)."""
    refused: list[SettingsError] = []
    config, source = "", None
    try:
        config = config_text(settings)
    except SettingsError as exc:
        refused.append(exc)
    try:
        source = tfgen_source(settings)
    except SettingsError as exc:
        refused.append(exc)
    if refused:
        raise SettingsError("\n".join(exc.message for exc in refused),
                            [name for exc in refused for name in exc.settings])
    assert source is not None
    return config, source


def repository_files(settings: InitSettings) -> dict[str, str]:
    """Every file of a new repository except argo/ (rendered afterwards), by relative path."""
    config, source = _settled(settings)
    files = {
        layout.CONFIG_NAME: config,
        README: readme(source),
        ".gitattributes": gitattributes(),
        ".gitignore": gitignore(),
        PRE_COMMIT_FILE: pre_commit_config(),
        WORKFLOW_FILE: workflow(source),
        EXPERIMENTS_README: _template_text("experiments-README.md"),
        ARGO_README: _template_text("argo-README.md"),
    }
    files.update(owned.owned_files())
    return files


def init_repository(target: Path, settings: InitSettings) -> InitResult:
    """Write a new tfgen repository into `target` (created if missing) and render its argo/.

    OptionsError (exit 2), before anything is written, when `target` already holds a
    tfgen.yaml, is not a folder, or holds any file init would write.
    """
    _check_target(target)
    files = repository_files(settings)
    _check_free(target, files)
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    write_new_files(root, files)
    plan, problems = plan_repository(root)
    if plan is None:  # pragma: no cover - a repository without experiments always plans
        raise RuntimeError(f"init: the new repository does not render: {problems}")
    applied = apply_plan(plan)
    note = tfgen_source(settings).local_note
    return InitResult(root=root, written=sorted([*files, *applied.written]),
                      warnings=[note] if note else [])


def _check_target(target: Path) -> None:
    """OptionsError when `target` is no folder, or a tfgen repository already, or lies inside
    one (whose specs and generated files the new one would upset)."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise OptionsError(f"{_said(target)} is not a folder")
    if (target / layout.CONFIG_NAME).exists() or (target / layout.CONFIG_NAME).is_symlink():
        raise OptionsError(f"{_said(target)} already holds {layout.CONFIG_NAME}: it is a "
                           "tfgen repository (run `tfgen render` or `tfgen check` there)")
    outer = layout.find_root([target])
    if outer is not None:
        raise OptionsError(f"{_said(target)} is inside the tfgen repository "
                           f"{_said(outer)}: its specs and generated files would be "
                           "foreign files there, and the outer repository would stop "
                           "validating; start the new one in a folder of its own")


def _check_free(target: Path, files: dict[str, str]) -> None:
    """OptionsError when any of `files` is in `target` already, or something stands where
    one of them is to be written."""
    taken = sorted(rel for rel in files if (target / rel).exists() or (target / rel).is_symlink())
    if taken:
        raise OptionsError(f"{_said(target)} already holds {', '.join(taken)}: tfgen init "
                           "writes only into a folder without them (move them away first)")
    blocked = blocked_paths(target, files) if target.exists() else []
    if blocked:
        raise OptionsError(f"nothing written: {'; '.join(blocked)} (tfgen init writes only "
                           "into real folders; move them away first)")


def _said(path: Path) -> str:
    """A path as init's messages show it: relative to the working directory, never absolute
    (`..` where it lies elsewhere)."""
    return os.path.relpath(path)


def _template_text(name: str) -> str:
    return (resources.templates_dir() / INIT_TEMPLATES / name).read_text(encoding="utf-8")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(resources.templates_dir() / INIT_TEMPLATES),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    env.filters["q"] = quoted
    return env
