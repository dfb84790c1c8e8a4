#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Docs cite only what the repository holds: every bench/results file named in the README, docs/
# or another results file exists (a figure in the docs is only as good as the file it comes
# from), every image the docs show exists, and no page still holds a placeholder (@@NAME@@) of a
# figure that was never filled in.
. "$(dirname "$0")/lib.sh"

# check_docs SRC: the checks on the tree at SRC; names each problem on stderr.
check_docs() {
    python3 - "$1" <<'PY'

import os, re, sys
src = sys.argv[1]
pages = [os.path.join(src, "README.md")]
for folder in ("docs", "bench/results"):
    for root, _, files in os.walk(os.path.join(src, folder)):
        pages += [os.path.join(root, f) for f in files if f.endswith((".md", ".txt"))]
problems, cited = [], 0
results = os.path.join(src, "bench", "results")
names = {f for _, _, files in os.walk(results) for f in files} | \
        {d for _, dirs, _ in os.walk(results) for d in dirs}
for page in pages:
    text = open(page, errors="replace").read()
    rel = os.path.relpath(page, src)
    for path in re.findall(r"bench/results/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]", text):
        if "<" in path or path.endswith(("-", "/")):
            continue  # a pattern such as bench/results/fuzz-<date>.txt
        cited += 1
        if not os.path.exists(os.path.join(src, path.rstrip("/"))):
            problems.append(f"{rel}: cites {path}, which does not exist")
    # results files also name each other by their bare file name
    for name in re.findall(r"(?<![/A-Za-z0-9_.-])([a-z0-9][a-z0-9-]*-20\d\d-\d\d-\d\d[a-z0-9-]*\.(?:txt|json|html))", text):
        cited += 1
        if name not in names:
            problems.append(f"{rel}: cites {name}, which is not under bench/results")
    if rel.startswith(("docs", "README")):
        for image in re.findall(r"\]\(((?:\.\./)?(?:docs/)?images/[^)\s]+)\)", text):
            target = os.path.normpath(os.path.join(os.path.dirname(page), image))
            if not os.path.exists(target):
                problems.append(f"{rel}: shows {image}, which does not exist")
        for placeholder in sorted(set(re.findall(r"@@[A-Z0-9_]+@@", text))):
            problems.append(f"{rel}: placeholder {placeholder} never filled in")
print(f"{len(pages)} pages, {cited} citations of results files checked")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}

check_docs "$FB_SRC" || fail "the docs cite what the repository does not hold"
pass "every results file and image the docs cite exists, and no placeholder is left"

# The checker itself fails on a page that cites a missing file or holds a placeholder.
mkdir -p "$WORK/src/docs" "$WORK/src/bench/results"
printf '# x\n' >"$WORK/src/README.md"
printf 'see bench/results/nowhere-2026-01-01.txt\n' >"$WORK/src/docs/a.md"
if check_docs "$WORK/src" >"$WORK/self.out" 2>&1; then
    fail "a page citing a missing results file passed"
fi
grep -q "nowhere-2026-01-01.txt" "$WORK/self.out" || fail "the missing file is not named: $(cat "$WORK/self.out")"
printf 'fine\n' >"$WORK/src/docs/a.md"
printf 'measured: @@FIGURE@@\n' >"$WORK/src/docs/b.md"
if check_docs "$WORK/src" >"$WORK/self.out" 2>&1; then
    fail "a page with a placeholder passed"
fi
grep -q "@@FIGURE@@" "$WORK/self.out" || fail "the placeholder is not named: $(cat "$WORK/self.out")"
pass "the checker names a missing results file and a placeholder"
