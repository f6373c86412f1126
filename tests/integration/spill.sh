#!/bin/bash
# SPDX-License-Identifier: MIT
# Bounded memory: files many times the arena go through it, spilled chunk
# by chunk and restored when read, the arena never exceeds its capacity,
# nothing deadlocks, and failures lose nothing.  Arena: 64 MiB.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
OBJFSCTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
ARENA=arena=64M

stat_of() {	# stat_of KEY [MOUNT]: a figure from the status file
	awk -v k="$1:" '$1 == k {print $2}' "${2:-$MNT}/.objfs-status"
}

head -c $((1 << 30)) /dev/urandom >"$T/g1"
ok "mount with a 64 MiB arena" start_objfs "$MNT" "$DATA" "$ARENA"
cap=$(stat_of arena_capacity_bytes)

# Watch arena use while a file 16 times the arena is copied in.
( while :; do stat_of arena_used_bytes; sleep 0.05; done ) >"$T/used.log" 2>/dev/null &
watcher=$!
ok "cp of a file 16x the arena" timeout 300 cp "$T/g1" "$MNT/g1"
kill "$watcher"; wait "$watcher" 2>/dev/null
ok "arena use never exceeded its capacity ($(sort -n "$T/used.log" | tail -n 1) of $cap, $(wc -l <"$T/used.log") samples)" \
	bash -c "[ \$(wc -l < '$T/used.log') -gt 5 ] && [ \$(sort -n '$T/used.log' | tail -n 1) -le $cap ]"
ok "chunks were spilled" test "$(stat_of written_out_bytes_total)" -gt $((800 << 20))
ok "read back with cmp" cmp "$T/g1" "$MNT/g1"
ok "objfsctl stat shows the file mostly spilled" bash -c "
	'$OBJFSCTL' stat '$MNT/g1' | grep -q 'spilled' &&
	[ \$(getfattr --only-values -n user.objfs.spilled '$MNT/g1') -gt $((900 << 20)) ]"
ok "objfsctl status" bash -c "'$OBJFSCTL' status '$MNT' | grep -q '^arena_capacity_bytes *64.0 MiB'"
ok "objfsctl stat of a file outside objfs: one line saying so, exit 1" bash -c "
	! '$OBJFSCTL' stat /etc/passwd 2>'$T/st.err' &&
	[ \$(wc -l <'$T/st.err') = 1 ] && grep -q 'not a regular file in an objfs mount' '$T/st.err'"
ok "objfsctl stat of a missing file: its error" bash -c "
	! '$OBJFSCTL' stat '$MNT/nothing' 2>'$T/st.err' &&
	grep -qx 'objfsctl: $MNT/nothing: No such file or directory' '$T/st.err'"

# Reading a spilled file twice writes nothing.
ok "fsync the file" python3 -c "import os; fd = os.open('$MNT/g1', os.O_RDONLY); os.fsync(fd)"
before=$(stat_of written_out_bytes_total)
echo 3 >/proc/sys/vm/drop_caches
ok "first read of the spilled file" cmp "$T/g1" "$MNT/g1"
echo 3 >/proc/sys/vm/drop_caches
ok "second read of the spilled file" cmp "$T/g1" "$MNT/g1"
ok "reading twice wrote nothing to the backing directory" test "$(stat_of written_out_bytes_total)" = "$before"
ok "reads restored chunks or read them from disk" \
	test $(( $(stat_of restored_chunks) + $(stat_of direct_read_chunks) )) -gt 0

# Space comes back once the change is durable: at the next checkpoint,
# within about a second (until then a machine crash would bring the old
# records back, so their bytes must stay).
du_below() {	# du_below KIB: wait up to 10 s for backing/ to use less
	local i
	for ((i = 0; i < 100; i++)); do
		du1=$(du -sk "$DATA/backing" | cut -f1)
		[ "$du1" -lt "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
du0=$(du -sk "$DATA/backing" | cut -f1)
ok "truncate a spilled file to 10 MiB" truncate -s 10M "$MNT/g1"
ok "truncate returned backing space ($du0 -> less than $((du0 - 900 * 1024)) KiB)" du_below $((du0 - 900 * 1024))
ok "the kept part is intact" cmp -n $((10 << 20)) "$T/g1" "$MNT/g1"
ok "unlink" rm "$MNT/g1"
du2=$du1
ok "unlink returned backing space ($du2 -> less than $((du2 - 9 * 1024)) KiB)" du_below $((du2 - 9 * 1024))

# Four writers of twice the arena each, and two readers of spilled files.
head -c $((128 << 20)) /dev/urandom >"$T/w"
for i in 1 2; do cp "$T/w" "$MNT/r$i"; done
run_all() {
	local pids=() p rc=0 i
	for i in 1 2 3 4; do dd if="$T/w" of="$MNT/w$i" bs=$((i * 128))k status=none & pids+=($!); done
	for i in 1 2; do cmp "$T/w" "$MNT/r$i" & pids+=($!); done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}
ok "4 writers of 2x the arena and 2 readers finish (watchdog 300 s)" \
	timeout 300 bash -c "$(declare -f run_all); T='$T' MNT='$MNT' run_all"
for i in 1 2 3 4; do ok "writer $i's file compares equal" cmp "$T/w" "$MNT/w$i"; done

# Namespace changes while the spiller is evicting the same files (a lock
# order bug once deadlocked unlink against eviction).
churn() {
	local i
	for i in $(seq 1 40); do
		# Fill the arena past its high watermark, then at once remove,
		# truncate or rename the file the spiller is writing out.
		dd if=/dev/zero of="$MNT/churn" bs=1M count=62 status=none
		case $((i % 3)) in
		0) rm "$MNT/churn" ;;
		1) truncate -s 1M "$MNT/churn" && rm "$MNT/churn" ;;
		2) mv "$MNT/churn" "$MNT/moved" && rm "$MNT/moved" ;;
		esac
	done
}
ok "unlink, truncate and rename while spilling do not hang (watchdog 120 s)" \
	timeout 120 bash -c "$(declare -f churn); MNT='$MNT' churn"
