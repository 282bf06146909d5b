#!/usr/bin/env python3
"""Per-block records of session 19's sharing probe (TALLY_BLOCK_TRACE, block_trace.h),
summarised per run and job: are a kernel's blocks beside the other job's slow only on the
SMs they share with it (a tail), or everywhere (a shared resource), and do they start late
(waiting for room on an SM)?
    python3 block_probe.py DIR DB > summary.csv  [--coresidency OUT.csv] [--sample OUT.csv]
DIR: the blocks-run<R>-*.csv files of one `tally-run run` of probe_variants.json into the
fresh database DB (run R is run_id R). Jobs are told apart by their kernel's shape (grid,
threads), matched against the job's trace. Per run and job:
  launches, blocks: traced (launches enqueued in the windows; block_trace.h);
  span_us: a launch's first block start to its last block end, median over launches;
  dur_us p10/p50/p90: block durations; x_alone: p50 over the job's alone run's p50;
  shared_frac: of the block-time, the share its SM also held a block of the other job
    (pairs only, counted where the other job's traced launches cover the moment);
  dur_x_alone_unshared / _shared: p50 of blocks that shared their SM under 10% / over 90%
    of their life, over the alone p50; n_unshared / n_shared: how many such blocks;
  late_us p50/p90: a block's start after its launch's first block start;
  sms: SMs a launch's blocks ran on, median; per_sm: its blocks at once on an SM, median
    of each launch's largest.
--coresidency OUT.csv adds own_avg / other_avg (the time-averaged blocks of the job and
of the other job on a block's SM during its life, weighted by block time) and writes block
durations by those two numbers, rounded (run, job, own, other: blocks, p50, x alone).
--sample writes the blocks of each run's fourth traced window (a few thousand launches'
worth at most) with run, job and the shared fraction, for plots (SAMPLE_JOBS=v1,v2: only
those variants' jobs)."""
import glob, json, os, re, sqlite3, sys
import numpy as np
import pandas as pd

def load(dirname):
    runs = {}
    for f in sorted(glob.glob(os.path.join(dirname, "blocks-run*-pid*-*.csv"))):
        m = re.search(r"blocks-run(\d+)-pid(\d+)-(\d+)\.csv$", f)
        r = int(m.group(1))
        if r == 0: continue                      # before the sweep (probes, calibration)
        d = pd.read_csv(f)
        if not len(d): continue
        d["proc"] = "%s-%s" % (m.group(2), m.group(3))
        runs.setdefault(r, []).append(d)
    return {r: pd.concat(v, ignore_index=True) for r, v in runs.items()}

def job_shapes(db):
    """run_id -> (policy, {job name: (grid, threads)}) from the jobs' traces."""
    c = sqlite3.connect(db)
    out = {}
    for run_id, policy in c.execute("select run_id, policy from runs order by run_id"):
        jobs = {}
        for name, trace in c.execute("select name, trace from jobs where run_id=? order by job_id", (run_id,)):
            jobs[name] = trace
        out[run_id] = (policy, jobs)
    return out

def trace_shape(path):
    ev = json.load(open(path))["events"]
    k = next(e for e in ev if e["type"] == "kernel")
    return (k["grid"][0] * k["grid"][1] * k["grid"][2], k["block"][0] * k["block"][1] * k["block"][2])

def union_len_before(starts, ends):
    """Merged intervals and a function L(t): their total length before t."""
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    ms, me = [], []
    for a, b in zip(s, e):
        if ms and a <= me[-1]:
            if b > me[-1]: me[-1] = b
        else:
            ms.append(a); me.append(b)
    ms, me = np.array(ms, dtype=np.int64), np.array(me, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(me - ms)])
    def L(t):
        i = np.searchsorted(ms, t, side="right") - 1
        res = np.zeros(len(t), dtype=np.int64)
        ok = i >= 0
        ii = i[ok]
        res[ok] = cum[ii] + np.clip(t[ok] - ms[ii], 0, me[ii] - ms[ii])
        return res
    return L

def shared_fraction(x, y):
    """For each block of x: the share of its life its SM held a block of y (union)."""
    frac = np.full(len(x), np.nan)
    xs, xe = x["start_gt"].to_numpy(np.int64), x["end_gt"].to_numpy(np.int64)
    xsm = x["sm"].to_numpy()
    for sm in np.unique(xsm):
        idx = np.nonzero(xsm == sm)[0]
        ysel = y[y["sm"] == sm]
        if not len(ysel):
            frac[idx] = 0.0
            continue
        L = union_len_before(ysel["start_gt"].to_numpy(np.int64), ysel["end_gt"].to_numpy(np.int64))
        life = np.maximum(xe[idx] - xs[idx], 1)
        frac[idx] = (L(xe[idx]) - L(xs[idx])) / life
    return frac

