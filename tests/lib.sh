# SPDX-License-Identifier: MIT
# tests/lib.sh - helpers for the integration tests (sourced, bash).
#
# Each test works in its own mktemp -d directory, runs objfs in the
# foreground, and unmounts and removes everything in an EXIT trap, also
# when it fails.  Results are TAP ("ok N - what"), counted by automake's
# TAP driver; the daemon's log is printed when anything failed.

set -u
OBJFS_BIN=${OBJFS_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/objfs}
T_NUM=0
T_FAILED=0
T_PIDS=()
T_MOUNTS=()

t_cleanup() {
	local m p
	for m in "${T_MOUNTS[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for p in "${T_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${T_PIDS[@]}"; do
		wait_pid_gone "$p" 20 || kill -9 "$p" 2>/dev/null
	done
	if [ "$T_FAILED" != 0 ] && [ -n "${T:-}" ]; then
		for f in "$T"/*.log; do
			[ -f "$f" ] || continue
			echo "# ---- $f"
			sed 's/^/# /' "$f" | tail -n 60
		done
	fi
	# A daemon that was killed leaves its arena in /dev/shm for the
	# next mount (DATA/arena names it): remove those of this test.
	if [ -n "${T:-}" ]; then
		find "$T" -maxdepth 4 -name arena -type f 2>/dev/null |
		while read -r f; do head -n 1 "$f" 2>/dev/null; done >>"$T/arenas"
		sort -u "$T/arenas" | while read -r a; do
			case $a in
			*/objfs.??????/arena) rm -rf "${a%/arena}" ;;
			esac
		done
	fi
	# T_KEEP=1: the test's directory stays, to look into.
	if [ -n "${T:-}" ] && [ -z "${T_KEEP:-}" ]; then
		rm -rf "$T"
	fi
}

t_init() {
	if [ ! -c /dev/fuse ]; then
		echo "1..0 # SKIP /dev/fuse is missing"
		exit 0
	fi
	if [ ! -x "$OBJFS_BIN" ]; then
		echo "Bail out! objfs binary not found at $OBJFS_BIN"
		exit 1
	fi
	T=$(mktemp -d /tmp/objfs-test.XXXXXX)
	chmod 755 "$T"
	MNT=$T/mnt
	DATA=$T/data
	mkdir -p "$MNT"
	trap t_cleanup EXIT
	trap 'exit 130' INT TERM
}

# The plan ends the output.  The exit status stays 0 when every check ran,
# passed or not: each "not ok" is already a FAIL, and a non-zero status
# would make the TAP driver count the same failure again as an ERROR.  A
# script that dies before its plan still exits non-zero: that is an ERROR.
t_done() {
	echo "# took ${SECONDS}s"
	echo "1..$T_NUM"
	return 0
}

ok() {	# ok DESCRIPTION COMMAND...
	local d=$1
	shift
	T_NUM=$((T_NUM + 1))
	if "$@" >"$T/last.out" 2>&1; then
		echo "ok $T_NUM - $d"
	else
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - $d"
		sed 's/^/#   /' "$T/last.out" | tail -n 20
	fi
}

skip() {	# skip DESCRIPTION REASON: a check that cannot run here, counted
	# as skipped (TAP's SKIP directive), never silently left out
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM - $1 # SKIP $2"
}

# t_ceph_report: where a check failed, the cluster's state (each daemon
# running, stopped or gone, its status, its logs' ends), so that a
# failure of the cluster reads as one and not as objfs's
t_ceph_report() {
	[ "$T_FAILED" != 0 ] || return 0
	echo "# ---- the cluster at the end ($C)"
	bash "$CL" report "$C" 2>&1 | sed 's/^/# /'
}

# pool_takes_writes [SECONDS]: after t_ceph, the pool takes a write (a
# probe object put and removed by the rados tool) within SECONDS
# (default 120): a stopped or restarted OSD serving again, told apart
# from objfs's own recovery
pool_takes_writes() {
	local end=$((SECONDS + ${1:-120}))
	echo probe >"$T/pool-probe"
	while ! timeout 10 rados -c "$CONF" -p objfs put pool-probe.$$ "$T/pool-probe" 2>"$T/pool-probe.err"; do
		[ "$SECONDS" -lt "$end" ] || { cat "$T/pool-probe.err"; return 1; }
		sleep 1
	done
	timeout 10 rados -c "$CONF" -p objfs rm pool-probe.$$ 2>/dev/null
	return 0
}

