"""The lifecycle stage: an experiment's life in Git, from its first spec to its removal.

`new_experiment` writes a spec from options or from an existing one (`tfgen new`, `tfgen
rerun`), `list_experiments` lists the repository's runs (`tfgen list`), `retire_experiment`
retires one or removes it (`tfgen retire`). Specs are edited as text at the positions their
YAML nodes give (`edit`), so comments and layout survive.
"""

from .copy import Change
from .listing import COLUMNS, Row, list_experiments, quota_lines, table
from .new import Created, NewOptions, Roles, new_experiment
from .retire import REMOVAL_DOC, Retired, delete_command, retire_experiment, retire_finished

__all__ = ["COLUMNS", "REMOVAL_DOC", "Change", "Created", "NewOptions", "Retired", "Roles",
           "Row", "delete_command", "list_experiments", "new_experiment", "quota_lines",
           "retire_experiment", "retire_finished", "table"]
