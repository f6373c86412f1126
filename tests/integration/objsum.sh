#!/bin/bash
# SPDX-License-Identifier: MIT
# The whole-object checksum (user.objfs.checksum, objfsctl sum) equals
# what scripts/objfs-sum computes from the bytes alone, outside objfs:
# for files written in the arena, spilled past it, partly rewritten,
# sparse, empty, of odd sizes; after a remount; for a copy made inside the
# mount; and for the same bytes written in a different order.  Different
# bytes give a different checksum.  It is read-only and not listed, so
# cp -a and rsync -X do not carry it elsewhere.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
REF=$(dirname "$0")/../../scripts/objfs-sum
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
ok "mount with a 16 MiB arena" start_objfs "$MNT" "$DATA" arena=16M

# Files: the arena holds 16 MiB, so big goes mostly to disk.
ok "write the files" python3 - "$MNT" <<'PY'
import os, random, sys
m = sys.argv[1]
rnd = random.Random(7)
def put(name, data, off=0):
    with open(os.path.join(m, name), "wb") as f:
        f.seek(off)
        f.write(data)
put("empty", b"")
put("tiny", b"x")
put("odd", rnd.randbytes(3 * 1048576 + 4097))
put("big", rnd.randbytes(40 << 20))
put("sparse", b"data", (5 << 20) + 11)
os.truncate(os.path.join(m, "sparse"), 9 << 20)
# The same bytes as odd, written backwards in pieces over junk.
src = open(os.path.join(m, "odd"), "rb").read()
with open(os.path.join(m, "odd.twin"), "wb") as f:
    f.write(b"\xee" * len(src))
    end = len(src)
    while end > 0:
        n = min(end, 99991)
        f.seek(end - n)
        f.write(src[end - n:end])
        end -= n
PY
sums_match() {	# sums_match FILE...: the xattr, objfsctl sum and the script agree
	local f x c r
	for f in "$@"; do
		x=$(getfattr --only-values -n user.objfs.checksum "$MNT/$f") || return 1
		c=$("$CTL" sum "$MNT/$f" | cut -d' ' -f1) || return 1
		r=$("$REF" "$MNT/$f" | cut -d' ' -f1) || return 1
		echo "$f: xattr $x objfsctl $c script $r"
		[ ${#x} = 32 ] && [ "$x" = "$c" ] && [ "$x" = "$r" ] || return 1
	done
}
FILES="empty tiny odd big sparse odd.twin"
ok "xattr, objfsctl sum and the reference script agree" sums_match $FILES
ok "same bytes written differently, same checksum" \
	test "$("$CTL" sum "$MNT/odd" | cut -d' ' -f1)" = \
	     "$("$CTL" sum "$MNT/odd.twin" | cut -d' ' -f1)"
# Rewrite 4 KiB in the middle of big (a spilled chunk, written without
# restoring it) and one byte of odd.
ok "rewrite parts" python3 - "$MNT" <<'PY'
import os, sys
m = sys.argv[1]
fd = os.open(os.path.join(m, "big"), os.O_RDWR)
os.pwrite(fd, b"\x5a" * 4096, (17 << 20) + 8192)
os.close(fd)
fd = os.open(os.path.join(m, "odd"), os.O_RDWR)
os.pwrite(fd, b"\x01", 1048577)
os.close(fd)
PY
ok "after the rewrites, still equal to the script" sums_match big odd
fails "a changed byte changes the checksum" \
	test "$("$CTL" sum "$MNT/odd" | cut -d' ' -f1)" = \
	     "$("$CTL" sum "$MNT/odd.twin" | cut -d' ' -f1)"
ok "cp inside the mount: the copy has the same checksum" sh -c "
	cp '$MNT/big' '$MNT/big.copy' &&
	test \"\$('$CTL' sum '$MNT/big' | cut -d' ' -f1)\" = \
	     \"\$('$CTL' sum '$MNT/big.copy' | cut -d' ' -f1)\""
fails "it cannot be set" setfattr -n user.objfs.checksum -v 0 "$MNT/odd"
fails "nor removed" setfattr -x user.objfs.checksum "$MNT/odd"
ok "and is not listed" sh -c "! getfattr -d -m - '$MNT/odd' 2>/dev/null | grep -q checksum"
ok "cp -a to a plain directory carries no checksum xattr" sh -c "
	cp -a '$MNT/odd' '$T/odd.out' &&
	! getfattr -d -m - '$T/odd.out' 2>/dev/null | grep -q objfs"
fails "objfsctl sum of a directory fails" "$CTL" sum "$MNT"
ok "unmount" stop_objfs
ok "mount again" start_objfs "$MNT" "$DATA" arena=16M
ok "after the remount, still equal to the script" sums_match $FILES big.copy
ok "unmount" stop_objfs
t_done
