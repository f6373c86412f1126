#!/bin/bash
# SPDX-License-Identifier: MIT
# A full arena: the write that does not fit fails with ENOSPC, nothing
# already written is lost, and space comes back when files are deleted.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount with a 64 MiB arena" start_objfs "$MNT" "$DATA" arena=64M

head -c $((20 << 20)) /dev/urandom >"$T/keep.src"
ok "write a 20 MiB file" cp "$T/keep.src" "$MNT/keep"
: >"$T/big.err"
dd if=/dev/zero of="$MNT/big" bs=1M count=100 2>"$T/big.err"
ok "writing past the arena fails with ENOSPC" grep -q "No space left on device" "$T/big.err"
ok "the earlier file is intact" cmp "$T/keep.src" "$MNT/keep"
ok "the partial file reads back what was written" \
	bash -c "size=\$(stat -c %s '$MNT/big'); [ \$size -gt 0 ] && cmp -n \$size /dev/zero '$MNT/big'"
ok "df shows the arena full" bash -c "[ \$(df -k --output=avail '$MNT' | tail -n 1) -lt 2048 ]"
ok "small creates still work (tails need no chunk)" bash -c "touch '$MNT/empty1' '$MNT/empty2'"
ok "delete the partial file" rm "$MNT/big"
ok "writes work again after deleting" dd if=/dev/zero of="$MNT/again" bs=1M count=30 status=none
ok "unlink returns the space" bash -c "rm '$MNT/again'; [ \$(df -k --output=used '$MNT' | tail -n 1) -lt 25000 ]"

# 10,000 small files fit in an arena far smaller than 10,000 chunks.
ok "10,000 small files in a 64 MiB arena" bash -c "
	mkdir '$MNT/small' && cd '$MNT/small' &&
	for i in \$(seq 1 10000); do printf 'file %d\n' \$i > f\$i || exit 1; done"
ok "small files read back" bash -c "[ \"\$(cat '$MNT/small/f9999')\" = 'file 9999' ]"
ok "unmount" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "after remount the 20 MiB file is intact" cmp "$T/keep.src" "$MNT/keep"
ok "after remount small files are intact" bash -c "[ \"\$(cat '$MNT/small/f1234')\" = 'file 1234' ] && [ \$(ls '$MNT/small' | wc -l) = 10000 ]"
ok "unmount" stop_objfs
t_done
