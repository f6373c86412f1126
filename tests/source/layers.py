#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The core's layering (doc/design.md, "Modules"), checked on the source.

Prints TAP.  Checks:
  - the file-bytes modules (data.c, iov.c, readahead.c, writeout.c) reach
    chunk copies only through the chunk-store layer (copy.h): they include
    neither spill.h nor local_int.h, call no spill/backing/local function,
    and touch none of the fields a store names its copies by;
  - no loop of calls among the core's files: each file's calls into the
    others, from the functions they define, form a graph without a cycle
    (calls through an ops table, s->copy->x(...), are not edges: that is
    the point of the table);
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
CORE = ABOVE + ["inode.c", "spiller_ops.c", "local.c", "local_obj.c",
                "share.c", "space.c", "spill.c"]
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


files = {os.path.basename(p): text(p) for p in glob.glob(src + "/*.c")}
defs = {}
for name, s in files.items():
    for m in re.finditer(r"^([A-Za-z_]\w*)\(", s, re.M):
        defs.setdefault(m.group(1), set()).add(name)

for name in ABOVE:
    s = files[name]
    probs = []
    for inc in re.findall(r'#include\s+"([^"]+)"', s):
        if inc in ("spill.h", "local_int.h"):
            probs.append(f"{name} includes {inc}")
    for m in re.finditer(r"(?<![\w>.])((?:objfs_spill|objfs_backing|local)_\w+)\s*\(", s):
        probs.append(f"{name}:{s[:m.start()].count(chr(10)) + 1}: calls {m.group(1)}")
    for f in STORE_FIELDS:
        for m in re.finditer(r"\b(c|d|e)->" + f + r"\b", s):
            probs.append(f"{name}:{s[:m.start()].count(chr(10)) + 1}: "
                         f"reads the store's field {m.group(0)}")
    check(f"{name} reaches copies only through the chunk-store layer", probs)

graph = {f: set() for f in CORE}
for name in CORE:
    s = files[name]
    for m in re.finditer(r"(?<![\w>.])([A-Za-z_]\w*)\s*\(", s):
        for d in defs.get(m.group(1), ()):
            if d != name and d in graph and name not in defs[m.group(1)]:
                graph[name].add(d)

# A cycle, if any, by depth-first search.
state = {}
cycle = []


def dfs(u, path):
    state[u] = 1
    for v in sorted(graph[u]):
        if state.get(v) == 1:
            cycle.extend(path[path.index(v):] + [v])
            return True
        if v not in state and dfs(v, path + [v]):
            return True
    state[u] = 2
    return False


for f in sorted(graph):
    if f not in state and dfs(f, [f]):
        break
check("no loop of calls among " + ", ".join(CORE),
      [" -> ".join(cycle)] if cycle else [])
for f in sorted(graph):
    print(f"#   {f} -> {', '.join(sorted(graph[f])) or '-'}")

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
