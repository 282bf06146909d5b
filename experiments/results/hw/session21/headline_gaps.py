#!/usr/bin/env python3
"""Back-to-back gaps (under 20 us) of each job's kernels in the first 100 ms of kernels of
session 14's one-carveout graph headline on the H100 (HW) and of its simulated twin (SIM,
from 2.0 s: the same window), alone, under MPS and under priority streams:
    tally-validate -q -j 2 -k --sim-param launch_latency_ns=12500 \
        --sim-param callback_launch_latency_ns=1100 -d SIM.db \
        experiments/specs/tally_headline.json ../session14/call3/carve100_100ms.db
    python3 headline_gaps.py HW.db SIM.db"""
import sqlite3,sys,statistics
def an(db,lo=None,span=100e6,label=''):
    c=sqlite3.connect(db)
    for rid,p in c.execute("select run_id,policy from runs order by run_id").fetchall():
        names=dict(c.execute("select job_id,name from jobs where run_id=?",(rid,)).fetchall())
        for job,name in sorted(names.items()):
            ks=c.execute("select start_ns,end_ns from kernels where run_id=? and job_id=? order by start_ns",(rid,job)).fetchall()
            if not ks: continue
            a0=ks[0][0] if lo is None else lo
            ks=[k for k in ks if k[0]>=a0 and k[1]<=a0+span]
            g=[(ks[i+1][0]-ks[i][1])/1e3 for i in range(len(ks)-1)]
            g=[x for x in g if 0<=x<20]
            if len(g)<20: continue
            q=statistics.quantiles(g,n=10)
            print("%-5s %-16s %-30s %-15s n %5d gap p10 %.2f med %.2f mean %.2f p90 %.2f"%(label,p,'+'.join(names.values())[:30],name,len(g),q[0],statistics.median(g),statistics.mean(g),q[-1]))
an(sys.argv[1],label='hw')
an(sys.argv[2],lo=2000000000,label='sim')
