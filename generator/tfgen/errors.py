"""The one error family of tfgen.

Every error a user can cause derives from `TfgenError` and carries a message that is ready to
print. The CLI turns these into one red line and exit code 1 (2 for `EnvironmentProblem` and
`OptionsError`); `ProblemsFound` carries a list of problems that the CLI prints as the command's
result. An OSError that reaches the CLI is the machine refusing something (permissions, a full
disk, a program it cannot start): one line naming the file, exit 2. Any other exception is a
bug in tfgen and keeps its traceback.
"""

from __future__ import annotations

from typing import Any


class TfgenError(Exception):
    """A problem caused by input or environment, explained in `message`."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(TfgenError):
    """A file the user wrote cannot be read or does not make sense."""


class EnvironmentProblem(TfgenError):
    """Something tfgen needs from the machine is missing (helm, git, ...): exit code 2."""

    exit_code = 2


class OptionsError(TfgenError):
    """Options that contradict each other (`--changed` without `--base`): exit code 2, as for
    any other usage error."""

    exit_code = 2


class HelmError(TfgenError):
    """`helm` ran and failed, typically a `fail`/`required` in the chart for bad values."""


class ProblemsFound(InputError):
    """The input has problems (`problems`, a list of `Problem`) that stop the command; the CLI
    prints them as its result and `message` as the summary, exit code 1."""

    def __init__(self, problems: list[Any], message: str) -> None:
        super().__init__(message)
        self.problems = list(problems)
