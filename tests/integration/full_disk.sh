#!/bin/bash
# SPDX-License-Identifier: MIT
# A full backing disk, on ext4 (a loop-mounted image), where a hole
# punched past a file's end is ignored and a failed fallocate may keep
# part of what it allocated (issue 23, defects 2 and 3):
#   - a fallocate larger than the disk fails with ENOSPC, the file stays
#     as it was, and the disk's free space comes back, before and after
#     the unmount, and the next mount comes up;
#   - once files are deleted from a full disk, creates work again within
#     the daemon's next rounds (it takes back for its index what room
#     there is, not only a whole reserve);
#   - a disk left 100% full (by something else) still mounts: files read
#     and can be deleted;
#   - a new data directory on a 24 MiB disk mounts and takes 12 MiB (the
#     index's journal and reserve leave the data room).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
if ! command -v mkfs.ext4 >/dev/null || [ ! -e /dev/loop-control ]; then
	echo "1..0 # SKIP needs mkfs.ext4 and loop devices"
	exit 0
fi
FS=$T/fs
mkdir -p "$FS"
truncate -s 256M "$T/img"
mkfs.ext4 -q -F -m 0 "$T/img"
mount -o loop "$T/img" "$FS" || { echo "1..0 # SKIP cannot mount a loop device"; exit 0; }
T_MOUNTS+=("$FS")
DATA=$FS/data
OPTS=arena=32M
avail() { df -B1 --output=avail "$FS" | tail -n 1; }

ok "mount on a 256 MiB ext4" start_objfs "$MNT" "$DATA" "$OPTS"
ok "a small file, fsynced" sh -c "head -c 3000000 /dev/urandom >'$T/keep' &&
	dd if='$T/keep' of='$MNT/keep' bs=1M conv=fsync status=none"
free0=$(avail)
fails "fallocate -l 400M fails" fallocate -l 400M "$MNT/f"
ok "  ... with ENOSPC" sh -c "fallocate -l 400M '$MNT/f' 2>&1 | grep -q 'No space left'"
ok "  ... and the file stays empty" test "$(stat -c %s "$MNT/f")" = 0
ok "  ... and takes no blocks" test "$(stat -c %b "$MNT/f")" = 0
free1=$(avail)
ok "  ... and the disk's space comes back ($free0 -> $free1 bytes free)" \
	test "$free1" -ge $((free0 - (1 << 20)))
ok "fallocate -l 100M works" fallocate -l 100M "$MNT/g"
ok "  ... and rm gives it back" rm "$MNT/f" "$MNT/g"
ok "clean unmount" "$CTL" umount "$MNT"
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "the next mount comes up" start_objfs "$MNT" "$DATA" "$OPTS"
ok "  ... and the file reads the same" cmp "$T/keep" "$MNT/keep"

# Fill the disk with 8 MiB files, each fsynced, until ENOSPC.
ok "8 MiB files, fsynced, until the disk is full" python3 - "$MNT" <<'PY'
import errno, os, sys
mnt = sys.argv[1]
for i in range(100):
    block = os.urandom(8 << 20)	# no two alike (dedup)
    try:
        fd = os.open("%s/fill.%d" % (mnt, i), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, block)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print("full after %d files" % i)
        sys.exit(0)
sys.exit("never full")
PY
ok "rm three of them (24 MiB)" rm "$MNT/fill.0" "$MNT/fill.1" "$MNT/fill.2"
ok "creates work again within 10 s" python3 - "$MNT" <<'PY'
import errno, os, sys, time
mnt = sys.argv[1]
for i in range(100):
    try:
        for j in range(20):
            fd = os.open("%s/new.%d" % (mnt, j), os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"x" * 100)
            os.fsync(fd)
            os.close(fd)
        print("created after %.1f s" % (i * 0.1))
        sys.exit(0)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    time.sleep(0.1)
sys.exit("still ENOSPC 10 s after 24 MiB was freed")
PY
ok "clean unmount" "$CTL" umount "$MNT"

# Something else fills the disk to the last block.
dd if=/dev/zero of="$FS/filler" bs=1M status=none 2>/dev/null
dd if=/dev/zero of="$FS/filler2" bs=1k status=none 2>/dev/null
for ((i = 0; i < 1000; i++)); do	# the last blocks, one small file each
	echo x 2>/dev/null >"$FS/tiny.$i" || break
done
ok "the disk is full ($(avail) bytes free)" test "$(avail)" -lt 65536
ok "objfs still mounts on the full disk" start_objfs "$MNT" "$DATA" "$OPTS"
ok "  ... says its arena dies with it" grep -q '^arena: memfd' "$MNT/.objfs-status"
ok "  ... the file reads the same" cmp "$T/keep" "$MNT/keep"
ok "  ... files can be deleted" rm "$MNT/fill.3" "$MNT/fill.4"
ok "  ... and written again" sh -c "head -c 1000000 '$T/keep' >'$MNT/after' && sync '$MNT/after'"
ok "clean unmount" "$CTL" umount "$MNT"
rm -f "$FS/filler" "$FS/filler2" "$FS"/tiny.*
ok "objfsctl check finds nothing wrong" "$CTL" check "$DATA"
ok "a mount with room again" start_objfs "$MNT" "$DATA" "$OPTS"
ok "  ... every file reads the same" sh -c "cmp '$T/keep' '$MNT/keep' && cmp -n 1000000 '$T/keep' '$MNT/after'"
ok "  ... and the arena is shared memory again" sh -c "! grep -q '^arena: memfd' '$MNT/.objfs-status'"
ok "rm everything, clean unmount" sh -c "rm -f '$MNT'/* && '$CTL' umount '$MNT'"
ok "the backing files hold no blocks" test "$(du -s --block-size=1 "$DATA/backing" | cut -f1)" -le 65536

umount "$FS"
truncate -s 24M "$T/small"
mkfs.ext4 -q -F -m 0 "$T/small"
mount -o loop "$T/small" "$FS"
ok "a new data directory on a 24 MiB disk mounts" start_objfs "$MNT" "$FS/data" "$OPTS"
ok "  ... and takes a 12 MiB file, fsynced" sh -c "
	head -c 12582912 /dev/urandom >'$T/twelve' &&
	dd if='$T/twelve' of='$MNT/twelve' bs=1M conv=fsync status=none"
ok "  ... which reads back after a remount" sh -c "
	'$CTL' umount '$MNT' >/dev/null && '$OBJFS_BIN' -o 'data=$FS/data,$OPTS' '$MNT' &&
	cmp '$T/twelve' '$MNT/twelve' && '$CTL' umount '$MNT' >/dev/null"
t_done
