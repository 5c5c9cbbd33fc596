"""The `tfgen` command line: a thin layer over the library.

Each command parses its options, calls one library function and prints its result. Only this
package imports click, prints or exits. `app` holds the group and what every command shares;
each other module registers the commands of one job on it when imported.
"""

from . import gate, init, lifecycle, live, run, specs  # noqa: F401  (importing registers their commands)
from .app import main

__all__ = ["main"]
