#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Noise of `fleetburn compare` between campaigns where nothing changed (docs/regressions.md).

Runs the same campaign N times with `fleetburn run --local AGENTS` on one database, then compares
every run with the one before (the real `fleetburn compare --format json`) and, from the
database, measures how far each part's log ratio ln(now/base) sat from its fleet's median, in
robust standard deviations (1.4826 MAD): the largest such distance is what FB_REGRESS_K must stay
above for identical runs never to name a part, and the fleet median change is what a fleet-wide
shift must stay above. With --throttle NODE:MBIT a last run throttles one node with netbw's
test-only inject_rate_mbit, and its distance is printed too.

  bench/compare_noise.py --bin build --runs 10 --agents 4 --out bench/results/compare-noise.txt
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

CAMPAIGN = """name: compare-noise
stages:
  - name: network
    workload: netbw
    timeout: 1m
    scope: pairs
    rounds: {rounds}
    params: {{duration: 1s, streams: 2, lat_iters: 200}}
"""

# metric -> (higher is better, min_delta) for the netbw metrics the defaults compare
METRICS = {"netbw.tx_gbps": (True, 0.0), "netbw.rx_gbps": (True, 0.0),
           "netbw.rtt_p50_us": (False, 50.0)}


def values(db, campaign):
    """(part, metric@node) -> value for the netbw metrics of one campaign."""
    out = {}
    q = ("SELECT t.nodes_json, r.node, m.name, m.value FROM tasks t JOIN results r ON r.task_id = t.id"
         " JOIN metrics m ON m.result_id = r.result_id WHERE t.campaign_id = ? AND r.verdict IN"
         " ('pass','fail')")
    for nodes, node, name, value in db.execute(q, (campaign,)):
        if name in METRICS and value is not None:
            part = ",".join(sorted(json.loads(nodes)))
            out[(part, name, node)] = value
    return out


def distances(base, now):
    """metric -> (largest |score - median| / (1.4826 MAD), that part's own change, median relative
    change, n)."""
    res = {}
    for metric, (_, offset) in METRICS.items():
        keys = [k for k in now if k[1] == metric and k in base]
        if len(keys) < 4:
            continue
        scores = [math.log((now[k] + offset) / (base[k] + offset)) for k in keys]
        changes = [(now[k] - base[k]) / base[k] for k in keys]
        med = statistics.median(scores)
        mad = statistics.median([abs(s - med) for s in scores])
        sigma = 1.4826 * mad if mad > 0 else float("nan")
        i = max(range(len(keys)), key=lambda k: abs(scores[k] - med))
        worst = abs(scores[i] - med) / sigma if sigma == sigma else float("nan")
        res[metric] = (worst, changes[i], statistics.median(changes), len(keys))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--throttle", help="NODE:MBIT for one more run, e.g. local-1:200")
    ap.add_argument("--pace", type=int, help="pace every node at MBIT (netbw inject_rate_mbit), "
                    "as the links of a real fleet have a rate")
    ap.add_argument("--out")
    ap.add_argument("--db", help="keep the database here (default: a temporary one)")
    a = ap.parse_args()
    fb = os.path.join(a.bin, "bin", "fleetburn")
    lines = []

    def say(s):
        print(s, flush=True)
        lines.append(s)

    with tempfile.TemporaryDirectory(prefix="fbnoise-") as tmp:
        yaml = os.path.join(tmp, "c.yaml")
        with open(yaml, "w") as f:
            f.write(CAMPAIGN.format(rounds=a.rounds))
        db_path = a.db or os.path.join(tmp, "fb.db")
        def inject(node_mbit):
            return ["--inject", "%s:netbw.inject_rate_mbit=%s" % node_mbit]

        paced = {"local-%d" % i: a.pace for i in range(a.agents)} if a.pace else {}
        runs = [dict(paced)] * a.runs
        if a.throttle:
            node, mbit = a.throttle.split(":")
            runs.append(dict(paced, **{node: mbit}))
        for rates in runs:
            extra = [arg for nm in sorted(rates.items()) for arg in inject(nm)]
            subprocess.run([fb, "run", "--local", str(a.agents), "--db", db_path] + extra + [yaml],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = sqlite3.connect(db_path)
        ids = [r[0] for r in db.execute("SELECT id FROM campaigns ORDER BY started_ms")]
        say("# bench/compare_noise.py --runs %d --agents %d --rounds %d%s%s" %
            (a.runs, a.agents, a.rounds, " --throttle " + a.throttle if a.throttle else "",
             " --pace %d" % a.pace if a.pace else ""))
        say("# load average at the end: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        say("%-44s %-18s %9s %9s %13s %4s  %s" % ("base -> compared", "metric", "max |z|",
                                                  "its change", "fleet change", "n",
                                                  "compare verdict"))
        for base, now in zip(ids, ids[1:]):
            out = subprocess.run([fb, "compare", base, now, "--db", db_path, "--format", "json"],
                                 capture_output=True, text=True)
            doc = json.loads(out.stdout)
            verdict = "%s (%d regressions, %d improvements)" % (
                doc["verdict"], len(doc["regressions"]), len(doc["improvements"]))
            for metric, (worst, own, change, n) in distances(values(db, base),
                                                             values(db, now)).items():
                say("%-44s %-18s %9.2f %+8.1f%% %+12.1f%% %4d  %s" % (
                    base[-20:] + " -> " + now[-20:], metric, worst, 100 * own, 100 * change, n,
                    verdict))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
