#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fuzz.py - the reference-model fuzzer: random file operations on a real
objfs mount, checked against a model of what every file must hold.

Each run mounts objfs on a fresh data directory (a small arena, so chunks
spill, and 64 KiB chunks, so files of a few MiB have many) and applies a
sequence of operations drawn from a seed:

    write / pwrite (through a fresh open or a descriptor held open),
    truncate (by name or through a held descriptor), fallocate (allocate,
    punch a hole, zero a range, with and without KEEP_SIZE),
    copy_file_range (whole-file copies as cp makes them, and ranges),
    rename, unlink, link, holding files open (read-write or O_PATH) across
    their unlink, fsync, sync, a pause (the daemon gives space back once a
    second), a clean unmount and remount, SIGKILL and remount, and seal
    and unseal (chattr +i / -i: a sealed file refuses every change with
    EPERM and changes nothing; sealing one held open for writing is EBUSY).

Data is drawn from a few chunk-sized blocks, so files share equal chunks
(dedup) and copies share disk copies.  With --disk SIZE the data
directory is on an ext4 image of that size, so the disk fills: an
operation that needs room may then fail with ENOSPC, and must change
nothing (the model follows every call that returned), an unmount may
exit 1 keeping its arena for the next mount, and at the end the disk's
used space must be back where it was but for the index.  The model (name -> object -> bytes)
is what POSIX says each file holds; a killed daemon loses nothing either
(the next one adopts its arena), so it is the same model.  Every few
operations each named file's size and bytes are read back and compared;
after every unmount and every kill `objfsctl check DATA` must find no
problem, and after every remount the names and bytes must be the model's.  At the end every
file is deleted and the backing directory must hold no data blocks.

An operation that objfs answers with an error the model does not expect
(EIO, ENOSPC, ...) is a failure too.  A failure prints the seed and the
sequence; --shrink then cuts the sequence down (delta debugging), replaying
each candidate on a fresh mount, and writes the shortest failing one to
--save, which --replay runs again.

With --remote and --shared, two mounts (two data directories, two
arenas: two nodes) share the run's namespace with -o shared, and each
operation runs on one of them, drawn from the seed: one model for both.
Before each operation both nodes catch up with the pool's log (objfsctl
catch-up's setxattr), so every name is on both.  A file held open for
writing on one node is leased to it: an operation on the other node that
would change it (open for writing, truncate, rename, unlink, link, copy
into it) must fail with EBUSY and change nothing; one that would read it
sees its last published version, which the model does not keep, so it is
not done; and its bytes are verified on its writer's node only.

Pauses (the way an operator's bad day looks, not only kills): "stop"
freezes the operation's node's daemon (SIGSTOP) for half a second or past
its lease.  With --shared, when that node writes a file, it first fsyncs
it (the model keeps that published version) and writes more without
fsync; while it is stopped past its lease the other node takes the file
(its open must succeed once the lease lapsed), writes, fsyncs and closes
it; resumed, the stopped node's descriptors of it must answer EIO (write,
fsync, close) and every node must read the other's version on top of the
published one: nothing the other node was told is durable is lost or
overwritten by the fenced node, and what it wrote unpublished is gone.
"osd" (with --osd-pid) freezes the OSD for 1 to 8 s, past the lease and
past remote_timeout, with no operation in flight; then every node must
hold its lock again before the next operation.  Without --remote both
are short pauses.

