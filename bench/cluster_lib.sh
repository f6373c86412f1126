# SPDX-License-Identifier: MIT
# bench/cluster_lib.sh - what bench/remote.sh and bench/shared.sh share: a
# single-node Ceph cluster under $W/ceph, stopped (with every mount and
# daemon the part made) at exit, and the figures' helpers.  Sourced with
# OUT, BIN, W, SIZE and REPS set.
C=$W/ceph
CSV=$OUT/results.csv
GB=$((SIZE << 30))
rec() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
wait_mounted() { for _ in $(seq 1 300); do mountpoint -q "$1" && return 0; sleep 0.1; done; echo "bench: $1 did not mount" >&2; return 1; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
figure() { sed -n "s/^$2: //p" "$1/.objfs-status"; }
PIDS=()
MOUNTS=()
stop_all() {
	set +e
	for m in "${MOUNTS[@]}"; do mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	bash "$top/tests/ceph/cluster.sh" stop "$C"
	rm -rf "$C"	# the OSD's block file: as large as the data written
	for a in "$W"/*/arena; do
		a=$(head -n 1 "$a" 2>/dev/null) || continue
		case $a in /dev/shm/objfs.*/arena) rm -rf "${a%/arena}" ;; esac
	done
}
trap stop_all EXIT

umount_wait() {	# umount_wait MNT: unmount and wait for the daemon
	fusermount3 -u "$1"
	for _ in $(seq 600); do pgrep -f "objfs -f -o .*$1\$" >/dev/null || return 0; sleep 0.1; done
}
rate() { python3 -c "print(f'{$1 / $2 / 1e6:.0f}')"; }	# MB/s
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
m() { printf '%s\n' "$@" | median; }
