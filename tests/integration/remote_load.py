# SPDX-License-Identifier: MIT
"""remote_load.py MNT OUT SECONDS - a load for remote_mount.sh while the
OSD is stopped and started again: a writer appends 64 KiB records to
MNT/load.log and fsyncs after each, a reader reads MNT/big (resident) in
a loop.  OUT gets one line per fsync: "ok SECONDS" or "err ERRNO SECONDS",
then "records N acked M reads R readfail F maxfsync S".  The records are
os.urandom-free: record i is bytes derived from i, so a checker can
rebuild them."""
import errno
import os
import sys
import threading
import time

mnt, out, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
REC = 65536


def record(i):
    return (b"%08d" % i) * (REC // 8)


stop = time.monotonic() + secs
reads = [0, 0]


def reader():
    while time.monotonic() < stop:
        try:
            with open(os.path.join(mnt, "big"), "rb") as f:
                while f.read(1 << 20):
                    pass
            reads[0] += 1
        except OSError:
            reads[1] += 1
        time.sleep(0.2)


t = threading.Thread(target=reader)
t.start()
fd = os.open(os.path.join(mnt, "load.log"), os.O_WRONLY | os.O_CREAT |
             os.O_APPEND, 0o644)
acked = n = 0
worst = 0.0
with open(out, "w") as o:
    while time.monotonic() < stop:
        os.write(fd, record(n))
        n += 1
        a = time.monotonic()
        try:
            os.fsync(fd)
            d = time.monotonic() - a
            acked = n
            o.write("ok %.3f\n" % d)
        except OSError as e:
            d = time.monotonic() - a
            o.write("err %s %.3f\n" % (errno.errorcode.get(e.errno, e.errno), d))
        worst = max(worst, d)
        o.flush()
        time.sleep(0.05)
    t.join()
    o.write("records %d acked %d reads %d readfail %d maxfsync %.1f\n" %
            (n, acked, reads[0], reads[1], worst))