ok "the mount still answers" ls "$MNT"

# Writes through a shared mapping, msync, fsync and fallocate while three
# writers keep the 64 MiB arena full: they wait for room as write does.
writers=()
for i in 1 2 3; do
	dd if=/dev/urandom of="$MNT/v$i" bs=1M count=100 status=none &
	writers+=($!)
done
ok "10 rounds of mmap writes, msync, fsync and fallocate under three writers" \
	timeout 300 python3 "$(dirname "$0")/map_rounds.py" "$MNT" 10 32
wait "${writers[@]}"
rm -f "$MNT"/v1 "$MNT"/v2 "$MNT"/v3

# A flipped byte in a backing file: EIO for that chunk, the rest reads.
head -c $((3 << 20)) /dev/urandom >"$T/c"
cp "$T/c" "$MNT/c"
ino=$(stat -c %i "$MNT/c")
ok "unmount" stop_objfs
f=$(printf '%s/backing/%016x' "$DATA" "$ino")
python3 -c "
import sys
with open('$f', 'r+b') as fh:
    fh.seek((1 << 20) + 12345); b = fh.read(1); fh.seek((1 << 20) + 12345)
    fh.write(bytes([b[0] ^ 0xff]))"
ok "remount" start_objfs "$MNT" "$DATA" "$ARENA"
fails "reading the corrupt chunk fails" dd if="$MNT/c" of=/dev/null bs=1M skip=1 count=1 iflag=direct status=none
ok "... with EIO" bash -c "dd if='$MNT/c' of=/dev/null bs=1M skip=1 count=1 iflag=direct 2>&1 | grep -q 'Input/output error'"
ok "the chunks before and after read fine" bash -c "
	cmp -n $((1 << 20)) '$T/c' '$MNT/c' &&
	cmp -i $((2 << 20)) '$T/c' '$MNT/c'"
ok "the failure is counted" test "$(stat_of checksum_failures)" -ge 1
ok "and logged with inode and chunk" grep -q "inode $ino chunk 1: checksum mismatch" "$T/objfs.mnt.log"
rm "$MNT/c"

# fsync, then SIGKILL: nothing of that file is lost.
head -c $((200 << 20)) /dev/urandom >"$T/s"
ok "write 200 MiB and fsync" dd if="$T/s" of="$MNT/s" bs=1M conv=fsync status=none
kill -KILL "$OBJFS_PID"; wait "$OBJFS_PID" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
ok "remount after SIGKILL" start_objfs "$MNT" "$DATA" "$ARENA"
ok "the fsynced file compares equal" cmp "$T/s" "$MNT/s"
# SIGKILL in the middle of a write, no fsync.
dd if=/dev/urandom of="$MNT/partial" bs=1M count=400 status=none 2>/dev/null &
ddpid=$!
for _ in $(seq 1 100); do
	[ "$(stat -c %s "$MNT/partial" 2>/dev/null || echo 0)" -gt $((150 << 20)) ] && break
	sleep 0.1
done
kill -KILL "$OBJFS_PID"; wait "$OBJFS_PID" 2>/dev/null
wait "$ddpid" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
ok "remount after SIGKILL in mid-write" start_objfs "$MNT" "$DATA" "$ARENA"
ok "every file reads without an error" bash -c "find '$MNT' -type f -exec cat {} + > /dev/null"
ok "no checksum failed" test "$(stat_of checksum_failures)" = 0
ok "the fsynced file is still equal" cmp "$T/s" "$MNT/s"

# Clean unmount with files larger than the arena, then remount.
cp "$T/w" "$MNT/big1"
cp "$T/s" "$MNT/big2"
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" "$ARENA"
ok "files larger than the arena compare equal after remount" bash -c "
	cmp '$T/w' '$MNT/big1' && cmp '$T/s' '$MNT/big2' && cmp '$T/w' '$MNT/w3'"
ok "unmount" stop_objfs
t_done
