#!/usr/bin/env python3
"""graph_gaps.py DB...: in the alone runs of H100 results databases made with
per-kernel records (-k), the gap between consecutive kernels of a graph job (one's
end to the next one's start, gaps under 20 us), by the kinds of the two kernels
(M memory, C compute: the project's name rule, traces/work_kind.c) and the
previous kernel's block count (powers of two): how many, the share over 2 us, the
median and the mean."""
import sqlite3,statistics as st,collections,re,sys,math
mf=["splitkreduce","reducesplitk","split_k_reduce","gemv","epilogue::impl::globalkernel","init_device_workspace"]
cw=["gemm","conv","mma","fmha","attention","attn","flash","xmma","cutlass","cublas","dgrad","wgrad","fprop","implicit","winograd","matmul"]
def kind(n):
    n=(n or '').lower()
    if any(w in n for w in mf): return 'M'
    if any(w in n for w in cw): return 'C'
    return 'M'
rows=[]
for path in sys.argv[1:]:
  db=sqlite3.connect(path)
  runs=db.execute("select r.run_id,j.job_id,j.name from runs r join jobs j using(run_id) where r.policy='alone'").fetchall()
  for run,job,name in runs:
    ks=db.execute("select seq,start_ns,end_ns,blocks,name from kernels where run_id=? and job_id=? order by seq",(run,job)).fetchall()
    for a,b in zip(ks,ks[1:]):
        g=b[1]-a[2]
        if 0<=g<20000: rows.append((name,g,kind(a[4]),a[3],a[2]-a[1],kind(b[4]),b[3]))
d=collections.defaultdict(list)
for r in rows:
    d[(r[2],r[5],2**int(math.log2(max(r[3],1))))].append(r[1])
for k in sorted(d):
    v=d[k]
    if len(v)>=20: print('%s->%s prevblocks %6d n=%5d long(>2us) %.2f median %5.0f mean %5.0f'%(k[0],k[1],k[2],len(v),sum(x>2000 for x in v)/len(v),st.median(v),st.mean(v)))
