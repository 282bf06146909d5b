import gzip, json, statistics, sys
t=json.load(gzip.open(sys.argv[1],"rt"))
ev=t["events"]
api=sorted((e for e in ev if e["type"]=="api"), key=lambda e:e["corr"])
gpu={}
for e in ev:
    if e["type"] in("kernel","memcpy","memset") and "corr" in e:
        gpu[e["corr"]]=min(gpu.get(e["corr"],1<<62), e["start_ns"])
its=sorted(e for e in ev if e["type"]=="iteration") if any(e["type"]=="iteration" for e in ev) else None
# windows: split api calls at device syncs
wins=[];cur=[]
for a in api:
    cur.append(a)
    if a["name"]=="cudaDeviceSynchronize":
        wins.append(cur);cur=[]
def is_anchor(a): return "Synchronize" in a["name"] or "Wait" in a["name"]
def predict(w, s, s_prev_end, w_prev_end, stretch):
    out=[]
    # anchors: previous boundary = previous window's sync end
    A_w,A_s=w_prev_end,s_prev_end
    n=len(w)
    for i in range(n):
        aw,as_=w[i],s[i]
        if is_anchor(aw):
            A_w,A_s=aw["end_ns"],as_["end_ns"]; continue
        if aw["name"]!="cudaLaunchKernel": continue
        off=max(0,as_["start_ns"]-A_s)
        if stretch:
            B=None
            for j in range(i+1,n):
                if is_anchor(w[j]): B=j;break
            if B is not None and s[B]["start_ns"]>A_s:
                off=off*(w[B]["start_ns"]-A_w)/(s[B]["start_ns"]-A_s)
        q=A_w+off
        g=gpu.get(aw["corr"])
        if g is not None and q>g: q=g
        out.append((q-aw["start_ns"], g-aw["start_ns"] if g else 0, g-q if g else 0))
    return out
for stretch in (False,True):
  for dist in (1,10):
    errs=[];leadt=[];leadp=[]
    for k in range(1+dist,len(wins)):
        w,s=wins[k],wins[k-dist]
        if [a["name"] for a in w]!=[a["name"] for a in s]: continue
        r=predict(w,s,wins[k-dist-1][-1]["end_ns"],wins[k-1][-1]["end_ns"],stretch)
        errs+= [abs(x[0]) for x in r]; leadt+=[x[1] for x in r]; leadp+=[x[2] for x in r]
    errs.sort()
    print("stretch=%s from %d back: n %d  |err| median %.1f us p90 %.1f us; mean lead true %.0f us, copied %.0f us"%(stretch,dist,len(errs),errs[len(errs)//2]/1e3,errs[int(.9*len(errs))]/1e3,statistics.mean(leadt)/1e3,statistics.mean(leadp)/1e3))
