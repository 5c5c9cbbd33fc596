"""Image references, read as the container runtime reads them, and registry policy prefixes.

A reference is `[host[:port]/]path[:tag][@digest]` (the distribution reference grammar that
containerd and Docker parse with). The first '/'-separated part is a registry host only when it
has a '.' or a ':', is `localhost`, or holds an upper-case letter; otherwise the reference is a
Docker Hub path, and a one-part Docker Hub path lives under `library/`. Docker Hub answers to
several names (`docker.io`, `index.docker.io`, `registry-1.docker.io`): they are one registry.

A registry policy entry (tfgen.yaml `policy.<namespace>.registries`) is a registry host, or a
host and a repository path prefix; it admits an image when the host is the same registry and
the path starts with the entry's whole path parts, never on a string prefix
(`registry.example.com` does not admit `registry.example.com.evil.io/x`).

Every refusal names the offending character and its position (1-based), not the grammar.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = frozenset({DOCKER_HUB, "index.docker.io", "registry-1.docker.io"})
OFFICIAL_NAMESPACE = "library"  # where a one-part Docker Hub path lives
LATEST = "latest"  # the tag a runtime pulls when none is given
MAX_PATH = 255  # the whole repository path, host included (distribution's limit)
MAX_TAG = 128
DIGESTS = {"sha256": 64, "sha512": 128}

_PATH_CHARS = frozenset(string.ascii_lowercase + string.digits + "._-")
_HOST_CHARS = frozenset(string.ascii_letters + string.digits + "-.")
_TAG_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*\Z")
_HOST_COMPONENT = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?\Z")
PATH_RULE = ("lowercase letters and digits, with '.', '_', '__' or '-' only between them, "
             "parts separated by '/'")


class ImageError(ValueError):
    """A reference (or a policy entry) that is not one: `message` names the character and its
    position."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Image:
    """One reference as the runtime reads it: the registry (Docker Hub's aliases as
    `docker.io`), the repository path (with `library/` where the runtime adds it), the tag and
    the digest as written ("" when absent)."""

    registry: str
    path: str
    tag: str
    digest: str

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.path}"

    @property
    def full(self) -> str:
        """The reference spelled out: registry, path, tag (`latest` when neither a tag nor a
        digest is given) and digest."""
        tag = self.tag or ("" if self.digest else LATEST)
        return self.name + (f":{tag}" if tag else "") + (f"@{self.digest}" if self.digest else "")

    @property
    def floating(self) -> bool:
        """Neither a digest nor a tag other than `latest`: what the runtime pulls may change
        under the same spec."""
        return not self.digest and self.tag in ("", LATEST)


@dataclass(frozen=True)
class Prefix:
    """A registry policy entry: a registry and the leading parts of a repository path."""

    registry: str
    parts: tuple[str, ...]

    def admits(self, image: Image) -> bool:
        return (image.registry.lower() == self.registry.lower()
                and tuple(image.path.split("/")[:len(self.parts)]) == self.parts)

    def __str__(self) -> str:
        return "/".join((self.registry, *self.parts)) + ("/" if self.parts else "")


def canonical_registry(host: str) -> str:
    return DOCKER_HUB if host.lower() in DOCKER_HUB_ALIASES else host


def _is_host(first: str) -> bool:
    return "." in first or ":" in first or first == "localhost" or first.lower() != first


def _at(char: str, position: int) -> str:
    return f"character {char!r} at position {position}"


def _check_host(host: str, start: int) -> None:
    """`host[:port]`, starting at 1-based `start` of the whole text."""
    name, colon, port = host.partition(":")
    for offset, char in enumerate(name):
        if char not in _HOST_CHARS:
            raise ImageError(f"{_at(char, start + offset)} is not allowed in a registry host "
                             "(letters, digits, '-' and '.')")
    position = start
    for part in name.split("."):
        if not _HOST_COMPONENT.match(part):
            raise ImageError(f"the registry host's part {part!r} at position {position} must "
                             "start and end with a letter or digit")
        position += len(part) + 1
    if colon and not (port.isascii() and port.isdigit()):
        raise ImageError(f"the registry port {port!r} at position {start + len(name) + 1} "
                         "must be digits")


def _check_path(path: str, start: int) -> None:
    """The repository path's '/'-separated parts, starting at 1-based `start`."""
    position = start
    for part in path.split("/"):
        for offset, char in enumerate(part):
            if char not in _PATH_CHARS:
                hint = " (upper case is not allowed)" if char.isupper() else ""
                raise ImageError(f"{_at(char, position + offset)} is not allowed in the "
                                 f"repository path{hint}: {PATH_RULE}")
        if not part:
            raise ImageError(f"empty repository path part at position {position}: {PATH_RULE}")
        if not _PATH_COMPONENT.match(part):
            raise ImageError(f"the path part {part!r} at position {position} has a separator "
                             f"at its start or end, or two in a row: {PATH_RULE}")
        position += len(part) + 1


