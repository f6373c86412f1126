#!/bin/bash
# SPDX-License-Identifier: MIT
# The arena that outlives its daemon.  A SIGKILLed daemon loses nothing
# written, fsynced or not: files inside and larger than the arena, some
# spilled, some open, and a write in flight (which leaves a mix of its
# own bytes and the old ones, never another file's).  An arena that is
# gone (a restart) or not ours is not adopted, and the mount says so.
# -o keep_arena unmounts at once and the next mount takes the arena.
# Another user can neither read the arena nor slip one in.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ARENA=arena=64M

killit() {
	kill -KILL "$OBJFS_PID"
	wait "$OBJFS_PID" 2>/dev/null
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
}
status() { sed -n "s/^$1: //p" "$MNT/.objfs-status"; }

# 1. Writes without fsync, then SIGKILL.
ok "mount" start_objfs "$MNT" "$DATA" "$ARENA"
arena=$(head -n 1 "$DATA/arena")
ok "the arena is a file of its own in a private directory of /dev/shm" bash -c "
	[[ '$arena' == /dev/shm/objfs.??????/arena ]] &&
	[ \$(stat -c %a '$arena') = 600 ] && [ \$(stat -c %a '${arena%/arena}') = 700 ]"
head -c $((200 << 20)) /dev/urandom >"$T/big"	# 3x the arena: spills
head -c $((5 << 20)) /dev/urandom >"$T/mid"
cp "$T/big" "$MNT/big"
cp "$T/mid" "$MNT/mid"
for i in $(seq 1 50); do echo "small $i" >"$MNT/s$i"; done
# Rewrites of a file that was fsynced, not fsynced again.
dd if="$T/mid" of="$MNT/rw" bs=1M conv=fsync status=none
python3 - "$MNT/rw" "$T/rw" "$T/mid" <<'PY'
import os, random, sys
ref = bytearray(open(sys.argv[3], "rb").read())
fd = os.open(sys.argv[1], os.O_WRONLY)
r = random.Random(7)
for _ in range(200):
    off, n = r.randrange(len(ref)), r.randrange(1, 20000)
    b = r.randbytes(n)
    os.pwrite(fd, b, off)
    ref[off:off + n] = b
os.ftruncate(fd, len(ref) - 12345)
del ref[len(ref) - 12345:]
os.close(fd)
open(sys.argv[2], "wb").write(ref)
PY
# A file held open (and written) while the daemon dies.
exec 7>"$MNT/open"
echo "written through an open descriptor" >&7
ok "some of it is dirty in the arena, some spilled" bash -c "
	[ $(status dirty_bytes) -gt 0 ] && [ $(status written_out_bytes_total) -gt 0 ]"
killit
exec 7>&-
ok "remount after SIGKILL" start_objfs "$MNT" "$DATA" "$ARENA"
ok "the mount says it adopted the arena" \
	grep -q "adopted the arena the last daemon left: [1-9][0-9]* files" "$T/objfs.mnt.log"
ok "and the status file too" grep -q "^arena: adopted $arena" "$MNT/.objfs-status"
ok "the file 3x the arena is whole" cmp "$T/big" "$MNT/big"
ok "the 5 MiB file is whole" cmp "$T/mid" "$MNT/mid"
ok "the 50 small files are whole" bash -c '
	for i in $(seq 1 50); do [ "$(cat '"$MNT"'/s$i)" = "small $i" ] || exit 1; done'
ok "200 rewrites and a truncation of a fsynced file, not fsynced again, are all there" \
	cmp "$T/rw" "$MNT/rw"
ok "the file that was open has what was written to it" \
	test "$(cat "$MNT/open")" = "written through an open descriptor"
ok "unmount writes it all out" stop_objfs
ok "a clean unmount removes the arena and DATA/arena" bash -c "
	[ ! -e '$arena' ] && [ ! -e '${arena%/arena}' ] && [ ! -e '$DATA/arena' ]"