def coresidents(x, y):
    """For each block of x: the time-averaged number of y's blocks on its SM during its
    life (y may be x itself: then the block counts itself)."""
    out = np.zeros(len(x))
    xs, xe, xsm = (x[c].to_numpy(np.int64) for c in ("start_gt", "end_gt", "sm"))
    ysm = y["sm"].to_numpy()
    ys_all, ye_all = y["start_gt"].to_numpy(np.int64), y["end_gt"].to_numpy(np.int64)
    for sm in np.unique(xsm):
        idx = np.nonzero(xsm == sm)[0]
        sel = ysm == sm
        if not sel.any(): continue
        t = np.concatenate([ys_all[sel], ye_all[sel]])
        d = np.concatenate([np.ones(sel.sum()), -np.ones(sel.sum())])
        o = np.lexsort((d, t))
        t, d = t[o], d[o]
        n_after = np.cumsum(d)                     # count just after each event
        integ = np.concatenate([[0.0], np.cumsum(n_after[:-1] * np.diff(t))])  # integral up to each event
        def I(q):
            p = np.searchsorted(t, q, side="right") - 1
            r = np.zeros(len(q))
            ok = p >= 0
            r[ok] = integ[p[ok]] + n_after[p[ok]] * (q[ok] - t[p[ok]])
            return r
        life = np.maximum(xe[idx] - xs[idx], 1)
        out[idx] = (I(xe[idx]) - I(xs[idx])) / life
    return out

def covered(x, y):
    """Blocks of x inside the span of y's traced launches of the same window."""
    ok = np.zeros(len(x), dtype=bool)
    xw = x["window"].to_numpy()
    ys = y.groupby("window").agg(lo=("start_gt", "min"), hi=("end_gt", "max"))
    for w, row in ys.iterrows():
        sel = xw == w
        ok[sel] = (x["start_gt"].to_numpy()[sel] >= row.lo) & (x["end_gt"].to_numpy()[sel] <= row.hi)
    return ok

