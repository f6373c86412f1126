#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/remote.sh - the remote part of scripts/bench: objfs with -o remote=
# on a single-node Ceph cluster started here (tests/ceph/cluster.sh), beside
# rados bench on the same pool with the same requests in flight (32) and
# objfs's object size (1 MiB chunks), and the same through librados's C
# API (bench/radosflow.c), in one run:
#   upload      write SIZE GiB into the arena, then fsync: the fsync's rate
#               (every chunk sent to the pool) against rados bench write
#   first read  the file read from a new, empty data directory (every chunk
#               fetched from the pool) against rados bench seq
#   second read the same file read again (from the arena), beside a file
#               of a local objfs mount (no remote=) and tmpfs
#   checkpoint  a 1 GiB file saved again with a fifth of its chunks
#               changed: seconds, and bytes sent to the pool
#   fsync       the latency of fsync after a 4 KiB append (median and 99th
#               percentile of 200) against a bare 4 KiB write_full
#
#   bench/remote.sh OUT BIN WORK SIZE_GIB REPS
# Appends its figures to OUT/results.csv and writes OUT/remote.md.
set -euo pipefail
OUT=$1 BIN=$2 W=$3 SIZE=$4 REPS=$5
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/cluster_lib.sh"
MD=$OUT/remote.md

# A block file for the OSD big enough for rados bench's objects and the
# file, removed after each part.
CLUSTER_OSD_GIB=$((3 * SIZE + 8)) bash "$top/tests/ceph/cluster.sh" start "$C" objfs
CONF=$C/ceph.conf
gcc -O2 -Wall "$top/bench/radoslat.c" -lrados -o "$W/radoslat"
gcc -O2 -Wall "$top/bench/radosflow.c" -lrados -o "$W/radosflow"
RB="rados -c $CONF -p objfs"
mount_remote() {	# mount_remote MNT DATA NS
	mkdir -p "$1"
	"$BIN/objfs" -f -o "arena=$((SIZE + 2))G,data=$2,remote=rados:objfs/$3,remote_conf=$CONF" "$1" 2>>"$OUT/objfs-remote.log" &
	PIDS+=($!); MOUNTS+=("$1")
	wait_mounted "$1"
}
# CPU time, to say where a rate's limit is on this machine (the OSD and
# the client share its cores): ticks() of a running process (all its
# threads), cpu_run FILE CMD... runs CMD and writes its CPU seconds to
# FILE, its output passed through.
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
osd_pid() { cat "$C/run/osd.0.pid"; }
cpu_s() { python3 -c "print(f'{($2 - $1) / $HZ:.3f}')"; }
cpu_run() {
	python3 -c '
import resource, subprocess, sys
def used():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
u0 = used()
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write("%.3f\n" % (used() - u0))
sys.exit(rc)' "$@"
}
# rec_cpu WHAT SECONDS...: the sum, per GiB moved
rec_cpu() { local w=$1; shift; rec cpu "$w" "$GB" "$r" "$(python3 -c "import sys; print(f'{sum(map(float, sys.argv[1:])) / $SIZE:.3f}')" "$@")"; }

