#!/bin/bash
# SPDX-License-Identifier: MIT
# Adoption verifies what it adopts (issue 23, defect 5).  A killed
# daemon's arena is damaged before the next mount: a bit flipped in the
# owner of a tag (an unsynced file U's dirty block then names fsynced
# file S), the owners of two tags swapped, garbage in the pages of a
# clean block.  Tags carry a check of who their block is, and a clean
# block must hold its disk copy's bytes: the damaged blocks are not
# adopted, the log says so, S reads its fsynced bytes, and objfsctl check
# finds nothing wrong.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
OPTS=arena=32M

killit() {
	kill -KILL "$OBJFS_PID"
	wait "$OBJFS_PID" 2>/dev/null
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
}
head -c $((2 << 20)) /dev/urandom >"$T/s"
head -c $((1 << 20)) /dev/urandom >"$T/u"

# damage HOW: a round: S fsynced (clean blocks), U written, not synced
# (a dirty block), SIGKILL, the arena damaged HOW, remount.
round() {
	rm -rf "$DATA"
	start_objfs "$MNT" "$DATA" "$OPTS" || return 1
	dd if="$T/s" of="$MNT/S" bs=1M conv=fsync status=none
	cp "$T/u" "$MNT/U"
	local s u
	s=$(stat -c %i "$MNT/S") u=$(stat -c %i "$MNT/U")
	cat "$MNT/S" >/dev/null	# S's blocks stay, clean
	killit
	python3 - "$(head -n 1 "$DATA/arena")" "$1" "$s" "$u" <<'PY' || return 1
import mmap, os, struct, sys
path, how, s, u = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_RDWR)
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size)
cap = struct.unpack_from("<Q", m, 16)[0]		# the header's capacity
tags = {}
for i in range(1, cap // 4096):
    off = cap + 64 * i
    if off + 64 > size:
        break
    ino, seq = struct.unpack_from("<QI", m, off)
    if ino in (s, u):
        flags = struct.unpack_from("<I", m, off + 44)[0]
        tags.setdefault(ino, []).append((off, i, flags & 1))
assert s in tags and u in tags, tags
su = [t for t in tags[s] if not t[2]]		# S's clean blocks
ud = [t for t in tags[u] if t[2]]		# U's dirty block
assert su and ud, tags
if how == "flip":				# U's block now names S
    assert bin(u ^ s).count("1") == 1, (u, s)	# one bit apart
    struct.pack_into("<Q", m, ud[0][0], u ^ (u ^ s))
elif how == "swap":				# two owners swapped
    struct.pack_into("<Q", m, ud[0][0], s)
    struct.pack_into("<Q", m, su[0][0], u)
elif how == "garbage":				# a clean block's pages
    m[su[0][1] * 4096:su[0][1] * 4096 + 4096] = os.urandom(4096)
m.flush()
print("damaged", how, "tags", tags)
PY
	start_objfs "$MNT" "$DATA" "$OPTS"
}

for how in flip swap garbage; do
	ok "$how: SIGKILL with S fsynced and U not, arena damaged, remount" round "$how"
	case $how in
	garbage)
		ok "  ... the log says the clean block was not adopted" \
			grep -q "does not hold its disk copy's bytes: not adopted" "$T/objfs.mnt.log" ;;
	*)
		ok "  ... the log says which blocks were not adopted" \
			grep -q "not adopted: [1-9][0-9]* blocks .* tags are damaged" "$T/objfs.mnt.log" ;;
	esac
	ok "  ... S reads its fsynced bytes" cmp "$T/s" "$MNT/S"
	ok "  ... U holds none of S's bytes" sh -c "! cmp -s -n 1048576 '$T/s' '$MNT/U'"
	ok "  ... clean unmount" "$CTL" umount "$MNT"
	ok "  ... objfsctl check finds nothing wrong" "$CTL" check "$DATA"
	: >"$T/objfs.mnt.log"
done
t_done
