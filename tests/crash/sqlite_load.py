# SPDX-License-Identifier: MIT
"""sqlite_load.py DIR LOG MODE N - N SQLite transactions, for checking the
crash simulator itself.  MODE is journal_mode,synchronous (wal,full,
delete,extra, wal,off ...).  Each COMMIT that returned is logged with its
start and end (CLOCK_MONOTONIC ns) and the row id it inserted."""
import json
import os
import sqlite3
import sys
import time

d, logpath, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
journal, sync = mode.split(",")
db = sqlite3.connect(os.path.join(d, "db.sqlite"), isolation_level=None)
db.execute("PRAGMA journal_mode=%s" % journal)
db.execute("PRAGMA synchronous=%s" % sync)
db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)")
log = open(logpath, "w")
for i in range(1, n + 1):
    t0 = time.monotonic_ns()
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES (?, randomblob(?))", (i, 200 + i * 37 % 3000))
    # Touch older pages too, so that commits rewrite the file in place.
    db.execute("UPDATE t SET v = randomblob(100) WHERE id = ?", (i // 2 + 1,))
    db.execute("COMMIT")
    log.write(json.dumps({"id": i, "t0": t0, "t1": time.monotonic_ns()}) + "\n")
log.close()
db.close()
