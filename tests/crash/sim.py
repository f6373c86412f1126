# SPDX-License-Identifier: MIT
"""sim.py - the crash simulator.

A trace (crashrec.c) lists every write, truncate, sync and namespace
change a process made to the files of one directory.  From it this builds
crash images: what the directory could hold after a machine crash at a
point of the trace, and checks that each one keeps what was acknowledged.

The persistence model, which no more than POSIX promises:
  - a write, zeroing, hole punch or size change of a file is durable once
    the file is fsynced or fdatasynced (or written through O_SYNC/O_DSYNC);
  - until then any subset of its 4 KiB pages may be on disk, in any
    order, and a page may be torn at a 512-byte boundary; its size may be
    any it had since (changes of one file's size persist in order);
  - a name (create, unlink, rename, mkdir) is durable once its directory
    is fsynced; until then a prefix of the pending name changes persists.
A crash image is the durable state plus a random choice of what was not
yet durable.

Modes:
  remote  (--snaps, a trace or none) the images are snapshots of a Ceph
          pool (poolsnap.c), or of an S3 bucket's prefix taken with the
          daemon stopped (s3snap.py, --s3snap), taken while the workload
          ran on a remote= mount: each is what a machine lost at that
          moment leaves; each is mounted (from the data directory as the
          crash left it, or an empty one) and checked as in objfs mode,
          then collected (objfsctl gc, grace 0) and checked with objfsctl
          check --remote.
  objfs   the trace is of an objfs daemon's data directory, the log of
          tests/crash/workload.py; each image is opened with crashcheck
          (the store, without FUSE, with objfsctl check before and after)
          and every fsynced byte and every name that existed at the last
          durability point must be there, every other byte one the
          workload wrote (or zero).
  sqlite  the trace is of sqlite_load.py's directory; each image must pass
          PRAGMA integrity_check and hold every transaction whose COMMIT
          returned (unless --lossy: then losses are counted, not failures).
Prints "crash images: N, failures: F" and the first failures.
"""
import argparse
import functools
import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

from sealflag import sealed

(R_PATH, R_OPEN, R_WRITE, R_ZERO, R_TRUNC, R_PUNCH, R_EXTEND, R_SYNC,
 R_UNLINK, R_MKDIR, R_RENAME) = range(1, 12)
HDR = struct.Struct("<QQQQQ")
PAGE = 4096
BLOCK = 65536
ZERO_BLOCK = bytes(BLOCK)


# ---- the trace and the persistence model -----------------------------

def parse(path):
    buf = memoryview(open(path, "rb").read())
    names = {}
    ops = []
    off = 0
    while off < len(buf):
        tp, t, a, b, c = HDR.unpack_from(buf, off)
        off += HDR.size
        typ, pid = tp & 0xffffffff, tp >> 32
        data = None
        if typ in (R_PATH, R_WRITE):
            data = buf[off:off + c]
            off += c
        if typ == R_PATH:
            names[a] = bytes(data).decode()
            continue
        ops.append((typ, names[pid], t, a, b, data,
                    names.get(a) if typ == R_RENAME else None))
    return ops


def parent(p):
    return p.rsplit("/", 1)[0] if "/" in p else "."


class Obj:
    """A file: its durable bytes, and the changes since, in order."""
    __slots__ = ("dur", "pend", "size")

    def __init__(self):
        self.dur = bytearray()
        self.pend = []      # (kind, off, data or length, size after)
        self.size = 0

    def change(self, kind, off, x):
        n = len(x) if kind == "w" else x
        if kind in ("w", "z"):
            self.size = max(self.size, off + n)
        elif kind == "t":
            self.size = off
        elif kind == "e":
            self.size = max(self.size, off)
        self.pend.append((kind, off, x, self.size))

    def fold(self):
        c = self.dur
        for kind, off, x, size in self.pend:
            apply_change(c, kind, off, x, 0, None)
            resize(c, size)
        self.pend = []


def resize(c, size):
    if len(c) < size:
        c.extend(bytes(size - len(c)))
    else:
        del c[size:]


