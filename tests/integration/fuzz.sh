#!/bin/bash
# SPDX-License-Identifier: MIT
# The reference-model fuzzer (tests/fuzz/fuzz.py) for a fixed time, with a
# fresh seed each run (printed: FUZZ_SEED=N reproduces it): with dedup on,
# and with dedup off, on a 16 MiB arena of 64 KiB chunks, so that chunks
# spill.  A failure is shrunk to a short sequence, saved beside the log
# and printed.  FUZZ_SECONDS sets the time of the dedup=on run (default
# 60; the dedup=off run takes half); a soak is the same with a larger
# number, or fuzz.py --seconds N directly.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
FUZZ=$(cd "$(dirname "$0")/../fuzz" && pwd)/fuzz.py
SECONDS_ON=${FUZZ_SECONDS:-60}
SEED=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
run() {	# run DEDUP SECONDS SEED: one TAP line, the summary or the failure
	local out=$T/fuzz.$1.out
	T_NUM=$((T_NUM + 1))
	if python3 "$FUZZ" --bin "$OBJFS_BIN" --dedup "$1" --seconds "$2" \
		--seed "$3" --shrink 120 --save "$T/failing.$1.json" \
		--tmp "$T" --keep-log >"$out" 2>&1; then
		echo "ok $T_NUM - fuzzer, dedup $1, $2 s from seed $3"
		grep '^clean' "$out" | sed 's/^/# /'
	else
		T_FAILED=$((T_FAILED + 1))
		echo "not ok $T_NUM - fuzzer, dedup $1, $2 s from seed $3"
		grep -v '^# seed' "$out" | tail -n 150 | sed 's/^/#   /'
	fi
}
echo "# seed $SEED (FUZZ_SEED=$SEED reproduces the sequences)"
run on "$SECONDS_ON" "$SEED"
run off "$((SECONDS_ON / 2))" "$((SEED + 1))"
t_done
