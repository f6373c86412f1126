#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs with -o remote=s3://BUCKET/PREFIX on a real S3 server: Ceph's
# gateway (radosgw) on the single-node cluster the tests start
# (tests/ceph/cluster.sh rgw-start), reached at 127.0.0.1 with SigV4.
#   - bad settings are refused by name: a bucket's name, an endpoint, the
#     pool's options on S3, shared mode, wrong credentials, no bucket, a
#     bucket whose service ignores If-None-Match (versioned, on the
#     gateway);
#   - fsynced files survive the loss of the machine: the daemon
#     SIGKILLed, its data directory deleted, and the tree mounted from an
#     empty data directory shows them all, byte for byte;
#   - one mount per namespace, held by conditional writes: a second one
#     is refused naming the holder; a killed daemon's hold lapses on the
#     gateway's clock and another mount takes the namespace;
#   - the same bytes are stored once (one object per chunk content);
#   - the gateway stopped: fsync fails with ETIMEDOUT within
#     remote_timeout, never hangs; started again, the same fsync succeeds
#     and nothing acknowledged is lost; stopped for 60 s under a load
#     (appends fsynced one by one, a resident file read in a loop): the
#     same, and every record the load wrote is on the next machine;
#   - the collector removes chunks nothing names, and only those;
#   - the status file counts the requests by kind;
#   - crash images of the bucket (tests/crash/s3snap.py: the daemon
#     stopped at random instants under crash.sh's workload, the prefix
#     copied as the gateway then holds it), each mounted and checked
#     against the workload's log (tests/crash/sim.py remote), and an image
#     without its chunks failing those checks;
#   - the kill loop (the daemon killed, and it and the gateway stopped and
#     resumed, at random moments; the machine lost at each kill) and the
#     reference-model fuzzer, with the gateway frozen at random moments.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
t_ceph "objfs on an S3 bucket"
t_rgw "objfs on an S3 bucket" objfs-test
NS=t$$
# A mount from an empty data directory reads the log record by record
# (about 50 ms each from the gateway on a busy machine): up to a minute.
T_MOUNT_S=60
R="remote_insecure,remote=s3://objfs-test/$NS,remote_timeout=8,remote_hold=4"
OPTS="arena=128M,$R"
objects() {	# the namespace's object names
	# (the query's parameters sorted and encoded: SigV4's canonical form)
	s3_curl "$AWS_ENDPOINT_URL/objfs-test?list-type=2&max-keys=1000&prefix=$NS%2F" |
		python3 -c "
import re, sys
for k in re.findall(r'<Key>([^<]*)</Key>', sys.stdin.read()):
    print(k.split('/', 1)[1])" | sort
}
chunks() { objects | grep -c '^c\.'; }
figure() { sed -n "s/^$2: //p" "$1/.objfs-status"; }
says() { grep -q "$2" "$1" || { cat "$1"; return 1; }; }	# FILE PATTERN
mounted() { mountpoint -q "$MNT" || { echo "$MNT is not mounted"; return 1; }; }

# ---- settings ----
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://A_B" "$T/mnt" >"$T/o1" 2>&1
ok "a bucket name S3 refuses is refused (while parsing)" sh -c "grep -q \"bucket's name\" '$T/o1' || grep -q 'must be' '$T/o1'"
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://objfs-test,remote_endpoint=ftp://x" "$T/mnt" >"$T/o2" 2>&1
ok "an endpoint that is not http(s) is refused" says "$T/o2" "must be http://HOST"
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://objfs-test,remote_conf=$CONF" "$T/mnt" >"$T/o3" 2>&1
ok "the pool's remote_conf on S3 is refused" says "$T/o3" "are for a Ceph pool"
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://objfs-test,shared" "$T/mnt" >"$T/o4" 2>&1
# Issue 48: the gateway here is http://127.0.0.1; on 67f5056 any http://
# endpoint was taken silently.
"$OBJFS_BIN" -f -o "data=$T/bad,remote=s3://objfs-test/$NS" "$T/mnt" >"$T/o10" 2>&1
ok "an http:// endpoint without remote_insecure is refused, saying why" \
	says "$T/o10" "in clear.*remote_insecure"
