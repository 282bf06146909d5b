#!/usr/bin/env python3
"""tail_gaps.py DB:RUN:TRACE.json ...: the gaps between consecutive kernels of a graph
job's alone run with per-kernel records (-k), each kernel matched to its op in the
trace (converted to our format first: tally-sim convert IN.json.gz OUT.json), pairs
with a memset node between them left out (a memset node's time is in the trace). By the
previous kernel's threads per block and its blocks per SM in its last wave (at most
max(32 blocks, 2048 threads, registers) resident per SM on the H100): how many, median,
mean and the share over 2 us; then the batch-norm kernels of 64 threads one by one,
and every job's other gaps (median and mean, after compute and after memory kernels)."""
import sqlite3, json, collections, statistics as st, math, sys
def shapes(trace):
    d=json.load(open(trace)); S=d['strings']; ops=d['iterations'][1]['ops']
    out=[]; prev_memset=False
    for o in ops:
        if o['kind']=='kernel':
            g=o['grid'];b=o['block']
            out.append(dict(name=S[o['name']],B=g[0]*g[1]*g[2],T=b[0]*b[1]*b[2],R=o.get('regs',0),
                            SM=o.get('static_smem',0)+o.get('dynamic_smem',0),after_memset=prev_memset,dur=o['dur_ns']))
            prev_memset=False
        elif o['kind']=='memset': prev_memset=True
    return out
def resident(k):
    T=k['T']; w=math.ceil(T/32)
    r=min(32, 64//w, 65536//max(1,(max(k['R'],16)*32*w)) if k['R'] else 32)
    if k['SM']: r=min(r, (228*1024)//(k['SM']+1024))
    return max(1,r)
def tail(k):
    res=resident(k); per=132*res
    waves=math.ceil(k['B']/per); last=k['B']-(waves-1)*per
    return last/132, waves, res
rows=[]
for db,run,trace in [(a.split(':')[0],int(a.split(':')[1]),a.split(':')[2]) for a in sys.argv[1:]]:
    sh=shapes(trace); n=len(sh)
    c=sqlite3.connect(db)
    ks=c.execute("select seq,start_ns,end_ns,name from kernels where run_id=? order by seq",(run,)).fetchall()
    off=None
    for i in range(n):
        if all(ks[j][3]==sh[(j+i)%n]['name'] for j in range(min(n,len(ks)))): off=i;break
    assert off is not None, 'no alignment'
    for a,b in zip(ks,ks[1:]):
        if b[0]!=a[0]+1: continue
        pa=sh[(a[0]-ks[0][0]+off)%n]; pb=sh[(b[0]-ks[0][0]+off)%n]
        g=b[1]-a[2]
        if pb['after_memset'] or not (0<=g<20000): continue
        rows.append((db.split('/')[-1],pa,pb,g))
d=collections.defaultdict(list)
for src,pa,pb,g in rows:
    lw,waves,res=tail(pa)
    d[(pa['T'],round(lw))].append(g)
for k in sorted(d):
    v=d[k]
    if len(v)>=30: print('prevT %4d lastwave/SM %3d n=%6d median %5d mean %5.0f long %.2f'%(k[0],k[1],len(v),st.median(v),st.mean(v),sum(x>2000 for x in v)/len(v)))
print('--- kernels of 64 threads or fewer a block, by shape (name, blocks, threads, registers, traced ns): gaps after them, median; blocks per SM in the last wave, waves, resident per SM')
e=collections.defaultdict(list)
for src,pa,pb,g in rows:
    if pa['T']<=64: e[(pa['name'][:30],pa['B'],pa['T'],pa['R'],pa['dur'])].append(g)
for k in sorted(e, key=lambda k:(k[2],k[1])):
    v=e[k]
    if len(v)>=30: print(k, len(v), st.median(v), tail(dict(B=k[1],T=k[2],R=k[3],SM=0)))
print('--- other gaps')
kindC = lambda n: any(w in n.lower() for w in ["gemm", "conv", "mma", "fmha", "attention", "xmma", "cutlass",
                                               "cublas", "dgrad", "wgrad", "fprop", "implicit", "winograd", "matmul"])
full = lambda pa: pa['T'] <= 64 and tail(pa)[0] >= 28
for lab, sel in (('all', lambda n: True), ('after compute', kindC), ('after memory', lambda n: not kindC(n))):
    v = [g for src, pa, pb, g in rows if not full(pa) and sel(pa['name'])]
    if v:
        print('%-14s n=%6d median %5d mean %5.0f' % (lab, len(v), st.median(v), st.mean(v)))
