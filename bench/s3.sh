#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/s3.sh - the S3 part of scripts/bench: objfs on an S3 bucket
# (-o remote=s3://...) against rclone (Debian's) to and from the same
# bucket, in one run, on Ceph's S3 gateway (radosgw) on a single-node
# cluster started here (gateway and OSD on this machine's cores):
#   upload       a file of SIZE GiB written into objfs and fsynced (the
#                time until fsync returns: every chunk and the commit in
#                the bucket); rclone copy of the same file into the bucket
#                (defaults, and tuned: 16 transfers of 16 MiB parts)
#   first read   the file read from a fresh mount (empty data directory,
#                empty arena: every byte from the bucket); rclone cat of
#                its copy
#   second read  the same file again on that mount (from the arena), and
#                a local objfs mount (no remote) reading a resident file
#   requests     PUTs, GETs, HEADs per GiB (the status file's counters)
# Each repetition uses a namespace of its own (nothing found there
# already) and removes it after.
#
#   bench/s3.sh OUT BIN WORK SIZE_GIB REPS
# Appends its figures to OUT/results.csv and writes OUT/s3.md.
set -euo pipefail
OUT=$1 BIN=$2 W=$3 SIZE=$4 REPS=$5
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/cluster_lib.sh"
MD=$OUT/s3.md
mkdir -p "$W"

