#!/bin/bash
# SPDX-License-Identifier: MIT
# A shared namespace you can trust (doc/design.md, "Many nodes on one
# namespace": each check names the invariant, I2-I7, it tries to break;
# I1 and I8 are remote_shared.sh's and the fuzzer's), tested the way an
# operator's bad day looks: node daemons paused (SIGSTOP: a GC pause, a
# frozen VM, a partition) past remote_lease and resumed, on a real
# single-node Ceph cluster (tests/ceph/cluster.sh):
#   - I2/I3 fencing: A paused while it writes a file; B takes the file
#     once A's lease lapsed, writes and fsyncs; A resumes: A's fsync,
#     write and close fail with EIO, B's version stands on A, on B and on
#     a fresh mount, and everything A acknowledged before is there; and
#     when B holds the file it broke the lease of, writing nothing, A's
#     fsync queued while A was stopped fails too;
#   - I4 close-to-open: 50 files closed on A and opened at once on B;
#   - I5 readers keep their version at every offset while another node
#     rewrites, renames over and unlinks the file, also after a
#     collection with grace 0;
#   - I6 bounded history: the log is compacted while nodes work, a fresh
#     node reads a snapshot and a short tail, records nobody needs are
#     removed; a node paused past its lease while the log is compacted
#     past it stops writing, and remounts with the whole tree;
#   - I7 exclusive failover: a mount paused past its hold, resumed while
#     its successor builds the tree or after: nothing it acknowledged is
#     missing from the successor's tree;
#   - the code-review findings: a file's publish while its parts are read
#     and the spiller writes it out (lock order), a close that fails while the pool is full (its
#     lease given back once the file is published), files unlinked while
#     open (no nameless file left in the tree), first opens of a sealed
#     object at once (no EIO).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
t_ceph "a shared namespace under pauses"
NS=p$$
R="remote=rados:objfs/$NS,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
OPTS="arena=128M,$R,shared,remote_lease=4,remote_compact=200"
A=$T/a B=$T/b
mkdir -p "$A" "$B" "$T/c" "$T/d" "$T/e1" "$T/e2"
CTL=$(dirname "$OBJFS_BIN")/objfsctl
figure() { sed -n "s/^$2: //p" "$1/.objfs-status"; }
cu() { local m; for m; do "$CTL" catch-up "$m" || return 1; done; }
# paused PID SECONDS COMMAND...: COMMAND runs while PID is stopped for at
# least SECONDS; PID is resumed after, whatever COMMAND did.
paused() {
	local pid=$1 secs=$2 rc
	shift 2
	kill -STOP "$pid" || return 1
	sleep "$secs"
	"$@"
	rc=$?
	kill -CONT "$pid"
	return $rc
}

"$OBJFS_BIN" -f -o "data=$T/bad,arena=64M,$R,shared,remote_compact=lots" "$T/c" >"$T/o1" 2>&1
ok "remote_compact= that is not a number is refused" grep -q 'remote_compact=lots: must be a number of log records' "$T/o1"
"$OBJFS_BIN" -f -o "data=$T/bad,arena=64M,$R,remote_compact=5" "$T/c" >"$T/o2" 2>&1
ok "remote_compact= without shared is refused" grep -q 'remote_compact= is for shared mounts' "$T/o2"
ok "mount A" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID
ok "mount B" start_objfs "$B" "$T/dB" "$OPTS"
PB=$OBJFS_PID

