#!/usr/bin/env python3
"""graph_gaps_by_job.py DB...: per job of the alone runs (per-kernel records), the gaps
between consecutive kernels under 20 us: median, p10, p90, mean; and the meta
hw_graph_gap_ns / hw_stream_gap_ns the run recorded (the probe the twin uses)."""
import sqlite3,sys,statistics as st,collections
for path in sys.argv[1:]:
    db=sqlite3.connect(path)
    runs=db.execute("select r.run_id,j.job_id,j.name from runs r join jobs j using(run_id) where r.policy='alone'").fetchall()
    meta=dict(db.execute("select key,value from meta").fetchall()) if db.execute("select count(*) from sqlite_master where name='meta'").fetchone()[0] else {}
    print(path, 'graph_gap', meta.get('hw_graph_gap_ns'), 'stream_gap', meta.get('hw_stream_gap_ns'))
    for run,job,name in runs:
        ks=db.execute("select seq,start_ns,end_ns,blocks from kernels where run_id=? and job_id=? order by seq",(run,job)).fetchall()
        if not ks: continue
        g=[b[1]-a[2] for a,b in zip(ks,ks[1:]) if 0<=b[1]-a[2]<20000]
        if not g: continue
        print('  %-15s kernels %6d gaps<20us %6d median %.0f ns p10 %.0f p90 %.0f mean %.0f'%(name,len(ks),len(g),st.median(g),sorted(g)[len(g)//10],sorted(g)[9*len(g)//10],st.mean(g)))
