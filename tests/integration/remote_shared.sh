#!/bin/bash
# SPDX-License-Identifier: MIT
# Two objfs mounts, each with its own data directory and arena, of one
# pool namespace with -o shared (doc/design.md, "Many nodes on one
# namespace"), on a real single-node Ceph cluster (tests/ceph/cluster.sh):
#   - a name made on A is on B within the follower's bound, and the other
#     way; concurrent creates on both in one directory all land (the log's
#     races are lost and tried again, never lost);
#   - close-to-open: bytes A wrote are on B once A's close or fsync
#     returned, whole; a reader on B keeps the version it opened while A
#     publishes a new one in place, and while A renames a new file over
#     it; a reader on B polling a name that A renames over always finds
#     the old file or the new one, never neither, never a mixture;
#   - B's kernel caches names and attributes: an open on B right after
#     A's close finds A's version although the kernel held the old name
#     and size (rewritten in place, renamed over, unlinked, read with
#     copy_file_range); stats of an unchanged tree stay in the kernel;
#   - one writer per file: B's open for writing is refused with EBUSY
#     while A writes it, succeeds after A's close, and after A is killed
#     once A's lease (remote_lease) has lapsed; A's remount then drops
#     what it wrote and never published, and publishes what it wrote to a
#     file nobody took;
#   - A SIGKILLed at random moments of publishing a new version of a file:
#     B finds one version whole each time, and A's last after its
#     remount; A's machine lost (data directory and arena deleted): B
#     reads everything A fsynced, and gets A's open file once its lease
#     lapses;
#   - the same bytes written on both nodes are one object in the pool;
#     a collection on B (grace 0) removes no chunk either node's files
#     name, and is deferred while A has a file open for writing;
#   - a shared mount is refused while an exclusive one holds the
#     namespace, and the other way round.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
t_ceph "objfs shared on a Ceph pool"
NS=s$$
R="remote=rados:objfs/$NS,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
OPTS="arena=128M,$R,shared,remote_lease=4"
A=$T/a B=$T/b
mkdir -p "$A" "$B"
rados_ls() { rados -c "$CONF" -p objfs -N "$NS" ls 2>/dev/null | sort; }
CTL=$(dirname "$OBJFS_BIN")/objfsctl
# cu MOUNT...: each node applies what the others put in the pool so far
# (what the tests below check is what a call's return promises, not how
# soon the follower brings it: that is the "within 2 s" checks).
cu() { local m; for m; do "$CTL" catch-up "$m" || return 1; done; }
figure() { sed -n "s/^$2: //p" "$1/.objfs-status"; }

"$OBJFS_BIN" -f -o "data=$T/bad,arena=64M,shared" "$T/mnt" >"$T/o1" 2>&1
ok "shared without remote= is refused" grep -q "need remote=rados:POOL" "$T/o1"
"$OBJFS_BIN" -f -o "data=$T/bad,arena=64M,$R,remote_lease=4" "$T/mnt" >"$T/o2" 2>&1
ok "remote_lease without shared is refused" grep -q "remote_lease= is for shared" "$T/o2"

ok "mount A, the first of the namespace" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID
ok "mount B, a second node on it" start_objfs "$B" "$T/dB" "$OPTS"
PB=$OBJFS_PID
"$OBJFS_BIN" -f -o "data=$T/dX,arena=64M,$R" "$T/mnt" >"$T/o3" 2>&1
ok "an exclusive mount is refused while shared ones hold it" \
	grep -q "mounted by another objfs" "$T/o3"
ok "both say they are shared" sh -c "[ '$(figure "$A" remote_shared)' = 1 ] && [ '$(figure "$B" remote_shared)' = 1 ]"