CLUSTER_OSD_GIB=$((SIZE * 3 + 6)) bash "$top/tests/ceph/cluster.sh" start "$C" objfs
bash "$top/tests/ceph/cluster.sh" rgw-start "$C"
set -a
. "$C/rgw.env"
set +a
s3c() { curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
s3c -X PUT "$AWS_ENDPOINT_URL/bench" >/dev/null
RC=$W/rclone.conf
cat >"$RC" <<EOF
[gw]
type = s3
provider = Ceph
access_key_id = $AWS_ACCESS_KEY_ID
secret_access_key = $AWS_SECRET_ACCESS_KEY
endpoint = $AWS_ENDPOINT_URL
region = us-east-1
EOF
# (rclone 1.60 cannot load AWS_CA_BUNDLE on a plain-http endpoint)
rcl() { env -u AWS_CA_BUNDLE rclone --config "$RC" "$@"; }
TUNED=(--transfers 16 --s3-upload-concurrency 16 --s3-chunk-size 16M)

SRC=$W/src
head -c $((SIZE << 30)) /dev/urandom >"$SRC"
mount_at() {	# mount_at MNT DATA OPTS
	mkdir -p "$1"
	"$BIN/objfs" -f -o "arena=$(( SIZE + 2 ))G,data=$2,$3" "$1" 2>>"$OUT/objfs-s3.log" &
	PIDS+=($!); MOUNTS+=("$1")
	wait_mounted "$1"
}
reqs() {	# reqs MNT: "puts gets heads" so far
	echo "$(figure "$1" remote_s3_requests_put) $(figure "$1" remote_s3_requests_get) $(figure "$1" remote_s3_requests_head)"
}

declare -a up obj_first obj_second local_read rc_up rc_up_t rc_read put_gib get_gib head_gib rhead_gib
for r in $(seq "$REPS"); do
	ns=n$r.$$
	# objfs: upload
	mount_at "$W/m" "$W/d$r" "remote_insecure,remote=s3://bench/$ns,remote_timeout=60"
	read -r p0 g0 h0 <<<"$(reqs "$W/m")"
	t0=$(now)
	dd if="$SRC" of="$W/m/f" bs=1M conv=fsync status=none
	t1=$(now)
	read -r p1 g1 h1 <<<"$(reqs "$W/m")"
	up+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	umount_wait "$W/m"
	rm -rf "$W/d$r"
	# objfs: first and second read, from an empty data directory
	mount_at "$W/m" "$W/e$r" "remote_insecure,remote=s3://bench/$ns,remote_timeout=60"
	read -r q0 k0 j0 <<<"$(reqs "$W/m")"
	t0=$(now)
	cat "$W/m/f" >/dev/null
	t1=$(now)
	read -r q1 k1 j1 <<<"$(reqs "$W/m")"
	obj_first+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	t0=$(now)
	cat "$W/m/f" >/dev/null
	t1=$(now)
	obj_second+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	put_gib+=("$(python3 -c "print(f'{($p1 - $p0) / $SIZE:.0f}')")")
	get_gib+=("$(python3 -c "print(f'{($k1 - $k0) / $SIZE:.0f}')")")
	head_gib+=("$(python3 -c "print(f'{($h1 - $h0) / $SIZE:.0f}')")")
	rhead_gib+=("$(python3 -c "print(f'{($j1 - $j0) / $SIZE:.0f}')")")
	umount_wait "$W/m"
	rm -rf "$W/e$r"
	# a local objfs (no remote): a resident file read again
	mount_at "$W/l" "$W/l$r" ""
	cp "$SRC" "$W/l/f"
	cat "$W/l/f" >/dev/null
	t0=$(now)
	cat "$W/l/f" >/dev/null
	t1=$(now)
	local_read+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	umount_wait "$W/l"
	rm -rf "$W/l$r"
	# rclone: upload (defaults, tuned) and read
	t0=$(now)
	rcl copyto "$SRC" "gw:bench/rc$ns/f"
	t1=$(now)
	rc_up+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	t0=$(now)
	rcl copyto "${TUNED[@]}" "$SRC" "gw:bench/rt$ns/f"
	t1=$(now)
	rc_up_t+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	t0=$(now)
	rcl cat "gw:bench/rc$ns/f" >/dev/null
	t1=$(now)
	rc_read+=("$(rate "$((SIZE << 30))" "$(python3 -c "print($t1 - $t0)")")")
	rcl purge "gw:bench/$ns" 2>/dev/null || true
	rcl purge "gw:bench/rc$ns" 2>/dev/null || true
	rcl purge "gw:bench/rt$ns" 2>/dev/null || true
	# The gateway frees a deleted object's tail (rclone's multipart
	# parts) only in its garbage collection, hours later by default: now,
	# else the OSD fills up over the repetitions and every write hangs.
	radosgw-admin -c "$C/ceph.conf" gc process --include-all >/dev/null 2>&1 || true
done
rm -f "$SRC"

U=$(m "${up[@]}") F=$(m "${obj_first[@]}") S=$(m "${obj_second[@]}")
L=$(m "${local_read[@]}") RU=$(m "${rc_up[@]}") RT=$(m "${rc_up_t[@]}")
RR=$(m "${rc_read[@]}")
RB=$RU
[ "$(python3 -c "print(1 if $RT > $RU else 0)")" = 1 ] && RB=$RT
rec s3 upload_mbs "$U" rclone "$RB"
rec s3 first_read_mbs "$F" rclone "$RR"
rec s3 second_read_mbs "$S" local_objfs "$L"
{
	echo "### objfs on an S3 bucket (Ceph's gateway here), against rclone"
	echo
	echo "$SIZE GiB, $REPS repetitions, medians in MB/s; the gateway and the OSD"
	echo "on this machine's two cores with objfs and rclone."
	echo
	echo "| | objfs | rclone, defaults | rclone, 16 x 16 MiB | objfs / best rclone |"
	echo "| --- | --- | --- | --- | --- |"
	echo "| upload (until fsync returned) | $U | $RU | $RT | $(ratio "$U" "$RB") |"
	echo "| first read (empty data directory) | $F | $RR | | $(ratio "$F" "$RR") |"
	echo
	echo "| | objfs on S3 | a local objfs | ratio |"
	echo "| --- | --- | --- | --- |"
	echo "| second read (the arena) | $S | $L | $(ratio "$S" "$L") |"
	echo
	echo "Requests per GiB (objfs): PUT $(m "${put_gib[@]}") and HEAD $(m "${head_gib[@]}") in the"
	echo "upload; GET $(m "${get_gib[@]}") and HEAD $(m "${rhead_gib[@]}") in the first read."
	echo
	echo "Each run: upload ${up[*]}; first ${obj_first[*]}; second"
	echo "${obj_second[*]}; local ${local_read[*]}; rclone up ${rc_up[*]},"
	echo "tuned ${rc_up_t[*]}, read ${rc_read[*]}."
} >"$MD"
cat "$MD"
