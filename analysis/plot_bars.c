/* Bars per policy and job: p50/p99 latency of the inference jobs, throughput of
 * every job relative to running alone (and the system's sum), SM utilization of
 * every job (and of the whole GPU). Three panels, one cluster per policy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

enum { V_P50, V_P99, V_TREL, V_UTIL, V_TPUT, V_N };

typedef struct bars_data {
    tl_group **pol;     /* policies (groups), cluster order */
    size_t np;
    const char **jobs;  /* distinct job names */
    bool *inference;    /* per job */
    size_t nj;
    double *v;          /* [np][nj][V_N] */
    double *sys;        /* [np][2]: system throughput, util % */
} bars_data;

static double *val(bars_data *d, size_t p, size_t j, int k)
{
    return &d->v[(p * d->nj + j) * V_N + k];
}

static bool series_has(bars_data *d, size_t j, int k)
{
    for (size_t p = 0; p < d->np; p++)
        if (!isnan(*val(d, p, j, k)))
            return true;
    return false;
}

static bool sys_has(bars_data *d, int k)
{
    for (size_t p = 0; p < d->np; p++)
        if (!isnan(d->sys[p * 2 + k]))
            return true;
    return false;
}

static void collect(const tl_groups *all, const char *exp, bars_data *d)
{
    memset(d, 0, sizeof *d);
    d->pol = tl_xcalloc(all->n, sizeof *d->pol);
    size_t jcap = 0;
    for (size_t i = 0; i < all->n; i++) {
        tl_group *g = &all->v[i];
        if (strcmp(g->experiment, exp) || tl_group_is_alone(g))
            continue;
        d->pol[d->np++] = g;
        for (int j = 0; j < g->n_jobs; j++) {
            bool seen = false;
            for (size_t k = 0; k < d->nj; k++)
                if (!strcmp(d->jobs[k], g->jobs[j].name))
                    seen = true;
            if (seen)
                continue;
            if (d->nj == jcap) {
                jcap = jcap ? jcap * 2 : 4;
                d->jobs = tl_xrealloc(d->jobs, jcap * sizeof *d->jobs);
                d->inference = tl_xrealloc(d->inference, jcap * sizeof *d->inference);
            }
            d->inference[d->nj] = !strcmp(g->jobs[j].role, "inference");
            d->jobs[d->nj++] = g->jobs[j].name;
        }
    }
    d->v = tl_xcalloc((d->np * d->nj + 1) * V_N, sizeof *d->v);
    d->sys = tl_xcalloc(d->np * 2 + 1, sizeof *d->sys);
    for (size_t p = 0; p < d->np; p++) {
        const tl_group *g = d->pol[p];
        for (size_t j = 0; j < d->nj; j++) {
            const tl_group_job *jb = NULL;
            for (int k = 0; k < g->n_jobs && !jb; k++)
                if (!strcmp(g->jobs[k].name, d->jobs[j]))
                    jb = &g->jobs[k];
            *val(d, p, j, V_P50) = jb ? tl_group_job_mean(jb, TL_M_P50) / 1e6 : NAN;
            *val(d, p, j, V_P99) = jb ? tl_group_job_mean(jb, TL_M_P99) / 1e6 : NAN;
            *val(d, p, j, V_TREL) = jb ? tl_group_job_mean(jb, TL_M_THROUGHPUT_REL) : NAN;
            *val(d, p, j, V_UTIL) = jb ? tl_group_job_mean(jb, TL_M_UTIL) * 100 : NAN;
            *val(d, p, j, V_TPUT) = jb ? tl_group_job_mean(jb, TL_M_THROUGHPUT) : NAN;
        }
        d->sys[p * 2] = tl_group_sys_mean(g, TL_SYS_THROUGHPUT);
        d->sys[p * 2 + 1] = tl_group_sys_mean(g, TL_SYS_UTIL) * 100;
    }
}