"$OBJFS_BIN" -f -o "data=$T/bad,remote=rados:objfs,remote_insecure" "$T/mnt" >"$T/o11" 2>&1
ok "remote_insecure on a pool is refused" says "$T/o11" "are for an S3 bucket"
ok "shared mode on S3 is refused, saying why" says "$T/o4" "shared: not on S3"
AWS_SECRET_ACCESS_KEY=wrong "$OBJFS_BIN" -f -o "data=$T/bad,$R" "$T/mnt" >"$T/o5" 2>&1
ok "wrong credentials: refused, the service's reason named" says "$T/o5" "SignatureDoesNotMatch\|AccessDenied\|InvalidAccessKeyId"
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://no-such-bucket-$$,remote_timeout=8" "$T/mnt" >"$T/o6" 2>&1
ok "a bucket that does not exist is named" says "$T/o6" "NoSuchBucket"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$T/nohome \
	"$OBJFS_BIN" -f -o "data=$T/bad,$R" "$T/mnt" >"$T/o7" 2>&1
ok "no credentials anywhere: refused, saying where it looked" says "$T/o7" "no credentials"
# A versioned bucket on the gateway takes a second PUT with If-None-Match:
# * (measured: 200 where an unversioned one answers 412): no fencing, so
# the mount's probe refuses it.
s3_curl -X PUT "$AWS_ENDPOINT_URL/objfs-versioned" >/dev/null &&
s3_curl -X PUT --data-binary '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>' \
	"$AWS_ENDPOINT_URL/objfs-versioned?versioning=" >/dev/null
"$OBJFS_BIN" -f -o "data=$T/bad,remote_insecure,remote=s3://objfs-versioned/v,remote_timeout=8" "$T/mnt" >"$T/o9" 2>&1
ok "a versioned bucket (the gateway ignores If-None-Match there) is refused, saying why" \
	says "$T/o9" "does not refuse a second PUT with If-None-Match"
ok "nothing was mounted by those" sh -c "! mountpoint -q '$T/mnt'"
mkdir -p "$T/home/.aws"
printf '[other]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$T/home/.aws/credentials"
printf '[profile other]\nregion = us-east-1\ns3 =\n  addressing_style = path\n' >"$T/home/.aws/config"

# ---- write, fsync, lose the machine ----
ok "mount A on an empty namespace" start_objfs "$MNT" "$T/dA" "$OPTS"
PA=$OBJFS_PID
head -c 24M /dev/urandom >"$T/big"
head -c 300000 /dev/urandom >"$T/small"
put_fsync() { mounted && dd if="$1" of="$2" bs=1M conv=fsync status=none; }
ok "a file of 24 MiB written and fsynced" put_fsync "$T/big" "$MNT/big"
mounted && mkdir -p "$MNT/d/e" && cp "$T/small" "$MNT/d/e/small"
ok "a tree fsynced (file, then its directories)" python3 -c "
import os
for p in ('$MNT/d/e/small', '$MNT/d/e', '$MNT/d', '$MNT'):
    fd = os.open(p, os.O_RDONLY); os.fsync(fd); os.close(fd)"
ok "the status file counts the requests by kind" sh -c "[ \$(sed -n 's/^remote_s3_requests_put: //p' '$MNT/.objfs-status') -gt 10 ]"
ok "objfsctl metrics: the S3 requests by method, in Prometheus's format" sh -c "
	'$(dirname "$OBJFS_BIN")/objfsctl' metrics '$MNT' >'$T/prom' &&
	python3 '$(dirname "$0")/prom_check.py' '$T/prom' &&
	grep -q '^objfs_s3_requests_total{method=\"put\"} [1-9]' '$T/prom' &&
	grep -q '^objfs_s3_sent_bytes_total [1-9]' '$T/prom'"
"$OBJFS_BIN" -f -o "data=$T/dB,$OPTS" "$T/mnt" >"$T/o8" 2>&1
ok "a second mount of the namespace is refused, naming the holder" says "$T/o8" "mounted by another objfs"
kill -9 "$PA"
wait "$PA" 2>/dev/null
fusermount3 -uz "$MNT" 2>/dev/null
rm -rf "$T/dA"
sleep 6		# remote_hold=4 and a second: its hold lapses
ok "after the holder was killed, another machine mounts once its hold lapsed (the gateway's clock)" \
	start_objfs "$MNT" "$T/dB" "$OPTS"
PB=$OBJFS_PID
ok "the fsynced 24 MiB file reads back byte for byte" cmp "$T/big" "$MNT/big"
ok "and the fsynced tree" cmp "$T/small" "$MNT/d/e/small"

# ---- the same bytes once ----
n0=$(chunks)
ok "a copy of the file" sh -c "cp '$MNT/big' '$MNT/big2' && python3 -c \"import os; fd = os.open('$MNT/big2', os.O_RDONLY); os.fsync(fd)\""
n1=$(chunks)
ok "adds no chunk object (the same bytes are stored once: $n0 then $n1)" [ "$n0" -ge 24 -a "$n0" = "$n1" ]

