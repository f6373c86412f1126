#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every operation objfs serves, with its error cases, checked through a
real mount with the standard library only.  Prints TAP lines without
numbers ("ok - what"); writes the count and failures to argv[2]."""
import ctypes
import errno
import os
import stat
import sys
import threading

M = sys.argv[1]
RESULT = sys.argv[2]
DATA = sys.argv[3]          # the data directory, on the backing filesystem
CHUNK = 1 << 20
libc = ctypes.CDLL(None, use_errno=True)
count = 0
failed = 0


def check(desc, cond, detail=""):
    global count, failed
    count += 1
    if cond:
        print("ok - %s" % desc)
    else:
        failed += 1
        print("not ok - %s %s" % (desc, detail))
    sys.stdout.flush()


def err_of(fn, *a, **k):
    try:
        fn(*a, **k)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "OK"


def expect(desc, want, fn, *a, **k):
    got = err_of(fn, *a, **k)
    check("%s -> %s" % (desc, want), got == want, "(got %s)" % got)


def p(*parts):
    return os.path.join(M, *parts)


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def libc_call(name, *args):
    fn = getattr(libc, name)
    r = fn(*args)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def renameat2(old, new, flags):
    AT_FDCWD = -100
    libc_call("renameat2", AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
              ctypes.c_uint(flags))


def fallocate(fd, mode, off, length):
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                               ctypes.c_long]
    libc_call("fallocate", fd, mode, off, length)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path, a, m):
    UTIME_NOW = (1 << 30) - 1
    UTIME_OMIT = (1 << 30) - 2
    conv = {"now": (0, UTIME_NOW), "omit": (0, UTIME_OMIT)}
    ts = (Timespec * 2)(Timespec(*conv.get(a, a)), Timespec(*conv.get(m, m)))
    libc_call("utimensat", -100, path.encode(), ts, 0)


# ---- files: create, open flags, read and write anywhere ------------------
write_file(p("f"), b"hello world")
check("create + write + read", read_file(p("f")) == b"hello world")
expect("O_CREAT|O_EXCL on an existing file", "EEXIST", os.open, p("f"),
       os.O_WRONLY | os.O_CREAT | os.O_EXCL)
fd = os.open(p("f"), os.O_WRONLY | os.O_APPEND)
os.write(fd, b"!!")
os.close(fd)
check("O_APPEND appends", read_file(p("f")) == b"hello world!!")
fd = os.open(p("f"), os.O_RDWR | os.O_TRUNC)
check("O_TRUNC empties the file", os.fstat(fd).st_size == 0)
os.pwrite(fd, b"xyz", 5 * CHUNK + 100)
check("write past a hole sets the size", os.fstat(fd).st_size == 5 * CHUNK + 103)
check("hole reads as zeros", os.pread(fd, 4096, 2 * CHUNK) == b"\0" * 4096)
check("bytes after the hole", os.pread(fd, 3, 5 * CHUNK + 100) == b"xyz")
os.pwrite(fd, b"A" * 3000, CHUNK - 1000)  # across a chunk boundary
check("write across chunk boundary",
      os.pread(fd, 3000, CHUNK - 1000) == b"A" * 3000)
check("read at EOF returns nothing", os.pread(fd, 10, 10 * CHUNK) == b"")
os.close(fd)
expect("open a missing file", "ENOENT", os.open, p("missing"), os.O_RDONLY)
expect("create in a missing directory", "ENOENT", os.open,
       p("nodir", "x"), os.O_WRONLY | os.O_CREAT)
expect("a file used as a directory", "ENOTDIR", os.stat, p("f", "x"))
check("255-byte name", err_of(write_file, p("n" * 255), b"") == "OK")
expect("256-byte name", "ENAMETOOLONG", os.open, p("n" * 256),
       os.O_WRONLY | os.O_CREAT)
expect("write to a directory", "EISDIR", os.open, M, os.O_WRONLY)

# ---- truncate -------------------------------------------------------------
write_file(p("t"), bytes(range(256)) * 8192)  # 2 MiB
os.truncate(p("t"), 1000)
check("truncate down", read_file(p("t")) == bytes(range(256)) * 3 + bytes(range(232)))
os.truncate(p("t"), 3 * CHUNK)
d = read_file(p("t"))
check("truncate up: old bytes kept, new bytes zero",
      len(d) == 3 * CHUNK and d[:1000] == (bytes(range(256)) * 4)[:1000]
      and d[1000:] == b"\0" * (3 * CHUNK - 1000))
os.truncate(p("t"), 0)
check("truncate to zero", os.stat(p("t")).st_size == 0)

# ---- attributes -------------------------------------------------------------
os.chmod(p("f"), 0o640)
check("chmod", stat.S_IMODE(os.stat(p("f")).st_mode) == 0o640)
os.chown(p("f"), 1234, 5678)
st = os.stat(p("f"))
check("chown", (st.st_uid, st.st_gid) == (1234, 5678))
os.chown(p("f"), 0, 0)
utimensat(p("f"), (1000000000, 123456789), (1100000000, 987654321))
st = os.stat(p("f"))
check("utimens with nanoseconds",
      st.st_atime_ns == 1000000000123456789 and st.st_mtime_ns == 1100000000987654321)
utimensat(p("f"), "omit", "now")
st2 = os.stat(p("f"))
check("UTIME_OMIT keeps atime, UTIME_NOW sets mtime",
      st2.st_atime_ns == st.st_atime_ns and st2.st_mtime_ns > st.st_mtime_ns)
before = os.stat(p("f")).st_mtime_ns
fd = os.open(p("f"), os.O_WRONLY)
os.write(fd, b"x")
os.close(fd)
check("write updates mtime", os.stat(p("f")).st_mtime_ns > before)

# ---- special files ------------------------------------------------------------
os.mkfifo(p("fifo"), 0o600)
check("mkfifo", stat.S_ISFIFO(os.stat(p("fifo")).st_mode))
os.mknod(p("null"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
st = os.stat(p("null"))
check("mknod char device keeps rdev",
      stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3))
os.mknod(p("plain"), 0o600 | stat.S_IFREG)
check("mknod regular file", stat.S_ISREG(os.stat(p("plain")).st_mode))
expect("mknod over an existing name", "EEXIST", os.mkfifo, p("fifo"))

# ---- directories ----------------------------------------------------------------
os.mkdir(p("d"))
check("mkdir", stat.S_ISDIR(os.stat(p("d")).st_mode))
check("new directory has nlink 2", os.stat(p("d")).st_nlink == 2)
root_links = os.stat(M).st_nlink
os.mkdir(p("d", "sub"))
check("subdirectory raises parent nlink", os.stat(p("d")).st_nlink == 3)
expect("mkdir over an existing name", "EEXIST", os.mkdir, p("d"))
expect("rmdir a non-empty directory", "ENOTEMPTY", os.rmdir, p("d"))
expect("rmdir a file", "ENOTDIR", os.rmdir, p("f"))
expect("unlink a directory", "EISDIR", os.unlink, p("d"))
expect("unlink a missing name", "ENOENT", os.unlink, p("nope"))
os.rmdir(p("d", "sub"))
check("rmdir lowers parent nlink", os.stat(p("d")).st_nlink == 2)

# ---- unlink while open ------------------------------------------------------------
write_file(p("u"), b"still here")
fd = os.open(p("u"), os.O_RDWR)
os.unlink(p("u"))
check("unlinked name is gone", not os.path.exists(p("u")))
check("open file readable after unlink", os.pread(fd, 100, 0) == b"still here")
os.pwrite(fd, b"STILL", 0)
check("open file writable after unlink", os.pread(fd, 100, 0) == b"STILL here")
check("fstat of unlinked file: nlink 0", os.fstat(fd).st_nlink == 0)
os.close(fd)

# ---- rename ----------------------------------------------------------------------
write_file(p("r1"), b"one")
write_file(p("r2"), b"two")
os.rename(p("r1"), p("r2"))
check("rename over a file replaces it",
      read_file(p("r2")) == b"one" and not os.path.exists(p("r1")))
os.mkdir(p("rd1"))
os.mkdir(p("rd2"))
write_file(p("rd1", "inside"), b"i")
os.rename(p("rd1"), p("rd2"))
check("rename a directory over an empty one",
      read_file(p("rd2", "inside")) == b"i" and not os.path.exists(p("rd1")))
os.mkdir(p("rd3"))
expect("rename over a non-empty directory", "ENOTEMPTY", os.rename, p("rd3"), p("rd2"))
expect("rename a directory over a file", "ENOTDIR", os.rename, p("rd3"), p("r2"))
expect("rename a file over a directory", "EISDIR", os.rename, p("r2"), p("rd3"))
expect("rename a directory into itself", "EINVAL", os.rename, p("rd2"), p("rd2", "x"))
os.mkdir(p("rd2", "deeper"))
expect("rename a directory below itself", "EINVAL", os.rename, p("rd2"),
       p("rd2", "deeper", "x"))
write_file(p("nr"), b"nr")
expect("RENAME_NOREPLACE onto an existing name", "EEXIST", renameat2,
       p("nr"), p("r2"), 1)
renameat2(p("nr"), p("nr2"), 1)
check("RENAME_NOREPLACE onto a free name", read_file(p("nr2")) == b"nr")
renameat2(p("nr2"), p("r2"), 2)
check("RENAME_EXCHANGE swaps two files",
      read_file(p("nr2")) == b"one" and read_file(p("r2")) == b"nr")
renameat2(p("rd3"), p("nr2"), 2)
check("RENAME_EXCHANGE swaps a file and a directory",
      os.path.isdir(p("nr2")) and read_file(p("rd3")) == b"one")
expect("RENAME_EXCHANGE with a missing target", "ENOENT", renameat2,
       p("rd3"), p("absent"), 2)
os.rename(p("rd2", "inside"), p("moved"))
check("rename across directories (never EXDEV)", read_file(p("moved")) == b"i")
links = os.stat(p("rd2")).st_nlink
os.rename(p("rd2", "deeper"), p("deeper"))
check("moving a directory updates both parents' nlink",
      os.stat(p("rd2")).st_nlink == links - 1 and os.stat(M).st_nlink >= 3)
os.rename(p("deeper"), p("deeper"))
check("rename onto itself is a no-op", os.path.isdir(p("deeper")))

# ---- hard links and symlinks ------------------------------------------------------
write_file(p("h1"), b"linked")
os.link(p("h1"), p("h2"))
check("link: nlink 2 and shared bytes",
      os.stat(p("h1")).st_nlink == 2 and read_file(p("h2")) == b"linked"
      and os.stat(p("h1")).st_ino == os.stat(p("h2")).st_ino)
os.link(p("h1"), p("d", "h3"))
check("link into another directory", os.stat(p("h2")).st_nlink == 3)
os.unlink(p("h1"))
check("unlink one link lowers nlink", os.stat(p("h2")).st_nlink == 2)
expect("link to a directory", "EPERM", os.link, p("d"), p("dlink"))
expect("link onto an existing name", "EEXIST", os.link, p("h2"), p("f"))
os.rename(p("h2"), p("d", "h3"))
check("rename between hard links of one file is a no-op",
      os.path.exists(p("h2")) and os.path.exists(p("d", "h3")))
os.symlink("f", p("sl"))
check("symlink + readlink", os.readlink(p("sl")) == "f")
check("follow symlink", read_file(p("sl")) == read_file(p("f")))
os.symlink("/" + "a" * 1000, p("longlink"))
check("long symlink target", os.readlink(p("longlink")) == "/" + "a" * 1000)
expect("readlink of a file", "EINVAL", os.readlink, p("f"))

# ---- readdir --------------------------------------------------------------------
os.mkdir(p("big"))
names = set("file-%05d" % i for i in range(3000))
for n in names:
    os.close(os.open(p("big", n), os.O_WRONLY | os.O_CREAT))
listed = os.listdir(p("big"))
check("readdir of 3000 entries: all, once",
      len(listed) == 3000 and set(listed) == names)
with os.scandir(p("big")) as it:
    kinds = {e.name: e.is_file() for e in it}
check("readdirplus/scandir types", all(kinds.values()) and len(kinds) == 3000)
# The kernel may keep a listing (objfs needs no OPENDIR, so the kernel
# caches directory pages): every change must show in the next one.
os.close(os.open(p("big", "late"), os.O_WRONLY | os.O_CREAT))
os.rename(p("big", "file-00007"), p("big", "moved-00007"))
os.unlink(p("big", "file-00008"))
again = set(os.listdir(p("big")))
check("a listing after create, rename and unlink shows each change",
      "late" in again and "moved-00007" in again and
      "file-00007" not in again and "file-00008" not in again and
      len(again) == 3000)
os.unlink(p("big", "late"))
os.rename(p("big", "moved-00007"), p("big", "file-00007"))
os.close(os.open(p("big", "file-00008"), os.O_WRONLY | os.O_CREAT))
check("and after they are undone", set(os.listdir(p("big"))) == names)
# Change the directory while listing it: entries that stay must be listed
# exactly once; none may repeat.
seen = []
removed = set()
with os.scandir(p("big")) as it:
    for i, e in enumerate(it):
        seen.append(e.name)
        if i % 10 == 0:
            victim = "file-%05d" % (2999 - i // 10)
            if victim not in seen:
                os.unlink(p("big", victim))
                removed.add(victim)
            os.close(os.open(p("big", "new-%05d" % i), os.O_WRONLY | os.O_CREAT))
stayed = names - removed
check("listing while changing: no entry repeated", len(seen) == len(set(seen)))
check("listing while changing: no entry that stayed was lost",
      stayed <= set(seen), "(%d missing)" % len(stayed - set(seen)))

# ---- statfs ----------------------------------------------------------------------
# The disk is shared: other writers move its figures at any time, so each
# of objfs's figures is compared with the backing filesystem's read just
# before and just after it, never with a figure from an earlier moment.
def status_of(key):
    with open(p(".objfs-status")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def statfs_bracketed():
    # objfs's statvfs, the backing filesystem's and the arena's use just
    # before and just after it (the spiller may move bytes meanwhile)
    a0 = status_of("arena_used_bytes")
    b0 = os.statvfs(DATA)
    o = os.statvfs(M)
    b1 = os.statvfs(DATA)
    a1 = status_of("arena_used_bytes")
    return o, b0, b1, a0, a1


def between(v, a, b, slack=1 << 20):
    return min(a, b) - slack <= v <= max(a, b) + slack


sv = os.statvfs(M)
check("statfs reports capacity", sv.f_blocks * sv.f_frsize > 100 << 20)
check("statfs name length", sv.f_namemax == 255)
write_file(p("space"), b"s" * (16 << 20))
held = sum(int(os.getxattr(p("space"), "user.objfs." + k))
           for k in ("resident", "spilled"))
check("the 16 MiB written are held in the arena or on disk",
      held >= 16 << 20, "(%d)" % held)
o, b0, b1, a0, a1 = statfs_bracketed()
fr = o.f_frsize
check("statfs size is the backing filesystem's",
      o.f_blocks * fr == b0.f_blocks * b0.f_frsize)
check("statfs used (size - free) is the backing filesystem's",
      between((o.f_blocks - o.f_bfree) * fr,
              (b0.f_blocks - b0.f_bfree) * b0.f_frsize,
              (b1.f_blocks - b1.f_bfree) * b1.f_frsize),
      "(%d)" % ((o.f_blocks - o.f_bfree) * fr))
lo = min(b0.f_bavail, b1.f_bavail) * b0.f_frsize - max(a0, a1)
hi = max(b0.f_bavail, b1.f_bavail) * b0.f_frsize - min(a0, a1)
check("statfs available leaves room for the bytes in the arena",
      lo - (1 << 20) <= o.f_bavail * fr <= hi + (1 << 20),
      "(objfs %d; disk less arena %d..%d)" % (o.f_bavail * fr, lo, hi))

# ---- extended attributes -----------------------------------------------------------
os.setxattr(p("f"), "user.k", b"v1")
check("setxattr + getxattr", os.getxattr(p("f"), "user.k") == b"v1")
os.setxattr(p("f"), "user.empty", b"")
check("empty xattr value", os.getxattr(p("f"), "user.empty") == b"")
check("listxattr", set(os.listxattr(p("f"))) >= {"user.k", "user.empty"})
expect("XATTR_CREATE on an existing name", "EEXIST", os.setxattr, p("f"),
       "user.k", b"x", os.XATTR_CREATE)
expect("XATTR_REPLACE on a missing name", "ENODATA", os.setxattr, p("f"),
       "user.none", b"x", os.XATTR_REPLACE)
expect("getxattr of a missing name", "ENODATA", os.getxattr, p("f"), "user.none")
os.setxattr(p("f"), "user.big", b"b" * 65536)
check("64 KiB xattr value", os.getxattr(p("f"), "user.big") == b"b" * 65536)
os.removexattr(p("f"), "user.k")
expect("removexattr, then get", "ENODATA", os.getxattr, p("f"), "user.k")
expect("removexattr of a missing name", "ENODATA", os.removexattr, p("f"), "user.k")
os.setxattr(p("d"), "user.dir", b"on a directory")
check("xattr on a directory", os.getxattr(p("d"), "user.dir") == b"on a directory")

# ---- fallocate and SEEK_DATA/SEEK_HOLE ------------------------------------------------
fd = os.open(p("fa"), os.O_RDWR | os.O_CREAT, 0o644)
os.posix_fallocate(fd, 0, 3 * CHUNK)
check("fallocate extends the size", os.fstat(fd).st_size == 3 * CHUNK)
check("fallocated bytes read as zeros", os.pread(fd, 4096, CHUNK) == b"\0" * 4096)
os.pwrite(fd, b"D" * (3 * CHUNK), 0)
fallocate(fd, 0x01 | 0x02, CHUNK, CHUNK)  # PUNCH_HOLE | KEEP_SIZE
check("punch hole zeros the range, keeps the size",
      os.pread(fd, CHUNK, CHUNK) == b"\0" * CHUNK and os.fstat(fd).st_size == 3 * CHUNK
      and os.pread(fd, 10, 2 * CHUNK) == b"D" * 10)
fallocate(fd, 0x01 | 0x02, 100, 50)
check("punch inside a chunk",
      os.pread(fd, 200, 0) == b"D" * 100 + b"\0" * 50 + b"D" * 50)
fallocate(fd, 0x01, 3 * CHUNK, 4096)  # KEEP_SIZE
check("fallocate KEEP_SIZE keeps the size", os.fstat(fd).st_size == 3 * CHUNK)
# EOPNOTSUPP and ENOTSUP are one number on Linux; Python names it ENOTSUP.
expect("fallocate with an unsupported mode", errno.errorcode[errno.EOPNOTSUPP],
       fallocate, fd, 0x08, 0, 4096)
check("SEEK_DATA at start", os.lseek(fd, 0, os.SEEK_DATA) == 0)
check("SEEK_HOLE finds the punched chunk", os.lseek(fd, 0, os.SEEK_HOLE) == CHUNK)
check("SEEK_DATA after the hole", os.lseek(fd, CHUNK, os.SEEK_DATA) == 2 * CHUNK)
check("SEEK_HOLE at the end", os.lseek(fd, 2 * CHUNK, os.SEEK_HOLE) == 3 * CHUNK)
expect("SEEK_DATA past the end", "ENXIO", os.lseek, fd, 4 * CHUNK, os.SEEK_DATA)
os.fsync(fd)
os.fdatasync(fd)
check("fsync and fdatasync", True)
os.close(fd)
fd = os.open(p("sparse"), os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"x", 10 * CHUNK)
check("SEEK_DATA skips a leading hole", os.lseek(fd, 0, os.SEEK_DATA) == 10 * CHUNK)
os.ftruncate(fd, 20 * CHUNK)  # a trailing hole that no chunk covers
expect("SEEK_DATA inside a trailing hole", "ENXIO", os.lseek, fd, 15 * CHUNK, os.SEEK_DATA)
expect("SEEK_DATA at the start of a trailing hole", "ENXIO",
       os.lseek, fd, 11 * CHUNK, os.SEEK_DATA)
check("SEEK_HOLE finds the trailing hole after the 4 KiB that hold the byte",
      os.lseek(fd, 10 * CHUNK, os.SEEK_HOLE) == 10 * CHUNK + 4096)
check("SEEK_HOLE inside the trailing hole", os.lseek(fd, 15 * CHUNK, os.SEEK_HOLE) == 15 * CHUNK)
os.close(fd)
# Inside a chunk: a 64 KiB file extended to 1 MiB has its hole from
# 64 KiB on, before and after it is written out, as on tmpfs.
fd = os.open(p("short"), os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"s" * 65536, 0)
os.ftruncate(fd, 1 << 20)
for when in ("in the arena", "written out"):
    check("SEEK_HOLE of a 64 KiB file extended to 1 MiB (%s)" % when,
          os.lseek(fd, 0, os.SEEK_HOLE) == 65536)
    expect("SEEK_DATA at 192 KiB of it (%s)" % when, "ENXIO",
           os.lseek, fd, 192 << 10, os.SEEK_DATA)
    check("SEEK_DATA inside its data (%s)" % when,
          os.lseek(fd, 1000, os.SEEK_DATA) == 1000)
    os.fsync(fd)
os.close(fd)

# ---- the status file: read-only, never listed, never replaced ------------------------
st = p(".objfs-status")
check("the status file reads", "arena_used_bytes:" in open(st).read())
check("the status file is not listed", ".objfs-status" not in os.listdir(p()))
expect("open the status file for writing", "EACCES", os.open, st, os.O_WRONLY)
expect("chmod the status file", "EPERM", os.chmod, st, 0o600)
expect("truncate the status file", "EPERM", os.truncate, st, 0)
expect("setxattr on the status file", "EPERM", os.setxattr, st, "user.x", b"1")
expect("unlink the status file", "EPERM", os.unlink, st)
expect("rename the status file", "EPERM", os.rename, st, p("was-status"))
expect("link to the status file", "EPERM", os.link, st, p("status-link"))
expect("create over the status file", "EEXIST", os.open, st,
       os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
expect("mkdir at the status file's name", "EEXIST", os.mkdir, st)
fd = os.open(st, os.O_RDONLY)
expect("SEEK_DATA in the status file", "ENXIO", os.lseek, fd, 0, os.SEEK_DATA)
expect("SEEK_HOLE in the status file", "ENXIO", os.lseek, fd, 0, os.SEEK_HOLE)
os.close(fd)

# ---- setgid directories ---------------------------------------------------------------
os.mkdir(p("sg"))
os.chown(p("sg"), 0, 4242)
os.chmod(p("sg"), 0o2775)
write_file(p("sg", "child"), b"")
os.mkdir(p("sg", "subdir"))
check("file in a setgid directory takes its group", os.stat(p("sg", "child")).st_gid == 4242)
st = os.stat(p("sg", "subdir"))
check("directory in a setgid directory is setgid too",
      st.st_gid == 4242 and st.st_mode & stat.S_ISGID)

# ---- copy_file_range inside the mount ------------------------------------------------
src_bytes = os.urandom(3 * CHUNK + 5)
write_file(p("cfr_src"), src_bytes)
fi = os.open(p("cfr_src"), os.O_RDONLY)
fo = os.open(p("cfr_dst"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
n = os.copy_file_range(fi, fo, len(src_bytes), 0, 0)
check("copy_file_range copies a whole file", n == len(src_bytes) and
      read_file(p("cfr_dst")) == src_bytes, "(%d bytes)" % n)
n = os.copy_file_range(fi, fo, 100, CHUNK - 50, 10)
check("copy_file_range into the middle of a file",
      n == 100 and read_file(p("cfr_dst"))[10:110] == src_bytes[CHUNK - 50:CHUNK + 50] and
      read_file(p("cfr_dst"))[:10] == src_bytes[:10])
n = os.copy_file_range(fi, fo, 1000, len(src_bytes) - 5, 4 * CHUNK)
check("copy_file_range stops at the source's end and extends the target",
      n == 5 and os.fstat(fo).st_size == 4 * CHUNK + 5 and
      read_file(p("cfr_dst"))[-5:] == src_bytes[-5:], "(%d bytes)" % n)
check("copy_file_range at the source's end copies nothing",
      os.copy_file_range(fi, fo, 10, len(src_bytes), 0) == 0)
check("the bytes between are a hole of zeros",
      read_file(p("cfr_dst"))[len(src_bytes):4 * CHUNK] == bytes(4 * CHUNK - len(src_bytes)))
os.close(fi)
os.close(fo)

with open(RESULT, "w") as f:
    f.write("%d %d\n" % (count, failed))
