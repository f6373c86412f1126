#!/bin/bash
# SPDX-License-Identifier: MIT
# The layers of doc/design.md, checked on the source (tests/source/layers.py),
# and the checker itself: a copy of the tree with one deliberate violation
# at a time must fail, naming it.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
py="$here/layers.py"

out=$(python3 "$py" "$top")
rc=$?
printf '%s\n' "$out" | grep -v '^1\.\.'
n=$(printf '%s\n' "$out" | grep -c '^\(not \)\?ok ')
if [ "$rc" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok'; then
	n=$((n + 1))
	echo "not ok $n - layers.py ran (exit $rc)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# violate NAME FILE TEXT EXPECT: append TEXT (C) to FILE in a fresh copy of
# the tree; the checker must fail with a line matching EXPECT.
violate() {
	local name=$1 file=$2 text=$3 expect=$4 copy="$tmp/$1" res
	mkdir -p "$copy/doc"
	cp -r "$top/src" "$top/fuse" "$top/meta" "$copy/"
	cp "$top/doc/design.md" "$copy/doc/"
	printf '\n%s\n' "$text" >>"$copy/$file"
	res=$(python3 "$py" "$copy")
	n=$((n + 1))
	if printf '%s\n' "$res" | grep -q "^not ok" &&
	   printf '%s\n' "$res" | grep -Eq "$expect"; then
		echo "ok $n - the check catches $name"
	else
		echo "not ok $n - the check catches $name"
		printf '%s\n' "$res" | grep -A3 '^not ok' | sed 's/^/#   /'
	fi
}

violate "a call up (the arena into the inode table)" src/memory/arena.c \
'int layers_up(struct objfs_store *s);
int
layers_up(struct objfs_store *s)
{
	return objfs_inode_get(s, 1, 0);
}' \
'src/memory/arena.c:[0-9]+: calls objfs_inode_get \(src/bytes/inode.c\): src/memory/ may not call src/bytes/'

violate "a call across a row (the file bytes into the local store)" \
src/bytes/writeout.c \
'int layers_across(struct objfs_backing *b);
int
layers_across(struct objfs_backing *b)
{
	return objfs_backing_sync_dir(b);
}' \
'src/bytes/writeout.c:[0-9]+: calls objfs_backing_sync_dir \(src/local/backing.c\): src/bytes/ may not call src/local/'

violate "a call against a never arrow (the adapter into the index)" \
fuse/session.c \
'int layers_never(void *m);
int
layers_never(void *m)
{
	return objfs_meta_sync(m);
}' \
'fuse/session.c:[0-9]+: calls objfs_meta_sync \(meta/meta.c\): fuse/ may not call meta/'

violate "an include up (the index including the store)" meta/records.c \
'#include "src/store_int.h"' \
'meta/records.c:[0-9]+: includes src/store_int.h: meta/ may not reach src/\*\.h'

violate "a loop inside a folder (a block made by writing)" src/bytes/block.c \
'int layers_loop(struct objfs_store *s, struct objfs_inode *ip);
int
layers_loop(struct objfs_store *s, struct objfs_inode *ip)
{
	return objfs_data_write(s, ip, 0, 0, 0, 0);
}' \
'a loop: .*src/bytes/block.c -> src/bytes/data.c'

echo "1..$n"
