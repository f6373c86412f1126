#!/bin/bash
# SPDX-License-Identifier: MIT
# Every operation through a real mount, with its error cases.
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
ok "mount" start_objfs
python3 "$(dirname "$0")/posix_ops.py" "$MNT" "$T/py.result" "$DATA"
read -r n f <"$T/py.result" || { n=0; f=1; echo "not ok - posix_ops.py did not finish"; }
T_NUM=$((T_NUM + n + (n == 0)))
T_FAILED=$((T_FAILED + f))
ok "unmount writes everything out" stop_objfs
t_done
