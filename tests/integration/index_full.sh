#!/bin/bash
# SPDX-License-Identifier: MIT
# The index (LMDB and its journal) on a filesystem that fills up:
# namespace changes keep working from the disk blocks reserved ahead of
# the index, then fail with ENOSPC, deletes keep working, space comes back,
# and nothing already written is lost.  Also a filesystem too small for
# any reserve.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init

# fill DIR: write 4 MiB files with fsync (so they reach the backing
# directory) until the disk is full; prints how many were written.
fill() {
	python3 - "$1" <<'PY'
import os, sys
d, n = sys.argv[1], 0
while n < 1000:
    buf = os.urandom(4 << 20)   # each its own: equal ones dedup
    try:
        fd = os.open(os.path.join(d, "fill%d" % n), os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError:
        break
    try:
        os.write(fd, buf)
        os.fsync(fd)
    except OSError:
        os.close(fd)
        break
    os.close(fd)
    n += 1
print(n)
PY
}
# creates DIR N: create up to N empty files; prints how many, then the
# first error's name (or OK).
creates() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
d, want = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
for i in range(want):
    try:
        os.close(os.open(os.path.join(d, "n%06d" % i), os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError as e:
        print(i, errno.errorcode.get(e.errno, e.errno))
        sys.exit(0)
print(want, "OK")
PY
}

# 1. Room for the reservation: on a full disk, namespace changes go on
#    from the disk blocks reserved ahead of the index until only the part
#    kept for deletes is left; deletes still work then.
mkdir -p "$DATA"
mount -t tmpfs -o size=160m,mode=0700 objfs-test-index "$DATA" && T_MOUNTS+=("$DATA")
ok "mount with the data directory on a 160 MiB filesystem" start_objfs "$MNT" "$DATA" arena=64M
ok "the index keeps disk blocks in reserve" bash -c "! grep -q 'no disk blocks reserved' '$T/objfs.mnt.log'"
n=$(fill "$MNT")
ok "fill the disk with fsynced files ($n of 4 MiB)" test "$n" -gt 5 -a "$n" -lt 1000
ok "the filesystem is full" bash -c "[ \$(df -k --output=avail '$DATA' | tail -n 1) -lt 4096 ]"
out=$(creates "$MNT/names" 2000)
ok "2,000 creates on the full disk still work ($out)" test "$out" = "2000 OK"
out=$(creates "$MNT/more" 1000000)
ok "creates go on until the reservation is used, then ENOSPC ($out)" bash -c "[[ '$out' == *ENOSPC ]]"
ok "the daemon is alive" kill -0 "$OBJFS_PID"
ok "the first filled file reads back whole" bash -c "[ \$(wc -c < '$MNT/fill0') = $((4 << 20)) ]"
ok "deleting files works on the full disk" bash -c "rm -f '$MNT'/fill*"
# Their space comes back once the deletes are durable (the next
# checkpoint, which the first refused create hastens).
again() {
	local i
	for ((i = 0; i < 50; i++)); do
		echo x 2>/dev/null >"$MNT/again" && [ "$(cat "$MNT/again")" = x ] &&
			return 0
		sleep 0.1
	done
	return 1
}
ok "and then creates work again, within 5 s" again
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "the 2,000 names are there" test "$(ls "$MNT/names" | wc -l)" = 2000
ok "unmount" stop_objfs
umount "$DATA"

# 2. Not even 2 MiB for a reserve: a full index is ENOSPC, not a crash or
#    EIO; an unmount that cannot write bytes out says so, and a mount on
#    the full disk still works.
rm -rf "$DATA" && mkdir -p "$DATA"
mount -t tmpfs -o size=2m,mode=0700 objfs-test-index "$DATA"
ok "mount with the data directory on a 2 MiB filesystem" start_objfs "$MNT" "$DATA" arena=64M
ok "the index has no disk blocks in reserve" grep -q "no disk blocks reserved" "$T/objfs.mnt.log"
echo kept >"$MNT/kept"
out=$(creates "$MNT/names" 1000000)
ok "creates on the full disk end with ENOSPC ($out)" bash -c "[[ '$out' == *ENOSPC ]]"
ok "the daemon is alive" kill -0 "$OBJFS_PID"
ok "the names created are all there" test "$(ls "$MNT/names" | wc -l)" = "${out%% *}"
ok "a file written before reads back" test "$(cat "$MNT/kept")" = kept
ok "mkdir on the full disk fails with ENOSPC" bash -c "! mkdir '$MNT/d' 2>'$T/mkdir.err' && grep -q 'No space left' '$T/mkdir.err'"
fails "unmount with bytes that no longer fit on disk exits non-zero" stop_objfs
ok "and the log says what was not written, and that the arena keeps it" \
	grep -q "what was not written is kept in the arena" "$T/objfs.mnt.log"
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "after remount the names are there" test "$(ls "$MNT/names" | wc -l)" = "${out%% *}"
ok "and the bytes not written out were adopted from the arena" \
	grep -q "adopted the arena the last daemon left: [1-9]" "$T/objfs.mnt.log"
ok "the file whose bytes did not fit reads back" test "$(cat "$MNT/kept")" = kept
fails "unmount while they still do not fit exits non-zero again" stop_objfs
ok "make room: the filesystem grows to 8 MiB" mount -o remount,size=8m "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "unmount with room: exits 0" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "the file is there, from disk now" test "$(cat "$MNT/kept")" = kept
ok "unmount" stop_objfs
t_done
