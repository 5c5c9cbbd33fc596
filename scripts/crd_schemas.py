"""The rendered-object schemas tfgen ships, converted from the upstream CRDs kept verbatim.

tfgen validates the objects of the kinds Kubernetes does not define (TFJob, JobSet, the Argo CD
kinds) against their CustomResourceDefinitions as the projects publish them. Each CRD is kept
unchanged under `schemas/upstream/<project>-<version>/`, with the project's licence and a
`source.json` (Go module, version, commit, checksums), and converted to a strict JSON Schema at
`schemas/<group>/<kind>_<version>.json` (kubeconform's naming of CRD schemas).

Conversion (OpenAPI v3 of a structural CRD schema -> JSON Schema 2020-12), what the API server
accepts and keeps under strict field validation:
- every object that has no `x-kubernetes-preserve-unknown-fields` and no `additionalProperties`
  gets `additionalProperties: false` (the API server prunes, or with strict field validation
  refuses, any other field);
- a field may be null (the API server drops a null field before it validates, and keeps it
  where the CRD says `nullable: true`); `x-kubernetes-int-or-string` is "integer or string";
- the root's `apiVersion` and `kind` are the CRD's own group/version and kind, its `metadata` is
  Kubernetes' ObjectMeta (the API server treats every object's metadata so), referred to in the
  Kubernetes definitions tfgen validates with (the target version's, see schemas/README.md);
- descriptions and the other `x-kubernetes-*` extensions go; CEL rules
  (`x-kubernetes-validations`) are not converted.

Usage (with the project's Python, tfgen installed: `.venv/bin/python`):
  scripts/crd_schemas.py            convert the kept CRDs into schemas/
  scripts/crd_schemas.py --check    exit 1 naming every converted file that would change
  scripts/crd_schemas.py --fetch    take the CRDs again from their Go modules (`go mod download`,
                                    checked against the Go checksum database), then convert
  scripts/crd_schemas.py --fetch --check   exit 1 when a kept CRD differs from its module's
Adding a CRD is one line in CRDS and a `--fetch`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tfgen.repo.resources import KUBERNETES_DEFINITIONS, crd_schema_name

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
UPSTREAM = SCHEMAS / "upstream"

# One line per CRD: the Go module that ships it, the module's version, the file in the module.
CRDS = (
    ("github.com/kubeflow/training-operator", "v1.9.4",
     "manifests/base/crds/kubeflow.org_tfjobs.yaml"),
    ("github.com/argoproj/argo-cd/v3", "v3.3.19", "manifests/crds/application-crd.yaml"),
    ("github.com/argoproj/argo-cd/v3", "v3.3.19", "manifests/crds/applicationset-crd.yaml"),
    ("github.com/argoproj/argo-cd/v3", "v3.3.19", "manifests/crds/appproject-crd.yaml"),
    ("sigs.k8s.io/jobset", "v0.12.0", "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"),
)
LICENCE_FILE = "LICENSE"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
OBJECT_META = f"{KUBERNETES_DEFINITIONS}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Keywords whose value is one schema, a list of schemas, or a map of name -> schema.
ONE_SCHEMA = ("items", "not", "additionalProperties")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
SCHEMA_MAPS = ("properties", "patternProperties")
DROPPED = ("description", "example", "externalDocs", "nullable")


@dataclass(frozen=True)
class Crd:
    module: str
    version: str
    path: str

    @property
    def project(self) -> str:
        """`argo-cd` for github.com/argoproj/argo-cd/v3: the module's name without its major."""
        parts = self.module.split("/")
        last = parts[-1]
        return parts[-2] if last[0] == "v" and last[1:].isdigit() else last

    @property
    def folder(self) -> Path:
        return UPSTREAM / f"{self.project}-{self.version}"

    @property
    def kept(self) -> Path:
        return self.folder / Path(self.path).name


def say(message: str) -> None:
    print(f"crd_schemas: {message}", file=sys.stderr, flush=True)


def convert_keyword(key: str, value: Any) -> Any:
    """The value of one keyword, its schemas converted."""
    if key in SCHEMA_MAPS:
        return {name: convert_node(sub, field=key == "properties") for name, sub in value.items()}
    if key in SCHEMA_LISTS:
        return [convert_node(sub) for sub in value]
    if key in ONE_SCHEMA and isinstance(value, dict):
        return convert_node(value)
    return value


def convert_node(node: dict[str, Any], field: bool = False) -> dict[str, Any]:
    """One OpenAPI schema node of a structural CRD schema as a strict JSON Schema node;
    `field`: the node is an object's property, which may also be null (the API server drops
    such a null before validating, unless the schema keeps it: `nullable`)."""
    out = {key: convert_keyword(key, value) for key, value in node.items()
           if key not in DROPPED and not key.startswith("x-kubernetes-")}
    if node.get("x-kubernetes-int-or-string") and not any(k in out for k in SCHEMA_LISTS):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (field or node.get("nullable")) and "type" in out:
        out["type"] = [out["type"], "null"]
    elif field and "anyOf" in out:
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    if node.get("x-kubernetes-embedded-resource"):
        embedded = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"$ref": OBJECT_META}}
        out["properties"] = {**embedded, **out.get("properties", {})}
    closed = node.get("type") == "object" or "properties" in node
    if closed and not node.get("x-kubernetes-preserve-unknown-fields") \
            and "additionalProperties" not in node:
        out["additionalProperties"] = False
    return out