static void bars_free(bars_data *d)
{
    free(d->pol);
    free(d->jobs);
    free(d->inference);
    free(d->v);
    free(d->sys);
}

/* A panel's bars: which data block and column, and the legend title. */
typedef struct bar {
    size_t block;
    int col;
    char title[200];
    const char *colour;
    bool hatch;
} bar;

static const char *palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf", "#bcbd22"};

static void panel(FILE *f, const char *base, const bar *b, size_t nb, size_t np)
{
    double w = 0.8 / (double)nb;
    fprintf(f, "plot ");
    for (size_t k = 0; k < nb; k++)
        fprintf(f,
                "%s\"%s.dat\" index %zu using ($1%+.4f):%d:(%.4f) with boxes fs %s border lc rgb "
                "\"%s\" lc rgb \"%s\" title \"%s\"",
                k ? ", \\\n     " : "", base, b[k].block, -0.4 + w * ((double)k + 0.5), b[k].col, w,
                b[k].hatch ? "pattern 4" : "solid 0.85", b[k].hatch ? b[k].colour : "black",
                b[k].colour, b[k].title);
    fprintf(f, "\n");
    (void)np;
}

static int plot_one(tl_analysis *a, const tl_groups *all, const char *exp, const tl_plot_opts *o,
                    tl_err *err)
{
    const char *shown = *exp ? exp : "(no experiment)";
    bars_data d;
    collect(all, exp, &d);
    if (d.np == 0) {
        bars_free(&d);
        return tl_errf(err, TL_EMISSING, "%s: experiment %s: no shared runs (only 'alone' baselines)",
                       a->path, shown);
    }
    char *safe = tl_an_safe_name(exp);
    char base[300], name[320];
    snprintf(base, sizeof base, "%s_bars", safe);
    free(safe);
    snprintf(name, sizeof name, "%s.dat", base);
    FILE *f = tl_an_create(a, o, name, err);
    if (!f) {
        bars_free(&d);
        return err ? err->code : TL_EIO;
    }
    fprintf(f, "# tally-plot bars, experiment %s: one block (two blank lines apart) per job,\n"
               "# one row per policy (x = cluster position), mean over the policy's runs;\n"
               "# the last block is the whole system.\n",
            shown);
    for (size_t j = 0; j < d.nj; j++) {
        char *jn = tl_an_clean_label(d.jobs[j]);
        fprintf(f, "%s# job \"%s\" (%s)\n# x label p50_ms p99_ms throughput_rel util_pct "
                   "throughput_per_s\n",
                j ? "\n\n" : "", jn, d.inference[j] ? "inference" : "training");
        free(jn);
        for (size_t p = 0; p < d.np; p++) {
            fprintf(f, "%zu \"%s\"", p, d.pol[p]->label);
            for (int k = 0; k < V_N; k++) {
                fputc(' ', f);
                tl_an_put_num(f, *val(&d, p, j, k));
            }
            fputc('\n', f);
        }
    }
    fprintf(f, "\n\n# system\n# x label system_throughput util_pct\n");
    for (size_t p = 0; p < d.np; p++) {
        fprintf(f, "%zu \"%s\" ", p, d.pol[p]->label);
        tl_an_put_num(f, d.sys[p * 2]);
        fputc(' ', f);
        tl_an_put_num(f, d.sys[p * 2 + 1]);
        fputc('\n', f);
    }
    int r = tl_an_finish(f, o, name, err);
    if (r < 0) {
        bars_free(&d);
        return r;
    }

    /* The panels and their bars; a series without any value is left out. */
    bar lat[32], tput[32], util[32];
    size_t nl = 0, nt = 0, nu = 0;
    for (size_t j = 0; j < d.nj; j++) {
        char *jn = tl_an_gp_string(d.jobs[j]);
        const char *c = palette[j % (sizeof palette / sizeof *palette)];
        if (d.inference[j] && nl + 2 <= 32) {
            if (series_has(&d, j, V_P50)) {
                lat[nl] = (bar){j, 3, "", c, true};
                snprintf(lat[nl++].title, 200, "%s p50", jn);
            }
            if (series_has(&d, j, V_P99)) {
                lat[nl] = (bar){j, 4, "", c, false};
                snprintf(lat[nl++].title, 200, "%s p99", jn);
            }
        }
        if (series_has(&d, j, V_TREL) && nt < 31) {
            tput[nt] = (bar){j, 5, "", c, false};
            snprintf(tput[nt++].title, 200, "%s", jn);
        }
        if (series_has(&d, j, V_UTIL) && nu < 31) {
            util[nu] = (bar){j, 6, "", c, false};
            snprintf(util[nu++].title, 200, "%s", jn);
        }
        free(jn);
    }
    if (sys_has(&d, 0)) {
        tput[nt] = (bar){d.nj, 3, "", "gray50", false};
        snprintf(tput[nt++].title, 200, "system (sum over jobs)");
    }
    if (sys_has(&d, 1)) {
        util[nu] = (bar){d.nj, 4, "", "gray50", false};
        snprintf(util[nu++].title, 200, "whole GPU");
    }
    int panels = (nl > 0) + (nt > 0) + (nu > 0);
    if (panels == 0) {
        bars_free(&d);
        return tl_errf(err, TL_EMISSING, "%s: experiment %s: no latency, throughput or utilization "
                                         "metrics to plot",
                       a->path, shown);
    }

    snprintf(name, sizeof name, "%s.gp", base);
    if (!(f = tl_an_create(a, o, name, err))) {
        bars_free(&d);
        return err ? err->code : TL_EIO;
    }
    char reps[64];
    tl_an_reps_phrase(d.pol, d.np, reps, sizeof reps);
    char *title = tl_an_gp_string(shown);
    tl_an_gp_preamble(f, base, 1100, 380 * panels + 60);
    fprintf(f, "# data: %s.dat, block j = job j (columns: 1 x, 2 policy, 3 p50 ms, 4 p99 ms,\n"
               "# 5 throughput rel, 6 util %%, 7 throughput/s); last block: system (3 throughput,\n"
               "# 4 util %%)\n",
            base);
    fprintf(f, "set multiplot layout %d,1 title \"%s: latency, throughput and utilization per "
               "policy (%s)\"\n",
            panels, title, reps);
    fprintf(f, "set style data boxes\nset grid ytics\nset key outside right top\n"
               "set xrange [-0.6:%.1f]\nset yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n"
               "set xtics (",
            (double)d.np - 0.4);
    for (size_t p = 0; p < d.np; p++)
        fprintf(f, "%s\"%s\" %zu", p ? ", " : "", d.pol[p]->label, p);
    fprintf(f, ") nomirror\nset lmargin 12\nset rmargin 30\n\n");
    if (nl) {
        fprintf(f, "set title \"inference latency (hatched: p50, solid: p99)\"\n"
                   "set ylabel \"latency (ms)\"\n");
        panel(f, base, lat, nl, d.np);
    }
    if (nt) {
        fprintf(f, "\nset title \"throughput relative to running alone\"\n"
                   "set ylabel \"throughput / alone\"\n"
                   "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "
                   "\"black\"\n");
        panel(f, base, tput, nt, d.np);
        fprintf(f, "unset arrow 1\n");
    }
    if (nu) {
        fprintf(f, "\nset title \"GPU utilization (SM-time occupied)\"\n"
                   "set ylabel \"utilization (%%)\"\n");
        panel(f, base, util, nu, d.np);
    }
    fprintf(f, "unset multiplot\n");
    free(title);
    bars_free(&d);
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        return r;
    return tl_an_render(a, o, base, err);
}

int tl_plot_bars(tl_analysis *a, const tl_filter *flt, const tl_plot_opts *o, tl_err *err)
{
    return tl_an_per_experiment(a, flt, o, plot_one, err);
}
