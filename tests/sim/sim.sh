#!/bin/bash
# SPDX-License-Identifier: MIT
# The simulator of the cluster protocol (tests/sim/, doc/design.md, "The
# simulator"), as make check runs it:
#   1. every plan in tests/sim/plans/ (each the shrunk seed of a defect the
#      simulator found, replayed: it must break no invariant now);
#   2. SIM_SEEDS seeds (250) of SIM_OPS actions (300) each, from SIM_SEED
#      (1), two processes at a time: every invariant after every action;
#   3. the same with the namespace in S3 (s3gw.c): SIM_S3_SEEDS (100) of
#      SIM_S3_OPS actions (250), where the simulator was built with S3.
# OBJFS_SIM_MINUTES=M runs seeds for M minutes instead (half of them each,
# from a seed drawn from the clock, printed): the knob for hours of it.  A failing seed is
# shrunk and its plan written to the build directory, to replay with
#   tests/sim/objfs-sim --replay sim-SEED.plan
here=$(cd "$(dirname "$0")" && pwd)
sim=${OBJFS_SIM:-$PWD/tests/sim/objfs-sim}
seeds=${SIM_SEEDS:-250}
ops=${SIM_OPS:-300}
s3_seeds=${SIM_S3_SEEDS:-100}
s3_ops=${SIM_S3_OPS:-250}
first=${SIM_SEED:-1}
jobs=2
t0=$SECONDS

if [ ! -x "$sim" ]; then
	echo "1..0 # SKIP the simulator is not built (no librados or libcurl)"
	exit 77
fi
n=0
fail=0
ok() {	# ok DESCRIPTION COMMAND...
	n=$((n + 1))
	local d=$1
	shift
	if "$@"; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d"
		fail=1
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for plan in "$here"/plans/*.plan; do
	name=$(basename "$plan" .plan)
	what=$(sed -n 's/^# found: //p' "$plan")
	ok "plan $name replays clean${what:+ ($what)}" \
		sh -c "'$sim' --replay '$plan' --quiet --tmp '$tmp' >'$tmp/$name.out' 2>&1"
	grep -q '^FAIL' "$tmp/$name.out" && sed 's/^/# /' "$tmp/$name.out"
done

# batch LABEL SEEDS OPS SETS: SEEDS seeds (or the minutes of the knob,
# half of them) of OPS actions each, with --set SETS, two processes at a
# time; one TAP line.
batch() {
	local label=$1 nseeds=$2 nops=$3 sets=$4 minutes= pids=() j args
	local total=0 failed=0 s f

	if [ -n "${OBJFS_SIM_MINUTES:-}" ]; then
		minutes=$(python3 -c "print($OBJFS_SIM_MINUTES / 2)")
		echo "# $label: seeds from $first, for $minutes minute(s), $jobs at a time"
	fi
	rm -f "$tmp"/run.*
	for j in $(seq 0 $((jobs - 1))); do
		if [ -n "$minutes" ]; then
			args=(--seed $((first + j * 100000000)) --minutes "$minutes")
		else
			per=$(( (nseeds + jobs - 1) / jobs ))
			args=(--seed $((first + j * per)) --seeds "$per")
		fi
		"$sim" "${args[@]}" --ops "$nops" ${sets:+--set "$sets"} \
			--keep-going --quiet --out "$PWD" --tmp "$tmp" \
			>"$tmp/run.$j" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	cat "$tmp"/run.* | grep -v '^# totals' | sed 's/^/# /'
	for f in "$tmp"/run.*; do
		s=$(sed -n 's/^\([0-9][0-9]*\) seeds, \([0-9][0-9]*\) failed.*/\1 \2/p' \
			"$f" | tail -n 1)
		if [ -z "$s" ]; then	# the run itself broke: no summary
			failed=$((failed + 1))
			continue
		fi
		total=$((total + ${s% *}))
		failed=$((failed + ${s#* }))
	done
	# The totals of both halves: what ran, which faults.
	python3 - "$tmp"/run.* <<'PY'
import re, sys
tot = {}
for f in sys.argv[1:]:
    for line in open(f):
        if line.startswith('# totals:'):
            for k, v in re.findall(r'(\w+)=([\d.]+)', line):
                tot[k] = tot.get(k, 0) + float(v)
print('# totals: ' + ' '.join('%s=%d' % (k, v) for k, v in tot.items()))
PY
	ok "$label: $total seeds of $nops actions, every invariant after every action: $failed broke one" \
		test "$failed" = 0 -a "$total" -gt 0
}

if [ -n "${OBJFS_SIM_MINUTES:-}" ]; then
	first=$(( $(date +%s) % 1000000000 ))
fi
batch "RADOS, shared and exclusive mounts" "$seeds" "$ops" ""
if "$sim" --has-s3; then
	batch "S3, exclusive mounts one at a time" "$s3_seeds" "$s3_ops" s3=1
fi
echo "# took $((SECONDS - t0))s"
echo "1..$n"
exit $fail
