/* The trade-off plot (Tally's evaluation): per policy, the high-priority job's
 * p99 latency overhead against throughput relative to running alone, both for
 * the best-effort jobs and for the system (sum over jobs). One point per policy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

/* Best-effort throughput of a group: mean throughput_rel over its training jobs. */
static double be_throughput_rel(const tl_group *g)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < g->n_jobs; i++) {
        if (strcmp(g->jobs[i].role, "training"))
            continue;
        double v = tl_group_job_mean(&g->jobs[i], TL_M_THROUGHPUT_REL);
        if (isnan(v))
            return NAN;
        s += v;
        n++;
    }
    return n ? s / n : NAN;
}

static int plot_one(tl_analysis *a, const tl_groups *all, const char *exp, const tl_plot_opts *o, tl_err *err)
{
    tl_group **sel = tl_xcalloc(all->n, sizeof *sel);
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++)
        if (!strcmp(all->v[i].experiment, exp) && !tl_group_is_alone(&all->v[i]) &&
            all->v[i].hp >= 0)
            sel[n++] = &all->v[i];
    const char *shown = *exp ? exp : "(no experiment)";
    if (n == 0) {
        free(sel);
        return tl_errf(err, TL_EMISSING,
                       "%s: experiment %s: no shared run with an inference job to plot", a->path, shown);
    }
    bool all_ovh = true, any_be = false, any_sys = false;
    const char *hp_name = sel[0]->jobs[sel[0]->hp].name;
    bool same_hp = true;
    for (size_t i = 0; i < n; i++) {
        const tl_group *g = sel[i];
        all_ovh &= !isnan(tl_group_job_mean(&g->jobs[g->hp], TL_M_P99_OVERHEAD));
        any_be |= !isnan(be_throughput_rel(g));
        any_sys |= !isnan(tl_group_sys_mean(g, TL_SYS_THROUGHPUT));
        same_hp &= !strcmp(hp_name, g->jobs[g->hp].name);
    }
    if (!any_be && !any_sys) {
        free(sel);
        return tl_errf(err, TL_EMISSING,
                       "%s: experiment %s: no throughput_rel or system_throughput metrics "
                       "(runs without 'alone' baselines?)",
                       a->path, shown);
    }
    char *safe = tl_an_safe_name(exp);
    char base[300], name[320];
    snprintf(base, sizeof base, "%s_tradeoff", safe);
    free(safe);

    snprintf(name, sizeof name, "%s.dat", base);
    FILE *f = tl_an_create(a, o, name, err);
    if (!f) {
        free(sel);
        return err ? err->code : TL_EIO;
    }
    fprintf(f, "# tally-plot tradeoff, experiment %s: one row per policy, mean over its runs\n",
            shown);
    fprintf(f, "# hp = high-priority inference job; throughputs are relative to running alone\n");
    fprintf(f, "# label runs hp_job hp_p99_ms hp_p99_overhead_pct be_throughput_rel "
               "system_throughput\n");
    for (size_t i = 0; i < n; i++) {
        const tl_group *g = sel[i];
        const tl_group_job *hp = &g->jobs[g->hp];
        char *hpn = tl_an_clean_label(hp->name);
        fprintf(f, "\"%s\" %zu \"%s\" ", g->label, g->n_runs, hpn);
        free(hpn);
        tl_an_put_num(f, tl_group_job_mean(hp, TL_M_P99) / 1e6);
        fputc(' ', f);
        tl_an_put_num(f, tl_group_job_mean(hp, TL_M_P99_OVERHEAD) * 100.0);
        fputc(' ', f);
        tl_an_put_num(f, be_throughput_rel(g));
        fputc(' ', f);
        tl_an_put_num(f, tl_group_sys_mean(g, TL_SYS_THROUGHPUT));
        fputc('\n', f);
    }
    int r = tl_an_finish(f, o, name, err);
    if (r < 0) {
        free(sel);
        return r;
    }

    snprintf(name, sizeof name, "%s.gp", base);
    if (!(f = tl_an_create(a, o, name, err))) {
        free(sel);
        return err ? err->code : TL_EIO;
    }
    char reps[64];
    tl_an_reps_phrase(sel, n, reps, sizeof reps);
    char *title = tl_an_gp_string(shown);
    char *hpl = tl_an_gp_string(same_hp ? hp_name : "the high-priority job");
    tl_an_gp_preamble(f, base, 1250, 700);
    fprintf(f, "set title \"%s: latency / throughput trade-off (%s)\"\n", title, reps);
    if (all_ovh)
        fprintf(f, "set xlabel \"p99 latency overhead of %s vs running alone (%%)\"\n", hpl);
    else
        fprintf(f, "set xlabel \"p99 latency of %s (ms)\"\n", hpl);
    fprintf(f, "set ylabel \"throughput relative to running alone (1 = alone)\"\n"
               "set grid\n"
               "set key outside right top box\n"
               "set offsets graph 0.08, graph 0.08, graph 0.1, 0\n"
               "set yrange [0:*]\n"
               "# %s.dat columns: 1 label, 2 runs, 3 hp job, 4 hp p99 ms, 5 hp p99 overhead %%,\n"
               "#   6 best-effort throughput rel, 7 system throughput; row i = policy i\n",
            base);
    /* One colour per policy: its system point (circle) and best-effort point
     * (triangle) joined by a dotted line; shapes explained by two key entries.
     * Policies that land on the very same point say so in the key. */
    fprintf(f, "plot %s", any_sys ? "keyentry with points pt 7 ps 2 lc rgb \"black\" "
                                    "title \"circle: system throughput (sum over jobs)\"" : "");
    if (any_be)
        fprintf(f, "%skeyentry with points pt 9 ps 2 lc rgb \"black\" "
                   "title \"triangle: best-effort throughput\"",
                any_sys ? ", \\\n     " : "");
    int xcol = all_ovh ? 5 : 4;
    for (size_t i = 0; i < n; i++) {
        const tl_group *g = sel[i];
        double x = all_ovh ? tl_group_job_mean(&g->jobs[g->hp], TL_M_P99_OVERHEAD)
                           : tl_group_job_mean(&g->jobs[g->hp], TL_M_P99);
        double ys = tl_group_sys_mean(g, TL_SYS_THROUGHPUT), yb = be_throughput_rel(g);
        if (isnan(x) || (isnan(ys) && isnan(yb)))
            continue;
        const char *same = NULL;
        for (size_t k = 0; k < i && !same; k++) {
            const tl_group *h = sel[k];
            double hx = all_ovh ? tl_group_job_mean(&h->jobs[h->hp], TL_M_P99_OVERHEAD)
                                : tl_group_job_mean(&h->jobs[h->hp], TL_M_P99);
            double hs = tl_group_sys_mean(h, TL_SYS_THROUGHPUT), hb = be_throughput_rel(h);
            if (fabs(hx - x) <= 1e-9 * (1 + fabs(x)) &&
                (isnan(ys) ? isnan(hs) : fabs(hs - ys) <= 1e-9 * (1 + ys)) &&
                (isnan(yb) ? isnan(hb) : fabs(hb - yb) <= 1e-9 * (1 + yb)))
                same = h->label;
        }
        const char *c = tl_an_colour(i);
        char key[300];
        if (same)
            snprintf(key, sizeof key, "%s (same point as %s)", g->label, same);
        else
            snprintf(key, sizeof key, "%s", g->label);
        bool titled = false;
        if (!isnan(ys)) {
            fprintf(f, ", \\\n     \"%s.dat\" every ::%zu::%zu using %d:7 with points pt 7 ps 2 "
                       "lc rgb \"%s\" title \"%s\"",
                    base, i, i, xcol, c, key);
            titled = true;
        }
        if (!isnan(yb))
            fprintf(f, ", \\\n     \"%s.dat\" every ::%zu::%zu using %d:6 with points pt 9 ps 2 "
                       "lc rgb \"%s\" %s%s%s",
                    base, i, i, xcol, c, titled ? "notitle" : "title \"", titled ? "" : key,
                    titled ? "" : "\"");
        if (!isnan(ys) && !isnan(yb))
            fprintf(f, ", \\\n     \"%s.dat\" every ::%zu::%zu using %d:6:(0):($7-$6) with "
                       "vectors nohead dt 3 lc rgb \"%s\" notitle",
                    base, i, i, xcol, c);
    }
    fprintf(f, "\n");
    free(title);
    free(hpl);
    free(sel);
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        return r;
    return tl_an_render(a, o, base, err);
}

int tl_plot_tradeoff(tl_analysis *a, const tl_filter *flt, const tl_plot_opts *o, tl_err *err)
{
    return tl_an_per_experiment(a, flt, o, plot_one, err);
}
