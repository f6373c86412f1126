#!/bin/bash
# SPDX-License-Identifier: MIT
# The backing directory on a small filesystem: writing past it fails with
# ENOSPC, every earlier byte stays readable, and after deleting files,
# writing works again.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
mkdir -p "$DATA/backing"
chmod 700 "$DATA" "$DATA/backing"
mount -t tmpfs -o size=256m,mode=0700 objfs-test-backing "$DATA/backing"
T_MOUNTS+=("$DATA/backing")
ok "mount with a 64 MiB arena over a 256 MiB backing filesystem" \
	start_objfs "$MNT" "$DATA" arena=64M

for f in a b; do head -c $((100 << 20)) /dev/urandom >"$T/$f"; done
ok "write 100 MiB" cp "$T/a" "$MNT/a"
ok "write another 100 MiB" cp "$T/b" "$MNT/b"
dd if=/dev/urandom of="$MNT/c" bs=1M count=300 2>"$T/c.err"
ok "writing past the backing filesystem fails with ENOSPC" grep -q "No space left on device" "$T/c.err"
ok "the first file compares equal" cmp "$T/a" "$MNT/a"
ok "the second file compares equal" cmp "$T/b" "$MNT/b"
ok "the failed file reads without error up to its size" bash -c "cat '$MNT/c' > /dev/null"
ok "delete the failed file and the second one" rm "$MNT/c" "$MNT/b"
ok "writing works again" bash -c "head -c $((120 << 20)) /dev/urandom > '$T/d' && cp '$T/d' '$MNT/d' && cmp '$T/d' '$MNT/d'"
ok "the first file is still equal" cmp "$T/a" "$MNT/a"
ok "unmount writes everything out" stop_objfs
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "after remount both files compare equal" bash -c "cmp '$T/a' '$MNT/a' && cmp '$T/d' '$MNT/d'"
ok "unmount" stop_objfs
umount "$DATA/backing"
t_done
