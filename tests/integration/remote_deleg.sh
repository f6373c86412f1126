#!/bin/bash
# SPDX-License-Identifier: MIT
# Directory delegations on a shared tree (doc/design.md, "Delegations"),
# two mounts of one namespace on a real single-node Ceph cluster: a node
# working alone in a directory holds it and keeps its changes in its
# outbox, shipped in batches; another node's lookup, listing or change
# there recalls it first.  What does not change is checked with nodes
# killed and paused: close-to-open, O_EXCL (one winner of two nodes),
# fsync durable in the pool, a killed holder's data directory shipping
# what waited, and a paused holder whose directory another node took
# losing exactly what it had not shipped (its writers told, its next
# mount built anew from the pool).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
t_ceph "objfs delegations on a Ceph pool"
NS=d$$
R="remote=rados:objfs/$NS,remote_conf=$CONF,remote_timeout=8,remote_hold=4"
OPTS="arena=128M,$R,shared,remote_lease=4,remote_batch=50"
A=$T/a B=$T/b
mkdir -p "$A" "$B"
figure() { sed -n "s/^$2: //p" "$1/.objfs-status"; }

ok "mount A" start_objfs "$A" "$T/dA" "$OPTS"
PA=$OBJFS_PID
ok "mount B" start_objfs "$B" "$T/dB" "$OPTS"
PB=$OBJFS_PID

