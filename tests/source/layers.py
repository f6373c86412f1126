#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of doc/design.md ("Layers"), checked on the source.

The rules are not kept here: they are read from doc/design.md, from the
picture in its ```layers block (rows of folders, top to bottom; a folder
calls only the folders of the rows below its own, and `A ─/─> B ...` names
calls A must never make even so) and from its ```paths block (the files a
read, a write and a write-out pass through).

Prints TAP.  Checks, over every source file (src/**, fuse/, meta/):
  - every file is in a folder the picture names;
  - every call from one folder into another, and every #include, goes
    down the picture and against no "never" arrow (a call through an ops
    table, s->copy->x(...), is not a call into its implementation: that
    is what the table is for);
  - no loop of calls among files, nor among folders;
  - each declared path is real (each step calls the next, directly or
    through the named table), passes through at most 5 files, and climbs
    back up at most once;
  - at most 12 files at the top of src/, none over 1,000 lines, a README
    in every folder of the picture;
  - no two names (files or folders) of which one is the other plus a
    suffix (share/shared, spill/spiller, recover/recovery, store/stores);
  - the file bytes (src/bytes/) touch none of the fields a chunk store
    names its copies by.
Usage: layers.py TOPDIR [DESIGN.md]
"""
import glob
import os
import re
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")
design = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    top, "doc", "design.md")

MAX_TOP = 12
MAX_LINES = 1000
MAX_PATH_FILES = 5
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
        for p in problems[:25]:
            print(f"#   {p}")
        if len(problems) > 25:
            print(f"#   ... and {len(problems) - 25} more")
    else:
        print(f"ok {n} - {desc}")


def bail(why):
    print("1..1")
    print(f"not ok 1 - {why}")
    sys.exit(1)


# ---- the rules, from design.md -------------------------------------------

def block(text, tag):
    m = re.search(r"^```" + tag + r"\n(.*?)^```", text, re.S | re.M)
    return m.group(1) if m else None


try:
    with open(design, encoding="utf-8") as f:
        dtext = f.read()
except OSError as e:
    bail(f"cannot read {design}: {e}")
pic = block(dtext, "layers")
if pic is None:
    bail(f"{design} has no ```layers block (the picture of the layers)")

UNIT = r"(?:src/\*\.h|[a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*/|src/[a-z_]+\.c)"
rows, never = [], {}
cur = None
for line in pic.split("\n"):
    if "─/─>" in line:
        a, b = line.split("─/─>", 1)
        src_u = a.split()[-1]
        for tok in b.split():
            if re.fullmatch(UNIT, tok):
                never.setdefault(src_u, set()).add(tok)
            else:
                break
        continue
    if re.match(r"^\s*─", line):
        cur = None
        continue
    left = line.split("│", 1)[0]
    units = [t for t in left.split() if re.fullmatch(UNIT, t)]
    if not units or "│" not in line:
        continue
    if cur is None:
        cur = []
        rows.append(cur)
    cur.extend(units)
row_of = {}
for i, r in enumerate(rows):
    for u in r:
        row_of[u] = i
if len(row_of) < 3:
    bail("design.md's ```layers block names fewer than 3 folders")

# ---- the source ----------------------------------------------------------


def strip(s):
    """Comments and strings say nothing about calls."""
    s = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), s,
               flags=re.S)
    s = re.sub(r"//[^\n]*", "", s)
    return re.sub(r'"(\\.|[^"\\])*"', '""', s)


paths = []
for d in ("src", "src/*", "src/*/*", "fuse", "meta"):
    for ext in ("c", "h"):
        paths += glob.glob(os.path.join(top, d, "*." + ext))
raw, code = {}, {}
for p in sorted(set(paths)):
    rel = os.path.relpath(p, top)
    with open(p, encoding="utf-8") as f:
        raw[rel] = f.read()
    code[rel] = strip(raw[rel])


def unit_of(rel):
    d = os.path.dirname(rel)
    if d == "src":
        return "src/*.h" if rel.endswith(".h") else rel
    return d + "/"


def lineno(s, pos):
    return s.count("\n", 0, pos) + 1


probs = [f"{rel}: in no row of design.md's picture ({unit_of(rel)})"
         for rel in code if unit_of(rel) not in row_of]
check(f"each of the {len(code)} source files is in a folder of design.md's "
      f"picture ({len(row_of)} folders in {len(rows)} rows)", probs)

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined",
            "_Static_assert", "_Alignof", "_Generic"}
