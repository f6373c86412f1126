#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/shared.sh - the shared part of scripts/bench: two objfs mounts,
# A and B (two data directories and arenas: two nodes on one machine),
# sharing a namespace of a single-node Ceph cluster started here (-o
# shared), beside rados bench on the same pool, in one run:
#   first read on B   A writes and closes a SIZE GiB file; B (an empty data
#                     directory) reads it: every chunk fetched; against
#                     rados bench seq (32 in flight, 1 MiB objects)
#   fsync to visible  A appends 4 KiB and fsyncs; B's stat sees the new
#                     size: the time from A's fsync returning (median and
#                     99th percentile of 100; B's kernel keeps attributes
#                     up to a second)
#   close to open     A writes and closes a new file; B opens and reads
#                     it: the time from A's close returning (of 100)
#   stats on B        2,000 files A made that nobody changes: B's stats
#                     per second (the second pass), against a local mount
#   metadata          creates (open O_CREAT and close), stats and renames
#                     of 1,000 files per second on A, against a local
#                     objfs mount (no remote=) and an exclusive remote=
#                     mount
#   8 readers on B    8 processes on a new B read a 1 GiB file A wrote, at
#                     once: their rate together, and one reader alone
#   a fresh node      the time a node with an empty data directory takes
#                     to mount a tree of 2,000 files (20 directories of
#                     100), when the tree is new and after 8,000 creates
#                     and deletes in it (4x its history), the log
#                     compacted (the default) and not (remote_compact=0,
#                     the baseline: every record replayed)
#
#   bench/shared.sh OUT BIN WORK SIZE_GIB REPS
# Appends its figures to OUT/results.csv and writes OUT/shared.md.
set -euo pipefail
OUT=$1 BIN=$2 W=$3 SIZE=$4 REPS=$5
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/cluster_lib.sh"
MD=$OUT/shared.md
NFILES=1000

CLUSTER_OSD_GIB=$((3 * SIZE + 8)) bash "$top/tests/ceph/cluster.sh" start "$C" objfs
CONF=$C/ceph.conf
RB="rados -c $CONF -p objfs"
mount_ns() {	# mount_ns MNT DATA OPTS: an objfs on DATA with OPTS
	mkdir -p "$1"
	"$BIN/objfs" -f -o "arena=$((SIZE + 2))G,data=$2,$3" "$1" 2>>"$OUT/objfs-shared.log" &
	PIDS+=($!); MOUNTS+=("$1")
	wait_mounted "$1"
}
shared() { echo "remote=rados:objfs/$1,remote_conf=$CONF,shared"; }

# meta DIR: creates, stats and renames of NFILES files in DIR, per second
meta() {
	python3 - "$1" "$NFILES" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
t = time.monotonic()
for i in range(n):
    os.close(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_WRONLY, 0o644))
c = n / (time.monotonic() - t)
t = time.monotonic()
for i in range(n):
    os.stat("%s/f%d" % (d, i))
s = n / (time.monotonic() - t)
t = time.monotonic()
for i in range(n):
    os.rename("%s/f%d" % (d, i), "%s/g%d" % (d, i))
r = n / (time.monotonic() - t)
print("%.0f %.0f %.0f" % (c, s, r))
PY
}

# stat_tree DIR: stats per second of the 2,000 files of DIR (20
# directories of 100), the second of two passes (the first warms what
# the kernel keeps)
stat_tree() {
	python3 - "$1" <<'PY'
import os, sys, time
d = sys.argv[1]
names = ['%s/d%d/f%d' % (d, i, j) for i in range(20) for j in range(100)]
for n in names:
    os.stat(n)
t = time.monotonic()
for n in names:
    os.stat(n)
print("%.0f" % (len(names) / (time.monotonic() - t)))
PY
}

# meta_rec WHAT DIR: meta DIR, its three rates recorded as WHAT in the
# CSV and printed
meta_rec() {
	local c1 s1 r1
	read -r c1 s1 r1 < <(meta "$2")
	rec "$1" creates_per_s 0 "$r" "$c1"
	rec "$1" stats_per_s 0 "$r" "$s1"
	rec "$1" renames_per_s 0 "$r" "$r1"
	echo "$c1 $s1 $r1"
}

