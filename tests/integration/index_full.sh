#!/bin/bash
# SPDX-License-Identifier: MIT
# The index (LMDB) on a filesystem that fills up: namespace changes fail
# with ENOSPC, the daemon stays up, what was created stays, and an unmount
# that cannot write a file's bytes out says so and exits non-zero.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init

# creates DIR N: create up to N empty files; prints how many, then the
# first error's name (or OK).
creates() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
d, want = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
for i in range(want):
    try:
        os.close(os.open(os.path.join(d, "n%06d" % i), os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError as e:
        print(i, errno.errorcode.get(e.errno, e.errno))
        sys.exit(0)
print(want, "OK")
PY
}

mkdir -p "$DATA"
mount -t tmpfs -o size=2m,mode=0700 objfs-test-index "$DATA" && T_MOUNTS+=("$DATA")
ok "mount with the data directory on a 2 MiB filesystem" start_objfs "$MNT" "$DATA" arena=64M
echo kept >"$MNT/kept"
out=$(creates "$MNT/names" 1000000)
ok "creates on the full disk end with ENOSPC ($out)" bash -c "[[ '$out' == *ENOSPC ]]"
ok "the daemon is alive" kill -0 "$OBJFS_PID"
ok "the names created are all there" test "$(ls "$MNT/names" | wc -l)" = "${out%% *}"
ok "a file written before reads back" test "$(cat "$MNT/kept")" = kept
ok "mkdir on the full disk fails with ENOSPC" bash -c "! mkdir '$MNT/d' 2>'$T/mkdir.err' && grep -q 'No space left' '$T/mkdir.err'"
fails "unmount with bytes that no longer fit on disk exits non-zero" stop_objfs
ok "and the log says what was not written" grep -q "what was not written is lost" "$T/objfs.mnt.log"
ok "remount" start_objfs "$MNT" "$DATA" arena=64M
ok "after remount the names are there" test "$(ls "$MNT/names" | wc -l)" = "${out%% *}"
ok "unmount" stop_objfs
t_done
