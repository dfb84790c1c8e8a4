#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a Grafana dashboard against the metrics fleetburn exports.

    grafana_check.py DASHBOARD.json METRICS.txt [PROMETHEUS_URL]

- the dashboard is JSON with panels, each query panel has targets with an expr;
- every expr and every templating query names at least one fleetburn_ metric, and every
  fleetburn_ name it uses is a family METRICS.txt (a /metrics scrape) declares with # TYPE;
- with PROMETHEUS_URL, every expr (Grafana variables replaced: $node by .*, $metric by a metric
  the scrape has, $__rate_interval by 1m) is valid PromQL that the real Prometheus evaluates
  without an error.
Exit 0 with one "ok" line, or 1 naming what is wrong."""
import json
import re
import sys
import urllib.parse
import urllib.request


def exprs_of(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                out.append(v)
            elif k == "definition" and isinstance(v, str):
                out.append(v)
            else:
                exprs_of(v, out)
    elif isinstance(node, list):
        for v in node:
            exprs_of(v, out)
    return out


def main():
    dash = json.load(open(sys.argv[1]))
    scrape = open(sys.argv[2]).read()
    families = set(re.findall(r"^# TYPE (\S+) ", scrape, re.M))
    panels = [p for p in dash.get("panels", []) if p.get("type") != "row"]
    if not panels:
        sys.exit("FAIL: no panels")
    for p in panels:
        if not p.get("targets"):
            sys.exit("FAIL: panel %r has no query" % p.get("title"))
    exprs = exprs_of(dash, [])
    used = set()
    for e in exprs:
        names = set(re.findall(r"\bfleetburn_[a-z0-9_]+", e))
        if not names:
            sys.exit("FAIL: %r names no fleetburn metric" % e)
        unknown = names - families
        if unknown:
            sys.exit("FAIL: %r uses %s, which /metrics does not export" % (e, ", ".join(sorted(unknown))))
        used |= names
    checked = 0
    if len(sys.argv) > 3:
        metric = (re.findall(r'^fleetburn_node_metric\{[^}]*metric="([^"]+)"', scrape, re.M) or ["none"])[0]
        for e in exprs:
            if e.startswith("label_values("):
                continue
            q = e.replace("$node", ".*").replace("$metric", metric).replace("$__rate_interval", "1m")
            url = sys.argv[3] + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
            try:
                answer = json.load(urllib.request.urlopen(url, timeout=10))
            except urllib.error.HTTPError as err:
                sys.exit("FAIL: Prometheus refused %r: %s" % (q, err.read().decode()[:300]))
            if answer.get("status") != "success":
                sys.exit("FAIL: Prometheus refused %r: %s" % (q, answer))
            checked += 1
    print("ok: %d panels, %d queries using %d fleetburn metrics, all exported%s"
          % (len(panels), len(exprs), len(used), ", %d evaluated by Prometheus" % checked if checked else ""))


if __name__ == "__main__":
    main()