def convert_version(crd: dict[str, Any], version: dict[str, Any], source: str) -> dict[str, Any]:
    """The strict JSON Schema of one version of a CRD."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    schema = convert_node(version["schema"]["openAPIV3Schema"])
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"const": f"{group}/{version['name']}"}
    properties["kind"] = {"const": kind}
    properties["metadata"] = {"$ref": OBJECT_META}
    return {
        "$schema": SCHEMA_DIALECT,
        "$comment": f"Generated by scripts/crd_schemas.py from {source}; do not edit.",
        "title": f"{kind} ({group}/{version['name']})",
        **schema,
    }


def converted(crd: Crd) -> dict[str, str]:
    """Relative path under schemas/ -> text of every served version's schema of one CRD."""
    # libyaml's loader where PyYAML has it: the same data, ten times faster on these large CRDs
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(crd.kept.read_text(encoding="utf-8"), Loader=loader)
    source = crd.kept.relative_to(ROOT).as_posix()
    group, kind = document["spec"]["group"], document["spec"]["names"]["kind"]
    out = {}
    for version in document["spec"]["versions"]:
        if not version.get("served", True):
            continue
        name = crd_schema_name(f"{group}/{version['name']}", kind)
        schema = convert_version(document, version, source)
        # a key per line, unindented: diffs stay readable, files stay under tfgen's input limit
        out[name] = json.dumps(schema, indent=0, ensure_ascii=False) + "\n"
    return out


def convert_all() -> dict[str, str]:
    out: dict[str, str] = {}
    for crd in map(lambda row: Crd(*row), CRDS):
        out.update(converted(crd))
    return out


def write_or_check(files: dict[str, str], check: bool) -> int:
    changed = [name for name, text in sorted(files.items())
               if not (SCHEMAS / name).is_file()
               or (SCHEMAS / name).read_text(encoding="utf-8") != text]
    if check:
        for name in changed:
            say(f"schemas/{name} differs from its conversion: run scripts/crd_schemas.py")
        return 1 if changed else 0
    for name in changed:
        (SCHEMAS / name).parent.mkdir(parents=True, exist_ok=True)
        (SCHEMAS / name).write_text(files[name], encoding="utf-8")
        say(f"wrote schemas/{name}")
    say(f"{len(files)} schemas, {len(changed)} written")
    return 0


def download(module: str, version: str) -> dict[str, Any]:
    """`go mod download -json`: the module's source folder in the module cache, checked
    against the Go checksum database."""
    go = shutil.which("go")
    if go is None:
        sys.exit("crd_schemas: --fetch needs `go` on PATH (Go 1.22 or newer)")
    say(f"go mod download {module}@{version} ...")
    result = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"],
                            capture_output=True, text=True, check=False, cwd=UPSTREAM)
    info: dict[str, Any] = json.loads(result.stdout or "{}")
    if result.returncode != 0 or "Dir" not in info:
        sys.exit(f"crd_schemas: go mod download {module}@{version} failed: "
                 f"{info.get('Error') or result.stderr.strip()}")
    return info


def fetch(check: bool) -> int:
    """Copy each CRD and its module's licence from the module source (or, with `check`, say
    which kept file differs from it), and record where they came from."""
    different = 0
    by_folder: dict[Path, list[Crd]] = {}
    for crd in map(lambda row: Crd(*row), CRDS):
        by_folder.setdefault(crd.folder, []).append(crd)
    for folder, crds in sorted(by_folder.items()):
        info = download(crds[0].module, crds[0].version)
        files = {Path(c.path).name: Path(info["Dir"], c.path) for c in crds}
        files[LICENCE_FILE] = Path(info["Dir"], LICENCE_FILE)
        if check:
            for name, origin in files.items():
                if not (folder / name).is_file() or \
                        (folder / name).read_bytes() != origin.read_bytes():
                    say(f"{(folder / name).relative_to(ROOT)} differs from {crds[0].module}"
                        f"@{crds[0].version}")
                    different += 1
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for name, origin in files.items():
            (folder / name).write_bytes(origin.read_bytes())
        (folder / "source.json").write_text(source_record(crds, info, files), encoding="utf-8")
        say(f"kept {', '.join(sorted(files))} in {folder.relative_to(ROOT)}")
    return 1 if different else 0


def licence(path: Path) -> str:
    """The SPDX name of a module's licence; only the one every CRD so far has is recognised,
    so a new CRD under another licence is looked at by a person before it is kept."""
    if " ".join(path.read_text(encoding="utf-8").split()[:4]) == "Apache License Version 2.0,":
        return "Apache-2.0"
    sys.exit(f"crd_schemas: {path}: not the Apache License 2.0; record its licence by hand")


def source_record(crds: list[Crd], info: dict[str, Any], files: dict[str, Path]) -> str:
    # the proxy's .info: the version's time, and its repository and commit where it knows them
    proxy_info = json.loads(Path(info["Info"]).read_text(encoding="utf-8"))
    origin = {key: proxy_info["Origin"][key] for key in ("URL", "Ref", "Hash")
              if key in proxy_info.get("Origin", {})}
    record = {
        "module": crds[0].module,
        "version": crds[0].version,
        "time": proxy_info.get("Time", ""),
        **({"origin": origin} if origin else {}),
        "moduleSum": info["Sum"],
        "licence": licence(files[LICENCE_FILE]),
        "licenceFile": LICENCE_FILE,
        "files": {Path(c.path).name: {"path": c.path,
                                      "sha256": hashlib.sha256(files[Path(c.path).name]
                                                               .read_bytes()).hexdigest()}
                  for c in crds},
    }
    return json.dumps(record, indent=2) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 when a file differs")
    parser.add_argument("--fetch", action="store_true",
                        help="take the CRDs from their Go modules first")
    args = parser.parse_args()
    if args.fetch:
        status = fetch(args.check)
        if args.check:
            sys.exit(status)
    sys.exit(write_or_check(convert_all(), args.check))


if __name__ == "__main__":
    main()