defs = {}            # a function with external linkage -> its file
own = {}             # file -> every function it defines
bodies = {}          # (file, function) -> (start offset, body)
for rel, s in code.items():
    if not rel.endswith(".c"):
        continue
    own[rel] = set()
    for m in re.finditer(r"^([A-Za-z_]\w*)\(.*?^}", s, re.M | re.S):
        fn = m.group(1)
        if fn in KEYWORDS:
            continue
        own[rel].add(fn)
        bodies[(rel, fn)] = (m.start(), m.group(0))
        prev = s[:m.start()].rstrip().rsplit("\n", 1)[-1]
        if "static" not in prev:
            defs.setdefault(fn, rel)

# A header's inline function that only calls through a table's field
# (src/remote.h: objfs_remote_chunk_get -> r->ops->chunk_get): a path step
# through that table may be written at its caller.
dispatch = {}        # inline function -> the table field it calls
for rel, s in code.items():
    if not rel.endswith(".h"):
        continue
    for m in re.finditer(r"^static inline [^\n]*\n([A-Za-z_]\w*)\(.*?^}", s,
                         re.M | re.S):
        f = re.findall(r"->ops->(\w+)\s*\(", m.group(0))
        if len(set(f)) == 1:
            dispatch[m.group(1)] = f[0]

CALL = re.compile(r"(?<![\w>.])([A-Za-z_]\w*)\s*\(")
calls = {rel: {} for rel in own}       # file -> {file: (line, fn)}
for rel in own:
    s = code[rel]
    for m in CALL.finditer(s):
        fn = m.group(1)
        if fn in own[rel] or fn not in defs:
            continue
        calls[rel].setdefault(defs[fn], (lineno(s, m.start()), fn))

# ---- the arrows ----------------------------------------------------------


def allowed(a, b):
    if a == b:
        return True
    if a not in row_of or b not in row_of:
        return False
    return row_of[b] > row_of[a] and b not in never.get(a, ())


probs = []
for rel, outs in sorted(calls.items()):
    for to, (ln, fn) in sorted(outs.items()):
        a, b = unit_of(rel), unit_of(to)
        if not allowed(a, b):
            probs.append(f"{rel}:{ln}: calls {fn} ({to}): {a} may not "
                         f"call {b}")
check("every call between folders goes down design.md's picture", probs)

probs = []
for rel, s in sorted(raw.items()):
    for m in re.finditer(r'^#include "([^"]+)"', s, re.M):
        inc = m.group(1)
        if not os.path.exists(os.path.join(top, inc)):
            if inc.startswith(("src/", "fuse/", "meta/")):
                probs.append(f"{rel}:{lineno(s, m.start())}: includes "
                             f"{inc}, which is not there")
            continue
        a, b = unit_of(rel), unit_of(inc)
        if not allowed(a, b):
            probs.append(f"{rel}:{lineno(s, m.start())}: includes {inc}: "
                         f"{a} may not reach {b}")
check("every #include goes down design.md's picture, named from the top",
      probs)


