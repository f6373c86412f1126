#!/bin/bash
# SPDX-License-Identifier: MIT
# Sealed objects (chattr +i, objfsctl seal): every change refused with
# EPERM; the checksum recorded at the seal; read and mapped by the kernel
# through FUSE passthrough without one READ reaching the daemon, from a
# file of a private tmpfs mounted nowhere (memfds with sealed_pages=small); eight
# processes mapping a 1 GiB object share one copy of it, and memory grows
# by at most 1.1 GiB in all from before it was written; unseal and evict
# refused (EBUSY) while another process maps it and allowed after; a
# daemon SIGKILLed while sealed objects are mapped comes back with every
# byte and every seal; passthrough=off and a daemon that is not root to
# the kernel (root of a user namespace) serve the same bytes themselves
# and say why; per-object files and pins stay within sealed_max (an open
# past it served by the daemon, a pin past it refused), a pinned file
# stays resident while the arena streams 3x its size; with the cluster tier, a sealed object fetched into an
# empty data directory is served by passthrough after objfsctl warm.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
HERE=$(dirname "$0")
CTL=${OBJFSCTL_BIN:-$(dirname "$OBJFS_BIN")/objfsctl}
REF=$HERE/../../scripts/objfs-sum
P=$MNT/obj

stat_of() {	# stat_of KEY [MOUNTPOINT]: a figure of the status file
	sed -n "s/^$1: //p" "${2:-$MNT}/.objfs-status"
}
wait_file() {	# wait_file FILE SECONDS
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

ok "mount as root with a 3 GiB arena" start_objfs "$MNT" "$DATA" arena=3G
ok "the status file says passthrough is on" \
	test "$(stat_of passthrough)" = on

ok "write a 64 MiB object" bash -c "head -c 64M /dev/urandom > '$P' &&
	md5sum < '$P' | cut -d' ' -f1 > '$T/obj.md5'"
ok "objfsctl seal prints the checksum objfs-sum computes from the bytes" \
	bash -c "s=\$('$CTL' seal '$P' | cut -d' ' -f1); r=\$('$REF' '$P' | cut -d' ' -f1);
		echo \"seal \$s sum \$r\"; [ \${#s} = 32 ] && [ \"\$s\" = \"\$r\" ]"
ok "lsattr shows it immutable" bash -c "lsattr '$P' | grep -q '^----i'"
ok "user.objfs.sealed holds that checksum" bash -c \
	"[ \"\$(getfattr --only-values -n user.objfs.sealed '$P')\" = \"\$('$REF' '$P' | cut -d' ' -f1)\" ]"
echo other > "$MNT/other"
expect_errno "open for writing" EPERM "open('$P', 'r+b')"
expect_errno "append" EPERM "open('$P', 'ab')"
expect_errno "O_TRUNC" EPERM "os.open('$P', os.O_WRONLY | os.O_TRUNC)"
expect_errno "truncate by name" EPERM "os.truncate('$P', 0)"
expect_errno "unlink" EPERM "os.unlink('$P')"
expect_errno "rename it" EPERM "os.rename('$P', '$MNT/moved')"
expect_errno "rename another file over it" EPERM "os.rename('$MNT/other', '$P')"
expect_errno "hard link to it" EPERM "os.link('$P', '$MNT/link')"
expect_errno "chmod" EPERM "os.chmod('$P', 0o600)"
expect_errno "chown" EPERM "os.chown('$P', 1, 1)"
expect_errno "utime" EPERM "os.utime('$P', (1, 1))"
expect_errno "setxattr" EPERM "os.setxattr('$P', 'user.a', b'1')"
expect_errno "objfs's own record cannot be named" EPERM \
	"os.setxattr('$P', 'objfs.sealed', b'0' * 32)"
ok "... and is not listed" bash -c "! getfattr -d -m - '$P' | grep -q objfs.sealed"
ok "unchanged after all that" bash -c "[ \"\$(md5sum < '$P' | cut -d' ' -f1)\" = \"\$(cat '$T/obj.md5')\" ]"

r0=$(stat_of sealed_daemon_reads_total)
o0=$(stat_of passthrough_opens_total)
ok "read with cat: the same bytes" bash -c "[ \"\$(cat '$P' | md5sum | cut -d' ' -f1)\" = \"\$(cat '$T/obj.md5')\" ]"
ok "... served by passthrough: no READ of it reached the daemon" bash -c \
	"r=\$(sed -n 's/^sealed_daemon_reads_total: //p' '$MNT/.objfs-status');
	 o=\$(sed -n 's/^passthrough_opens_total: //p' '$MNT/.objfs-status');
	 echo \"reads $r0 -> \$r, passthrough opens $o0 -> \$o\"; [ \"\$r\" = $r0 ] && [ \"\$o\" -gt $o0 ]"
ok "objfsctl stat says so" bash -c "'$CTL' stat '$P' | grep -q 'served    passthrough'"
ok "... from a file of the private tmpfs of 2 MiB pages" test "$(stat_of sealed_file_kind)" = tmpfs-huge
ok "... which is mounted nowhere (a file of a mount not in the daemon's table)" python3 -c "
import os, re, sys
d = '/proc/$OBJFS_PID'
mounts = {l.split()[0] for l in open(d + '/mountinfo')}
ids = []
for f in os.listdir(d + '/fd'):
    try:    # a descriptor the daemon closes meanwhile is not one of them
        if re.fullmatch(r'/#\d+ \(deleted\)', os.readlink(d + '/fd/' + f)):
            ids.append(re.search(r'mnt_id:\s*(\d+)', open(d + '/fdinfo/' + f).read()).group(1))
    except OSError:
        pass
print('per-object files on mounts', ids)
sys.exit(0 if ids and not set(ids) & mounts else 1)"

# Unseal and evict while another process maps it: EBUSY; after: fine.
rm -f "$T/go"
python3 "$HERE/sealed_map.py" "$P" 1 "$T/ready1" "$T/go" &
MAPPER=$!
ok "a process maps it and reads every page" wait_file "$T/ready1" 10
fails "unseal while it is mapped (EBUSY)" "$CTL" unseal "$P"
ok "... the reason given is EBUSY" bash -c "'$CTL' unseal '$P' 2>&1 | grep -q 'busy'"
fails "evict while it is mapped (EBUSY)" "$CTL" evict "$P"
ok "... still sealed" bash -c "lsattr '$P' | grep -q '^----i'"
touch "$T/go"
ok "the mapper saw the right bytes and exited" wait "$MAPPER"
ok "evict once the mapping is gone" "$CTL" evict "$P"
ok "... its per-object file went" test "$(stat_of sealed_files)" = 0
ok "unseal once nothing maps it" "$CTL" unseal "$P"
ok "... writable again" bash -c "echo more >> '$P'"
ok "... and sealed again, with the new checksum" bash -c \
	"s=\$('$CTL' seal '$P' | cut -d' ' -f1); [ \"\$s\" = \"\$('$REF' '$P' | cut -d' ' -f1)\" ]"
head -c 64M "$P" | md5sum | cut -d' ' -f1 > "$T/obj64.md5"
ok "... its first 64 MiB as before" cmp "$T/obj.md5" "$T/obj64.md5"
md5sum < "$P" | cut -d' ' -f1 > "$T/obj.md5"

# Eight processes map one sealed 1 GiB object.  Memory is counted from
# before the object was written: today's objfs held it twice (the arena
# and the page cache: over 2 GiB); one copy is 1 GiB.
cached() { awk '/^Cached:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo; }
sleep 1	# the warmer settles
c0=$(cached)
ok "write a 1 GiB object" bash -c "dd if=/dev/urandom of='$MNT/big' bs=1M count=1024 status=none"
ok "seal it" "$CTL" seal "$MNT/big"
r0=$(stat_of sealed_daemon_reads_total)
rm -f "$T/go"
python3 "$HERE/sealed_map.py" "$MNT/big" 8 "$T/ready8" "$T/go" &
MAPPER=$!
wait_file "$T/ready8" 120
c1=$(cached)
ok "8 processes mapped it and read every page" test "$(wc -l < "$T/ready8")" = 8
ok "... all read the same bytes" test "$(cut -d' ' -f2 "$T/ready8" | sort -u | wc -l)" = 1
ok "... one copy shared: their Pss adds up to at most 1.05 GiB" bash -c \
	"p=\$(awk '{ s += \$3 } END { print s }' '$T/ready8'); echo \"Pss \$p kB\";
	 [ \"\$p\" -gt 900000 ] && [ \"\$p\" -le $((1075 * 1024)) ]"
# (The whole machine's page cache: other work on it grows it too, 1,132
# MiB in a CI run beside another test's uploads.  Two copies are over
# 2 GiB; 1.5 GiB tells them apart with room for the machine's own.)
ok "... page cache and shared memory grew by at most 1.5 GiB in all (one copy, not two)" bash -c \
	"echo \"Cached grew by $(( (c1 - c0) >> 20 )) MiB\"; [ $((c1 - c0)) -le $((1536 << 20)) ]"
ok "... and none of their reads reached the daemon" \
	test "$(stat_of sealed_daemon_reads_total)" = "$r0"
ok "the status file counts its per-object file" bash -c \
	"[ \"\$(sed -n 's/^sealed_file_bytes: //p' '$MNT/.objfs-status')\" -ge $((1 << 30)) ]"
touch "$T/go"
ok "the 8 readers exited" wait "$MAPPER"
md5sum < "$MNT/big" | cut -d' ' -f1 > "$T/big.md5"
ok "evict it" "$CTL" evict "$MNT/big"
ok "... and its memory is free again" bash -c \
	"[ \"\$(sed -n 's/^sealed_file_bytes: //p' '$MNT/.objfs-status')\" -lt $((1 << 30)) ]"

# SIGKILL with sealed objects mapped: the mappings keep reading, and the
# next daemon has every byte and every seal.
rm -f "$T/go"
python3 "$HERE/sealed_map.py" "$P" 2 "$T/ready2" "$T/go" &
MAPPER=$!
ok "two processes map the small object" wait_file "$T/ready2" 10
kill -9 "$OBJFS_PID"
wait_pid_gone "$OBJFS_PID" 10
touch "$T/go"
ok "SIGKILL: the mappers still read their bytes and exit cleanly" wait "$MAPPER"
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
ok "remount after SIGKILL" start_objfs "$MNT" "$DATA" arena=3G
ok "every byte intact" bash -c "[ \"\$(md5sum < '$P' | cut -d' ' -f1)\" = \"\$(cat '$T/obj.md5')\" ] &&
	[ \"\$(md5sum < '$MNT/big' | cut -d' ' -f1)\" = \"\$(cat '$T/big.md5')\" ]"
ok "both still sealed, with their checksums" bash -c \
	"lsattr '$P' '$MNT/big' | grep -c '^----i' | grep -qx 2 &&
	 [ \"\$(getfattr --only-values -n user.objfs.sealed '$P')\" = \"\$('$REF' '$P' | cut -d' ' -f1)\" ]"
expect_errno "still refuses writes" EPERM "open('$P', 'ab')"
ok "unmount" stop_objfs

# Fallback: passthrough=off, then a daemon that is not root.
ok "mount with passthrough=off" start_objfs "$MNT" "$DATA" arena=256M,passthrough=off
ok "the status file says why not" test "$(stat_of passthrough)" = "daemon: passthrough=off"
ok "objfsctl stat says it is served by the daemon" bash -c "'$CTL' stat '$P' | grep -q 'served    daemon: passthrough=off'"
ok "the daemon serves the same bytes" bash -c "[ \"\$(md5sum < '$P' | cut -d' ' -f1)\" = \"\$(cat '$T/obj.md5')\" ]"
ok "... its READs counted" test "$(stat_of sealed_daemon_reads_total)" -gt 0
expect_errno "... and still refuses writes" EPERM "open('$P', 'ab')"
ok "unmount" stop_objfs

# sealed_pages=small: per-object files are memfds of 4 KiB pages.
ok "mount with sealed_pages=small" start_objfs "$MNT" "$DATA" arena=256M,sealed_pages=small
ok "... the status file says memfds" test "$(stat_of sealed_file_kind)" = memfd
ok "... the object is served by passthrough with its bytes" bash -c \
	"[ \"\$(md5sum < '$P' | cut -d' ' -f1)\" = \"\$(cat '$T/obj.md5')\" ] &&
	 getfattr --only-values -n user.objfs.served '$P' | grep -q '^passthrough'"
ok "... no READ of it reached the daemon" test "$(stat_of sealed_daemon_reads_total)" = 0
ok "... unseal and evict work on it too" bash -c "'$CTL' unseal '$P' && '$CTL' evict '$P' && '$CTL' seal '$P' > /dev/null"
ok "unmount" stop_objfs

# The cap: per-object files and pins take at most sealed_max of the arena
# (here 25% of 64 MiB: 16 MiB).  An open that would pass it is served by
# the daemon; a pin past it is refused; a pinned file stays resident while
# 200 MiB stream through the arena, writers waiting as ever.
SM=$T/small
ok "mount a 64 MiB arena with sealed_max=25" start_objfs "$MNT" "$SM" arena=64M,sealed_max=25
ok "write and seal a 24 MiB object and an 8 MiB one" bash -c \
	"head -c 24M /dev/urandom > '$MNT/wide' && head -c 8M /dev/urandom > '$MNT/narrow' &&
	 md5sum < '$MNT/wide' | cut -d' ' -f1 > '$T/wide.md5' && '$CTL' seal '$MNT/wide' '$MNT/narrow'"
ok "the 24 MiB one is served by the daemon, and says why" bash -c \
	"cat '$MNT/wide' > /dev/null; getfattr --only-values -n user.objfs.served '$MNT/wide' | tee /dev/stderr | grep -q sealed_max"
ok "... with its bytes" bash -c "[ \"\$(md5sum < '$MNT/wide' | cut -d' ' -f1)\" = \"\$(cat '$T/wide.md5')\" ]"
ok "the 8 MiB one is served by passthrough" bash -c \
	"cat '$MNT/narrow' > /dev/null; getfattr --only-values -n user.objfs.served '$MNT/narrow' | grep -q '^passthrough'"
ok "per-object files stay within sealed_max" bash -c \
	"[ \"\$(sed -n 's/^sealed_file_bytes: //p' '$MNT/.objfs-status')\" -le $((16 << 20)) ]"
ok "pin the 8 MiB one (its per-object file)" "$CTL" pin "$MNT/narrow"
fails "pin the 24 MiB one: past sealed_max" "$CTL" pin "$MNT/wide"
ok "... refused with ENOSPC" bash -c "'$CTL' pin '$MNT/wide' 2>&1 | grep -q 'No space left'"
ok "pin a 6 MiB file that is not sealed" bash -c \
	"head -c 6M /dev/urandom > '$MNT/hot' && md5sum < '$MNT/hot' | cut -d' ' -f1 > '$T/hot.md5' && '$CTL' pin '$MNT/hot'"
ok "200 MiB through the 64 MiB arena: writers wait, nothing fails" bash -c \
	"dd if=/dev/urandom of='$MNT/flood' bs=1M count=200 status=none && cat '$MNT/flood' > /dev/null"
ok "the pinned file is still resident" bash -c \
	"[ \"\$(getfattr --only-values -n user.objfs.resident '$MNT/hot')\" -ge $((6 << 20)) ]"
ok "... and the pinned sealed one still has its per-object file" bash -c \
	"getfattr --only-values -n user.objfs.served '$MNT/narrow' | grep -q '^passthrough: resident'"
ok "unpin and evict it" bash -c "'$CTL' unpin '$MNT/hot' && '$CTL' evict '$MNT/hot'"
ok "... then nothing of it is in memory" test "$(getfattr --only-values -n user.objfs.resident "$MNT/hot")" = 0
ok "... and its bytes are all there" bash -c "[ \"\$(md5sum < '$MNT/hot' | cut -d' ' -f1)\" = \"\$(cat '$T/hot.md5')\" ]"
ok "unmount" stop_objfs

# A daemon that is not root to the kernel: root of a user namespace of
# its own (what an unprivileged container runs), where the kernel refuses
# backing files (CAP_SYS_ADMIN in the initial namespace).  Its mount lives
# in that namespace's mount namespace: the reads are made in there too.
mkdir -p "$T/nsmnt"
cat > "$T/ns.sh" <<EOF
"$OBJFS_BIN" -f -o data=$DATA,arena=256M "$T/nsmnt" >>"$T/objfs.ns.log" 2>&1 &
p=\$!
for i in \$(seq 100); do mountpoint -q "$T/nsmnt" && break; sleep 0.1; done
sed -n 's/^passthrough: //p' "$T/nsmnt/.objfs-status" > "$T/ns.why"
md5sum < "$T/nsmnt/obj" | cut -d' ' -f1 > "$T/ns.md5"
getfattr --only-values -n user.objfs.served "$T/nsmnt/obj" > "$T/ns.served"
sed -n 's/^sealed_daemon_reads_total: //p' "$T/nsmnt/.objfs-status" > "$T/ns.reads"
fusermount3 -u "$T/nsmnt" || umount "$T/nsmnt"
wait \$p
EOF
if unshare --user --map-root-user --mount true 2>/dev/null; then
	ok "a daemon in a user namespace of its own mounts, serves and exits 0" \
		unshare --user --map-root-user --mount bash "$T/ns.sh"
	ok "... says why it does not use passthrough" bash -c \
		"grep -q '^daemon: not root' '$T/ns.why' && grep -q '^daemon: not root' '$T/ns.served'"
	ok "... and serves the same bytes itself" cmp "$T/ns.md5" "$T/obj.md5"
	ok "... its READs counted" test "$(cat "$T/ns.reads")" -gt 0
else
	skip "a daemon that is not root to the kernel" "no user namespaces here"
fi

# With the cluster tier: a sealed object fetched from the pool into an
# empty data directory (another machine) is served by passthrough once
# objfsctl warm has brought it in.
t_ceph "a sealed object fetched from the cluster"
REMOTE="remote=rados:objfs/sealed$$,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
ok "mount on the pool" start_objfs "$MNT" "$T/r1" "arena=256M,$REMOTE"
ok "write and seal a 24 MiB object" bash -c "head -c 24M /dev/urandom > '$MNT/robj' &&
	md5sum < '$MNT/robj' | cut -d' ' -f1 > '$T/robj.md5' && '$CTL' seal '$MNT/robj'"
ok "unmount" stop_objfs
ok "mount an empty data directory on the pool" start_objfs "$MNT" "$T/r2" "arena=256M,$REMOTE"
ok "the object is sealed there too" bash -c "lsattr '$MNT/robj' | grep -q '^----i'"
ok "objfsctl warm fetches it" "$CTL" warm "$MNT/robj"
ok "... and it is served by passthrough" bash -c \
	"getfattr --only-values -n user.objfs.served '$MNT/robj' | grep -q '^passthrough'"
r0=$(stat_of sealed_daemon_reads_total)
ok "the bytes are the ones sealed" bash -c "[ \"\$(md5sum < '$MNT/robj' | cut -d' ' -f1)\" = \"\$(cat '$T/robj.md5')\" ]"
ok "... read without one READ reaching the daemon" \
	test "$(stat_of sealed_daemon_reads_total)" = "$r0"
ok "unmount" stop_objfs
t_done
