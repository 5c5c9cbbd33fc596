"""An imported spec as a file: its text, its validation, and writing it without overwriting.

The text opens with the schema modeline (editors complete and check as people type) and is
written by tfgen's canonical YAML writer, so Helm, Argo CD and tfgen read it alike. It is
validated as `tfgen validate` would validate it at `experiments/<name>.yaml` (this repository's
tfgen.yaml, its other specs) before anything is written; then it is written to a temporary
file, synced, and linked to its name, which fails if a spec of that name exists: a spec is
never overwritten and never half written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import OptionsError
from ..problems import Problem, errors_of
from ..render.durable import write_temp
from ..render.generated import dump_yaml
from ..render.write import blocked_paths
from ..repo import layout
from ..validate.config.load import RepoConfig
from ..validate.experiments import across_problems, check_file
from ..validate.yaml.loader import LoadError, read_file
from .manifests import ManifestError

MODELINE = "# yaml-language-server: $schema=../schemas/experiment.schema.json\n"


def spec_text(spec: dict[str, Any], sources: list[str]) -> str:
    """The spec file: modeline, where it came from, the spec."""
    # A file name with a line break (or any character YAML ends a comment at) would add
    # lines to the spec: such a name is written JSON-quoted, in ASCII.
    said = ", ".join(s if s.isascii() and s.isprintable() else json.dumps(s)
                     for s in sorted(set(sources)))
    return f"{MODELINE}# Imported by tfgen import from {said}.\n{dump_yaml(spec)}"


def target(config: RepoConfig, name: str) -> Path:
    return config.experiments_dir / f"{name}{layout.SPEC_SUFFIX}"


def problems_of(config: RepoConfig, name: str, text: str) -> list[Problem]:
    """What `tfgen validate` would say of `text` as experiments/<name>.yaml, next to the
    repository's other specs (its warnings included)."""
    path = target(config, name)
    shown = layout.shown(path, config.root)
    checked, problems = check_file(path, shown, text.encode("utf-8"), config)
    if checked is None or errors_of(problems):
        return problems
    others = []
    directory = config.experiments_dir
    for other in layout.spec_files(directory) if directory.is_dir() else []:
        if other == path:
            continue  # the spec being imported: its own name is no duplicate
        try:
            raw = read_file(other, layout.shown(other, config.root), config.root)
        except LoadError:
            continue  # its own problem, for `tfgen validate` to report
        item, _ = check_file(other, layout.shown(other, config.root), raw, config)
        if item is not None:
            others.append(item)
    return problems + [p for p in across_problems([checked, *others], config)
                       if p.path == shown]


def refuse_blocked(config: RepoConfig, names: list[str]) -> None:
    """OptionsError, before anything is written, when a link or a file stands where the specs
    of `names` (experiments/<name>.yaml) or their folder must go."""
    rels = [layout.relative(config.root, target(config, name)) for name in names]
    blocked = blocked_paths(config.root, rels)
    if blocked:
        raise OptionsError(f"nothing written: {'; '.join(blocked)} (specs are written only "
                           "into the repository's real experiments/ folder)")


def write_new(path: Path, text: str) -> None:
    """Write `text` at `path` atomically; ManifestError when a file is there already. The
    caller has refused what stands in the way (`refuse_blocked`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = write_temp(path, text.encode("utf-8"))
    try:
        os.link(temp, path)  # fails when the name exists, unlike a rename
    except FileExistsError:
        raise ManifestError(f"{layout.EXPERIMENTS_DIR}/{path.name}: exists already; tfgen "
                            "import never overwrites a "
                            "spec (choose another --name, or remove the file)") from None
    finally:
        os.unlink(temp)
