#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs from mount(8): mount -t fuse.objfs and an fstab line; umount.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
command -v mount.fuse3 >/dev/null || { echo "1..0 # SKIP mount.fuse3 (package fuse3) is missing"; exit 0; }
# mount(8) runs helpers with a fixed PATH, so a build that is not
# installed is named with the "fuse" type's PROGRAM#SOURCE form; an
# installed objfs is found by "fuse.objfs" (checked when the installed
# binary is this build).

wait_mounted() {
	for ((i = 0; i < 100; i++)); do mountpoint -q "$1" && return 0; sleep 0.1; done
	return 1
}
wait_daemon_gone() {
	for ((i = 0; i < 300; i++)); do pgrep -f "objfs.*$DATA" >/dev/null || return 0; sleep 0.1; done
	return 1
}

T_MOUNTS+=("$MNT")
ok "mount -t fuse PROGRAM#SOURCE" mount -t fuse -o "arena=64M,data=$DATA" "$OBJFS_BIN#objfs" "$MNT"
ok "it is mounted (daemonized)" wait_mounted "$MNT"
ok "/proc/mounts shows fuse.objfs" grep -q " $MNT fuse.objfs " /proc/mounts
# Detaching happens before the store starts its threads (fork keeps only
# the calling thread): a daemonized mount must still spill.
head -c $((100 << 20)) /dev/urandom >"$T/big"
ok "a file larger than the arena goes through the daemonized mount" \
	timeout 120 bash -c "cp '$T/big' '$MNT/big' && cmp '$T/big' '$MNT/big' && rm '$MNT/big'"
ok "the daemonized mount spilled" test "$(awk '/^written_out_bytes_total:/ {print $2}' "$MNT/.objfs-status")" -gt $((30 << 20))
echo "via mount" >"$MNT/f" 2>/dev/null
ok "umount" umount "$MNT"
ok "the daemon finishes and exits" wait_daemon_gone

printf '%s#objfs %s fuse arena=64M,data=%s,noauto 0 0\n' "$OBJFS_BIN" "$MNT" "$DATA" >"$T/fstab"
ok "mount from an fstab line" mount -T "$T/fstab" "$MNT"
ok "it is mounted" wait_mounted "$MNT"
ok "data written through mount -t is back" bash -c "[ \"\$(cat '$MNT/f')\" = 'via mount' ]"
ok "fusermount3 -u" fusermount3 -u "$MNT"
ok "the daemon finishes and exits" wait_daemon_gone

installed=$(command -v objfs 2>/dev/null)
if { [ "$installed" = /usr/local/bin/objfs ] || [ "$installed" = /usr/bin/objfs ]; } &&
   cmp -s "$installed" "$OBJFS_BIN"; then
	ok "mount -t fuse.objfs (installed objfs)" mount -t fuse.objfs -o "arena=64M,data=$DATA" objfs "$MNT"
	ok "it is mounted" wait_mounted "$MNT"
	ok "umount" umount "$MNT"
	ok "the daemon finishes and exits" wait_daemon_gone
else
	for d in "mount -t fuse.objfs (installed objfs)" "it is mounted" \
		 "umount" "the daemon finishes and exits"; do
		skip "$d" "this build is not the objfs installed in /usr/local/bin or /usr/bin (make install)"
	done
fi
t_done
