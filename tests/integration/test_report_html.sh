#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `fleetburn report --format html` in headless Chromium (Debian's chromium; deploy/install-deps.sh
# installs it), for reports of real campaigns:
#   - run --local 3: memtest with bit flips injected on local-1 (a failing node with itemised
#     miscompares), a sleep stage (its progress is stored as telemetry) and allreduce through
#     mpirun: the page loads with no console message (no script error, nothing blocked by its
#     Content-Security-Policy), has the diagnosis naming local-1 first, the stage table, the fleet
#     heatmap, the timeline, the telemetry charts, the allreduce chart and the memory errors by
#     address range, and its screenshot is not blank; with --baseline, the
#     allreduce chart draws the baseline dashed and the comparison lists local-1's miscompares
#     as improved (its flips were injected in the first run only);
#   - the checker itself fails a page that tries to fetch or run something, and a blank page;
#   - a campaign whose name is markup shows it as text (stage names cannot hold markup);
#   - a simfleet pairs campaign with on_fail: bisect: the diagnosis names the bad node;
#   - a simfleet campaign on 1024 nodes: the report stays under 1 MB, has the node x stage
#     heatmap with a cell per node and stage, lists the failing node among the outliers, and its
#     timeline shows only the nodes of interest, not 1024 rows.
. "$(dirname "$0")/lib.sh"

if ! command -v chromium >/dev/null; then
    echo "SKIP: chromium is not installed (deploy/install-deps.sh installs it)"
    exit 77
fi
CHECK="python3 $FB_SRC/tests/integration/html_check.py --profile $WORK/chromium-profile"

# --- a local campaign with a failing node --------------------------------------------------------
{ [ "$(id -u)" -ne 0 ] || echo "mpirun_allow_run_as_root = yes"; } >"$WORK/agent.conf"
chmod 600 "$WORK/agent.conf"
have_ar=no
if [ -x "$FB_BIN/bin/fleetburn-mpirank" ] && command -v mpirun >/dev/null; then have_ar=yes; fi
cat >"$WORK/campaign.yaml" <<'YAML'
name: html-local
stages:
  - name: dram
    workload: memtest
    timeout: 2m
    params: {size: 16MiB, passes: 1}
  - name: nap
    workload: sleep
    timeout: 1m
    params: {duration: 1500ms}
YAML
if [ $have_ar = yes ]; then
    cat >>"$WORK/campaign.yaml" <<'YAML'
  - name: ar
    workload: allreduce
    timeout: 3m
    params: {launcher: mpirun, ranks_per_node: 2, min_size: 16, max_size: 256KiB, factor: 4,
             iters: 3, warmup: 1}
YAML
fi
set +e
"$FLEETBURN" run --local 3 --agent-config "$WORK/agent.conf" --db "$WORK/local.db" \
    --inject local-1:memtest.inject_bitflips=4 "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "run exited $rc, expected 1 (local-1 fails memtest)"