Exit status: 0 clean, 1 a failure found, 2 a bad invocation or setup.
"""
import argparse
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "crash"))
from sealflag import sealed as get_sealed, set_sealed  # noqa: E402

FALLOC_KEEP_SIZE = 0x01
FALLOC_PUNCH_HOLE = 0x02
FALLOC_ZERO_RANGE = 0x10

NAMES = ["a", "b", "c", "d"]
OPS = [  # (operation, weight)
    ("write", 14), ("hwrite", 5), ("truncate", 6), ("htruncate", 2),
    ("punch", 4), ("zero", 3), ("alloc", 2), ("cp", 7), ("copy", 5),
    ("rename", 3), ("unlink", 4), ("link", 2), ("hold", 5), ("close", 3),
    ("fsync", 7), ("sync", 2), ("pause", 1), ("remount", 2), ("kill", 1),
    ("seal", 2), ("unseal", 1), ("stop", 1), ("osd", 1),
]

# With --remote: how long a node's lease and the namespace's hold last
# without a renewal, and each cluster operation's bound (the stop and osd
# operations pause past them).
LEASE_S = 3
TIMEOUT_S = 6


# What a full disk may answer with ENOSPC (never unlink or close).
ENOSPC_OK = {"write", "hwrite", "truncate", "htruncate", "punch", "zero",
             "alloc", "cp", "copy", "rename", "link", "fsync", "seal",
             "unseal"}


class Failure(Exception):
    pass


def libc_fallocate():
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    f = libc.fallocate
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]

    def fallocate(fd, mode, off, length):
        if f(fd, mode, off, length) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    return fallocate


fallocate = libc_fallocate()


def gen_ops(seed, n, chunk, big_p=0.05):
    """n abstract operations: each names its targets by index, resolved
    against the model when it runs, so any subsequence still runs; a
    share @big_p of the writes are large (up to 96 chunks)."""
    rng = random.Random(seed)
    kinds = [k for k, w in OPS for _ in range(w)]
    span = 40 * chunk
    ops = []
    for _ in range(n):
        k = rng.choice(kinds)
        aligned = rng.random() < 0.6

        def off(limit=span):
            if aligned:
                return rng.randrange(0, limit // chunk) * chunk
            return rng.randrange(0, limit)

        def length(limit=12 * chunk):
            if aligned:
                return rng.randrange(1, limit // chunk + 1) * chunk
            return rng.randrange(1, limit)
        op = {"op": k, "i": rng.randrange(1 << 20), "j": rng.randrange(1 << 20)}
        if k in ("write", "hwrite"):
            big = rng.random() < big_p
            op.update(off=off(), len=length(96 * chunk if big else 12 * chunk),
                      data=rng.randrange(1 << 30))
            if rng.random() < 0.03:	# far past the end: a sparse file
                op["off"] = rng.randrange(0, 128 * chunk)
        elif k in ("truncate", "htruncate"):
            op.update(size=off(span) if rng.random() < 0.8 else 0)
        elif k in ("punch", "zero", "alloc"):
            op.update(off=off(), len=length(), keep=rng.random() < 0.5)
        elif k == "copy":
            op.update(off=off(), off2=off(), len=length(24 * chunk))
        elif k == "hold":
            op.update(path=rng.random() < 0.4)
        ops.append(op)
    return ops


def data_for(spec, length, blocks, chunk, unique=0.2):
    """The bytes a write puts: mostly whole library blocks (equal chunks
    in many files), sometimes zero, a share @unique random (a disk meant
    to fill needs bytes dedup cannot fold)."""
    rng = random.Random(spec)
    r = rng.random()
    if r < 0.1:
        return bytes(length)
    if r < 0.1 + unique:
        return rng.randbytes(length)
    out = bytearray()
    start = rng.randrange(len(blocks))
    while len(out) < length:
        b = blocks[(start + len(out) // chunk) % len(blocks)]
        out += b
    return bytes(out[:length])


REMOTE_RUNS = 0


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


class Objfs:
    """One data directory and its mount."""

    def __init__(self, binary, ctl, work, opts, disk=0):
        self.bin, self.ctl, self.opts = binary, ctl, opts
        self.mnt = os.path.join(work, "mnt")
        self.data = os.path.join(work, "data")
        self.log = os.path.join(work, "objfs.log")
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = None
        self.arenas = set()
        self.fs = None
        if disk:
            # The data directory on an ext4 of its own, small enough to
            # fill: ENOSPC is then an answer the model must allow.
            img, fs = os.path.join(work, "img"), os.path.join(work, "fs")
            os.makedirs(fs)
            with open(img, "wb") as f:
                f.truncate(disk)
            if subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", img],
                              capture_output=True).returncode != 0 or \
               subprocess.run(["mount", "-o", "loop", img, fs],
                              capture_output=True).returncode != 0:
                raise Failure("cannot make and mount an ext4 image")
            self.fs = fs
            self.data = os.path.join(fs, "data")
            self.used0 = self.used()

    def used(self):
        st = os.statvfs(self.fs)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def start(self):
        logf = open(self.log, "a")
        # A session of its own: a signal to the fuzzer's process group
        # (a timeout, ^C) leaves the daemon to the cleanups.
        self.proc = subprocess.Popen(
            [self.bin, "-f", "-o", "data=%s,%s" % (self.data, self.opts),
             self.mnt], stdout=logf, stderr=logf, start_new_session=True)
        logf.close()
        for _ in range(300):
            if os.path.ismount(self.mnt):
                try:
                    with open(os.path.join(self.data, "arena")) as f:
                        self.arenas.add(f.readline().strip())
                except OSError:
                    pass
                return
            if self.proc.poll() is not None:
                raise Failure("objfs exited %d before mounting"
                              % self.proc.returncode)
            time.sleep(0.05)
        raise Failure("objfs did not mount within 15 s")

    def stop(self, full_ok=False):
        """A clean unmount: the daemon must write everything out and
        exit 0 (or, with @full_ok, exit 1 for a full disk: it then keeps
        its arena for the next mount)."""
        r = subprocess.run(["fusermount3", "-u", self.mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure("fusermount3 -u: " + r.stderr.strip())
        try:
            rc = self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            raise Failure("objfs still running 120 s after unmount")
        self.proc = None
        if rc == 1 and full_ok:
            with open(self.log) as f:
                tail = f.read()[-4000:]
            if "No space left on device" in tail and "kept in the arena" \
                    in tail:
                return
        if rc != 0:
            raise Failure("objfs exited %d after unmount" % rc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        if subprocess.run(["fusermount3", "-u", self.mnt],
                          capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)

    def check(self):
        r = subprocess.run([self.ctl, "check", self.data],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure("objfsctl check: exit %d\n%s" %
                          (r.returncode, (r.stdout + r.stderr)[-3000:]))

    def cleanup(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        # A dead daemon's mount fails stat (ENOTCONN), so ismount() says
        # no: /proc says what is mounted.
        if mounted(self.mnt):
            if subprocess.run(["fusermount3", "-u", self.mnt],
                              capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", self.mnt],
                               capture_output=True)
        # A killed daemon's arena stays for adoption: ours go.
        for a in self.arenas:
            if os.path.basename(a) == "arena" and "/objfs." in a:
                shutil.rmtree(os.path.dirname(a), ignore_errors=True)
        if self.fs and mounted(self.fs):
            subprocess.run(["umount", self.fs], capture_output=True)


class Run:
    """One run of a sequence against a fresh mount and the model."""

    def __init__(self, args, ops, verbose):
        self.a, self.ops, self.verbose = args, ops, verbose
        self.chunk = args.chunk
        rng = random.Random(args.blocks_seed)
        self.blocks = [rng.randbytes(self.chunk) for _ in range(5)]
        self.names = {}		# name -> object
        self.objs = {}		# object -> bytearray
        self.held = []		# [fd, object, is_path, node]
        self.sealed = set()	# sealed objects
        self.nodes = []		# --shared: the two mounts
        self.node = 0		# the node of the operation under way
        self.busy = 0		# operations refused for another's lease
        self.perm = 0		# changes of sealed files refused
        self.next_obj = 0
        self.done = 0
        self.counts = {}
        self.enospc = 0
        self.pauses = 0		# daemons and OSD stopped and resumed
        self.broken = 0		# leases another node broke meanwhile
        self.deferred = self.recalled = 0	# --batch: the last mounts'
        self.ns = None		# --remote: this run's namespace

    def p(self, name):
        return os.path.join(self.fs.mnt, name)

    # ---- the model ------------------------------------------------------
    def m_write(self, obj, off, data):
        b = self.objs[obj]
        if len(b) < off:
            b.extend(bytes(off - len(b)))
        b[off:off + len(data)] = data

    def m_size(self, obj, size):
        b = self.objs[obj]
        if size < len(b):
            del b[size:]
        else:
            b.extend(bytes(size - len(b)))

    def m_zero(self, obj, off, length, keep):
        b = self.objs[obj]
        end = off + length
        if not keep and end > len(b):
            self.m_size(obj, end)
        end = min(end, len(b))
        if off < end:
            b[off:end] = bytes(end - off)

    def m_gc(self):
        live = set(self.names.values()) | {h[1] for h in self.held}
        for o in list(self.objs):
            if o not in live:
                del self.objs[o]

    def pick_name(self, op, key="i", present=True):
        names = sorted(self.names) if present else NAMES
        if not names:
            return None
        return names[op[key] % len(names)]

    def pick_held(self, op, rw=True):
        h = [x for x in self.held if not (rw and x[2]) and
             x[3] == self.node]
        if not h:
            return None
        return h[op["i"] % len(h)]

    # ---- two nodes (--shared) -------------------------------------------
    def leased_by(self, obj):
        """The node that holds @obj open for writing, or None."""
        for h in self.held:
            if h[1] == obj and not h[2]:
                return h[3]
        return None

    def elsewhere(self, *objs):
        """Does another node than this operation's write one of @objs?"""
        return any(o is not None and self.leased_by(o) not in
                   (None, self.node) for o in objs)

    def refused(self, what, fn, *args, want=errno.EBUSY, objs=()):
        """@fn must fail with EBUSY (another node writes the file), or
        with @want, and change nothing; the model stays.  Refused for two
        reasons at once (another node's lease, and one of @objs sealed),
        either error is right."""
        try:
            r = fn(*args)
        except OSError as e:
            if e.errno != want and not (
                    want == errno.EBUSY and e.errno == errno.EPERM and
                    self.is_sealed(*objs)):
                raise
            if want == errno.EBUSY:
                self.busy += 1
            else:
                self.perm += 1
            return
        if isinstance(r, int) and fn is os.open:
            os.close(r)
        if want == errno.EPERM:
            raise Failure("%s succeeded, yet the file is sealed" % what)
        raise Failure("%s on node %d succeeded, yet node %d writes the "
                      "file" % (what, self.node, 1 - self.node))

    def is_sealed(self, *objs):
        return any(o is not None and o in self.sealed for o in objs)

    def catch_up(self, nodes=None):
        for fs in self.nodes if nodes is None else nodes:
            try:
                os.setxattr(os.path.join(fs.mnt, ".objfs-status"),
                            "user.objfs.catch_up", b"1")
            except OSError as e:
                raise Failure("catch-up on %s: %s" % (
                    fs.mnt, errno.errorcode.get(e.errno, e)))

    # ---- operations -----------------------------------------------------
    def apply(self, op):
        k = op["op"]
        if self.nodes:
            self.catch_up()
            self.node = op.get("n", 0) % 2
            self.fs = self.nodes[self.node]
        getattr(self, "op_" + k)(op)
        self.counts[k] = self.counts.get(k, 0) + 1

    def op_write(self, op):
        name = self.pick_name(op, present=False)
        data = data_for(op["data"], op["len"], self.blocks, self.chunk,
                        0.7 if self.a.disk else 0.2)
        if self.elsewhere(self.names.get(name)):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR | os.O_CREAT, 0o644,
                                objs=(self.names.get(name),))
        if self.is_sealed(self.names.get(name)):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR | os.O_CREAT, 0o644,
                                want=errno.EPERM)
        fd = os.open(self.p(name), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if name not in self.names:
                self.names[name] = self.next_obj
                self.objs[self.next_obj] = bytearray()
                self.next_obj += 1
            self.pwrite_all(fd, self.names[name], data, op["off"])
        finally:
            os.close(fd)

    def pwrite_all(self, fd, obj, data, off):
        """pwrite until done, the model following each call (a full disk
        may stop it part of the way)."""
        done = 0
        while done < len(data):
            n = os.pwrite(fd, data[done:done + (1 << 20)], off + done)
            if n <= 0:
                raise Failure("pwrite returned %d" % n)
            self.m_write(obj, off + done, data[done:done + n])
            done += n

    def op_hwrite(self, op):
        h = self.pick_held(op)
        if h is None:
            return
        data = data_for(op["data"], op["len"], self.blocks, self.chunk,
                        0.7 if self.a.disk else 0.2)
        self.pwrite_all(h[0], h[1], data, op["off"])

    def op_truncate(self, op):
        name = self.pick_name(op)
        if name is None:
            return
        if self.elsewhere(self.names[name]):
            return self.refused("truncate", os.truncate, self.p(name),
                                op["size"],
                                objs=(self.names[name],))
        if self.is_sealed(self.names[name]):
            return self.refused("truncate", os.truncate, self.p(name),
                                op["size"], want=errno.EPERM)
        os.truncate(self.p(name), op["size"])
        self.m_size(self.names[name], op["size"])

    def op_htruncate(self, op):
        h = self.pick_held(op)
        if h is None:
            return
        os.ftruncate(h[0], op["size"])
        self.m_size(h[1], op["size"])

    def falloc(self, op, mode):
        name = self.pick_name(op)
        if name is None:
            return
        if self.elsewhere(self.names[name]):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR,
                                objs=(self.names[name],))
        if self.is_sealed(self.names[name]):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR, want=errno.EPERM)
        fd = os.open(self.p(name), os.O_RDWR)
        try:
            fallocate(fd, mode, op["off"], op["len"])
        finally:
            os.close(fd)
        return self.names[name]

    def op_punch(self, op):
        obj = self.falloc(op, FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE)
        if obj is not None:
            self.m_zero(obj, op["off"], op["len"], True)

    def op_zero(self, op):
        obj = self.falloc(op, FALLOC_ZERO_RANGE |
                          (FALLOC_KEEP_SIZE if op["keep"] else 0))
        if obj is not None:
            self.m_zero(obj, op["off"], op["len"], op["keep"])

    def op_alloc(self, op):
        obj = self.falloc(op, FALLOC_KEEP_SIZE if op["keep"] else 0)
        if obj is not None and not op["keep"]:
            b = self.objs[obj]
            if op["off"] + op["len"] > len(b):
                self.m_size(obj, op["off"] + op["len"])

    def copy_range(self, sfd, so, off_in, dfd, do, off_out, length):
        """copy_file_range until @length is copied or the source ends,
        the model following each call (a copy within one file may grow
        what it reads); returns the bytes copied."""
        done = 0
        while done < length:
            src = self.objs[so]
            n = os.copy_file_range(sfd, dfd, length - done, off_in + done,
                                   off_out + done)
            have = max(0, len(src) - (off_in + done))
            if n > min(have, length - done):
                raise Failure("copy_file_range copied %d bytes where the "
                              "source has %d" % (n, have))
            if n == 0:
                if have:
                    raise Failure("copy_file_range copied nothing of the "
                                  "%d bytes the source has" % have)
                break
            data = bytes(src[off_in + done:off_in + done + n])
            self.m_write(do, off_out + done, data)
            done += n
        return done

    def op_cp(self, op):
        """cp SRC DST: DST truncated (or created), then the whole source
        copied with copy_file_range, as cp does."""
        src = self.pick_name(op)
        if src is None:
            return
        dst = self.pick_name(op, "j", present=False)
        if dst == src or self.names.get(dst) == self.names[src]:
            return
        if self.elsewhere(self.names[src]):
            return		# it would read the last published version
        if self.elsewhere(self.names.get(dst)):
            return self.refused("open for writing", os.open, self.p(dst),
                                os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644,
                                objs=(self.names.get(dst),))
        if self.is_sealed(self.names.get(dst)):
            return self.refused("cp onto it", os.open, self.p(dst),
                                os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644,
                                want=errno.EPERM)
        sfd = os.open(self.p(src), os.O_RDONLY)
        try:
            dfd = os.open(self.p(dst), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                          0o644)
            try:
                if dst not in self.names:
                    self.names[dst] = self.next_obj
                    self.objs[self.next_obj] = bytearray()
                    self.next_obj += 1
                d = self.names[dst]
                self.m_size(d, 0)
                size = len(self.objs[self.names[src]])
                n = self.copy_range(sfd, self.names[src], 0, dfd, d, 0, size)
                if n != size:
                    raise Failure("cp copied %d of %d bytes" % (n, size))
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def op_copy(self, op):
        src = self.pick_name(op)
        dst = self.pick_name(op, "j")
        if src is None:
            return
        so, do = self.names[src], self.names[dst]
        if so == do and abs(op["off"] - op["off2"]) < op["len"]:
            return		# overlapping ranges of one file: EINVAL
        if self.elsewhere(so):
            return		# it would read the last published version
        if self.elsewhere(do):
            return self.refused("open for writing", os.open, self.p(dst),
                                os.O_WRONLY,
                                objs=(do,))
        if self.is_sealed(do):
            return self.refused("open for writing", os.open, self.p(dst),
                                os.O_WRONLY, want=errno.EPERM)
        sfd = os.open(self.p(src), os.O_RDONLY)
        try:
            dfd = os.open(self.p(dst), os.O_WRONLY)
            try:
                self.copy_range(sfd, so, op["off"], dfd, do, op["off2"],
                                op["len"])
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def op_rename(self, op):
        src = self.pick_name(op)
        if src is None:
            return
        dst = self.pick_name(op, "j", present=False)
        if dst != src and self.names.get(dst) != self.names[src] and \
                self.elsewhere(self.names[src], self.names.get(dst)):
            return self.refused("rename", os.rename, self.p(src),
                                self.p(dst),
                                objs=(self.names[src], self.names.get(dst),))
        if dst != src and self.names.get(dst) != self.names[src] and \
                self.is_sealed(self.names[src], self.names.get(dst)):
            return self.refused("rename", os.rename, self.p(src),
                                self.p(dst), want=errno.EPERM)
        os.rename(self.p(src), self.p(dst))
        if dst != src and self.names.get(dst) != self.names[src]:
            self.names[dst] = self.names.pop(src)
        self.m_gc()

    def op_unlink(self, op):
        name = self.pick_name(op)
        if name is None:
            return
        # Mostly a file held open or by O_PATH: a deleted object the
        # kernel still knows is where the daemon's bookkeeping is
        # thinnest.
        held = sorted(n for n, o in self.names.items()
                      if o in {h[1] for h in self.held})
        if held and op["j"] % 4:
            name = held[op["j"] % len(held)]
        if self.elsewhere(self.names[name]):
            return self.refused("unlink", os.unlink, self.p(name))
        if self.is_sealed(self.names[name]):
            return self.refused("unlink", os.unlink, self.p(name),
                                want=errno.EPERM,
                                objs=(self.names[name],))
        os.unlink(self.p(name))
        del self.names[name]
        self.m_gc()

    def op_link(self, op):
        src = self.pick_name(op)
        dst = self.pick_name(op, "j", present=False)
        if src is None or dst in self.names:
            return
        if self.elsewhere(self.names[src]):
            return self.refused("link", os.link, self.p(src), self.p(dst))
        if self.is_sealed(self.names[src]):
            return self.refused("link", os.link, self.p(src), self.p(dst),
                                want=errno.EPERM,
                                objs=(self.names[src],))
        os.link(self.p(src), self.p(dst))
        self.names[dst] = self.names[src]

    def op_hold(self, op):
        name = self.pick_name(op)
        if name is None or len(self.held) >= 6:
            return
        path = op["path"] and not self.a.no_opath
        if not path and self.elsewhere(self.names[name]):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR,
                                objs=(self.names[name],))
        if not path and self.is_sealed(self.names[name]):
            return self.refused("open for writing", os.open, self.p(name),
                                os.O_RDWR, want=errno.EPERM)
        fd = os.open(self.p(name), os.O_PATH if path else os.O_RDWR)
        self.held.append([fd, self.names[name], path, self.node])

    def op_close(self, op):
        mine = [h for h in self.held if h[3] == self.node]
        if not mine:
            return
        h = mine[op["i"] % len(mine)]
        self.held.remove(h)
        os.close(h[0])
        self.m_gc()

    def op_fsync(self, op):
        if op["j"] % 3 == 0:
            h = self.pick_held(op)
            if h is not None:
                os.fsync(h[0])
                return
        name = self.pick_name(op)
        if name is None:
            return
        fd = os.open(self.p(name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def op_sync(self, op):
        os.sync()

    def op_seal(self, op):
        name = self.pick_name(op)
        if name is None:
            return
        obj = self.names[name]
        # Held open for writing (here, or by another node: its lease):
        # EBUSY, nothing changes.
        if any(h[1] == obj and not h[2] for h in self.held):
            return self.refused("seal", set_sealed, self.p(name), True)
        set_sealed(self.p(name), True)
        self.sealed.add(obj)

    def op_unseal(self, op):
        names = sorted(n for n, o in self.names.items() if o in self.sealed)
        if not names:
            return
        name = names[op["i"] % len(names)]
        set_sealed(self.p(name), False)
        self.sealed.discard(self.names[name])

    def op_pause(self, op):
        # The daemon gives freed space back once a second.
        time.sleep(1.2)

    # ---- pauses ---------------------------------------------------------
    def status(self, fs, key):
        with open(os.path.join(fs.mnt, ".objfs-status")) as f:
            for line in f:
                if line.startswith(key + ": "):
                    return line.split(": ", 1)[1].strip()
        return None

    def locks_held(self, what):
        """Every node holds its lock again (the renewer noticed a lapse
        and took it back): a node must not find another's lease free
        because that one has not renewed yet."""
        deadline = time.monotonic() + 30
        for fs in self.nodes:
            node = self.status(fs, "remote_node")
            while True:
                r = subprocess.run(
                    ["rados", "-c", self.a.remote_conf, "-p",
                     self.a.remote.split(":", 1)[1], "-N", self.ns,
                     "lock", "info", "objfs.node." + node, "objfs"],
                    capture_output=True, text=True)
                if r.returncode == 0 and self.lock_live(r.stdout):
                    break
                if time.monotonic() > deadline:
                    raise Failure("%s: node %s holds no lock 30 s later" %
                                  (what, node))
                time.sleep(0.1)

    @staticmethod
    def lock_live(info):
        """rados lock info's JSON: a locker whose lock has not expired (an
        expired one stays listed until the lock is next taken)."""
        import datetime
        try:
            lockers = json.loads(info).get("lockers", [])
        except ValueError:
            return False
        now = datetime.datetime.now(datetime.timezone.utc)
        for lk in lockers:
            exp = lk.get("expiration", "")
            if exp.startswith("0.0") or exp.startswith("1970"):
                return True		# no expiration
            try:
                t = datetime.datetime.strptime(exp, "%Y-%m-%dT%H:%M:%S.%f%z")
            except ValueError:
                continue
            if (t - now).total_seconds() > 0.5:
                return True
        return False

    def op_stop(self, op):
        long = op["j"] % 2 == 0
        if not self.a.remote:
            secs = 0.5
        else:
            secs = LEASE_S + 1.5 if long else 0.5
        x = self.fs
        target = None
        if self.nodes and long:
            # A file this node writes, with a name the other can open.
            cands = sorted({h[1] for h in self.held if not h[2] and
                            h[3] == self.node} & set(self.names.values()))
            if cands:
                target = cands[op["i"] % len(cands)]
        if target is None:
            x.proc.send_signal(signal.SIGSTOP)
            time.sleep(secs)
            x.proc.send_signal(signal.SIGCONT)
            self.pauses += 1
            if self.nodes and long:
                self.locks_held("after a node was stopped")
            return
        fds = [h for h in self.held if h[1] == target and not h[2] and
               h[3] == self.node]
        name = sorted(n for n, o in self.names.items() if o == target)[0]
        # Published: what the other node starts from once it takes it.
        os.fsync(fds[0][0])
        published = bytearray(self.objs[target])
        extra = data_for(op["data"] if "data" in op else op["i"],
                         1 + op["i"] % (3 * self.chunk), self.blocks,
                         self.chunk)
        self.pwrite_all(fds[0][0], target, extra, op["j"] % (8 * self.chunk))
        other = self.nodes[1 - self.node]
        x.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(secs)
            path = os.path.join(other.mnt, name)
            t0 = time.monotonic()
            while True:
                try:
                    fd = os.open(path, os.O_RDWR)
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or \
                            time.monotonic() - t0 > 30:
                        raise Failure("the other node's open of a file "
                                      "whose writer stopped past its "
                                      "lease: %s" % e)
                    time.sleep(0.2)
            data = data_for(op["i"] ^ 0x55, 1 + op["j"] % (2 * self.chunk),
                            self.blocks, self.chunk)
            off = op["i"] % (6 * self.chunk)
            try:
                os.pwrite(fd, data, off)
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            x.proc.send_signal(signal.SIGCONT)
        self.pauses += 1
        self.broken += 1
        self.objs[target] = published
        self.m_write(target, off, data)
        # The stopped node's writers of it are fenced: EIO, and they go.
        # (Its fsync is what finds out, if its follower has not yet: a
        # write that comes before may still land in its memory.)
        for h in fds:
            for what, fn in (("fsync", lambda: os.fsync(h[0])),
                             ("write", lambda: os.pwrite(h[0], b"x", 0)),
                             ("close", lambda: os.close(h[0]))):
                try:
                    fn()
                except OSError as e:
                    if e.errno != errno.EIO:
                        raise Failure("a fenced writer's %s: %s" % (
                            what, errno.errorcode.get(e.errno, e)))
                    continue
                if what != "close":
                    raise Failure("a fenced writer's %s succeeded" % what)
            self.held.remove(h)
        self.m_gc()
        self.locks_held("after a lease was broken")

    def op_osd(self, op):
        if not self.a.osd_pid:
            return
        with open(self.a.osd_pid) as f:
            pid = int(f.read().split()[0])
        secs = 1 + op["i"] % 8		# past the lease and the timeout too
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(secs)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.pauses += 1
        if self.nodes:
            self.locks_held("after the OSD was stopped %d s" % secs)

    def close_held(self, node=None):
        """Close the descriptors held (on @node only, when given)."""
        keep = []
        for h in self.held:
            if node is not None and h[3] != node:
                keep.append(h)
                continue
            try:
                os.close(h[0])
            except OSError:
                pass
        self.held = keep
        self.m_gc()

    def op_remount(self, op):
        self.close_held(self.node)
        self.fs.stop(full_ok=bool(self.a.disk))
        self.fs.check()
        self.fs.start()
        self.verify("after a clean remount")

    def op_kill(self, op):
        self.close_held(self.node)
        self.fs.kill()
        self.fs.check()		# what a killed daemon leaves is consistent
        self.fs.start()
        self.verify("after SIGKILL and remount")

    # ---- checks ---------------------------------------------------------
    def verify(self, when):
        if not self.nodes:
            return self.verify_node(when, self.fs, 0)
        self.catch_up()
        for k, fs in enumerate(self.nodes):
            self.verify_node("%s, node %d" % (when, k), fs, k)

    def verify_node(self, when, fs, node):
        have = sorted(n for n in os.listdir(fs.mnt)
                      if not n.startswith("."))
        if have != sorted(self.names):
            raise Failure("%s: names %s, model %s" %
                          (when, have, sorted(self.names)))
        for name, obj in sorted(self.names.items()):
            if self.leased_by(obj) not in (None, node):
                continue	# its writer's node has what is not published
            want = self.objs[obj]
            path = os.path.join(fs.mnt, name)
            if get_sealed(path) != (obj in self.sealed):
                raise Failure("%s: %s is %s, model %s" % (
                    when, name, "sealed" if obj not in self.sealed else
                    "not sealed", "sealed" if obj in self.sealed else
                    "not sealed"))
            st = os.stat(path)
            if st.st_size != len(want):
                raise Failure("%s: %s is %d bytes, model %d" %
                              (when, name, st.st_size, len(want)))
            with open(path, "rb") as f:
                off = 0
                while True:
                    try:
                        b = f.read(1 << 20)
                    except OSError as e:
                        raise Failure("%s: reading %s at %d: %s" %
                                      (when, name, off, e))
                    if not b:
                        break
                    if b != want[off:off + len(b)]:
                        bad = next(i for i in range(len(b))
                                   if b[i] != want[off + i])
                        raise Failure("%s: %s differs at byte %d (chunk %d)"
                                      % (when, name, off + bad,
                                         (off + bad) // self.chunk))
                    off += len(b)
                if off != len(want):
                    raise Failure("%s: %s read %d bytes, model %d" %
                                  (when, name, off, len(want)))

    def backing_blocks(self):
        used = 0
        d = os.path.join(self.fs.data, "backing")
        for root, _, files in os.walk(d):
            for f in files:
                used += os.lstat(os.path.join(root, f)).st_blocks * 512
        return used

    def finish(self):
        """Everything deleted, unmounted: no data block may stay."""
        self.close_held()
        if self.nodes:
            self.node, self.fs = 0, self.nodes[0]
            self.catch_up()
        for name in sorted(self.names):
            if self.names[name] in self.sealed:
                set_sealed(self.p(name), False)
                self.sealed.discard(self.names[name])
            os.unlink(self.p(name))
        self.names = {}
        self.m_gc()
        if self.a.batch:
            # Delegations were used (the last mounts' counts).
            for fs in self.nodes:
                self.deferred += int(self.status(
                    fs, "remote_commits_deferred") or 0)
                self.recalled += int(self.status(
                    fs, "remote_dirs_recalled") or 0)
        for fs in self.nodes[1:]:
            fs.stop()
            fs.check()
        if self.nodes:
            # What the others did last (their files let go at unmount).
            self.catch_up(self.nodes[:1])
        self.fs.stop()
        self.fs.check()
        used = self.backing_blocks()
        if used:
            raise Failure("every file deleted and unmounted, yet the "
                          "backing files hold %d bytes" % used)
        if self.fs.fs:
            # The disk's used space is back where it was, but for what
            # the data directory's files (the index) take now.
            du = 0
            for root, dirs, files in os.walk(self.fs.data):
                for x in files + dirs:
                    du += os.lstat(os.path.join(root, x)).st_blocks * 512
            extra = self.fs.used() - self.fs.used0 - du
            if extra > (1 << 20):
                raise Failure("every file deleted and unmounted, yet the "
                              "disk holds %d bytes more than before and "
                              "than the data directory's files" % extra)

    # ---- the run --------------------------------------------------------
    def run(self, work, deadline=None):
        """Runs the ops; returns (index of the failing op or None, why)."""
        opts = self.a.opts
        if self.a.remote:
            # A namespace of its own for each run: the pool's tree starts
            # empty as the data directory does.
            global REMOTE_RUNS
            REMOTE_RUNS += 1
            self.ns = "fz%d_%d" % (os.getpid(), REMOTE_RUNS)
            opts += ",remote=%s/%s,remote_hold=%d,remote_timeout=%d" % (
                self.a.remote, self.ns, LEASE_S, TIMEOUT_S)
            if not self.a.remote.startswith("s3://"):
                opts += ",remote_conf=%s" % self.a.remote_conf
            else:
                opts += ",remote_insecure"	# the tests' http:// gateway
        if self.a.shared:
            opts += ",shared,remote_lease=%d" % LEASE_S
            if self.a.batch:
                opts += ",remote_batch=%d" % self.a.batch
            for k in range(2):
                os.makedirs(os.path.join(work, "n%d" % k))
                self.nodes.append(Objfs(self.a.bin, self.a.ctl, os.path.join(
                    work, "n%d" % k), opts, self.a.disk))
            self.fs = self.nodes[0]
        else:
            self.fs = Objfs(self.a.bin, self.a.ctl, work, opts, self.a.disk)
        i = -1
        try:
            for fs in self.nodes or [self.fs]:
                fs.start()
            for i, op in enumerate(self.ops):
                if deadline is not None and time.monotonic() > deadline:
                    self.ops = self.ops[:i]
                    break
                try:
                    self.apply(op)
                except OSError as e:
                    # A full disk may refuse what needs room; it must
                    # change nothing (the model follows each call that
                    # returned), and deleting must still work.
                    if not (self.a.disk and e.errno == errno.ENOSPC and
                            op["op"] in ENOSPC_OK):
                        raise Failure("%s: unexpected %s" % (
                            op["op"], errno.errorcode.get(e.errno, e)))
                    self.enospc += 1
                self.done = i + 1
                if self.verbose:
                    print("# %5d %s" % (i, json.dumps(op)), flush=True)
                if (i + 1) % self.a.check_every == 0:
                    self.verify("after op %d" % i)
            i = len(self.ops)
            self.verify("at the end")
            self.finish()
            return None, None
        except Failure as f:
            return i, str(f)
        finally:
            self.close_held()
            for fs in self.nodes or [self.fs]:
                fs.cleanup()


def attempt(args, ops, verbose=False):
    work = tempfile.mkdtemp(prefix="objfs-fuzz.", dir=args.tmp)
    try:
        r = Run(args, ops, verbose)
        at, why = r.run(work)
        if why and args.keep_log:
            for k, fs in enumerate(r.nodes or [r.fs]):
                try:
                    with open(fs.log) as f:
                        sys.stdout.write("".join(
                            "# log%s: %s" % (" of node %d" % k if r.nodes
                                             else "", x)
                            for x in f.readlines()[-40:]
                            if ": info: " not in x))
                except OSError:
                    pass
        return at, why, r
    finally:
        shutil.rmtree(work, ignore_errors=True)


def shrink(args, ops, budget):
    """Delta debugging: the shortest subsequence that still fails, within
    @budget seconds."""
    end = time.monotonic() + budget
    tries = 0
    n = 2
    while len(ops) >= 2 and time.monotonic() < end:
        size = max(1, len(ops) // n)
        cut = False
        for start in range(0, len(ops), size):
            if time.monotonic() >= end:
                break
            cand = ops[:start] + ops[start + size:]
            tries += 1
            at, why, _ = attempt(args, cand)
            if why:
                ops = cand[:at + 1] if at is not None and at < len(cand) \
                    else cand
                n = max(n - 1, 2)
                cut = True
                break
        if not cut:
            if size == 1:
                break
            n = min(len(ops), 2 * n)
    return ops, tries


def stop_on_signal(signum, frame):
    """SIGTERM, SIGHUP (a timeout, a closed terminal): leave through the
    cleanups, which unmount and remove what the run made."""
    raise SystemExit(128 + signum)


def main():
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on_signal)
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get(
        "OBJFS_BIN", os.path.join(top, "build", "objfs")))
    ap.add_argument("--ctl", default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--ops", type=int, default=400,
                    help="operations per seed (default 400)")
    ap.add_argument("--seconds", type=float, default=0,
                    help="run seed after seed for this long (soak)")
    ap.add_argument("--dedup", choices=["on", "off"], default="on")
    ap.add_argument("--arena", default="16M")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--shrink", type=float, default=0,
                    help="seconds to spend shrinking a failure")
    ap.add_argument("--save", help="write the failing sequence here")
    ap.add_argument("--replay", help="run the sequence in this file")
    ap.add_argument("--disk", default="0",
                    help="put the data directory on an ext4 image of this "
                    "size (e.g. 64M), so that the disk fills")
    ap.add_argument("--no-opath", action="store_true",
                    help="hold files open read-write only, never O_PATH")
    ap.add_argument("--remote", default=None,
                    help="rados:POOL or s3://BUCKET (the gateway's settings "
                    "in AWS_*): the tree there (remote=), a "
                    "namespace for each run")
    ap.add_argument("--remote-conf", default="/etc/ceph/ceph.conf")
    ap.add_argument("--shared", action="store_true",
                    help="with --remote: two mounts of the namespace "
                    "(-o shared), each operation on one of them")
    ap.add_argument("--batch", type=int, default=0,
                    help="with --shared: -o remote_batch=MS on both "
                    "(directories held, their changes shipped in batches; "
                    "each catch-up recalls them)")
    ap.add_argument("--osd-pid", default=None,
                    help="with --remote: the OSD's pid file (the osd "
                    "operation stops and resumes it)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep-log", action="store_true")
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args()
    if args.ctl is None:
        args.ctl = os.path.join(os.path.dirname(args.bin), "objfsctl")
    for b in (args.bin, args.ctl):
        if not os.access(b, os.X_OK):
            print("fuzz: %s is not an executable" % b, file=sys.stderr)
            return 2
    args.opts = "arena=%s,chunk=%dK,dedup=%s" % (args.arena, args.chunk >> 10,
                                                   args.dedup)
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    d = args.disk.upper()
    args.disk = int(d[:-1]) * units[d[-1]] if d[-1:] in units else int(d)
    args.blocks_seed = 1
    if args.shared and not args.remote:
        print("fuzz: --shared needs --remote", file=sys.stderr)
        sys.exit(2)
    if args.shared and args.remote.startswith("s3://"):
        print("fuzz: --shared is for a pool (rados:POOL)", file=sys.stderr)
        return 2

    if args.replay:
        with open(args.replay) as f:
            saved = json.load(f)
        args.blocks_seed = saved.get("blocks_seed", 1)
        at, why, r = attempt(args, saved["ops"], args.verbose)
        if why:
            print("FAIL at op %s of %d: %s" % (at, len(saved["ops"]), why))
            return 1
        print("replay of %d ops: clean" % len(saved["ops"]))
        return 0

    seed = args.seed if args.seed is not None else \
        random.SystemRandom().randrange(1 << 31)
    end = time.monotonic() + args.seconds if args.seconds else None
    seeds = total = enospc = busy = perm = pauses = broken = 0
    deferred = recalled = 0
    counts = {}
    t0 = time.monotonic()
    while True:
        ops = gen_ops(seed, args.ops, args.chunk,
                      0.3 if args.disk else 0.05)
        if args.shared:
            # Each operation's node, from a stream of its own (the
            # operations are those of the same seed without --shared).
            rng = random.Random(seed ^ 0x5eed)
            for op in ops:
                op["n"] = rng.randrange(2)
        print("# seed %d (%s)" % (seed, args.opts),
              flush=True)
        at, why, r = attempt(args, ops, args.verbose)
        for k, v in r.counts.items():
            counts[k] = counts.get(k, 0) + v
        enospc += r.enospc
        busy += r.busy
        perm += r.perm
        pauses += r.pauses
        broken += r.broken
        deferred += r.deferred
        recalled += r.recalled
        if why:
            print("FAIL seed %d at op %d after %.1f s: %s" %
                  (seed, at, time.monotonic() - t0, why), flush=True)
            failing = ops[:at + 1] if at is not None and at < len(ops) else ops
            if args.shrink:
                failing, tries = shrink(args, failing, args.shrink)
                print("# shrunk to %d ops in %d replays:" %
                      (len(failing), tries))
            for i, op in enumerate(failing[-60:]):
                print("#   %s" % json.dumps(op))
            if args.save:
                with open(args.save, "w") as f:
                    json.dump({"seed": seed, "opts": args.opts,
                               "blocks_seed": args.blocks_seed,
                               "ops": failing}, f, indent=0)
                print("# saved: fuzz.py --replay %s --dedup %s%s"
                      % (args.save, args.dedup, " --shared --batch %d" %
                         args.batch if args.batch else ""))
            return 1
        seeds += 1
        total += r.done
        if end is None or time.monotonic() > end:
            break
        seed = (seed * 1103515245 + 12345) % (1 << 31)
    print("clean: %d seeds, %d operations in %.0f s (%s)%s" %
          (seeds, total, time.monotonic() - t0,
           ", ".join("%s %d" % kv for kv in sorted(counts.items())),
           "; %d refused for a full disk" % enospc if args.disk else "") +
          ("; %d refused for another node's lease" % busy
           if args.shared else "") +
          "; %d changes of sealed files refused" % perm +
          "; %d pauses of a daemon or the OSD, %d leases broken "
          "meanwhile" % (pauses, broken) +
          ("; %d commits kept in an outbox, %d directories recalled "
           "(the last mounts of each seed)" % (deferred, recalled)
           if args.batch else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