# t_ceph WHAT [NEEDED-FILE]: a single-node Ceph cluster under $T/ceph for
# the rest of the test (CL, C and CONF set; stopped by pid at exit), or,
# where objfs was built without librados (or NEEDED-FILE is missing) or
# Ceph is not installed, WHAT counted as skipped and the test ends.
t_ceph() {
	local lib
	lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	CL=$lib/ceph/cluster.sh
	C=$T/ceph
	CONF=$C/ceph.conf
	if { [ -n "${2:-}" ] && [ ! -x "$2" ]; } ||
	   { [ -z "${2:-}" ] && ! "$OBJFS_BIN" --help 2>&1 | grep -q "remote=rados"; } ||
	   ! command -v ceph-osd >/dev/null || ! command -v rados >/dev/null; then
		skip "$1" "built without librados, or Ceph is not installed (scripts/setup installs both)"
		t_done
		exit 0
	fi
	trap 't_ceph_report; bash "$CL" stop "$C"; t_cleanup' EXIT
	ok "a single-node cluster" bash "$CL" start "$C" objfs
}

# t_rgw WHAT BUCKET: after t_ceph, Ceph's S3 gateway on that cluster
# (tests/ceph/cluster.sh rgw-start), its user's AWS_* exported, and
# BUCKET made; or WHAT counted as skipped and the test ends (objfs built
# without libcurl, or radosgw not installed).
t_rgw() {
	if ! "$OBJFS_BIN" --help 2>&1 | grep -q "remote=s3://" ||
	   ! command -v radosgw >/dev/null || ! command -v curl >/dev/null; then
		skip "$1" "built without libcurl, or radosgw is not installed (scripts/setup installs both)"
		t_done
		exit 0
	fi
	ok "Ceph's S3 gateway on it" bash "$CL" rgw-start "$C"
	set -a
	. "$C/rgw.env"
	set +a
	ok "bucket $2" s3_curl -X PUT "$AWS_ENDPOINT_URL/$2"
}

# gc_runs MNT LOG: a collection (grace 0) on shared mount MNT runs, once
# every live node answers (a node whose watch was lost answers once it
# watches again: retried while MNT's LOG says one did not answer); any
# other refusal fails, with what the mount said.
gc_runs() {
	local i
	for ((i = 0; i < 20; i++)); do
		setfattr -n user.objfs.gc -v 0 "$1/.objfs-status" 2>"$T/gc.err" && return 0
		grep -q "busy" "$T/gc.err" &&
		tail -n 1 "$2" | grep -q "did not answer" || break
		sleep 0.5
	done
	cat "$T/gc.err"; tail -n 3 "$2"
	return 1
}

# crash_mount DIR OPTS: objfs -o data=DIR/data,OPTS on DIR/mnt with the
# crash simulator's recorder preloaded (DIR/data's writes traced to
# DIR/trace), its log in $T/crashsim.mnt.log; CS_PID is its pid.  Fails
# unless it mounts within 30 s.
crash_mount() {
	local i rec
	rec=$(dirname "$OBJFS_BIN")/tests/crash/libcrashrec.so
	mkdir -p "$1/data" "$1/mnt"
	LD_PRELOAD=$rec CRASHREC_DIR=$1/data CRASHREC_TRACE=$1/trace \
		"$OBJFS_BIN" -f -o "data=$1/data,$2" "$1/mnt" >"$T/crashsim.mnt.log" 2>&1 &
	CS_PID=$!
	T_PIDS+=("$CS_PID")
	T_MOUNTS+=("$1/mnt")
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$1/mnt" && return 0
		sleep 0.1
	done
	mountpoint -q "$1/mnt"
}

# crash_verdicts OUT DAMAGED WHAT: sim.py's summaries as TAP lines: OUT
# (every image of WHAT) has at least 5 images and no failure; DAMAGED
# (one image without its chunks: the checker's own check) fails.
crash_verdicts() {
	local n f
	sed 's/^/# /' "$1"
	read -r n f < <(sed -n 's/^crash images: \([0-9]*\), failures: \([0-9]*\).*/\1 \2/p' "$1")
	ok "crash images of $3: ${n:-0}, failures: ${f:-?}" \
		test "${n:-0}" -ge 5 -a "${f:-1}" = 0
	read -r n f < <(sed -n 's/^crash images: \([0-9]*\), failures: \([0-9]*\).*/\1 \2/p' "$2")
	ok "an image whose chunks were removed fails the checks (${f:-0} of ${n:-0})" \
		test "${n:-0}" = 1 -a "${f:-0}" = 1
}

