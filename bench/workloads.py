#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The everyday workloads of scripts/bench, on data made here.

  workloads.py prepare AUX
      makes AUX/tree.tar (a tree shaped like a header tree: 8,000 files in
      800 directories, sizes log-normal around 4 KiB, 72 MB), AUX/repo (a
      git repository of 600 of those files, two commits) and AUX/blob (2 GiB
      of random bytes, for cp).
  workloads.py run DIR SYSTEM REP AUX DISK
      runs every workload in DIR (a fresh directory on SYSTEM) and prints
      one CSV row per figure: system,test,size_bytes,rep,seconds.  DISK is
      a directory on the disk, where cp out writes.
  workloads.py randio FILE SYSTEM REP SIZE [direct]
      4 KiB random writes, then reads, in FILE of SIZE bytes, one at a
      time; with "direct" through O_DIRECT (the disk's own rate).  Prints
      the rows randwrite_4k and randread_4k (MiB/s in the seconds column).
  workloads.py share DIR SYSTEM REP USED
      copies and checkpoints: cp of a 4 GiB file inside DIR (cp_inside),
      then ten saves of a 1 GiB checkpoint (16 tensors of 64 MiB, three of
      them new each time, the others the same bytes again) as ten files
      (ckpt_saves, seconds for all ten).  USED is a command that prints
      the bytes SYSTEM holds (memory and disk: "MEM DISK") after making
      what is written durable; the rows cp_inside_mem/_disk and
      ckpt_saves_mem/_disk give what each added (bytes in the seconds
      column).

Every workload checks what it read back; a wrong byte stops the benchmark.
"""
import hashlib
import mmap
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time

MiB = 1 << 20
GiB = 1 << 30


def drop():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(fn, *a):
    t = time.monotonic()
    fn(*a)
    return time.monotonic() - t


def run(*cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)


def prepare(aux):
    rnd = random.Random(1847)
    src = os.path.join(aux, "tree")
    total = 0
    for d in range(800):
        dd = os.path.join(src, "d%03d" % (d // 40), "s%03d" % d)
        os.makedirs(dd, exist_ok=True)
        for i in range(10):
            n = min(int(rnd.lognormvariate(8.3, 1.3)), 1 << 20)
            with open(os.path.join(dd, "f%d.h" % i), "wb") as f:
                f.write(rnd.randbytes(n))
            total += n
    run("tar", "-cf", os.path.join(aux, "tree.tar"), "-C", src, ".")
    with open(os.path.join(aux, "tree.sha256"), "w") as f:
        f.write(tree_digest(src))
    repo = os.path.join(aux, "repo")
    os.makedirs(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    run("git", "init", "-q", repo, env=env)
    for d in range(60):
        shutil.copytree(os.path.join(src, "d%03d" % (d // 40), "s%03d" % d),
                        os.path.join(repo, "s%03d" % d))
    run("git", "-C", repo, "add", "-A", env=env)
    run("git", "-C", repo, "commit", "-qm", "one", env=env)
    with open(os.path.join(repo, "NEWS"), "w") as f:
        f.write("two\n")
    run("git", "-C", repo, "add", "-A", env=env)
    run("git", "-C", repo, "commit", "-qm", "two", env=env)
    shutil.rmtree(src)
    with open(os.path.join(aux, "blob"), "wb") as f:
        for _ in range(2 * GiB // (64 * MiB)):
            f.write(os.urandom(64 * MiB))
    print("prepared: %d files, %.0f MB" % (8000, total / 1e6))


def tree_digest(top):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            h.update(p[len(top):].encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def sqlite_wal(path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT)")
    db.commit()
    k = 0
    for _ in range(200):
        db.executemany("INSERT INTO t (a, b) VALUES (?, ?)",
                       ((k + i, "row %d" % (k + i)) for i in range(1000)))
        db.commit()
        k += 1000
    n = db.execute("SELECT count(*), sum(a) FROM t").fetchone()
    db.close()
    if n != (200000, 200000 * 199999 // 2):
        sys.exit("sqlite: the rows read back are wrong: %r" % (n,))


def mmap_write(path, size):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    block = bytes(range(256)) * (MiB // 256)
    for off in range(0, size, MiB):
        mm[off:off + MiB] = block
    mm.flush()
    mm.close()
    os.close(fd)


def mmap_read(path, size):
    fd = os.open(path, os.O_RDONLY)
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    bad = 0
    # Every page, in a stride of 16 pages that wraps round: the access
    # pattern of a column read from a row-major array.
    pages = size // 4096
    for start in range(16):
        for p in range(start, pages, 16):
            bad |= mm[p * 4096 + 7] ^ 7
    mm.close()
    os.close(fd)
    if bad != 0:
        sys.exit("mmap: page heads read back wrong")


def torch_rows(d, system, rep, rows):
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(3)
    # 32 tensors of 2048 x 8192 floats, 64 MiB each: 2 GiB.
    sd = {"w%d" % i: torch.randn(2048, 8192) for i in range(32)}
    p = os.path.join(d, "state.pt")
    rows.append(("torch_save", 2 * GiB, timed(torch.save, sd, p)))
    drop()
    t = time.monotonic()
    back = torch.load(p)
    rows.append(("torch_load", 2 * GiB, time.monotonic() - t))
    if any(not torch.equal(back[k], sd[k]) for k in sd):
        sys.exit("torch: the state dict read back differs")
    os.unlink(p)


def run_all(d, system, rep, aux, disk):
    rows = []
    wl = os.path.join(d, "wl")
    os.makedirs(wl)
    rows.append(("tar_x", 8000, timed(run, "tar", "-xf",
                                      os.path.join(aux, "tree.tar"), "-C", wl)))
    drop()
    rows.append(("tar_c", 8000, timed(
        lambda: subprocess.run("tar -cf - -C %s . | cat >/dev/null" % wl,
                               shell=True, check=True))))
    with open(os.path.join(aux, "tree.sha256")) as f:
        if tree_digest(wl) != f.read():
            sys.exit("tar: the tree read back differs from the one made")
    rows.append(("rm_rf", 8000, timed(shutil.rmtree, wl)))
    clone = os.path.join(d, "clone")
    rows.append(("git_clone", 600, timed(run, "git", "clone", "-q",
                                         "file://" + os.path.join(aux, "repo"),
                                         clone)))
    run("git", "-C", clone, "fsck", "--no-progress")
    shutil.rmtree(clone)
    db = os.path.join(d, "db.sqlite")
    rows.append(("sqlite_wal", 200, timed(sqlite_wal, db)))
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    m = os.path.join(d, "mapped")
    rows.append(("mmap_write", GiB, timed(mmap_write, m, GiB)))
    drop()
    rows.append(("mmap_read", GiB, timed(mmap_read, m, GiB)))
    os.unlink(m)
    f = os.path.join(d, "dd")
    rows.append(("dd_write", 2 * GiB, timed(
        run, "dd", "if=/dev/zero", "of=" + f, "bs=1M", "count=2048",
        "status=none")))
    drop()
    rows.append(("dd_read", 2 * GiB, timed(
        run, "dd", "if=" + f, "of=/dev/null", "bs=1M", "status=none")))
    os.unlink(f)
    c = os.path.join(d, "blob")
    rows.append(("cp_in", 2 * GiB, timed(run, "cp", os.path.join(aux, "blob"),
                                         c)))
    drop()
    back = os.path.join(disk, "blob.back")
    rows.append(("cp_out", 2 * GiB, timed(run, "cp", c, back)))
    run("cmp", "-s", c, os.path.join(aux, "blob"))
    os.unlink(back)
    os.unlink(c)
    torch_rows(d, system, rep, rows)
    for test, size, sec in rows:
        print("%s,wl_%s,%d,%s,%.4f" % (system, test, size, rep, sec))


def randio(path, system, rep, size, direct):
    flags = os.O_RDWR | os.O_CREAT
    if direct:
        flags |= os.O_DIRECT
    fd = os.open(path, flags, 0o644)
    buf = mmap.mmap(-1, 4096)          # page-aligned, for O_DIRECT
    buf.write(os.urandom(4096))
    rnd = random.Random(5)
    # Fill the file first, so that reads find bytes and writes land in a
    # file 4x the arena that is mostly spilled.
    big = mmap.mmap(-1, MiB)
    big.write(os.urandom(MiB))
    for off in range(0, size, MiB):
        os.pwritev(fd, [big], off)
    os.fsync(fd)
    n = 4096
    offs = [rnd.randrange(size // 4096) * 4096 for _ in range(n)]
    t = time.monotonic()
    for off in offs:
        os.pwritev(fd, [buf], off)
    os.fsync(fd)
    w = time.monotonic() - t
    got = mmap.mmap(-1, 4096)
    t = time.monotonic()
    for off in offs:
        os.preadv(fd, [got], off)
    r = time.monotonic() - t
    if got[:] != buf[:]:
        sys.exit("randio: a 4 KiB block read back wrong")
    os.close(fd)
    os.unlink(path)
    mb = n * 4096 / MiB
    print("%s,randwrite_4k,%d,%s,%.3f" % (system, size, rep, mb / w))
    print("%s,randread_4k,%d,%s,%.3f" % (system, size, rep, mb / r))


def share(d, system, rep, used):
    def held():
        out = subprocess.run(used, shell=True, check=True,
                             stdout=subprocess.PIPE, text=True).stdout.split()
        return int(out[0]), int(out[1])

    rows = []
    big = os.path.join(d, "big")
    piece = os.urandom(64 * MiB)
    with open(big, "wb") as f:
        for i in range(64):     # 4 GiB, no two MiB alike
            f.write(bytes([i]) + piece[1:])
        f.flush()
        os.fsync(f.fileno())
    m0, d0 = held()
    rows.append(("cp_inside", 4 * GiB, timed(run, "cp", big, big + ".copy")))
    m1, d1 = held()
    rows.append(("cp_inside_mem", 4 * GiB, m1 - m0))
    rows.append(("cp_inside_disk", 4 * GiB, d1 - d0))
    if file_digest(big) != file_digest(big + ".copy"):
        sys.exit("share: the copy differs from its source")
    os.unlink(big)
    os.unlink(big + ".copy")
    rnd = random.Random(13)
    tensors = [os.urandom(64 * MiB) for _ in range(16)]
    m0, d0 = held()
    t = time.monotonic()
    for e in range(10):
        if e:
            for k in rnd.sample(range(16), 3):
                tensors[k] = os.urandom(64 * MiB)
        with open(os.path.join(d, "ckpt-%d" % e), "wb") as f:
            for x in tensors:
                f.write(x)
    rows.append(("ckpt_saves", 10 * GiB, time.monotonic() - t))
    m1, d1 = held()
    rows.append(("ckpt_saves_mem", 10 * GiB, m1 - m0))
    rows.append(("ckpt_saves_disk", 10 * GiB, d1 - d0))
    last = hashlib.sha256(b"".join(tensors)).hexdigest()
    if file_digest(os.path.join(d, "ckpt-9")) != last:
        sys.exit("share: the last checkpoint read back wrong")
    for e in range(10):
        os.unlink(os.path.join(d, "ckpt-%d" % e))
    for test, size, v in rows:
        print("%s,%s,%d,%s,%.6f" % (system, test, size, rep, v))


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(MiB)
            if not b:
                return h.hexdigest()
            h.update(b)


def main():
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    elif sys.argv[1] == "run":
        d, system, rep, aux, disk = sys.argv[2:7]
        run_all(d, system, rep, aux, disk)
    elif sys.argv[1] == "share":
        share(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "randio":
        randio(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
               len(sys.argv) > 6 and sys.argv[6] == "direct")
    else:
        sys.exit("workloads.py: prepare | run | randio | share")


if __name__ == "__main__":
    main()