# ---- I2, I3: a paused writer is fenced ----
fenced_writer() {
	python3 - "$A" "$B" "$PA" "$CTL" <<'PY'
import errno, os, signal, subprocess, sys, time
a, b, pa, ctl = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
v = lambda c: bytes([c]) * 300000
# A acknowledged these before its pause: they must survive it.
with open(a + '/kept', 'wb') as f:
    f.write(v(0x4b)); f.flush(); os.fsync(f.fileno())
fd = os.open(a + '/x', os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, v(0x31), 0); os.fsync(fd)          # v1, acknowledged
os.pwrite(fd, v(0x32), 0)                         # v2, never fsynced
os.kill(pa, signal.SIGSTOP)
try:
    time.sleep(5)                                 # past remote_lease=4
    t0 = time.monotonic()
    while True:
        try:
            fb = os.open(b + '/x', os.O_WRONLY); break
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() - t0 > 30: raise
            time.sleep(0.2)
    os.pwrite(fb, v(0x33), 0); os.fsync(fb); os.close(fb)   # v3, B's
finally:
    os.kill(pa, signal.SIGCONT)
errs = []
for what, call in (('fsync', lambda: os.fsync(fd)),
                   ('write', lambda: os.pwrite(fd, v(0x34), 0)),
                   ('close', lambda: os.close(fd))):
    try:
        call(); errs.append('%s succeeded' % what)
    except OSError as e:
        if e.errno != errno.EIO: errs.append('%s: %s' % (what, e))
if errs:
    sys.exit('A after its lease was broken: ' + ', '.join(errs))
subprocess.run([ctl, 'catch-up', a], check=True)
for m in (a, b):
    if open(m + '/x', 'rb').read() != v(0x33):
        sys.exit('%s does not read B\'s fsynced version' % m)
    if open(m + '/kept', 'rb').read() != v(0x4b):
        sys.exit('%s lost a file A fsynced before its pause' % m)
PY
}
ok "I2/I3: A paused past its lease while writing: B's fsynced version stands on both, A's fsync, write and close answer EIO" fenced_writer
ok "I3: A's log names the file and what it dropped" grep -q 'fenced: this node lost its write lease' "$T/objfs.a.log"
ok "I2: A noticed that its lock had lapsed (not taken back silently)" \
	sh -c "[ \"\$(sed -n 's/^remote_lock_lapses: //p' '$A/.objfs-status')\" -ge 1 ]"
ok "I3: the lease counted as fenced on A" [ "$(figure "$A" remote_leases_fenced)" -ge 1 ]
ok "I3: objfsctl status on A names the fenced file" sh -c "
	'$CTL' status '$A' >'$T/st.a' &&
	grep -Eq '^fenced_last_inode +'\$(stat -c %i '$B/x')\$ '$T/st.a' &&
	grep -Eq '^fenced_files_total +[1-9]' '$T/st.a'"
ok "a fresh mount reads B's version" start_objfs "$T/c" "$T/dC" "$OPTS"
ok "... byte for byte" python3 -c "
import sys
sys.exit(open('$T/c/x', 'rb').read() != bytes([0x33]) * 300000)"
ok "... and unmounts" stop_objfs "$T/c"
rewrite_after() {	# the fenced file is A's to write again once closed
	printf 'v4' >"$A/x" && cu "$B" && [ "$(cat "$B/x")" = v4 ]
}
ok "I3: once its writers closed, A writes the file again (a new lease)" rewrite_after

