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
t_sub "" "$CHECK" "$C/ceph.conf" objfs
ok "the OSD stops" bash "$CL" osd-stop "$C"
t_sub "" "$CHECK" "$C/ceph.conf" objfs down
ok "the OSD starts again" bash "$CL" osd-start "$C"
ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
