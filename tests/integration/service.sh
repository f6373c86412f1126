#!/bin/bash
# SPDX-License-Identifier: MIT
# Running objfs as a service: objfsctl sync writes everything out and makes
# it durable; objfsctl umount syncs, unmounts, waits for the daemon and
# says whether it wrote everything; a mount while the previous daemon still
# writes out is refused, saying so; the status file names the daemon.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
status_of() { awk -v k="$1:" '$1 == k {print $2}' "$MNT/.objfs-status"; }
# run CMD...: what it printed in $out, its exit status in $rc.
run() { out=$("$@" 2>&1); rc=$?; }
# said PATTERN: $out matches it.
said() { printf '%s\n' "$out" | grep -q -- "$1"; }

head -c $((64 << 20)) /dev/urandom >"$T/src"
ok "mount with a 512 MiB arena" start_objfs "$MNT" "$DATA" arena=512M
for f in a b c; do cp "$T/src" "$MNT/$f"; done
ok "the status file names the daemon and the data directory" bash -c "
	[ \"\$(awk '\$1 == \"pid:\" {print \$2}' '$MNT/.objfs-status')\" = $OBJFS_PID ] &&
	[ \"\$(awk '\$1 == \"data:\" {print \$2}' '$MNT/.objfs-status')\" = '$DATA' ]"
dirty=$(status_of dirty_bytes)
ok "dirty_bytes counts the 192 MiB not yet on disk ($dirty)" \
	test "$dirty" -ge $((192 << 20))
run "$CTL" sync "$MNT"
ok "objfsctl sync succeeds ($rc)" test "$rc" = 0
ok "... and says everything is durable, last" bash -c \
	'printf "%s\n" "$1" | tail -n 1 | grep -q "everything is on disk and durable"' _ "$out"
ok "... with nothing left in the arena to write (dirty_bytes 0)" \
	test "$(status_of dirty_bytes)" = 0
# What sync wrote survives the daemon's death; what came after may not.
cp "$T/src" "$MNT/after"
kill -9 "$OBJFS_PID"
wait "$OBJFS_PID" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null
ok "remount after SIGKILL" start_objfs "$MNT" "$DATA" arena=512M
ok "the files synced before the kill are intact" bash -c "
	cmp '$T/src' '$MNT/a' && cmp '$T/src' '$MNT/b' && cmp '$T/src' '$MNT/c'"

# objfsctl umount: sync, unmount, wait, report.
cp "$T/src" "$MNT/d"
run "$CTL" umount "$MNT"
ok "objfsctl umount succeeds ($rc)" test "$rc" = 0
ok "... saying all data was written" said "unmounted .*: all data written to $DATA"
ok "... with the mount gone" bash -c "! mountpoint -q '$MNT'"
ok "... and the daemon gone when it returns" bash -c "! kill -0 $OBJFS_PID 2>/dev/null"
wait "$OBJFS_PID" 2>/dev/null
ok "the lock file records the clean end" bash -c "sed -n 2p '$DATA/lock' | grep -qx 'unmounted: exit 0: all data written'"
ok "remount" start_objfs "$MNT" "$DATA" arena=512M
ok "every file is intact" bash -c "cmp '$T/src' '$MNT/a' && cmp '$T/src' '$MNT/d'"

# A busy mount: umount fails, says so, and leaves the mount serving.
(cd "$MNT" && exec sleep 60) &
busy=$!
T_PIDS+=("$busy")
for ((i = 0; i < 50; i++)); do [ "$(readlink /proc/$busy/cwd)" = "$MNT" ] && break; sleep 0.1; done
run "$CTL" umount "$MNT"
ok "objfsctl umount of a busy mount fails ($rc)" test "$rc" = 1
ok "... saying it is still mounted" said 'still mounted'
ok "... and the mount still serves" cmp "$T/src" "$MNT/a"
kill "$busy"
wait "$busy" 2>/dev/null

# A mount refused while the daemon before it still writes out.
for f in e f g h i j k l m n o p q r s t; do cp "$T/src" "$MNT/$f"; done
ok "unmount with 1 GiB to write out" fusermount3 -u "$MNT"
seen=
for ((i = 0; i < 2000; i++)); do
	state=$(sed -n 2p "$DATA/lock")
	case $state in
	unmounting*) kill -STOP "$OBJFS_PID"; seen=$state; break ;;
	unmounted*) break ;;
	esac
	sleep 0.005
