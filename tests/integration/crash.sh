#!/bin/bash
# SPDX-License-Identifier: MIT
# The crash simulator (tests/crash/sim.py): every write, sync and name
# change the daemon makes under its data directory is recorded
# (crashrec.so), and crash images are built from the record as a machine
# crash could leave the disk.  Each image must pass objfsctl check as the
# crash left it, open, read back without an error, pass objfsctl check
# again after that mount, and hold every fsynced byte and every name that
# existed at its last durability point (and every name and attribute
# change older than 3 s).  The simulator is first checked against SQLite:
# its safe settings must show no failures, an unsafe one must show some.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
B=$(dirname "$OBJFS_BIN")
REC=$B/tests/crash/libcrashrec.so
CHK=$B/tests/crash/crashcheck
SIM=$(cd "$(dirname "$0")/../crash" && pwd)
if [ ! -f "$REC" ] || [ ! -x "$CHK" ]; then
	echo "Bail out! $REC or $CHK not built (make check builds them)"
	exit 1
fi
SEED=${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "# seed $SEED (CRASH_SEED=$SEED reproduces the choices)"
# Images go to a tmpfs of the test's own, removed with it.
mkdir -p "$T/shm"
mount -t tmpfs -o size=3g,mode=0700 objfs-crash "$T/shm" && T_MOUNTS+=("$T/shm")

result() {	# result OUTPUT-FILE: "N F" from "crash images: N, failures: F"
	sed -n 's/^crash images: \([0-9]*\), failures: \([0-9]*\).*/\1 \2/p' "$1"
}

# 1. SQLite, to check the simulator: transactions whose COMMIT returned
#    must survive with WAL and synchronous=FULL, and with a rollback
#    journal and synchronous=EXTRA; with synchronous=OFF they need not.
sqlite_run() {	# sqlite_run MODE IMAGES
	local d=$T/sq-$1
	mkdir -p "$d/db"
	LD_PRELOAD=$REC CRASHREC_DIR=$d/db CRASHREC_TRACE=$d/trace \
		python3 "$SIM/sqlite_load.py" "$d/db" "$d/log" "$1" 300 &&
	python3 "$SIM/sim.py" sqlite --trace "$d/trace" --log "$d/log" \
		--images "$2" --seed "$SEED" --tmp "$T/shm" >"$d/out" 2>&1
	sed 's/^/# /' "$d/out"
}
for mode in wal,full delete,extra; do
	sqlite_run "$mode" 500
	read -r n f < <(result "$T/sq-$mode/out")
	ok "simulator on SQLite $mode: ${n:-0} images, ${f:-?} failures" \
		test "${n:-0}" -ge 500 -a "${f:-1}" = 0
done
sqlite_run delete,off 500
read -r n f < <(result "$T/sq-delete,off/out")
ok "simulator on SQLite delete,off finds the losses it allows (${f:-0} of ${n:-0} images)" \
	test "${f:-0}" -gt 0

# 2. objfs: a workload of creates, renames, unlinks, xattrs, writes, an
#    append-and-fsync log, rewrites of fsynced chunks with fsync,
#    truncates and hole punches, on a small arena that spills all along;
#    the daemon is killed at the end (the last crash point).
mkdir -p "$DATA"
LD_PRELOAD=$REC CRASHREC_DIR=$DATA CRASHREC_TRACE=$T/trace "$OBJFS_BIN" -f \
	-o "data=$DATA,arena=16M,chunk=64K,spill_high=20,spill_low=10" "$MNT" \
	>"$T/objfs.mnt.log" 2>&1 &
OBJFS_PID=$!
T_PIDS+=("$OBJFS_PID")
T_MOUNTS+=("$MNT")
for ((i = 0; i < 100; i++)); do
	mountpoint -q "$MNT" && break
	sleep 0.1
done
ok "mount objfs with the recorder" mountpoint -q "$MNT"
ok "run the workload (600 operations)" \
	python3 "$SIM/workload.py" "$MNT" "$T/wlog" 600 "$SEED"
kill -KILL "$OBJFS_PID"
wait "$OBJFS_PID" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
ok "the trace holds the daemon's writes ($(stat -c %s "$T/trace") bytes)" \
	test -s "$T/trace"
python3 "$SIM/sim.py" objfs --trace "$T/trace" --log "$T/wlog" --images 1000 \
	--seed "$SEED" --crashcheck "$CHK" --objfs "$OBJFS_BIN" --mount 100 \
	--tmp "$T/shm" >"$T/sim.out" 2>&1
sed 's/^/# /' "$T/sim.out"
read -r n f < <(result "$T/sim.out")
ok "objfs: ${n:-0} crash images, ${f:-?} failures" \
	test "${n:-0}" -ge 1000 -a "${f:-1}" = 0
t_done
