#!/bin/bash
# SPDX-License-Identifier: MIT
# The kill loop and the reference-model fuzzer with -o remote=, on a real
# single-node Ceph cluster (tests/ceph/cluster.sh):
#   - kill_loop.sh, the daemon SIGKILLed at random moments of its
#     uploads, remounted on the same data directory: every byte whose
#     write returned (the arena adopted) and every name change is there;
#   - kill_loop.sh with KILL_LOSE=1: at each kill the whole machine is
#     lost (data directory and arena deleted) and the next mount, from an
#     empty data directory, must have every fsynced byte;
#   - fuzz.py --remote, a namespace for each sequence.
# REMOTE_KILL_ROUNDS, REMOTE_LOSE_ROUNDS and REMOTE_FUZZ_SECONDS set the
# sizes (defaults 20, 8 and 60).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
HERE=$(cd "$(dirname "$0")" && pwd)
CL=$HERE/../ceph/cluster.sh
C=$T/ceph
if ! "$OBJFS_BIN" --help 2>&1 | grep -q "remote=rados" ||
   ! command -v ceph-osd >/dev/null; then
	skip "the kill loop and the fuzzer on a Ceph pool" "built without librados, or Ceph is not installed (scripts/setup installs both)"
	t_done
	exit 0
fi
trap 'bash "$CL" stop "$C"; t_cleanup' EXIT
ok "a single-node cluster" bash "$CL" start "$C" objfs
CONF=$C/ceph.conf
sub() {	# sub NAME COMMAND...: its TAP lines renumbered into ours
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
			echo "$st $T_NUM - $name: $d" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
	grep -q '^1\.\.' "$out" || {
		T_NUM=$((T_NUM + 1))
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - $name ran to its end"
		tail -n 30 "$out" | sed 's/^/#   /'
	}
}
sub "kill loop, remote=" env KILL_ROUNDS="${REMOTE_KILL_ROUNDS:-20}" \
	KILL_OPTS="arena=32M,chunk=64K,remote=rados:objfs/kill$$,remote_conf=$CONF" \
	bash "$HERE/kill_loop.sh"
sub "kill loop, the machine lost at each kill" env \
	KILL_ROUNDS="${REMOTE_LOSE_ROUNDS:-8}" KILL_MODE=fsync KILL_LOSE=1 \
	KILL_OPTS="arena=32M,chunk=64K,remote=rados:objfs/lose$$,remote_conf=$CONF,remote_hold=2" \
	bash "$HERE/kill_loop.sh"
SEED=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
T_NUM=$((T_NUM + 1))
if python3 "$HERE/../fuzz/fuzz.py" --bin "$OBJFS_BIN" \
	--seconds "${REMOTE_FUZZ_SECONDS:-60}" --seed "$SEED" --shrink 120 \
	--save "$T/failing.remote.json" --tmp "$T" --keep-log \
	--remote rados:objfs --remote-conf "$CONF" >"$T/fuzz.out" 2>&1; then
	echo "ok $T_NUM - fuzzer, remote=, from seed $SEED"
	grep '^clean' "$T/fuzz.out" | sed 's/^/# /'
else
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_NUM - fuzzer, remote=, from seed $SEED"
	grep -v '^# seed' "$T/fuzz.out" | tail -n 150 | sed 's/^/#   /'
fi
ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