def main():
    args = sys.argv[1:]
    sample = None
    if "--sample" in args:
        i = args.index("--sample"); sample = args[i + 1]; del args[i:i + 2]
    cores = None
    if "--coresidency" in args:
        i = args.index("--coresidency"); cores = args[i + 1]; del args[i:i + 2]
    dirname, db = args
    crows = []
    runs = load(dirname)
    meta = job_shapes(db)
    period = int(os.environ.get("TALLY_BLOCK_TRACE_PERIOD_MS", "250")) * 1000000
    shapes = {}
    rows, samples, alone_p50 = [], [], {}
    for r in sorted(runs):
        if r not in meta:
            print("block_probe: run %d is not in %s" % (r, db), file=sys.stderr); continue
        policy, jobs = meta[r]
        d = runs[r]
        d["end_gt"] = d["start_gt"] + d["dur_ns"]
        d["window"] = d["enqueue_ns"] // period
        d["lkey"] = d["proc"] + ":" + d["launch"].astype(str)
        byjob = {}
        for name, trace in jobs.items():
            if trace not in shapes: shapes[trace] = trace_shape(trace)
            g, t = shapes[trace]
            byjob[name] = d[(d["grid"] == g) & (d["threads"] == t)].copy()
        names = list(jobs)
        for name in names:
            x = byjob[name]
            if not len(x): continue
            lg = x.groupby("lkey")
            first = lg["start_gt"].transform("min")
            x["late"] = x["start_gt"] - first
            span = (lg["end_gt"].max() - lg["start_gt"].min()) / 1e3
            sms = lg["sm"].nunique()
            # a launch's largest number of its blocks at once on one SM: starts +1 and
            # ends -1 sorted by (launch and SM, time, ends first); every group sums to 0,
            # so one running sum over all of them is each group's count
            gid = x.groupby(["lkey", "sm"]).ngroup().to_numpy()
            n = len(x)
            t = np.concatenate([x["start_gt"].to_numpy(), x["end_gt"].to_numpy()])
            dlt = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
            g2 = np.concatenate([gid, gid])
            o = np.lexsort((dlt, t, g2))
            run_sum = np.cumsum(dlt[o])
            peak_g = pd.Series(run_sum).groupby(g2[o]).max()
            first_l = pd.Series(x["lkey"].to_numpy()).groupby(gid).first()
            per_sm = peak_g.groupby(first_l.reindex(peak_g.index).to_numpy()).max()
            dur = x["dur_ns"] / 1e3
            row = {"run": r, "policy": policy, "job": name, "launches": x["lkey"].nunique(), "blocks": len(x),
                   "span_us": span.median(), "dur_p10_us": dur.quantile(.1), "dur_p50_us": dur.median(),
                   "dur_p90_us": dur.quantile(.9), "late_p50_us": x["late"].median() / 1e3,
                   "late_p90_us": x["late"].quantile(.9) / 1e3, "sms": sms.median(), "per_sm": per_sm.median()}
            if len(names) == 1:
                alone_p50[name] = dur.median()
            a = alone_p50.get(name)
            row["x_alone"] = dur.median() / a if a else np.nan
            frac = np.full(len(x), np.nan)
            if len(names) == 2:
                y = byjob[[n for n in names if n != name][0]]
                ok = covered(x, y) if len(y) else np.zeros(len(x), bool)
                if ok.any():
                    frac[ok] = shared_fraction(x[ok], y)
                f = frac[ok]
                durs = x["dur_ns"].to_numpy()[ok] / 1e3
                row["covered"] = int(ok.sum())
                row["shared_frac"] = float(np.sum(f * durs) / np.sum(durs)) if ok.any() else np.nan
                lo, hi = durs[f < 0.1], durs[f > 0.9]
                row["n_unshared"], row["n_shared"] = len(lo), len(hi)
                row["dur_x_alone_unshared"] = np.median(lo) / a if a and len(lo) else np.nan
                row["dur_x_alone_shared"] = np.median(hi) / a if a and len(hi) else np.nan
            if cores:
                # block durations by the time-averaged blocks on their SM: own (this
                # job's, the block included) and other (the other job's), rounded
                own = coresidents(x, x)
                other = np.zeros(len(x))
                use = np.ones(len(x), bool)
                if len(names) == 2:
                    use = ~np.isnan(frac)
                    y = byjob[[n for n in names if n != name][0]]
                    if use.any(): other[use] = coresidents(x[use], y)
                row["own_avg"] = float(np.average(own[use], weights=x["dur_ns"].to_numpy()[use])) if use.any() else np.nan
                row["other_avg"] = float(np.average(other[use], weights=x["dur_ns"].to_numpy()[use])) if use.any() else np.nan
                c = pd.DataFrame({"own": np.rint(own[use]).astype(int), "other": np.rint(other[use]).astype(int),
                                  "dur": x["dur_ns"].to_numpy()[use] / 1e3})
                for (o1, o2), g in c.groupby(["own", "other"]):
                    if len(g) < 50: continue
                    crows.append({"run": r, "policy": policy, "job": name, "own": o1, "other": o2, "blocks": len(g),
                                  "dur_p50_us": g["dur"].median(), "x_alone": g["dur"].median() / a if a else np.nan})
            rows.append(row)
            if sample and (not os.environ.get("SAMPLE_JOBS") or name.split("-")[0] in os.environ["SAMPLE_JOBS"].split(",")):
                ws = sorted(x["window"].unique())
                if len(ws) >= 4:
                    s = x[x["window"] == ws[3]].copy()
                    s["shared"] = frac[(x["window"] == ws[3]).to_numpy()]
                    s.insert(0, "policy", policy); s.insert(0, "run", r); s.insert(2, "job", name)
                    samples.append(s[["run", "policy", "job", "lkey", "block", "sm", "start_gt", "dur_ns", "late", "shared"]])
    cols = ["run", "policy", "job", "launches", "blocks", "span_us", "dur_p10_us", "dur_p50_us", "dur_p90_us",
            "x_alone", "covered", "shared_frac", "n_unshared", "dur_x_alone_unshared", "n_shared",
            "dur_x_alone_shared", "late_p50_us", "late_p90_us", "sms", "per_sm", "own_avg", "other_avg"]
    pd.DataFrame(rows).reindex(columns=cols).to_csv(sys.stdout, index=False, float_format="%.4g")
    if cores and crows:
        pd.DataFrame(crows).to_csv(cores, index=False, float_format="%.4g")
    if sample and samples:
        pd.concat(samples).to_csv(sample, index=False, float_format="%.4g")

main()