def loops(g):
    """The strongly connected parts of @g with more than one node."""
    index, low, stack, on, out, k = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = k[0]
        k[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
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
                out.append(sorted(part))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


fgraph = {rel: set(outs) for rel, outs in calls.items()}
probs = []
for part in loops(fgraph):
    inner = sorted(f"{a} -> {b} ({calls[a][b][1]})" for a in part
                   for b in fgraph[a] if b in part)
    probs.append("a loop: " + "; ".join(inner))
check(f"no loop of calls among the {len(fgraph)} .c files", probs)

ugraph = {}
for rel, outs in calls.items():
    for to in outs:
        if unit_of(rel) != unit_of(to):
            ugraph.setdefault(unit_of(rel), set()).add(unit_of(to))
probs = ["a loop: " + " <-> ".join(p) for p in loops(ugraph)]
check(f"no loop among the {len(row_of)} folders", probs)

# ---- the paths of a read, a write and a write-out -------------------------

tables = {}          # (table field, file) -> function the table names
for rel, s in code.items():
    for m in re.finditer(r"const struct (\w+) \w+ = \{(.*?)\};", s, re.S):
        for f in re.finditer(r"\.(\w+)\s*=\s*(\w+)\s*,", m.group(2)):
            tables[(f.group(1), rel)] = f.group(2)

pblock = block(dtext, "paths")
probs, npaths = [], 0
if pblock is None:
    probs.append("design.md has no ```paths block")
for line in (pblock or "").split("\n"):
    if ":" not in line or " > " not in line:
        continue
    name, chain = line.split(":", 1)
    steps = [t.strip() for t in chain.split(" > ")]
    npaths += 1
    hops = []
    for st in steps:
        m = re.fullmatch(r"(\S+):(\w+)(?:\s+\[(\w+)->(\w+)\])?", st)
        if not m:
            probs.append(f"{name}: cannot read the step '{st}'")
            hops = None
            break
        hops.append(m.groups())
    if not hops:
        continue
    files = []
    for h in hops:
        if h[0] not in files:
            files.append(h[0])
    if len(files) > MAX_PATH_FILES:
        probs.append(f"{name}: passes through {len(files)} files "
                     f"(at most {MAX_PATH_FILES})")
    climbs = 0
    for (fa, fna, _, _), (fb, fnb, tbl, fld) in zip(hops, hops[1:]):
        if (fa, fna) not in bodies:
            probs.append(f"{name}: {fa} defines no {fna}")
            continue
        if (fb, fnb) not in bodies:
            probs.append(f"{name}: {fb} defines no {fnb}")
            continue
        body = bodies[(fa, fna)][1]
        if tbl:
            via = [d for d, f in dispatch.items() if f == fld]
            ok = (re.search(r"->" + fld + r"\s*\(", body) or
                  any(re.search(r"(?<![\w>.])" + d + r"\s*\(", body)
                      for d in via)) and \
                any(k[0] == fld and v == fnb for k, v in tables.items())
            how = f"through ->{tbl}->{fld}"
        else:
            ok = re.search(r"(?<![\w>.])" + fnb + r"\s*\(", body)
            how = "directly"
        if not ok:
            probs.append(f"{name}: {fa}:{fna} does not call {fb}:{fnb} {how}")
        ua, ub = unit_of(fa), unit_of(fb)
        if ua in row_of and ub in row_of and row_of[ub] < row_of[ua]:
            climbs += 1
        elif fb in files[:files.index(fa)]:
            climbs += 1
    if climbs > 1:
        probs.append(f"{name}: climbs back up {climbs} times (at most once)")
check(f"the {npaths} paths design.md declares are real, through at most "
      f"{MAX_PATH_FILES} files, climbing back up at most once", probs)

# ---- the shape of the tree ------------------------------------------------

topfiles = sorted(p for p in os.listdir(os.path.join(top, "src"))
                  if os.path.isfile(os.path.join(top, "src", p)))
check(f"at most {MAX_TOP} files at the top of src/ ({len(topfiles)}: "
      f"{' '.join(topfiles)})",
      [] if len(topfiles) <= MAX_TOP else [f"{len(topfiles)} files"])

check(f"no source file over {MAX_LINES:,} lines",
      [f"{rel}: {s.count(chr(10))} lines" for rel, s in sorted(raw.items())
       if s.count("\n") > MAX_LINES])

probs = []
for u in row_of:
    if u.endswith("/") and not os.path.exists(os.path.join(top, u,
                                                           "README.md")):
        probs.append(f"{u} has no README.md (what it owns, may call, must "
                     f"never do)")
check("every folder of the picture has a README", probs)

names = set()
for rel in code:
    names.add(os.path.splitext(os.path.basename(rel))[0])
for u in row_of:
    if u.endswith("/"):
        names.add(u.rstrip("/").rsplit("/", 1)[-1])
probs = []
for a in sorted(names):
    for b in sorted(names):
        if a != b and b.startswith(a) and re.fullmatch(r"[a-z]+",
                                                       b[len(a):]):
            probs.append(f"'{a}' and '{b}' differ by a suffix")
check(f"no two of the {len(names)} names differ by a suffix", probs)

probs = []
for rel, s in sorted(code.items()):
    if unit_of(rel) != "src/bytes/" or not rel.endswith(".c"):
        continue
    for f in STORE_FIELDS:
        for m in re.finditer(r"\b(c|d|e)->" + f + r"\b", s):
            probs.append(f"{rel}:{lineno(s, m.start())}: reads the store's "
                         f"field {m.group(0)}")
check("the file bytes touch no field a chunk store names its copies by",
      probs)

print(f"1..{n}")
sys.exit(1 if failed else 0)