done
ok "the lock file says it is writing out ($seen)" test -n "$seen"
mkdir -p "$T/mnt2"
run "$OBJFS_BIN" -f -o "data=$DATA,arena=512M" "$T/mnt2"
ok "a new mount meanwhile is refused ($rc)" test "$rc" = 2
ok "... saying the previous daemon still writes out, and how much" said \
	"still writing it out (unmounting: [0-9.]* [KMGT]*i*B of [0-9.]* [KMGT]*i*B left to write out).*(pid $OBJFS_PID)"
kill -CONT "$OBJFS_PID"
ok "the daemon then finishes" bash -c "for i in \$(seq 600); do kill -0 $OBJFS_PID 2>/dev/null || exit 0; sleep 0.1; done; exit 1"
wait "$OBJFS_PID" 2>/dev/null
ok "remount" start_objfs "$MNT" "$DATA" arena=512M
ok "what it wrote out at unmount is intact" bash -c "cmp '$T/src' '$MNT/e' && cmp '$T/src' '$MNT/t'"

# The daemon dies while objfsctl umount syncs: it says so, not "still
# mounted".  Stopped once objfsctl's sync thread is there (the fsync
# waits on the daemon), then killed.
for f in e f g h i j k l; do cat "$T/src" >>"$MNT/$f"; done
"$CTL" umount "$MNT" >"$T/ctl.out" 2>&1 &
ctl=$!
for ((i = 0; i < 1000; i++)); do
	[ "$(ls "/proc/$ctl/task" 2>/dev/null | wc -l)" -ge 2 ] && break
	sleep 0.01
done
kill -STOP "$OBJFS_PID"
kill -KILL "$OBJFS_PID"
wait "$OBJFS_PID" 2>/dev/null
wait "$ctl"
rc=$?
ok "objfsctl umount of a daemon that dies during the sync fails ($rc)" test "$rc" = 1
ok "... saying the daemon died" grep -q "objfs (pid $OBJFS_PID) died during the sync" "$T/ctl.out"
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
ok "remount" start_objfs "$MNT" "$DATA" arena=512M
ok "it adopted what the dead one had not written out" bash -c "
	cat '$T/src' '$T/src' >'$T/src2' && cmp '$T/src2' '$MNT/e' && cmp '$T/src2' '$MNT/l'"
ok "unmount" stop_objfs

# Logs: a detached daemon logs to syslog where a syslog daemon listens,
# else to DATA/objfs.log, and says where; -o log=FILE picks a file.
if python3 -c "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).connect('/dev/log')" 2>/dev/null; then
	want_log=syslog
else
	want_log=$DATA/objfs.log
fi
run "$OBJFS_BIN" -o "data=$DATA,arena=64M" "$MNT"
T_MOUNTS+=("$MNT")
ok "a detached daemon mounts ($rc)" test "$rc" = 0
ok "the status file says where it logs ($want_log)" bash -c "
	grep -qx 'log: $want_log' '$MNT/.objfs-status'"
if [ "$want_log" != syslog ]; then
	ok "... and the mount said so" said "logging to $want_log (no syslog daemon listens on /dev/log)"
	ok "objfsctl log shows its lines" bash -c "'$CTL' log '$MNT' | grep -q 'info: mounted $MNT'"
else
	skip "... and the mount said it logs to a file" "a syslog daemon listens here"
	skip "objfsctl log shows its lines" "a syslog daemon listens here"
