#!/usr/bin/env python3
"""slim_db.py IN.db OUT.db [WINDOW_MS]: a copy of a results database whose
kernels table keeps, per run, only the first WINDOW_MS (default 200) of the
measured period, so that a -k hardware database comes back from the device
(files over 16 MiB do not) and can be looked at kernel by kernel."""
import sqlite3
import sys

src, dst = sys.argv[1], sys.argv[2]
win_ns = int(float(sys.argv[3] if len(sys.argv) > 3 else 200) * 1e6)
db = sqlite3.connect(dst)
db.execute("attach database ? as s", (src,))
for (name, sql) in db.execute("select name, sql from s.sqlite_master where type='table'").fetchall():
    db.execute(sql)
    if name == "kernels":
        db.execute("insert into kernels select k.* from s.kernels k join s.runs r using(run_id) "
                   "where k.start_ns >= r.warmup_ns and k.start_ns < r.warmup_ns + ?", (win_ns,))
    else:
        db.execute("insert into %s select * from s.%s" % (name, name))
db.commit()
db.execute("detach database s")
db.execute("vacuum")
