#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/deleg.sh - the delegation part of scripts/bench: namespace changes
# on a shared tree (-o shared) with directories held by the node working
# in them (-o remote_batch=50) and without (every change in the log when
# its call returns), against a local objfs mount (no remote=), in one
# run, on a single-node Ceph cluster started here:
#   one process       creates (open O_CREAT and close), stats and renames
#                     of 1,000 files per second on node A; files of 100
#                     bytes (create, write, close) per second, 300
#   four processes    two on A, two on B, each creating 1,000 files in a
#                     directory of its own: creates per second together
#                     (the local baseline: four processes on one mount)
#   one directory     A and B, one process each, 500 creates each in the
#                     same directory at once: what contention costs
#   close to open     A writes and closes a new file in a directory it
#                     holds; B opens and reads it (B recalls the
#                     directory): the time from A's close returning
#
#   bench/deleg.sh OUT BIN WORK REPS
# Appends its figures to OUT/results.csv and writes OUT/deleg.md.
set -euo pipefail
OUT=$1 BIN=$2 W=$3 REPS=$4 SIZE=1
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/cluster_lib.sh"
MD=$OUT/deleg.md

CLUSTER_OSD_GIB=8 bash "$top/tests/ceph/cluster.sh" start "$C" objfs
CONF=$C/ceph.conf
mount_ns() {	# mount_ns MNT DATA OPTS
	mkdir -p "$1"
	"$BIN/objfs" -f -o "arena=1G,data=$2,$3" "$1" 2>>"$OUT/objfs-deleg.log" &
	PIDS+=($!); MOUNTS+=("$1")
	wait_mounted "$1"
}
shared() { echo "remote=rados:objfs/$1,remote_conf=$CONF,shared$2"; }

# one DIR: "creates stats renames small" per second of 1,000 files in
# DIR, and of 300 files of 100 bytes each (create, write, close)
one() {
	python3 - "$1" <<'PY'
import os, sys, time
d, n = sys.argv[1], 1000
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
t = time.monotonic()
for i in range(300):
    with open("%s/s%d" % (d, i), "wb") as f:
        f.write(os.urandom(100))
m = 300 / (time.monotonic() - t)
print("%.0f %.0f %.0f %.0f" % (c, s, r, m))
PY
}

# many N DIR...: a process for each DIR creating N files in it, all at
# once: creates per second together
many() {
	python3 - "$@" <<'PY'
import os, sys, time
n, dirs = int(sys.argv[1]), sys.argv[2:]
for d in dirs:
    os.makedirs(d, exist_ok=True)
start = time.time() + 0.3
pids = []
for k, d in enumerate(dirs):
    pid = os.fork()
    if pid == 0:
        time.sleep(max(0, start - time.time()))
        for i in range(n):
            os.close(os.open("%s/p%d_%d" % (d, k, i),
                             os.O_CREAT | os.O_WRONLY, 0o644))
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
print("%.0f" % (n * len(dirs) / (time.time() - start)))
PY
}

# small8 MNT: 8 processes on one mount, each making 200 files of 100
# bytes (create, write, close) in a directory of its own, all at once:
# "files-per-second records-per-file" (records: the pool's log records
# the mount put, none on a local mount; group commit shares them)
small8() {
	local a0 out
	a0=$(figure "$1" remote_log_appended)
	out=$(python3 - "$1" <<'PY'
import os, sys, time
m = sys.argv[1]
dirs = ['%s/s8/%d' % (m, k) for k in range(8)]
for d in dirs:
    os.makedirs(d, exist_ok=True)
start = time.time() + 0.3
pids = []
for k, d in enumerate(dirs):
    pid = os.fork()
    if pid == 0:
        time.sleep(max(0, start - time.time()))
        for i in range(200):
            with open('%s/f%d' % (d, i), 'wb') as f:
                f.write(os.urandom(100))
        os._exit(0)
    pids.append(pid)
bad = 0
for p in pids:
    bad |= os.waitpid(p, 0)[1]
if bad:
    sys.exit('small8: a process failed')
print("%.0f" % (1600 / (time.time() - start)))
PY
) || { echo "0 -"; return; }
	if [ -n "$a0" ]; then
		echo "$out $(python3 -c "print('%.2f' % (($(figure "$1" remote_log_appended) - $a0) / 1600))")"
	else
		echo "$out -"
	fi
}

