#!/bin/bash
# SPDX-License-Identifier: MIT
# cp inside the mount shares chunks instead of copying them (local_dedup.c):
# the copy costs no disk and reads the same; writes to either side change
# that side alone; both survive a SIGKILL (adoption), a clean remount and
# the unlink of either side; objfsctl check agrees at each step, and once
# both are gone their backing files go too.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
ARENA=arena=32M
ok "mount with a 32 MiB arena" start_objfs "$MNT" "$DATA" "$ARENA"

status() {	# status KEY: a figure from the status file
	awk -v k="$1:" '$1 == k { print $2 }' "$MNT/.objfs-status"
}
backing_bytes() {	# blocks the backing files take, in bytes
	du -sB1 "$DATA/backing" | cut -f1
}
no_growth() {	# no_growth BYTES: the backing files took at most 1 MiB more
	local now
	now=$(backing_bytes)
	echo "backing files: $now bytes, $1 before"
	test "$now" -le "$(($1 + 1048576))"
}
# big: 80 MiB, 2.5 times the arena; small: 3 MiB and a bit.
ok "write big and small, and sync" sh -c "
	head -c 83886080 /dev/urandom >'$T/big.ref' &&
	head -c 3146000 /dev/urandom >'$T/small.ref' &&
	cp '$T/big.ref' '$MNT/big' && cp '$T/small.ref' '$MNT/small' &&
	'$CTL' sync '$MNT' >/dev/null"
before=$(status shared_chunks_total)
ok "no chunk is shared yet (shared_chunks $(status shared_chunks))" test "$(status shared_chunks)" = 0
disk0=$(backing_bytes)
ok "cp big big.bak, small small.bak (copy_file_range)" sh -c "
	cp '$MNT/big' '$MNT/big.bak' && cp '$MNT/small' '$MNT/small.bak'"
ok "the copies shared 84 chunks instead of copying them" \
	test "$(($(status shared_chunks_total) - before))" -ge 84
ok "the status file says 84 chunks are shared now" test "$(status shared_chunks)" = 84
ok "and took no disk" no_growth "$disk0"
ok "the copies read the same" sh -c "
	cmp '$T/big.ref' '$MNT/big.bak' && cmp '$T/small.ref' '$MNT/small.bak'"
ok "user.objfs.shared says so" sh -c "
	test \$(getfattr --only-values -n user.objfs.shared '$MNT/big.bak') -eq 83886080"
ok "the status file: logical bytes on disk twice those stored" sh -c "
	test $(( 2 * (83886080 + 3146000) )) -eq \$(awk '\$1 == \"disk_bytes:\" {print \$2}' '$MNT/.objfs-status') &&
	test $(( 83886080 + 3146000 )) -eq \$(awk '\$1 == \"disk_stored_bytes:\" {print \$2}' '$MNT/.objfs-status')"

# Dedup: the same bytes written again by a plain write (not a copy), as a
# checkpoint saved twice is: stored once.
disk1=$(backing_bytes)
d0=$(status dedup_chunks_total)
ok "cat big >big.again, sync" sh -c "
	cat '$T/big.ref' >'$MNT/big.again' && '$CTL' sync '$MNT' >/dev/null"
ok "its 80 chunks were found on disk already" \
	test "$(($(status dedup_chunks_total) - d0))" -ge 80
ok "and took no disk" no_growth "$disk1"
ok "it reads the same" cmp "$T/big.ref" "$MNT/big.again"
ok "rm big.again" rm "$MNT/big.again"
# 24 MiB of big's bytes again, all in the arena: the sync finds every
# chunk on disk, and its progress counts them as done (not only the bytes
# written, which are none).
w0=$(status written_out_bytes_total)
ok "head -c 24M big >mid, sync: 2x.x MiB made durable, nothing written" sh -c "
	head -c 25165824 '$T/big.ref' >'$MNT/mid' && '$CTL' sync '$MNT' >'$T/sync.out' &&
	grep -q 'synced .*: 2[0-4]\.[0-9] MiB made durable' '$T/sync.out' &&
	test \$(( \$(awk '\$1 == \"written_out_bytes_total:\" {print \$2}' '$MNT/.objfs-status') - $w0 )) -lt 1048576" 