"$FLEETBURN" report --db "$WORK/local.db" --format html >"$WORK/local.html" || fail "report --format html exited $?"
expect=summary,campaign-verdict,diagnosis,replace,stages,fleet,fleet-heatmap,outliers,timeline,timeline-svg
expect=$expect,memory-errors,memory-ranges,telemetry,telemetry-node
[ $have_ar = yes ] && expect=$expect,allreduce,allreduce-chart
$CHECK --expect "$expect" --screenshot "$WORK/local.png" "$WORK/local.html" || fail "local report"
python3 - "$WORK/local.png.dom" <<'PY' || fail "the local report's content"
import re, sys
dom = open(sys.argv[1]).read()
body = dom[dom.index("<main>"):]
# The diagnosis comes first, and names local-1 (and nothing else) as the part to replace.
first = re.search(r'<section id="([a-z-]+)"', body).group(1)
assert first == "diagnosis", first
replace = body[body.index('id="replace"'):body.index("</table>", body.index('id="replace"'))]
parts = re.findall(r'<td class="part">([^<]*)</td>', replace)
assert parts == ["local-1"], parts
assert "miscompare" in replace, "no evidence cited"
# Memory errors: itemised miscompares of local-1 in physical (or virtual) address ranges.
mem = body[body.index('id="memory-ranges"'):]
mem = mem[:mem.index("</table>")]
assert re.search(r'local-1</td><td>(phys|virt) 0x[0-9a-f]+', mem), mem[:500]
assert sum(int(n) for n in re.findall(r'<td class="num">(\d+)</td>', mem)) >= 4, "fewer than 4 miscompares"
# Fleet heatmap: one cell per node and stage, local-1 red in dram.
cells = re.findall(r'<rect x="\d+" y="\d+" width="8" height="8" class="([a-z-]+)"><title>([^<]*)</title>', body)
assert ("v-fail", "local-1 fail, " ) in [(c, t[:len("local-1 fail, ")]) for c, t in cells], cells[:6]
# Telemetry: the sleep stage's progress of each node shown, as a line.
tel = body[body.index('<section id="telemetry">'):]
tel = tel[:tel.index("</section>")]
assert tel.count("<polyline") >= 3 and "sleep.elapsed_ms" in tel, tel[:600]
print("ok: diagnosis first naming local-1, %d heatmap cells, memory ranges" % len(cells))
PY
pass "local campaign: the report loads clean in Chromium and names local-1 first"

# --- charts only a GPU campaign fills, from stored results ----------------------------------------
# No GPU here: the unit test stores a p2p matrix, allreduce sizes, miscompares and GPU telemetry
# buckets through the store's API and writes their reports for the browser.
mkdir -p "$WORK/unit"
FB_HTML_OUT_DIR="$WORK/unit" "$FB_BIN/bin/test_report_html" >"$WORK/unit.log" 2>&1 || fail "unit test_report_html"
$CHECK --expect p2p,p2p-matrix,allreduce-chart,memory-ranges --screenshot "$WORK/unit/charts.png" \
    "$WORK/unit/charts.html" || fail "the p2p, allreduce and memory charts"
$CHECK --expect telemetry,telemetry-power,telemetry-node --screenshot "$WORK/unit/telemetry.png" \
    "$WORK/unit/telemetry.html" || fail "the GPU telemetry charts"
pass "p2p matrix, allreduce curve, memory ranges and GPU telemetry charts render clean in Chromium"

# --- the checker fails what it must fail ---------------------------------------------------------
sed 's|<body>|<body><img src="http://127.0.0.1:9/x.png">|' "$WORK/local.html" >"$WORK/fetch.html"
if $CHECK "$WORK/fetch.html" >"$WORK/check-fetch.out" 2>&1; then fail "a page that fetches passed"; fi
grep -q "Content Security Policy" "$WORK/check-fetch.out" || fail "the blocked fetch is not what failed it"
sed 's|<body>|<body><script>document.title="x"</script>|' "$WORK/local.html" >"$WORK/script.html"
if $CHECK "$WORK/script.html" >/dev/null 2>&1; then fail "a page with a script passed"; fi
printf '<!DOCTYPE html><html><body></body></html>\n' >"$WORK/blank.html"
if $CHECK --screenshot "$WORK/blank.png" "$WORK/blank.html" >"$WORK/check-blank.out" 2>&1; then
    fail "a blank page passed"
fi
grep -q "blank" "$WORK/check-blank.out" || fail "the blank page failed for another reason"
pass "the checker fails a page that fetches, one with a script, and a blank one"

