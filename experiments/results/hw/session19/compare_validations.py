#!/usr/bin/env python3
"""Two sets of validations side by side (validate_all.sh into two folders, the second
with extra simulator parameters): per validation the rows within the goals, before ->
after, and the rankings up to ties of each. Used for pack2_all.txt:
    sh experiments/results/hw/validate_all.sh build A
    sh experiments/results/hw/validate_all.sh build B --sim-param pack_foreign=2
    python3 compare_validations.py A B > pack2_all.txt"""
import csv,glob,os,re,sys
a,b=sys.argv[1],sys.argv[2]
def counts(path):
    rs=list(csv.DictReader(open(path)))
    inf=[r for r in rs if r['role']=='inference' and r['p99_err']!='']
    tr=[r for r in rs if r['role']=='training' and r['throughput_err']!='']
    p=sum(abs(float(r['p99_err']))<=.1 for r in inf)
    s=sum(abs(float(r['service_err']))<=.1 for r in inf if r['service_err'])
    t=sum(abs(float(r['throughput_err']))<=.05 for r in tr)
    return p,len(inf),s,t,len(tr)
def ranks(md):
    if not os.path.exists(md): return ''
    t=open(md).read()
    m=re.search(r'up to the hardware.s ties.*?p99 overhead (\d+) of (\d+) rankings.*?system throughput (\d+) of (\d+)',t)
    m2=re.search(r'also tied.*?p99 overhead (\d+) of (\d+) rankings',t)
    return 'sys %s/%s p99ov(tied) %s/%s'%(m.group(3),m.group(4),m2.group(1),m2.group(2)) if m and m2 else ''
tot=[[0]*5,[0]*5]
for f in sorted(glob.glob(a+'/*.csv')):
    n=os.path.basename(f); g=os.path.join(b,n)
    if not os.path.exists(g): continue
    x=counts(f); y=counts(g)
    for i in range(5): tot[0][i]+=x[i]; tot[1][i]+=y[i]
    print('%-34s p99 %2d->%2d/%2d svc %2d->%2d train %2d->%2d/%2d | %s || %s'%(n[11:-4],x[0],y[0],x[1],x[2],y[2],x[3],y[3],x[4],ranks(f[:-4]+'.md'),ranks(g[:-4]+'.md')))
print('TOTAL p99 %d->%d/%d svc %d->%d train %d->%d/%d'%(tot[0][0],tot[1][0],tot[0][1],tot[0][2],tot[1][2],tot[0][3],tot[1][3],tot[0][4]))
