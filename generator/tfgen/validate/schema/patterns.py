"""The patterns of the schemas, each said in words a data scientist understands.

A schema error for a `pattern` names the rule the pattern encodes, not the regular expression
(`messages`); tests/test_schema.py checks that every pattern of the schemas has its words here.
"""

from __future__ import annotations

from ...repo import naming

# The distribution reference grammar (the one container runtimes parse image names with):
# [host[:port]/]path-component[/path-component...][:tag][@digest].
# A first component with a '.' followed by '/' is a registry host to the runtime (so it must
# be one): without a host, a name of several components starts with a dotless component.
_PATH_COMPONENT = "[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*"
_DOTLESS_COMPONENT = "[a-z0-9]+((_|__|-+)[a-z0-9]+)*"
_HOST_COMPONENT = "[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?"
IMAGE_REFERENCE = (
    f"^({_HOST_COMPONENT}(\\.{_HOST_COMPONENT})*(:[0-9]+)?/{_PATH_COMPONENT}"
    f"(/{_PATH_COMPONENT})*|{_DOTLESS_COMPONENT}(/{_PATH_COMPONENT})+|{_PATH_COMPONENT})"
    "(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}))?$"
)

# The schemas' $defs/line: text that cannot add a line to the YAML tfgen and the chart write.
ONE_LINE = "^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"

# Each pattern in the schemas, said in words. tests/test_schema.py checks none is missing.
PATTERN_WORDS: dict[str, str] = {
    naming.DNS1035.pattern: naming.NAME_RULE,
    "^[A-Za-z_][A-Za-z0-9_]*$": (
        "must be letters, digits and '_', not starting with a digit (a sweep parameter's name, "
        "written ((name)) where its value goes)"
    ),
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": (
        "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with "
        "a letter or digit"
    ),
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$": (
        "must be empty or a DNS-1123 label: lowercase letters, digits and '-', starting and "
        "ending with a letter or digit (the name of a Kueue LocalQueue or "
        "WorkloadPriorityClass)"
    ),
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "must be a Kubernetes object name: lowercase letters, digits, '-' and '.', starting and "
        "ending with a letter or digit"
    ),
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$": (
        "must be empty or a Kubernetes object name: lowercase letters, digits, '-' and '.', "
        "starting and ending with a letter or digit"
    ),
    "^[1-9][0-9]*\\.[0-9]+$": 'must be a minor version such as "3.3"',
    "^(@[A-Za-z0-9](-?[A-Za-z0-9]){0,38}(/[A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+)$": (
        "must be a code owner as GitHub accepts one: @user, @org/team or an e-mail address "
        "(no spaces)"
    ),
    "^[0-9A-F]{16}$": "must be a GnuPG key ID: 16 upper-case hexadecimal digits",
    "^/": "must be an absolute path, starting with '/'",
    "^/[^/]": "must be an absolute path of a directory below '/' (not '/' itself)",
    "^(/.*)?$": "must be empty or an absolute path, starting with '/'",
    "^([0-9]+(\\.[0-9]+)?|\\.[0-9]+|[0-9]+m)$": (
        'must be a CPU quantity: cores such as "4" or "0.5", or millicores such as "500m"'
    ),
    "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$": (
        'must be a size such as "8Gi", "512Mi" or "100Gi" (binary suffixes Ki, Mi, Gi, Ti; '
        "note: Gi, not GB)"
    ),
    "^[-._a-zA-Z][-._a-zA-Z0-9]*$": (
        "must be an environment variable name: letters, digits, '_', '-' and '.', not starting "
        "with a digit"
    ),
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$": (
        "must be a Kubernetes label/annotation key: an optional DNS prefix and '/', then at most "
        "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    ),
    "^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$": (
        "must be a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting "
        "and ending with a letter or digit"
    ),
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "must be a host name: lowercase letters, digits, '-' and '.'"
    ),
    "^((\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$": (
        "must be empty or a host name: lowercase letters, digits, '-' and '.'"
    ),
    "^[0-7]{3}$": 'must be exactly three octal digits such as "755"',
    ONE_LINE: "must be one line: no line breaks, tabs or other control characters",
    IMAGE_REFERENCE: (
        "must be an image reference: [registry[:port]/]repository[:tag][@digest], the "
        "repository in lowercase letters, digits and separators ('.', '_', '__', '-') between "
        "'/'-separated parts, a tag of at most 128 letters, digits, '_', '.' or '-' (not "
        "starting with '.' or '-'), a digest sha256:<64 hex digits> or sha512:<128 hex digits>"
    ),
    "^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$": (
        "must be empty or a Kubernetes label key: an optional DNS prefix and '/', then at most "
        "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    ),
    "^(/[A-Za-z0-9._~-]+)*/?$": (
        "must be empty or a URL path such as /tb/name: '/'-separated parts of letters, digits, "
        "'.', '_', '~' and '-'"
    ),
    "^[-._a-zA-Z0-9]+$": "must be a key of a Secret or ConfigMap: letters, digits, '-', '_', '.'",
    "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$": (
        "must be an extended resource name such as nvidia.com/gpu"
    ),
    "^((https?|ssh|git)://([^@/\\s]+@)?[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]+)?/"
    "[^\\s]*[^\\s/]|[A-Za-z0-9._-]+@[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?:[^\\s]+)$": (
        "must be a Git URL Argo CD can clone: https://host/path, ssh://[user@]host[:port]/path "
        "or user@host:path, without spaces"
    ),
    "^https://[^\\s/]+(/[^\\s]*)?$": "must be an https:// URL without spaces",
    "^1\\.[0-9]{2}$": 'must be a Kubernetes minor version such as "1.30" (quoted)',
    "^([0-9]+(\\.[0-9]+)?|\\.[0-9]+)(m|Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$": (
        'must be a Kubernetes quantity such as 16, "96", "500m" or "1Ti"'
    ),
    "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$": (
        "must be a resource name such as nvidia.com/gpu, cpu or memory"
    ),
    "^[^\\s]+$": "must be a name without spaces",
}
