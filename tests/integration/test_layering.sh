#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The folder dependency table of docs/architecture.md ("Which folder may use which"), checked on
# every quoted #include of the product folders: an include that reaches a folder the table does
# not allow fails the test and names the file, the line and the folder it reached.
set -euo pipefail
src=${FB_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
exec python3 - "$src" <<'PY'
import os, re, sys

src = sys.argv[1]
allowed = {  # docs/architecture.md, "Which folder may use which"
    "common": {"common", "proto"},
    "scheduler": {"scheduler", "common", "proto"},
    "coordinator": {"coordinator", "scheduler", "common", "proto"},
    "agent": {"agent", "scheduler", "common", "proto"},
    "workloads": {"workloads", "scheduler", "common", "proto"},
    "sim": {"sim", "agent", "coordinator", "scheduler", "common", "proto"},
}
# Where a bare include that is not beside the including file is found: the include paths the
# build gives (the source root, workloads/ for the workloads' own headers, the generated code).
search = [src, os.path.join(src, "workloads")]
generated = {"fleetburn.pb-c.h": "proto"}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

def folder_of(path):
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(src))
    return rel.split(os.sep)[0]

def resolve(including, name):
    if name in generated:
        return generated[name]
    for base in [os.path.dirname(including)] + search:
        cand = os.path.join(base, name)
        if os.path.isfile(cand):
            return folder_of(cand)
    return None

bad, checked = [], 0
for top in allowed:
    for root, _, files in os.walk(os.path.join(src, top)):
        for f in files:
            if not f.endswith((".c", ".h", ".cu", ".cpp", ".cuh")):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = include.match(line)
                    if not m:
                        continue
                    checked += 1
                    target = resolve(path, m.group(1))
                    if target is None:
                        # __has_include() probes and headers of optional builds may be absent.
                        continue
                    if target not in allowed[top]:
                        bad.append(f"{os.path.relpath(path, src)}:{lineno}: includes \"{m.group(1)}\" "
                                   f"from {target}/, which {top}/ may not use (docs/architecture.md)")
for b in bad:
    print(b)
print(f"layering: {checked} includes checked, {len(bad)} outside the table")
sys.exit(1 if bad else 0)
PY
