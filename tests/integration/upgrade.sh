#!/bin/bash
# SPDX-License-Identifier: MIT
# A data directory written by objfs 0.1 before crash-safe write-out
# (index schema 1: no record checksums, no chunk slots; made with
# ef51ab7 and kept in tests/fixtures/schema1.tar.gz) is converted at its
# first mount and loses nothing: bytes, names, links, modes, xattrs.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
FIX=$(cd "$(dirname "$0")/../fixtures" && pwd)/schema1.tar.gz
tar -C "$T" -xzf "$FIX"	# makes $T/data
ok "mount a schema 1 data directory" start_objfs "$MNT" "$DATA" arena=32M
ok "it was converted" grep -q "converted from schema 1" "$T/objfs.mnt.log"
ok "a spilled 3 MiB file reads back" bash -c "
	echo '6b03201cd1f14e32c12d0ae8b94b8431  $MNT/big.bin' | md5sum -c --quiet"
ok "a small file and its mode" bash -c "
	[ \"\$(cat '$MNT/dir/hello.txt')\" = hello ] && [ \$(stat -c %a '$MNT/dir/hello.txt') = 640 ]"
ok "a sparse file" bash -c "
	echo '9877a13da38ee615e512a56c4b5cd77a  $MNT/sparse' | md5sum -c --quiet"
ok "a symlink" test "$(readlink "$MNT/link")" = dir/hello.txt
ok "a hard link" test "$(stat -c %h "$MNT/dir/sub/hard")" = 2
ok "an xattr" test "$(getfattr --only-values -n user.tag "$MNT/big.bin")" = v1
ok "new files get new inode numbers and work" bash -c "
	echo new > '$MNT/new' && [ \"\$(cat '$MNT/new')\" = new ]"
ok "rewrite a converted chunk" bash -c "
	printf XYZ | dd of='$MNT/big.bin' bs=1 seek=100000 conv=notrunc status=none"
ok "unmount" stop_objfs
ok "objfsctl check: no problems after the conversion" "$CTL" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" arena=32M
ok "the rewrite is there, the rest as it was" bash -c "
	[ \"\$(dd if='$MNT/big.bin' bs=1 skip=100000 count=3 status=none)\" = XYZ ] &&
	[ \$(stat -c %s '$MNT/big.bin') = $((3 * 1024 * 1024 + 1234)) ]"
ok "unmount" stop_objfs
t_done