# s3_curl ARGS...: curl signed as the gateway's user (-f: fails on 4xx/5xx).
s3_curl() {
	curl -sf --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

# t_fuzz NAME SECONDS SEED FUZZ-OPTIONS...: the reference-model fuzzer
# (tests/fuzz/fuzz.py) for SECONDS from SEED, one TAP line: its summary,
# or the failure shrunk to a short sequence (saved in $T, printed).
t_fuzz() {
	local name=$1 secs=$2 seed=$3 out=$T/fuzz.${1// /_}.out lib
	shift 3
	lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	T_NUM=$((T_NUM + 1))
	if python3 "$lib/fuzz/fuzz.py" --bin "$OBJFS_BIN" --seconds "$secs" \
		--seed "$seed" --shrink 120 --save "$T/failing.${name// /_}.json" \
		--tmp "$T" --keep-log "$@" >"$out" 2>&1; then
		echo "ok $T_NUM - fuzzer, $name, $secs s from seed $seed"
		grep '^clean' "$out" | sed 's/^/# /'
	else
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - fuzzer, $name, $secs s from seed $seed ($*)"
		grep -v '^# seed' "$out" | tail -n 150 | sed 's/^/#   /'
	fi
}

fails() {	# fails DESCRIPTION COMMAND... : passes when COMMAND fails
	local d=$1
	shift
	T_NUM=$((T_NUM + 1))
	if "$@" >"$T/last.out" 2>&1; then
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - $d (command succeeded)"
	else
		echo "ok $T_NUM - $d"
	fi
}

t_sub() {	# t_sub NAME COMMAND...: COMMAND's TAP lines, renumbered into
		# ours ("NAME: " before each; NAME may be empty), its
		# comments passed on; a COMMAND that does not reach its plan
		# line is a failure, with the end of its output
	local name=$1 out=$T/sub.out line st d
	shift
	"$@" >"$out" 2>&1
	while read -r line; do
		case $line in
		"ok "*|"not ok "*)
			T_NUM=$((T_NUM + 1))
			st=${line%% [0-9]*}
			d=${line#* - }
			[ "$st" = ok ] || T_FAILED=$((T_FAILED + 1))
			echo "$st $T_NUM - ${name:+$name: }$d" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
	grep -q '^1\.\.' "$out" || {
		T_NUM=$((T_NUM + 1))
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - ${name:-$1} ran to its end"
		tail -n 30 "$out" | sed 's/^/#   /'
	}
}

wait_pid_gone() {	# wait_pid_gone PID SECONDS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# start_objfs [MOUNTPOINT [DATA [OPTIONS]]]: mount and wait until ready.
# Sets OBJFS_PID.  Default options: a 256 MiB arena.
start_objfs() {
	local mnt=${1:-$MNT} data=${2:-$DATA} opts=${3:-arena=256M} i
	local log=$T/objfs.$(basename "$mnt").log
	# OBJFS_SOURCE: the SOURCE argument (objfs SOURCE MOUNTPOINT).
	"$OBJFS_BIN" -f -o "data=$data,$opts" ${OBJFS_SOURCE:+"$OBJFS_SOURCE"} \
		"$mnt" >>"$log" 2>&1 &
	OBJFS_PID=$!
	T_PIDS+=("$OBJFS_PID")
	T_MOUNTS+=("$mnt")
	for ((i = 0; i < ${T_MOUNT_S:-10} * 10; i++)); do
		if mountpoint -q "$mnt"; then
			# Its arena, for t_cleanup (the data directory may be
			# gone by then).
			head -n 1 "$data/arena" >>"$T/arenas" 2>/dev/null
			return 0
		fi
		if ! kill -0 "$OBJFS_PID" 2>/dev/null; then
			echo "objfs exited before mounting:" >&2
			cat "$log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "objfs did not mount within ${T_MOUNT_S:-10} s" >&2
	return 1
}

# stop_objfs [MOUNTPOINT [PID]]: unmount and wait for the daemon to finish
# writing out and exit; fails if it exits non-zero.
stop_objfs() {
	local mnt=${1:-$MNT} pid=${2:-$OBJFS_PID} rc
	fusermount3 -u "$mnt" || return 1
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "objfs still running 60 s after unmount" >&2
		return 1
	fi
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || echo "objfs exited with status $rc" >&2
	return "$rc"
}

# errno_of PYTHON-EXPRESSION: prints the errno name an os call raises.
errno_of() {
	python3 - "$@" <<'PY'
import errno, os, sys
try:
    exec(sys.argv[1])
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
}

expect_errno() {	# expect_errno DESCRIPTION ERRNO PYTHON-STATEMENT
	local d=$1 want=$2 got
	got=$(errno_of "$3")
	T_NUM=$((T_NUM + 1))
	if [ "$got" = "$want" ]; then
		echo "ok $T_NUM - $d ($want)"
	else
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - $d: wanted $want, got $got"
	fi
}
