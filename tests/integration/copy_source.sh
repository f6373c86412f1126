#!/bin/bash
# SPDX-License-Identifier: MIT
# A copy shares its source's disk copies (local_dedup.c); the source is then
# truncated and deleted while the kernel still knows its inode (an
# O_PATH descriptor, or just the lookup the kernel keeps until it
# forgets).  The space the truncation gave back is given back into the
# deleted source's file, which still holds the copy's chunks: the copy
# must read the same, fsynced and after a clean unmount and remount, and
# objfsctl check must find nothing wrong (issue 23, defect 1: the give-
# back shortened that file to nothing).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
OPTS=arena=64M

head -c 6M /dev/urandom >"$T/b"
head -c 5M "$T/b" >"$T/b5"

# With an O_PATH descriptor held across the unlink: the deleted source
# stays in the inode table while its deferred give-back runs.
ok "mount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "f0: 6 MiB, fsynced" dd if="$T/b" of="$MNT/f0" bs=1M conv=fsync status=none
ok "cp f0 f1, truncate f1 to 5 MiB, sync f1" sh -c "
	cp '$MNT/f0' '$MNT/f1' && truncate -s 5M '$MNT/f1' && sync '$MNT/f1'"
ok "truncate f0 to 5 MiB, unlink it while held by O_PATH, wait" \
	python3 -c "
import os, time
os.truncate('$MNT/f0', 5 << 20)
h = os.open('$MNT/f0', os.O_PATH)
os.unlink('$MNT/f0')
time.sleep(2.5)	# the daemon gives space back once a second
os.close(h)"
ok "f1 reads its 5 MiB" cmp "$T/b5" "$MNT/f1"
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "f1 still reads its 5 MiB" cmp "$T/b5" "$MNT/f1"
ok "clean unmount" "$CTL" umount "$MNT"

# No descriptor held: rewrite a file, cp it, rm the source, unmount at
# once (the kernel's forget of the source may not reach the daemon
# before the unmount); ten times over, each checked offline, and every
# copy after a remount.
rm -rf "$DATA"
bad=0
for ((r = 0; r < 10; r++)); do
	start_objfs "$MNT" "$DATA" "$OPTS" >>"$T/rounds.log" 2>&1 || { bad=$((bad + 1)); break; }
	python3 - "$MNT" "$T" "$r" <<'PY' >>"$T/rounds.log" 2>&1 || bad=$((bad + 1))
import ctypes, os, sys, time
mnt, t, r = sys.argv[1], sys.argv[2], int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
src, dst = mnt + "/src", "%s/copy.%d" % (mnt, r)
size = (5 + r % 3) << 20
with open(src, "wb") as f:
    f.write(os.urandom(size)); f.flush(); os.fsync(f.fileno())
with open(src, "rb") as s, open(dst, "wb") as d:	# cp: shared copies
    os.copy_file_range(s.fileno(), d.fileno(), size)
    os.fsync(d.fileno())
with open(dst, "rb") as d, open("%s/copy.%d" % (t, r), "wb") as o:
    o.write(d.read())
with open(src, "r+b") as f:	# a rewrite: its new copy of the last chunk
    f.seek(size - (1 << 20))	# waits to be given back after the cut
    f.write(os.urandom(1 << 20)); f.flush(); os.fsync(f.fileno())
time.sleep(0.2)			# the kernel's release of that open
os.truncate(src, 3 << 20)	# not synced: given back at the next tick
os.unlink(src)
PY
	"$CTL" umount "$MNT" >>"$T/rounds.log" 2>&1 || bad=$((bad + 1))
	"$CTL" check "$DATA" >>"$T/rounds.log" 2>&1 || { echo "# round $r: check"; bad=$((bad + 1)); }
done
ok "ten rounds of rewrite, cp, rm the source, unmount: every check clean" test "$bad" = 0
ok "remount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "every copy reads what it held" sh -c "
	for r in 0 1 2 3 4 5 6 7 8 9; do cmp '$T/copy.'\$r '$MNT/copy.'\$r || exit 1; done"
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
t_done
