#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""map_rounds.py DIR ROUNDS MIB: ROUNDS times, write a file of MIB MiB
through a shared mapping, msync it, fsync it, fallocate MIB/2 MiB past
its end, read a piece back and unlink it.  Exits non-zero, saying which
call failed, on the first error: used by spill.sh and failed_ops.sh
beside writers that keep the arena full."""
import ctypes
import mmap
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                           ctypes.c_longlong]
d, rounds, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = mib << 20
blk = os.urandom(1 << 20)
for r in range(rounds):
    p = os.path.join(d, "m%d" % r)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    for o in range(0, size, 1 << 20):
        m[o:o + (1 << 20)] = blk
    m.flush()                                   # msync: OSError on failure
    os.fsync(fd)
    m.close()
    if libc.fallocate(fd, 0, size, size // 2) != 0:
        sys.exit("fallocate %d: %s" % (r, os.strerror(ctypes.get_errno())))
    assert os.pread(fd, 1 << 20, 5 << 20) == blk, "mapped bytes read back"
    os.close(fd)
    os.unlink(p)