ok "rm mid" rm "$MNT/mid"
# A file of its own bytes, copied, the copy removed: it shares nothing
# any more, and the current count is back where it was.
n0=$(status shared_chunks)
ok "solo (3 MiB of its own), cp solo solo.tmp: 3 MiB shared" sh -c "
	head -c 3145728 /dev/urandom >'$MNT/solo' && sync '$MNT/solo' &&
	cp '$MNT/solo' '$MNT/solo.tmp' &&
	test \$(getfattr --only-values -n user.objfs.shared '$MNT/solo') = 3145728 &&
	test \$(awk '\$1 == \"shared_chunks:\" {print \$2}' '$MNT/.objfs-status') = $((n0 + 3))"
ok "rm solo.tmp: solo shares nothing, objfsctl stat says so, the count is back" sh -c "
	rm '$MNT/solo.tmp' &&
	test \$(getfattr --only-values -n user.objfs.shared '$MNT/solo') = 0 &&
	'$CTL' stat '$MNT/solo' | grep -q 'shared    0 B' &&
	test \$(awk '\$1 == \"shared_chunks:\" {print \$2}' '$MNT/.objfs-status') = $n0 &&
	rm '$MNT/solo'"

# Writes to either side, not synced.
ok "write into big.bak and into small" python3 - "$MNT" "$T" <<'PY'
import os, sys
m, t = sys.argv[1:]
def patch(path, off, data):
    fd = os.open(path, os.O_RDWR)
    os.pwrite(fd, data, off)
    os.close(fd)
patch(m + "/big.bak", (10 << 20) + 123, b"\xaa" * (1 << 20))
patch(m + "/big.bak", (70 << 20), b"\xbb" * 4096)
patch(m + "/small", 5, b"\xcc" * 100)
ref = bytearray(open(t + "/big.ref", "rb").read())
ref[(10 << 20) + 123:(11 << 20) + 123] = b"\xaa" * (1 << 20)
ref[70 << 20:(70 << 20) + 4096] = b"\xbb" * 4096
open(t + "/bigbak.ref", "wb").write(ref)
ref = bytearray(open(t + "/small.ref", "rb").read())
ref[5:105] = b"\xcc" * 100
open(t + "/smallnew.ref", "wb").write(ref)
PY
same() {
	cmp "$T/big.ref" "$MNT/big" && cmp "$T/bigbak.ref" "$MNT/big.bak" &&
	cmp "$T/smallnew.ref" "$MNT/small" && cmp "$T/small.ref" "$MNT/small.bak"
}
ok "each side changed alone" same
ok "SIGKILL the daemon" sh -c "kill -KILL $OBJFS_PID"
wait_pid_gone "$OBJFS_PID" 10
fusermount3 -u "$MNT" 2>/dev/null
ok "remount after SIGKILL" start_objfs "$MNT" "$DATA" "$ARENA"
ok "nothing lost: both sides as written" same
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" "$ARENA"
ok "both sides as written after the remount" same

ok "rm big: big.bak stays whole" sh -c "
	rm '$MNT/big' && cmp '$T/bigbak.ref' '$MNT/big.bak'"
ok "truncate and punch small.bak's shared chunks" sh -c "
	truncate -s 2000000 '$MNT/small.bak' &&
	fallocate -p -o 0 -l 1048576 '$MNT/small.bak' &&
	head -c 2000000 '$T/small.ref' >'$T/smallbak.ref' &&
	fallocate -p -o 0 -l 1048576 '$T/smallbak.ref' &&
	cmp '$T/smallbak.ref' '$MNT/small.bak'"
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" "$ARENA"
ok "big.bak, small and small.bak as they were" sh -c "
	cmp '$T/bigbak.ref' '$MNT/big.bak' && cmp '$T/smallnew.ref' '$MNT/small' &&
	cmp '$T/smallbak.ref' '$MNT/small.bak'"
ok "rm the rest" sh -c "rm '$MNT/big.bak' '$MNT/small' '$MNT/small.bak'"
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "no backing file is left" sh -c "
	test -z \"\$(ls '$DATA/backing' | grep -E '^[0-9a-f]{16}\$')\""
t_done