# ---- names ----
seen_within() {	# PATH SECONDS: the path exists within the time
	python3 - "$1" "$2" <<'PY'
import os, sys, time
t0 = time.monotonic()
while not os.path.lexists(sys.argv[1]):
    if time.monotonic() - t0 > float(sys.argv[2]):
        sys.exit(1)
    time.sleep(0.01)
PY
}
mkdir "$A/d1"
ok "a directory made on A is on B within 2 s" seen_within "$B/d1" 2
echo b-says >"$B/d1/from-b"
ok "a file made on B is on A within 2 s" seen_within "$A/d1/from-b" 2
ok "with B's bytes (B's close published them)" grep -qx b-says "$A/d1/from-b"
ln -s from-b "$B/d1/link"
ok "a symlink made on B reads on A" sh -c "'$CTL' catch-up '$A' && [ \"\$(readlink '$A/d1/link')\" = from-b ]"
setfattr -n user.tag -v shared-x "$A/d1" &&
ok "an xattr set on A is on B" sh -c "'$CTL' catch-up '$B' && getfattr --only-values -n user.tag '$B/d1' 2>/dev/null | grep -qx shared-x"
both_create() {
	( for i in $(seq 1 60); do : >"$A/d1/a$i" || exit 1; done ) & local p1=$!
	( for i in $(seq 1 60); do : >"$B/d1/b$i" || exit 1; done ) & local p2=$!
	wait $p1 && wait $p2 || return 1
	cu "$A" "$B" || return 1
	[ "$(ls "$A/d1" | grep -c '^[ab][0-9]')" = 120 ] &&
	[ "$(ls "$B/d1" | grep -c '^[ab][0-9]')" = 120 ]
}
ok "120 creates on both nodes at once in one directory: all on both" both_create
echo "# log races lost and tried again: A $(figure "$A" remote_log_conflicts), B $(figure "$B" remote_log_conflicts)"
rm "$B"/d1/a1?
ok "removes on B are gone on A" sh -c "'$CTL' catch-up '$A' && [ \"\$(ls '$A/d1' | grep -c '^a1')\" = 1 ]"