# ---- a node alone in a directory ----
mkdir "$A/dg"
d0=$(figure "$A" remote_commits_deferred)
r0=$(figure "$A" remote_log_appended)
python3 -c "
import os
for i in range(300):
    os.close(os.open('$A/dg/e%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
"
d1=$(figure "$A" remote_commits_deferred)
r1=$(figure "$A" remote_log_appended)
echo "# 300 creates on A: $((d1 - d0)) commits kept in its outbox, $((r1 - r0)) records put"
ok "A's creates in a directory it holds wait in its outbox, shipped a batch to a record" \
	test $((d1 - d0)) -ge 300 -a $((2 * (r1 - r0))) -lt $((d1 - d0))
ok "A holds the directory" test "$(figure "$A" remote_dirs_held)" -ge 1
ok "B lists all 300 at once (it recalls the directory first)" \
	test "$(ls "$B/dg" | wc -l)" = 300
ok "... and A answered the recall" test "$(figure "$A" remote_dirs_recalls_answered)" -ge 1

close_open() {
	python3 - "$A" "$B" <<'PY'
import os, sys
a, b = sys.argv[1:]
bad = 0
for i in range(50):
    with open(a + '/dg/c%d' % i, 'wb') as f:
        f.write(b'closed on A %d\n' % i)
    try:
        got = open(b + '/dg/c%d' % i, 'rb').read()
    except OSError as e:
        got = repr(e).encode()
    if got != b'closed on A %d\n' % i:
        bad += 1
        print('#   %d: %r' % (i, got[:60]))
print('# %d of 50 read on B at once' % (50 - bad))
sys.exit(1 if bad else 0)
PY
}
ok "50 of 50 files A closed in a directory it holds open on B at once, with their bytes" close_open

# A takes a directory and closes a file in it while B is stopped for a
# moment; B's open (or listing), queued meanwhile, runs as B resumes,
# before B's follower has applied A's taking (and before A ships what
# waits, every 50 ms): the lookup or listing that reads the log, and
# meets the taking there, recalls the directory first.
take_unseen() {
	local i bad=0 got want
	mkdir "$B/dn" && for i in $(seq 0 19); do mkdir "$B/dn/r$i"; done &&
		python3 -c "import os; fd = os.open('$B/dn', os.O_RDONLY); os.fsync(fd)" &&
		ls "$A/dn/"r* >/dev/null || return 1
	for i in $(seq 0 19); do
		kill -STOP "$PB"
		echo "closed on A $i" >"$A/dn/r$i/f"
		if [ "$i" -lt 10 ]; then
			want="closed on A $i"
			cat "$B/dn/r$i/f" >"$T/unseen.$i" 2>&1 &
		else
			want=f
			ls "$B/dn/r$i" >"$T/unseen.$i" 2>&1 &
		fi
		sleep 0.02
		kill -CONT "$PB"
		wait $!
		got=$(cat "$T/unseen.$i")
		[ "$got" = "$want" ] || { bad=$((bad + 1)); echo "r$i: $got"; }
	done
	echo "# $((20 - bad)) of 20 found on B"
	[ "$bad" = 0 ]
}
ok "A closes a file in a directory it just took, B stopped: B's open (10) or listing (10) as it resumes recalls first and finds it" \
	take_unseen

excl_races() {
	python3 - "$A" "$B" <<'PY'
import os, sys, time
a, b = sys.argv[1:]
os.makedirs(a + '/dx', exist_ok=True)
open(a + '/dx/warm', 'w').close()	# A holds dx
bad = []
for i in range(30):
    at = time.time() + 0.15
    pid = os.fork()
    if pid == 0:
        time.sleep(max(0, at - time.time()))
        try:
            os.close(os.open(b + '/dx/race%d' % i,
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            os._exit(0)
        except FileExistsError:
            os._exit(1)
        except OSError:
            os._exit(2)
    time.sleep(max(0, at - time.time()))
    try:
        os.close(os.open(a + '/dx/race%d' % i,
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        wa = 1
    except FileExistsError:
        wa = 0
    _, st = os.waitpid(pid, 0)
    rb = os.waitstatus_to_exitcode(st)
    wb = 1 if rb == 0 else 0
    if rb == 2 or wa + wb != 1:
        bad.append('%d: A %d, B %s' % (i, wa, rb))
print('# 30 races: %d with exactly one winner' % (30 - len(bad)))
for x in bad[:5]:
    print('#   ' + x)
sys.exit(1 if bad else 0)
PY
}
ok "30 O_EXCL races of A and B on one name in A's directory: exactly one winner each" excl_races

both_create() {
	python3 - "$A" "$B" "$CTL" <<'PY'
import os, subprocess, sys, time
a, b, ctl = sys.argv[1:]
os.makedirs(a + '/dc', exist_ok=True)
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    for i in range(150):
        os.close(os.open(b + '/dc/b%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
    os._exit(0)
for i in range(150):
    os.close(os.open(a + '/dc/a%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
os.waitpid(pid, 0)
took = time.monotonic() - t0
for m in (a, b):
    subprocess.run([ctl, 'catch-up', m], check=True)
na, nb = len(os.listdir(a + '/dc')), len(os.listdir(b + '/dc'))
print('# A and B, 150 creates each in one directory at once: %.1f s; A lists %d, B %d'
      % (took, na, nb))
sys.exit(0 if na == nb == 300 else 1)
PY
}
CTL=$(dirname "$OBJFS_BIN")/objfsctl
ok "A and B creating in one directory at once: all 300 on both" both_create

# 8 processes of A making files of 100 bytes in directories A holds, while
# B creates in directories of its own (its records take log positions
# A's puts race for): every close succeeds, every file reads on B.  (A
# file's write-out at close took the outbox with it into a record of its
# own, lost the race, and close() answered ERESTART, errno 85, to all 8.)
held_small() {
	python3 - "$A" "$B" "$CTL" <<'PY'
import os, sys
a, b, ctl = sys.argv[1:]
ps = []
for k in range(10):
    pid = os.fork()
    if pid == 0:
        if k < 8:
            d = '%s/hs/%d' % (a, k)
            os.makedirs(d)
            for i in range(60):
                with open('%s/f%d' % (d, i), 'wb') as f:
                    f.write(b'%d:%d.' % (k, i) * 12)
        else:
            d = '%s/hb%d' % (b, k)
            os.makedirs(d)
            for i in range(300):
                os.close(os.open('%s/g%d' % (d, i), os.O_CREAT | os.O_WRONLY))
        os._exit(0)
    ps.append(pid)
if any(os.waitpid(p, 0)[1] for p in ps):
    sys.exit('a process failed')
if os.system("'%s' catch-up '%s'" % (ctl, b)):
    sys.exit('catch-up failed')
for k in range(8):
    for i in range(60):
        with open('%s/hs/%d/f%d' % (b, k, i), 'rb') as f:
            if f.read() != b'%d:%d.' % (k, i) * 12:
                sys.exit('hs/%d/f%d: wrong bytes on B' % (k, i))
PY
}
ok "8 processes of A making 480 files in directories it holds while B creates: every close succeeds, all read on B" held_small

# ---- the collector, and objfsctl catch-up, with directories held ----
# What waits in a holder's outbox may name chunks no record names yet:
# another node's collection waits until nothing is held elsewhere.
python3 -c "
import os
os.mkdir('$A/dgc')
for i in range(5):
    with open('$A/dgc/g%d' % i, 'wb') as f:
        f.write(b'kept %d' % i)
    os.rename('$A/dgc/g%d' % i, '$A/dgc/h%d' % i)
"
gc_deferred_dir() {
	if setfattr -n user.objfs.gc -v 0 "$B/.objfs-status" 2>"$T/gc.err"; then
		echo "the collection ran"
		return 1
	fi
	grep -q "busy" "$T/gc.err" && grep -q "directories held" "$T/objfs.b.log"
}
ok "a collection on B waits while A holds a directory, and says why" gc_deferred_dir
recalled_all() { "$CTL" catch-up "$B" && [ "$(figure "$A" remote_dirs_held)" = 0 ]; }
ok "objfsctl catch-up on B recalls every directory A holds" recalled_all
ok "... and B lists what A made there, at once (no recall left)" \
	sh -c "[ \"\$(ls '$B/dgc' | tr '\n' ' ')\" = 'h0 h1 h2 h3 h4 ' ]"
ok "the collection on B runs once nothing is held elsewhere" gc_runs "$B" "$T/objfs.b.log"
ok "... and every file A made reads on B" \
	sh -c "for i in 0 1 2 3 4; do [ \"\$(cat '$B/dgc/h'\$i)\" = \"kept \$i\" ] || exit 1; done"

# ---- fsync: durable in the pool when it returns ----
fsync_then_kill() {
	python3 - "$A" <<'PY'
import os, sys
a = sys.argv[1]
os.mkdir(a + '/dk')
for i in range(20):
    with open(a + '/dk/f%d' % i, 'wb') as f:
        f.write(b'fsynced %d' % i)
fd = os.open(a + '/dk', os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
PY
}
ok "A creates 20 files in a directory it holds and fsyncs the directory" fsync_then_kill
kill -9 "$PA"
wait "$PA" 2>/dev/null
fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
fsynced_on_b() {
	python3 - "$B" <<'PY'
import os, sys, time
b = sys.argv[1]
t0 = time.monotonic()
names = sorted(os.listdir(b + '/dk'))	# recalls; A is gone: broken
bad = [i for i in range(20)
       if open(b + '/dk/f%d' % i, 'rb').read() != b'fsynced %d' % i]
print('# B lists %d files %.1f s after A was killed; %d wrong'
      % (len(names), time.monotonic() - t0, len(bad)))
sys.exit(0 if len(names) == 20 and not bad else 1)
PY
}
ok "A killed right after: B reads all 20 (its listing broke A's directory once A's lock lapsed)" fsynced_on_b
ok "... counted as broken" test "$(figure "$B" remote_dirs_broken)" -ge 1

# ---- a killed holder's data directory ships what waited ----
# From here on, what A keeps waits 5 s (remote_batch) before it ships.
ok "A mounts again on its data directory" start_objfs "$A" "$T/dA" \
	"$OPTS,remote_batch=5000"
PA=$OBJFS_PID
# Empty files and renames: a file with bytes names chunks by their
# content, records of the tree's own that go to the log at once.
python3 -c "
import os
os.mkdir('$A/dw')
for i in range(40):
    os.close(os.open('$A/dw/t%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
    os.rename('$A/dw/t%d' % i, '$A/dw/w%d' % i)
"
w=$(figure "$A" remote_deferred_waiting)
kill -9 "$PA"
wait "$PA" 2>/dev/null
fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
ok "A killed with its creates waiting in its outbox ($w commits)" test "$w" -ge 40
ok "A mounts again at once on its data directory" start_objfs "$A" "$T/dA" \
	"$OPTS,remote_batch=5000"
PA=$OBJFS_PID
waited_on_b() {
	python3 - "$B" <<'PY'
import os, sys
b = sys.argv[1]
names = sorted(os.listdir(b + '/dw'))
want = sorted('w%d' % i for i in range(40))
print('# B lists %d of the 40 names' % len(set(names) & set(want)))
sys.exit(0 if names == want else 1)
PY
}
ok "B finds the 40 files the killed daemon had not shipped, by their new names (its next mount did)" waited_on_b

# ---- a paused holder with nothing waiting ----
# A holds dq, all of it in the log (fsynced; no file closed there, whose
# release the kernel sends when it likes), and has looked up a name not
# there (a directory it holds answers that without the log).  Stopped
# past its lease, B takes dq and makes that name; A, resumed, opens it at
# once: past its deadline A trusts no directory it believed it held.
python3 -c "
import os
os.mkdir('$A/dq')
fd = os.open('$A/dq', os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
assert not os.path.exists('$A/dq/x')
"
ok "A fsynced the directory it holds: nothing waits in its outbox" \
	test "$(figure "$A" remote_deferred_waiting)" = 0
kill -STOP "$PA"
sleep 6		# past remote_lease (4 s)
ok "A stopped past its lease: B makes the name in A's directory" \
	sh -c "echo from-b > '$B/dq/x'"
# The open begins the moment A runs again (a busy wait: before A's own
# follower has read the log).
python3 - "$A/dq/x" "$T/resumed" >"$T/resumed.out" 2>&1 <<'PY' &
import os, sys
path, flag = sys.argv[1], sys.argv[2]
open(flag + '.ready', 'w').close()
while not os.path.exists(flag):
    pass
try:
    with open(path, 'rb') as f:
        print('read ' + f.read().decode().strip())
except OSError as e:
    print('A: %s' % e)
PY
RP=$!
for _ in $(seq 500); do [ -e "$T/resumed.ready" ] && break; sleep 0.01; done
kill -CONT "$PA"
: >"$T/resumed"
wait "$RP"
ok "A resumed opens it at once, with B's bytes" grep -qx "read from-b" "$T/resumed.out"

# ---- a batch whose put did not answer ----
# A's fsync puts its waiting creates while the OSD is stopped: the put
# times out (remote_timeout, 8 s) and may yet land when the OSD runs
# again.  A's next commit finds out which (its record, byte for byte, or
# none): the creates are shipped once, nothing waits, and B has them.
python3 -c "
import os
os.mkdir('$A/du')
for i in range(20):
    os.close(os.open('$A/du/u%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
"
OSD=$(cat "$C/run/osd.0.pid")
u0=$(figure "$A" remote_batches_unsure)
kill -STOP "$OSD"
timeout 60 python3 - "$A/du" >"$T/unsure.out" 2>&1 <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    os.fsync(fd)
    print('fsync returned')
except OSError as e:
    print('fsync: %s' % os.strerror(e.errno))
PY
kill -CONT "$OSD"
sed 's/^/# OSD stopped: /' "$T/unsure.out"
ok "A's fsync with the OSD stopped fails, the put's answer lost" \
	grep -q "^fsync: " "$T/unsure.out"
ok "... counted as a batch not known to be in the log" \
	test "$(figure "$A" remote_batches_unsure)" -gt "$u0"
fsync_again() {	# the OSD back, A's fsync goes through (within 60 s)
	python3 - "$A/du" <<'PY'
import os, sys, time
t0 = time.monotonic()
while True:
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
        sys.exit(0)
    except OSError as e:
        if time.monotonic() - t0 > 60:
            sys.exit('fsync: %s' % os.strerror(e.errno))
        time.sleep(0.5)
    finally:
        os.close(fd)
PY
}
ok "the OSD resumed, the pool takes a write again" pool_takes_writes 120
ok "the OSD back, A's fsync of the directory goes through" fsync_again
echo "# the unsure batch found in the log: $(figure "$A" remote_batches_unsure_landed) time(s)"
ok "... nothing of A's waits" test "$(figure "$A" remote_deferred_waiting)" = 0
ok "B lists the 20 files" \
	sh -c "[ \"\$(ls '$B/du' | sort -V | tr '\n' ' ')\" = '$(seq -f 'u%g' 0 19 | tr '\n' ' ')' ]"
rm -f "$B"/du/u*
none_left() {	# A's follower applies B's unlinks (in 10 s); none comes back
	for _ in $(seq 100); do
		[ -z "$(ls "$A/du")" ] && break
		sleep 0.1
	done
	sleep 1
	[ -z "$(ls "$A/du")" ] && [ -z "$(ls "$B/du")" ]
}
ok "B removes them; A lists none (no batch put twice brings one back)" none_left

# ---- a killed holder whose directory another node took ----
# A is killed with creates waiting in dz; B, once A's lock lapsed, breaks
# A's delegation and makes a file there.  A's data directory mounts again
# at once: what it kept is refused, and the index is built anew from the
# pool in that one mount.
python3 -c "
import os
os.mkdir('$A/dz')
fd = os.open('$A/dz', os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
for i in range(10):
    os.close(os.open('$A/dz/z%d' % i, os.O_CREAT | os.O_WRONLY, 0o644))
"
w=$(figure "$A" remote_deferred_waiting)
kill -9 "$PA"
wait "$PA" 2>/dev/null
fusermount3 -u "$A" 2>/dev/null || umount -l "$A"
ok "A killed with $w commits waiting" test "$w" -ge 10
ok "B makes a file in A's directory (A's lock lapsed: the delegation broken)" \
	sh -c "echo from-b > '$B/dz/b'"
n0=$(grep -c "building its index anew" "$T/objfs.a.log")
ok "A mounts again on its data directory, in one mount" start_objfs "$A" "$T/dA" \
	"$OPTS,remote_batch=5000"
PA=$OBJFS_PID
ok "... its log says what was refused, and that the index was built anew" \
	sh -c "grep -q 'they are refused, and the index is built anew' '$T/objfs.a.log' &&
		[ \$(grep -c 'building its index anew' '$T/objfs.a.log') -gt $n0 ]"
ok "A's tree is B's: B's file, none of the 10 creates A had not shipped" \
	sh -c "[ \"\$(ls '$A/dz')\" = b ] && [ \"\$(cat '$A/dz/b')\" = from-b ]"
ok "... and A changes the tree again" \
	sh -c "echo from-a > '$A/dz/a' && '$CTL' catch-up '$B' && [ \"\$(cat '$B/dz/a')\" = from-a ]"

# ---- a paused holder whose directory another node takes ----
python3 -c "
import os
os.mkdir('$A/dp')
with open('$A/dp/before', 'wb') as f:
    f.write(b'shipped')
fd = os.open('$A/dp', os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
for i in range(10):
    open('$A/dp/p%d' % i, 'wb').close()
"
kill -STOP "$PA"
sleep 6		# past remote_lease (4 s)
ok "A stopped past its lease: B creates in A's directory (it breaks the delegation)" \
	sh -c "echo from-b > '$B/dp/b'"
kill -CONT "$PA"
paused_refused() {
	python3 - "$A" <<'PY'
import errno, os, sys, time
a = sys.argv[1]
t0 = time.monotonic()
while time.monotonic() - t0 < 10:
    try:
        open(a + '/dp/after', 'wb').close()
    except OSError as e:
        if e.errno == errno.EIO:
            print('# A, resumed: EIO')
            sys.exit(0)
        sys.exit('A: %s' % e)
    time.sleep(0.2)
sys.exit('A went on writing')
PY
}
ok "A resumed: its writes answer EIO (what it kept was refused)" paused_refused
ok "... A says so in its status" test "$(figure "$A" remote_diverged)" = 1
ok "... and in its log" grep -q "were not yet in the pool's log: they are refused" "$T/objfs.a.log"
ok "B's tree has A's fsynced file and B's, none of A's refused creates" \
	sh -c "[ \"\$(ls '$B/dp' | sort | tr '\n' ' ')\" = 'b before ' ]"
unmount_refused() {	# the unmount ends; its status says what it could not ship
	! stop_objfs "$A" && ! mountpoint -q "$A"
}
ok "A unmounts, its exit status saying that what it kept was refused" unmount_refused
ok "A mounts again: its index is built anew from the pool" start_objfs "$A" "$T/dA" "$OPTS"
ok "... said in its log" grep -q "building its index anew" "$T/objfs.a.log"
PA=$OBJFS_PID
ok "... and A has B's tree" \
	sh -c "[ \"\$(ls '$A/dp' | sort | tr '\n' ' ')\" = 'b before ' ] && grep -q from-b '$A/dp/b'"
ok "A unmounts" stop_objfs "$A"
ok "B unmounts" stop_objfs "$B"
t_done
