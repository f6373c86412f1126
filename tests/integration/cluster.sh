#!/bin/bash
# SPDX-License-Identifier: MIT
# The single-node Ceph cluster the remote tier's tests run against
# (tests/ceph/cluster.sh): it comes up bound to 127.0.0.1 and takes
# writes, a client of it reads back what it wrote, an OSD stopped makes a
# client's operation fail once its timeout passes (no hang beyond it),
# the OSD started again serves the bytes written before, and stopping the
# cluster leaves no daemon behind.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CL=$(cd "$(dirname "$0")/../ceph" && pwd)/cluster.sh
C=$T/ceph
if ! command -v ceph-osd >/dev/null || ! command -v rados >/dev/null; then
	skip "a single-node cluster" "ceph-mon, ceph-osd and ceph-common are not installed (scripts/setup installs them)"
	t_done
	exit 0
fi
# Stopped in the trap as well, by the pids the daemons wrote.
trap 'bash "$CL" stop "$C"; t_cleanup' EXIT

started=$(date +%s.%N)
ok "the cluster starts and its pool takes a write" bash "$CL" start "$C"
echo "# took $(python3 -c "print('%.1f s' % ($(date +%s.%N) - $started))")"
ok "its daemons listen on 127.0.0.1 alone" sh -c "
	ss -ltnp | grep -E 'ceph-(mon|osd)' >'$T/ports' && test -s '$T/ports' &&
	! awk '{print \$4}' '$T/ports' | grep -v '^127\.0\.0\.1:'"
head -c 3M /dev/urandom >"$T/blob"
R="rados -c $C/ceph.conf -p objfs"
ok "an object written" $R put blob "$T/blob"
ok "reads back the same" sh -c "$R get blob '$T/back' && cmp '$T/blob' '$T/back'"
ok "the OSD stops" bash "$CL" osd-stop "$C"
started=$(date +%s)
ok "a read with the OSD down fails: timed out (110) after its 5 s timeout" sh -c "
	! timeout 60 rados -c '$C/ceph.conf' --rados-osd-op-timeout 5 -p objfs \
		get blob '$T/back2' 2>'$T/err' && grep -q '(110) Connection timed out' '$T/err'"
ok "... after 5 s and within 30 s, not hanging" sh -c "
	e=\$(( \$(date +%s) - $started )); test \$e -ge 4 && test \$e -lt 30"
ok "the OSD starts again" bash "$CL" osd-start "$C"
ok "the object reads back the same after it" sh -c "
	for i in \$(seq 60); do
		timeout 10 $R get blob '$T/back3' 2>/dev/null && break
		sleep 1
	done
	cmp '$T/blob' '$T/back3'"
ok "the cluster stops" bash "$CL" stop "$C"
ok "no daemon of it is left" sh -c "! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
