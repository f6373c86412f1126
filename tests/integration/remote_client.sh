#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs's client of a Ceph pool (src/rados/remote.c) against a real single-node
# cluster (tests/ceph/cluster.sh): its calls, its clear errors, namespaces,
# the hold that lets one mount at a time own a namespace, and, with the
# OSD stopped, failures with ETIMEDOUT once the timeout passes, never a
# hang (tests/ceph/remote_check.c).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CHECK=$(dirname "$OBJFS_BIN")/tests/ceph/remote_check
t_ceph "the client of a Ceph pool" "$CHECK"
t_sub "" "$CHECK" "$C/ceph.conf" objfs
ok "the OSD stops" bash "$CL" osd-stop "$C"
t_sub "" "$CHECK" "$C/ceph.conf" objfs down
ok "the OSD starts again" bash "$CL" osd-start "$C"
ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
