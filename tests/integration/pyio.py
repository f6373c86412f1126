#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program using only Python's standard library writes, reads, seeks and
mmaps a file in the mount.  Exits non-zero with a message on any mismatch."""
import hashlib
import mmap
import os
import random
import sys

path = os.path.join(sys.argv[1], "py.bin")
rng = random.Random(42)
size = 24 << 20
data = bytearray(rng.getrandbits(8) for _ in range(1 << 16)) * (size >> 16)

with open(path, "wb") as f:
    for off in range(0, size, 1 << 20):
        f.write(data[off:off + (1 << 20)])
with open(path, "rb") as f:
    if f.read() != data:
        sys.exit("sequential read-back differs")

# Random-access updates with seek, both through Python and os.
with open(path, "r+b") as f:
    for _ in range(200):
        off = rng.randrange(0, size - 5000)
        chunk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 5000)))
        f.seek(off)
        f.write(chunk)
        data[off:off + len(chunk)] = chunk
    f.seek(-10, os.SEEK_END)
    if f.read() != data[-10:]:
        sys.exit("seek from the end")
    if f.tell() != size:
        sys.exit("tell after reading to the end")
with open(path, "rb") as f:
    if hashlib.sha256(f.read()).digest() != hashlib.sha256(data).digest():
        sys.exit("random writes not read back")

# Shared mmap: writes through the mapping reach the file.
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    if m[123456:123466] != data[123456:123466]:
        sys.exit("mmap read")
    m[0:5] = b"MMAP!"
    m[size - 5:size] = b"!PAMM"
    data[0:5] = b"MMAP!"
    data[size - 5:size] = b"!PAMM"
    m.flush()
    m.close()
fd = os.open(path, os.O_RDONLY)
try:
    if os.pread(fd, 5, 0) != b"MMAP!" or os.pread(fd, 5, size - 5) != b"!PAMM":
        sys.exit("mmap writes not visible to read()")
finally:
    os.close(fd)

# Append mode and growing past the end through seek.
with open(path, "ab") as f:
    f.write(b"appended")
data += b"appended"
with open(path, "r+b") as f:
    f.seek(size + 100000)
    f.write(b"far")
data += b"\0" * (100000 - 8) + b"far"
with open(path, "rb") as f:
    if f.read() != data:
        sys.exit("append or sparse growth")
print("python io ok: %d bytes" % len(data))