# c2o A B: A's close to B's open reading, median and p99 of 100 (ms)
c2o() {
	python3 - "$1" "$2" <<'PY'
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
    time.sleep(0.02)	# A takes the directory again (its backoff aside)
t.sort()
print("%.1f %.1f" % (t[len(t) // 2], t[len(t) * 99 // 100]))
PY
}

declare -a dc ds dr nc ns nr lc lst lr d4 n4 l4 d1 n1 o50 o99 dsm nsm lsm
declare -a d8 n8 l8 d8r n8r
for ((r = 1; r <= REPS; r++)); do
	for mode in batch none; do
		if [ "$mode" = batch ]; then o=",remote_batch=50"; else o=""; fi
		mount_ns "$W/a" "$W/a$mode$r" "$(shared "$mode$r" "$o")"
		mount_ns "$W/b" "$W/b$mode$r" "$(shared "$mode$r" "$o")"
		read -r c s n sm < <(one "$W/a/one")
		rec "objfs_shared_$mode" creates_per_s 0 "$r" "$c"
		rec "objfs_shared_$mode" stats_per_s 0 "$r" "$s"
		rec "objfs_shared_$mode" renames_per_s 0 "$r" "$n"
		rec "objfs_shared_$mode" small_files_per_s 0 "$r" "$sm"
		f4=$(many 1000 "$W/a/p0" "$W/a/p1" "$W/b/p2" "$W/b/p3")
		rec "objfs_shared_$mode" creates_4procs_2nodes_per_s 0 "$r" "$f4"
		read -r s8 s8r < <(small8 "$W/a")
		rec "objfs_shared_$mode" small_files_8procs_per_s 100 "$r" "$s8"
		rec "objfs_shared_$mode" small_files_8procs_records_per_file 100 "$r" "$s8r"
		python3 -c "import os; os.makedirs('$W/a/same', exist_ok=True)"
		"$BIN/objfsctl" catch-up "$W/b"
		f1=$(many 500 "$W/a/same" "$W/b/same")
		rec "objfs_shared_$mode" creates_2nodes_one_dir_per_s 0 "$r" "$f1"
		if [ "$mode" = batch ]; then
			dc+=("$c"); ds+=("$s"); dr+=("$n"); d4+=("$f4"); d1+=("$f1")
			dsm+=("$sm"); d8+=("$s8"); d8r+=("$s8r")
			lat=$(c2o "$W/a" "$W/b")
			o50+=("${lat% *}"); o99+=("${lat#* }")
			rec objfs_shared_batch close_to_open_p50_ms 100 "$r" "${lat% *}"
			rec objfs_shared_batch close_to_open_p99_ms 100 "$r" "${lat#* }"
		else
			nc+=("$c"); ns+=("$s"); nr+=("$n"); n4+=("$f4"); n1+=("$f1")
			nsm+=("$sm"); n8+=("$s8"); n8r+=("$s8r")
		fi
		umount_wait "$W/b"
		umount_wait "$W/a"
	done
	mount_ns "$W/l" "$W/local$r" "dedup=on"
	read -r c s n sm < <(one "$W/l/one")
	lc+=("$c"); lst+=("$s"); lr+=("$n")
	rec objfs_local creates_per_s 0 "$r" "$c"
	rec objfs_local stats_per_s 0 "$r" "$s"
	rec objfs_local renames_per_s 0 "$r" "$n"
	lsm+=("$sm")
	rec objfs_local small_files_per_s 0 "$r" "$sm"
	f4=$(many 1000 "$W/l/p0" "$W/l/p1" "$W/l/p2" "$W/l/p3")
	l4+=("$f4")
	rec objfs_local creates_4procs_per_s 0 "$r" "$f4"
	read -r s8 s8r < <(small8 "$W/l")
	l8+=("$s8")
	rec objfs_local small_files_8procs_per_s 100 "$r" "$s8"
	umount_wait "$W/l"
	rm -rf "$W"/a*"$r" "$W"/b*"$r" "$W/local$r"
	rados -c "$CONF" purge objfs --yes-i-really-really-mean-it >/dev/null 2>&1 || true
done

{
	echo "## Namespace changes on a shared tree: directories held (-o remote_batch=50) and not, median of $REPS"
	echo
	echo "Two objfs mounts on this machine (two nodes: data directories and arenas of their own), one namespace of a single-node cluster; a local objfs mount (no remote=) as the baseline, in the same run. Per repetition in results.csv."
	echo
	echo "| what | held (remote_batch=50) | not held (the default) | local objfs | held / local |"
	echo "|---|---|---|---|---|"
	echo "| creates per second, one process | $(m "${dc[@]}") | $(m "${nc[@]}") | $(m "${lc[@]}") | $(ratio "$(m "${dc[@]}")" "$(m "${lc[@]}")") |"
	echo "| renames per second, one process | $(m "${dr[@]}") | $(m "${nr[@]}") | $(m "${lr[@]}") | $(ratio "$(m "${dr[@]}")" "$(m "${lr[@]}")") |"
	echo "| stats per second, one process | $(m "${ds[@]}") | $(m "${ns[@]}") | $(m "${lst[@]}") | $(ratio "$(m "${ds[@]}")" "$(m "${lst[@]}")") |"
	echo "| files of 100 bytes made per second (create, write, close), one process | $(m "${dsm[@]}") | $(m "${nsm[@]}") | $(m "${lsm[@]}") | $(ratio "$(m "${dsm[@]}")" "$(m "${lsm[@]}")") |"
	echo "| files of 100 bytes made per second, 8 processes on one node, a directory each | $(m "${d8[@]}") | $(m "${n8[@]}") | $(m "${l8[@]}") | $(ratio "$(m "${d8[@]}")" "$(m "${l8[@]}")") |"
	echo "| ... the pool's log records put per file (group commit: closes share them) | $(m "${d8r[@]}") | $(m "${n8r[@]}") | | |"
	echo "| creates per second, 4 processes on 2 nodes, a directory each | $(m "${d4[@]}") | $(m "${n4[@]}") | 4 processes on one mount $(m "${l4[@]}") | $(ratio "$(m "${d4[@]}")" "$(m "${l4[@]}")") |"
	echo "| creates per second, 2 nodes in one directory at once | $(m "${d1[@]}") | $(m "${n1[@]}") | | |"
	echo "| A's close returned to B's open reading the file, median / p99 | $(m "${o50[@]}") / $(m "${o99[@]}") ms | | | |"
} >"$MD"
cat "$MD"
