"""Where a team repository gets tfgen: the source the platform team pins at `tfgen init`.

Either the tfgen Git repository at a commit or tag (`git+https://host/org/tfgen.git@v0.2.0`,
pip's direct-reference form) or the platform's own package index (`https://pypi.example.com/
simple/`, from which this version of the distribution is installed). Never the bare name from
the public index, where `tfgen` is somebody else's project: the distribution is `DISTRIBUTION`,
and a repository's CI installs exactly what was pinned here. The same pin makes the README's
set-up line and the pull-request workflow's (one function each, so they cannot disagree).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from importlib import metadata

from .. import DISTRIBUTION, __version__
from ..errors import OptionsError

FLAG = "--tfgen-source"
# URL characters a shell and a YAML scalar take as they are: no quotes, spaces, `$` or `` ` ``.
_URL = r"[A-Za-z0-9._~:/%+=,-]+"
# pip's VCS form; the part after the last `@` is the pinned commit or tag (git's ref rules,
# never starting with `-`), an `@` before it ssh's user (`git@host`). An index URL has no `@`
# at all: credentials never go into a workflow.
_GIT = re.compile(r"git\+(?:https|ssh|file)://[A-Za-z0-9._~:/%+=,@-]+@"
                  r"(?P<ref>[A-Za-z0-9_][A-Za-z0-9._/-]*)")
_INDEX = re.compile(rf"(?:https|file)://{_URL}")
EXAMPLES = ("git+https://github.com/acme/tfgen.git@v0.1.0", "https://pypi.acme.example/simple/")


@dataclass(frozen=True)
class TfgenSource:
    """A pinned source of tfgen: a Git URL at a ref, or a package index URL."""

    url: str

    @property
    def is_git(self) -> bool:
        return self.url.startswith("git+")

    @property
    def requirement(self) -> str:
        """What pip installs: the Git URL itself (pip reads the name from what it builds; the
        `name @ url` form is refused by some pips for a `git+file:` URL), or this version of
        the distribution from the index."""
        if self.is_git:
            return self.url
        return f"{DISTRIBUTION}=={__version__}"

    @property
    def local_note(self) -> str | None:
        """What to say of a source on this machine's disk (`file://`): CI cannot install it."""
        if not self.url.startswith(("git+file://", "file://")):
            return None
        return (f"{FLAG} {self.url} is a path on this machine: a CI runner cannot reach it, "
                "so the pull-request workflow will fail to install tfgen; pin a URL the runner "
                f"can reach (e.g. {EXAMPLES[0]} or {EXAMPLES[1]}) in .github/workflows/pr.yaml "
                "and README.md")

    @property
    def index_url(self) -> str | None:
        return None if self.is_git else self.url

    def install_arguments(self) -> list[str]:
        """pip install's arguments for this source."""
        index = ["--index-url", self.url] if self.index_url else []
        return [*index, self.requirement]


def parse_source(text: str) -> TfgenSource:
    """`text` as a pinned source; OptionsError saying both forms when it is neither."""
    text = text.strip()
    if _GIT.fullmatch(text) or (_INDEX.fullmatch(text) and "@" not in text):
        return TfgenSource(text)
    raise OptionsError(
        f"{text!r} is not a pinned source of tfgen: give the tfgen Git repository at a "
        f"commit or tag ({EXAMPLES[0]}) or your package index ({EXAMPLES[1]}); plain http and "
        "a Git URL without @<commit or tag> are refused (CI must install what you pinned)")


def installed_source() -> TfgenSource | None:
    """Where this tfgen was installed from, when that is a Git repository at a commit (pip
    records it, PEP 610): the default a platform team most likely wants to pin."""
    try:
        recorded = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        origin = json.loads(recorded or "{}")
    except ValueError:
        return None
    vcs = origin.get("vcs_info") if isinstance(origin, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git" or not vcs.get("commit_id"):
        return None
    url = f"git+{origin.get('url')}@{vcs['commit_id']}"
    return TfgenSource(url) if _GIT.fullmatch(url) else None


# The team repository's local environment and where its tools go (both in its .gitignore).
VENV = ".venv"


def in_venv(command: str) -> str:
    """`command` (`tfgen check`) run from the repository's environment: it works without
    activating it, from a shell, a Git hook or CI."""
    return f"{VENV}/bin/{command}"


def setup_line(source: TfgenSource) -> str:
    """The README's one set-up command: a virtual environment with tfgen from the pinned
    source, then the pinned helm (`tfgen install-helm`)."""
    install = " ".join(shlex.quote(arg) for arg in source.install_arguments())
    return (f"python3 -m venv {VENV} && {in_venv('python')} -m pip install {install} && "
            f"{in_venv('tfgen install-helm')}")


def check_line() -> str:
    """The README's check command, the pull-request gate as CI runs it (without --base)."""
    return in_venv("tfgen check")


def workflow_environment(source: TfgenSource) -> dict[str, str]:
    """The pull-request workflow's variables for the pin: the requirement, and pip's own
    PIP_INDEX_URL for an index (so that helm's wheels come from it too)."""
    env = {"TFGEN_REQUIREMENT": source.requirement}
    if source.index_url:
        env["PIP_INDEX_URL"] = source.index_url
    return env


def workflow_setup_steps() -> list[str]:
    """The workflow's set-up lines, reading the pin from the workflow's variables."""
    return [f"python3 -m venv {VENV}",
            f'{in_venv("python")} -m pip install "$TFGEN_REQUIREMENT"',
            in_venv("tfgen install-helm")]
