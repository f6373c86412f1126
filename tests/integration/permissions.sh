#!/bin/bash
# SPDX-License-Identifier: MIT
# Ownership and permissions, exercised as an unprivileged user (uid 65534)
# on an allow_other mount, the privacy of a mount without it, and what root
# may do there with and without the kernel's permission pass.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

mount_opts() { awk -v m="$MNT" '$2 == m {print $4}' /proc/mounts; }
can() {	# can MODE PATH: what access(2) answers (R, W, X letters)
	python3 -c "import os, sys
m = sum({'R': os.R_OK, 'W': os.W_OK, 'X': os.X_OK}[c] for c in sys.argv[1])
sys.exit(0 if os.access(sys.argv[2], m) else 1)" "$@"
}

# What root may do is the same with and without the kernel's permission
# pass; a mount only root can enter goes without it unless asked.
root_rules() {	# root_rules LABEL
	echo 'echo ran' >"$MNT/script" && chmod 644 "$MNT/script"
	mkdir -p "$MNT/closed" && echo c >"$MNT/closed/f" && chmod 000 "$MNT/closed"
	echo z >"$MNT/zero" && chmod 000 "$MNT/zero"
	ok "$1: root reads and writes a mode-000 file" bash -c "
		echo more >>'$MNT/zero' && [ \"\$(cat '$MNT/zero')\" = \$'z\nmore' ]"
	ok "$1: root enters and reads a mode-000 directory" bash -c "
		cd '$MNT/closed' && [ \"\$(cat f)\" = c ]"
	ok "$1: access(R_OK|W_OK) of a mode-000 file is granted to root" can RW "$MNT/zero"
	ok "$1: access(X_OK) of a mode-000 directory is granted to root" can X "$MNT/closed"
	fails "$1: access(X_OK) of a file without x bits is refused" can X "$MNT/script"
	fails "$1: a file without x bits does not run" "$MNT/script"
	chmod 744 "$MNT/script"
	ok "$1: access(X_OK) once an x bit is set" can X "$MNT/script"
	ok "$1: and it runs" bash -c "[ \"\$('$MNT/script')\" = ran ]"
	chmod 755 "$MNT/closed"
	rm -rf "$MNT/closed" "$MNT/zero" "$MNT/script"
}

ok "mount without allow_other" start_objfs "$MNT" "$DATA" arena=64M
ok "root (the mounting user) gets in" ls "$MNT"
fails "another user cannot enter a mount without allow_other" $NOBODY ls "$MNT"
ok "a mount only root can enter has no default_permissions" \
	bash -c "! grep -qw default_permissions <<<'$(mount_opts)'"
ok "and says so in its log" grep -q "only root can enter" "$T/objfs.$(basename "$MNT").log"
root_rules "root only"
ok "unmount" stop_objfs

# Issue 48: a comma in SOURCE is part of the source, not an option: raw, on
# 67f5056, "objfs,allow_other" mounted with allow_other (and, root's
# decision being no kernel permission pass, let anyone past every mode).
OBJFS_SOURCE='objfs,allow_other' ok "mount with the source objfs,allow_other" \
	start_objfs "$MNT" "$DATA" arena=64M
ok "the kernel took no option from the source" \
	bash -c "! grep -qw allow_other <<<'$(mount_opts)'"
ok "the source is the whole string" \
	bash -c "[ \"\$(awk -v m='$MNT' '\$2 == m {print \$1}' /proc/mounts)\" = 'objfs,allow_other' ]"
fails "another user still cannot enter" $NOBODY ls "$MNT"
ok "unmount" stop_objfs

ok "mount with -o default_permissions" start_objfs "$MNT" "$DATA" arena=64M,default_permissions
ok "the kernel checks permissions when asked to" \
	bash -c "grep -qw default_permissions <<<'$(mount_opts)'"
root_rules "default_permissions"
ok "unmount" stop_objfs

ok "mount with allow_other" start_objfs "$MNT" "$DATA" arena=64M,allow_other
ok "a mount others can enter has default_permissions" \
	bash -c "grep -qw default_permissions <<<'$(mount_opts)'"
chmod 755 "$MNT"
echo secret >"$MNT/rootfile"
chmod 644 "$MNT/rootfile"
mkdir "$MNT/shared" && chmod 1777 "$MNT/shared"
mkdir "$MNT/private" && chmod 700 "$MNT/private"

ok "another user can read a 0644 file" $NOBODY cat "$MNT/rootfile"
fails "another user cannot write a 0644 file of root's" $NOBODY sh -c "echo x >> '$MNT/rootfile'"
fails "another user cannot create in a 0755 directory of root's" $NOBODY touch "$MNT/mine"
fails "another user cannot enter a 0700 directory" $NOBODY ls "$MNT/private"
ok "another user can create in a 1777 directory" $NOBODY sh -c "echo mine > '$MNT/shared/u'"
ok "the new file belongs to the caller (uid and gid)" \
	bash -c "[ \"\$(stat -c %u:%g '$MNT/shared/u')\" = 65534:65534 ]"
ok "mkdir, symlink and mknod belong to the caller" bash -c "
	$NOBODY sh -c \"mkdir '$MNT/shared/d' && ln -s u '$MNT/shared/l' && mkfifo '$MNT/shared/p'\" &&
	[ \"\$(stat -c %u:%g '$MNT/shared/d' '$MNT/shared/p' | sort -u)\" = 65534:65534 ] &&
	[ \"\$(stat -c %u:%g '$MNT/shared/l')\" = 65534:65534 ]"
fails "chmod of another user's file is refused" $NOBODY chmod 777 "$MNT/rootfile"
fails "chown by a non-root user is refused" $NOBODY chown 65534 "$MNT/shared/u" -h "$MNT/rootfile"
fails "sticky directory: cannot delete root's file" bash -c "
	echo r > '$MNT/shared/rootowned' && $NOBODY rm -f '$MNT/shared/rootowned'"
ok "owner can chmod its own file" $NOBODY chmod 600 "$MNT/shared/u"
fails "and then root's group cannot read it as another user" setpriv --reuid=1000 --regid=1000 --clear-groups cat "$MNT/shared/u"

# Issue 48: the control actions are the mount's owner's and root's, and
# the status file shows other users no paths.  On 67f5056 any user could
# write out every user's data through the status file, pin the sealed
# budget away on a file it could write, and read where the data, log and
# arena are.
ST="$MNT/.objfs-status"
ok "another user cannot sync everything through the status file (EPERM)" \
	bash -c "$NOBODY sync '$ST' 2>&1 | grep -q 'Operation not permitted'"
ok "root (the owner) can" sync "$ST"
fails "another user cannot pin a file it can write" \
	$NOBODY setfattr -n user.objfs.request -v pin "$MNT/shared/u"
ok "the owner can" setfattr -n user.objfs.request -v pin "$MNT/shared/u"
ok "and unpin it" setfattr -n user.objfs.request -v unpin "$MNT/shared/u"
fails "another user cannot ask for a catch-up" \
	$NOBODY setfattr -n user.objfs.catch_up -v 1 "$ST"
fails "another user cannot seal a file it owns (no CAP_LINUX_IMMUTABLE)" \
	$NOBODY chattr +i "$MNT/shared/u"
ok "another user reads the figures" bash -c "$NOBODY cat '$ST' | grep -q '^arena_capacity_bytes: '"
ok "but no paths or pid" bash -c "! $NOBODY cat '$ST' | grep -q '^\(data\|log\|arena\|pid\|remote\): '"
ok "the owner reads them" bash -c "grep -q '^data: $DATA' '$ST' && grep -q '^pid: ' '$ST'"

# setuid/setgid bits are cleared by a write from a non-owner.
echo x >"$MNT/shared/suid"
chmod 6777 "$MNT/shared/suid"
ok "write by a non-owner clears setuid and setgid" bash -c "
	$NOBODY sh -c \"echo y >> '$MNT/shared/suid'\" &&
	[ \"\$(stat -c %a '$MNT/shared/suid')\" = 777 ]"
echo x >"$MNT/shared/suid2"
chmod 6777 "$MNT/shared/suid2"
ok "truncate by a non-owner clears setuid and setgid" bash -c "
	$NOBODY truncate -s 0 '$MNT/shared/suid2' &&
	[ \"\$(stat -c %a '$MNT/shared/suid2')\" = 777 ]"
echo x >"$MNT/suid3"
chmod 4755 "$MNT/suid3"
ok "chown clears setuid" bash -c "chown 65534 '$MNT/suid3' && [ \"\$(stat -c %a '$MNT/suid3')\" = 755 ]"
# objfs clears these itself (FUSE_CAP_HANDLE_KILLPRIV), by the kernel's
# rules: a chown by root too, setgid only with group execute, never on a
# directory.
echo x >"$MNT/sgid-x" && chmod 2755 "$MNT/sgid-x"
ok "chown by root clears setgid with group execute" bash -c "
	chown 0:0 '$MNT/sgid-x' && [ \"\$(stat -c %a '$MNT/sgid-x')\" = 755 ]"
echo x >"$MNT/sgid-nox" && chmod 2745 "$MNT/sgid-nox"
ok "chown keeps setgid without group execute (a locking mark)" bash -c "
	chown 0:0 '$MNT/sgid-nox' && [ \"\$(stat -c %a '$MNT/sgid-nox')\" = 2745 ]"
mkdir "$MNT/sgid-dir" && chmod 2775 "$MNT/sgid-dir"
ok "chown of a directory keeps its setgid" bash -c "
	chown 65534 '$MNT/sgid-dir' && [ \"\$(stat -c %a '$MNT/sgid-dir')\" = 2775 ]"
echo x >"$MNT/suid-trunc-root" && chmod 4755 "$MNT/suid-trunc-root"
ok "a truncate with CAP_FSETID keeps setuid" bash -c "
	truncate -s 0 '$MNT/suid-trunc-root' && [ \"\$(stat -c %a '$MNT/suid-trunc-root')\" = 4755 ]"
ok "a truncate by root without CAP_FSETID clears it" bash -c "
	setpriv --bounding-set -fsetid truncate -s 1 '$MNT/suid-trunc-root' &&
	[ \"\$(stat -c %a '$MNT/suid-trunc-root')\" = 755 ]"

# The rule is CAP_FSETID, not uid 0, as on ext4: root keeps setuid on
# its writes, root without CAP_FSETID does not.
echo x >"$MNT/suid4"
chmod 4755 "$MNT/suid4"
ok "a write with CAP_FSETID keeps setuid" bash -c "
	echo y >> '$MNT/suid4' && [ \"\$(stat -c %a '$MNT/suid4')\" = 4755 ]"
ok "a write by root without CAP_FSETID clears it" bash -c "
	setpriv --bounding-set -fsetid sh -c \"echo z >> '$MNT/suid4'\" &&
	[ \"\$(stat -c %a '$MNT/suid4')\" = 755 ]"
# File capabilities go on any write or truncate, by anyone (ext4 too).
CAPS=0sAQAAAgAgAAAAAAAAAAAAAAAAAAA=	# cap_net_raw+ep
for how in "root write" "non-owner write" "truncate" "chown"; do
	f=$MNT/shared/caps-${how// /-}
	echo x >"$f" && chmod 666 "$f"
	setfattr -n security.capability -v "$CAPS" "$f"
	case $how in
	"root write") echo y >>"$f" ;;
	"non-owner write") $NOBODY sh -c "echo y >> '$f'" ;;
	truncate) truncate -s 1 "$f" ;;
	chown) chown 65534 "$f" ;;
	esac
	ok "a $how clears security.capability" bash -c "
		! getfattr -n security.capability '$f' >/dev/null 2>&1"
done
ok "security.capability stays when nothing is written" bash -c "
	echo x > '$MNT/caps-kept' && setfattr -n security.capability -v $CAPS '$MNT/caps-kept' &&
	cat '$MNT/caps-kept' >/dev/null && getfattr -n security.capability '$MNT/caps-kept' >/dev/null"

# setgid directory: new entries take the directory's group.
mkdir "$MNT/shared/grp" && chown 0:4242 "$MNT/shared/grp" && chmod 2777 "$MNT/shared/grp"
ok "a file in a setgid directory takes the directory's group" bash -c "
	$NOBODY touch '$MNT/shared/grp/f' && [ \"\$(stat -c %g '$MNT/shared/grp/f')\" = 4242 ]"

ok "unmount" stop_objfs
ok "data directory and its files are private (0700 and 0600)" bash -c "
	[ \$(stat -c %a '$DATA') = 700 ] && [ \$(stat -c %a '$DATA/index') = 700 ] &&
	[ \$(stat -c %a '$DATA/backing') = 700 ] &&
	[ -z \"\$(find '$DATA' -type f -perm /077)\" ]"
ok "backing file names are inode numbers, never user names" bash -c "
	ls '$DATA/backing' | grep -vqE '^[0-9a-f]{16}\$' && exit 1; true"
t_done