fi
ok "objfsctl umount of the detached daemon" "$CTL" umount "$MNT"
if [ "$want_log" != syslog ]; then
	ok "its last line says all data was written" bash -c "tail -n 1 '$want_log' | grep -q 'unmounted $MNT; all data written'"
else
	skip "its log's last line says all data was written" "a syslog daemon listens here"
fi
out=$("$OBJFS_BIN" -o "data=$DATA,arena=64M,log=$T/mine.log" "$MNT" 2>&1)
ok "-o log=FILE: the daemon logs there" bash -c "
	grep -qx 'log: $T/mine.log' '$MNT/.objfs-status' && grep -q 'info: mounted $MNT' '$T/mine.log'"
ok "objfsctl umount" "$CTL" umount "$MNT"
# Issue 48: relative paths are taken from where objfs was started, not from
# / where the detached daemon goes (on 67f5056 its status named log: rel.log,
# and a root daemon's later work by those paths happened under /).
here=$(dirname "$MNT")
out=$(cd "$here" && "$OBJFS_BIN" -o "data=rel-data,arena=64M,log=rel.log" \
	"$(basename "$MNT")" 2>&1)
T_MOUNTS+=("$MNT")
ok "relative data=, log= and mountpoint: mounted" mountpoint -q "$MNT"
ok "the status file names the log by its absolute path" \
	grep -qx "log: $here/rel.log" "$MNT/.objfs-status"
ok "objfsctl umount" "$CTL" umount "$MNT"
ok "the data directory is where objfs was started" test -d "$here/rel-data/index"
ok "and the daemon logged its unmount there" grep -q "unmounted" "$here/rel.log"
# Issue 48: a path with a terminal escape in it is shown by objfsctl
# with the escape made harmless (on 67f5056 printed as it was).
esc=$(printf 'e\033[31mx')
out=$("$OBJFS_BIN" -o "data=$DATA,arena=64M,log=$T/$esc.log" "$MNT" 2>&1)
T_MOUNTS+=("$MNT")
ok "mounted with a log path holding an escape" mountpoint -q "$MNT"
ok "objfsctl status prints no escape" bash -c "'$CTL' status '$MNT' | grep -q '^log' && ! '$CTL' status '$MNT' | grep -q \$'\\033'"
ok "objfsctl log neither" bash -c "'$CTL' log '$MNT' | grep -q '==>' && ! '$CTL' log '$MNT' | grep -q \$'\\033'"
ok "objfsctl umount" "$CTL" umount "$MNT"

# Metrics: objfsctl metrics and -o metrics_file= in the Prometheus text
# format, with request latency histograms.
PROM="python3 $(dirname "$0")/prom_check.py"
ok "mount with -o metrics_file=" start_objfs "$MNT" "$DATA" "arena=64M,metrics_file=$T/objfs.prom"
ok "the metrics file is there at mount" test -s "$T/objfs.prom"
ok "write 16 MiB in 1 MiB writes, fsync" dd if=/dev/zero of="$MNT/m" bs=1M count=16 conv=fsync status=none
ok "objfsctl metrics parses as Prometheus text, 16 writes counted" bash -c "
	'$CTL' metrics '$MNT' > '$T/m.txt' && $PROM '$T/m.txt' 16"
ok "... with the figures of the status file" bash -c "
	grep -qx 'objfs_arena_capacity_bytes $(status_of arena_capacity_bytes)' '$T/m.txt' &&
	grep -q '^objfs_written_out_bytes_total ' '$T/m.txt' &&
	grep -q '^objfs_request_duration_seconds_count{op=\"fsync\"} [1-9]' '$T/m.txt'"
