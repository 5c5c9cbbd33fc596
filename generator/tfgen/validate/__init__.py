"""The validate stage: what people write (experiments/*.yaml, tfgen.yaml) -> validated Experiments.

`validate_repo` / `validate_paths` are the way in for every command; the modules behind them
load YAML strictly (`loader`, `nodes`, `document`), check it against the schema (`schema`,
`messages`), fill in defaults (`defaults`, `config`) and apply the rules a schema cannot express
(`rules`).
"""

from .config import RepoConfig, builtin_defaults_note, load_config, on_builtin_defaults
from .experiments import (
    Experiment,
    SpecVerdict,
    ValidationResult,
    Verdicts,
    repository_specs,
    validate_paths,
    validate_repo,
)

__all__ = [
    "Experiment",
    "RepoConfig",
    "ValidationResult",
    "SpecVerdict",
    "Verdicts",
    "builtin_defaults_note",
    "load_config",
    "on_builtin_defaults",
    "repository_specs",
    "validate_paths",
    "validate_repo",
]