declare -a up rb_w rb_r c_w c_r first second local_rd tmpfs_rd ck_s ck_b
for ((r = 1; r <= REPS; r++)); do
	# rados bench, the same pool, 32 in flight, objects of 1 MiB, as many
	# bytes as the file.
	o0=$(ticks "$(osd_pid)")
	bw=$(cpu_run "$W/cpu" $RB bench 600 write -b 1M -t 32 --max-objects $((SIZE << 10)) --no-cleanup 2>/dev/null | sed -n 's/^Bandwidth (MB\/sec): *//p')
	o1=$(ticks "$(osd_pid)")
	rec_cpu rados_bench_write_client_s_per_GiB "$(cat "$W/cpu")"
	rec_cpu rados_bench_write_osd_s_per_GiB "$(cpu_s "$o0" "$o1")"
	br=$(cpu_run "$W/cpu" $RB bench 600 seq -t 32 2>/dev/null | sed -n 's/^Bandwidth (MB\/sec): *//p')
	o2=$(ticks "$(osd_pid)")
	# rados bench says "MB/sec" and means MiB/s (its total bytes over
	# 2^20): in MB/s, as every other rate here.
	bw=$(python3 -c "print(f'{$bw * 1.048576:.0f}')")
	br=$(python3 -c "print(f'{$br * 1.048576:.0f}')")
	rec_cpu rados_bench_seq_client_s_per_GiB "$(cat "$W/cpu")"
	rec_cpu rados_bench_seq_osd_s_per_GiB "$(cpu_s "$o1" "$o2")"
	$RB cleanup >/dev/null 2>&1
	rb_w+=("$bw"); rb_r+=("$br")
	# The same through librados's C API, objfs's only way in.
	cw=$("$W/radosflow" "$CONF" objfs flow write $((SIZE << 10)) 32)
	cr=$("$W/radosflow" "$CONF" objfs flow read $((SIZE << 10)) 32)
	"$W/radosflow" "$CONF" objfs flow clean $((SIZE << 10)) 32
	c_w+=("$cw"); c_r+=("$cr")
	rec radosflow write_MBps 1048576 "$r" "$cw"
	rec radosflow read_MBps 1048576 "$r" "$cr"
	rec rados_bench write_MBps 1048576 "$r" "$bw"
	rec rados_bench seq_MBps 1048576 "$r" "$br"

	# Upload: write into the arena, then fsync sends every chunk.
	ns=up$r
	mount_remote "$W/rmnt" "$W/rdata$r" "$ns"
	"$BIN/bench/benchio" write "$W/rmnt/blob" "$GB" >/dev/null
	d0=$(ticks "${PIDS[-1]}") o0=$(ticks "$(osd_pid)")
	t0=$(now)
	python3 -c "import os; fd = os.open('$W/rmnt/blob', os.O_RDONLY); os.fsync(fd)"
	s=$(python3 -c "print($(now) - $t0)")
	rec_cpu objfs_upload_client_s_per_GiB "$(cpu_s "$d0" "$(ticks "${PIDS[-1]}")")"
	rec_cpu objfs_upload_osd_s_per_GiB "$(cpu_s "$o0" "$(ticks "$(osd_pid)")")"
	up+=("$(rate "$GB" "$s")")
	rec objfs_remote upload_fsync_s "$GB" "$r" "$s"
	umount_wait "$W/rmnt"
	# First read: a new data directory, every chunk fetched.
	mount_remote "$W/rmnt" "$W/rdata${r}b" "$ns"
	drop
	d0=$(ticks "${PIDS[-1]}") o0=$(ticks "$(osd_pid)")
	s=$(cpu_run "$W/cpu" "$BIN/bench/benchio" read "$W/rmnt/blob" "$GB" | cut -d' ' -f1)
	rec_cpu objfs_first_read_client_s_per_GiB "$(cpu_s "$d0" "$(ticks "${PIDS[-1]}")")" "$(cat "$W/cpu")"
	rec_cpu objfs_first_read_osd_s_per_GiB "$(cpu_s "$o0" "$(ticks "$(osd_pid)")")"
	first+=("$(rate "$GB" "$s")")
	rec objfs_remote first_read_s "$GB" "$r" "$s"
	# Second read: from the arena.
	s=$("$BIN/bench/benchio" read "$W/rmnt/blob" "$GB" | cut -d' ' -f1)
	second+=("$(rate "$GB" "$s")")
	rec objfs_remote second_read_s "$GB" "$r" "$s"
	# A checkpoint with 80% of its chunks in the pool already.
	"$BIN/bench/benchio" write "$W/rmnt/ck1" $((1 << 30)) fsync >/dev/null
	b0=$(figure "$W/rmnt" remote_upload_bytes)
	python3 - "$W/rmnt/ck1" "$W/rmnt/ck2" <<'PY'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f, open(dst, "wb") as g:
    i = 0
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        if i % 5 == 0:      # a fifth of the chunks change
            b = bytes([b[0] ^ 0xff]) + b[1:]
        g.write(b)
        i += 1
