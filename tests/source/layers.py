#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The core's layering (doc/design.md, "Modules"), checked on the source.

Prints TAP.  Checks:
  - the file-bytes modules (data.c, iov.c, readahead.c, writeout.c) reach
    chunk copies only through the chunk-store layer (copy.h): they include
    neither backing.h nor local_int.h, call no spill/backing/local function,
    and touch none of the fields a store names its copies by;
  - no loop of calls among all source files (src/, its folders, fuse/,
    meta/): each file's calls into the others, from the functions they
    define, form a graph whose only cycles are the known ones still to
    break, listed below (calls through an ops table, s->copy->x(...), are
    not edges: that is the point of the table);
  - no source file is longer than 1,000 lines.
Usage: layers.py SRCDIR
"""
import glob
import os
import re
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")
src = os.path.join(top, "src")

ABOVE = ["data.c", "iov.c", "readahead.c", "writeout.c"]
STORE_FIELDS = ["slot", "alt", "home", "slots", "bfd", "no_file",
                "bfile_new", "reading", "nreading"]

n = 0
failed = 0


def check(desc, problems):
    global n, failed
    n += 1
    if problems:
        failed += 1
        print(f"not ok {n} - {desc}")
        for p in problems[:20]:
            print(f"#   {p}")
    else:
        print(f"ok {n} - {desc}")


def text(path):
    with open(path, encoding="utf-8") as f:
        s = f.read()
    # Comments and strings say nothing about calls.
    s = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), s,
               flags=re.S)
    s = re.sub(r'"(\\.|[^"\\])*"', '""', s)
    return s


files = {os.path.basename(p): text(p) for p in glob.glob(src + "/*.c") + glob.glob(src + "/*/*.c")}
defs = {}
for name, s in files.items():
    for m in re.finditer(r"^([A-Za-z_]\w*)\(", s, re.M):
        defs.setdefault(m.group(1), set()).add(name)

for name in ABOVE:
    s = files[name]
    probs = []
    for inc in re.findall(r'#include\s+"([^"]+)"', s):
        if inc in ("backing.h", "local_int.h"):
            probs.append(f"{name} includes {inc}")
    for m in re.finditer(r"(?<![\w>.])((?:objfs_spill|objfs_backing|local)_\w+)\s*\(", s):
        probs.append(f"{name}:{s[:m.start()].count(chr(10)) + 1}: calls {m.group(1)}")
    for f in STORE_FIELDS:
        for m in re.finditer(r"\b(c|d|e)->" + f + r"\b", s):
            probs.append(f"{name}:{s[:m.start()].count(chr(10)) + 1}: "
                         f"reads the store's field {m.group(0)}")
    check(f"{name} reaches copies only through the chunk-store layer", probs)

# Every source file: its calls into functions the others define.  Calls
# through an ops table (s->copy->x(...)) are not edges: that is the point
# of the table.
every = {}
for d in ("src", "src/*", "fuse", "meta"):
    for p in glob.glob(os.path.join(top, d, "*.c")):
        every[os.path.relpath(p, top)] = text(p)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined",
            "_Static_assert", "_Alignof", "_Generic"}
edefs = {}
for name, s in every.items():
    for m in re.finditer(r"^([A-Za-z_]\w*)\(", s, re.M):
        if m.group(1) not in KEYWORDS:
            edefs.setdefault(m.group(1), set()).add(name)
graph = {f: set() for f in every}
for name, s in every.items():
    for m in re.finditer(r"(?<![\w>.])([A-Za-z_]\w*)\s*\(", s):
        ds = edefs.get(m.group(1), ())
        if name not in ds:
            graph[name].update(ds)


def loops(g):
    """The strongly connected parts of @g with more than one file."""
    index, low, stack, on, out, k = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = k[0]
        k[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(frozenset(part))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


KNOWN = []
found = loops(graph)
probs = []
for part in found:
    if part not in KNOWN:
        inner = sorted(f"{a} -> {b}" for a in part for b in graph[a] & part)
        probs.append("a loop: " + "; ".join(inner))
for part in KNOWN:
    if part not in found:
        probs.append("a known loop is broken or changed (take it off KNOWN): "
                     + ", ".join(sorted(part)))
check(f"no loop of calls among the {len(every)} source files "
      f"but the {len(KNOWN)} known to break", probs)
long = []
for d in ("src", "src/base", "fuse", "meta"):
    for p in sorted(glob.glob(os.path.join(top, d, "*.[ch]"))):
        with open(p, encoding="utf-8") as f:
            k = sum(1 for _ in f)
        if k > 1000:
            long.append(f"{os.path.relpath(p, top)}: {k} lines")
check("no source file over 1,000 lines", long)

print(f"1..{n}")
sys.exit(0)