# B breaks A's lease by opening the file and holds it open, writing
# nothing; A's fsync was sent while A was stopped, so it may run before
# A has handled its lapse.  The break publishes the file as A last
# published it: a fsync that finds the tree as it published it must
# still fail (on bbdc18f, 2 of 8 such fsyncs returned 0).
broken_then_held() {
	python3 - "$A" "$B" "$PA" <<'PY'
import errno, os, signal, sys, threading, time
a, b, pa = sys.argv[1], sys.argv[2], int(sys.argv[3])
v = lambda c: bytes([c]) * 300000
bad = []
for i in range(5):
    x = 'held%d' % i
    fd = os.open('%s/%s' % (a, x), os.O_CREAT | os.O_WRONLY, 0o644)
    os.pwrite(fd, v(0x31), 0); os.fsync(fd)
    os.pwrite(fd, v(0x32), 0)
    res = []
    def fsync():
        try:
            os.fsync(fd); res.append('fsync succeeded')
        except OSError as e:
            if e.errno != errno.EIO: res.append('fsync: %s' % e)
    os.kill(pa, signal.SIGSTOP)
    try:
        time.sleep(5)                             # past remote_lease=4
        t0 = time.monotonic()
        while True:
            try:
                fb = os.open('%s/%s' % (b, x), os.O_WRONLY); break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() - t0 > 30:
                    raise
                time.sleep(0.2)
        th = threading.Thread(target=fsync); th.start()
        time.sleep(0.3)                           # queued in /dev/fuse
    finally:
        os.kill(pa, signal.SIGCONT)
    th.join()
    try:
        os.pwrite(fd, v(0x34), 0); res.append('write succeeded')
    except OSError as e:
        if e.errno != errno.EIO: res.append('write: %s' % e)
    try:
        os.close(fd)
    except OSError:
        pass
    os.close(fb)
    bad += ['%s: %s' % (x, r) for r in res]
if bad:
    sys.exit('A after B broke its lease and holds the file: ' + ', '.join(bad))
PY
}
ok "I2/I3: 5 times, B breaks A's lease and holds the file open, A's fsync sent while A is stopped: EIO, and its write after" broken_then_held

# ---- I4: close-to-open ----
close_open() {
	python3 - "$A" "$B" <<'PY'
import os, sys
a, b = sys.argv[1:]
bad = []
for i in range(50):
    want = b'closed on A %d ' % i * (1 + i * 37)
    with open('%s/c2o%d' % (a, i), 'wb') as f:
        f.write(want)
    try:
        got = open('%s/c2o%d' % (b, i), 'rb').read()
    except OSError as e:
        got = repr(e).encode()
    if got != want:
        bad.append(i)
print('# %d of 50 files closed on A and opened at once on B read their bytes' % (50 - len(bad)))
sys.exit(1 if bad else 0)
PY
}
ok "I4: 50 of 50 files closed on A and opened at once on B read their bytes" close_open

# ---- I5: readers keep their version ----
keeps_version() {	# HOW: rewrite, rename, unlink, gc
	python3 - "$A" "$B" "$1" <<'PY'
import os, random, sys, time
a, b, how = sys.argv[1:]
cu = lambda m: os.setxattr(m + '/.objfs-status', 'user.objfs.catch_up', b'1')
old, new = os.urandom(8 << 20), os.urandom(8 << 20)
with open(a + '/r', 'wb') as f:
    f.write(old)
cu(b)
fb = os.open(b + '/r', os.O_RDONLY)
if os.pread(fb, 4096, 0) != old[:4096]:
    sys.exit('B reads the wrong first page')
if how in ('rewrite', 'gc'):
    with open(a + '/r', 'wb') as f:
        f.write(new)
elif how == 'rename':
    with open(a + '/r.new', 'wb') as f:
        f.write(new)
    os.rename(a + '/r.new', a + '/r')
else:
    os.unlink(a + '/r')
cu(b)
if how == 'gc':
    # As tests/lib.sh gc_runs: retried only while a live node did not
    # answer (one whose watch a pause broke answers once it watches
    # again); any other refusal fails, saying which it was.
    for i in range(40):
        try:
            os.setxattr(a + '/.objfs-status', 'user.objfs.gc', b'0')
            break
        except OSError as e:
            last = [l for l in open(a + '/.objfs-status').read().splitlines()
                    if l.startswith('remote_gc_last')]
            if 'did not answer' not in str(last) or i == 39:
                sys.exit('collection on A: %s; %s' % (e, last))
            time.sleep(0.5)
bad = []
# Every offset, in an order that jumps about (a reader's part reads,
# not only the sequential whole-chunk ones).
offs = [(6 << 20) + 512, (7 << 20) + 512] + \
    [off + 512 for off in range(0, 8 << 20, 128 << 10)]
random.Random(7).shuffle(offs[2:])
for off in offs:
    try:
        if os.pread(fb, 4096, off) != old[off:off + 4096]:
            bad.append('%d: other bytes' % off)
    except OSError as e:
        bad.append('%d: %s' % (off, e))
os.close(fb)
if bad:
    sys.exit('%d of %d reads wrong: %s' % (len(bad), len(offs), bad[:3]))
PY
}
ok "I5: a reader on B reads its version at every offset after A rewrites the file" keeps_version rewrite
ok "I5: ... after A renames another file over it" keeps_version rename
ok "I5: ... after A unlinks it" keeps_version unlink
ok "I5: ... after A rewrites it and collects with grace 0" keeps_version gc
ok "I5: the collection kept the open version's chunks (named as pinned)" \
	grep -q 'of open versions' "$T/objfs.a.log"