def apply_change(c, kind, off, x, frac, rng):
    """Apply one change to @c; with @rng, each page only with probability
    @frac, and sometimes torn."""
    if kind == "t":
        del c[off:]
        return
    if kind == "e":
        return
    n = len(x) if kind == "w" else x
    if rng is None or frac >= 1.0:
        pieces = [(off, off + n)]
    elif frac <= 0.0:
        return
    else:
        pieces = []
        pos, end = off, off + n
        while pos < end:
            nxt = min(end, (pos // PAGE + 1) * PAGE)
            if rng.random() < frac:
                stop = nxt
                if rng.random() < 0.05:
                    stop = min(nxt, (pos // 512 + rng.randint(0, 8)) * 512)
                if stop > pos:
                    pieces.append((pos, stop))
            pos = nxt
    for a, b in pieces:
        if len(c) < b:
            c.extend(bytes(b - len(c)))
        c[a:b] = x[a - off:b - off] if kind == "w" else bytes(b - a)


class Model:
    def __init__(self):
        self.ns = {".": "D"}       # now
        self.dur_ns = {".": "D"}   # durable
        self.pend_ns = []          # (kind, path, other, obj)

    def step(self, op):
        typ, path, t, a, b, data, path2 = op
        ns = self.ns
        o = ns.get(path)
        if typ == R_OPEN:
            if a or not isinstance(o, Obj):
                o = Obj()
                ns[path] = o
                self.pend_ns.append(("create", path, None, o))
            if b:
                o.fold()
        elif typ == R_MKDIR:
            ns[path] = "D"
            self.pend_ns.append(("mkdir", path, None, "D"))
        elif typ == R_UNLINK:
            ns.pop(path, None)
            self.pend_ns.append(("unlink", path, None, None))
        elif typ == R_RENAME:
            o = ns.pop(path, None)
            ns[path2] = o
            self.pend_ns.append(("rename", path, path2, o))
        elif typ == R_SYNC:
            if o == "D":
                self.sync_dir(path)
            elif isinstance(o, Obj):
                o.fold()
        elif isinstance(o, Obj):
            if typ == R_WRITE:
                o.change("w", a, data)
            elif typ == R_ZERO:
                o.change("z", a, b)
            elif typ == R_PUNCH:
                n = max(0, min(b, o.size - a))
                if n:
                    o.change("z", a, n)
            elif typ == R_TRUNC:
                o.change("t", a, None)
            elif typ == R_EXTEND:
                o.change("e", a, None)

    def sync_dir(self, d):
        keep = []
        for e in self.pend_ns:
            kind, p, p2, o = e
            if parent(p2 if kind == "rename" else p) == d:
                apply_ns(self.dur_ns, e)
            else:
                keep.append(e)
        self.pend_ns = keep

    def image(self, rng, dest):
        """Write a crash image of the state now under @dest."""
        ns = dict(self.dur_ns)
        k = len(self.pend_ns)
        k = rng.choice((0, k, rng.randint(0, k)))
        for e in self.pend_ns[:k]:
            apply_ns(ns, e)
        frac = rng.choice((0.0, 0.3, 0.7, 1.0, rng.random()))
        made = {}
        for path in sorted(ns, key=lambda p: (p.count("/"), p)):
            o = ns[path]
            full = os.path.join(dest, path)
            if o == "D":
                os.makedirs(full, exist_ok=True)
                continue
            if o is None:
                continue
            if id(o) not in made:
                made[id(o)] = crash_content(o, rng, frac)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            write_sparse(full, made[id(o)])


def apply_ns(ns, e):
    kind, p, p2, o = e
    if kind in ("create", "mkdir"):
        ns[p] = o
    elif kind == "unlink":
        ns.pop(p, None)
    elif kind == "rename":
        ns.pop(p, None)
        ns[p2] = o


def crash_content(o, rng, frac):
    c = bytearray(o.dur)
    n = len(o.pend)
    m = rng.choice((0, n, rng.randint(0, n)))
    size = len(o.dur) if m == 0 else o.pend[m - 1][3]
    for i, (kind, off, x, _) in enumerate(o.pend):
        if kind == "t":
            if i < m:
                del c[off:]
            continue
        apply_change(c, kind, off, x, frac, rng)
    resize(c, size)
    return c


def write_sparse(path, c):
    with open(path, "wb") as f:
        mv = memoryview(c)
        for off in range(0, len(c), BLOCK):
            blk = mv[off:off + BLOCK]
            if blk != ZERO_BLOCK[:len(blk)]:
                f.seek(off)
                f.write(blk)
        f.truncate(len(c))


def crash_points(ops, n, rng):
    """Trace positions to crash after: around every sync, and at random."""
    syncs = [i for i, op in enumerate(ops) if op[0] == R_SYNC]
    pts = set()
    for i in syncs:
        pts.update((i - 1, i))
    pts = sorted(p for p in pts if p >= 0)
    if len(pts) > n // 2:
        pts = sorted(rng.sample(pts, n // 2))
    pts += [rng.randrange(len(ops)) for _ in range(n - len(pts))]
    pts.append(len(ops) - 1)            # the end: what a kill -9 left
    return sorted(pts)


def images(ops, n, rng, work):
    """Yield (time of the crash, image directory) for @n crash images."""
    model = Model()
    pts = crash_points(ops, n, rng)
    j = 0
    for i, op in enumerate(ops):
        model.step(op)
        while j < len(pts) and pts[j] == i:
            yield op[2], crash_image(model, rng, work)
            j += 1


def crash_image(model, rng, work):
    """A crash image of @model's state now, in @work/img."""
    img = os.path.join(work, "img")
    shutil.rmtree(img, ignore_errors=True)
    os.makedirs(img)
    model.image(rng, img)
    # A machine crash takes the arena with it: the DATA/arena an image
    # holds names one a rebooted machine does not have (and the recording
    # daemon's, if it is still there, is not this image's to adopt).
    try:
        os.unlink(os.path.join(img, "arena"))
    except FileNotFoundError:
        pass
    return img


def images_at(ops, times, rng, work):
    """Yield a crash image of the data directory for each time in
    @times (ascending): what the disk could hold after a machine crash
    then, from every operation of the trace that returned before it."""
    model = Model()
    i = 0
    for T in times:
        while i < len(ops) and ops[i][2] < T:
            model.step(ops[i])
            i += 1
        yield crash_image(model, rng, work)


# ---- objfs: what the workload was told ---------------------------------

@functools.lru_cache(maxsize=None)
def wdata(seed, n):
    return random.Random(seed).randbytes(n)


class Workload:
    """The workload's log: files by id, with their history."""

    def __init__(self, path):
        self.ops = [json.loads(line) for line in open(path)]
        self.ops.sort(key=lambda o: o["t0"])
        fid = {}
        nxt = [0]
        for o in self.ops:          # give every file an id
            k = o["op"]
            if k in ("create", "mkdir"):
                nxt[0] += 1
                fid[o["path"]] = nxt[0] if k == "create" else "D"
            o["fid"] = fid.get(o["path"])
            if k == "copy":
                o["sfid"] = fid.get(o["src"])
            if k == "rename":
                fid[o["dst"]] = fid.pop(o["path"])
            elif k == "unlink":
                fid.pop(o["path"], None)
        self.cache = {}             # fid -> (ops applied, bytes)

    def content(self, fid, upto):
        """The bytes of file @fid after its content ops in @upto."""
        done, c = self.cache.get(fid, (0, bytearray()))
        if done > len(upto):
            done, c = 0, bytearray()
        c = bytearray(c)
        for o in upto[done:]:
            wchange(c, o, self)
        self.cache[fid] = (len(upto), bytes(c))
        return c

    def copied(self, o):
        """The bytes copy @o put down: its source's as they were when it
        began (the workload is one thread: every change to the source
        that ended before is in, none after)."""
        key = ("copy", o["t0"])
        if key not in self.cache:
            src = [x for x in self.ops if x["fid"] == o["sfid"] and
                   x["op"] in CONTENT and x["t1"] < o["t0"]]
            b = bytes(self.content(o["sfid"], src))
            if len(b) != o["len"]:
                raise SystemExit("copy at %d: the source had %d bytes, "
                                 "the workload copied %d" %
                                 (o["t0"], len(b), o["len"]))
            self.cache[key] = (0, b)
        return self.cache[key][1]

    def opdata(self, o):
        """The bytes write, append or copy @o put at o["off"]."""
        if o["op"] == "copy":
            return self.copied(o)
        return wdata(o["seed"], o["len"])


def wchange(c, o, w):
    k = o["op"]
    if k in ("write", "append", "copy"):
        end = o["off"] + o["len"]
        if len(c) < end:
            c.extend(bytes(end - len(c)))
        c[o["off"]:end] = w.opdata(o)
    elif k == "truncate":
        resize(c, o["size"])
    elif k == "punch":
        end = min(len(c), o["off"] + o["len"])
        if end > o["off"]:
            c[o["off"]:end] = bytes(end - o["off"])


CONTENT = ("write", "append", "copy", "truncate", "punch")
WINDOW_NS = 3 * 10**9    # the promise is "about a second": 1 s, and slack
NAMES = ("create", "mkdir", "rename", "unlink")


def check_objfs(w, T, out, fails, T_hi=None, window=WINDOW_NS):
    """Compare the dump of an image (crashcheck's @out) with what the
    workload had been told before time @T (an operation that ended before
    @T is in; one begun after @T_hi, default @T, is not)."""
    ops = [o for o in w.ops if o["t0"] < (T_hi or T)]
    done = [o for o in ops if o["t1"] < T]
    # A seal or unseal makes everything committed durable, as fsync does.
    points = [o for o in done if o["op"] in ("fsync", "dirsync", "seal",
                                            "unseal")]
    P = points[-1]["t0"] if points else 0
    # objfs checkpoints its index every second (with remote=, ships it
    # every 100 ms): a name or attribute change older than the window is
    # durable without any fsync.
    P = max(P, T - window)
    # Names durable at the last durability point, and the ones that may
    # have changed since.
    names = {"": "D"}
    for o in done:
        if o["t1"] >= P or o["op"] not in NAMES:
            continue
        if o["op"] in ("create", "mkdir"):
            names[o["path"]] = o["fid"]
        elif o["op"] == "rename":
            names[o["dst"]] = names.pop(o["path"], None)
        else:
            names.pop(o["path"], None)
    loose = set()
    for o in ops:
        if o["op"] in NAMES and not (o["t1"] < P):
            loose.add(o["path"])
            if o["op"] == "rename":
                loose.add(o["dst"])
    seen = {}
    for root, dirs, files in os.walk(out):
        rel = os.path.relpath(root, out)
        rel = "" if rel == "." else rel
        for d in dirs:
            seen[os.path.join(rel, d)] = "D"
        for f in files:
            if rel == "" and f in (".xattrs", ".sealed"):
                continue
            seen[os.path.join(rel, f)] = "F"
    ever = set(names) | loose
    for p in seen:
        if p not in ever:
            fails.append("name %r was never made" % p)
    for p, f in names.items():
        if p == "" or p in loose:
            continue
        want = "D" if f == "D" else "F"
        if seen.get(p) != want:
            fails.append("name %r, durable, is %s" %
                         (p, "missing" if p not in seen else "wrong type"))
    # Every file that may be in the image: its bytes.
    where = {}
    for o in ops:
        if o["op"] == "create":
            where.setdefault(o["fid"], set()).add(o["path"])
        elif o["op"] == "rename":
            where.setdefault(o["fid"], set()).add(o["dst"])
    for fid, paths in where.items():
        present = [p for p in paths if seen.get(p) == "F"]
        durable = [p for p, f in names.items() if f == fid]
        if len(present) > 1:
            fails.append("file %d is at %s at once" % (fid, present))
            continue
        if durable and durable[0] not in loose and not present:
            fails.append("file %d (%s) is gone" % (fid, durable[0]))
            continue
        if not present:
            continue
        check_bytes(w, fid, ops, done, os.path.join(out, present[0]),
                    present[0], fails)
    check_xattrs(ops, done, P, names, loose, out, fails)
    check_sealed(ops, done, names, loose, out, fails)


def check_sealed(ops, done, names, loose, out, fails):
    """A seal or an unseal that returned is in the image (each is durable
    when it returns); one in flight may be either way."""
    got = set()
    path = os.path.join(out, ".sealed")
    if os.path.exists(path):
        got = set(line.rstrip("\n") for line in open(path))
    for p, fid in names.items():
        if p in loose or fid == "D":
            continue
        mine = [o for o in ops if o["fid"] == fid and
                o["op"] in ("seal", "unseal")]
        if any(o not in done for o in mine):
            continue
        want = bool(mine) and mine[-1]["op"] == "seal"
        if (p in got) != want:
            fails.append("%s: %s, acknowledged, but the image has it %s" %
                         (p, "sealed" if want else "not sealed",
                          "sealed" if p in got else "not sealed"))


def check_bytes(w, fid, ops, done, path, name, fails):
    mine = [o for o in ops if o["fid"] == fid]
    # A seal writes the file out and makes it durable, as fsync does.
    syncs = [o for o in mine if o["op"] in ("fsync", "seal") and
             o in done]
    base_t = syncs[-1]["t0"] if syncs else -1
    base_ops = [o for o in mine if o["op"] in CONTENT and o["t1"] < base_t]
    free = [o for o in mine if o["op"] in CONTENT and not o["t1"] < base_t]
    B = w.content(fid, base_ops)
    C = open(path, "rb").read()
    sizes = [len(B)]
    cur = bytearray(B)
    for o in free:
        wchange(cur, o, w)
        sizes.append(len(cur))
    if not min(sizes) <= len(C) <= max(sizes):
        fails.append("%s: size %d, not one it could have (%d..%d)" %
                     (name, len(C), min(sizes), max(sizes)))
        return
    # Which ranges later changes may have touched, and with what.
    spans = []
    size = len(B)
    for o in free:
        k = o["op"]
        if k in ("write", "append", "copy"):
            spans.append((o["off"], o["off"] + o["len"], o))
            size = max(size, o["off"] + o["len"])
        elif k == "punch":
            spans.append((o["off"], o["off"] + o["len"], None))
        else:
            lo, hi = sorted((size, o["size"]))
            spans.append((lo, 1 << 62, None))
            size = o["size"]
    starts = sorted(s[0] for s in spans)
    for off in range(0, len(C), PAGE):
        end = min(len(C), off + PAGE)
        got = C[off:end]
        touch = [s for s in spans if s[0] < end and s[1] > off]
        if not touch:
            if end <= len(B):
                if got != B[off:end]:
                    fails.append("%s: fsynced bytes at %d differ" %
                                 (name, off))
                    return
            elif got != bytes(end - off):
                fails.append("%s: bytes at %d past its size are not zero"
                             % (name, off))
                return
            continue
        if not byte_ok(w, got, off, B, touch):
            fails.append("%s: bytes at %d are none that were written" %
                         (name, off))
            return


def byte_ok(w, got, off, B, touch):
    cands = [B[off:off + len(got)]]
    for a, b, o in touch:
        if o is not None:
            d = w.opdata(o)
            lo, hi = max(a, off), min(b, off + len(got))
            piece = bytearray(cands[0]) if len(cands[0]) == len(got) else \
                bytearray(got)
            piece[lo - off:hi - off] = d[lo - a:hi - a]
            cands.append(bytes(piece))
    if any(c == got for c in cands) or got == bytes(len(got)):
        return True
    for i, byte in enumerate(got):
        p = off + i
        ok = byte == 0 or (p < len(B) and B[p] == byte)
        for a, b, o in touch:
            if ok:
                break
            if o is not None and a <= p < b:
                ok = w.opdata(o)[p - a] == byte
        if not ok:
            return False
    return True


def check_xattrs(ops, done, P, names, loose, out, fails):
    got = {}
    for line in open(os.path.join(out, ".xattrs")):
        p, v = line.rstrip("\n").split("\t", 1)
        got[p] = v
    last = {}
    maybe = {}
    for o in ops:
        if o["op"] != "setxattr":
            continue
        if o["t1"] < P:
            last[o["fid"]] = o["value"]
        else:
            maybe.setdefault(o["fid"], set()).add(o["value"])
    for p, fid in names.items():
        if p in loose or fid == "D" or fid not in last:
            continue
        ok = {last[fid]} | maybe.get(fid, set())
        if got.get(p) not in ok:
            fails.append("%s: xattr %r, durable, reads %r" %
                         (p, last[fid], got.get(p)))


def run_objfs(args, rng):
    w = Workload(args.log)
    ops = parse(args.trace)
    work = tempfile.mkdtemp(prefix="objfs-crash-", dir=args.tmp)
    n = failed = mounted = 0
    firsts = []
    try:
        for T, img in images(ops, args.images, rng, work):
            n += 1
            if args.only:
                if n != args.only:
                    continue
                shutil.copytree(img, args.keep, symlinks=True)
                print("image %d (crash at %d) copied to %s" % (n, T, args.keep))
                return n, 0
            out = os.path.join(work, "out")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            r = subprocess.run([args.crashcheck, img, out],
                               capture_output=True, text=True)
            fails = []
            if r.returncode != 0:
                fails.append("crashcheck exit %d: %s" %
                             (r.returncode, r.stderr.strip()[-600:]))
            else:
                check_objfs(w, T, out, fails)
            if args.mount and n % args.mount == 0 and not fails:
                mounted += 1
                fails += mount_check(args, img, out)
            if fails:
                failed += 1
                if len(firsts) < 5:
                    firsts.append((n, T, fails[:4]))
                    if args.keep:
                        shutil.copytree(img, os.path.join(
                            args.keep, "image%d" % n), symlinks=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for i, T, f in firsts:
        print("# image %d (crash at %d): %s" % (i, T, "; ".join(f)))
    print("# the workload sealed %d files and unsealed %d" % (
        sum(o["op"] == "seal" for o in w.ops),
        sum(o["op"] == "unseal" for o in w.ops)))
    print("crash images: %d, failures: %d, mounted through FUSE: %d"
          % (n, failed, mounted))
    return n, failed


def mount_objfs(objfs, opts, mnt, logf, seconds):
    """Start objfs -f -o @opts on @mnt, its log in @logf: (the process,
    None) once mounted within @seconds, or (the process, why not)."""
    with open(logf, "w") as lf:
        p = subprocess.Popen([objfs, "-f", "-o", opts, mnt],
                             stdout=subprocess.DEVNULL, stderr=lf)
    for _ in range(seconds * 10):
        if os.path.ismount(mnt) or p.poll() is not None:
            break
        subprocess.run(["sleep", "0.1"])
    if not os.path.ismount(mnt):
        return p, open(logf).read()[-300:]
    return p, None


def umount_objfs(p, mnt):
    subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def mount_check(args, img, out):
    """Mount @img for real and compare every file with crashcheck's."""
    mnt = tempfile.mkdtemp(prefix="objfs-crash-mnt-", dir=args.tmp)
    logf = mnt + ".log"
    fails = []
    p, why = mount_objfs(args.objfs, "data=%s,arena=16M" % img, mnt, logf,
                         10)
    try:
        if why is not None:
            return ["the image did not mount: %s" % why]
        r = subprocess.run(["diff", "-r", "--no-dereference", "-x",
                            ".xattrs", "-x", ".sealed", out, mnt],
                           capture_output=True,
                           text=True)
        if r.returncode != 0:
            fails.append("the mount differs: %s" % r.stdout[:300])
    finally:
        umount_objfs(p, mnt)
        os.rmdir(mnt)
        os.unlink(logf)
    return fails


# ---- remote=: crash images of the pool or bucket -----------------------------------

def run_remote(args, rng):
    """Each snapshot poolsnap (or s3snap) took while the workload ran is
    what a machine lost at that moment leaves in the pool (the bucket).
    Each is copied into a namespace (prefix) of its own, mounted from the
    data directory as the crash left it or from an empty one (the
    machine's disk went with it) and compared with the workload's log;
    then its garbage is collected (grace 0) and every file read again,
    and objfsctl check --remote must pass on what the mount left."""
    w = Workload(args.log)
    args.rebuilt = 0
    snaps = [l.split() for l in open(args.snaps) if l.strip()]
    if args.images and len(snaps) > args.images:
        keep = sorted(rng.sample(range(len(snaps) - 1), args.images - 1))
        snaps = [snaps[i] for i in keep] + [snaps[-1]]
    work = tempfile.mkdtemp(prefix="objfs-crash-", dir=args.tmp)
    n = failed = objs = kept = 0
    firsts = []
    # With a trace of the data directory, every other image keeps the
    # machine's disk as the crash left it (the index possibly behind the
    # pool, or ahead of it); the others start from an empty one.
    local = images_at(parse(args.trace), [int(x[1]) for x in snaps], rng,
                      work) if args.trace else None
    try:
        for name, t0, t1 in snaps:
            n += 1
            ns = "%s.img%d" % (args.ns, n)
            d = os.path.join(work, "i%d" % n)
            os.makedirs(d)
            img = next(local) if local else None
            if img and n % 2 == 1:
                os.rename(img, os.path.join(d, "data"))
                kept += 1
            fails, k = remote_image(args, w, name, int(t0), int(t1), ns, d)
            objs += k
            if fails:
                failed += 1
                if len(firsts) < 5:
                    firsts.append((n, name, fails[:4]))
            img_wipe(args, ns)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for i, name, f in firsts:
        print("# image %d (snapshot %s): %s" % (i, name, "; ".join(f)))
    print("crash images: %d, failures: %d, objects copied: %d, "
          "with the disk as the crash left it: %d (its index behind the "
          "pool's log, built anew: %d)" % (n, failed, objs, kept,
                                           args.rebuilt))
    return n, failed


# An image, made from snapshot SNAP under the name NS, is wiped and
# mounted the same way whatever holds it: a pool (poolsnap.c) or an S3
# bucket (s3snap.py).
def img_copy(args, snap, ns):
    if args.s3snap:
        cmd = [args.s3snap, "copy", args.bucket, args.snapdir, snap,
               ns + "/"]
    else:
        cmd = [args.poolsnap, "copy", args.conf, args.pool, args.ns, snap,
               args.imgpool, ns]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "%s copy: %s" % (os.path.basename(cmd[0]),
                                r.stderr.strip()[-300:])
    return int(r.stdout.split()[1])


def img_wipe(args, ns, prefix=""):
    if args.s3snap:
        cmd = [args.s3snap, "wipe", args.bucket, ns + "/" + prefix]
    else:
        cmd = [args.poolsnap, "wipe", args.conf, args.imgpool, ns] + \
            ([prefix] if prefix else [])
    return subprocess.run(cmd, capture_output=True).returncode


def img_remote(args, ns):
    """(the mount's remote= options, objfsctl check's --remote ones)"""
    if args.s3snap:
        spec = "s3://%s/%s" % (args.bucket, ns)
        # The tests' gateway is http:// on 127.0.0.1.
        return ("remote_insecure,remote=" + spec,
                ["--remote", spec, "--remote-insecure"])
    spec = "rados:%s/%s" % (args.imgpool, ns)
    return ("remote=%s,remote_conf=%s" % (spec, args.conf),
            ["--remote", spec, "--remote-conf", args.conf])


def remote_image(args, w, snap, t0, t1, ns, d):
    data, mnt, out = (os.path.join(d, x) for x in ("data", "mnt", "out"))
    for x in (data, mnt, out):
        os.makedirs(x, exist_ok=True)
    objs = img_copy(args, snap, ns)
    if isinstance(objs, str):
        return [objs], 0
    if args.damage:
        # The checker's own check: an image without its chunks must fail.
        if img_wipe(args, ns, "c.") != 0:
            return ["the image's chunks could not be removed"], objs
    remote, check_remote = img_remote(args, ns)
    fails = []
    logf = os.path.join(d, "objfs.log")
    p, why = mount_objfs(args.objfs, "data=%s,%s,%s" % (data, args.opts,
                                                         remote), mnt, logf,
                         60)
    try:
        if why is not None:
            return ["the pool did not mount: %s" % why], objs
        dump_tree(mnt, out, fails)
        if fails:
            return fails, objs
        # The pool may be up to 2 s behind t1: the snapshot is taken
        # when the OSD has the new map, after the monitor answered.
        check_objfs(w, t0, out, fails, T_hi=t1 + 2 * 10**9,
                    window=args.window * 10**9)
        r = subprocess.run([args.objfsctl, "gc", mnt, "0"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fails.append("objfsctl gc: %s" % r.stderr.strip()[-300:])
        r = subprocess.run(["diff", "-r", "--no-dereference", "-x",
                            ".xattrs", "-x", ".sealed", "-x",
                            ".objfs-status", out, mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fails.append("after the collection the mount differs: %s" %
                         (r.stdout + r.stderr)[:300])
    finally:
        umount_objfs(p, mnt)
    r = subprocess.run([args.objfsctl, "check", data] + check_remote,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fails.append("objfsctl check --remote exit %d: %s" %
                     (r.returncode, (r.stdout + r.stderr).strip()[-400:]))
    log = open(logf).read()
    args.rebuilt += "crash took the rest from it" in log
    shutil.rmtree(d, ignore_errors=True)
    return fails, objs


def dump_tree(mnt, out, fails):
    """Copy the mounted tree into @out as crashcheck does: files, dirs,
    each user.tag in @out/.xattrs, the sealed files in @out/.sealed."""
    with open(os.path.join(out, ".xattrs"), "w") as xf, \
            open(os.path.join(out, ".sealed"), "w") as sf:
        for root, dirs, files in os.walk(mnt):
            rel = os.path.relpath(root, mnt)
            rel = "" if rel == "." else rel
            dirs.sort()
            for dn in dirs:
                os.makedirs(os.path.join(out, rel, dn), exist_ok=True)
            for fn in sorted(files):
                if rel == "" and fn.startswith(".objfs"):
                    continue
                src = os.path.join(root, fn)
                try:
                    shutil.copyfile(src, os.path.join(out, rel, fn))
                except OSError as e:
                    fails.append("%s: %s" % (os.path.join(rel, fn), e))
                    continue
                try:
                    v = os.getxattr(src, "user.tag").decode()
                    xf.write("%s\t%s\n" % (os.path.join(rel, fn), v))
                except OSError:
                    pass
                try:
                    if sealed(src):
                        sf.write(os.path.join(rel, fn) + "\n")
                except OSError as e:
                    fails.append("%s: flags: %s" % (os.path.join(rel, fn), e))


# ---- sqlite: the simulator checked against a known quantity -------------

def run_sqlite(args, rng):
    commits = [json.loads(line) for line in open(args.log)]
    ops = parse(args.trace)
    work = tempfile.mkdtemp(prefix="objfs-crash-", dir=args.tmp)
    n = failed = lost = 0
    firsts = []
    try:
        for T, img in images(ops, args.images, rng, work):
            n += 1
            acked = max([c["id"] for c in commits if c["t1"] < T],
                        default=0)
            begun = max([c["id"] for c in commits if c["t0"] < T],
                        default=0)
            why = None
            try:
                db = sqlite3.connect(os.path.join(img, "db.sqlite"))
                ok = db.execute("PRAGMA integrity_check").fetchone()[0]
                got = db.execute("SELECT coalesce(max(id), 0) FROM t")\
                    .fetchone()[0]
                db.close()
                if ok != "ok":
                    why = "integrity_check: %s" % ok
                elif got > begun:
                    why = "holds commit %d, never begun" % got
                elif got < acked:
                    lost += 1
                    why = "lost commits %d..%d" % (got + 1, acked)
            except sqlite3.Error as e:
                # Before the first commit returned, nothing was promised,
                # not even the table.
                if not (acked == 0 and "no such table" in str(e)):
                    why = "sqlite: %s" % e
            if why:
                failed += 1
                if len(firsts) < 3:
                    firsts.append((n, why))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for i, why in firsts:
        print("# image %d: %s" % (i, why))
    print("crash images: %d, failures: %d (lost commits in %d)"
          % (n, failed, lost))
    return n, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("objfs", "sqlite", "remote"))
    ap.add_argument("--trace")
    ap.add_argument("--log", required=True)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--crashcheck")
    ap.add_argument("--objfs")
    ap.add_argument("--mount", type=int, default=0,
                    help="also mount every Nth image through FUSE")
    ap.add_argument("--tmp", default="/dev/shm")
    ap.add_argument("--keep", help="copy the first failing images here")
    ap.add_argument("--only", type=int, default=0,
                    help="only build image N, copied as it is to --keep")
    ap.add_argument("--snaps", help="remote: poolsnap snaps's output")
    ap.add_argument("--poolsnap")
    ap.add_argument("--s3snap", help="remote: the images are s3snap.py's "
                    "(--bucket, --snapdir) instead of poolsnap's")
    ap.add_argument("--bucket")
    ap.add_argument("--snapdir", help="remote: s3snap.py snaps's DIR")
    ap.add_argument("--objfsctl")
    ap.add_argument("--conf")
    ap.add_argument("--pool")
    ap.add_argument("--ns")
    ap.add_argument("--imgpool")
    ap.add_argument("--opts", default="arena=16M,chunk=64K")
    ap.add_argument("--window", type=int, default=5,
                    help="remote: seconds after which a name change must "
                    "be in the pool")
    ap.add_argument("--damage", action="store_true",
                    help="remote: remove each image's chunks (its checks "
                    "must then fail)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.mode == "remote":
        run_remote(args, rng)
    elif args.mode == "objfs":
        run_objfs(args, rng)
    else:
        run_sqlite(args, rng)


if __name__ == "__main__":
    main()
