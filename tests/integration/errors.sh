#!/bin/bash
# SPDX-License-Identifier: MIT
# A full arena is back-pressure, not an error: writes wait for the spiller
# and succeed; small files take small blocks; deleting gives space back.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount with a 64 MiB arena" start_objfs "$MNT" "$DATA" arena=64M

head -c $((20 << 20)) /dev/urandom >"$T/keep.src"
ok "write a 20 MiB file" cp "$T/keep.src" "$MNT/keep"
ok "writing 100 MiB into a 64 MiB arena succeeds" dd if=/dev/zero of="$MNT/big" bs=1M count=100 status=none
ok "the earlier file is intact" cmp "$T/keep.src" "$MNT/keep"
ok "the big file reads back" cmp -n $((100 << 20)) /dev/zero "$MNT/big"
ok "df reports the backing filesystem" bash -c "
	[ \$(df -k --output=size '$MNT' | tail -n 1) = \$(df -k --output=size '$DATA' | tail -n 1) ]"
ok "delete the big file" rm "$MNT/big"
ok "arena use falls after deleting" bash -c "
	[ \$(awk '/^arena_used_bytes:/ {print \$2}' '$MNT/.objfs-status') -lt $((40 << 20)) ]"

# 10,000 small files fit in an arena far smaller than 10,000 chunks.
ok "10,000 small files in a 64 MiB arena" bash -c "
	mkdir '$MNT/small' && cd '$MNT/small' &&
	for i in \$(seq 1 10000); do printf 'file %d\n' \$i > f\$i || exit 1; done"
ok "small files read back" bash -c "[ \"\$(cat '$MNT/small/f9999')\" = 'file 9999' ]"
ok "10,000 small files take far less than 10,000 chunks" bash -c "
	[ \$(awk '/^resident_bytes:/ {print \$2}' '$MNT/.objfs-status') -lt $((64 << 20)) ]"
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "after remount the 20 MiB file is intact" cmp "$T/keep.src" "$MNT/keep"
ok "after remount small files are intact" bash -c "[ \"\$(cat '$MNT/small/f1234')\" = 'file 1234' ] && [ \$(ls '$MNT/small' | wc -l) = 10000 ]"
ok "unmount" stop_objfs
t_done
