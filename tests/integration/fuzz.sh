#!/bin/bash
# SPDX-License-Identifier: MIT
# The reference-model fuzzer (tests/fuzz/fuzz.py) for a fixed time, with a
# fresh seed each run (printed: FUZZ_SEED=N reproduces it): with dedup on,
# with dedup off, and with the data directory on a 12 MiB ext4 image that
# fills up; on a 16 MiB arena of 64 KiB chunks, so that chunks spill.  A
# failure is shrunk to a short sequence, saved beside the log and
# printed.  FUZZ_SECONDS sets the time of the dedup=on run (default 50;
# the other two take half each); a soak is the same with a larger
# number, or fuzz.py --seconds N directly.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
SECONDS_ON=${FUZZ_SECONDS:-50}
SEED=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "# seed $SEED (FUZZ_SEED=$SEED reproduces the sequences)"
t_fuzz "dedup on" "$SECONDS_ON" "$SEED" --dedup on
t_fuzz "dedup off" "$((SECONDS_ON / 2))" "$((SEED + 1))" --dedup off
if command -v mkfs.ext4 >/dev/null && [ -e /dev/loop-control ]; then
	t_fuzz "a 12 MiB disk that fills" "$((SECONDS_ON / 2))" "$((SEED + 2))" --disk 12M
else
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM # SKIP a disk that fills: needs mkfs.ext4 and loop devices"
fi
t_done
