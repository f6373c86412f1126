#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sealed.sh - the sealed part of scripts/bench: sealed objects read
# through FUSE passthrough, side by side with tmpfs (/dev/shm, and a tmpfs
# mounted huge=within_size), with a second objfs whose per-object files
# have small pages (sealed_pages=small), and with the same object
# unsealed (served by the daemon), in one run:
#   read()        of a resident SIZE GiB object, 1 MiB reads
#   strided mmap  one byte of every page of it, mapped
#   memory        1, 4 and 16 processes map it and read every page: the
#                 growth of page cache and shared memory from before the
#                 object was written (objfs: its arena too), and the Pss
#                 of the mappings added up, each over the object's size
#   seal          objfsctl seal of the freshly written object (written out,
#                 checksummed, durable), beside fsync of it unsealed; and
#                 the first open after (its per-object file made), on
#                 both objfs mounts
#   numpy memmap  the sum of the object as float32
#   torch.load    of a SIZE/2 GiB checkpoint with mmap=True (torch 2.1+;
#                 read() before), every tensor summed, twice each, in the
#                 order sealed, tmpfs, tmpfs, sealed (python3-torch; left
#                 out without it)
#
#   bench/sealed.sh OUT BIN WORK SIZE_GIB REPS
# Appends its figures to OUT/results.csv and writes OUT/sealed.md.
set -euo pipefail
OUT=$1 BIN=$2 W=$3 SIZE=$4 REPS=$5
top=$(cd "$(dirname "$0")/.." && pwd)
CSV=$OUT/results.csv
MD=$OUT/sealed.md
PY=$top/bench/sealed.py
# The python with numpy and torch when there is one (Debian's, where a
# pyenv shim stands first in PATH).
python3() {
	local p
	for p in "$(type -P python3)" /usr/bin/python3; do
		if "$p" -c "import numpy" 2>/dev/null; then "$p" "$@"; return; fi
	done
	command python3 "$@"
}
CTL=$BIN/objfsctl
B=$((SIZE << 30))
rec() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
m() { printf '%s\n' "$@" | median; }
cached() { awk '/^Cached:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo; }
now() { date +%s.%N; }

# Two mounts: the default (per-object files of 2 MiB pages) and
# sealed_pages=small (memfds of 4 KiB pages); and two tmpfs copies: in
# /dev/shm (as mounted: 4 KiB pages) and in a tmpfs of our own mounted
# huge=within_size, the same pages as the default's.
MNT=$W/mnt
SMNT=$W/small
TMP=/dev/shm/objfs-bench-sealed.$$
HUGE=$W/thuge
PID= SPID=
stop_all() {
	set +e
	for d in "$MNT" "$SMNT"; do
		mountpoint -q "$d" && { fusermount3 -u "$d" 2>/dev/null || umount -l "$d"; }
	done
	for p in $PID $SPID; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	mountpoint -q "$HUGE" && umount "$HUGE"
	rm -rf "$TMP"
	for d in data sdata; do
		a=$(head -n 1 "$W/$d/arena" 2>/dev/null)
		case $a in /dev/shm/objfs.*/arena) rm -rf "${a%/arena}" ;; esac
		rm -rf "${W:?}/$d"
	done
}
trap stop_all EXIT
rm -rf "$W/data" "$W/sdata"
mkdir -p "$MNT" "$SMNT" "$TMP" "$HUGE"
mount -t tmpfs -o "huge=within_size,size=$((SIZE + 1))G,mode=0700" tmpfs "$HUGE"
# Room for the object twice (arena, per-object file) within sealed_max.
"$BIN/objfs" -f -o "arena=$((4 * SIZE + 2))G,data=$W/data" "$MNT" >>"$OUT/objfs-sealed.log" 2>&1 &
PID=$!
"$BIN/objfs" -f -o "arena=$((4 * SIZE + 2))G,data=$W/sdata,sealed_pages=small" "$SMNT" >>"$OUT/objfs-sealed.log" 2>&1 &
SPID=$!
for _ in $(seq 300); do mountpoint -q "$MNT" && mountpoint -q "$SMNT" && break; sleep 0.1; done
pt=$(sed -n 's/^passthrough: //p' "$MNT/.objfs-status")
echo "  sealed: passthrough $pt"