# fresh NS OPTS: a tree of 2,000 files on a new node A; a fresh node's
# mount of it; 8,000 creates and deletes on A; a fresh node's mount
# again: "seconds-new seconds-4x records-new records-4x"
fresh() {
	local ns=$1 opts=$2 t0 t1 t2 rec1 rec2
	mount_ns "$W/a" "$W/fdata_a$ns" "$(shared "$ns")$opts"
	python3 - "$W/a" <<'PY'
import os, sys
a = sys.argv[1]
for d in range(20):
    os.mkdir('%s/d%d' % (a, d))
    for i in range(100):
        with open('%s/d%d/f%d' % (a, d, i), 'wb') as f:
            f.write(b'x' * 100)
PY
	rec1=$(figure "$W/a" remote_log_position)
	sleep 3		# the compactor's turn, as a working node gives it
	t0=$(now)
	mount_ns "$W/c" "$W/fdata_c$ns" "$(shared "$ns")$opts"
	t1=$(now)
	umount_wait "$W/c"
	python3 - "$W/a" <<'PY'
import os, sys
a = sys.argv[1]
for i in range(8000):
    p = '%s/d%d/t%d' % (a, i % 20, i)
    with open(p, 'wb') as f:
        f.write(b'y' * 100)
    os.unlink(p)
PY
	rec2=$(figure "$W/a" remote_log_position)
	sleep 3
	t2=$(now)
	mount_ns "$W/c" "$W/fdata_d$ns" "$(shared "$ns")$opts"
	python3 -c "print(f'{$t1 - $t0:.2f} {$(now) - $t2:.2f} $rec1 $rec2')"
	umount_wait "$W/c"
	umount_wait "$W/a"
	rm -rf "$W"/fdata_*
}