# ---- the gateway stopped ----
bash "$CL" rgw-stop "$C"
t0=$(date +%s)
python3 - "$MNT" <<'PY' >"$T/outage" 2>&1
import errno, os, sys
fd = os.open(sys.argv[1] + '/during', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b'x' * 100000)
try:
    os.fsync(fd)
    print('fsync succeeded')
except OSError as e:
    print('fsync failed: %s' % errno.errorcode[e.errno])
os.close(fd)
PY
t1=$(date +%s)
ok "with the gateway stopped, fsync fails with ETIMEDOUT" grep -q "ETIMEDOUT" "$T/outage"
ok "within remote_timeout and a margin ($((t1 - t0)) s, remote_timeout 8)" [ $((t1 - t0)) -le 30 ]
ok "resident reads go on meanwhile" cmp "$T/small" "$MNT/d/e/small"
ok "the gateway started again" bash "$CL" rgw-start "$C"
ok "the same fsync succeeds now" python3 -c "
import os
fd = os.open('$MNT/during', os.O_RDONLY); os.fsync(fd); os.close(fd)"
ok "unmount B" stop_objfs "$MNT" "$PB"
# A third machine: the credentials in ~/.aws, a profile, path-style.
saved_key=$AWS_ACCESS_KEY_ID saved_secret=$AWS_SECRET_ACCESS_KEY saved_home=$HOME
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
export HOME=$T/home AWS_PROFILE=other
ok "a third machine with the AWS settings in ~/.aws (a profile, path-style)" \
	start_objfs "$MNT" "$T/dC" "$OPTS"
PC=$OBJFS_PID
export AWS_ACCESS_KEY_ID=$saved_key AWS_SECRET_ACCESS_KEY=$saved_secret AWS_REGION=us-east-1 HOME=$saved_home
unset AWS_PROFILE
ok "has every file: the big one" cmp "$T/big" "$MNT/big"
ok "the copy" cmp "$T/big" "$MNT/big2"
ok "the file fsynced after the outage" sh -c "[ \$(stat -c %s '$MNT/during') = 100000 ]"

# ---- the gateway stopped for 60 s under a load ----
python3 "$(dirname "$0")/remote_load.py" "$MNT" "$T/load.out" 80 &
LOAD=$!
sleep 5
ok "under a load, the gateway stops" bash "$CL" rgw-stop "$C"
sleep 60
ok "... and starts again 60 s later" bash "$CL" rgw-start "$C"
wait "$LOAD"
echo "# load: $(tail -n 1 "$T/load.out"); fsyncs: $(grep -c '^ok' "$T/load.out") acknowledged, $(grep -c '^err' "$T/load.out") failed"
ok "fsyncs failed while it was down, with ETIMEDOUT alone" sh -c "grep -q '^err ETIMEDOUT' '$T/load.out' && ! grep '^err' '$T/load.out' | grep -qv ETIMEDOUT"
worst=$(sed -n 's/.* maxfsync \([0-9.]*\)$/\1/p' "$T/load.out")
ok "... none waited much past remote_timeout (8 s; the longest ${worst}s)" python3 -c "import sys; sys.exit(0 if $worst <= 20 else 1)"
ok "... and they succeed again once it is back" sh -c "tail -n 2 '$T/load.out' | head -n 1 | grep -q '^ok'"
ok "... the resident file read all along" sh -c "tail -n 1 '$T/load.out' | grep -q 'readfail 0' && ! tail -n 1 '$T/load.out' | grep -q ' reads 0 '"
LOADN=$(sed -n 's/^records \([0-9]*\) .*/\1/p' "$T/load.out")