declare -A V
add() { V[$1]="${V[$1]:-} $2"; }
for r in $(seq 1 "$REPS"); do
	# Sealed: from before the object is written (its arena pages, then
	# its per-object file, count).
	c0=$(cached)
	dd if=/dev/urandom of="$MNT/obj" bs=1M count=$((SIZE << 10)) status=none
	t=$(now); "$CTL" seal "$MNT/obj" >/dev/null; add seal "$(echo "$(now) - $t" | bc)"
	t=$(now); python3 -c "open('$MNT/obj', 'rb').close()"; add first_open "$(echo "$(now) - $t" | bc)"
	for n in 1 4 16; do
		read -r g p c < <(python3 "$PY" mem "$MNT/obj" "$n")
		add "mem${n}_sealed" "$((c - c0))"
		add "pss${n}_sealed" "$p"
	done
	c1=$(cached)
	cp "$MNT/obj" "$TMP/obj"
	for n in 1 4 16; do
		read -r g p c < <(python3 "$PY" mem "$TMP/obj" "$n")
		add "mem${n}_tmpfs" "$((c - c1))"
		add "pss${n}_tmpfs" "$p"
	done
	# Sized first: huge=within_size gives 2 MiB pages only inside the
	# file's size, which a growing copy would never be.
	truncate -s "$B" "$HUGE/obj"
	dd if="$MNT/obj" of="$HUGE/obj" bs=1M conv=notrunc status=none
	cp "$MNT/obj" "$SMNT/obj"
	"$CTL" seal "$SMNT/obj" >/dev/null
	t=$(now); python3 -c "open('$SMNT/obj', 'rb').close()"; add first_open_small "$(echo "$(now) - $t" | bc)"
	# Twice each, in the order sealed, tmpfs, ..., tmpfs, sealed: this
	# machine's speed drifts within a run.
	for sys in sealed tmpfs thuge small small thuge tmpfs sealed; do
		case $sys in
		sealed) f=$MNT/obj ;; tmpfs) f=$TMP/obj ;;
		thuge) f=$HUGE/obj ;; small) f=$SMNT/obj ;;
		esac
		add "read_$sys" "$(python3 "$PY" read "$f")"
		add "stride_$sys" "$(python3 "$PY" stride "$f")"
		add "numpy_$sys" "$(python3 "$PY" numpy "$f" 2>/dev/null || echo)"
	done
	"$CTL" unseal "$SMNT/obj" >/dev/null
	rm -f "$SMNT/obj" "$HUGE/obj"
	# Unsealed, served by the daemon as before: a fresh object of the
	# same size (fsync beside the seal; its memory: arena and page cache).
	dd if=/dev/urandom of="$MNT/obj2" bs=1M count=$((SIZE << 10)) status=none
	t=$(now); python3 -c "import os; fd = os.open('$MNT/obj2', os.O_RDONLY); os.fsync(fd)"; add fsync "$(echo "$(now) - $t" | bc)"
	# Its memory: the arena's copy (which may reuse pages the sealed
	# object's chunks left) and the page cache the mappings fill.
	res=$(getfattr --only-values -n user.objfs.resident "$MNT/obj2")
	read -r g p c < <(python3 "$PY" mem "$MNT/obj2" 4)
	add mem4_daemon "$((res + g))"
	add read_daemon "$(python3 "$PY" read "$MNT/obj2")"
	add stride_daemon "$(python3 "$PY" stride "$MNT/obj2")"
	rm -f "$MNT/obj2"
	if python3 -c "import torch" 2>/dev/null; then
		# torch before 2.1 loads with read() into new memory, whose
		# first touch costs as much as the read here: each is loaded
		# twice, in the order sealed, tmpfs, tmpfs, sealed.
		python3 "$PY" torch_save "$MNT/ckpt" "$(python3 -c "print($SIZE / 2)")" >/dev/null
		cp "$MNT/ckpt" "$TMP/ckpt"
		"$CTL" seal "$MNT/ckpt" >/dev/null
		python3 -c "open('$MNT/ckpt', 'rb').close()"
		for sys in sealed tmpfs tmpfs sealed; do
			f=$MNT/ckpt; [ $sys = tmpfs ] && f=$TMP/ckpt
			add "torch_$sys" "$(python3 "$PY" torch_load "$f")"
		done
		"$CTL" unseal "$MNT/ckpt" >/dev/null
		rm -f "$MNT/ckpt" "$TMP/ckpt"
	fi
	"$CTL" unseal "$MNT/obj" >/dev/null
	rm -f "$MNT/obj" "$TMP/obj"
	for k in "${!V[@]}"; do
		n=1; case $k in *_sealed|*_tmpfs|*_thuge|*_small) n=2 ;; esac
		case $k in mem*|pss*) n=1 ;; esac
		for v in $(echo "${V[$k]}" | awk -v n=$n '{for (i = NF - n + 1; i <= NF; i++) if (i > 0) print $i}'); do
			rec sealed "$k" "$SIZE" "$r" "$v"
		done
	done
	echo "  sealed: rep $r done"
done

