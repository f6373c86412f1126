#!/bin/bash
# SPDX-License-Identifier: MIT
# The data directory defends itself: an index that is missing, empty, not
# an index, another directory's, or damaged refuses to mount and nothing
# is removed; damaged or missing backing files read as EIO, never zeros;
# objfsctl check finds each of these, and objfsctl recover saves the
# objects, byte for byte, from a damaged index.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
OPTS=arena=64M,chunk=64K

ok "mount" start_objfs "$MNT" "$DATA" "$OPTS"
mkdir -p "$MNT/dir/sub"
head -c $((3 << 20)) /dev/urandom >"$T/big"
cp "$T/big" "$MNT/big"
for i in $(seq 1 20); do echo "small $i" >"$MNT/dir/s$i"; done
# Enough names that the index's trees have branch pages.
mkdir "$MNT/many" && (cd "$MNT/many" && seq -f "name-with-some-length-%04g" 1 600 | xargs touch)
ln -s dir/s1 "$MNT/link"
setfattr -n user.k -v v "$MNT/big"
ok "unmount writes everything out" stop_objfs
cp -a "$DATA/index" "$T/index.good"
backing_sum() { (cd "$DATA/backing" && ls -l --time-style=+ && md5sum ./*) | md5sum; }
before=$(backing_sum)
nback=$(ls "$DATA/backing" | wc -l)
restore() { rm -rf "$DATA/index" && cp -a "$T/index.good" "$DATA/index"; }

ok "objfsctl check: a healthy data directory has no problems" \
	bash -c "'$CTL' check '$DATA' >'$T/check.out' && grep -q '^0 problem' '$T/check.out'"
ok "  ... and it verified every chunk" \
	grep -q "chunks ([0-9]* bytes) verified" "$T/check.out"

# refused mounts: a message, exit 2, nothing touched
refused() {	# refused WHAT: the mount fails with WHAT in its message
	local out=$T/refused.out pid i
	"$OBJFS_BIN" -f -o "data=$DATA,$OPTS" "$MNT" >"$out" 2>&1 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if mountpoint -q "$MNT"; then
			echo "it mounted"; fusermount3 -u "$MNT"; wait "$pid"
			return 1
		fi
		sleep 0.1
	done
	wait "$pid" && { echo "it exited 0"; return 1; }
	grep -q -- "$1" "$out" || { cat "$out"; return 1; }
	[ "$(backing_sum)" = "$before" ] || { echo "backing/ changed"; return 1; }
}
: >"$DATA/index/data.mdb"
ok "an empty index next to $nback backing files refuses to mount" \
	refused "the index is empty, but backing/ holds $nback object file"
restore
rm "$DATA/index/data.mdb"
ok "a missing index refuses to mount, backing files kept" \
	refused "the index is missing"
restore
head -c 65536 /dev/urandom >"$DATA/index/data.mdb"
ok "a file that is not an index refuses to mount" refused "not an index"
restore
# Another data directory's index, with its own journal.
mkdir -p "$T/other" "$T/omnt"
"$OBJFS_BIN" -f -o "data=$T/other,$OPTS" "$T/omnt" >"$T/other.log" 2>&1 &
opid=$!
T_PIDS+=("$opid")
T_MOUNTS+=("$T/omnt")
for ((i = 0; i < 100; i++)); do mountpoint -q "$T/omnt" && break; sleep 0.1; done
echo x >"$T/omnt/x"
fusermount3 -u "$T/omnt"
wait "$opid"
rm -rf "$DATA/index" && cp -a "$T/other/index" "$DATA/index"
ok "another data directory's index refuses to mount" \
	refused "belongs to another data directory"
restore
ok "and with its own index it mounts" start_objfs "$MNT" "$DATA" "$OPTS"
ok "everything is there" cmp "$T/big" "$MNT/big"
ok "objfsctl check refuses while the daemon serves it" \
	bash -c "'$CTL' check '$DATA' >'$T/busy.out'; [ \$? = 2 ] && grep -q 'served by a running objfs' '$T/busy.out'"
ok "unmount" stop_objfs

# Damaged and missing backing files: EIO, never zeros or wrong bytes.
bigino=$(for f in "$DATA/backing"/*; do
	[ "$(stat -c %s "$f")" = $((3 << 20)) ] && basename "$f"; done)
ok "the big file has a backing file of its size" test -n "$bigino"
# One byte flipped (a byte written over it could be the one already
# there: once in 256 runs).
python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
b = os.pread(fd, 1, 1 << 20)
os.pwrite(fd, bytes([b[0] ^ 0xff]), 1 << 20)" "$DATA/backing/$bigino"
ok "objfsctl check finds a damaged chunk" \
	bash -c "'$CTL' check '$DATA' >'$T/c1.out'; [ \$? = 1 ] && grep -q 'do not match their checksum' '$T/c1.out'"
ok "mount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "the damaged chunk reads as EIO" \
	bash -c "! dd if='$MNT/big' of=/dev/null bs=64K skip=16 count=1 2>'$T/dd.err' && grep -q 'Input/output error' '$T/dd.err'"
ok "the chunks around it read back" \
	bash -c "cmp -n $((1 << 20)) '$T/big' '$MNT/big'"
ok "unmount" stop_objfs
cp "$T/big" "$DATA/backing/$bigino"	# undo (a plain copy: written once)
truncate -s $((2 << 20)) "$DATA/backing/$bigino"
ok "objfsctl check finds a truncated backing file" \
	bash -c "'$CTL' check '$DATA' >'$T/c2.out'; [ \$? = 1 ] && grep -q 'short or unreadable' '$T/c2.out'"
mv "$DATA/backing/$bigino" "$T/moved"
ok "objfsctl check finds a missing backing file" \
	bash -c "'$CTL' check '$DATA' >'$T/c3.out'; [ \$? = 1 ] && grep -q 'cannot be opened' '$T/c3.out'"
ok "mount" start_objfs "$MNT" "$DATA" "$OPTS"
ok "a file whose backing file is gone reads as EIO, not zeros" \
	bash -c "! cat '$MNT/big' >/dev/null 2>'$T/cat.err' && grep -q 'Input/output error' '$T/cat.err'"
ok "unmount" stop_objfs
cp "$T/big" "$DATA/backing/$bigino"
ok "with its backing file back, check is clean" "$CTL" check "$DATA"

# A damaged index: refused, and recover saves the objects.  Three kinds
# of damage: both meta pages (LMDB cannot even open the file), every
# branch page (the trees are cut from their leaves), and random pages
# (some records are simply gone: whatever is saved must be right).
cp -a "$DATA/index" "$T/index.good"
before=$(backing_sum)
damage() {	# damage meta|branch|random
	python3 - "$DATA/index/data.mdb" "$1" <<'PY'
import os, random, sys
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR)
size = os.fstat(fd).st_size
random.seed(5)
if how == "meta":
    os.pwrite(fd, random.randbytes(8192), 0)
elif how == "branch":
    n = 0
    for pg in range(2, size // 4096):
        h = os.pread(fd, 16, pg * 4096)
        if int.from_bytes(h[:8], "little") == pg and h[10] & 1:
            os.pwrite(fd, random.randbytes(4096), pg * 4096)
            n += 1
    assert n, "no branch page"
else:
    for pg in range(2, 6):
        os.pwrite(fd, random.randbytes(4096), pg * 4096)
PY
}
for how in meta branch random; do
	restore
	damage "$how"
	ok "damaged $how pages: the mount is refused, no crash" refused "refusing to mount"
	ok "  ... objfsctl check says so" \
		bash -c "'$CTL' check '$DATA' >'$T/c4.out'; [ \$? = 1 ]"
	rm -rf "$T/saved"
	"$CTL" recover "$DATA" "$T/saved" >"$T/recover.out" 2>&1
	sed 's/^/# /' "$T/recover.out"
	ok "  ... objfsctl recover changed nothing in the data directory" \
		test "$(backing_sum)" = "$before"
	# Never wrong bytes: every object saved whole is one that was written.
	ok "  ... every object it saved whole holds bytes that were written" bash -c "
		cd '$T/saved' && for f in [0-9]*; do
			case \$f in *.damaged|*.unverified) continue ;; esac
			case \$(stat -c %s \$f) in
			0) ;;
			$((3 << 20))) cmp -s \$f '$T/big' || exit 1 ;;
			*) grep -qx 'small [0-9]*' \$f || exit 1 ;;
			esac
		done"
	[ "$how" = random ] && continue
	ok "  ... the big file byte for byte, at its name" cmp "$T/big" "$T/saved/tree/big"
	ok "  ... the small ones" bash -c "for i in \$(seq 1 20); do [ \"\$(cat '$T/saved/tree/dir/s'\$i)\" = \"small \$i\" ] || exit 1; done"
	ok "  ... the symlink" test "$(readlink "$T/saved/tree/link")" = dir/s1
	ok "  ... and the names listed" grep -q "/dir/s7" "$T/saved/NAMES"
done
restore
ok "the undamaged index mounts again" start_objfs "$MNT" "$DATA" "$OPTS"
ok "and reads back" cmp "$T/big" "$MNT/big"
ok "unmount" stop_objfs
t_done
