#!/bin/bash
# SPDX-License-Identifier: MIT
# The daemon's memory follows the chunks a file has, not its highest
# offset: a 1-byte write at 2^40, and one just under the largest file
# size, each add at most a few KiB to its memory (its private anonymous
# pages, counted from its page tables in /proc/PID/smaps_rollup: the
# heap, where the chunk map lives; the arena is shared memory and holds
# the byte's chunk), and one at 2^44 fails with EFBIG and adds nothing.
# With a map of one entry per chunk up to the highest, the first would
# take 48 MiB and the last 192 MiB.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount (1 MiB chunks: the largest file is 4 TiB)" \
	start_objfs "$MNT" "$DATA" arena=32M
python3 - "$MNT" "$OBJFS_PID" >"$T/rss.out" 2>&1 <<'PY'
import errno, os, sys
mnt, pid = sys.argv[1], sys.argv[2]
MAX = 4 << 40

def rss_kib():
    with open("/proc/%s/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])

def one_byte_at(name, off):
    """Make @name with a byte at 0 (the paths warm), then measure a byte
    at @off; returns (KiB added, errno or 0)."""
    fd = os.open(os.path.join(mnt, name), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b"a", 0)
    os.fsync(fd)
    before = rss_kib()
    err = 0
    try:
        os.pwrite(fd, b"z", off)
    except OSError as e:
        err = e.errno
    os.fsync(fd)
    after = rss_kib()
    if not err:
        assert os.pread(fd, 1, off) == b"z", "the byte reads back"
        assert os.fstat(fd).st_size == off + 1
    os.close(fd)
    return after - before, err

one_byte_at("warm", 1 << 20)
for name, off in (("at-2^40", 1 << 40), ("at-2^44", 1 << 44),
                  ("under-max", MAX - 1)):
    kib, err = one_byte_at(name, off)
    print("%s %d %s" % (name, kib, errno.errorcode.get(err, "OK")))
PY
sed 's/^/# /' "$T/rss.out"
kib() { awk -v n="$1" '$1 == n {print $2}' "$T/rss.out"; }
res() { awk -v n="$1" '$1 == n {print $3}' "$T/rss.out"; }
ok "a byte at 2^40: $(kib at-2^40) KiB more" \
	test "$(res at-2^40)" = OK -a "$(kib at-2^40)" -le 64
ok "a byte at 2^44 fails with EFBIG: $(kib at-2^44) KiB more" \
	test "$(res at-2^44)" = EFBIG -a "$(kib at-2^44)" -le 64
ok "a byte just under the largest size: $(kib under-max) KiB more" \
	test "$(res under-max)" = OK -a "$(kib under-max)" -le 64
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=32M
ok "the far bytes are there after the remount" python3 -c "
import os
fd = os.open('$MNT/under-max', os.O_RDONLY)
assert os.pread(fd, 1, (4 << 40) - 1) == b'z' and os.pread(fd, 1, 0) == b'a'
assert os.pread(fd, 4096, 1 << 30) == b'\0' * 4096
"
ok "unmount" stop_objfs
t_done
