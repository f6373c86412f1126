#!/bin/bash
# SPDX-License-Identifier: MIT
# Sparse files take the disk their written blocks need, and st_blocks
# (du) says what objfs holds, not the apparent size (issue 23, defect 4):
# 200 one-byte writes at random offsets below 64 GiB, fsynced, took
# 145.7 MiB of backing disk (each new chunk was written out from its
# start, zeros included) and du said 64 GiB.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
OPTS=arena=256M

backing() { du -s --block-size=1 "$DATA/backing" | cut -f1; }
ok "mount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "200 one-byte writes below 64 GiB, fsync, read back" python3 - "$MNT/s" <<'PY'
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
r = random.Random(5)
offs = [r.randrange(0, 64 << 30) for _ in range(200)]
for o in offs:
    os.pwrite(fd, b"\x01", o)
os.fsync(fd)
for o in offs:
    assert os.pread(fd, 1, o) == b"\x01", o
os.close(fd)
PY
size=$(stat -c %s "$MNT/s")
held=$(($(stat -c %b "$MNT/s") * 512))
ok "the backing file takes under 2 MiB ($(backing) bytes)" test "$(backing)" -lt $((2 << 20))
ok "st_blocks: what the arena holds, at most a chunk per write ($held of $size bytes)" \
	test "$held" -gt 0 -a "$held" -le $((200 << 20))
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" "$OPTS"
held=$(($(stat -c %b "$MNT/s") * 512))
ok "st_blocks after the remount: the disk copies ($held bytes)" \
	test "$held" -gt 0 -a "$held" -le $((200 << 20))
ok "du agrees" test "$(du -s --block-size=1 "$MNT/s" | cut -f1)" = "$held"
ok "a dense file's st_blocks is its size" sh -c "
	head -c 3000000 /dev/urandom >'$MNT/d' && sync '$MNT/d' &&
	test \$((\$(stat -c %b '$MNT/d') * 512)) -ge 3000000 &&
	test \$((\$(stat -c %b '$MNT/d') * 512)) -le 3145728"
ok "the bytes read back, zeros around them" python3 - "$MNT/s" <<'PY'
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
r = random.Random(5)
offs = set(r.randrange(0, 64 << 30) for _ in range(200))
end = max(offs) + 1			# the file's size
for o in sorted(offs):
    lo, hi = max(0, o - 5000), min(end, o + 5000)
    want = bytearray(hi - lo)
    for x in offs:
        if lo <= x < hi:
            want[x - lo] = 1
    assert os.pread(fd, len(want), lo) == want, o
os.close(fd)
PY
ok "unmount" stop_objfs
t_done
