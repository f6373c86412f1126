#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/sealed.py - the measurements of bench/sealed.sh, one at a time.

    sealed.py read FILE                 read() of FILE in 1 MiB pieces: s
    sealed.py stride FILE               mmap FILE, read one byte of every
                                        page, in order: s
    sealed.py mem FILE N                N processes map FILE and read every
                                        page; prints the growth of the
                                        kernel's Cached (page cache and
                                        shared memory) from before they
                                        started, the Pss of their mappings
                                        added up, and Cached while they
                                        map it, in bytes
    sealed.py numpy FILE                numpy.memmap of FILE as float32:
                                        the sum of every element: s
    sealed.py torch_save FILE GIB       a state dict of GIB GiB, saved
    sealed.py torch_load FILE           torch.load(mmap=True) and every
                                        tensor summed: s (torch before
                                        2.1 has no mmap=: read())
Prints one number (or two for mem).  Exit 3 when numpy or torch is
missing.
"""
import mmap
import os
import sys
import time


def cached():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    return 0


def t_read(path):
    buf = bytearray(1 << 20)
    t = time.monotonic()
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass
    return time.monotonic() - t


def touch(m):
    """One byte of every page, in order (numpy when there is, else a
    loop), returns their sum."""
    try:
        import numpy as np
        a = np.frombuffer(m, dtype=np.uint8)
        return int(a[::4096].sum())
    except ImportError:
        return sum(m[i] for i in range(0, len(m), 4096))


def t_stride(path):
    t = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    os.close(fd)
    touch(m)
    d = time.monotonic() - t
    m.close()
    return d


def pss_of(pid, size):
    want = (size + 4095) // 4096 * 4
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if line.startswith("Size:"):
                cur = int(line.split()[1])
            elif line.startswith("Pss:") and cur == want:
                return int(line.split()[1]) * 1024
    return 0


def mem(path, n):
    c0 = cached()
    size = os.path.getsize(path)
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            fd = os.open(path, os.O_RDONLY)
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            os.close(fd)
            touch(m)
            os.write(w, b"x")
            os.read(go_r, 1)        # until the parent has measured
            m.close()
            os._exit(0)
        kids.append(pid)
    os.close(w)
    got = 0
    while got < n:
        got += len(os.read(r, n))
    now = cached()
    grown = now - c0
    pss = sum(pss_of(p, size) for p in kids)
    os.close(go_w)
    for p in kids:
        os.waitpid(p, 0)
    return grown, pss, now


def t_numpy(path):
    try:
        import numpy as np
    except ImportError:
        sys.exit(3)
    t = time.monotonic()
    a = np.memmap(path, dtype=np.float32, mode="r")
    a.sum(dtype=np.float64)
    d = time.monotonic() - t
    del a
    return d


def torch_save(path, gib):
    try:
        import torch
    except ImportError:
        sys.exit(3)
    n = int(gib * (1 << 30)) // 4 // 16
    g = torch.Generator().manual_seed(7)
    sd = {"t%d" % i: torch.rand(n, generator=g) for i in range(16)}
    t = time.monotonic()
    torch.save(sd, path)
    return time.monotonic() - t


def t_torch_load(path):
    try:
        import torch
    except ImportError:
        sys.exit(3)
    t = time.monotonic()
    try:
        sd = torch.load(path, mmap=True, weights_only=True)
    except TypeError:       # torch before 2.1: no mmap; read() instead
        sd = torch.load(path, weights_only=True)
    for v in sd.values():
        v.sum()
    return time.monotonic() - t


def main():
    what, path = sys.argv[1], sys.argv[2]
    if what == "read":
        print("%.4f" % t_read(path))
    elif what == "stride":
        print("%.4f" % t_stride(path))
    elif what == "mem":
        print("%d %d %d" % mem(path, int(sys.argv[3])))
    elif what == "numpy":
        print("%.4f" % t_numpy(path))
    elif what == "torch_save":
        print("%.4f" % torch_save(path, float(sys.argv[3])))
    elif what == "torch_load":
        print("%.4f" % t_torch_load(path))
    else:
        sys.exit(2)


if __name__ == "__main__":
    main()
