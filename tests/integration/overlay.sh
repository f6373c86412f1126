#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs as the upper layer of an overlayfs (a container's writable
# layer): overlayfs needs RENAME_WHITEOUT of its upper filesystem (the
# kernel refused objfs before: "upper fs does not support
# RENAME_WHITEOUT ... missing required features").  Deleting and
# renaming lower files leaves whiteouts (character devices 0:0) in the
# upper directory; new and copied-up files live there; all of it is the
# same after objfs is unmounted and mounted again.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
OPTS=arena=64M
LOWER=$T/lower MERGED=$T/merged
mkdir -p "$LOWER/dir" "$MERGED"
echo "lower a" >"$LOWER/a"
echo "lower b" >"$LOWER/b"
echo "lower c" >"$LOWER/dir/c"

overlay() {
	mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$MNT/upper,workdir=$MNT/work" "$MERGED"
}
ok "mount objfs" start_objfs "$MNT" "$DATA" "$OPTS"
mkdir -p "$MNT/upper" "$MNT/work"
if ! grep -qw overlay /proc/filesystems && ! modprobe overlay 2>/dev/null; then
	skip "overlayfs with objfs as its upper layer" "this kernel has no overlayfs"
	ok "unmount" stop_objfs
	t_done
	exit 0
fi
ok "mount an overlayfs with objfs as its upper layer" overlay
T_MOUNTS=("$MERGED" "${T_MOUNTS[@]}")
ok "rm a lower file" rm "$MERGED/a"
ok "mv a lower file" mv "$MERGED/b" "$MERGED/b2"
ok "append to a lower file (copied up)" sh -c "echo more >>'$MERGED/dir/c'"
ok "a new file" sh -c "echo new >'$MERGED/n'"
view() {
	[ ! -e "$MERGED/a" ] && [ ! -e "$MERGED/b" ] &&
	[ "$(cat "$MERGED/b2")" = "lower b" ] &&
	[ "$(cat "$MERGED/dir/c")" = "$(printf 'lower c\nmore')" ] &&
	[ "$(cat "$MERGED/n")" = new ] &&
	[ "$(ls "$MERGED" | tr '\n' ' ')" = "b2 dir n " ]
}
ok "the merged view is what was done" view
ok "the upper layer holds whiteouts for a and b (character devices 0:0)" sh -c "
	[ \"\$(stat -c '%F %t:%T' '$MNT/upper/a')\" = 'character special file 0:0' ] &&
	[ \"\$(stat -c '%F %t:%T' '$MNT/upper/b')\" = 'character special file 0:0' ]"
ok "the lower layer is untouched" sh -c "
	[ \"\$(cat '$LOWER/a' '$LOWER/b' '$LOWER/dir/c')\" = \"\$(printf 'lower a\nlower b\nlower c')\" ]"
ok "unmount the overlay" umount "$MERGED"
ok "unmount objfs" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "mount objfs again" start_objfs "$MNT" "$DATA" "$OPTS"
ok "and the overlay" overlay
ok "the merged view is the same" view
ok "unmount the overlay" umount "$MERGED"
ok "unmount objfs" stop_objfs
t_done
