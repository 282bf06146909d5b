#!/usr/bin/env python3
"""row_medians.py A B: two folders of validate_all.sh output side by side, per policy,
job set and row kind (training throughput; inference service time and p99): the
median error over every validation and how many rows are within the goal
(5% training, 10% inference), before -> after."""
import csv,glob,os,sys,collections
a,b=sys.argv[1],sys.argv[2]
agg=collections.defaultdict(lambda:[[],[]])
for f in sorted(glob.glob(a+'/*.csv')):
    g=os.path.join(b,os.path.basename(f))
    if not os.path.exists(g): continue
    for k,path in enumerate((f,g)):
        for r in csv.DictReader(open(path)):
            key=(r['policy'],r['job_set'],r['role'])
            if r['role']=='training' and r['throughput_err']!='':
                agg[key][k].append(float(r['throughput_err']))
            elif r['role']=='inference' and r['service_err']!='':
                agg[key+('svc',)][k].append(float(r['service_err']))
                agg[key+('p99',)][k].append(float(r['p99_err']))
import statistics as st
for key in sorted(agg):
    x,y=agg[key]
    if not x or len(x)!=len(y): continue
    lim=.05 if key[2]=='training' else .1
    print('%-16s %-14s %-9s %-4s n=%2d median %+6.1f%% -> %+6.1f%%  within %2d -> %2d'%(key[0],key[1],key[2],key[3] if len(key)>3 else '',len(x),100*st.median(x),100*st.median(y),sum(abs(v)<=lim for v in x),sum(abs(v)<=lim for v in y)))
