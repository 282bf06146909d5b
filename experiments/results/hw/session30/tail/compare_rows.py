import csv,sys
def load(p):
    d={}
    for r in csv.DictReader(open(p)):
        k=(r['job_set'],r['policy'],r['job'])
        d[k]=r
    return d
names=sys.argv[1:]
ds=[load(n) for n in names]
def f(x): return float(x) if x not in ('',None) else None
tot=[[0,0,0] for _ in ds]
for k in ds[0]:
    cells=[]
    for i,d in enumerate(ds):
        r=d.get(k)
        if not r: cells.append('   -   '); continue
        if r['role']=='inference':
            p,s=f(r['p99_err']),f(r['service_err'])
            tot[i][0]+= p is not None and abs(p)<=.1
            tot[i][1]+= s is not None and abs(s)<=.1
            cells.append('p99 %+6.1f svc %+6.1f'%(p*100,(s or 0)*100))
        elif r['role']=='training':
            t=f(r['throughput_err']); tot[i][2]+= abs(t)<=.05
            cells.append('thr %+6.1f           '%(t*100))
        else:
            t=f(r['throughput_err']); cells.append('sys %+6.1f           '%(t*100))
    print('%-28s %-16s %-15s'%(k[0][:28],k[1],k[2][:15]),' | '.join(cells))
for n,t in zip(names,tot): print(n,'p99 %d svc %d train %d'%tuple(t))
