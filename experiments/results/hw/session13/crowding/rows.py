"""Per pair, policy and role, the error of one or more validation CSVs side by side:
training throughput; inference service time and p99 (q= queue grows: sim, hw).
    python3 rows.py VALIDATION.csv..."""
import csv,sys
rows={}
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        if r['policy'] in ('alone',) or r['job']=='system': continue
        k=(r['job_set'],r['policy'],r['role'])
        rows.setdefault(k,[]).append(r)
print("%-28s %-16s %-9s %s"%("pair","policy","role","per file: svc_err thr_err / p99_err"))
for k,v in sorted(rows.items()):
    out=[]
    for r in v:
        if r['role']=='training': out.append("thr %+6.1f%%"%(100*float(r['throughput_err'])))
        else: out.append("svc %+6.1f%% p99 %+7.1f%% q=%s%s"%(100*float(r['service_err'] or 0),100*float(r['p99_err']),r['queue_grows_sim'],r['queue_grows_hw']))
    print("%-28s %-16s %-9s %s"%(k[0],k[1],k[2]," | ".join(out)))
