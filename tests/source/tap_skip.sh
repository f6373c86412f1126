#!/bin/bash
# SPDX-License-Identifier: MIT
# A check that cannot run here is reported as skipped, with its reason,
# never left out: skip() in tests/lib.sh prints TAP's SKIP directive,
# which automake's TAP driver counts as SKIP and scripts/test adds to the
# "K skipped" of its last line.  Its own output is TAP.
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/objfs-tap.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0
check() {	# check DESCRIPTION COMMAND...
	local d=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fi
}
# lib.sh's functions alone, without t_init (which wants /dev/fuse and an
# objfs binary): T and T_NUM as t_init leaves them.
bash -c ". '$here/../lib.sh'; T='$T'; T_NUM=0; T_FAILED=0
	ok 'a check that ran' true
	skip 'a check that cannot run here' 'no such tool here'
	t_done" >"$T/out" 2>&1
check "skip() prints ok N with the SKIP directive and its reason" \
	grep -qx 'ok 2 - a check that cannot run here # SKIP no such tool here' "$T/out"
check "the plan counts it" grep -qx '1\.\.2' "$T/out"
check "checks that ran stay as they were" grep -qx 'ok 1 - a check that ran' "$T/out"
# The driver's verdict, as make check computes it.
drv=$here/../../build-aux/tap-driver.sh
if [ -f "$drv" ]; then
	cat >"$T/t.sh" <<EOS
cat '$T/out'
EOS
	env AM_TAP_AWK=awk sh "$drv" --test-name t --log-file "$T/t.log" \
		--trs-file "$T/t.trs" --color-tests no -- sh "$T/t.sh" >"$T/drv.out" 2>&1
	check "automake's TAP driver counts it as SKIP" \
		grep -qx 'SKIP: t 2 - a check that cannot run here # SKIP no such tool here' "$T/drv.out"
	check "... and the other as PASS" grep -qx 'PASS: t 1 - a check that ran' "$T/drv.out"
fi
echo "1..$n"