ok "unmount" stop_objfs
ok "the metrics file holds the figures at unmount" $PROM "$T/objfs.prom" 16
# Issue 48: FILE.tmp planted as a link to another file (the exporter's
# directory is often writable by others): on 67f5056 the target was
# truncated and overwritten with the metrics.
echo precious >"$T/victim"
ln -s "$T/victim" "$T/objfs.prom.tmp"
ok "mount with a link planted at the metrics file's temporary name" \
	start_objfs "$MNT" "$DATA" "arena=64M,metrics_file=$T/objfs.prom"
ok "unmount" stop_objfs
ok "the link's target is untouched" bash -c "[ \"\$(cat '$T/victim')\" = precious ]"
ok "and the metrics file is written" $PROM "$T/objfs.prom" 0
run "$OBJFS_BIN" -f -o "data=$DATA,arena=64M,metrics_file=$T/no/such/dir/x.prom" "$MNT"
ok "a metrics file that cannot be written is refused at mount" said \
	"metrics_file=$T/no/such/dir/x.prom: cannot write it: No such file or directory"
ok "... and nothing is mounted" bash -c "! mountpoint -q '$MNT'"

# A daemon killed: objfsctl umount cannot sync it, and says so.
ok "mount" start_objfs "$MNT" "$DATA" arena=64M
kill -9 "$OBJFS_PID"
wait "$OBJFS_PID" 2>/dev/null
run "$CTL" umount "$MNT"
ok "objfsctl umount of a killed daemon's mount fails ($rc)" test "$rc" = 1
ok "... naming the mount it cannot reach" said "is $MNT an objfs mount?"
fusermount3 -u "$MNT" 2>/dev/null

# A daemon that dies of a fault says where, in its log (-o log=FILE):
# the signal and the faulting thread's stack, then it dies of the signal
# as it would have (exit status, core).  A sanitizer's build keeps the
# sanitizer's own report.
if ldd "$OBJFS_BIN" 2>/dev/null | grep -q 'lib[at]san'; then
	skip "a daemon killed by SIGSEGV logs the stack" "a sanitizer's build"
else
	ok "mount, logging to a file" start_objfs "$MNT" "$DATA" "arena=64M,log=$T/fault.log"
	kill -SEGV "$OBJFS_PID"
	wait "$OBJFS_PID" 2>/dev/null
	rc=$?
	ok "a daemon killed by SIGSEGV dies of it ($rc)" test "$rc" = 139
	ok "... its log says so, with the stack" bash -c "
		grep -q 'error: fatal signal 11 (SIGSEGV); the stack, innermost first' '$T/fault.log' &&
		grep -Eq 'objfs\(\+0x[0-9a-f]+\)' '$T/fault.log'"
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	ok "the next mount of its data directory takes it over" start_objfs "$MNT" "$DATA" arena=64M
	ok "unmount" stop_objfs
fi

# The systemd unit that make install puts in place: it verifies, and its
# ExecStart and ExecStop, run as systemd would run them, mount and unmount.
UNIT=$(dirname "$OBJFS_BIN")/objfs@.service
ok "make built the systemd unit objfs@.service" test -s "$UNIT"
inst=$(systemd-escape --path "$MNT" 2>/dev/null || echo x)
mkdir -p "$T/units"
sed "s|$(sed -n 's|^ExecStop=\(.*\)/objfsctl .*|\1|p' "$UNIT")|$(dirname "$OBJFS_BIN")|g" \
	"$UNIT" >"$T/units/objfs@$inst.service"
if command -v systemd-analyze >/dev/null; then
	ok "systemd-analyze verify accepts it" systemd-analyze verify --man=no "$T/units/objfs@$inst.service"
else
	skip "systemd-analyze verify accepts it" "systemd-analyze is not installed (package systemd)"
