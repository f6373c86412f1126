#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Map FILE in N processes, touch every page in each, and hold the maps.

Usage: sealed_map.py FILE N READY_FILE GO_FILE
Each reader maps the whole file (MAP_SHARED, read-only), reads one byte of
every page, and checks the file's xxh-free sum (a sum of 8-byte words at
every 4 KiB, the same in all readers).  When all have read, READY_FILE
gets one line per reader: its pid, the sum, and the Pss of its mapping in
kB, read then (smaps: a page shared by all N counts 1/N in each).  They keep their
mappings until GO_FILE exists, then exit 0.
"""
import mmap
import os
import sys
import time

path, n, ready, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def pss_of_map(pid, size):
    """Pss (kB) of process @pid's mapping of @size bytes, from smaps
    (the only one that large; its file is the per-object memfd when the
    kernel serves it by passthrough, the mount's file otherwise)."""
    want = (size + 4095) // 4096 * 4
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if line.startswith("Size:"):
                cur = int(line.split()[1])
            elif line.startswith("Pss:") and cur == want:
                return int(line.split()[1])
    return -1


def reader(wfd):
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    os.close(fd)
    mv = memoryview(m)
    total = 0
    for off in range(0, len(m) - 7, 4096):
        total = (total + int.from_bytes(mv[off:off + 8], "little")) % (1 << 61)
    line = "%d %d %d\n" % (os.getpid(), total, len(m))
    os.write(wfd, line.encode())
    while not os.path.exists(go):
        time.sleep(0.05)
    del mv
    m.close()
    os._exit(0)


r, w = os.pipe()
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            reader(w)
        except Exception as e:  # report, never hang the parent
            os.write(w, ("%d ERR %s\n" % (os.getpid(), e)).encode())
            os._exit(1)
    kids.append(pid)
os.close(w)
lines = []
buf = b""
while len(lines) < n:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    buf += chunk
    lines = buf.decode().splitlines()
# Every reader has touched every page: Pss now says how many share them.
with open(ready + ".tmp", "w") as f:
    for line in lines:
        pid, total, size = line.split()[:3]
        if total == "ERR":
            f.write(line + "\n")
            continue
        f.write("%s %s %d\n" % (pid, total, pss_of_map(int(pid), int(size))))
os.rename(ready + ".tmp", ready)
bad = 0
for pid in kids:
    _, st = os.waitpid(pid, 0)
    bad |= st != 0
sys.exit(1 if bad or len(lines) < n else 0)
