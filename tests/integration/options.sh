#!/bin/bash
# SPDX-License-Identifier: MIT
# Wrong or impossible options are refused before mounting: one clear line,
# exit status 2, nothing mounted.  Sane defaults mount.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init

# refused DESCRIPTION PATTERN ARGS...: exit 2, one line matching PATTERN.
refused() {
	local d=$1 pat=$2 rc out before after
	shift 2
	# Mounts under this test's own directory: other tests may mount
	# and unmount elsewhere meanwhile.
	before=$(grep -c " $T/" /proc/mounts)
	out=$("$OBJFS_BIN" -f "$@" 2>&1 </dev/null)
	rc=$?
	after=$(grep -c " $T/" /proc/mounts)
	T_NUM=$((T_NUM + 1))
	if [ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
	   printf '%s' "$out" | grep -qiE "$pat" && [ "$before" = "$after" ]; then
		echo "ok $T_NUM - refused: $d"
	else
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - refused: $d (exit $rc, mounts $before -> $after): $out"
	fi
}

refused "size that is not a number" "arena=abc: not a size" -o arena=abc,data="$DATA" "$MNT"
refused "size with a bad suffix" "not a size" -o arena=12Q,data="$DATA" "$MNT"
refused "arena larger than memory" "larger than the available memory" -o arena=64T,data="$DATA" "$MNT"
refused "arena too small" "too small" -o arena=1M,data="$DATA" "$MNT"
refused "chunk not a power of two" "power of two" -o chunk=3M,data="$DATA" "$MNT"
refused "chunk too small" "power of two" -o chunk=1K,data="$DATA" "$MNT"
refused "direct_io with an unknown policy" "direct_io=sometimes: must be auto, writes, all or none" -o direct_io=sometimes,data="$DATA" "$MNT"
refused "direct_io without a value" "direct_io needs a value" -o direct_io,data="$DATA" "$MNT"
refused "io_uring with an unknown value" "io_uring=yes: must be auto, idle or off" -o io_uring=yes,data="$DATA" "$MNT"
refused "readahead not a multiple of 4K" "readahead=3K: must be a multiple of 4K" -o readahead=3K,data="$DATA" "$MNT"
refused "passthrough with an unknown value" "passthrough=on: must be auto or off" -o passthrough=on,data="$DATA" "$MNT"
refused "sealed_max of 0" "sealed_max=0: must be a percentage from 1 to 90" -o sealed_max=0,data="$DATA" "$MNT"
refused "sealed_max past 90" "sealed_max=95: must be a percentage from 1 to 90" -o sealed_max=95,data="$DATA" "$MNT"
refused "sealed_pages with an unknown value" "sealed_pages=big: must be huge or small" -o sealed_pages=big,data="$DATA" "$MNT"
refused "readahead too large" "readahead=2G" -o readahead=2G,data="$DATA" "$MNT"
refused "missing mountpoint" "No such file or directory" -o data="$DATA" "$T/nonexistent"
touch "$T/afile"
refused "mountpoint that is a file" "not a directory" -o data="$DATA" "$T/afile"
refused "no mountpoint" "no mountpoint" -o data="$DATA"
refused "unknown flag" "unknown option" --bogus "$MNT"
refused "unknown -o option, in objfs's own words" "^objfs: unknown option -o no_such_option " -o data="$DATA",no_such_option "$MNT"
refused "unknown -o option with a value" "^objfs: unknown option -o bogus=1 " -o bogus=1,data="$DATA" "$MNT"
refused "data directory on /proc, named as such" "^objfs: /proc: on /proc, a filesystem of the kernel's own: the data directory must be on a disk filesystem" -o data=/proc "$MNT"
refused "data directory on sysfs" "on sysfs, a filesystem of the kernel's own" -o data=/sys/kernel "$MNT"
refused "data directory under a file" "cannot create the data directory" -o data="$T/afile/sub" "$MNT"
mkdir -p "$T/ro"
mount -t tmpfs -o size=1m,ro tmpfs "$T/ro" && T_MOUNTS+=("$T/ro")
refused "data directory not writable" "not writable|read-only" -o data="$T/ro" "$MNT"
umount "$T/ro"
mkdir -p "$T/private" && chmod 700 "$T/private"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$OBJFS_BIN" -f \
	-o data="$T/private/d" "$MNT" 2>&1)
rc=$?
T_NUM=$((T_NUM + 1))
if [ "$rc" = 2 ] && printf '%s' "$out" | grep -q "Permission denied"; then
	echo "ok $T_NUM - refused: data directory the user may not create ($out)"
else
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_NUM - data directory the user may not create: exit $rc: $out"
fi

ok "mount with a data directory" start_objfs "$MNT" "$DATA" arena=64M
mkdir -p "$T/mnt2"
refused "data directory already served" "already served by another objfs \(pid $OBJFS_PID\)" \
	-o data="$DATA",arena=64M "$T/mnt2"
ok "unmount" stop_objfs
refused "chunk size differs from the data directory's, both named" \
	"chunk size 64 KiB differs from the 1024 KiB this data directory was created with" \
	-o data="$DATA",chunk=64K,arena=64M "$MNT"

ok "generic mount options are passed on" start_objfs "$MNT" "$DATA" arena=64M,nosuid,noatime,nodev
ok "... and in force" bash -c "grep ' $MNT ' /proc/mounts | grep -q 'nosuid,nodev,noatime'"
ok "unmount" stop_objfs

ok "--help prints usage and exits 0" bash -c "'$OBJFS_BIN' --help | grep -q 'usage: objfs'"
ok "--version" bash -c "'$OBJFS_BIN' --version | grep -q '^objfs [0-9]'"
ok "man page renders without warnings" bash -c "out=\$(groff -man -Tutf8 -ww -z '$(cd "$(dirname "$0")/../.." && pwd)/doc/objfs.1' 2>&1); [ -z \"\$out\" ]"

# Defaults: no options at all, data under $XDG_DATA_HOME.
export XDG_DATA_HOME=$T/xdg
"$OBJFS_BIN" -f "$MNT" >"$T/default.log" 2>&1 &
OBJFS_PID=$!
T_PIDS+=("$OBJFS_PID")
T_MOUNTS+=("$MNT")
for ((i = 0; i < 100; i++)); do mountpoint -q "$MNT" && break; sleep 0.1; done
ok "mounts with no options at all" mountpoint -q "$MNT"
ok "default data directory is \$XDG_DATA_HOME/objfs" test -d "$T/xdg/objfs/index"
ok "default data directory is private (0700)" \
	bash -c "[ \$(stat -c %a '$T/xdg/objfs') = 700 ]"
total_kb=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
shm_kb=$(df -k --output=size /dev/shm | tail -n 1)
want_kb=$((total_kb / 2))
[ "$shm_kb" -lt "$want_kb" ] && want_kb=$shm_kb
want_kb=$((want_kb / 1024 * 1024))	# whole 1 MiB chunks
size_kb=$(( $(awk '/^arena_capacity_bytes:/ {print $2}' "$MNT/.objfs-status") / 1024 ))
if [ "$want_kb" -le "$avail_kb" ]; then
	# (the capacity leaves out the arena's 4 KiB header block)
	ok "default arena is half of MemTotal, at most /dev/shm ($size_kb KiB)" \
		test "$size_kb" -le "$want_kb" -a "$size_kb" -ge $((want_kb - 4))
else	# a machine short of memory now: what is available
	ok "default arena is what is available ($size_kb of $want_kb KiB)" \
		test "$size_kb" -le "$avail_kb"
fi
ok "writes work with defaults" bash -c "echo hi > '$MNT/x' && [ \"\$(cat '$MNT/x')\" = hi ]"
ok "lock file names the daemon" bash -c "grep -qx $OBJFS_PID '$T/xdg/objfs/lock'"
ok "unmount" stop_objfs
t_done
