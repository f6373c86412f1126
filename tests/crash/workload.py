# SPDX-License-Identifier: MIT
"""workload.py MOUNT LOG STEPS SEED - the crash simulator's workload.

Runs STEPS operations on a mounted objfs: creates, renames, unlinks,
xattrs, sequential writes, an append-only log with fsync after each
record, rewrites of fsynced chunks followed by fsync, truncates, hole
punches, copies made with copy_file_range (which share chunks), new files
with the bytes of earlier ones (which dedup shares), sources of copies
cut short, held by an O_PATH descriptor and deleted, seals and unseals
(chattr +i: a sealed file is left alone until unsealed), fsyncs of files
and directories.  Every operation is logged to
LOG (one JSON object per line) with its start and end (CLOCK_MONOTONIC ns,
the clock the trace recorder uses) and what it did; the bytes written are
a function of the logged seed, so the checker (sim.py) can rebuild every
file as it was at any point.
"""
import ctypes
import json
import os
import random
import sys
import time

from sealflag import set_sealed

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                           ctypes.c_longlong]


def data(seed, n):
    """The bytes a write with @seed puts down (also used by sim.py)."""
    return random.Random(seed).randbytes(n)


def main():
    mnt, logpath, steps, seed = (sys.argv[1], sys.argv[2],
                                 int(sys.argv[3]), int(sys.argv[4]))
    rng = random.Random(seed)
    log = open(logpath, "w")
    files = {}          # path -> size
    synced = set()      # paths fsynced at least once
    nseed = [seed * 1000003]

    def record(op, t0, **kw):
        kw.update(op=op, t0=t0, t1=time.monotonic_ns())
        log.write(json.dumps(kw) + "\n")

    def newseed():
        nseed[0] += 1
        return nseed[0]

    def p(rel):
        return os.path.join(mnt, rel)

    def write(rel, off, n, s=None):
        s = s if s is not None else newseed()
        t0 = time.monotonic_ns()
        fd = os.open(p(rel), os.O_WRONLY)
        os.pwrite(fd, data(s, n), off)
        os.close(fd)
        record("write", t0, path=rel, off=off, len=n, seed=s)
        files[rel] = max(files[rel], off + n)

    def fsync(rel):
        t0 = time.monotonic_ns()
        fd = os.open(p(rel), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        record("fsync", t0, path=rel)
        synced.add(rel)

    def dirsync(rel):
        t0 = time.monotonic_ns()
        fd = os.open(p(rel) if rel else mnt, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)
        record("dirsync", t0, path=rel)

    def create(rel):
        t0 = time.monotonic_ns()
        os.close(os.open(p(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        record("create", t0, path=rel)
        files[rel] = 0

    for d in ("a", "b"):
        t0 = time.monotonic_ns()
        os.mkdir(p(d))
        record("mkdir", t0, path=d)
    dirsync("")
    create("log")
    logfd = os.open(p("log"), os.O_WRONLY | os.O_APPEND)
    nfile = 0
    made = []           # (seed, length) of the first write of new files
    sources = set()     # files copies were made from
    held = []           # O_PATH descriptors of deleted files
    sealed = set()      # files sealed now: nothing changes them
    for _ in range(steps):
        if held and rng.random() < 0.1:
            os.close(held.pop(0))
        live = sorted(f for f in files if f not in sealed)
        total = sum(files.values())
        r = rng.random()
        if r < 0.25:
            # An append-only log: one record, fsync, as a WAL does.
            s = newseed()
            n = rng.choice((1000, 1000, 3000, 70000)) if rng.random() < 0.3 \
                else 1000
            t0 = time.monotonic_ns()
            os.write(logfd, data(s, n))
            record("append", t0, path="log", off=files["log"], len=n,
                   seed=s)
            t0 = time.monotonic_ns()
            os.fsync(logfd)
            record("fsync", t0, path="log")
            files["log"] += n
            synced.add("log")
            if files["log"] > (1 << 20):
                t0 = time.monotonic_ns()
                os.ftruncate(logfd, 0)
                record("truncate", t0, path="log", size=0)
                files["log"] = 0
        elif r < 0.37 and total < (4 << 20):
            nfile += 1
            rel = "%s/f%d" % (rng.choice("ab"), nfile)
            create(rel)
            if made and rng.random() < 0.3:
                # The bytes of a file made before (dedup: equal chunks
                # are stored once).
                s, n = rng.choice(made)
                write(rel, 0, n, s)
            else:
                write(rel, 0, rng.choice((4096, 50000, 200000, 600000)))
                made.append((nseed[0], files[rel]))
            if rng.random() < 0.7:
                fsync(rel)
        elif r < 0.52 and synced & set(live):
            # Rewrite 4 KiB in each of a few chunks of a synced file.
            rel = rng.choice(sorted(synced & set(live)))
            if files[rel] > 0:
                for _ in range(rng.randint(1, 4)):
                    off = rng.randrange(0, files[rel]) & ~4095
                    write(rel, off, 4096)
                fsync(rel)
        elif r < 0.60 and live:
            rel = rng.choice(live)
            write(rel, files[rel], rng.choice((1000, 65536, 300000)))
        elif r < 0.66 and live:
            rel = rng.choice(live)
            size = rng.randrange(0, files[rel] + 100000)
            t0 = time.monotonic_ns()
            os.truncate(p(rel), size)
            record("truncate", t0, path=rel, size=size)
            files[rel] = size
        elif r < 0.72 and live:
            rel = rng.choice(live)
            if files[rel] > 8192:
                off = rng.randrange(0, files[rel] - 4096)
                n = rng.randrange(1, min(files[rel] - off, 300000))
                t0 = time.monotonic_ns()
                fd = os.open(p(rel), os.O_WRONLY)
                rc = libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE |
                                    FALLOC_FL_KEEP_SIZE, off, n)
                os.close(fd)
                if rc == 0:
                    record("punch", t0, path=rel, off=off, len=n)
        elif r < 0.75 and live:
            # cp: a new file, the source's bytes copied with
            # copy_file_range (shared, not copied, in whole chunks).
            rel = rng.choice(live)
            nfile += 1
            dst = "%s/c%d" % (rng.choice("ab"), nfile)
            create(dst)
            n = files[rel]
            t0 = time.monotonic_ns()
            si = os.open(p(rel), os.O_RDONLY)
            do = os.open(p(dst), os.O_WRONLY)
            done = 0
            while done < n:
                k = os.copy_file_range(si, do, n - done, done, done)
                if k <= 0:
                    raise SystemExit("copy_file_range of %s: %d of %d"
                                     % (rel, done, n))
                done += k
            os.close(si)
            os.close(do)
            record("copy", t0, path=dst, src=rel, off=0, len=n)
            files[dst] = n
            sources.add(rel)
            if rng.random() < 0.7:
                fsync(dst)
        elif r < 0.78 and len(live) > 1:
            rel = rng.choice([f for f in live if f != "log"])
            nfile += 1
            dst = "%s/r%d" % (rng.choice("ab"), nfile)
            t0 = time.monotonic_ns()
            os.rename(p(rel), p(dst))
            record("rename", t0, path=rel, dst=dst)
            files[dst] = files.pop(rel)
            if rel in sources:
                sources.discard(rel)
                sources.add(dst)
            if rel in synced:
                synced.discard(rel)
                synced.add(dst)
        elif r < 0.83 and len(live) > 4:
            src = sorted(sources & set(live) - {"log"})
            rel = rng.choice(src if src and rng.random() < 0.5 else
                             [f for f in live if f != "log"])
            if rel in sources and rng.random() < 0.6:
                # A copy's source cut short, then deleted while an
                # O_PATH descriptor holds it: the space the cut gave
                # back is given back into the file that holds the
                # copy's chunks (issue 23, defect 1).
                size = rng.randrange(0, files[rel] + 1)
                t0 = time.monotonic_ns()
                os.truncate(p(rel), size)
                record("truncate", t0, path=rel, size=size)
                files[rel] = size
                held.append(os.open(p(rel), os.O_PATH))
            t0 = time.monotonic_ns()
            os.unlink(p(rel))
            record("unlink", t0, path=rel)
            del files[rel]
            synced.discard(rel)
            sources.discard(rel)
        elif r < 0.86 and (sealed or len(live) > 1):
            # Seal a file (written out and durable when it returns), or
            # unseal one.
            if sealed and (rng.random() < 0.5 or len(live) < 2):
                rel = rng.choice(sorted(sealed))
                t0 = time.monotonic_ns()
                set_sealed(p(rel), False)
                record("unseal", t0, path=rel)
                sealed.discard(rel)
            else:
                rel = rng.choice([f for f in live if f != "log"])
                t0 = time.monotonic_ns()
                set_sealed(p(rel), True)
                record("seal", t0, path=rel)
                sealed.add(rel)
                synced.add(rel)
        elif r < 0.88 and live:
            rel = rng.choice(live)
            v = "v%d" % rng.randrange(1000)
            t0 = time.monotonic_ns()
            os.setxattr(p(rel), "user.tag", v.encode())
            record("setxattr", t0, path=rel, name="user.tag", value=v)
        elif r < 0.94 and live:
            fsync(rng.choice(live))
        elif r < 0.99:
            dirsync(rng.choice(("", "a", "b")))
        else:
            # Time for checkpoints: names older than a second or so must
            # survive a crash without an fsync.
            time.sleep(0.4)
    for fd in held:
        os.close(fd)
    os.close(logfd)
    log.close()


if __name__ == "__main__":
    main()