# ---- bytes: close-to-open, versions ----
head -c 6M /dev/urandom >"$T/v1"
head -c 5M /dev/urandom >"$T/v2"
cp "$T/v1" "$A/f"
ok "A's close returned: B reads the same bytes" sh -c "'$CTL' catch-up '$B' && cmp -s '$T/v1' '$B/f'"
# Group commit: closes of 8 processes on A at once share records; each
# close still returns only once its file is in the pool's log.
group_closes() {
	local g0 c0 a0 a1 n c
	g0=$(figure "$A" remote_publishes_grouped)
	c0=$(figure "$A" remote_creates_grouped)
	a0=$(figure "$A" remote_log_appended)
	python3 - "$A" "$B" <<'PY' || return 1
import os, sys, multiprocessing as mp
a, b = sys.argv[1], sys.argv[2]
os.mkdir(a + '/grp')
def work(k, bar):
    os.mkdir('%s/grp/%d' % (a, k))
    names = ['%s/grp/%d/f%d' % (a, k, i) for i in range(40)]
    fds = [os.open(p, os.O_CREAT | os.O_WRONLY, 0o644) for p in names]
    for i, fd in enumerate(fds):
        os.write(fd, b'%d-%d|' % (k, i) * 50)
    bar.wait()                      # every process closes at once
    for i, fd in enumerate(fds):
        if i % 2:
            os.fsync(fd)            # fsyncs share records too
        os.close(fd)
        # close-to-open, at once, on the other node
        with open('%s/grp/%d/f%d' % (b, k, i), 'rb') as f:
            if f.read() != b'%d-%d|' % (k, i) * 50:
                sys.exit('grp/%d/f%d: wrong bytes on B' % (k, i))
bar = mp.Barrier(8)
ps = [mp.Process(target=work, args=(k, bar)) for k in range(8)]
for p in ps: p.start()
for p in ps: p.join()
sys.exit(max(p.exitcode for p in ps))
PY
	a1=$(figure "$A" remote_log_appended)
	n=$(($(figure "$A" remote_publishes_grouped) - g0))
	c=$(($(figure "$A" remote_creates_grouped) - c0))
	echo "# 320 creates, 160 fsyncs and 320 closes on A: $c creates and $n publishes rode in another's record; $((a1 - a0)) records put" >"$T/grp"
	[ "$n" -gt 0 ] && [ "$c" -gt 0 ]
}
ok "group commit: 8 processes creating and closing 320 files at once on A share records, each read at once on B" group_closes
cat "$T/grp" 2>/dev/null
# O_EXCL in a group: 8 processes of A create the same 40 names at once,
# and 8 of B: each name has exactly one winner, on one node.
excl_group() {
	python3 - "$A" "$B" "$CTL" <<'PY'
import os, sys, time
a, b = sys.argv[1], sys.argv[2]
os.mkdir(a + '/excl')
os.system("'%s' catch-up '%s'" % (sys.argv[3], b))
start = time.time() + 0.5
ps = []
for k in range(16):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        m = a if k < 8 else b
        time.sleep(max(0, start - time.time()))
        won = []
        for i in range(40):
            try:
                os.close(os.open('%s/excl/n%d' % (m, i),
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                won.append(i)
            except FileExistsError:
                pass
        os.write(w, (' '.join(map(str, won)) + '\n').encode())
        os._exit(0)
    os.close(w)
    ps.append((pid, r))
wins = [0] * 40
for pid, r in ps:
    for i in os.read(r, 65536).split():
        wins[int(i)] += 1
    os.waitpid(pid, 0)
bad = [i for i in range(40) if wins[i] != 1]
if bad:
    sys.exit('names without exactly one winner: %s (%s)' % (bad, [wins[i] for i in bad]))
PY
}
ok "O_EXCL: 16 processes on two nodes creating the same 40 names at once: one winner each" excl_group
# 8 processes each making files of 100 bytes (create, write, close) on A:
# every file reads back with its bytes on A and on B.  (The follower,
# woken by A's own notify before A's commit, applied A's own records
# again over what A did since: files made and written came back as
# their create, "1 of its 0 chunk records", EIO.)
small_files() {
	python3 - "$A" <<'PY' || return 1
import os, sys
a = sys.argv[1]
ps = []
for k in range(8):
    pid = os.fork()
    if pid == 0:
        d = '%s/small/%d' % (a, k)
        os.makedirs(d)
        for i in range(150):
            with open('%s/f%d' % (d, i), 'wb') as f:
                f.write(b'%d.%d;' % (k, i) * 20)
        os._exit(0)
    ps.append(pid)
sys.exit(1 if any(os.waitpid(p, 0)[1] for p in ps) else 0)
PY
	"$CTL" catch-up "$B" || return 1
	python3 - "$A" "$B" <<'PY' || return 1
import sys
bad = []
for m in sys.argv[1:]:
    for k in range(8):
        for i in range(150):
            p = '%s/small/%d/f%d' % (m, k, i)
            try:
                with open(p, 'rb') as f:
                    ok = f.read() == b'%d.%d;' % (k, i) * 20
            except OSError as e:
                ok = False
            if not ok:
                bad.append(p)
if bad:
    sys.exit('%d files read wrong: %s' % (len(bad), bad[:3]))
PY
	! grep 'chunk records are usable' "$T/objfs.a.log" "$T/objfs.b.log"
}
ok "8 processes making 1,200 files of 100 bytes on A: each reads back whole on A and on B" small_files
keeps_version() {	# B opens, A rewrites in place (or renames over), B reads on
	python3 - "$A" "$B" "$T/v1" "$T/v2" "$1" <<'PY'
import os, sys, time
a, b, v1, v2, how = sys.argv[1:]
old, new = open(v1, 'rb').read(), open(v2, 'rb').read()
fb = os.open(b + '/f', os.O_RDONLY)
head = os.pread(fb, 1 << 20, 0)
if how == 'inplace':
    with open(a + '/f', 'wb') as f:
        f.write(new)
else:
    with open(a + '/f.tmp', 'wb') as f:
        f.write(new)
    os.rename(a + '/f.tmp', a + '/f')
os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
rest = os.pread(fb, 16 << 20, 1 << 20)
os.close(fb)
if head + rest != old:
    sys.exit("the reader on B saw a mixture")
if open(b + '/f', 'rb').read() != new:
    sys.exit("a new open on B does not see A's new version")
PY
}
ok "a reader on B keeps its version while A rewrites the file in place" keeps_version inplace
cp "$T/v1" "$A/f"
cu "$B"
ok "... and while A renames a new file over it" keeps_version rename
never_neither() {	# B polls the name while A renames new versions over it
	python3 - "$A" "$B" <<'PY'
import os, sys, threading, time
a, b = sys.argv[1:]
vers = [bytes([65 + i]) * 300000 for i in range(6)]
with open(a + '/ck', 'wb') as f:
    f.write(vers[0])
os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
stop = False
bad = []
def writer():
    global stop
    for v in vers[1:]:
        with open(a + '/ck.tmp', 'wb') as f:
            f.write(v)
        os.rename(a + '/ck.tmp', a + '/ck')
        time.sleep(0.15)
    os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
    stop = True
th = threading.Thread(target=writer)
th.start()
n = 0
while not stop:
    try:
        d = open(b + '/ck', 'rb').read()
    except FileNotFoundError:
        bad.append('neither')
        continue
    n += 1
    if d not in vers:
        bad.append('mixture of %d bytes' % len(d))
th.join()
last = open(b + '/ck', 'rb').read()
if bad or last != vers[-1]:
    sys.exit('%s; last is version %s (%d reads)' % (bad[:3], last[:1], n))
print('# %d reads of ck on B, each one whole version' % n)
PY
}
ok "renames over a name on A: B finds the old file or the new, never neither or a mixture" never_neither

# ---- the kernel's caches on a shared mount ----
# B's kernel keeps names and attributes (a second at most; the follower
# drops what another node changed): an open on B right after A's close
# must still find A's version, whether the kernel held the old name, the
# old size, or a name A removed.
warm_then() {	# HOW: B stats each file, A changes it, B opens it at once
	python3 - "$A" "$B" "$1" <<'PY'
import os, sys
a, b, how = sys.argv[1:]
bad = []
os.makedirs(a + '/warm', exist_ok=True)
for i in range(30):
    name = 'warm/again' if how == 'again' else 'warm/%s%d' % (how, i)
    old = b'old %d ' % i * (100 + i)
    new = b'new version %d ' % i * (5000 + 997 * i)
    with open(a + '/' + name, 'wb') as f:
        f.write(old)
    os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
    if os.stat(b + '/' + name).st_size != len(old):   # B's kernel holds it
        bad.append('%d: B did not see the old version' % i)
        continue
    if how == 'inplace':
        with open(a + '/' + name, 'wb') as f:
            f.write(new)
    elif how == 'rename':
        with open(a + '/' + name + '.tmp', 'wb') as f:
            f.write(new)
        os.rename(a + '/' + name + '.tmp', a + '/' + name)
    elif how == 'unlink':
        os.unlink(a + '/' + name)
    elif how in ('copy', 'again'):
        with open(a + '/' + name, 'wb') as f:
            f.write(new)
    try:
        fd = os.open(b + '/' + name, os.O_RDONLY)
    except FileNotFoundError:
        if how != 'unlink':
            bad.append('%d: ENOENT' % i)
        continue
    except OSError as e:
        bad.append('%d: %s' % (i, e))
        continue
    if how == 'unlink':
        bad.append('%d: opened a name A removed' % i)
        os.close(fd)
        continue
    if how in ('copy', 'again'):
        # copy_file_range trusts the kernel's size of the source
        out = os.open(b + '/warm/out%d' % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        while os.copy_file_range(fd, out, 1 << 20) > 0:
            pass
        os.close(out)
        got = open(b + '/warm/out%d' % i, 'rb').read()
        os.unlink(b + '/warm/out%d' % i)
    else:
        got = b''
        while True:
            piece = os.read(fd, 1 << 16)
            if not piece:
                break
            got += piece
    os.close(fd)
    if got != new:
        bad.append('%d: read %d bytes, not the %d of the new version' % (i, len(got), len(new)))
print('# %s: %d of 30 right' % (how, 30 - len(bad)))
for x in bad[:5]:
    print('#   ' + x)
sys.exit(1 if bad else 0)
PY
}
ok "B's kernel held the name and size: A rewrites in place, B opens at once and reads the new bytes, 30 of 30" warm_then inplace
ok "... A renames a new file over it: B opens the new file, 30 of 30" warm_then rename
ok "... A unlinks it: B's open finds no file, 30 of 30" warm_then unlink
ok "... A rewrites it longer: copy_file_range on B copies all of the new version, 30 of 30" warm_then copy
# One file, each version longer: an open that walked again once must not
# let a later open through with the size of a version before (the
# two-node fuzzer, seed 616812240).
ok "... A rewrites one file 30 times: copy_file_range on B copies each version whole" warm_then again
# The walk again after an ESTALE, raced: A renames a new file over the
# name B's kernel holds, then rewrites it 11 times, each version longer,
# while another thread on B looks up other names (present and missing).
# B's open must succeed, its own walk's pass not taken by that thread, and
# read one version whole: what its walk's lookup sized (a version applied
# between that lookup and the open gave its bytes with the older length,
# 4 of 200 on d0707b7, and 3 of 200 answered ESTALE: src/fs/walk.c).
walk_raced() {
	python3 - "$A" "$B" <<'PY' || return 1
import os, sys, threading
a, b, rounds = sys.argv[1], sys.argv[2], 40
bad = []
os.makedirs(a + '/warm', exist_ok=True)
stop = False
def others():      # another thread on B: lookups of names that are not there, and of one that is
    k = 0
    while not stop:
        k += 1
        try:
            os.stat(b + '/warm/none%d' % (k % 50))
        except FileNotFoundError:
            pass
        try:
            os.stat(b + '/warm/other')
        except OSError:
            pass
open(a + '/warm/other', 'wb').close()
y = threading.Thread(target=others); y.start()
vers = {}
for i in range(rounds):
    name = 'warm/steal%d' % (i % 30)
    old = b'old %d ' % i * (100 + i % 30)
    with open(a + '/' + name, 'wb') as f:
        f.write(old)
    os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
    if os.stat(b + '/' + name).st_size != len(old):
        bad.append('%d: B did not see the old version' % i); continue
    news = [b'new %d.%d ' % (i, k) * (3000 + 97 * k) for k in range(12)]
    with open(a + '/' + name + '.tmp', 'wb') as f:
        f.write(news[0])
    os.rename(a + '/' + name + '.tmp', a + '/' + name)
    def rewrite():
        for v in news[1:]:
            with open(a + '/' + name, 'r+b') as f:
                f.write(v)
                f.truncate(len(v))
    x = threading.Thread(target=rewrite); x.start()
    try:
        fd = os.open(b + '/' + name, os.O_RDONLY)
    except OSError as e:
        bad.append('%d: %s' % (i, e)); x.join(); continue
    got = b''
    while True:
        c = os.read(fd, 1 << 20)
        if not c: break
        got += c
    os.close(fd)
    x.join()
    if got not in news:
        bad.append('%d: read %d bytes, not one version' % (i, len(got)))
stop = True
y.join()
print('# %d of %d opens on B right' % (rounds - len(bad), rounds))
for x in bad[:5]:
    print('#   ' + x)
sys.exit(1 if bad else 0)
PY
	[ "$(figure "$B" remote_walk_passes)" -gt 0 ]
}
ok "... A renames over and rewrites at once while B's other thread looks names up: B's open reads one version whole, 40 of 40" walk_raced
stats_cached() {	# 1,000 stats of 5 unchanged files on B: the kernel answers
	python3 - "$B" <<'PY'
import os, sys
b = sys.argv[1]
def meta():
    for line in open(b + '/.objfs-status'):
        if line.startswith('latency_metadata_count:'):
            return int(line.split()[1])
names = ['%s/warm/inplace%d' % (b, i) for i in range(5)]
for n in names:
    os.stat(n)
m0 = meta()
for _ in range(200):
    for n in names:
        os.stat(n)
d = meta() - m0
print('# 1,000 stats of unchanged files on B: %d requests reached the daemon' % d)
sys.exit(0 if d < 100 else 1)
PY
}
ok "stats of unchanged files on B are answered by the kernel (fewer than 1 in 10 reach the daemon)" stats_cached

# ---- one writer per file ----
python3 -c "
import os, time, sys
fd = os.open('$A/w', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'a' * 1000)
open('$T/w-open', 'w').close()
while not os.path.exists('$T/w-close'):
    time.sleep(0.05)
os.close(fd)
open('$T/w-closed', 'w').close()
" &
WP=$!
seen_within "$T/w-open" 10
is_errno() {	# WANT PYTHON-EXPRESSION
	local got
	got=$(errno_of "$2")
	[ "$got" = "$1" ] || { echo "got $got"; return 1; }
}
ok "B's open for writing of a file A writes: EBUSY" is_errno EBUSY "os.close(os.open('$B/w', os.O_WRONLY))"
ok "B's truncate of it: EBUSY" is_errno EBUSY "os.truncate('$B/w', 0)"
ok "B reads its last published version meanwhile (empty)" sh -c "[ \"\$(stat -c %s '$B/w')\" = 0 ]"
touch "$T/w-close"
seen_within "$T/w-closed" 10
wait $WP
ok "after A's close: B's open for writing succeeds" is_errno OK "os.close(os.open('$B/w', os.O_WRONLY))"
ok "and B sees A's 1000 bytes" sh -c "[ \"\$(stat -c %s '$B/w')\" = 1000 ]"
ok "the refusals are counted" [ "$(figure "$B" remote_lease_refusals)" -ge 2 ]

# A killed while writing two files: B takes one after the lease lapses.
python3 -c "
import os, time
for n, c in (('k1', b'y'), ('k2', b'k')):
    fd = os.open('$A/' + n, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, c * 7000)
open('$T/k-open', 'w').close()
time.sleep(120)
" &
KP=$!
seen_within "$T/k-open" 10
kill -9 "$PA"
kill "$KP" 2>/dev/null; wait "$KP" 2>/dev/null
fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
lease_lapses() {
	python3 - "$B/k1" <<'PY'
import errno, os, sys, time
t0 = time.monotonic()
while True:
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY)
        break
    except OSError as e:
        if e.errno != errno.EBUSY or time.monotonic() - t0 > 30:
            sys.exit('open: %s after %.1f s' % (e, time.monotonic() - t0))
        time.sleep(0.2)
took = time.monotonic() - t0
os.write(fd, b'z' * 10)
os.close(fd)
print('# B took k1 %.1f s after A was killed (remote_lease=4)' % took)
if took < 1:
    sys.exit('before the lease could lapse')
PY
}
ok "A killed: B's open of A's file succeeds once A's lease lapsed" lease_lapses
ok "the broken lease is counted" [ "$(figure "$B" remote_leases_broken)" = 1 ]
ok "and logged" grep -q 'which is gone' "$T/objfs.b.log"
ok "A mounts again on its data directory" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID
ok "A drops what it wrote to the file B took: B's bytes stand on both" sh -c "
	[ \"\$(cat '$A/k1')\" = zzzzzzzzzz ] && [ \"\$(cat '$B/k1')\" = zzzzzzzzzz ] &&
	grep -q 'never published is dropped' '$T/objfs.a.log'"
ok "A publishes what it wrote to the file nobody took (7000 bytes on B)" sh -c "
	'$CTL' catch-up '$B' && [ \"\$(stat -c %s '$B/k2')\" = 7000 ] && [ \"\$(tr -d k <'$B/k2' | wc -c)\" = 0 ]"

# ---- A killed in the middle of publishing ----
# Versions of a 16 MiB file, each byte of version k equal to k: A writes
# one whole, and is SIGKILLed at a random moment of its fsync (chunks being
# put, the record being appended).  B must find one version whole, never
# a mixture; A's remount then publishes the version it had written.
whole_version() {	# whole_version FILE: prints k when FILE is version k
	python3 - "$1" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
if len(b) != 16 << 20 or b.count(b[0]) != len(b):
    sys.exit('a mixture: %d bytes, %d distinct byte values' % (
        len(b), len(set(b))))
print(b[0])
PY
}
head -c $((16 << 20)) /dev/zero | tr '\0' '\1' >"$A/ver"
cu "$B"
kill_publish() {
	local k delay v got
	for k in 2 3 4 5 6; do
		python3 -c "
import os, sys
fd = os.open('$A/ver', os.O_WRONLY)
os.pwrite(fd, bytes([$k]) * (16 << 20), 0)
open('$T/ver-written', 'w').close()
os.fsync(fd)
" 2>/dev/null &
		local w=$!
		seen_within "$T/ver-written" 20 || return 1
		delay=$(python3 -c "import random; print(random.uniform(0, 0.25))")
		sleep "$delay"
		kill -9 "$PA"
		wait "$w" 2>/dev/null
		rm -f "$T/ver-written"
		fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
		cu "$B" || return 1
		got=$(whole_version "$B/ver") || { echo "after a kill $delay s into fsync: $got"; return 1; }
		start_objfs "$A" "$T/dA" "$OPTS" >/dev/null || return 1
		PA=$OBJFS_PID
		cu "$B" || return 1
		v=$(whole_version "$B/ver") || { echo "after the remount: $v"; return 1; }
		[ "$v" = "$k" ] || { echo "after the remount B has version $v, A wrote $k"; return 1; }
		echo "# killed $delay s into the fsync of version $k: B had version $got, then $v"
	done
}
ok "A killed 5 times in the middle of publishing: B finds a whole version each time, then A's last" kill_publish

# ---- A's machine lost ----
lose_a() {
	python3 -c "
import os
for n in range(3):
    with open('$A/lost%d' % n, 'wb') as f:
        f.write(bytes([n + 7]) * (3 << 20))
        f.flush()
        os.fsync(f.fileno())
fd = os.open('$A/lost-open', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'q' * 100000)
os.fsync(fd)
open('$T/lost-ready', 'w').close()
import time
time.sleep(120)
" 2>/dev/null &
	local w=$!
	seen_within "$T/lost-ready" 30 || return 1
	kill -9 "$PA"
	kill "$w"; wait "$w" 2>/dev/null
	fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
	local arena
	arena=$(head -n 1 "$T/dA/arena" 2>/dev/null)
	rm -rf "$T/dA"
	case $arena in /dev/shm/objfs.*/arena) rm -rf "${arena%/arena}" ;; esac
	cu "$B" || return 1
	for n in 0 1 2; do
		python3 -c "
import sys
b = open('$B/lost$n', 'rb').read()
sys.exit(b != bytes([$n + 7]) * (3 << 20))" || { echo "lost$n differs on B"; return 1; }
	done
	[ "$(stat -c %s "$B/lost-open")" = 100000 ] || { echo "lost-open is not its fsynced 100000 bytes"; return 1; }
}
ok "A's machine lost (data directory and arena deleted): everything A fsynced reads on B" lose_a
ok "and the file A had open for writing is B's once A's lease lapsed" sh -c "
	python3 -c \"
import errno, os, sys, time
t0 = time.monotonic()
while True:
    try:
        os.close(os.open('$B/lost-open', os.O_WRONLY)); break
    except OSError as e:
        if e.errno != errno.EBUSY or time.monotonic() - t0 > 30: sys.exit(str(e))
        time.sleep(0.2)
\""
ok "A mounts again from an empty data directory" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID
ok "with every file" sh -c "cmp -s '$A/lost1' '$B/lost1' && [ \"\$(stat -c %s '$A/lost-open')\" = 100000 ]"

# ---- dedup and garbage collection across both ----
head -c 4M /dev/urandom >"$T/same"
cp "$T/same" "$A/s1"
before=$(rados_ls | grep -c '^c\.')
cp "$T/same" "$B/s2"
after=$(rados_ls | grep -c '^c\.')
ok "the same 4 MiB written on B adds no chunk to the pool ($before, $after)" [ "$before" = "$after" ]
python3 -c "
import os, time
fd = os.open('$A/open-w', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, os.urandom(3 << 20)); os.fsync(fd)
open('$T/g-open', 'w').close()
while not os.path.exists('$T/g-close'):
    time.sleep(0.05)
os.close(fd)
" &
GP=$!
seen_within "$T/g-open" 20
gc_deferred() {
	if setfattr -n user.objfs.gc -v 0 "$B/.objfs-status" 2>"$T/gc.err"; then
		echo "the collection ran"
		return 1
	fi
	grep -q "busy" "$T/gc.err" && grep -q "deferred" "$T/objfs.b.log" &&
	[ "$(figure "$B" remote_leases_elsewhere)" = 1 ] &&
	[ "$(figure "$A" remote_leases_here)" = 1 ]
}
ok "a collection on B is deferred while A writes a file, and says why" gc_deferred
touch "$T/g-close"
wait $GP
rm -f "$B/d1/from-b"
cu "$B"
ok "a collection on B (grace 0) runs" gc_runs "$B" "$T/objfs.b.log"
reads_all() {
	for m in "$A" "$B"; do
		cmp -s "$T/same" "$m/s1" && cmp -s "$T/same" "$m/s2" &&
		cmp -s "$T/v2" "$m/f" && [ "$(stat -c %s "$m/open-w")" = $((3 << 20)) ] &&
		cat "$m/open-w" "$m/ck" "$m/k2" >/dev/null || return 1
	done
	# From empty data directories: every chunk comes from the pool.
	start_objfs "$T/c" "$T/dC" "$OPTS" || return 1
	cmp -s "$T/same" "$T/c/s1" && cmp -s "$T/v2" "$T/c/f" &&
	cat "$T/c/open-w" "$T/c/ck" >/dev/null
	local r=$?
	stop_objfs "$T/c" && return $r
}
mkdir -p "$T/c"
ok "after it, every file reads on A, on B and on a third node from empty" reads_all

# ---- one call, one timeout: the OSD stopped under both nodes ----
# Each system call answers within remote_timeout (8 s) and 2 s, whatever
# it waits for (on 67f5056 one open(O_CREAT) took 109 s with 30 s: a
# lookup's wait, then the create's, then more).
echo tail >"$A/ot-have"
dd if=/dev/urandom of="$A/ot-big" bs=1M count=2 status=none
cu "$A" "$B"
ok "the OSD stops" bash "$CL" osd-stop "$C"
bounded_calls() {	# bounded_calls MOUNT: each call below, timed
	python3 - "$1" "$2" <<'PY'
import errno, os, sys, time
m, other = sys.argv[1], sys.argv[2]
calls = [
    ("open(O_CREAT) of a new name", lambda: os.close(os.open(m + "/ot-new", os.O_CREAT | os.O_WRONLY, 0o644))),
    ("mkdir", lambda: os.mkdir(m + "/ot-dir")),
    ("stat of a name another node made", lambda: os.stat(m + "/ot-have")),
    ("open for writing of another node's file", lambda: os.close(os.open(m + "/ot-have", os.O_WRONLY))),
    ("rename", lambda: os.rename(m + "/ot-have", m + "/ot-moved")),
    ("unlink", lambda: os.unlink(m + "/ot-big")),
]
worst = 0.0
for what, fn in calls:
    t0 = time.monotonic()
    try:
        fn()
        how = "ok"
    except OSError as e:
        how = errno.errorcode.get(e.errno, str(e.errno))
    took = time.monotonic() - t0
    worst = max(worst, took)
    print("# %s on %s: %s in %.1f s" % (what, m.rsplit("/", 1)[1], how, took))
    if took > 10.0:
        print("# ... past remote_timeout (8 s) and 2 s")
        sys.exit(1)
print("# the longest: %.1f s" % worst)
PY
}
calls_to() { bounded_calls "$1" "$2" >"$3"; }	# the times kept
ok "with the OSD stopped, each call on A answers within remote_timeout + 2 s" \
	calls_to "$A" "$B" "$T/calls.a"
cat "$T/calls.a"
ok "... and on B" calls_to "$B" "$A" "$T/calls.b"
cat "$T/calls.b"
ok "the OSD starts again" bash "$CL" osd-start "$C"
back() {	# back MOUNT: a create goes through again, within 90 s
	python3 - "$1" <<'PY'
import os, sys, time
deadline = time.time() + 90
while True:
    try:
        os.close(os.open(sys.argv[1] + "/ot-after", os.O_CREAT | os.O_WRONLY, 0o644))
        os.unlink(sys.argv[1] + "/ot-after")
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(1)
PY
}
ok "then a create goes through on A" back "$A"
ok "... and on B" back "$B"
cu "$A" "$B"
agree() {	# both nodes list the same names, and read the same bytes
	[ "$(ls "$A" | sort)" = "$(ls "$B" | sort)" ] || return 1
	for f in "$A"/ot-*; do
		[ -f "$f" ] || continue
		cmp -s "$f" "$B/${f##*/}" || return 1
	done
}
ok "... and the nodes agree on what the calls left" agree

ok "B unmounts" stop_objfs "$B" "$PB"
ok "A unmounts" stop_objfs "$A" "$PA"
ok "an exclusive mount takes the namespace once no shared one holds it" start_objfs "$A" "$T/dE" "arena=128M,$R"
ok "with the shared mounts' tree" cmp -s "$T/v2" "$A/f"
ok "and unmounts" stop_objfs "$A"
t_done
