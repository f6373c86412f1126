#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Summarise scripts/bench results: medians, scaling exponents, ratios
against the targets, a markdown report and a log-log plot (gnuplot)."""
import csv
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

out, arena, published = sys.argv[1], int(sys.argv[2]), sys.argv[3]
GiB = 1 << 30
med = defaultdict(list)
with open(os.path.join(out, "results.csv")) as f:
    for row in csv.DictReader(f):
        med[(row["system"], row["test"], int(row["size_bytes"]))].append(
            float(row["seconds"]))
M = {k: statistics.median(v) for k, v in med.items()}


def get(system, test, size):
    return M.get((system, test, size))


def rt(system, size):
    w, r = get(system, "write", size), get(system, "read", size)
    return None if w is None or r is None else w + r


systems = ["objfs", "before", "tmpfs", "disk", "passthrough", "disk_direct"]
sizes = sorted({k[2] for k in M if k[1] == "write"})
lines = []
say = lines.append
say("# objfs benchmark results\n")
tf = os.path.join(out, "transport")
if os.path.exists(tf):
    say("objfs's transport: %s.\n" % open(tf).read().strip())
say("Arena: %.2f GiB. Round trip = write N GiB (1 MiB writes), drop the page "
    "cache, read back and check every byte. Medians of the repetitions.\n"
    % (arena / GiB))
say("## Round trip\n")
say("| system | size GiB | write s | read s | total s | GiB/s | s/GiB vs smallest |")
say("|---|---|---|---|---|---|---|")
curves = {}
for sy in systems:
    pts = [(s, rt(sy, s)) for s in sizes if rt(sy, s) is not None]
    if not pts:
        continue
    curves[sy] = pts
    base = pts[0][1] / (pts[0][0] / GiB)
    for s, t in pts:
        say("| %s | %g | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            sy, s / GiB, get(sy, "write", s), get(sy, "read", s), t,
            (s / GiB) / t, (t / (s / GiB)) / base))
say("")


def exponent(pts):
    if len(pts) < 2:
        return None
    xs = [math.log(s) for s, _ in pts]
    ys = [math.log(t) for _, t in pts]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else None


pub = []
with open(published) as f:
    for row in csv.reader(l for l in f if not l.startswith("#")):
        if row and row[0] != "size_gb":
            pub.append((float(row[0]) * 1e9, float(row[1])))
say("## Scaling exponent k (time ∝ size^k, least squares on log-log)\n")
say("| system | k | sizes |")
say("|---|---|---|")
for sy, pts in curves.items():
    k = exponent(pts)
    say("| %s | %s | %s |" % (sy, "%.3f" % k if k is not None else "-",
                                ", ".join("%g" % (s / GiB) for s, _ in pts)))
k = exponent(pub)
say("| published object store (reference) | %.3f | 0.25-24 GB |" % k)
say("")

say("## Targets (ratios within this run)\n")
say("| measure | objfs | baseline | ratio | target | met |")
say("|---|---|---|---|---|---|")


def target(name, mine, base, want, higher_is_better=True):
    if mine is None or base is None:
        say("| %s | - | - | - | %s | not measured |" % (name, want))
        return
    ratio = base / mine if higher_is_better else mine / base
    ok = ratio >= want if higher_is_better else ratio <= want
    say("| %s | %.2f s | %.2f s | %.2f | %s %.2f | %s |" % (
        name, mine, base, ratio, ">=" if higher_is_better else "<=", want,
        "yes" if ok else "**no**"))


for n in (1, 4):
    b = n * GiB
    target("dd write %d GiB vs passthrough (speedup)" % n,
           get("objfs", "dd_write", b), get("passthrough", "dd_write", b), 1.5)
    target("dd read %d GiB vs passthrough (speedup)" % n,
           get("objfs", "dd_read", b), get("passthrough", "dd_read", b), 1.8)
    for test in ("dd_write", "dd_read"):
        m, t = get("objfs", test, b), get("tmpfs", test, b)
        if m and t:
            say("| %s %d GiB vs tmpfs (report only) | %.2f s | %.2f s | %.2f | - | - |"
                % (test.replace("_", " "), n, m, t, t / m))
target("cp into the mount vs passthrough", get("objfs", "cp_in", GiB),
       get("passthrough", "cp_in", GiB), 1.0)
target("cp out of the mount vs passthrough", get("objfs", "cp_out", GiB),
       get("passthrough", "cp_out", GiB), 1.0)
big = 4 * arena
if (("objfs", "write", big) in M):
    target("round trip at 4x arena vs disk O_DIRECT (time ratio)", rt("objfs", big),
           rt("disk_direct", big), 1.3, higher_is_better=False)
two = 2 * arena
if rt("objfs", big) and rt("objfs", two):
    r = (rt("objfs", big) / 4) / (rt("objfs", two) / 2)
    say("| s/GiB at 4x arena over s/GiB at 2x arena | | | %.2f | <= 1.15 | %s |"
        % (r, "yes" if r <= 1.15 else "**no**"))
if rt("disk_direct", big) and rt("disk_direct", two):
    r = (rt("disk_direct", big) / 4) / (rt("disk_direct", two) / 2)
    say("| the same ratio for the disk itself, O_DIRECT (report only) | | | %.2f | - | - |" % r)
# What two regimes give: the first arena-full at objfs' own in-memory
# speed, every byte beyond it at the disk's own O_DIRECT speed.
mem = [t / (s / GiB) for s, t in curves.get("objfs", []) if s <= arena / 2]
if mem and rt("disk_direct", big):
    m = statistics.median(mem)
    d = rt("disk_direct", big) / (big / GiB)
    say("| the same ratio estimated from %.2f s/GiB in memory and the disk's %.2f s/GiB beyond (report only) | | | %.2f | - | - |"
        % (m, d, (m + 3 * d) / (2 * (m + d))))
if "objfs" in curves and exponent(curves["objfs"]) is not None:
    k = exponent(curves["objfs"])
    say("| objfs scaling exponent k | | | %.3f | <= 1.05 | %s |"
        % (k, "yes" if k <= 1.05 else "**no**"))
    kk = exponent([p for p in curves["objfs"] if p[0] <= arena])
    if kk is not None:
        say("| objfs k up to the arena size (report only) | | | %.3f | - | - |" % kk)
if rt("objfs", big) and rt("objfs", two) and rt("disk_direct", big) and rt("disk_direct", two):
    per = lambda sy: (rt(sy, big) - rt(sy, two)) / ((big - two) / GiB)
    say("| s per extra GiB from 2x to 4x arena, objfs vs disk O_DIRECT (report only) | %.2f s | %.2f s | %.2f | - | - |"
        % (per("objfs"), per("disk_direct"), per("objfs") / per("disk_direct")))
for test in ("create", "stat", "unlink", "rsync_in", "rsync_out"):
    size = 10000 if test in ("create", "stat", "unlink") else 1000
    target("%s vs passthrough" % test.replace("_", " "), get("objfs", test, size),
           get("passthrough", test, size), 1.0)
    m, t = get("objfs", test, size), get("tmpfs", test, size)
    if m and t:
        say("| %s vs tmpfs (report only) | %.2f s | %.2f s | %.2f | - | - |"
            % (test.replace("_", " "), m, t, t / m))
say("")
if get("objfs", "fsync_p50", 4096) is not None:
    say("## Durability: fsync after a 4 KiB append\n")
    say("Plain files on the backing directory's filesystem are the disk's own "
        "`fdatasync`: objfs adds the flush of its journal.\n")
    say("| measure | objfs | disk (plain files) | ratio |")
    say("|---|---|---|---|")
    for t, what in (("fsync_p50", "latency, median"),
                    ("fsync_p99", "latency, 99th percentile")):
        m, d = get("objfs", t, 4096), get("disk", t, 4096)
        if m and d:
            say("| %s | %.2f ms | %.2f ms | %.2f |" % (what, m * 1e3, d * 1e3,
                                                       m / d))
    for k in (1, 8):
        t = "fsyncs_per_s_%d" % k
        m, d = get("objfs", t, 4096), get("disk", t, 4096)
        if m and d:
            say("| fsyncs per second, %d writer%s | %.0f | %.0f | %.2f |"
                % (k, "s" if k > 1 else "", m, d, m / d))
    say("")
sp = sorted({k[2] for k in M if k[1].startswith("space_")})
if sp:
    b = sp[-1]
    say("## Space objfs takes on disk, %g GiB round trip\n" % (b / GiB))
    say("| when | index | backing files |")
    say("|---|---|---|")
    for ph, what in (("written", "the blob written (spilled past the arena)"),
                     ("deleted", "the blob deleted, 3 s later")):
        i, k = get("objfs", "space_index_" + ph, b), get("objfs", "space_backing_" + ph, b)
        if i is not None:
            say("| %s | %.1f MiB | %.1f MiB |" % (what, i / 1024, k / 1024))
    say("")
if any(k[0] == "before" for k in M):
    vf = os.path.join(out, "before.version")
    ver = open(vf).read().strip() if os.path.exists(vf) else "?"
    say("## objfs against the build given with --before (%s)\n" % ver)
    say("Both mounted side by side, the same arena, in this run. Ratio: "
        "objfs's figure over the earlier build's (for times, below 1 is "
        "faster; for fsyncs per second and space, as it reads).\n")
    say("| measure | objfs | before | ratio |")
    say("|---|---|---|---|")

    def row(what, m, b, unit, scale=1.0, fmt="%.2f"):
        if m is None or b is None:
            return
        say(("| %s | " + fmt + " %s | " + fmt + " %s | %s |") % (
            what, m * scale, unit, b * scale, unit,
            "%.2f" % (m / b) if b else "-"))

    for sz in sizes:
        row("round trip %g GiB" % (sz / GiB), rt("objfs", sz), rt("before", sz), "s")
    for test in ("create", "stat", "unlink", "rsync_in", "rsync_out"):
        size = 10000 if test in ("create", "stat", "unlink") else 1000
        row(test.replace("_", " "), get("objfs", test, size),
            get("before", test, size), "s")
        p = get("passthrough", test, size)
        if p and get("before", test, size):
            say("| %s vs passthrough, before (report only) | | | %.2f |"
                % (test.replace("_", " "), p / get("before", test, size)))
    row("fsync after a 4 KiB append, median", get("objfs", "fsync_p50", 4096),
        get("before", "fsync_p50", 4096), "ms", 1e3)
    row("fsync after a 4 KiB append, 99th percentile",
        get("objfs", "fsync_p99", 4096), get("before", "fsync_p99", 4096),
        "ms", 1e3)
    for k in (1, 8):
        t = "fsyncs_per_s_%d" % k
        row("fsyncs per second, %d writer%s" % (k, "s" if k > 1 else ""),
            get("objfs", t, 4096), get("before", t, 4096), "", fmt="%.0f")
    for b in sorted({k[2] for k in M if k[0] == "before" and k[1].startswith("space_")}):
        for ph, what in (("written", "written"), ("deleted", "deleted, 3 s later")):
            for part in ("index", "backing"):
                t = "space_%s_%s" % (part, ph)
                row("%s, %g GiB blob %s" % (part if part == "index" else "backing files", b / GiB, what),
                    get("objfs", t, b), get("before", t, b), "MiB", 1 / 1024, "%.1f")
    say("")
memf = os.path.join(out, "memory.csv")
if os.path.exists(memf):
    mem = dict(l.strip().split(",") for l in open(memf))
    say("## Memory during the largest objfs round trip\n")
    say("- peak daemon RSS (arena pages it touched included): %.0f MiB; arena %.0f MiB"
        % (int(mem["peak_rss_kib"]) / 1024, int(mem["arena_kib"]) / 1024))
    say("- page cache growth (excluding shared memory): %.0f MiB\n"
        % (int(mem["page_cache_growth_kib"]) / 1024))

WORKLOADS = [
    ("tar_x", "tar -x of a tree of 8,000 files", 0.25),
    ("tar_c", "tar -c of it, through a pipe", 0.25),
    ("rm_rf", "rm -rf of it", 0.25),
    ("git_clone", "git clone of a 600-file repository", 0.8),
    ("sqlite_wal", "sqlite3 WAL, 200 commits of 1,000 rows", 0.5),
    ("mmap_write", "write 1 GiB through a shared mapping, msync", 1.0),
    ("mmap_read", "read 1 GiB through a mapping, strided", 1.0),
    ("dd_write", "dd write 2 GiB, 1 MiB blocks", 1.0),
    ("dd_read", "dd read 2 GiB", 1.0),
    ("cp_in", "cp a 2 GiB file in", 1.0),
    ("cp_out", "cp a 2 GiB file out to the disk", 1.0),
    ("torch_save", "torch.save of a 2 GiB state dict", 1.0),
    ("torch_load", "torch.load of it", 1.0),
]
wl = [(t, d, want) for t, d, want in WORKLOADS
      if any(k[0] == "objfs" and k[1] == "wl_" + t for k in M)]
if wl:
    say("## Workloads: objfs against tmpfs\n")
    say("Alternately in one run, medians of the repetitions. Ratio: tmpfs's "
        "time over objfs's (above 1, objfs is faster).\n")
    say("| workload | objfs s | tmpfs s | ratio | target | met |")
    say("|---|---|---|---|---|---|")
    for t, d, want in wl:
        mine = next(v for k, v in M.items() if k[0] == "objfs" and k[1] == "wl_" + t)
        base = next((v for k, v in M.items() if k[0] == "tmpfs" and k[1] == "wl_" + t), None)
        if base is None:
            continue
        r = base / mine
        say("| %s | %.3f | %.3f | %.2f | >= %.2f | %s |" % (
            d, mine, base, r, want, "yes" if r >= want else "**no**"))
    if not any(k[1] == "wl_torch_save" for k in M):
        say("\ntorch.save and torch.load: python3-torch is not installed "
            "on this machine; left out.")
    say("")
rand = [k for k in M if k[1] in ("randwrite_4k", "randread_4k")]
if rand:
    say("## 4 KiB random I/O beyond the arena\n")
    say("One at a time, in a 256 MiB file through a 64 MiB arena, against "
        "the disk's own rate with O_DIRECT on a file of the same size. "
        "MiB/s, medians; ratio objfs over the disk.\n")
    say("| measure | objfs MiB/s | disk O_DIRECT MiB/s | ratio | target | met |")
    say("|---|---|---|---|---|---|")
    for t, name in (("randwrite_4k", "random 4 KiB writes"),
                    ("randread_4k", "random 4 KiB reads")):
        mine = next((v for k, v in M.items() if k[0] == "objfs" and k[1] == t), None)
        base = next((v for k, v in M.items() if k[0] == "disk_direct" and k[1] == t), None)
        if mine is None or base is None:
            continue
        r = mine / base
        say("| %s | %.1f | %.1f | %.2f | >= 0.50 | %s |" % (
            name, mine, base, r, "yes" if r >= 0.5 else "**no**"))
    say("")

if any(k[1] == "cp_inside" for k in M):
    say("## Copies and checkpoints\n")
    say("`cp` of a 4 GiB file inside the mount, and ten saves of a 1 GiB "
        "checkpoint (16 tensors of 64 MiB, 13 of them the same bytes as in "
        "the save before) as ten files. Medians. Memory and disk: what "
        "each added, measured once everything written is durable (objfs: "
        "its arena's use and its backing files' blocks; tmpfs: its use).\n")
    say("| workload | objfs s | tmpfs s | ratio | objfs memory GiB | objfs disk GiB | tmpfs memory GiB |")
    say("|---|---|---|---|---|---|---|")
    for t, name in (("cp_inside", "cp of a 4 GiB file inside"),
                    ("ckpt_saves", "ten saves of a 1 GiB checkpoint")):
        size = next((k[2] for k in M if k[1] == t), None)
        o, tm = get("objfs", t, size), get("tmpfs", t, size)
        om, od = get("objfs", t + "_mem", size), get("objfs", t + "_disk", size)
        tmm = get("tmpfs", t + "_mem", size)
        fmt = lambda v, scale=1.0, f="%.2f": "-" if v is None else f % (v / scale)
        say("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(o), fmt(tm),
            "-" if o is None or tm is None else "%.2f" % (tm / o),
            fmt(om, GiB), fmt(od, GiB), fmt(tmm, GiB)))
    say("")
    on, off = get("objfs", "dedup_on_rt", 4 * GiB), get("objfs", "dedup_off_rt", 4 * GiB)
    if on is not None and off is not None:
        say("Dedup's cost: a round trip of 4 GiB that never dedups through a "
            "1 GiB arena, medians: dedup on %.2f s, off %.2f s; on / off "
            "%.3f (target: at most 1.10).\n" % (on, off, on / off))

restart = sorted({k[2] for k in M if k[1] == "restart_adopt"})
if restart:
    say("## Restart: adopting a killed daemon's arena\n")
    say("Seconds from starting objfs to the mount being up. The daemon "
        "before was killed with SIGKILL, its arena 85% full of bytes "
        "written and not fsynced; \"adopt\" takes them back (every byte "
        "read back and checked afterwards), \"arena removed\" is the same "
        "kill with the arena gone (a machine restart), \"first mount\" an "
        "empty data directory. Medians.\n")
    say("| arena | first mount | adopt | arena removed | adopt / first mount |")
    say("|---|---|---|---|---|")
    for b in restart:
        f, a, l = (get("objfs", t, b) for t in
                   ("restart_fresh", "restart_adopt", "restart_lost"))
        say("| %.2f GiB | %.3f | %.3f | %.3f | %.2f |" % (
            b / GiB, f, a, l, a / f))
    say("")

with open(os.path.join(out, "roundtrip.dat"), "w") as f:
    for sy, pts in curves.items():
        f.write("# %s\n" % sy)
        for s, t in pts:
            f.write("%g %g\n" % (s / GiB, t))
        f.write("\n\n")
    f.write("# published\n")
    for s, t in pub:
        f.write("%g %g\n" % (s / GiB, t))
names = list(curves) + ["published object store (reference, 128 GB host)"]
plot = ", ".join("'%s' index %d with linespoints title '%s'" % (
    os.path.join(out, "roundtrip.dat"), i, n) for i, n in enumerate(names))
gp = """set terminal pngcairo size 900,600 noenhanced
set output '%s'
set logscale xy
set xlabel 'blob size (GiB)'
set ylabel 'round trip (s): write, then read back'
set key top left
set grid
set title 'objfs round trip, arena %.2f GiB, against other systems (this machine, one run)'
plot %s
""" % (os.path.join(out, "roundtrip.png"), arena / GiB, plot)
try:
    subprocess.run(["gnuplot"], input=gp.encode(), check=True)
except (OSError, subprocess.CalledProcessError) as e:
    say("(plot not drawn: %s)" % e)
for part in ("sealed.md", "remote.md", "shared.md", "deleg.md", "s3.md"):
    part = os.path.join(out, part)
    if os.path.exists(part):
        lines += [""] + open(part).read().rstrip("\n").split("\n")
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
