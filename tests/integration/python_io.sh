#!/bin/bash
# SPDX-License-Identifier: MIT
# A Python program (standard library only) writes, reads, seeks and mmaps.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount" start_objfs
ok "python write/read/seek/mmap" python3 "$(dirname "$0")/pyio.py" "$MNT"
ok "unmount" stop_objfs
ok "remount" start_objfs
ok "the file python wrote survives a remount" bash -c "[ \$(stat -c %s '$MNT/py.bin') = $(((24 << 20) + 100003)) ] && head -c 5 '$MNT/py.bin' | grep -q 'MMAP!'"
ok "unmount" stop_objfs
t_done
