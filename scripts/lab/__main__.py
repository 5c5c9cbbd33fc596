"""`python3 scripts/lab build|up|down|status`: the lab's command line (see __init__.py).

Run as a folder, Python puts scripts/lab itself on sys.path; the package is imported from
its parent so that its modules keep their package-relative imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])

from lab import cli  # noqa: E402  (needs the sys.path line above)

if __name__ == "__main__":
    sys.exit(cli.main(sys.argv[1:]))
