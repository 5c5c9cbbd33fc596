"""What a run of `tfgen check` gives back (`CheckResult`): every problem found, what was done
to find them, and its closing lines; kept whole in the cache, so that a run over inputs that
did not change gives the last one back (`check.Gate.stored`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..problems import Problem, errors_of, tally, warned
from ..words import counted


@dataclass
class CheckResult:
    """Every problem found, and what was done to find them (for the summary line)."""

    problems: list[Problem] = field(default_factory=list)
    specs: int = 0
    applications: int = 0
    checked: int = 0  # applications rendered and validated (the rest: out of --changed scope)
    objects: int = 0
    helm_processes: int = 0
    cache_hits: int = 0  # experiments whose render or verdict came from .tfgen-cache/
    from_cache: bool = False
    # Why this run's helm rendered off the fast path, what that costs and how to get it
    # (`helm/probe.slow_path_note`); a stored result cost nothing more and says nothing.
    notes: list[str] = field(default_factory=list)
    # What its Applications make helm read that the run's snapshot holds no hash of (by real
    # path: each chart, whose folders may be links or lie elsewhere, and any value file
    # outside the snapshot), by `keys.path_digest`: a stored result stands only while they do.
    reads: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No error: warnings alone pass."""
        return not errors_of(self.problems)

    def summary(self) -> str:
        """The closing lines in plain words: what was checked, the verdict, the next step."""
        total = self.applications or self.specs
        scope = (counted(total, "experiment") + " checked" if self.checked == total
                 else f"{self.checked} of {counted(total, 'experiment')} checked (the others "
                      "are untouched since the base)")
        if self.from_cache:
            how = "nothing changed since the last check: its whole result reused"
        else:
            how = (f"{self.checked - self.cache_hits} rendered by helm, "
                   f"{self.cache_hits} reused from the last check")
        if not self.ok:
            return (f"{scope}: {tally(self.problems)} "
                    f"({counted(self.objects, 'object')} rendered; {how}). Next: fix them, "
                    "then run `tfgen check` again")
        return (f"{scope}: all clear ({counted(self.objects, 'object')} valid, 0 "
                f"problems{warned(self.problems)}; {how}). Next: commit and open a pull "
                "request")

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CheckResult:
        data = json.loads(text)
        data["problems"] = [Problem(**p) for p in data["problems"]]
        return cls(**{**data, "from_cache": True, "notes": []})
