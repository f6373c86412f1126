# SPDX-License-Identifier: MIT
"""killload.py MOUNT JOURNAL SEED [written] - one round of the SIGKILL loop.

First checks the mount against everything earlier rounds were told was
done (JOURNAL, a file outside the mount, one JSON line before and after
each operation), then runs a mixed load until the daemon dies under it:
append-then-fsync logs, rewrite-then-fsync of fsynced files, copies of
those files made with copy_file_range and fsynced (which share chunks
with their source), copies of short-lived sources that are then cut
short, held by an O_PATH descriptor and deleted (the copy and its
source truncated, issue 23's defect 1), creates, renames and unlinks,
and sealed objects: written, sealed (chattr +i) and mapped by the load
while the daemon is killed, unsealed and rewritten.  Prints one line:
    verified BYTES lost BYTES names NAMES missing NAMES
and exits 1 when anything acknowledged was lost.

What must survive a killed daemon: every byte an fsync acknowledged (a
byte rewritten later, without fsync, may be the old or the new one), and
every name change that returned; a copy holds its source's bytes as
they were when it was made, whatever was written to either since; a
sealed object is sealed with the bytes it had, and an unsealed one is
not sealed.
With "written" (a daemon whose arena
the next one adopts), every byte whose write returned, fsynced or not:
a block rewritten is its last version, a log holds every record
appended; only the write in flight at the kill may be either.
"""
import errno
import json
import mmap
import os
import random
import sys

from sealflag import sealed, set_sealed

LOGS = ["log%d" % i for i in range(3)]
FILES = ["rw%d" % i for i in range(3)]
SNAPS = ["cp%d" % i for i in range(3)]     # copies of FILES[i]
TSNAPS = ["tc%d" % i for i in range(3)]    # copies of deleted sources
SEALS = ["sl%d" % i for i in range(2)]     # sealed objects
BLK = 4096


def data(seed, n):
    return random.Random(seed).randbytes(n)


WRITTEN = False


def replay(path):
    """What was acknowledged: per log its records and how many are
    fsynced, per file its blocks, and the names."""
    logs = {n: {"recs": [], "acked": 0} for n in LOGS}
    files = {}
    snaps = {}              # copy -> the snap op that made it
    names = set()
    loose = set()           # names an operation in flight may have changed
    seals = {}              # sealed object -> seed, size, sealed or not
    if not os.path.exists(path):
        return logs, files, names, loose, snaps, seals
    begun = {}
    for line in open(path):
        e = json.loads(line)
        if "b" in e:
            begun[e["b"]] = e
            continue
        o = begun.pop(e["e"])
        k = o["op"]
        if k == "trim":
            lg = logs[o["path"]]
            lg["recs"] = lg["recs"][:o["nrec"]]
            lg["acked"] = min(lg["acked"], o["nrec"])
        elif k == "settle":
            f = files[o["path"]]
            f["acked"] = {int(b): v for b, v in o["blocks"].items()
                          if v is not None}
            f["later"] = {}
        elif k == "append":
            logs[o["path"]]["recs"].append((o["seed"], o["len"]))
            if WRITTEN:
                logs[o["path"]]["acked"] = len(logs[o["path"]]["recs"])
        elif k == "fsync_log":
            logs[o["path"]]["acked"] = o["nrec"]
        elif k == "make":
            files[o["path"]] = {"size": o["size"], "seed": o["seed"],
                                "acked": {}, "later": {}}
        elif k == "rewrite":
            f = files[o["path"]]
            if WRITTEN:
                f["acked"][o["blk"]] = o["seed"]
                f["later"].pop(o["blk"], None)
            else:
                f["later"].setdefault(o["blk"], []).append(o["seed"])
        elif k == "fsync_file":
            f = files[o["path"]]
            for b, seeds in f["later"].items():
                f["acked"][b] = seeds[-1]
            f["later"] = {}
        elif k == "snap":
            snaps[o["path"]] = o
        elif k == "create":
            names.add(o["path"])
        elif k == "rename":
            names.discard(o["path"])
            names.add(o["dst"])
        elif k == "unlink":
            names.discard(o["path"])
        elif k == "seal":
            seals[o["path"]] = {"seed": o["seed"], "size": o["size"],
                                "sealed": True}
        elif k == "unseal":
            seals[o["path"]]["sealed"] = False
    # Whatever was in flight when the daemon died.
    for o in begun.values():
        k = o["op"]
        if k in ("create", "rename", "unlink"):
            loose.add(o["path"])
            loose.add(o.get("dst", o["path"]))
        elif k == "rewrite" and o["path"] in files:
            files[o["path"]]["later"].setdefault(o["blk"], []).append(
                o["seed"])
        elif k == "make":
            loose.add(o["path"])
        elif k == "snap":
            snaps.pop(o["path"], None)  # cut short: any bytes
        elif k in ("seal", "unseal"):
            loose.add(o["path"])        # either state, either bytes
    return logs, files, names, loose, snaps, seals