ok "objfsctl check: every record and checksum verifies" \
	"$(dirname "$OBJFS_BIN")/objfsctl" check "$DATA"
ok "remount" start_objfs "$MNT" "$DATA" "$ARENA"
ok "everything is there, from disk" bash -c "
	cmp '$T/big' '$MNT/big' && cmp '$T/mid' '$MNT/mid' && cmp '$T/rw' '$MNT/rw'"

# 2. A write in flight at the kill: each byte of the file being written
#    is its new or its old one, never another file's (the kill may come
#    in the middle of copying a write into the arena: a block torn
#    between its two versions, seen 1 run in many under ASan); every
#    write that returned is there.
python3 - "$MNT/inflight" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for b in range(8192):			# 32 MiB of "old" blocks
    os.write(fd, b"O%07d" % b * 512)
os.fsync(fd)
os.close(fd)
PY
python3 - "$MNT/inflight" "$T/acked" <<'PY' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
ack = open(sys.argv[2], "w")
import time
for b in range(0, 8192, 64):		# new blocks, slowly: killed mid-way
    os.pwrite(fd, b"".join(b"N%07d" % i * 512 for i in range(b, b + 64)),
              b * 4096)
    ack.seek(0); ack.write("%d\n" % (b + 64)); ack.flush()
    time.sleep(0.02)
PY
writer=$!
sleep 1.5
killit
wait "$writer" 2>/dev/null
ok "remount after SIGKILL in mid-write" start_objfs "$MNT" "$DATA" "$ARENA"
ok "blocks written are new, the rest byte for byte new or old, none another file's" \
	python3 - "$MNT/inflight" "$T/acked" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
acked = int(open(sys.argv[2]).read())
torn = 0
assert len(data) == 8192 * 4096, len(data)
for b in range(8192):
    blk = data[b * 4096:(b + 1) * 4096]
    new, old = b"N%07d" % b * 512, b"O%07d" % b * 512
    if b < acked:
        assert blk == new, "block %d: acknowledged, not there" % b
    elif blk not in (new, old):
        # The kill came in the middle of copying the write into the
        # arena: a write can tear, but only into its own bytes.
        bad = [i for i in range(4096) if blk[i] not in (new[i], old[i])]
        assert not bad, "block %d holds foreign bytes at %d..: %r" % (
            b, bad[0], blk[bad[0]:bad[0] + 16])
        torn += 1
assert 0 < acked < 8192, "the kill was not in mid-write: %d" % acked
print("acknowledged %d blocks, %d torn between new and old" % (acked, torn))
PY
ok "unmount" stop_objfs

# 3. The arena gone (as after a restart): not adopted, and said so; the
#    README's rules hold (what was fsynced is there).
ok "mount" start_objfs "$MNT" "$DATA" "$ARENA"
dd if="$T/mid" of="$MNT/synced" bs=1M conv=fsync status=none
echo "not synced" >"$MNT/unsynced"
arena=$(head -n 1 "$DATA/arena")
killit
rm -rf "${arena%/arena}"
ok "remount with the arena gone" start_objfs "$MNT" "$DATA" "$ARENA"
ok "the mount says it started without an arena to adopt" \
	grep -q "started without an arena to adopt: .*gone" "$T/objfs.mnt.log"
ok "the status file says so" grep -q "^arena: new (none to adopt" "$MNT/.objfs-status"
ok "the fsynced file is whole" cmp "$T/mid" "$MNT/synced"
ok "every file reads without error" bash -c "find '$MNT' -type f -exec cat {} + >/dev/null"
ok "unmount" stop_objfs

# 4. -o keep_arena: the unmount is instant, the next mount adopts.
ok "mount with keep_arena" start_objfs "$MNT" "$DATA" "$ARENA,keep_arena"
head -c $((30 << 20)) /dev/urandom >"$T/kept"
cp "$T/kept" "$MNT/kept"
arena=$(head -n 1 "$DATA/arena")
ok "unmount with keep_arena" stop_objfs
ok "the daemon's last word: the arena kept, and how much is not on disk" \
	grep -q "unmounted: exit 0: arena kept, [0-9.]* MiB not written out" "$DATA/lock"
