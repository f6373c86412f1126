#!/bin/bash
# SPDX-License-Identifier: MIT
# objfs with -o remote= on a real single-node Ceph cluster
# (tests/ceph/cluster.sh): the pool as the durable home of the tree.
#   - fsynced files, directories and names survive the loss of the whole
#     machine: the daemon SIGKILLed, its data directory and arena deleted,
#     and the tree mounted from an empty data directory shows them all;
#   - a namespace change reaches the pool within the shipping window
#     without an fsync;
#   - one mount per namespace: a second one is refused naming the
#     holder, and succeeds once the first one's hold has lapsed; a killed
#     daemon's own data directory takes its hold over at once;
#   - the same bytes are stored once in the pool (dedup);
#   - a data directory that is a stale cache is built anew; one that holds
#     a tree of its own is refused;
#   - with the OSD stopped: resident reads go on, fsync fails with
#     ETIMEDOUT after remote_timeout, never hangs, and all is sent when
#     the OSD is back; stopped for 20 s under a load (remote_load.py:
#     appends fsynced one by one, a resident file read in a loop), the
#     same, and every record the load wrote is in the pool afterwards;
#   - a kill in the middle of an upload leaves only garbage, which a
#     collection removes; a file three times the arena spills to the pool;
#   - objfsctl check of a pool's cache, with and without the pool;
#   - a pool without room (the OSD's full ratio set below what it holds):
#     fsync fails with ENOSPC at once, the status and the log say why,
#     reads go on, a mount is refused saying so, and with room again the
#     same fsync succeeds and a fresh mount has every file.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
t_ceph "objfs on a Ceph pool"
NS=t$$
REMOTE="remote=rados:objfs/$NS,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
OPTS="arena=128M,$REMOTE"
rados_ls() { rados -c "$CONF" -p objfs -N "$NS" ls 2>/dev/null | sort; }
chunks() { rados_ls | grep -c '^c\.'; }
status() { cat "$1/.objfs-status"; }
figure() { status "$1" | sed -n "s/^$2: //p"; }

# ---- options ----
"$OBJFS_BIN" -f -o "data=$T/bad,remote=nfs:x" "$T/mnt" >"$T/o1" 2>&1
ok "remote= of another kind is refused by name" grep -q "must be rados:POOL" "$T/o1"
"$OBJFS_BIN" -f -o "data=$T/bad,remote_timeout=5" "$T/mnt" >"$T/o2" 2>&1
ok "remote_timeout without remote= is refused" grep -q "need remote=rados:POOL" "$T/o2"
"$OBJFS_BIN" -f -o "data=$T/bad,remote=rados:objfs,remote_conf=$T/none.conf" "$T/mnt" >"$T/o3" 2>&1
ok "a missing remote_conf is named" grep -q "none.conf" "$T/o3"
"$OBJFS_BIN" -f -o "data=$T/bad,remote=rados:nosuchpool,remote_conf=$CONF,remote_timeout=5" "$T/mnt" >"$T/o4" 2>&1
ok "a pool that does not exist is named" grep -qi "nosuchpool" "$T/o4"
ok "nothing was mounted by those" sh -c "! mountpoint -q '$T/mnt'"

