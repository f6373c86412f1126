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
#   - fuzz.py --remote, a namespace for each sequence, on one mount and
#     on two shared mounts (-o shared) at once, against one model, also
#     with directories held (--batch 50);
#   - the crash simulator (sim.py remote): pool snapshots taken while a
#     workload runs, each mounted and checked as a lost machine's pool.
# REMOTE_KILL_ROUNDS, REMOTE_LOSE_ROUNDS, REMOTE_FUZZ_SECONDS,
# REMOTE_SHARED_FUZZ_SECONDS, REMOTE_BATCH_FUZZ_SECONDS and
# REMOTE_CRASH_STEPS set the sizes (defaults 12, 6, 45, 45, 40 and 1000).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
HERE=$(cd "$(dirname "$0")" && pwd)
t_ceph "the kill loop and the fuzzer on a Ceph pool"
# The daemon, and the OSD, also stopped and resumed at random moments of
# most rounds, past the hold and past remote_timeout (KILL_PAUSE).
t_sub "kill loop, remote=, with pauses" env KILL_ROUNDS="${REMOTE_KILL_ROUNDS:-12}" \
	KILL_PAUSE=1 KILL_OSD_PID="$C/run/osd.0.pid" \
	KILL_OPTS="arena=32M,chunk=64K,remote=rados:objfs/kill$$,remote_conf=$CONF,remote_hold=3,remote_timeout=6" \
	bash "$HERE/kill_loop.sh"
t_sub "kill loop, the machine lost at each kill" env \
	KILL_ROUNDS="${REMOTE_LOSE_ROUNDS:-6}" KILL_MODE=fsync KILL_LOSE=1 \
	KILL_OPTS="arena=32M,chunk=64K,remote=rados:objfs/lose$$,remote_conf=$CONF,remote_hold=2" \
	bash "$HERE/kill_loop.sh"
SEED=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
# Both stop and resume the daemons and the OSD among their operations.
t_fuzz "remote=" "${REMOTE_FUZZ_SECONDS:-45}" "$SEED" \
	--remote rados:objfs --remote-conf "$CONF" --osd-pid "$C/run/osd.0.pid"
# Two mounts of each sequence's namespace (-o shared), one model.
t_fuzz "two shared mounts" "${REMOTE_SHARED_FUZZ_SECONDS:-45}" \
	"$((SEED + 1))" --remote rados:objfs --remote-conf "$CONF" --shared \
	--osd-pid "$C/run/osd.0.pid"
# The same with directories held (-o remote_batch=50): a node's changes
# wait in its outbox, and the other node's operation (or catch-up)
# recalls the directory first.
t_fuzz "two shared mounts, directories held" \
	"${REMOTE_BATCH_FUZZ_SECONDS:-40}" "$((SEED + 2))" --remote rados:objfs \
	--remote-conf "$CONF" --shared --batch 50 --osd-pid "$C/run/osd.0.pid"

# The crash simulator with remote=: the workload of crash.sh on a mount
# of its own pool, the data directory's writes recorded (crashrec.so),
# while poolsnap snapshots the pool about once a second; the daemon is
# killed at the end (the last snapshot is taken after).  Each snapshot,
# copied into a namespace of its own, is what a machine lost at that
# moment leaves in the pool: sim.py mounts it, every other one with the
# data directory as the crash left the disk (from the trace), the others
# from an empty one, and checks it against the workload's log, collects
# its garbage and runs objfsctl check --remote on it.
B=$(dirname "$OBJFS_BIN")
PS=$B/tests/crash/poolsnap
if [ -x "$PS" ] && [ -f "$B/tests/crash/libcrashrec.so" ]; then
	CS=$T/crashsim
	ok "pools for the crash simulator" sh -c "bash '$CL' pool '$C' crashsim && bash '$CL' pool '$C' crashimg"
	ok "mount the pool with the recorder" crash_mount "$CS" \
		"arena=16M,chunk=64K,spill_high=20,spill_low=10,remote=rados:crashsim/w,remote_conf=$CONF,remote_hold=3"
	"$PS" snaps "$CONF" crashsim s 300 "$CS/stop" >"$CS/snaps" 2>"$T/poolsnap.log" &
	SNAP_PID=$!
	T_PIDS+=("$SNAP_PID")
	CSEED=${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
	echo "# seed $CSEED (CRASH_SEED=$CSEED reproduces the workload)"
	# The daemon stopped and resumed now and then while the workload runs
	# (up to 3.5 s: past its remote_hold of 3, within the 5 s the checker
	# gives a change without fsync to reach the pool).  The OSD is not:
	# a snapshot the monitor made while it is stopped reaches it later,
	# so the image would not be the moment the simulator says it is.
	(
		n=0
		while [ ! -e "$CS/stop" ] && kill -0 "$CS_PID" 2>/dev/null; do
			sleep "$((RANDOM % 3 + 1)).$((RANDOM % 10))"
			[ -e "$CS/workload-done" ] && break
			kill -STOP "$CS_PID" 2>/dev/null || break
			sleep "$((RANDOM % 4)).$((RANDOM % 6))"
			kill -CONT "$CS_PID"
			n=$((n + 1))
			echo "$n" >"$CS/pauses"
		done
	) &
	PAUSER=$!
	ok "run the workload (${REMOTE_CRASH_STEPS:-1000} operations) while the pool is snapshotted and the daemon paused" \
		python3 "$HERE/../crash/workload.py" "$CS/mnt" "$CS/wlog" \
		"${REMOTE_CRASH_STEPS:-1000}" "$CSEED"
	touch "$CS/workload-done"
	wait "$PAUSER"
	kill -CONT "$CS_PID" 2>/dev/null
	echo "# the daemon was paused $(cat "$CS/pauses" 2>/dev/null || echo 0) time(s) under the workload"
	kill -KILL "$CS_PID"
	wait "$CS_PID" 2>/dev/null
	touch "$CS/stop"
	wait "$SNAP_PID"
	fusermount3 -u "$CS/mnt" 2>/dev/null || umount -l "$CS/mnt"
	ok "$(wc -l <"$CS/snaps") snapshots of the pool" test "$(wc -l <"$CS/snaps")" -ge 5
	sim() {
		python3 "$HERE/../crash/sim.py" remote --trace "$CS/trace" \
			--log "$CS/wlog" --snaps "$CS/snaps" --seed "$CSEED" \
			--poolsnap "$PS" --objfs "$OBJFS_BIN" --objfsctl "$B/objfsctl" \
			--conf "$CONF" --pool crashsim --ns w --imgpool crashimg \
			--tmp "$T" "$@"
	}
	sim >"$T/sim.out" 2>&1
	# The checker's own check: the last image without its chunks fails.
	sim --images 1 --damage >"$T/sim-damage.out" 2>&1
	crash_verdicts "$T/sim.out" "$T/sim-damage.out" "the pool"
else
	skip "the crash simulator with remote=" "poolsnap or crashrec.so not built (make check builds them)"
fi
ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
