#!/bin/bash
# SPDX-License-Identifier: MIT
# FUSE over io_uring (-o io_uring=auto): every operation of posix_ops.py,
# a tree, large files, mmap and xattrs through the rings; a clean stop on
# unmount and on SIGTERM; SIGSTOP and SIGCONT; -o io_uring=idle beside CPU hogs; a SIGKILLed daemon leaves a mount that can be
# taken down and data that the next mount has; and /dev/fuse when the
# kernel does not offer io_uring.  The kernel offers it only while the
# fuse module's enable_uring is Y: the test sets it for each mount (a
# connection keeps what it was given at INIT) and puts it back at once.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
P=/sys/module/fuse/parameters/enable_uring
if [ ! -w "$P" ]; then
	echo "1..0 # SKIP this kernel has no FUSE over io_uring ($P)"
	exit 0
fi
if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 2 ]; then
	echo "1..0 # SKIP io_uring is disabled here (kernel.io_uring_disabled = 2)"
	exit 0
fi
OLD=$(cat "$P")
DIS=/proc/sys/kernel/io_uring_disabled
DIS_OLD=$(cat "$DIS" 2>/dev/null || echo)
restore() {
	echo "$OLD" >"$P"
	[ -z "$DIS_OLD" ] || echo "$DIS_OLD" >"$DIS"
}
trap 'restore; t_cleanup' EXIT
LOG=$T/objfs.mnt.log

# mount_uring [OPTIONS]: mount with io_uring offered
mount_uring() {
	echo Y >"$P"
	start_objfs "$MNT" "$DATA" "arena=256M,io_uring=auto${1:+,$1}"
	local rc=$?
	restore
	return $rc
}

rings_in_use() { grep -q "requests through io_uring: [0-9]* queues" "$LOG"; }
served() {	# served MIN: the daemon's count at exit is at least MIN
	local n
	n=$(sed -n 's/.*io_uring: \([0-9]*\) requests served.*/\1/p' "$LOG" | tail -n 1)
	echo "served: ${n:-none}"
	[ -n "$n" ] && [ "$n" -ge "$1" ]
}

ok "mount with io_uring offered" mount_uring
ok "the daemon takes requests through its rings" rings_in_use
python3 "$(dirname "$0")/posix_ops.py" "$MNT" "$T/py.result" "$DATA"
read -r n f <"$T/py.result" || { n=0; f=1; echo "not ok - posix_ops.py did not finish"; }
T_NUM=$((T_NUM + n + (n == 0)))
T_FAILED=$((T_FAILED + f))

tree() {
	mkdir -p "$T/src" &&
	for d in a b c; do
		mkdir -p "$T/src/$d/sub" || return 1
		for i in $(seq 1 150); do
			head -c $((i * 97)) /dev/urandom >"$T/src/$d/f$i" || return 1
		done
		ln -s f1 "$T/src/$d/link"
	done &&
	mkdir "$MNT/u" && tar -C "$T" -cf - src | tar -C "$MNT/u" -xf - &&
	diff -r "$T/src" "$MNT/u/src" &&
	[ "$(tar -C "$MNT/u" -cf - src | tar -tf - | sort | md5sum)" = \
	  "$(tar -C "$T" -cf - src | tar -tf - | sort | md5sum)" ]
}
ok "a tree in and out with tar, compared" tree

big() {	# 1 MiB requests both ways: the rings' payloads are full
	head -c $((48 << 20)) /dev/urandom >"$T/big" &&
	dd if="$T/big" of="$MNT/u-big" bs=1M status=none &&
	cmp "$T/big" "$MNT/u-big" &&
	dd if="$MNT/u-big" bs=4M status=none | cmp - "$T/big"
}
ok "48 MiB written and read in 1 MiB requests" big

mapped() {
	python3 - "$MNT/u-map" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 8 << 20)
m = mmap.mmap(fd, 8 << 20)
for i in range(0, 8 << 20, 4096):
    m[i:i + 8] = i.to_bytes(8, "little")
m.flush()
m.close()
os.close(fd)
with open(sys.argv[1], "rb") as f:
    b = f.read()
assert all(int.from_bytes(b[i:i + 8], "little") == i
           for i in range(0, 8 << 20, 4096)), "mapped writes lost"
PY
}
ok "writes through a shared mapping, flushed and read back" mapped

xattrs() {	# replies of 64 KiB and the size-only form
	python3 - "$MNT/u-big" <<'PY'
import os, sys
p = sys.argv[1]
v = os.urandom(65536)
os.setxattr(p, "user.big", v)
assert os.getxattr(p, "user.big") == v
assert "user.big" in os.listxattr(p)
os.removexattr(p, "user.big")
try:
    os.getxattr(p, "user.big")
    raise SystemExit("removed xattr still there")
except OSError as e:
    assert e.errno == 61, e
PY
}
ok "a 64 KiB extended attribute set, read, listed and removed" xattrs

listing() {	# a listing larger than one reply
	mkdir "$MNT/u-many" && for i in $(seq 1 3000); do : >"$MNT/u-many/name-with-some-length-$i"; done &&
	[ "$(ls "$MNT/u-many" | wc -l)" = 3000 ] && [ "$(find "$MNT/u-many" -type f | wc -l)" = 3000 ]
}
ok "3,000 names listed" listing

parallel() {	# both queues at once, from processes on each CPU
	local pids=() c
	for c in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$c" sh -c "for i in \$(seq 1 300); do echo \$i >'$MNT/p$c-'\$i; cat '$MNT/p$c-'\$i >/dev/null; done" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || return 1; done
	for c in $(seq 0 $(($(nproc) - 1))); do
		[ "$(cat "$MNT/p$c-300")" = 300 ] || return 1
	done
}
ok "requests from every CPU at once" parallel


