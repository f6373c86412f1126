#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs's client of a Ceph pool (src/remote.c) against a real single-node
# cluster (tests/ceph/cluster.sh): its calls, its clear errors, namespaces,
# the hold that lets one mount at a time own a namespace, and, with the
# OSD stopped, failures with ETIMEDOUT once the timeout passes, never a
# hang (tests/ceph/remote_check.c).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CL=$(cd "$(dirname "$0")/../ceph" && pwd)/cluster.sh
CHECK=$(dirname "$OBJFS_BIN")/tests/ceph/remote_check
C=$T/ceph
if [ ! -x "$CHECK" ] || ! command -v ceph-osd >/dev/null; then
	skip "the client of a Ceph pool" "built without librados, or Ceph is not installed (scripts/setup installs both)"
	t_done
	exit 0
fi
trap 'bash "$CL" stop "$C"; t_cleanup' EXIT
ok "a single-node cluster" bash "$CL" start "$C" objfs
# Its checks, numbered after this script's own.
run() {	# run ARGS...: remote_check's TAP lines, renumbered into ours
	"$CHECK" "$@" >"$T/rc.out" 2>"$T/rc.err"
	while read -r line; do
		case $line in
		"ok "*|"not ok "*)
			T_NUM=$((T_NUM + 1))
			st=${line%% [0-9]*}
			d=${line#* - }
			[ "$st" = ok ] || T_FAILED=$((T_FAILED + 1))
			echo "$st $T_NUM - $d" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$T/rc.out"
	grep -q '^1\.\.' "$T/rc.out" || { T_NUM=$((T_NUM + 1)); echo "not ok $T_NUM - remote_check ran to its end"; sed 's/^/#   /' "$T/rc.err" | tail -n 20; }
}
run "$C/ceph.conf" objfs
ok "the OSD stops" bash "$CL" osd-stop "$C"
run "$C/ceph.conf" objfs down
ok "the OSD starts again" bash "$CL" osd-start "$C"
ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
