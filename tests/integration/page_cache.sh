#!/bin/bash
# SPDX-License-Identifier: MIT
# How objfs meets the kernel's page cache: which opens bypass it
# (-o direct_io), that readers, writers and shared mappings of one file
# always agree whatever the policy, the mount's read-ahead, and the I/O
# size that stat reports.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init

# Coherence, as a user sees it, for one mount: prints what went wrong.
cat >"$T/coherent.py" <<'PY'
import mmap, os, sys
d = sys.argv[1]
p = os.path.join(d, "f")
bad = []
def want(what, got, exp):
    if got != exp:
        bad.append("%s: %r, wanted %r" % (what, got, exp))
with open(p, "wb") as f:
    f.write(b"A" * 8192)
r = os.open(p, os.O_RDONLY)
want("first read", os.pread(r, 4, 0), b"AAAA")
w = os.open(p, os.O_WRONLY)
os.pwrite(w, b"BBBB", 0)
want("reader while a writer is open", os.pread(r, 4, 0), b"BBBB")
os.close(w)
want("reader after the writer closed", os.pread(r, 4, 0), b"BBBB")
r2 = os.open(p, os.O_RDONLY)
want("new open", os.pread(r2, 4, 0), b"BBBB")
m = mmap.mmap(r2, 8192, prot=mmap.PROT_READ)      # MAP_SHARED
want("shared read-only mapping", m[:4], b"BBBB")
w = os.open(p, os.O_WRONLY)
os.pwrite(w, b"CCCC", 0)
os.close(w)
want("mapping after a write", m[:4], b"CCCC")
rw = os.open(p, os.O_RDWR)
m2 = mmap.mmap(rw, 8192)                           # shared, writable
m2[4096:4100] = b"DDDD"
m2.flush()
want("read() after a store through a mapping", os.pread(r, 4, 4096), b"DDDD")
want("other mapping after a store", m[4096:4100], b"DDDD")
os.pwrite(rw, b"EEEE", 4096)
want("mapping after pwrite on the same fd", m2[4096:4100], b"EEEE")
m.close(); m2.close()
for fd in (r, r2, rw):
    os.close(fd)
with open(p, "rb") as f:
    want("whole file after all", f.read(8), b"CCCCAAAA")
    f.seek(4096)
    want("second page after all", f.read(4), b"EEEE")
os.unlink(p)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY

bdi_ra() { cat "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb"; }
# cached_pages FILE: pages of FILE in the page cache (fincore).
cached_pages() { fincore -n -b -o PAGES "$1" | tr -d ' '; }

kernel_mmap_dio=0	# FUSE_DIRECT_IO_ALLOW_MMAP is in Linux 6.6
ver=$(uname -r | cut -d. -f1-2)
[ "$(printf '%s\n6.6\n' "$ver" | sort -V | head -n 1)" = 6.6 ] && kernel_mmap_dio=1

ok "mount with defaults" start_objfs "$MNT" "$DATA" arena=128M
ok "read-ahead of the mount is 1 MiB" test "$(bdi_ra)" = 1024
ok "readers, writers and mappings agree (direct_io=auto)" python3 "$T/coherent.py" "$MNT"
head -c $((8 << 20)) /dev/urandom >"$T/src"
cp "$T/src" "$MNT/big"
ok "stat reports 1 MiB I/O blocks, so cp and Python use 1 MiB requests" \
	test "$(stat -c %o "$MNT/big")" = 1048576
ok "a file copied in comes back the same" cmp "$T/src" "$MNT/big"
if [ "$kernel_mmap_dio" = 1 ]; then
	ok "auto: reads of a large file leave nothing in the page cache" test "$(cached_pages "$MNT/big")" = 0
	ok "auto: the daemon says so" grep -q "direct I/O on every open but reads of files up to 1 MiB" "$T/objfs.mnt.log"
	head -c 65536 /dev/urandom >"$T/small"
	cp "$T/small" "$MNT/small"
	ok "auto: a write-only copy of a small file leaves nothing in the page cache" \
		test "$(cached_pages "$MNT/small")" = 0
	cmp -s "$T/small" "$MNT/small"
	ok "auto: a file of at most 1 MiB, read, stays in the page cache" \
		test "$(cached_pages "$MNT/small")" -gt 0
else
	ok "auto: the daemon says reads are cached" grep -q "direct I/O on write-only opens" "$T/objfs.mnt.log"
fi
ok "unmount" stop_objfs

ok "mount with direct_io=writes,readahead=256K" start_objfs "$MNT" "$DATA" arena=128M,direct_io=writes,readahead=256K
ok "read-ahead follows -o readahead" test "$(bdi_ra)" = 256
ok "readers, writers and mappings agree (direct_io=writes)" python3 "$T/coherent.py" "$MNT"
cat "$MNT/big" >/dev/null
ok "writes: a read fills the page cache" test "$(cached_pages "$MNT/big")" -gt 0
cp "$T/src" "$MNT/big2"
ok "writes: a write-only copy leaves nothing in the page cache" test "$(cached_pages "$MNT/big2")" = 0
# A direct write must not leave a cached reader with old pages.
python3 - "$MNT/big" <<'PY' >"$T/stale.out" 2>&1
import os, sys
p = sys.argv[1]
r = os.open(p, os.O_RDONLY)
old = os.pread(r, 1 << 20, 0)
w = os.open(p, os.O_WRONLY)
os.pwrite(w, bytes(1 << 20), 0)
os.close(w)
os.close(r)
r = os.open(p, os.O_RDONLY)
sys.exit(0 if os.pread(r, 1 << 20, 0) == bytes(1 << 20) else 1)
PY
ok "writes: a reader opening after a direct write sees it" test $? = 0
ok "unmount" stop_objfs

ok "mount with direct_io=none" start_objfs "$MNT" "$DATA" arena=128M,direct_io=none
ok "readers, writers and mappings agree (direct_io=none)" python3 "$T/coherent.py" "$MNT"
ok "none: data written before is intact" cmp "$T/src" "$MNT/big2"
ok "unmount" stop_objfs

ok "mount with direct_io=all" start_objfs "$MNT" "$DATA" arena=128M,direct_io=all
if [ "$kernel_mmap_dio" = 1 ]; then
	ok "readers, writers and mappings agree (direct_io=all)" python3 "$T/coherent.py" "$MNT"
else
	expect_errno "all: shared mappings need Linux 6.6" ENODEV \
		"import mmap; mmap.mmap(os.open('$MNT/big2', os.O_RDONLY), 4096)"
fi
ok "all: data written before is intact" cmp "$T/src" "$MNT/big2"
ok "unmount" stop_objfs
t_done
