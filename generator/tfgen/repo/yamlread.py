"""The YAML loader every reader in tfgen builds on: PyYAML's safe loader, in C where it exists.

One difference from PyYAML is deliberate. A plain `<<` that is not a mapping key (a list item
such as `args: [<<]`, or a value) is the string "<<" to Helm, Argo CD and Kubernetes
(go-yaml v2), while PyYAML has no constructor for it and fails. tfgen reads it as they do, so a
rendered container argument `- <<` is not mistaken for a broken document.
"""

from __future__ import annotations

from typing import Any

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"

# the C loader is ~10x faster; PyYAML built without libyaml falls back to the Python one
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SafeLoader(_Base):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader reading a lone `<<` as the string, like go-yaml v2."""


def _merge_as_text(loader: Any, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


SafeLoader.add_constructor(MERGE_TAG, _merge_as_text)