# ---- I6: bounded history ----
history() {
	python3 - "$A" <<'PY'
import os, sys
a = sys.argv[1]
os.mkdir(a + '/h')
for i in range(300):
    with open('%s/h/f%d' % (a, i), 'wb') as f:
        f.write(b'%d' % i * 10)
for i in range(1200):
    p = '%s/h/t%d' % (a, i)
    with open(p, 'wb') as f:
        f.write(b't')
    os.unlink(p)
PY
}
ok "I6: 300 files, then 1200 creates and deletes, on A" history
compacted() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(figure "$A" remote_compactions)" -ge 2 ] &&
		[ "$(figure "$A" remote_log_records_removed)" -gt 0 ] && return 0
		sleep 0.1
	done
	echo "compactions $(figure "$A" remote_compactions), removed $(figure "$A" remote_log_records_removed)"
	return 1
}
ok "I6: the log was compacted while A worked, and records removed" compacted
fresh_tail() {
	start_objfs "$T/d" "$T/dD" "$OPTS" || return 1
	local tail
	tail=$(sed -n 's/.*built from the pool (snapshot of commit [0-9]* in [0-9]* part(s), [0-9]* record(s), then \([0-9]*\) log record(s)).*/\1/p' "$T/objfs.d.log")
	echo "# a fresh node read a snapshot and $tail log record(s)"
	[ -n "$tail" ] && [ "$tail" -le 600 ] || return 1
	[ "$(ls "$T/d/h" | wc -l)" = 300 ] && [ "$(cat "$T/d/h/f299")" = "$(python3 -c "print('299' * 10, end='')")" ]
}
ok "I6: a fresh node reads the latest snapshot and a short tail, with all 300 files" fresh_tail
logs=$(rados -c "$CONF" -p objfs -N "$NS" ls | grep -c '^objfs\.log\.')
pos=$(figure "$A" remote_log_position)
echo "# log records in the pool: $logs of $pos appended"
ok "I6: log records nobody needs are gone from the pool ($logs of $pos)" [ "$logs" -lt $((pos / 2)) ]
ok "... and the fresh node unmounts" stop_objfs "$T/d"
behind() {	# B stopped while the log is compacted past it
	kill -STOP "$PB"
	python3 - "$A" <<'PY'
import os, sys, time
a = sys.argv[1]
time.sleep(5)
for i in range(900):
    p = '%s/h/p%d' % (a, i)
    with open(p, 'wb') as f:
        f.write(b'p')
    os.unlink(p)
with open(a + '/h/after', 'w') as f:
    f.write('made while B was stopped')
PY
	local n made=$?
	for ((n = 0; n < 100; n++)); do
		[ "$(figure "$A" remote_compactions)" -ge 5 ] && break
		sleep 0.1
	done
	kill -CONT "$PB"
	# A, working alone meanwhile, had every call answered.
	[ "$made" = 0 ] || { echo "A's creates failed ($made)"; return 1; }
	# B writes nothing into a log it can no longer follow: an operation
	# fails, or (the log not compacted past it after all) works.
	if python3 -c "open('$B/h/from-b', 'w').write('b')" 2>/dev/null; then
		cu "$A" && [ "$(cat "$A/h/from-b")" = b ] || return 1
		echo "# B was not left behind (it could follow the log)"
	else
		grep -q 'compacted past where it had read it' "$T/objfs.b.log" || return 1
		echo "# B stopped writing: the log was compacted past it"
	fi
}
ok "I6: B paused while the log is compacted past it: it writes nothing it cannot order" behind
unmount_any() {	# MOUNT PID: unmounted and gone, whatever its status
	fusermount3 -u "$1" && wait_pid_gone "$2" 60
}
ok "I6: B unmounts" unmount_any "$B" "$PB"
ok "I6: B mounts again on its data directory" start_objfs "$B" "$T/dB" "$OPTS"
PB=$OBJFS_PID
whole_tree() {
	local after n
	after=$(cat "$B/h/after")
	n=$(ls "$B/h" | grep -c '^f')
	[ "$after" = 'made while B was stopped' ] && [ "$n" = 300 ] && return 0
	echo "# B sees after='$after' and $n f-files; its log:"
	grep -E 'remote|lapsed|compact' "$T/objfs.b.log" | tail -n 30 | sed 's/^/# /'
	return 1
}
ok "... with the whole tree, the file made while it was stopped too" whole_tree