# --- --baseline: the allreduce chart against another campaign -------------------------------------
if [ $have_ar = yes ]; then
    base=$("$FLEETBURN" report --db "$WORK/local.db" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')
    "$FLEETBURN" run --local 3 --agent-config "$WORK/agent.conf" --db "$WORK/local.db" \
        "$WORK/campaign.yaml" >"$WORK/run2.out" 2>"$WORK/run2.log" || fail "second run exited $?"
    "$FLEETBURN" report --db "$WORK/local.db" --format html --baseline "$base" >"$WORK/base.html"
    grep -q "compared with $base" "$WORK/base.html" || fail "the header does not name the baseline"
    grep -q 'class="line base dashed"' "$WORK/base.html" || fail "no dashed baseline curve"
    $CHECK --expect allreduce-chart "$WORK/base.html" || fail "the compared report"
    # The comparison: the second run had no injected flips, so local-1's miscompares went down
    # (host MPI timings on a busy machine may regress or improve too: not asserted).
    python3 - "$WORK/base.html" <<'PY' || fail "the comparison with the baseline"
import re, sys
s = open(sys.argv[1]).read()
sec = s[s.index('id="compare"'):s.index('id="stages"')]
assert re.search(r"<h3>Regressions: \d+</h3>", sec), sec[:800]
improved = sec[sec.index("<h3>Improvements: "):]
rows = re.findall(r'<tr><td>dram</td><td>([^<]*)</td><td>([^<]*)</td>', improved)
assert ("local-1", "miscompares") in rows, rows
PY
    ! grep -q 'id="compare"' "$WORK/local.html" || fail "a report without --baseline has a comparison"
    set +e
    "$FLEETBURN" report --db "$WORK/local.db" --format html --baseline no-such-name >/dev/null 2>"$WORK/nobase.err"
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "an unknown baseline exited $rc, expected 2"
    grep -q "no-such-name" "$WORK/nobase.err" || fail "the error does not name the baseline"
    pass "--baseline draws the baseline's allreduce curve dashed and lists what changed; an unknown one exits 2"
fi

# --- markup in a campaign name stays text --------------------------------------------------------
cat >"$WORK/markup.yaml" <<'YAML'
name: "<img src=http://127.0.0.1:9/x onerror=alert(1)>&amp;"
stages:
  - name: nap
    workload: sleep
    timeout: 1m
    params: {duration: 10ms}
YAML
"$FLEETBURN" run --local 1 --db "$WORK/markup.db" "$WORK/markup.yaml" >"$WORK/markup.out" 2>"$WORK/markup.log" \
    || fail "markup campaign exited $?"
"$FLEETBURN" report --db "$WORK/markup.db" --format html >"$WORK/markup.html"
grep -q '&lt;img src=http://127.0.0.1:9/x onerror=alert(1)&gt;&amp;amp;' "$WORK/markup.html" \
    || fail "the campaign name is not escaped"
! grep -q '<img src=http' "$WORK/markup.html" || fail "markup from the campaign reached the page"
$CHECK --expect summary "$WORK/markup.html" || fail "markup report"
pass "markup in a campaign name is shown as text"

# --- a bisect campaign of the simulated fleet ----------------------------------------------------
cat >"$WORK/pairs.yaml" <<'YAML'
name: sim-bisect-html
stages:
  - name: node-local
    workload: memtest
    params: {size: 1GiB}
  - name: pairs
    workload: rdmabw
    timeout: 10m
    scope: pairs
    pairing: random
    seed: 11
    on_fail: bisect
    bisect_prior: node-local
YAML
printf 'seed: 21\nfalse_fail_rate: 0\nfaults:\n  - {node: sim-17, kind: hard}\n' >"$WORK/pairs-faults.yaml"
run_simfleet pairs --agents 32 --faults "$WORK/pairs-faults.yaml" --campaign "$WORK/pairs.yaml" \
    --db "$WORK/pairs.db" --delay-ms 0-5
[ $SIM_RC -eq 1 ] || fail "simfleet bisect exited $SIM_RC, expected 1"
"$FLEETBURN" report --db "$WORK/pairs.db" --format html >"$WORK/pairs.html"
$CHECK --expect diagnosis,replace,fleet-heatmap,outliers,timeline-svg --screenshot "$WORK/pairs.png" \
    "$WORK/pairs.html" || fail "bisect report"
python3 - "$WORK/pairs.png.dom" <<'PY' || fail "the bisect report's diagnosis"
import re, sys
dom = open(sys.argv[1]).read()
replace = dom[dom.index('id="replace"'):]
replace = replace[:replace.index("</table>")]
assert re.findall(r'<td class="part">([^<]*)</td>', replace) == ["sim-17"], replace[:800]
assert 'class="evidence"' in replace, "no evidence"
sessions = dom[dom.index('id="sessions"'):]
assert re.search(r"diagnosis of stage pairs: ended: decided after \d+ follow-up round", sessions), sessions[:300]
# Partners that failed with sim-17 and were found not at fault (cleared by their own passes, or
# passed: each failure explained by sim-17) are shown as such, and are not listed among the
# outliers: only sim-17 is.
hm = dom[dom.index('id="fleet-heatmap"'):dom.index('id="outliers"')]
cleared = re.findall(r'class="v-cleared"><title>([^ <]*)', hm)
assert cleared and "sim-17" not in cleared, cleared
out = dom[dom.index('id="outliers"'):]
out = out[:out.index("</table>")]
assert set(re.findall(r'<td class="part">([^<]*)</td>', out)) == {"sim-17"}, out[:800]
PY
pass "simfleet bisect: the report names sim-17 with its evidence; its cleared partners are not outliers"

# --- 1024 nodes: small and readable --------------------------------------------------------------
cp "$FB_SRC/tests/fixtures/campaigns/sim-memtest-netbw.yaml" "$WORK/big.yaml"
printf 'seed: 7\nfalse_fail_rate: 0\nfaults:\n  - {node: sim-0777, kind: hard}\n' >"$WORK/big-faults.yaml"
run_simfleet big --agents 1024 --faults "$WORK/big-faults.yaml" --campaign "$WORK/big.yaml" \
    --db "$WORK/big.db" --delay-ms 0-5
[ $SIM_RC -eq 1 ] || fail "simfleet 1024 exited $SIM_RC, expected 1"
"$FLEETBURN" report --db "$WORK/big.db" --format html >"$WORK/big.html"
size=$(stat -c %s "$WORK/big.html")
[ "$size" -lt 1000000 ] || fail "the 1024-node report is $size bytes (1 MB at most)"
$CHECK --expect fleet-heatmap,outliers,diagnosis,timeline-svg --screenshot "$WORK/big.png" "$WORK/big.html" \
    || fail "1024-node report"
python3 - "$WORK/big.png.dom" <<'PY' || fail "the 1024-node report's fleet views"
import re, sys
dom = open(sys.argv[1]).read()
hm = dom[dom.index('id="fleet-heatmap"'):dom.index('id="outliers"')]
cells = re.findall(r'<rect x="\d+" y="\d+" width="8" height="8" class="([a-z-]+)"><title>([^ <]*)', hm)
assert len(cells) == 2 * 1024, len(cells)
assert ("v-fail", "sim-0777") in cells, "sim-0777 is not red"
out = dom[dom.index('id="outliers"'):]
out = out[:out.index("</table>")]
assert "sim-0777" in out, "sim-0777 not among the outliers"
assert len(re.findall(r"<tr>", out)) <= 1 + 2 * 21, "the outliers table is a wall"
tl = dom[dom.index('id="timeline-svg"'):]
tl = tl[:tl.index("</svg>")]
rows = len(re.findall(r'class="lane"', tl))
assert 1 <= rows <= 48, rows
print("ok: %d heatmap cells, outliers listed, %d timeline rows" % (len(cells), rows))
PY
pass "1024 nodes: $size bytes, node x stage heatmap, sim-0777 among the outliers, a short timeline"