fi
# %i the instance, %f its path; /var/lib/objfs/%i -> a directory here.
cmd() {
	sed -n "s|^$1=||p" "$T/units/objfs@$inst.service" |
		sed -e "s|/var/lib/objfs/%i|$T/unitdata|g" -e "s|%f|$MNT|g" \
			-e "s|%i|$inst|g" -e 's|\${OBJFS_OPTIONS}|arena=64M|g'
}
start_cmd=$(cmd ExecStart)
stop_cmd=$(cmd ExecStop)
ok "ExecStart names the daemon, the data directory and the mount point" bash -c "
	printf '%s' '$start_cmd' | grep -q -- '/objfs -f -o data=$T/unitdata,arena=64M $MNT\$'"
mkdir -p "$T/unitdata"
$start_cmd >"$T/unit.log" 2>&1 &
unit_pid=$!
T_PIDS+=("$unit_pid")
T_MOUNTS+=("$MNT")
for ((i = 0; i < 100; i++)); do mountpoint -q "$MNT" && break; sleep 0.1; done
ok "... which mounts" mountpoint -q "$MNT"
echo unit >"$MNT/u"
ok "ExecStop ($stop_cmd) unmounts, all written, the daemon gone" bash -c "
	$stop_cmd && ! mountpoint -q '$MNT' && ! kill -0 $unit_pid 2>/dev/null"
wait "$unit_pid"
ok "... and the daemon exited 0 ($?)" test "$?" = 0
ok "the unit restarts a daemon that failed" bash -c "
	grep -qx 'Restart=on-failure' '$T/units/objfs@$inst.service'"
# As systemd restarts it: the daemon killed, ExecStartPre (which takes the
# dead mount down), ExecStart; the new daemon adopts the arena.
$start_cmd >>"$T/unit.log" 2>&1 &
unit_pid=$!
T_PIDS+=("$unit_pid")
for ((i = 0; i < 100; i++)); do mountpoint -q "$MNT" && break; sleep 0.1; done
echo "written, not synced" >"$MNT/v"
kill -9 "$unit_pid"
wait "$unit_pid" 2>/dev/null
while read -r pre; do
	${pre#-} >>"$T/unit.log" 2>&1 || [ "${pre:0:1}" = - ]
done < <(cmd ExecStartPre)
$start_cmd >>"$T/unit.log" 2>&1 &
unit_pid=$!
T_PIDS+=("$unit_pid")
for ((i = 0; i < 100; i++)); do mountpoint -q "$MNT" && break; sleep 0.1; done
ok "after a kill, ExecStartPre and ExecStart mount again" mountpoint -q "$MNT"
ok "... and the file written before the kill is there" \
	test "$(cat "$MNT/v" 2>/dev/null)" = "written, not synced"
ok "ExecStop unmounts" bash -c "$stop_cmd && ! mountpoint -q '$MNT'"
wait "$unit_pid"

# sync on a full backing filesystem: an error, and nothing lost.
mkdir -p "$T/small/backing" "$T/mnt3"
chmod 700 "$T/small" "$T/small/backing"
mount -t tmpfs -o size=96m,mode=0700 objfs-test-backing "$T/small/backing"
T_MOUNTS+=("$T/small/backing")
ok "mount over a 96 MiB backing filesystem" start_objfs "$T/mnt3" "$T/small" arena=512M
# Two different 64 MiB files (equal ones would be stored once: dedup).
head -c $((64 << 20)) /dev/urandom >"$T/src2"
cp "$T/src" "$T/mnt3/a"
cp "$T/src2" "$T/mnt3/b"
run "$CTL" sync "$T/mnt3"
ok "objfsctl sync fails when the disk is full ($rc)" test "$rc" = 1
ok "... saying why" said 'No space left on device'
ok "... and both files still read back" bash -c "cmp '$T/src' '$T/mnt3/a' && cmp '$T/src2' '$T/mnt3/b'"
ok "deleting one, sync succeeds" bash -c "rm '$T/mnt3/b' && '$CTL' sync '$T/mnt3'"
ok "unmount" stop_objfs "$T/mnt3"
umount "$T/small/backing"
t_done