# ---- I7: exclusive failover ----
EX="remote=rados:objfs/x$$,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
failover() {	# WHEN (building, mounted): resume the old mount then
	local when=$1 data=$T/dE1.$1 data2=$T/dE2.$1
	start_objfs "$T/e1" "$data" "arena=64M,$EX" || return 1
	local p1=$OBJFS_PID
	: >"$T/objfs.e2.log"
	python3 - "$T/e1" "$T/e2" "$p1" "$OBJFS_BIN" "$data2" "$EX" "$when" "$T/objfs.e2.log" "$T/e2.pid" <<'PY'
import errno, os, signal, subprocess, sys, time
e1, e2, p1, binp, d2, ex, when, log, pidf = sys.argv[1:]
p1 = int(p1)
for i in range(400):
    with open('%s/t%d' % (e1, i), 'w') as f:
        f.write('%d' % i * 20)
fd = os.open(e1 + '/x', os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b'1' * 100000, 0); os.fsync(fd)
os.pwrite(fd, b'2' * 100000, 0)
os.kill(p1, signal.SIGSTOP)
time.sleep(5)                     # past remote_hold=4
p = subprocess.Popen([binp, '-f', '-o', 'data=%s,arena=64M,%s' % (d2, ex), e2],
                     stdout=open(log, 'a'), stderr=subprocess.STDOUT)
open(pidf, 'w').write(str(p.pid))
t0 = time.monotonic()
stopped = False
want = 'the tree built from the pool' if when == 'building' else 'mounted '
while time.monotonic() - t0 < 30:
    if want in open(log).read():
        break
    time.sleep(0.002)
else:
    os.kill(p1, signal.SIGCONT)
    sys.exit('the successor never got there')
if when == 'building':
    # The successor has read the old epoch's log and not yet made its
    # own head: held there while the old mount comes back.
    os.kill(p.pid, signal.SIGSTOP)
    stopped = True
os.kill(p1, signal.SIGCONT)
try:
    os.fsync(fd)
    acked = b'2'
except OSError as e:
    if e.errno != errno.EIO:
        sys.exit('fsync: %s' % e)
    acked = b'1'
try:
    os.close(fd)
except OSError:
    pass
if stopped:
    os.kill(p.pid, signal.SIGCONT)
t0 = time.monotonic()
while not os.path.ismount(e2):
    if time.monotonic() - t0 > 30:
        sys.exit('the successor did not mount')
    time.sleep(0.05)
got = open(e2 + '/x', 'rb').read()
if acked == b'2' and got != b'2' * 100000:
    sys.exit('the old mount acknowledged an fsync its successor does not have')
if got[:1] not in (b'1', b'2') or len(got) != 100000:
    sys.exit('the successor reads neither version')
if len(os.listdir(e2)) != 401:
    sys.exit('the successor has %d names, not 401' % len(os.listdir(e2)))
print('# resumed while its successor was %s: fsync %s' % (when,
      'acknowledged, and in the successor' if acked == b'2' else 'failed with EIO'))
PY
	local rc=$? p2
	p2=$(cat "$T/e2.pid" 2>/dev/null)
	[ -n "$p2" ] && T_PIDS+=("$p2") && T_MOUNTS+=("$T/e2")
	fusermount3 -u "$T/e1" 2>/dev/null || umount -l "$T/e1"
	wait_pid_gone "$p1" 20 || kill -9 "$p1"
	[ -n "$p2" ] && { fusermount3 -u "$T/e2"; wait_pid_gone "$p2" 30; }
	return $rc
}
ok "I7: an exclusive mount paused past its hold, resumed while its successor builds the tree" failover building
ok "I7: ... and resumed after its successor mounted" failover mounted
# Either way of noticing is right: its renewal finds the hold taken, or
# its next publish finds its epoch's log fenced.  Once in each run.
ok "I7: the old mount says it lost the namespace, both times" sh -c "
	[ \$(grep -Ec 'took the namespace over|the hold was taken by another mount' '$T/objfs.e1.log') -ge 2 ]"

