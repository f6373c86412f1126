#!/bin/bash
# SPDX-License-Identifier: MIT
# A failed operation changes nothing, in memory and after a remount:
# writes and truncates past the largest file size (EFBIG), fallocate past
# the backing filesystem's free space (ENOSPC, space given back).  And
# fallocate and hole punching work whatever the arena's size, waiting for
# the spiller under concurrent writers as writes do; on a disk full of
# space waiting to be given back, msync, fsync and fallocate take it.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
mkdir -p "$DATA/backing"
chmod 700 "$DATA" "$DATA/backing"
mount -t tmpfs -o size=256m,mode=0700 objfs-test-failed "$DATA/backing"
T_MOUNTS+=("$DATA/backing")
OPTS=arena=64M
ok "mount with a 64 MiB arena over a 256 MiB backing filesystem" \
	start_objfs "$MNT" "$DATA" "$OPTS"

py() { python3 - "$MNT" "$@"; }
# The largest file: 2^22 chunks of 1 MiB.
MAX=$((1 << 42))
echo hello >"$MNT/big"
ok "a write past the largest file size fails with EFBIG" \
	test "$(errno_of "import os; fd = os.open('$MNT/big', os.O_WRONLY); os.pwrite(fd, b'x', $MAX)")" = EFBIG
ok "  ... and the size is as it was" test "$(stat -c %s "$MNT/big")" = 6
ok "a truncate past it fails with EFBIG" \
	test "$(errno_of "os.truncate('$MNT/big', $MAX + 1)")" = EFBIG
ok "  ... and the size is as it was" test "$(stat -c %s "$MNT/big")" = 6
ok "a write that ends past it writes what fits" py "$MAX" <<'PY'
import os, sys
mnt, top = sys.argv[1], int(sys.argv[2])
fd = os.open(mnt + "/edge", os.O_WRONLY | os.O_CREAT, 0o644)
assert os.pwrite(fd, b"abcd", top - 2) == 2
assert os.fstat(fd).st_size == top
PY
rm -f "$MNT/edge"

# fallocate reserves disk space, not arena.
ok "fallocate of 200 MiB on a 64 MiB arena" fallocate -l 200M "$MNT/fa"
ok "  ... gives the size" test "$(stat -c %s "$MNT/fa")" = $((200 << 20))
ok "  ... and takes no arena" test "$(sed -n 's/^arena_used_bytes: //p' "$MNT/.objfs-status")" -lt $((8 << 20))
ok "  ... and reads as zeros" cmp -n $((200 << 20)) "$MNT/fa" /dev/zero
free0=$(df -k --output=avail "$DATA/backing" | tail -n 1)
ok "fallocate past the backing filesystem's room fails with ENOSPC" \
	bash -c "! fallocate -l 400M '$MNT/fb' 2>'$T/fb.err' && grep -q 'No space left' '$T/fb.err'"
ok "  ... and leaves the file as it was" test "$(stat -c %s "$MNT/fb")" = 0
free1=$(df -k --output=avail "$DATA/backing" | tail -n 1)
ok "  ... and gives the space back ($free0 -> $free1 KiB free)" \
	test "$free1" -ge $((free0 - 1024))
rm -f "$MNT/fb" "$MNT/fa"
# Their 200 MiB come back once the deletes are durable (within about a
# second): the punches below are about a full arena, not a full disk.
ok "the deleted files' space comes back" bash -c "
	for i in \$(seq 300); do
		[ \$(df -k --output=avail '$DATA/backing' | tail -n 1) -ge $((free0 + 190 * 1024)) ] && exit 0
		sleep 0.1
	done; exit 1"

# Hole punching while three writers keep the arena full.
head -c $((24 << 20)) /dev/urandom >"$T/p"
cp "$T/p" "$MNT/p"
writers=()
for i in 1 2 3; do
	dd if=/dev/urandom of="$MNT/w$i" bs=1M count=40 status=none &
	writers+=($!)
done
ok "50 hole punches under three writers on a full arena" py <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                           ctypes.c_longlong]
fd = os.open(sys.argv[1] + "/p", os.O_RDWR)
for i in range(50):
    off = i * (480 << 10) + 1000
    if libc.fallocate(fd, 3, off, 70000) != 0:
        sys.exit("punch %d: %s" % (i, os.strerror(ctypes.get_errno())))
PY
wait "${writers[@]}"
# A backing disk nearly full of space that deletes freed but that is given
# back only once the index is durable: writes through a mapping, msync,
# fsync and fallocate get that space (objfs makes the index durable and
# takes it) instead of failing with ENOSPC.  Live data stays under 170 MiB
# of the 256; what the rounds delete comes on top until it is given back.
rm -f "$MNT"/w1 "$MNT"/w2 "$MNT"/w3
writers=()
for i in 1 2 3; do
	dd if=/dev/urandom of="$MNT/v$i" bs=1M count=40 status=none &
	writers+=($!)
done
ok "10 rounds of mmap writes, msync, fsync, fallocate and unlink on a nearly full disk" python3 "$(dirname "$0")/map_rounds.py" "$MNT" 10 16
wait "${writers[@]}"
rm -f "$MNT"/v1 "$MNT"/v2 "$MNT"/v3
ok "the punched file reads the holes as zeros and the rest as written" py "$T/p" <<'PY'
import sys
got = open(sys.argv[1] + "/p", "rb").read()
want = bytearray(open(sys.argv[2], "rb").read())
for i in range(50):
    off = i * (480 << 10) + 1000
    want[off:off + 70000] = bytes(70000)
assert got == bytes(want)
PY
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "after remount the sizes are as they were" \
	test "$(stat -c %s "$MNT/big")" = 6
ok "and the punched file too" bash -c "[ \$(stat -c %s '$MNT/p') = $((24 << 20)) ]"
ok "unmount" stop_objfs
umount "$DATA/backing"
t_done
