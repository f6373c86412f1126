#!/bin/bash
# SPDX-License-Identifier: MIT
# The daemon's memory follows the chunks a file has, not its highest
# offset: a 1-byte write at 2^40, and one just under the largest file
# size, each add at most a few KiB to its memory (its private anonymous
# pages, counted from its page tables in /proc/PID/smaps_rollup: the
# heap, where the chunk map lives; the arena is shared memory and holds
# the byte's chunk), and one at 2^44 fails with EFBIG and adds nothing.
# With 4 MiB chunks the largest file is objfs' largest, 2^44 bytes (16
# TiB): a byte at 2^44 - 1 is written and adds as little.  With a map of one entry per chunk up to the
# highest, the first would take 48 MiB and the last 192 MiB.  VmRSS is
# printed too, but not bounded: it also counts the arena's shared page
# that the byte lands in (a 2 MiB huge page when they are enabled).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount (1 MiB chunks: the largest file is 4 TiB)" \
	start_objfs "$MNT" "$DATA" arena=32M
# measure MAX NAME...: a byte at each named offset of a file of its own
# (at-2^40, at-2^44, under-max: MAX - 1); one line per name: KiB added,
# errno name or OK.
measure() {
	python3 - "$MNT" "$OBJFS_PID" "$@" <<'PY'
import errno, os, sys
mnt, pid, MAX = sys.argv[1], sys.argv[2], int(sys.argv[3])

def rss_kib(field="Anonymous:", path="smaps_rollup"):
    with open("/proc/%s/%s" % (pid, path)) as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])

def vmrss_kib():
    return rss_kib("VmRSS:", "status")

def one_byte_at(name, off):
    """Make @name with a byte at 0 (the paths warm), then measure a byte
    at @off; returns (KiB added, errno or 0)."""
    fd = os.open(os.path.join(mnt, name), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b"a", 0)
    os.fsync(fd)
    before, vm0 = rss_kib(), vmrss_kib()
    err = 0
    try:
        os.pwrite(fd, b"z", off)
    except OSError as e:
        err = e.errno
    os.fsync(fd)
    after, vm1 = rss_kib(), vmrss_kib()
    print("# %s: VmRSS %d -> %d KiB" % (name, vm0, vm1))
    if not err:
        assert os.pread(fd, 1, off) == b"z", "the byte reads back"
        assert os.fstat(fd).st_size == off + 1
    os.close(fd)
    return after - before, err

one_byte_at("warm", 1 << 20)
offs = {"at-2^40": 1 << 40, "at-2^44": 1 << 44, "under-max": MAX - 1}
for name in sys.argv[4:]:
    kib, err = one_byte_at(name, offs[name])
    print("%s %d %s" % (name, kib, errno.errorcode.get(err, "OK")))
PY
}
measure $((4 << 40)) at-2^40 at-2^44 under-max >"$T/rss.out" 2>&1
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

# 4 MiB chunks: 2^22 of them make 2^44 bytes, the largest file objfs
# allows whatever the chunk size; over a backing filesystem that holds
# files twice as large (tmpfs: ext4 stops short of 16 TiB, and objfs
# then allows half of that).
mkdir -p "$T/data4/backing"
chmod 700 "$T/data4" "$T/data4/backing"
mount -t tmpfs -o size=64m,mode=0700 objfs-test-sparse "$T/data4/backing"
T_MOUNTS+=("$T/data4/backing")
ok "mount with 4 MiB chunks (the largest file is 16 TiB)" \
	start_objfs "$MNT" "$T/data4" arena=64M,chunk=4M
measure $((1 << 44)) under-max at-2^44 >"$T/rss.out" 2>&1
sed 's/^/# /' "$T/rss.out"
ok "a byte at 2^44 - 1: $(kib under-max) KiB more" \
	test "$(res under-max)" = OK -a "$(kib under-max)" -le 64
ok "and one at 2^44 fails with EFBIG: $(kib at-2^44) KiB more" \
	test "$(res at-2^44)" = EFBIG -a "$(kib at-2^44)" -le 64
ok "unmount" stop_objfs
t_done