# ---- the code-review findings ----
# F1: a publish took the index's transaction, then the inode's lock; the
# spiller, fsync and reads take them the other way round.  A writer
# streaming a file through a small arena (the spiller writes it out)
# while another thread fsyncs it (publishes) deadlocked the mount.
lock_order() {
	timeout 120 python3 - "$T/f1" <<'PY'
import mmap, os, random, sys, threading, time
m = sys.argv[1]
fd = os.open(m + '/stream', os.O_CREAT | os.O_RDWR, 0o644)
stop = False
err = []
def syncer():
    while not stop:
        try:
            os.fsync(fd)
        except OSError as e:
            err.append(e)
        time.sleep(0.005)
def reader():		# small reads all over: a chunk's part, its sums
    rnd = random.Random(3)  # read from its record under the inode's lock
    rfd = os.open(m + '/stream', os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    while not stop:
        try:
            os.preadv(rfd, [buf], rnd.randrange(0, 96) << 20 |
                      rnd.randrange(0, 256) << 12)
        except OSError as e:
            err.append(e)
    os.close(rfd)
th = [threading.Thread(target=syncer), threading.Thread(target=reader),
      threading.Thread(target=reader)]
for t in th:
    t.start()
block = os.urandom(1 << 20)
t0 = time.monotonic()
try:
    for rounds in range(2):
        for i in range(96):            # 96 MiB through a 32 MiB arena
            os.pwrite(fd, block, i << 20)
finally:
    stop = True
    for t in th:
        t.join()
os.close(fd)
if err:
    sys.exit('fsync or read: %s' % err[0])
print('# 192 MiB written through a 32 MiB arena while fsyncs published it and reads read it, in %.1f s' % (time.monotonic() - t0))
PY
}
mkdir -p "$T/f1"
ok "F1: a shared mount with a 32 MiB arena" start_objfs "$T/f1" "$T/dF1" "arena=32M,spill_high=50,spill_low=20,$R,shared,remote_lease=4"
PF1=$OBJFS_PID
ok "F1: a file streamed through the arena while another thread fsyncs it: no deadlock" lock_order
ok "F1: unmounts" stop_objfs "$T/f1" "$PF1"

# F2: a close that failed (the cluster away, or full) left the file's
# lease held until unmount (EBUSY on every other node, collections
# deferred).  Now the lease stays while the bytes are only on A, and the
# follower publishes them and gives it back once it can.  The pool made
# full (the OSD's full ratio below what it holds) fails A's close and the
# RELEASE after it at once, with ENOSPC.  (The OSD stopped past
# remote_timeout would do the same in 2 x 8 s; a single OSD stopped that
# long here is sometimes left with its placement groups "waiting for
# readable" for good.)
close_when_full() {	# WRITER READER: nodes
	python3 - "$1" "$2" "$CONF" <<'PY'
import errno, os, subprocess, sys, time
a, b, conf = sys.argv[1:]
def ceph(*args):
    subprocess.run(['timeout', '20', 'ceph', '-c', conf] + list(args),
                   check=True, capture_output=True)
def ratios(n, bf, f):
    ceph('osd', 'set-nearfull-ratio', n)
    ceph('osd', 'set-backfillfull-ratio', bf)
    ceph('osd', 'set-full-ratio', f)
def full(want):
    for _ in range(120):
        h = subprocess.run(['timeout', '10', 'ceph', '-c', conf, 'health'],
                           capture_output=True, text=True).stdout
        if (' full osd' in h) == want:
            return
        time.sleep(0.5)
    sys.exit('the cluster is not %s after 60 s' % ('full' if want else 'free'))
# Opened (its lease taken) while the pool has room; written; the pool
# full; closed.  The OSD learns that it is full a moment after the
# monitor says so: until its close fails, the file is opened again.
fd = os.open(a + '/fc', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'f' * 200000)
ratios('0.001', '0.002', '0.003')
try:
    full(True)
    for tries in range(100):
        try:
            os.close(fd)
        except OSError as e:
            print('# close with the pool full: %s' % errno.errorcode.get(e.errno))
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                sys.exit('close: %s' % e)
            break
        time.sleep(0.2)
        fd = os.open(a + '/fc', os.O_WRONLY)
        os.pwrite(fd, b'f' * 200000, 0)
    else:
        sys.exit('closes succeeded for 20 s with the pool full')
    time.sleep(1)		# its RELEASE, failed too
    try:
        os.close(os.open(b + '/fc', os.O_WRONLY))
        sys.exit('B opened it for writing while A still has it')
    except OSError as e:
        if e.errno != errno.EBUSY:
            sys.exit('B: %s' % e)
finally:
    ratios('0.85', '0.90', '0.95')
    full(False)
PY
}
b_gets_it() {	# READER
	python3 - "$1" <<'PY'
import errno, os, sys, time
b = sys.argv[1]
t0 = time.monotonic()
while True:
    try:
        fd = os.open(b + '/fc', os.O_WRONLY)
        break
    except OSError as e:
        if e.errno != errno.EBUSY or time.monotonic() - t0 > 60:
            sys.exit('B, %.0f s after the pool had room: %s' % (
                time.monotonic() - t0, e))
        time.sleep(0.2)
os.close(fd)
if open(b + '/fc', 'rb').read() != b'f' * 200000:
    sys.exit('B does not read what A wrote before its close failed')
print('# B had the file %.1f s after the pool had room' % (time.monotonic() - t0))
PY
}
# Two more nodes, whose locks outlast the pool's full spell (a node's
# renewal is a write the full pool refuses: past remote_lease another
# node may break its lease, which is fencing, not this finding).
mkdir -p "$T/fa" "$T/fb"
F2OPTS="arena=64M,$R,shared,remote_lease=60"
ok "F2: node FA (remote_lease=60)" start_objfs "$T/fa" "$T/dFA" "$F2OPTS"
PFA=$OBJFS_PID
ok "F2: node FB (remote_lease=60)" start_objfs "$T/fb" "$T/dFB" "$F2OPTS"
PFB=$OBJFS_PID
ok "F2: FA's close of a file fails while the pool is full, and the lease stays (FB: EBUSY)" \
	close_when_full "$T/fa" "$T/fb"
ok "F2: the pool has room again: FA publishes the file, gives its lease back, and FB gets it" \
	b_gets_it "$T/fb"
ok "F2: ... said in FA's log" grep -q 'its close had failed' "$T/objfs.fa.log"
ok "F2: FA and FB unmount" sh -c "fusermount3 -u '$T/fa' && fusermount3 -u '$T/fb'"
wait_pid_gone "$PFA" 60; wait_pid_gone "$PFB" 60

# F3: the destroy of a file unlinked while open committed outside the
# shared retry path: when another node's record came first, it failed
# and the nameless file stayed in the tree.
nameless() {
	python3 - "$A" "$B" <<'PY' || return 1
import os, sys, threading
a, b = sys.argv[1:]
os.makedirs(a + '/u', exist_ok=True)
os.setxattr(b + '/.objfs-status', 'user.objfs.catch_up', b'1')
stop = False
def creates():
    i = 0
    while not stop:
        with open('%s/u/b%d' % (b, i), 'w') as f:
            f.write('b')
        i += 1
th = threading.Thread(target=creates)
th.start()
try:
    for i in range(150):
        fd = os.open('%s/u/a%d' % (a, i), os.O_CREAT | os.O_RDWR, 0o644)
        os.write(fd, b'unlinked while open')
        os.unlink('%s/u/a%d' % (a, i))
        os.close(fd)                   # the last close: destroyed
finally:
    stop = True
    th.join()
PY
	# A lets its inodes go (unmounted: every one destroyed, or handed
	# to its follower and done before it stops); then the tree must
	# hold no inode without a name.
	stop_objfs "$A" "$PA" || return 1
	start_objfs "$T/c" "$T/dF3" "$OPTS" >/dev/null || return 1
	stop_objfs "$T/c" >/dev/null || return 1
	"$CTL" check "$T/dF3" >"$T/f3.check" 2>&1
	if grep -q 'has no name' "$T/f3.check"; then
		echo "$(grep -c 'has no name' "$T/f3.check") nameless inode(s) in the tree:"
		grep 'has no name' "$T/f3.check" | head -n 5
		return 1
	fi
}
ok "F3: 150 files unlinked while open on A, destroyed while B creates: none stays in the tree" nameless
ok "F3: A mounts again" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID

# F4: two first opens of a sealed object at once: its per-object file's
# build lets the inode's lock go while it waits for a read-ahead, and
# the other open was served by the daemon: the kernel gave one of them
# EIO.  A fresh node (every chunk from the pool: long builds) opens a
# sealed object from 8 threads at once.
sealed_opens() {
	python3 -c "
with open('$A/sealed', 'wb') as f:
    for i in range(48):
        f.write(bytes([i]) * (1 << 20))" || return 1
	chattr +i "$A/sealed" || return 1
	start_objfs "$T/c" "$T/dF4" "$OPTS" >/dev/null || return 1
	python3 - "$T/c" <<'PY'
import os, sys, threading
c = sys.argv[1]
bad = []
def reader(k):
    try:
        with open(c + '/sealed', 'rb') as f:
            for i in (k * 5 % 48, 47 - k, 0):
                f.seek(i << 20)
                if f.read(4096) != bytes([i]) * 4096:
                    bad.append('%d: wrong bytes at %d MiB' % (k, i))
    except OSError as e:
        bad.append('%d: %s' % (k, e))
ths = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
for t in ths:
    t.start()
for t in ths:
    t.join()
if bad:
    sys.exit('; '.join(bad))
PY
	local rc=$?
	stop_objfs "$T/c" >/dev/null
	return $rc
}
ok "F4: 8 first opens at once of a sealed object on a fresh node: no EIO" sealed_opens

ok "B unmounts" stop_objfs "$B" "$PB"
ok "A unmounts" stop_objfs "$A" "$PA"
t_done