def _check_tag(tag: str, start: int) -> None:
    if not tag:
        raise ImageError(f"empty tag after ':' at position {start - 1}")
    for offset, char in enumerate(tag):
        if char not in _TAG_CHARS or (offset == 0 and char in ".-"):
            raise ImageError(f"{_at(char, start + offset)} is not allowed in the tag (letters, "
                             "digits, '_', '.' and '-', not starting with '.' or '-')")
    if len(tag) > MAX_TAG:
        raise ImageError(f"the tag at position {start} is {len(tag)} characters long; at most "
                         f"{MAX_TAG}")


def _check_digest(digest: str, start: int) -> None:
    algorithm, colon, hexa = digest.partition(":")
    size = DIGESTS.get(algorithm)
    if not colon or size is None:
        raise ImageError(f"the digest at position {start} must be sha256:<64 hex digits> or "
                         "sha512:<128 hex digits>")
    for offset, char in enumerate(hexa):
        if char not in "0123456789abcdef":
            raise ImageError(f"{_at(char, start + len(algorithm) + 1 + offset)} is not a "
                             "lower-case hexadecimal digit of the digest")
    if len(hexa) != size:
        raise ImageError(f"the {algorithm} digest at position {start} has {len(hexa)} hex "
                         f"digits; it must have {size}")


def _split(text: str) -> tuple[str, str, str | None, str | None]:
    """(host, path, tag, digest) as written (None: no ':' or '@'), without checking them."""
    name, at, digest = text.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    tag = None
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
    first, sep, rest = name.partition("/")
    if sep and _is_host(first):
        return first, rest, tag, digest if at else None
    return "", name, tag, digest if at else None


# what no reference holds: anything outside printable ASCII, and the space
_STRAY = re.compile(r"[^!-~]")


def _first_stray(text: str) -> int | None:
    """The index of the first character no reference holds (outside printable ASCII, or a
    space), or None."""
    found = _STRAY.search(text)
    return found.start() if found else None


def _check_text(text: str) -> None:
    """What makes `text` no reference before its parts are read: nothing at all, a stray
    character, a URL scheme."""
    if not text:
        raise ImageError("an image reference cannot be empty")
    stray = _first_stray(text)
    if stray is not None:
        raise ImageError(f"{_at(text[stray], stray + 1)} is not allowed in an image reference")
    if "://" in text:
        raise ImageError(f"{_at(':', text.index('://') + 1)} starts a URL scheme; an image "
                         "reference has none (drop everything up to '://')")


def _check_parts(text: str, host: str, path: str, tag: str | None, digest: str | None) -> None:
    """Each part `_split` found in `text`, in the order they are written."""
    start = len(host) + 2 if host else 1
    if host:
        _check_host(host, 1)
    _check_path(path, start)
    if tag is not None:
        _check_tag(tag, start + len(path) + 1)
    if digest is not None:
        _check_digest(digest, text.index("@") + 2)


def parse(text: str) -> Image:
    """The reference `text` as the runtime reads it; ImageError saying which character (at
    which position) makes it none."""
    _check_text(text)
    host, path, tag, digest = _split(text)
    _check_parts(text, host, path, tag, digest)
    registry = canonical_registry(host) if host else DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"{OFFICIAL_NAMESPACE}/{path}"
    if len(f"{registry}/{path}") > MAX_PATH:
        raise ImageError(f"the repository name is {len(registry) + 1 + len(path)} characters "
                         f"long; at most {MAX_PATH}")
    return Image(registry, path, tag or "", digest or "")


def parse_prefix(entry: str) -> Prefix:
    """A registry policy entry: a registry host, then optionally path parts (a trailing '/' is
    allowed); ImageError saying why `entry` is not one."""
    host, sep, rest = entry.partition("/")
    if not host or not _is_host(host):
        raise ImageError(f"its first part {host!r} is not a registry host (a name with a '.' "
                         f"or a ':', or localhost); write the registry, e.g. "
                         f"{DOCKER_HUB}/{entry.strip('/') or OFFICIAL_NAMESPACE}/")
    _check_host(host, 1)
    path = rest[:-1] if rest.endswith("/") else rest
    for char in "@:":
        if char in path:
            raise ImageError(f"{_at(char, len(host) + 2 + path.index(char))} is not allowed "
                             "in a registry prefix: no tag or digest, only a registry and "
                             "path parts")
    if path:
        _check_path(path, len(host) + 2)
    return Prefix(canonical_registry(host), tuple(path.split("/")) if path else ())
