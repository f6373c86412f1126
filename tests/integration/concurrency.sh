#!/bin/bash
# SPDX-License-Identifier: MIT
# Several writers and readers on different files at once, and parallel
# namespace changes in one directory.  A watchdog turns a hang into a
# failure.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount (1 GiB arena)" start_objfs "$MNT" "$DATA" arena=1G

for i in 1 2 3 4; do
	head -c $(((40 + i) << 20)) /dev/urandom >"$T/src$i"
done
cp "$T/src1" "$MNT/r1"
cp "$T/src2" "$MNT/r2"

run_all() {
	local pids=() p rc=0 i
	for i in 1 2 3 4; do
		dd if="$T/src$i" of="$MNT/w$i" bs=$((i * 64))k status=none & pids+=($!)
	done
	for i in 1 2; do
		for _ in 1 2 3; do cmp "$T/src$i" "$MNT/r$i" || exit 1; done & pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}
ok "4 writers and 2 readers at once finish in time" timeout 120 bash -c "$(declare -f run_all); T='$T' MNT='$MNT' run_all"
for i in 1 2 3 4; do
	ok "writer $i's file compares equal" cmp "$T/src$i" "$MNT/w$i"
done

mkdir "$MNT/par"
ok "4 parallel creators, 500 files each, in one directory" timeout 120 bash -c "
	for w in 1 2 3 4; do
		( for i in \$(seq 1 500); do echo \$w.\$i > '$MNT/par/'\$w-\$i || exit 1; done ) &
	done; wait"
ok "all 2000 entries are there" bash -c "[ \$(ls '$MNT/par' | wc -l) = 2000 ]"
ok "parallel renames and unlinks" timeout 120 bash -c "
	( for i in \$(seq 1 500); do mv '$MNT/par/1-'\$i '$MNT/par/moved-'\$i || exit 1; done ) &
	( for i in \$(seq 1 500); do rm '$MNT/par/2-'\$i || exit 1; done ) &
	( for i in \$(seq 1 500); do ln '$MNT/par/3-'\$i '$MNT/par/link-'\$i || exit 1; done ) &
	wait"
ok "directory has what it should" bash -c "
	[ \$(ls '$MNT/par' | wc -l) = 2000 ] && [ \$(ls '$MNT/par' | grep -c '^moved-') = 500 ] &&
	[ \$(stat -c %h '$MNT/par/3-7') = 2 ]"
ok "unmount" stop_objfs
t_done