med() { m ${V[$1]:-}; }
gbs() { python3 -c "print(f'{$B / $1 / 1e9:.2f}')"; }
x() { python3 -c "print(f'{$1 / $2:.2f}')"; }
{
	echo "## Sealed objects read without a copy (FUSE passthrough)"
	echo
	echo "One run, medians of $REPS repetitions (reads and loads: two samples each per repetition,"
	echo "sealed and tmpfs alternating); a ${SIZE} GiB object of random bytes; passthrough: $pt."
	echo "tmpfs is a copy of the same bytes in /dev/shm (4 KiB pages), \"tmpfs huge=within_size\" one in a"
	echo "tmpfs mounted so (2 MiB pages, as objfs's per-object files by default); \"sealed_pages=small\""
	echo "is a second objfs whose per-object files are memfds (4 KiB pages); \"unsealed\" is the same"
	echo "object unsealed, served by the daemon as before sealed objects existed."
	echo
	echo "| | objfs sealed | tmpfs | sealed / tmpfs | tmpfs huge=within_size | sealed / it | objfs sealed, sealed_pages=small | small / tmpfs | objfs unsealed |"
	echo "|---|---|---|---|---|---|---|---|---|"
	echo "| read(), 1 MiB reads, GB/s | $(gbs "$(med read_sealed)") | $(gbs "$(med read_tmpfs)") | $(x "$(med read_tmpfs)" "$(med read_sealed)") | $(gbs "$(med read_thuge)") | $(x "$(med read_thuge)" "$(med read_sealed)") | $(gbs "$(med read_small)") | $(x "$(med read_tmpfs)" "$(med read_small)") | $(gbs "$(med read_daemon)") |"
	echo "| strided mmap read (a byte a page), s | $(med stride_sealed) | $(med stride_tmpfs) | $(x "$(med stride_tmpfs)" "$(med stride_sealed)") | $(med stride_thuge) | $(x "$(med stride_thuge)" "$(med stride_sealed)") | $(med stride_small) | $(x "$(med stride_tmpfs)" "$(med stride_small)") | $(med stride_daemon) |"
	if [ -n "$(med numpy_sealed)" ]; then
		echo "| numpy.memmap sum, s | $(med numpy_sealed) | $(med numpy_tmpfs) | $(x "$(med numpy_tmpfs)" "$(med numpy_sealed)") | $(med numpy_thuge) | $(x "$(med numpy_thuge)" "$(med numpy_sealed)") | $(med numpy_small) | $(x "$(med numpy_tmpfs)" "$(med numpy_small)") | |"
	fi
	if [ -n "${V[torch_sealed]:-}" ]; then
		echo "| torch.load ($(python3 -c "import torch; print('torch ' + torch.__version__.split('+')[0] + (', mmap=True' if tuple(map(int, torch.__version__.split('.')[:2])) >= (2, 1) else ', no mmap= before 2.1: read()'))")) of a $(python3 -c "print(f'{$SIZE / 2:g}')") GiB checkpoint and a sum of each tensor, s | $(med torch_sealed) | $(med torch_tmpfs) | $(x "$(med torch_tmpfs)" "$(med torch_sealed)") | | | | | |"
	else
		echo "| torch.load | python3-torch is not installed: left out | | | | | | | |"
	fi
	echo
	echo "Ratios are speeds (tmpfs time / sealed time): 1.00 is tmpfs speed.  READs of sealed"
	echo "objects that reached the daemon in all of it: $(sed -n 's/^sealed_daemon_reads_total: //p' "$MNT/.objfs-status")"
	echo "(passthrough opens: $(sed -n 's/^passthrough_opens_total: //p' "$MNT/.objfs-status"))."
	echo
	echo "| memory, over the object's size | 1 reader | 4 readers | 16 readers |"
	echo "|---|---|---|---|"
	echo "| objfs sealed: page cache + shared memory grown since before the write | $(x "$(med mem1_sealed)" $B) | $(x "$(med mem4_sealed)" $B) | $(x "$(med mem16_sealed)" $B) |"
	echo "| tmpfs: grown since before the copy | $(x "$(med mem1_tmpfs)" $B) | $(x "$(med mem4_tmpfs)" $B) | $(x "$(med mem16_tmpfs)" $B) |"
	echo "| objfs unsealed (as before): its bytes in the arena + the page cache the mappings filled | | $(x "$(med mem4_daemon)" $B) | |"
	echo "| objfs sealed: the mappings' Pss added up | $(x "$(med pss1_sealed)" $B) | $(x "$(med pss4_sealed)" $B) | $(x "$(med pss16_sealed)" $B) |"
	echo "| tmpfs: the mappings' Pss added up | $(x "$(med pss1_tmpfs)" $B) | $(x "$(med pss4_tmpfs)" $B) | $(x "$(med pss16_tmpfs)" $B) |"
	echo
	echo "| sealing the ${SIZE} GiB object just written | s |"
	echo "|---|---|"
	echo "| objfsctl seal (written out, checksummed, durable) | $(med seal) |"
	echo "| fsync of it unsealed (written out, durable), for comparison | $(med fsync) |"
	echo "| the first open after the seal (its per-object file made) | $(med first_open) |"
	echo "| ... with sealed_pages=small (a memfd of 4 KiB pages) | $(med first_open_small) |"
} >"$MD"
cat "$MD"