# ---- the collector ----
rm "$MNT/big" "$MNT/big2"
python3 -c "import os; fd = os.open('$MNT', os.O_RDONLY); os.fsync(fd)"
n2=$(chunks)
ok "a collection with no grace" "$(dirname "$OBJFS_BIN")/objfsctl" gc "$MNT" 0
n3=$(chunks)
ok "removes the deleted files' chunks ($n2 then $n3)" [ "$n3" -lt "$n2" ]
ok "and no chunk a file names" sh -c "cmp '$T/small' '$MNT/d/e/small' && [ \$(stat -c %s '$MNT/during') = 100000 ]"
ok "unmount" stop_objfs "$MNT" "$PC"
ok "a fourth machine" start_objfs "$MNT" "$T/dD" "$OPTS"
load_whole() {	# every record the load wrote, in order, nothing else
	python3 - "$MNT/load.log" "$LOADN" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
want = b"".join((b"%08d" % i) * (65536 // 8) for i in range(n))
got = open(path, "rb").read()
sys.exit(0 if got == want else 1)
PY
}
ok "... has every record of the load ($LOADN), none lost" load_whole
ok "... and the tree" cmp "$T/small" "$MNT/d/e/small"
ok "unmount it" stop_objfs "$MNT" "$OBJFS_PID"

# ---- the crash simulator on S3 ----
# The workload of crash.sh on a mount of its own prefix, the data
# directory's writes recorded (crashrec.so), while s3snap.py makes crash
# images of the prefix about twice a second: the daemon stopped at a
# random instant, the prefix copied as the gateway then holds it (an S3
# service has no snapshots; the gateway's pools cannot be snapshotted at
# one instant), the daemon resumed.  The daemon is killed at the end (the
# last image is taken after).  sim.py mounts each image, every other one
# with the data directory as the crash left the disk (from the trace),
# the others from an empty one, checks it against the workload's log,
# collects its garbage and runs objfsctl check --remote on it.
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(dirname "$OBJFS_BIN")
SNAP=$HERE/../crash/s3snap.py
if [ -f "$B/tests/crash/libcrashrec.so" ]; then
	CS=$T/crashsim
	mkdir -p "$CS/snapdir"
	ok "mount a prefix with the recorder" crash_mount "$CS" \
		"arena=16M,chunk=64K,spill_high=20,spill_low=10,remote_insecure,remote=s3://objfs-test/cs$$,remote_hold=3"
	python3 "$SNAP" snaps objfs-test "cs$$/" "$CS_PID" 500 "$CS/stop" \
		"$CS/snapdir" >"$CS/snaps" 2>"$T/s3snap.log" &
	SNAP_PID=$!
	T_PIDS+=("$SNAP_PID")
	CSEED=${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
	echo "# seed $CSEED (CRASH_SEED=$CSEED reproduces the workload)"
	ok "run the workload (${S3_CRASH_STEPS:-600} operations) while images of the prefix are made" \
		python3 "$HERE/../crash/workload.py" "$CS/mnt" "$CS/wlog" \
		"${S3_CRASH_STEPS:-600}" "$CSEED"
	kill -KILL "$CS_PID"
	wait "$CS_PID" 2>/dev/null
	touch "$CS/stop"
	wait "$SNAP_PID"
	fusermount3 -u "$CS/mnt" 2>/dev/null || umount -l "$CS/mnt"
	ok "$(wc -l <"$CS/snaps") images of the prefix" sh -c "[ \$(wc -l <'$CS/snaps') -ge 5 ] || cat '$T/s3snap.log'"
	s3sim() {
		python3 "$HERE/../crash/sim.py" remote --trace "$CS/trace" \
			--log "$CS/wlog" --snaps "$CS/snaps" --seed "$CSEED" \
			--s3snap "$SNAP" --bucket objfs-test --snapdir "$CS/snapdir" \
			--ns "cs$$" --objfs "$OBJFS_BIN" --objfsctl "$B/objfsctl" \
			--images "${S3_CRASH_IMAGES:-6}" --tmp "$T" "$@"
	}
	s3sim >"$T/sim.out" 2>&1
	# The checker's own check: the last image without its chunks fails.
	s3sim --images 1 --damage >"$T/sim-damage.out" 2>&1
	crash_verdicts "$T/sim.out" "$T/sim-damage.out" "the bucket"
	python3 "$SNAP" wipe objfs-test snapstore/
else
	skip "the crash simulator on S3" "crashrec.so not built (make check builds it)"
fi

# ---- the kill loop and the fuzzer on S3 ----
# As remote_stress.sh runs them on the pool: the daemon SIGKILLed at
# random moments of its uploads, and the daemon and the gateway stopped
# and resumed (past remote_hold and remote_timeout) in most rounds.
t_sub "kill loop, remote=s3://, with pauses" env KILL_ROUNDS="${S3_KILL_ROUNDS:-8}" \
	KILL_PAUSE=1 KILL_OSD_PID="$C/run/client.rgw.a.pid" \
	KILL_OPTS="arena=32M,chunk=64K,remote_insecure,remote=s3://objfs-test/kill$$,remote_hold=3,remote_timeout=6" \
	bash "$HERE/kill_loop.sh"
t_sub "kill loop on S3, the machine lost at each kill" env \
	KILL_ROUNDS="${S3_LOSE_ROUNDS:-4}" KILL_MODE=fsync KILL_LOSE=1 \
	KILL_OPTS="arena=32M,chunk=64K,remote_insecure,remote=s3://objfs-test/lose$$,remote_hold=2" \
	bash "$HERE/kill_loop.sh"
t_fuzz "remote on S3" "${S3_FUZZ_SECONDS:-30}" "${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}" \
	--remote s3://objfs-test --osd-pid "$C/run/client.rgw.a.pid"
t_done
