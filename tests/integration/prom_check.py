#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""prom_check.py FILE [MIN_WRITES]: FILE must be Prometheus text exposition
format as objfs writes it: every sample named objfs_*, declared by a TYPE
line before it, counters ending in _total, a histogram per op whose
buckets never decrease, whose +Inf bucket equals its count; at least
MIN_WRITES write requests counted.  Prints what is wrong; exit 1 then."""
import re
import sys

text = open(sys.argv[1]).read()
min_writes = int(sys.argv[2]) if len(sys.argv) > 2 else 0
types, problems, hist = {}, [], {}
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')
for line in text.splitlines():
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ", 3)
        types[name] = kind
        continue
    if line.startswith("# HELP ") or not line:
        continue
    m = sample.match(line)
    if not m:
        problems.append("not a sample: %r" % line)
        continue
    name, labels, value = m.group(1), m.group(3) or "", m.group(4)
    try:
        v = float(value)
    except ValueError:
        problems.append("not a number: %r" % line)
        continue
    base = re.sub(r'_(bucket|sum|count)$', '', name)
    kind = types.get(name) or types.get(base)
    if not name.startswith("objfs_"):
        problems.append("not objfs_*: %s" % name)
    if kind is None:
        problems.append("no TYPE before %s" % name)
    if kind == "counter" and not name.endswith("_total"):
        problems.append("counter without _total: %s" % name)
    if kind == "histogram":
        lab = dict(kv.split("=", 1) for kv in labels.split(",") if kv)
        op = lab.get("op", "").strip('"')
        h = hist.setdefault(op, {"buckets": [], "count": None})
        if name.endswith("_bucket"):
            h["buckets"].append((lab["le"].strip('"'), v))
        elif name.endswith("_count"):
            h["count"] = v
for op, h in hist.items():
    vals = [v for _, v in h["buckets"]]
    if vals != sorted(vals):
        problems.append("%s: buckets decrease: %s" % (op, vals))
    if not h["buckets"] or h["buckets"][-1][0] != "+Inf" or \
            h["buckets"][-1][1] != h["count"]:
        problems.append("%s: +Inf bucket is not the count" % op)
if set(hist) != {"read", "write", "fsync", "metadata"}:
    problems.append("histograms for %s" % sorted(hist))
if hist.get("write", {}).get("count", 0) < min_writes:
    problems.append("only %s writes counted" % hist.get("write", {}).get("count"))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