PY
	t0=$(now)
	python3 -c "import os; fd = os.open('$W/rmnt/ck2', os.O_RDONLY); os.fsync(fd)"
	s=$(python3 -c "print($(now) - $t0)")
	b=$(( $(figure "$W/rmnt" remote_upload_bytes) - b0 ))
	ck_s+=("$s"); ck_b+=("$b")
	rec objfs_remote checkpoint80_s $((1 << 30)) "$r" "$s"
	rec objfs_remote checkpoint80_uploaded_bytes $((1 << 30)) "$r" "$b"
	# fsync of a 4 KiB append, against a bare write_full.
	lat=$(python3 - "$W/rmnt/log" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
buf = os.urandom(4096)
t = []
for i in range(200):
    os.write(fd, buf)
    a = time.monotonic()
    os.fsync(fd)
    t.append((time.monotonic() - a) * 1e6)
t.sort()
print("%d %d" % (t[len(t) // 2], t[len(t) * 99 // 100]))
PY
)
	rec objfs_remote fsync_4k_append_p50_us 4096 "$r" "${lat% *}"
	rec objfs_remote fsync_4k_append_p99_us 4096 "$r" "${lat#* }"
	bl=$("$W/radoslat" "$CONF" objfs "lat$r" 200)
	rec rados write_full_4k_p50_us 4096 "$r" "${bl% *}"
	rec rados write_full_4k_p99_us 4096 "$r" "${bl#* }"
	umount_wait "$W/rmnt"
	rm -rf "$W/rdata$r" "$W/rdata${r}b"
	# The same file on a local objfs and on tmpfs, read twice.
	mkdir -p "$W/lmnt" "$W/t"
	"$BIN/objfs" -f -o "arena=$((SIZE + 2))G,data=$W/ldata" "$W/lmnt" 2>>"$OUT/objfs-remote.log" &
	PIDS+=($!); MOUNTS+=("$W/lmnt")
	wait_mounted "$W/lmnt"
	"$BIN/bench/benchio" write "$W/lmnt/blob" "$GB" >/dev/null
	"$BIN/bench/benchio" read "$W/lmnt/blob" "$GB" >/dev/null
	s=$("$BIN/bench/benchio" read "$W/lmnt/blob" "$GB" | cut -d' ' -f1)
	local_rd+=("$(rate "$GB" "$s")")
	rec objfs_local second_read_s "$GB" "$r" "$s"
	umount_wait "$W/lmnt"
	rm -rf "$W/ldata"
	mount -t tmpfs -o size=$((SIZE + 1))G bench-remote "$W/t"; MOUNTS+=("$W/t")
	"$BIN/bench/benchio" write "$W/t/blob" "$GB" >/dev/null
	s=$("$BIN/bench/benchio" read "$W/t/blob" "$GB" | cut -d' ' -f1)
	tmpfs_rd+=("$(rate "$GB" "$s")")
	rec tmpfs read_s "$GB" "$r" "$s"
	umount "$W/t"
	# The next repetition starts from an empty pool.
	$RB purge objfs --yes-i-really-really-mean-it >/dev/null 2>&1 || true
done

UP=$(m "${up[@]}") RBW=$(m "${rb_w[@]}") RBR=$(m "${rb_r[@]}") FR=$(m "${first[@]}")
CW=$(m "${c_w[@]}") CR=$(m "${c_r[@]}")
SR=$(m "${second[@]}") LR=$(m "${local_rd[@]}") TR=$(m "${tmpfs_rd[@]}")
CKS=$(m "${ck_s[@]}") CKB=$(m "${ck_b[@]}")
p() { awk -F, -v s="$1" -v t="$2" '$1 == s && $2 == t {print $5}' "$CSV" | median; }
{
	echo "## Remote: a Ceph pool (-o remote=), $SIZE GiB, median of $REPS"
	echo
	echo "A single-node cluster on this machine (one OSD, bluestore on a sparse file, pool size 1); rados bench with 32 requests in flight and 1 MiB objects: objfs's chunk size, its window of puts and its fetches ahead."
	echo
	echo "| what | objfs | baseline | ratio |"
	echo "|---|---|---|---|"
	echo "| upload: fsync of a $SIZE GiB file written into the arena | $UP MB/s | rados bench write $RBW MB/s | $(ratio "$UP" "$RBW") |"
	echo "| | | the C API (radosflow) write $CW MB/s | $(ratio "$UP" "$CW") |"
	echo "| first read, empty data directory | $FR MB/s | rados bench seq $RBR MB/s | $(ratio "$FR" "$RBR") |"
	echo "| | | the C API (radosflow) read $CR MB/s | $(ratio "$FR" "$CR") |"
	echo "| second read (from the arena) | $SR MB/s | local objfs $LR MB/s; tmpfs $TR MB/s | $(ratio "$SR" "$LR") of local |"
	echo "| checkpoint of 1 GiB, 80% of its chunks in the pool | $(python3 -c "print(f'{$CKS:.2f}')") s, $((CKB >> 20)) MiB sent | 1024 MiB if nothing were found | $(ratio "$CKB" $((1 << 30))) of the bytes |"
	echo "| fsync after a 4 KiB append, median / p99 | $(p objfs_remote fsync_4k_append_p50_us) / $(p objfs_remote fsync_4k_append_p99_us) us | write_full of 4 KiB $(p rados write_full_4k_p50_us) / $(p rados write_full_4k_p99_us) us | $(ratio "$(p objfs_remote fsync_4k_append_p50_us)" "$(p rados write_full_4k_p50_us)") |"
	c() { p cpu "$1"; }
	echo
	echo "CPU seconds per GiB moved, all threads (the client: rados bench, or the objfs daemon and the process reading; the OSD), and the cores busy at the median rate: near $(getconf _NPROCESSORS_ONLN), the rate is the CPU's."
	echo
	echo "| what | client | OSD | cores busy |"
	echo "|---|---|---|---|"
	busy() { python3 -c "print(f'{($1 + $2) * $3 * 1e6 / 2**30:.2f}')"; }
	echo "| rados bench write | $(c rados_bench_write_client_s_per_GiB) | $(c rados_bench_write_osd_s_per_GiB) | $(busy "$(c rados_bench_write_client_s_per_GiB)" "$(c rados_bench_write_osd_s_per_GiB)" "$RBW") |"
	echo "| objfs upload | $(c objfs_upload_client_s_per_GiB) | $(c objfs_upload_osd_s_per_GiB) | $(busy "$(c objfs_upload_client_s_per_GiB)" "$(c objfs_upload_osd_s_per_GiB)" "$UP") |"
	echo "| rados bench seq | $(c rados_bench_seq_client_s_per_GiB) | $(c rados_bench_seq_osd_s_per_GiB) | $(busy "$(c rados_bench_seq_client_s_per_GiB)" "$(c rados_bench_seq_osd_s_per_GiB)" "$RBR") |"
	echo "| objfs first read | $(c objfs_first_read_client_s_per_GiB) | $(c objfs_first_read_osd_s_per_GiB) | $(busy "$(c objfs_first_read_client_s_per_GiB)" "$(c objfs_first_read_osd_s_per_GiB)" "$FR") |"
} >"$MD"
cat "$MD"