ok "unmount: the daemon exits 0" stop_objfs
ok "it served the requests through its rings" served 20000

again() {
	start_objfs "$MNT" "$DATA" "arena=256M,io_uring=off" &&
	cmp "$T/big" "$MNT/u-big" && diff -r "$T/src" "$MNT/u/src" &&
	stop_objfs
}
ok "everything is there on a mount without io_uring" again

# Stopped and continued (Ctrl-Z and fg on a daemon in the foreground, a
# debugger attaching): each /dev/fuse read the stop interrupts is
# restarted, and finds the fd left non-blocking by the readers that poll
# while the rings serve (the readers of a fresh mount all wait in such a
# read).  That EAGAIN ended the mount, every time.
stopped() {
	local i=0 k
	rm -f "$T/stop"
	( while [ ! -e "$T/stop" ]; do i=$((i + 1)); echo "$i" >"$MNT/s" || exit 1; cat "$MNT/s" >/dev/null || exit 1; done ) &
	k=$!
	sleep 0.3
	for i in $(seq 1 20); do
		kill -STOP "$OBJFS_PID"; sleep 0.02; kill -CONT "$OBJFS_PID"; sleep 0.05
	done
	touch "$T/stop"
	if wait "$k" && mountpoint -q "$MNT" && echo after >"$MNT/after" &&
	   [ "$(cat "$MNT/after")" = after ]; then
		return 0
	fi
	tail -n 5 "$LOG"
	return 1
}
ok "a fresh mount with io_uring" mount_uring
ok "stopped and continued 20 times under load: still mounted" stopped
ok "unmount: the daemon exits 0" stop_objfs

term() {
	mount_uring || return 1
	echo data >"$MNT/term" && sync "$MNT/term" &&
	kill -TERM "$OBJFS_PID" && wait_pid_gone "$OBJFS_PID" 30 &&
	! mountpoint -q "$MNT" && wait "$OBJFS_PID"
}
ok "SIGTERM: unmounted, the daemon exits 0" term

# -o io_uring=idle: the queue threads wait as SCHED_IDLE (so that a
# client stays on its CPU); beside busy normal tasks they would starve,
# unless the daemon sees them wait and raises them.
hogs() {
	local pids=() c rc=0
	grep -q "waiting as SCHED_IDLE" "$LOG" || { echo "not SCHED_IDLE"; return 1; }
	for c in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$c" sh -c 'while :; do :; done' &
		pids+=($!)
		T_PIDS+=($!)
	done
	sleep 0.5
	timeout 120 sh -c "for i in \$(seq 1 500); do echo \$i >'$MNT/hog-'\$i && cat '$MNT/hog-'\$i >/dev/null || exit 1; done" || rc=1
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	[ "$rc" = 0 ] && [ "$(cat "$MNT/hog-500")" = 500 ]
}
raised() {
	local n
	n=$(sed -n 's/.*raised from SCHED_IDLE \([0-9]*\) times.*/\1/p' "$LOG" | tail -n 1)
	echo "raised: ${n:-none}"
	[ -n "$n" ] && [ "$n" -ge 1 ]
}
ok "mount with io_uring=idle" mount_uring io_uring=idle
ok "beside a CPU hog on every CPU, 500 files written and read" hogs
ok "tar of a tree in and out" bash -c "rm -rf '$MNT/u' && mkdir '$MNT/u' && tar -C '$T' -cf - src | tar -C '$MNT/u' -xf - && diff -r '$T/src' '$MNT/u/src'"
ok "unmount: the daemon exits 0" stop_objfs
ok "... and it raised its starved threads from SCHED_IDLE" raised

killed() {
	mount_uring || return 1
	echo kept >"$MNT/kept" && sync "$MNT/kept" &&
	(while :; do echo x >>"$MNT/busy" || exit 0; done 2>/dev/null) &
	local w=$!
	T_PIDS+=("$w")
	sleep 0.5
	kill -9 "$OBJFS_PID"
	wait_pid_gone "$OBJFS_PID" 10 || return 1
	kill "$w"; wait "$w" 2>/dev/null
	umount -l "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null
	! mountpoint -q "$MNT" || return 1
	start_objfs "$MNT" "$DATA" "arena=256M,io_uring=off" &&
	[ "$(cat "$MNT/kept")" = kept ] && stop_objfs
}
ok "SIGKILL: the mount comes down, fsynced data is kept" killed

fallback() {
	echo N >"$P"
	start_objfs "$MNT" "$DATA" "arena=256M,io_uring=auto"
	local rc=$?
	restore
	[ $rc = 0 ] || return 1
	grep -q "io_uring: the kernel does not offer it" "$LOG" &&
	[ "$(cat "$MNT/kept")" = kept ] && echo y >"$MNT/y" && stop_objfs
}
: >"$LOG"
ok "not offered: requests stay on /dev/fuse" fallback

refused_rings() {	# offered, but io_uring_setup refused (sysctl)
	[ -n "$DIS_OLD" ] || { echo "no $DIS"; return 0; }
	echo Y >"$P"
	echo 2 >"$DIS"
	start_objfs "$MNT" "$DATA" "arena=256M,io_uring=auto"
	local rc=$?
	restore
	[ $rc = 0 ] || return 1
	grep -q "io_uring: cannot set up" "$LOG" &&
	! grep -q "requests through io_uring" "$LOG" &&
	[ "$(cat "$MNT/kept")" = kept ] && echo z >"$MNT/z" && stop_objfs
}
: >"$LOG"
ok "rings refused (io_uring disabled): requests stay on /dev/fuse" refused_rings
t_done
