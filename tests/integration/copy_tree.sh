#!/bin/bash
# SPDX-License-Identifier: MIT
# cp -a and rsync -aHAX of a real tree into the mount and back out, then
# compared byte for byte and attribute for attribute.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
command -v rsync >/dev/null || { echo "Bail out! rsync is not installed"; exit 1; }
command -v setfattr >/dev/null || { echo "Bail out! attr (setfattr) is not installed"; exit 1; }

SRC=$T/src
mkdir -p "$SRC/a/b/c" "$SRC/small" "$SRC/empty-dir"
for i in $(seq 1 1000); do
	head -c $((i * 37 % 5000 + 1)) /dev/urandom >"$SRC/small/f$i"
done
head -c $((512 << 20)) /dev/urandom >"$SRC/a/big.bin"
echo "deep" >"$SRC/a/b/c/deep.txt"
: >"$SRC/empty-file"
ln -s ../small/f1 "$SRC/a/rel-link"
ln -s /etc/hostname "$SRC/abs-link"
ln -s dangling-target "$SRC/dangling"
ln "$SRC/a/b/c/deep.txt" "$SRC/hardlink-to-deep"
ln "$SRC/small/f2" "$SRC/a/b/hardlink-f2"
chmod 600 "$SRC/small/f3"
chmod 755 "$SRC/small/f4"
chmod 1777 "$SRC/a/b"
chmod 2750 "$SRC/a/b/c"
chown 1234:5678 "$SRC/small/f5"
touch -h -d "2001-02-03 04:05:06.123456789" "$SRC/a/rel-link"
touch -d "1999-12-31 23:59:59.5" "$SRC/small/f6"
setfattr -n user.note -v "hello xattr" "$SRC/small/f7"
setfattr -n user.bin -v 0x00ff00ff "$SRC/a/big.bin"
setfattr -n user.dir -v "on a dir" "$SRC/a/b"
truncate -s 50M "$SRC/sparse"
printf 'tail' | dd of="$SRC/sparse" bs=1 seek=$((30 << 20)) conv=notrunc status=none

# Names, types, modes, owners, sizes (not of directories: filesystems
# differ there), times, link targets and link counts.
listing() {
	{ find . ! -type d -printf '%p %y %m %U %G %s %T@ %l %n\n'
	  find . -type d -printf '%p %y %m %U %G %T@ %n\n'; } | sort
}
export -f listing

ok "mount (2 GiB arena)" start_objfs "$MNT" "$DATA" arena=2G

ok "cp -a into the mount" cp -a "$SRC" "$MNT/cp"
ok "diff -r --no-dereference after cp -a" diff -r --no-dereference "$SRC" "$MNT/cp"
ok "cp -a kept modes, owners, times and links" bash -c "
	cd '$SRC' && listing >'$T/src.list' &&
	cd '$MNT/cp' && listing >'$T/cp.list' &&
	diff '$T/src.list' '$T/cp.list'"
ok "cp -a kept xattrs" bash -c "
	[ \"\$(getfattr --only-values -n user.note '$MNT/cp/small/f7')\" = 'hello xattr' ] &&
	getfattr -e hex -n user.bin '$MNT/cp/a/big.bin' | grep -qx 'user.bin=0x00ff00ff'"
ok "cp -a kept hard links" bash -c "
	[ \$(stat -c %i '$MNT/cp/hardlink-to-deep') = \$(stat -c %i '$MNT/cp/a/b/c/deep.txt') ]"
rm -rf "$MNT/cp"

ok "rsync -aHAX into the mount" rsync -aHAX "$SRC/" "$MNT/rs/"
ok "second rsync -aHAXc reports nothing to do" bash -c "
	out=\$(rsync -aHAXc --itemize-changes --dry-run '$SRC/' '$MNT/rs/'); [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
ok "rsync -aHAX back out" rsync -aHAX "$MNT/rs/" "$T/back/"
ok "the tree that came back equals the source (rsync -c)" bash -c "
	out=\$(rsync -aHAXc --itemize-changes --dry-run '$SRC/' '$T/back/'); [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
ok "the tree that came back equals the source (diff -r)" diff -r --no-dereference "$SRC" "$T/back"
ok "attributes that came back equal the source" bash -c "
	cd '$T/back' && listing >'$T/back.list' &&
	diff '$T/src.list' '$T/back.list'"
ok "xattrs that came back equal the source" bash -c "
	cd '$SRC' && { getfattr -h -R -d -m - . >'$T/src.x'; true; } &&
	cd '$T/back' && { getfattr -h -R -d -m - . >'$T/back.x'; true; } &&
	grep -q user.note '$T/src.x' && diff '$T/src.x' '$T/back.x'"
rm -rf "$T/back"
ok "cp -a back out of the mount" cp -a "$MNT/rs" "$T/back2"
ok "cp -a out equals the source" diff -r --no-dereference "$SRC" "$T/back2"
ok "unmount" stop_objfs
t_done