def differing(mnt, name, want, whole):
    """How many bytes of @name differ from @want (missing ones count):
    all of the file (@whole), or its first len(@want) bytes."""
    try:
        with open(os.path.join(mnt, name), "rb") as f:
            got = f.read() if whole else f.read(len(want))
    except OSError as e:
        got = b""
        print("# %s: %s" % (name, e))
    if got == want:
        return 0
    return sum(1 for a, b in zip(got, want) if a != b) + \
        abs(len(want) - len(got))


def verify(mnt, journal, now):
    """Check the mount; @now gets, per file, which version each block
    holds now (what the next round starts from)."""
    logs, files, names, loose, snaps, seals = replay(journal)
    verified = lost = nnames = missing = 0
    nsealed = sum(1 for n, sl in seals.items()
                  if n not in loose and sl["sealed"])
    if seals:
        print("# sealed objects checked: %d sealed, %d unsealed" % (
            nsealed, sum(1 for n in seals if n not in loose) - nsealed))
    for name, sl in seals.items():
        if name in loose:
            continue
        want = data(sl["seed"], sl["size"])
        bad = differing(mnt, name, want, whole=True)
        verified += len(want)
        lost += bad
        if bad:
            print("# %s, sealed: %d of %d bytes differ" % (name, bad,
                                                         len(want)))
        try:
            now_sealed = sealed(os.path.join(mnt, name))
        except OSError as e:
            now_sealed = None
            print("# %s: %s" % (name, e))
        if now_sealed != sl["sealed"]:
            missing += 1
            print("# %s: %s, acknowledged, but it is %s" % (
                name, "sealed" if sl["sealed"] else "unsealed",
                "sealed" if now_sealed else "not sealed"))
    for name, o in snaps.items():
        want = bytearray(data(o["seed"], o["size"]))
        for b, s in o["blocks"].items():
            lo = int(b) * BLK
            hi = min(o["size"], lo + BLK)
            want[lo:hi] = data(s, BLK)[:hi - lo]
        if "cut" in o:
            del want[o["cut"]:]
        bad = differing(mnt, name, want, whole=True)
        verified += len(want)
        lost += bad
        if bad:
            print("# %s, a copy of %s: %d of %d bytes differ" %
                  (name, o["src"], bad, len(want)))
    for name, lg in logs.items():
        want = b"".join(data(s, n) for s, n in lg["recs"][:lg["acked"]])
        if not want:
            continue
        bad = differing(mnt, name, want, whole=False)
        verified += len(want)
        lost += bad
        if bad:
            print("# %s: %d of %d fsynced bytes lost" % (name, bad,
                                                         len(want)))
    for name, f in files.items():
        base = data(f["seed"], f["size"])
        try:
            got = open(os.path.join(mnt, name), "rb").read()
        except OSError as e:
            print("# %s: %s" % (name, e))
            if name not in loose:
                lost += f["size"]
                verified += f["size"]
            continue
        now[name] = {}
        for b in range(0, (f["size"] + BLK - 1) // BLK):
            lo, hi = b * BLK, min(f["size"], (b + 1) * BLK)
            ok = [f["acked"][b]] if b in f["acked"] else [None]
            ok += f["later"].get(b, [])
            cands = [base[lo:hi] if s is None else data(s, BLK)[:hi - lo]
                     for s in ok]
            verified += hi - lo
            if got[lo:hi] not in cands:
                lost += hi - lo
                print("# %s: block %d is no version that was written" %
                      (name, b))
            else:
                now[name][b] = ok[cands.index(got[lo:hi])]
    if os.environ.get("KILLLOAD_NAMES_LOOSE") == "1":
        # A lost machine: names changed since the last fsync may be gone.
        return verified, lost, nnames, missing
    present = set()
    for root, _, fs in os.walk(os.path.join(mnt, "ns")):
        for x in fs:
            present.add(os.path.relpath(os.path.join(root, x), mnt))
    for n in names - loose:
        nnames += 1
        if n not in present:
            missing += 1
            print("# name %s, acknowledged, is missing" % n)
    for n in present - names - loose:
        missing += 1
        print("# name %s is there but was removed" % n)
    return verified, lost, nnames, missing


def copy_whole(si, dst, size):
    """cp: @size bytes of @si into a new @dst with copy_file_range (its
    chunks shared), fsynced; returns @dst's descriptor."""
    do = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    done = 0
    while done < size:
        k = os.copy_file_range(si, do, size - done, done, done)
        if k <= 0:
            raise OSError(errno.EIO, "copy_file_range: %d of %d"
                          % (done, size))
        done += k
    os.fsync(do)
    return do


def run(mnt, journal, seed, now):
    rng = random.Random(seed)
    jf = open(journal, "a")
    logs, files, names, _, _, seals = replay(journal)
    seq = [0]
    maps = {}       # sealed object -> this process's mapping of it

    def step(op, fn, **kw):
        seq[0] += 1
        sid = "%d.%d" % (seed, seq[0])
        kw.update(op=op, b=sid)
        jf.write(json.dumps(kw) + "\n")
        jf.flush()
        fn()
        jf.write(json.dumps({"e": sid}) + "\n")
        jf.flush()

    def p(x):
        return os.path.join(mnt, x)

    os.makedirs(p("ns"), exist_ok=True)
    fds = {}
    nrec = {}
    for n in LOGS:
        fds[n] = os.open(p(n), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        # Start from what was fsynced: records after it may be lost.
        lg = logs[n]
        keep = sum(ln for _, ln in lg["recs"][:lg["acked"]])
        step("trim", lambda: os.ftruncate(fds[n], keep), path=n,
             nrec=lg["acked"])
        nrec[n] = lg["acked"]
    for n, blocks in now.items():
        step("settle", lambda: None, path=n,
             blocks={str(b): v for b, v in blocks.items()})
    for n in FILES:
        if n not in files:
            s, size = rng.randrange(1 << 30), rng.choice((300000, 2 << 20))

            def make(n=n, s=s, size=size):
                fd = os.open(p(n), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                             0o644)
                os.write(fd, data(s, size))
                os.fsync(fd)
                os.close(fd)
            step("make", make, path=n, seed=s, size=size)
            files[n] = {"size": size, "seed": s}
    # Which version each block of each file holds now (None: the first).
    cur = {n: dict(now.get(n, {})) for n in FILES}
    for n in FILES:
        if n not in now:
            cur[n] = {}
    nid = 0
    held = []       # O_PATH descriptors of deleted sources
    while True:
        r = rng.random()
        if held and rng.random() < 0.1:
            os.close(held.pop(0))
        if r < 0.05:
            # A short-lived source: written, fsynced, copied (its chunks
            # shared), the copy fsynced and cut short, the source cut
            # shorter, held by O_PATH and deleted: the copy keeps its
            # bytes, whatever is given back of the source's file.
            d = rng.choice(TSNAPS)
            s = rng.randrange(1 << 30)
            size = rng.choice((3 << 20, (5 << 20) + 12345, 6 << 20))
            cut = rng.randrange(size // 2, size)
            scut = rng.randrange(0, size // 2)

            def tsnap(d=d, s=s, size=size, cut=cut, scut=scut):
                src = p("tsrc")
                fd = os.open(src, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, data(s, size))
                os.fsync(fd)
                do = copy_whole(fd, p(d), size)
                os.ftruncate(do, cut)
                os.fsync(do)
                os.close(do)
                os.ftruncate(fd, scut)
                os.close(fd)
                held.append(os.open(src, os.O_PATH))
                os.unlink(src)
            step("snap", tsnap, path=d, src="tsrc", seed=s, size=size,
                 cut=cut, blocks={})
        elif r < 0.45:
            n = rng.choice(LOGS)
            s, ln = rng.randrange(1 << 30), rng.choice((1000, 1000, 20000))
            step("append", lambda: os.write(fds[n], data(s, ln)), path=n,
                 seed=s, len=ln)
            nrec[n] += 1
            step("fsync_log", lambda: os.fsync(fds[n]), path=n,
                 nrec=nrec[n])
            if os.fstat(fds[n]).st_size > (2 << 20):
                step("trim", lambda: os.ftruncate(fds[n], 0), path=n,
                     nrec=0)
                nrec[n] = 0
        elif r < 0.75:
            n = rng.choice(FILES)
            fd = os.open(p(n), os.O_WRONLY)
            for _ in range(rng.randint(1, 6)):
                b = rng.randrange(files[n]["size"] // BLK)
                s = rng.randrange(1 << 30)
                step("rewrite", lambda: os.pwrite(fd, data(s, BLK),
                                                  b * BLK),
                     path=n, blk=b, seed=s)
                cur[n][b] = s
            if rng.random() < 0.8:
                step("fsync_file", lambda: os.fsync(fd), path=n)
            os.close(fd)
        elif r < 0.80:
            # cp: the whole file through copy_file_range (its chunks
            # shared), then fsync; the copy must keep these bytes.
            i = rng.randrange(len(FILES))
            n, d = FILES[i], SNAPS[i]

            def snap(n=n, d=d):
                size = files[n]["size"]
                si = os.open(p(n), os.O_RDONLY)
                os.close(copy_whole(si, p(d), size))
                os.close(si)
            step("snap", snap, path=d, src=n, seed=files[n]["seed"],
                 size=files[n]["size"],
                 blocks={str(b): v for b, v in cur[n].items()
                         if v is not None})
        elif r < 0.84:
            # A sealed object: (unsealed,) written, sealed (durable when
            # that returns), and mapped here while the load goes on, so
            # that the daemon is killed while it is mapped.
            n = rng.choice(SEALS)
            if seals.get(n, {}).get("sealed"):
                m = maps.pop(n, None)
                if m is not None:
                    m.close()
                step("unseal", lambda: set_sealed(p(n), False), path=n)
                seals[n]["sealed"] = False
            s, size = rng.randrange(1 << 30), rng.choice((5000, 3 << 20))

            def seal(n=n, s=s, size=size):
                fd = os.open(p(n), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                             0o644)
                os.write(fd, data(s, size))
                os.close(fd)
                set_sealed(p(n), True)
            step("seal", seal, path=n, seed=s, size=size)
            seals[n] = {"seed": s, "size": size, "sealed": True}
            fd = os.open(p(n), os.O_RDONLY)
            maps[n] = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            os.close(fd)
            if maps[n][:64] != data(s, size)[:64]:
                raise SystemExit("%s: mapped, not the bytes sealed" % n)
        elif r < 0.88 or len(names) < 3:
            nid += 1
            n = "ns/n%d_%d" % (seed, nid)
            step("create", lambda: os.close(os.open(
                p(n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)), path=n)
            names.add(n)
        elif r < 0.94:
            src = rng.choice(sorted(names))
            nid += 1
            dst = "ns/m%d_%d" % (seed, nid)
            step("rename", lambda: os.rename(p(src), p(dst)), path=src,
                 dst=dst)
            names.discard(src)
            names.add(dst)
        else:
            n = rng.choice(sorted(names))
            step("unlink", lambda: os.unlink(p(n)), path=n)
            names.discard(n)


def main():
    global WRITTEN
    mnt, journal, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    WRITTEN = len(sys.argv) > 4 and sys.argv[4] == "written"
    now = {}
    v, lost, nn, miss = verify(mnt, journal, now)
    print("verified %d lost %d names %d missing %d" % (v, lost, nn, miss))
    sys.stdout.flush()
    if lost or miss:
        sys.exit(1)
    if os.environ.get("KILLLOAD_VERIFY_ONLY"):
        return
    try:
        run(mnt, journal, seed, now)
    except OSError as e:
        # The daemon killed under it; or, with the cluster stopped, an
        # fsync that failed (it acknowledged nothing): the round's load
        # stops there.
        if e.errno not in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO,
                           errno.ENOENT, errno.ETIMEDOUT):
            raise


if __name__ == "__main__":
    main()