ok "the arena is still there" test -f "$arena"
ok "mount adopts it" start_objfs "$MNT" "$DATA" "$ARENA"
ok "the file is whole" cmp "$T/kept" "$MNT/kept"
ok "unmount" stop_objfs
ok "and now the arena is gone" test ! -e "$arena"

# 5. Another user: cannot read, map or replace the arena, and an arena
#    of theirs is never adopted.
ok "mount" start_objfs "$MNT" "$DATA" "$ARENA"
echo secret >"$MNT/secret"
arena=$(head -n 1 "$DATA/arena")
fails "nobody cannot open the arena" setpriv --reuid=65534 --regid=65534 --clear-groups \
	cat "$arena"
fails "nobody cannot list its directory" setpriv --reuid=65534 --regid=65534 --clear-groups \
	ls "${arena%/arena}"
fails "nobody cannot put a file in it" setpriv --reuid=65534 --regid=65534 --clear-groups \
	touch "${arena%/arena}/x"
fails "nobody cannot replace it" setpriv --reuid=65534 --regid=65534 --clear-groups \
	mv "${arena%/arena}" /dev/shm/objfs-moved
killit
evil=$(setpriv --reuid=65534 --regid=65534 --clear-groups mktemp -d /dev/shm/objfs.XXXXXX)
fails "nobody cannot copy it either" setpriv --reuid=65534 --regid=65534 --clear-groups \
	cp "$arena" "$evil/arena"
setpriv --reuid=65534 --regid=65534 --clear-groups \
	truncate -s "$(stat -c %s "$arena")" "$evil/arena"
chmod 600 "$evil/arena"
echo "$evil/arena" >"$DATA/arena"
ok "remount with DATA/arena naming another user's file" start_objfs "$MNT" "$DATA" "$ARENA"
ok "it is not adopted" grep -q "started without an arena to adopt: $evil/arena: .*not a private" "$T/objfs.mnt.log"
ok "and left alone" test -f "$evil/arena"
rm -rf "$evil" "${arena%/arena}"
ok "unmount" stop_objfs

# 6. A copy of a data directory names the same arena: while the original
#    serves (and holds the arena's lock), the copy must not take it.
ok "mount" start_objfs "$MNT" "$DATA" "$ARENA"
head -c $((3 << 20)) /dev/urandom >"$T/orig"
cp "$T/orig" "$MNT/orig"
killit
cp -a "$DATA" "$T/copy"
mkdir -p "$T/mnt2"
ok "the original adopts its arena" start_objfs "$MNT" "$DATA" "$ARENA"
pid1=$OBJFS_PID
ok "a copy of the data directory mounts beside it" start_objfs "$T/mnt2" "$T/copy" "$ARENA"
pid2=$OBJFS_PID
ok "... without the arena the original holds" \
	grep -q "started without an arena to adopt: .*another objfs is using it" "$T/objfs.mnt2.log"
ok "... on an arena of its own" bash -c "
	[ \"\$(head -n 1 '$T/copy/arena')\" != \"\$(head -n 1 '$DATA/arena')\" ]"
echo "written in the copy" >"$T/mnt2/other"
ok "the original's file is whole" cmp "$T/orig" "$MNT/orig"
ok "unmount the copy" stop_objfs "$T/mnt2" "$pid2"
ok "unmount the original" stop_objfs "$MNT" "$pid1"
ok "remount the original: its file whole, nothing of the copy's" bash -c "
	'$OBJFS_BIN' -o 'data=$DATA,$ARENA' '$MNT' 2>/dev/null &&
	cmp '$T/orig' '$MNT/orig' && [ ! -e '$MNT/other' ]; rc=\$?
	fusermount3 -u '$MNT'; exit \$rc"
for ((i = 0; i < 100; i++)); do [ -e "$DATA/arena" ] || break; sleep 0.1; done
t_done