# ---- write, fsync, lose the machine ----
ok "mount A on an empty namespace" start_objfs "$MNT" "$T/dA" "$OPTS"
PA=$OBJFS_PID
head -c 8M /dev/urandom >"$T/big"
head -c 300000 /dev/urandom >"$T/small"
ok "a file written and fsynced" dd if="$T/big" of="$MNT/big" bs=1M conv=fsync status=none
mkdir -p "$MNT/d/e"
cp "$T/small" "$MNT/d/e/small"
ok "a tree fsynced (file, then its directory)" python3 -c "
import os
fd = os.open('$MNT/d/e/small', os.O_RDONLY); os.fsync(fd); os.close(fd)
fd = os.open('$MNT/d/e', os.O_RDONLY); os.fsync(fd); os.close(fd)"
link_xattr() {
	ln -s e/small "$MNT/d/link" && setfattr -n user.k -v v1 "$MNT/d/e/small" &&
	python3 -c "
import os
fd = os.open('$MNT/d', os.O_RDONLY); os.fsync(fd); os.close(fd)"
}
ok "a symlink and an xattr, fsynced" link_xattr
says_where() { status "$MNT" | grep -q "^remote: rados:objfs/$NS" && status "$MNT" | grep -q '^remote_state: reachable'; }
ok "the status file says where the tree lives" says_where
N1=$(chunks)
ok "the big file's chunks are in the pool (9 objects: 8 + 1)" test "$N1" -ge 9
ok "the same bytes again, fsynced" dd if="$T/big" of="$MNT/big2" bs=1M conv=fsync status=none
ok "... cost no new chunk in the pool" test "$(chunks)" = "$N1"
ok "... and were counted as found (8 chunks)" test "$(figure "$MNT" remote_dedup_chunks)" -ge 8
# ---- garbage collection: never a chunk a file names ----
CTL=$(dirname "$OBJFS_BIN")/objfsctl
ok "rm of one of two files with the same bytes" rm "$MNT/big2"
ok "a collection with no grace" "$CTL" gc "$MNT" 0
ok "... removes none of the chunks the other file names" test "$(chunks)" = "$N1"
head -c 4M /dev/urandom >"$T/junk"
ok "a 4 MiB file fsynced" dd if="$T/junk" of="$MNT/junk" bs=1M conv=fsync status=none
ok "... adds its 4 chunks to the pool" test "$(chunks)" = $((N1 + 4))
rm "$MNT/junk"
ok "deleted, a collection with a grace of an hour keeps its chunks" "$CTL" gc "$MNT" 3600
ok "... (still 4 more)" test "$(chunks)" = $((N1 + 4))
"$CTL" gc "$MNT" 0 >"$T/gc.out"
ok "a collection with no grace removes them" test "$(chunks)" = "$N1"
ok "... and says so" grep -q "4 chunks removed (4194304 bytes)" "$T/gc.out"
ok "the status counts it" test "$(figure "$MNT" remote_gc_removed_chunks)" = 4
ok "objfsctl metrics has the remote figures" sh -c "'$CTL' metrics '$MNT' | grep -q '^objfs_remote_gc_removed_chunks_total 4' && '$CTL' metrics '$MNT' | grep -q '^objfs_remote_reachable 1'"
ok "the remaining file still reads back" cmp "$T/big" "$MNT/big"
ok "objfsctl gc on a local mount says there is nothing to collect" sh -c "! '$CTL' gc /nonexistent 0 2>/dev/null"
ok "the file deleted and written again, fsynced" dd if="$T/big" of="$MNT/big2" bs=1M conv=fsync status=none
# A change with no fsync reaches the pool within the shipping window.
mkdir "$MNT/unsynced-dir"
shipped_soon() {
	local i
	for i in $(seq 50); do
		[ "$(figure "$MNT" remote_commits_waiting)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
ok "a namespace change is in the pool within 5 s, unsynced" shipped_soon

# ---- a second mount is refused, naming the holder ----
mkdir -p "$T/mnt2"
"$OBJFS_BIN" -f -o "data=$T/dB,$OPTS" "$T/mnt2" >"$T/second.out" 2>&1
ok "a second mount of the namespace is refused" grep -q "is mounted by another objfs" "$T/second.out"
ok "... naming the holder's data directory" grep -q "$T/dA" "$T/second.out"
ok "... and mounts nothing" sh -c "! mountpoint -q '$T/mnt2'"

# ---- the machine is lost: daemon killed, data directory and arena gone ----
ARENA=$(head -n 1 "$T/dA/arena" 2>/dev/null)
kill -9 "$PA"
wait_pid_gone "$PA" 10
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
rm -rf "$T/dA"
[ -n "$ARENA" ] && rm -rf "${ARENA%/arena}"
# Its hold lapses after remote_hold (4 s): until then, refused.
mount_when_free() {	# mount_when_free MNT DATA: retry while the hold is taken
	local i
	for i in $(seq 40); do
		if start_objfs "$1" "$2" "$OPTS" 2>"$T/mwf.err"; then
			return 0
		fi
		grep -q "is mounted by another objfs" "$T"/objfs."$(basename "$1")".log || return 1
		: >"$T"/objfs."$(basename "$1")".log
		sleep 0.5
	done
	return 1
}
ok "B mounts once A's hold has lapsed, on an empty data directory" mount_when_free "$T/mnt2" "$T/dB"
PB=$OBJFS_PID
ok "B: the fsynced file reads back whole" cmp "$T/big" "$T/mnt2/big"
ok "B: and its twin" cmp "$T/big" "$T/mnt2/big2"
ok "B: the fsynced tree reads back" cmp "$T/small" "$T/mnt2/d/e/small"
ok "B: the symlink" test "$(readlink "$T/mnt2/d/link")" = e/small
ok "B: the xattr" test "$(getfattr --only-values -n user.k "$T/mnt2/d/e/small" 2>/dev/null)" = v1
ok "B: the unsynced directory, shipped within the window" test -d "$T/mnt2/unsynced-dir"
"$CTL" warm "$T/mnt2/big" "$T/mnt2/big2" >"$T/warm.out" 2>&1
ok "B: objfsctl warm fetches files whole" grep -q "big2: 8.0 MiB in" "$T/warm.out"
ok "B: the chunks were fetched from the pool" test "$(figure "$T/mnt2" remote_fetch_chunks)" -ge 8
second_read_local() {
	local f0
	f0=$(figure "$T/mnt2" remote_fetch_chunks)
	cat "$T/mnt2/big" >/dev/null
	[ "$(figure "$T/mnt2" remote_fetch_chunks)" = "$f0" ]
}
ok "B: a second read is served from the arena" second_read_local

# ---- a killed daemon's own data directory takes its hold over ----
echo one >"$T/mnt2/after-kill"
sync "$T/mnt2/after-kill"
kill -9 "$PB"
wait_pid_gone "$PB" 10
fusermount3 -u "$T/mnt2" 2>/dev/null || umount -l "$T/mnt2"
ok "B's data directory mounts again at once after a kill" start_objfs "$T/mnt2" "$T/dB" "$OPTS"
PB=$OBJFS_PID
ok "... with what B wrote" test "$(cat "$T/mnt2/after-kill")" = one
ok "... from its own index, not the pool's (built once, at B's first mount)" test "$(grep -c 'built from the pool' "$T/objfs.mnt2.log")" = 1
ok "B unmounts cleanly" stop_objfs "$T/mnt2" "$PB"
no_holder() { ! rados -c "$CONF" -p objfs -N "$NS" lock info objfs.hold objfs 2>/dev/null | grep -q '"cookie"'; }
ok "the hold is given back at unmount" no_holder

# ---- a stale cache is built anew ----
ok "C mounts at once after B's clean unmount" start_objfs "$MNT" "$T/dC" "$OPTS"
PC=$OBJFS_PID
echo from-c >"$MNT/c-file"
sync "$MNT/c-file"
ok "C unmounts" stop_objfs "$MNT" "$PC"
ok "B's data directory, stale now, mounts" start_objfs "$T/mnt2" "$T/dB" "$OPTS"
PB=$OBJFS_PID
ok "... rebuilt from the pool: C's file is there" test "$(cat "$T/mnt2/c-file")" = from-c
ok "... the stale index kept aside" sh -c "ls -d '$T'/dB/index.stale.* >/dev/null"
ok "... and the log says why" grep -q "mounted elsewhere since" "$T/objfs.mnt2.log"

# ---- a kill in the middle of an upload leaves only garbage ----
head -c 96M /dev/urandom >"$T/mid"
cp "$T/mid" "$T/mnt2/mid"
python3 -c "import os; fd = os.open('$T/mnt2/mid', os.O_RDONLY); os.fsync(fd)" 2>/dev/null &
FS=$!
sleep 0.2
kill -9 "$PB"
wait "$FS" 2>/dev/null
wait_pid_gone "$PB" 10
fusermount3 -u "$T/mnt2" 2>/dev/null || umount -l "$T/mnt2"
ok "remounted after a kill in the middle of an upload" start_objfs "$T/mnt2" "$T/dB" "$OPTS"
PB=$OBJFS_PID
ok "... the file's bytes are there (the arena adopted)" cmp "$T/mid" "$T/mnt2/mid"
ok "... and once synced" "$CTL" sync "$T/mnt2"
"$CTL" gc "$T/mnt2" 0 >"$T/gc2.out"
named=$(sed -n 's/.* \([0-9]*\) chunks named by the tree.*/\1/p' "$T/gc2.out")
ok "a collection leaves exactly the chunks the tree names ($named)" test "$(chunks)" = "$named"
ok "... and the file still reads back" cmp "$T/mid" "$T/mnt2/mid"
rm -f "$T/mnt2/mid" "$T/mid"

# ---- spill under pressure: a file three times the arena ----
head -c 400M /dev/urandom >"$T/huge"
ok "a file three times the arena, written and fsynced" dd if="$T/huge" of="$T/mnt2/huge" bs=1M conv=fsync status=none
ok "... its chunks went to the pool as the arena filled" test "$(figure "$T/mnt2" remote_upload_bytes)" -ge $((300 << 20))
ok "... and it reads back whole, fetched again" cmp "$T/huge" "$T/mnt2/huge"
rm -f "$T/mnt2/huge" "$T/huge"

# ---- the OSD stops for a while under a mount ----
head -c 2M /dev/urandom >"$T/late"
ok "a file read once (fetched into the arena)" cmp "$T/big" "$T/mnt2/big"
# Resident before the OSD stops: a read just after the spiller made room
# (the 400 MiB file's blocks freed) may have to fetch a chunk again.
resident_big() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(getfattr --only-values -n user.objfs.resident "$T/mnt2/big" 2>/dev/null)" = $((8 << 20)) ] && return 0
		cat "$T/mnt2/big" >/dev/null
		sleep 0.2
	done
	getfattr -d -m 'user.objfs' "$T/mnt2/big"
	return 1
}
ok "... all of it resident" resident_big
ok "the OSD stops" bash "$CL" osd-stop "$C"
ok "with the OSD down, a resident file still reads" cmp "$T/big" "$T/mnt2/big"
ok "with the OSD down, a write into the arena succeeds" cp "$T/late" "$T/mnt2/late"
START=$(date +%s)
expect_errno "with the OSD down, fsync fails" ETIMEDOUT "
import os
fd = os.open('$T/mnt2/late', os.O_RDONLY); os.fsync(fd)"
ELAPSED=$(( $(date +%s) - START ))
ok "... within the timeout and a margin, not a hang (${ELAPSED}s)" test "$ELAPSED" -le 40
ok "... and the status says the cluster is unreachable" sh -c "grep -q '^remote_state: unreachable' '$T/mnt2/.objfs-status'"
ok "... the log says why" grep -q "did not answer within 8 s" "$T/objfs.mnt2.log"
ok "the OSD starts again" bash "$CL" osd-start "$C"
ok "then fsync succeeds" python3 -c "
import os, time
deadline = time.time() + 90
while True:
    try:
        fd = os.open('$T/mnt2/late', os.O_RDONLY); os.fsync(fd); os.close(fd); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(1)"
ok "and the status says reachable" sh -c "for i in \$(seq 100); do grep -q '^remote_state: reachable' '$T/mnt2/.objfs-status' && exit 0; sleep 0.2; done; exit 1"

# ---- the OSD stopped for 20 s under a load ----
python3 "$(dirname "$0")/remote_load.py" "$T/mnt2" "$T/load.out" 45 &
LOAD=$!
sleep 5
ok "under a load, the OSD stops" bash "$CL" osd-stop "$C"
sleep 20
ok "... and starts again 20 s later" bash "$CL" osd-start "$C"
wait "$LOAD"
summary=$(tail -n 1 "$T/load.out")
echo "# load: $summary; fsyncs: $(grep -c '^ok' "$T/load.out") acknowledged, $(grep -c '^err' "$T/load.out") failed"
ok "fsyncs failed while it was down, with ETIMEDOUT" sh -c "grep -q '^err ETIMEDOUT' '$T/load.out' && ! grep '^err' '$T/load.out' | grep -qv ETIMEDOUT"
worst=$(sed -n 's/.* maxfsync \([0-9.]*\)$/\1/p' "$T/load.out")
ok "... none waited much past remote_timeout (8 s; the longest ${worst}s)" python3 -c "import sys; sys.exit(0 if $worst <= 20 else 1)"
ok "... and they succeed again once it is back" sh -c "tail -n 2 '$T/load.out' | head -n 1 | grep -q '^ok'"
ok "... the resident file read all along" sh -c "tail -n 1 '$T/load.out' | grep -q 'readfail 0' && ! tail -n 1 '$T/load.out' | grep -q ' reads 0 '"
LOADN=$(sed -n 's/^records \([0-9]*\) .*/\1/p' "$T/load.out")
ok "B unmounts" stop_objfs "$T/mnt2" "$PB"
ok "a fresh mount" start_objfs "$MNT" "$T/dD" "$OPTS"
ok "... has the file written while the OSD was down" cmp "$T/late" "$MNT/late"
load_whole() {	# every record the load wrote, in order, nothing else
	python3 - "$MNT/load.log" "$LOADN" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
want = b"".join((b"%08d" % i) * (65536 // 8) for i in range(n))
got = open(path, "rb").read()
sys.exit(0 if got == want else 1)
PY
}
ok "... and every record of the load ($LOADN), none lost" load_whole
ok "D collects: every chunk left in the pool is one the tree names" "$CTL" gc "$MNT" 0
ok "D unmounts" stop_objfs "$MNT" "$OBJFS_PID"

"$OBJFS_BIN" -f -o "data=$T/dD,arena=64M" "$MNT" >"$T/nocache.out" 2>&1
ok "a pool's cache mounted without remote= is refused" grep -q "the cache of a tree in a Ceph pool" "$T/nocache.out"
ok "... and mounts nothing" sh -c "! mountpoint -q '$MNT'"

# ---- objfsctl check of a pool's cache ----
"$CTL" check "$T/dD" >"$T/check1.out" 2>&1
ok "check without --remote: the index and names are sound" grep -q "^0 problem(s)" "$T/check1.out"
ok "... and it says the chunks are in the pool, unread" grep -q "are in the pool and were not read" "$T/check1.out"
"$CTL" check "$T/dD" --remote "rados:objfs/$NS" --remote-conf "$CONF" >"$T/check2.out" 2>&1
ok "check --remote: every chunk read from the pool and verified" sh -c "grep -q '^0 problem(s)' '$T/check2.out' && grep -Eq ' [1-9][0-9]* chunks \([0-9]+ bytes\) verified against rados:' '$T/check2.out'"
ok "... and the pool's head, snapshot and log checked" grep -q "the pool's tree: epoch" "$T/check2.out"
# A chunk's object damaged in the pool (by hand: objfs never rewrites one).
damage_one() {	# overwrite one whole chunk's object with other bytes
	local name
	name=$(rados -c "$CONF" -p objfs -N "$NS" ls | grep '^c\..*-100000$' | head -n 1)
	[ -n "$name" ] || return 1
	head -c 1048576 /dev/urandom >"$T/junk1m"
	rados -c "$CONF" -p objfs -N "$NS" put "$name" "$T/junk1m"
}
ok "a chunk's object overwritten in the pool" damage_one
"$CTL" check "$T/dD" --remote "rados:objfs/$NS" --remote-conf "$CONF" >"$T/check3.out" 2>&1
ok "check --remote finds it" grep -q "its bytes in the pool do not match its checksum" "$T/check3.out"
ok "... and exits 1" sh -c "'$CTL' check '$T/dD' --remote 'rados:objfs/$NS' --remote-conf '$CONF' >/dev/null 2>&1; [ \$? = 1 ]"

# ---- a data directory with a tree of its own is refused ----
local_tree() { start_objfs "$MNT" "$T/dL" arena=64M && echo x >"$MNT/x" && stop_objfs "$MNT" "$OBJFS_PID"; }
ok "a local objfs with a file" local_tree
"$OBJFS_BIN" -f -o "data=$T/dL,$OPTS" "$MNT" >"$T/local.out" 2>&1
ok "... is refused as a cache of the pool" grep -q "holds a tree of its own" "$T/local.out"
local_again() { start_objfs "$MNT" "$T/dL" arena=64M && [ "$(cat "$MNT/x")" = x ] && stop_objfs "$MNT" "$OBJFS_PID"; }
ok "... and still mounts without remote=" local_again

# ---- a pool without room: writes refused at once, nothing lost ----
ratios() {	# ratios NEARFULL BACKFILLFULL FULL: the OSDs' thresholds
	timeout 20 ceph -c "$CONF" osd set-nearfull-ratio "$1" >/dev/null 2>&1 &&
	timeout 20 ceph -c "$CONF" osd set-backfillfull-ratio "$2" >/dev/null 2>&1 &&
	timeout 20 ceph -c "$CONF" osd set-full-ratio "$3" >/dev/null 2>&1
}
is_full() {	# is_full yes|no: the cluster says so within 60 s
	local i
	for i in $(seq 120); do
		if timeout 10 ceph -c "$CONF" health 2>/dev/null | grep -Eq '[0-9]+ full osd'; then
			[ "$1" = yes ] && return 0
		else
			[ "$1" = no ] && return 0
		fi
		sleep 0.5
	done
	return 1
}
# Bytes of their own: a chunk of "big" was damaged in the pool above.
head -c 8M /dev/urandom >"$T/room"
head -c 8M /dev/urandom >"$T/nofit"
ok "mount E" start_objfs "$MNT" "$T/dE" "$OPTS"
PE=$OBJFS_PID
ok "a file fsynced while there is room" dd if="$T/room" of="$MNT/room" bs=1M conv=fsync status=none
ok "the OSD's full ratio set below what it holds" ratios 0.001 0.002 0.003
ok "... and the cluster says it is full" is_full yes
full_fsync() {	# write 8 MiB and fsync: ENOSPC, and at once
	python3 - "$MNT/nofit" "$T/nofit" <<'PY'
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
t = time.monotonic()
try:
    os.fsync(fd)
    print("fsync succeeded"); sys.exit(1)
except OSError as e:
    took = time.monotonic() - t
    print("fsync: %s after %.2f s" % (errno.errorcode[e.errno], took))
    sys.exit(0 if e.errno == errno.ENOSPC and took < 4 else 1)
PY
}
ok "fsync into the full pool fails with ENOSPC at once, not after remote_timeout" full_fsync
sed 's/^/# /' "$T/last.out" 2>/dev/null | head -n 1
ok "... the status says the pool is full" test "$(figure "$MNT" remote_pool_full)" = 1
ok "... and the log says why" grep -q "the pool is full (its OSDs are full)" "$T/objfs.$(basename "$MNT").log"
ok "... resident reads go on" cmp "$T/room" "$MNT/room"
timeout 60 "$OBJFS_BIN" -f -o "data=$T/dG,arena=64M,remote=rados:objfs/$NS.g,remote_conf=$CONF,remote_timeout=8" "$T/mnt2" >"$T/fullmount.out" 2>&1
ok "a mount of another namespace is refused, saying the pool is full" grep -q "the pool is full" "$T/fullmount.out"
ok "room again" ratios 0.85 0.90 0.95
ok "... and the cluster says so" is_full no
fsync_again() {	# the file that did not fit, fsynced once there is room
	python3 - "$MNT/nofit" <<'PY'
import os, sys, time
t = time.monotonic()
while True:
    try:
        fd = os.open(sys.argv[1], os.O_RDONLY)
        os.fsync(fd)
        sys.exit(0)
    except OSError:
        if time.monotonic() - t > 60:
            sys.exit(1)
        time.sleep(0.5)
PY
}
ok "the same fsync succeeds once there is room" fsync_again
ok "... and the status no longer says full" test "$(figure "$MNT" remote_pool_full)" = 0
ok "E unmounts" stop_objfs "$MNT" "$PE"
ok "a fresh mount" start_objfs "$MNT" "$T/dF" "$OPTS"
ok "... has the file fsynced before the pool filled, and the one after" sh -c "cmp '$T/room' '$MNT/room' && cmp '$T/nofit' '$MNT/nofit'"
ok "... unmounts" stop_objfs "$MNT" "$OBJFS_PID"

# ---- two machines of one host name and one data path ----
# The second runs in mount and UTS namespaces of its own: the same host
# name, its own directory bound on the same data path, a machine id of
# its own.  It must be refused while the first lives, and leave its hold
# alone (on 67f5056 it took the hold for its own killed daemon's, broke
# it, and both mounted).
TW=$T/tw RTW="remote=rados:objfs/tw$$,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
mkdir -p "$TW/data" "$TW/other" "$TW/m1" "$TW/m2"
echo 0123456789abcdef0123456789abcdef >"$TW/machine-id"
ok "a mount on the first machine" start_objfs "$TW/m1" "$TW/data" "arena=64M,$RTW"
PT=$OBJFS_PID
twin() {
	unshare -m -u sh -c "mount --make-rprivate / &&
		mount --bind '$TW/other' '$TW/data' &&
		mount --bind '$TW/machine-id' /etc/machine-id &&
		exec timeout 30 '$OBJFS_BIN' -f -o 'data=$TW/data,arena=64M,$RTW' '$TW/m2'" \
		>"$TW/twin.out" 2>&1
	[ $? != 124 ] && grep -q "is mounted by another objfs" "$TW/twin.out"
}
ok "the second machine (same host name, same data path) is refused" twin
held_on() {	# the first still holds it: fsyncs past its hold's time
	local i
	for i in 1 2 3; do
		echo "$i" >"$TW/m1/f" && python3 -c "
import os; fd = os.open('$TW/m1/f', os.O_RDONLY); os.fsync(fd)" || return 1
		sleep 3
	done
	! grep -q "hold was taken\|another mount took" "$T/objfs.m1.log"
}
ok "... and the first keeps its hold (fsyncs for 9 s, past remote_hold)" held_on
ok "... and unmounts" stop_objfs "$TW/m1" "$PT"

ok "the cluster stops, nothing left" sh -c "bash '$CL' stop '$C' && ! pgrep -f 'ceph-(mon|osd) -c $C/ceph.conf'"
t_done