declare -a rb_r first lat50 lat99 cr st rn lcr lst lrn xcr xst xrn one eight
declare -a olat50 olat99 bst lbst
declare -a fn f4 bn b4
for ((r = 1; r <= REPS; r++)); do
	$RB bench 600 write -b 1M -t 32 --max-objects $((SIZE << 10)) --no-cleanup >/dev/null 2>&1
	br=$($RB bench 600 seq -t 32 2>/dev/null | sed -n 's/^Bandwidth (MB\/sec): *//p')
	br=$(python3 -c "print(f'{$br * 1.048576:.0f}')")	# MiB/s to MB/s
	$RB cleanup >/dev/null 2>&1
	rb_r+=("$br")
	rec rados_bench seq_MBps 1048576 "$r" "$br"

	ns=sh$r
	mount_ns "$W/a" "$W/rdata_a$r" "$(shared "$ns")"
	mount_ns "$W/b" "$W/rdata_b$r" "$(shared "$ns")"
	# A writes and closes (close publishes it); B reads it, every chunk
	# fetched from the pool.
	"$BIN/bench/benchio" write "$W/a/blob" "$GB" fsync >/dev/null
	"$BIN/objfsctl" catch-up "$W/b"
	drop
	s=$("$BIN/bench/benchio" read "$W/b/blob" "$GB" | cut -d' ' -f1)
	first+=("$(rate "$GB" "$s")")
	rec objfs_shared first_read_on_B_s "$GB" "$r" "$s"
	# From A's fsync to B's stat seeing it.
	lat=$(python3 - "$W/a/lat" "$W/b/lat" <<'PY'
import os, sys, time
a, b = sys.argv[1], sys.argv[2]
fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
buf = os.urandom(4096)
os.write(fd, buf)
os.fsync(fd)
while True:
    try:
        if os.stat(b).st_size == 4096:
            break
    except FileNotFoundError:
        pass
    time.sleep(0.001)
t = []
for i in range(2, 102):
    os.write(fd, buf)
    os.fsync(fd)
    a0 = time.monotonic()
    while os.stat(b).st_size != 4096 * i:
        time.sleep(0.0002)
    t.append((time.monotonic() - a0) * 1e3)
t.sort()
print("%.1f %.1f" % (t[len(t) // 2], t[len(t) * 99 // 100]))
PY
)
	lat50+=("${lat% *}"); lat99+=("${lat#* }")
	rec objfs_shared fsync_to_visible_p50_ms 4096 "$r" "${lat% *}"
	rec objfs_shared fsync_to_visible_p99_ms 4096 "$r" "${lat#* }"
	# From A's close to B's open finding the file and its bytes (a new
	# file each time: close-to-open, what an open promises).
	lat=$(python3 - "$W/a" "$W/b" <<'PY'
import os, sys, time
a, b = sys.argv[1], sys.argv[2]
os.makedirs(a + '/c2o', exist_ok=True)
t = []
for i in range(100):
    want = b'%d' % i * 100
    with open('%s/c2o/f%d' % (a, i), 'wb') as f:
        f.write(want)
    a0 = time.monotonic()
    with open('%s/c2o/f%d' % (b, i), 'rb') as f:
        if f.read() != want:
            sys.exit('B read other bytes than A closed')
    t.append((time.monotonic() - a0) * 1e3)
t.sort()
print("%.1f %.1f" % (t[len(t) // 2], t[len(t) * 99 // 100]))
PY
)
	olat50+=("${lat% *}"); olat99+=("${lat#* }")
	rec objfs_shared close_to_open_p50_ms 100 "$r" "${lat% *}"
	rec objfs_shared close_to_open_p99_ms 100 "$r" "${lat#* }"
	# Stats on B of a tree A made and nobody changes (2,000 files): the
	# second pass, against the same on a local mount below.
	python3 - "$W/a/tree" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(20):
    os.makedirs('%s/d%d' % (d, i), exist_ok=True)
    for j in range(100):
        os.close(os.open('%s/d%d/f%d' % (d, i, j), os.O_CREAT | os.O_WRONLY, 0o644))
PY
	"$BIN/objfsctl" catch-up "$W/b"
	s1=$(stat_tree "$W/b/tree")
	bst+=("$s1")
	rec objfs_shared stats_unchanged_on_B_per_s 2000 "$r" "$s1"
	# Metadata on the shared tree.
	read -r c1 s1 r1 < <(meta_rec objfs_shared "$W/a/meta")
	cr+=("$c1"); st+=("$s1"); rn+=("$r1")
	umount_wait "$W/b"
	# 8 readers on a new B of a 1 GiB file A wrote; then one alone.
	"$BIN/bench/benchio" write "$W/a/blob1" $((1 << 30)) fsync >/dev/null
	mount_ns "$W/b" "$W/rdata_c$r" "$(shared "$ns")"
	drop
	t0=$(now)
	readers=()
	for k in $(seq 8); do
		"$BIN/bench/benchio" read "$W/b/blob1" $((1 << 30)) >/dev/null &
		readers+=($!)
	done
	for p in "${readers[@]}"; do wait "$p"; done
	s=$(python3 -c "print($(now) - $t0)")
	eight+=("$(rate $((8 << 30)) "$s")")
	rec objfs_shared eight_readers_on_B_s $((8 << 30)) "$r" "$s"
	umount_wait "$W/b"
	mount_ns "$W/b" "$W/rdata_d$r" "$(shared "$ns")"
	drop
	s=$("$BIN/bench/benchio" read "$W/b/blob1" $((1 << 30)) | cut -d' ' -f1)
	one+=("$(rate $((1 << 30)) "$s")")
	rec objfs_shared one_reader_on_B_s $((1 << 30)) "$r" "$s"
	umount_wait "$W/b"
	umount_wait "$W/a"
	# The same metadata operations on a local objfs and on an exclusive
	# remote= mount.
	mount_ns "$W/l" "$W/ldata$r" "dedup=on"
	read -r c1 s1 r1 < <(meta_rec objfs_local "$W/l/meta")
	lcr+=("$c1"); lst+=("$s1"); lrn+=("$r1")
	python3 - "$W/l/tree" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(20):
    os.makedirs('%s/d%d' % (d, i), exist_ok=True)
    for j in range(100):
        os.close(os.open('%s/d%d/f%d' % (d, i, j), os.O_CREAT | os.O_WRONLY, 0o644))
PY
	s1=$(stat_tree "$W/l/tree")
	lbst+=("$s1")
	rec objfs_local stats_unchanged_per_s 2000 "$r" "$s1"
	umount_wait "$W/l"
	mount_ns "$W/x" "$W/xdata$r" "remote=rados:objfs/x$r,remote_conf=$CONF"
	read -r c1 s1 r1 < <(meta_rec objfs_remote "$W/x/meta")
	xcr+=("$c1"); xst+=("$s1"); xrn+=("$r1")
	umount_wait "$W/x"
	rm -rf "$W"/rdata_*"$r" "$W/ldata$r" "$W/xdata$r"
	# A fresh node's mount, compacted and not.
	read -r a1 a4 n1 n4 < <(fresh "fc$r" "")
	fn+=("$a1"); f4+=("$a4")
	rec objfs_shared fresh_mount_new_tree_s "$n1" "$r" "$a1"
	rec objfs_shared fresh_mount_4x_history_s "$n4" "$r" "$a4"
	read -r a1 a4 n1 n4 < <(fresh "fn$r" ",remote_compact=0")
	bn+=("$a1"); b4+=("$a4")
	rec objfs_shared_uncompacted fresh_mount_new_tree_s "$n1" "$r" "$a1"
	rec objfs_shared_uncompacted fresh_mount_4x_history_s "$n4" "$r" "$a4"
	$RB purge objfs --yes-i-really-really-mean-it >/dev/null 2>&1 || true
done

RBR=$(m "${rb_r[@]}") FR=$(m "${first[@]}")
{
	echo "## Two nodes on one namespace (-o shared), $SIZE GiB, median of $REPS"
	echo
	echo "Two objfs mounts on this machine (two data directories and arenas), one namespace of a single-node cluster (one OSD, bluestore on a sparse file, pool size 1). Per repetition in results.csv."
	echo
	echo "| what | objfs shared | baseline | ratio |"
	echo "|---|---|---|---|"
	echo "| first read on B of a $SIZE GiB file A wrote | $FR MB/s | rados bench seq $RBR MB/s | $(ratio "$FR" "$RBR") |"
	echo "| 8 readers at once on a new B, 1 GiB file, together | $(m "${eight[@]}") MB/s | one reader alone $(m "${one[@]}") MB/s | $(ratio "$(m "${eight[@]}")" "$(m "${one[@]}")") |"
	echo "| A's fsync returned to B's stat seeing it, median / p99 | $(m "${lat50[@]}") / $(m "${lat99[@]}") ms | B's kernel keeps attributes up to 1 s | |"
	echo "| A's close returned to B's open reading the file, median / p99 | $(m "${olat50[@]}") / $(m "${olat99[@]}") ms | close-to-open | |"
	echo "| stats per second on B of 2,000 files nobody changes | $(m "${bst[@]}") | local objfs $(m "${lbst[@]}") | $(ratio "$(m "${bst[@]}")" "$(m "${lbst[@]}")") of local |"
	echo "| creates per second (open O_CREAT, close) | $(m "${cr[@]}") | local objfs $(m "${lcr[@]}"); exclusive remote= $(m "${xcr[@]}") | $(ratio "$(m "${cr[@]}")" "$(m "${lcr[@]}")") of local |"
	echo "| stats per second | $(m "${st[@]}") | local objfs $(m "${lst[@]}"); exclusive remote= $(m "${xst[@]}") | $(ratio "$(m "${st[@]}")" "$(m "${lst[@]}")") of local |"
	echo "| renames per second | $(m "${rn[@]}") | local objfs $(m "${lrn[@]}"); exclusive remote= $(m "${xrn[@]}") | $(ratio "$(m "${rn[@]}")" "$(m "${lrn[@]}")") of local |"
	echo "| a fresh node's mount of 2,000 files, the tree new | $(m "${fn[@]}") s | the log not compacted $(m "${bn[@]}") s | $(ratio "$(m "${fn[@]}")" "$(m "${bn[@]}")") |"
	echo "| ... after 8,000 creates and deletes (4x history) | $(m "${f4[@]}") s | the log not compacted $(m "${b4[@]}") s; the tree new $(m "${fn[@]}") s | $(ratio "$(m "${f4[@]}")" "$(m "${fn[@]}")") of the new tree's |"
} >"$MD"
cat "$MD"
