"""The validate stage: what people write (experiments/*.yaml, tfgen.yaml) -> validated Experiments.

`validate_repo` / `validate_paths` are the way in for every command; the folders behind them
load YAML strictly (`yaml/`), check it against the schema and fill in its defaults (`schema/`),
read tfgen.yaml (`config/`), and apply the rules a schema cannot express: on one experiment
(`experiment/` as the rules read it, `rules/`), per namespace (`policy/`) and across
experiments (`across/`).
"""

from .config.clusters import Cluster
from .config.load import (
    RepoConfig,
    builtin_config,
    builtin_defaults_note,
    experiment_cluster,
    load_config,
    on_builtin_defaults,
)
from .experiments import repository_specs, validate_paths, validate_repo
from .result import Experiment, SpecVerdict, ValidationResult, Verdicts

__all__ = [
    "Cluster",
    "Experiment",
    "RepoConfig",
    "ValidationResult",
    "SpecVerdict",
    "Verdicts",
    "builtin_config",
    "builtin_defaults_note",
    "experiment_cluster",
    "load_config",
    "on_builtin_defaults",
    "repository_specs",
    "validate_paths",
    "validate_repo",
]
