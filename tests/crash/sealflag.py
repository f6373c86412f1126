# SPDX-License-Identifier: MIT
"""sealflag.py - the seal (the immutable flag, chattr +i) read and set
through FS_IOC_GETFLAGS / FS_IOC_SETFLAGS, for the crash simulator's
workload and checker, the kill loop's load and the fuzzer."""
import fcntl
import os
import struct

FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_IMMUTABLE_FL = 0x10


def sealed(path):
    """Whether @path carries the immutable flag."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        v = fcntl.ioctl(fd, FS_IOC_GETFLAGS, struct.pack("i", 0))
        return bool(struct.unpack("i", v)[0] & FS_IMMUTABLE_FL)
    finally:
        os.close(fd)


def set_sealed(path, on):
    """chattr +i (@on) or -i."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, FS_IOC_SETFLAGS,
                    struct.pack("i", FS_IMMUTABLE_FL if on else 0))
    finally:
        os.close(fd)
