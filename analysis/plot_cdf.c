/* Latency CDFs: per policy and inference job, the distribution of request
 * latency (arrival to completion, queueing included), the requests of all the
 * group's runs pooled; each job's SLO is drawn as a vertical line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Latencies of the job at position idx of every run of g, sorted. */
static int load_latencies(tl_analysis *a, const tl_group *g, int idx, int64_t **out, size_t *n,
                          tl_err *err)
{
    sqlite3_stmt *st;
    int r = tl_an_prepare(a,
                          "SELECT latency_ns FROM requests WHERE run_id=?1 AND job_id="
                          "(SELECT job_id FROM jobs WHERE run_id=?1 ORDER BY job_id LIMIT 1 "
                          "OFFSET ?2) AND latency_ns IS NOT NULL",
                          &st, err);
    if (r < 0)
        return r;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (size_t k = 0; k < g->n_runs; k++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, g->run_ids[k]);
        sqlite3_bind_int(st, 2, idx);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                *out = tl_xrealloc(*out, cap * sizeof **out);
            }
            (*out)[(*n)++] = sqlite3_column_int64(st, 0);
        }
    }
    sqlite3_finalize(st);
    if (*n)
        qsort(*out, *n, sizeof **out, cmp_i64);
    return 0;
}

typedef struct series {
    const tl_group *g;
    int job;
    size_t n;
} series;

static int plot_one(tl_analysis *a, const tl_groups *all, const char *exp, const tl_plot_opts *o, tl_err *err)
{
    const char *shown = *exp ? exp : "(no experiment)";
    series *sv = NULL;
    size_t ns = 0, cap = 0;
    tl_group **sel = tl_xcalloc(all->n, sizeof *sel);
    size_t nsel = 0;
    int r = 0;
    char *safe = tl_an_safe_name(exp);
    char base[300], name[320];
    snprintf(base, sizeof base, "%s_cdf", safe);
    free(safe);
    snprintf(name, sizeof name, "%s.dat", base);
    FILE *f = NULL;
    const char *job_name = NULL;
    bool one_job = true;
    double lo = INFINITY, hi = 0;

    for (size_t i = 0; i < all->n && r == 0; i++) {
        const tl_group *g = &all->v[i];
        if (strcmp(g->experiment, exp))
            continue;
        bool used = false;
        for (int j = 0; j < g->n_jobs && r == 0; j++) {
            if (strcmp(g->jobs[j].role, "inference"))
                continue;
            int64_t *lat;
            size_t n;
            if ((r = load_latencies(a, g, j, &lat, &n, err)) < 0)
                break;
            if (n == 0) {
                free(lat);
                continue;
            }
            if (!f) {
                if (!(f = tl_an_create(a, o, name, err))) {
                    free(lat);
                    r = err ? err->code : TL_EIO;
                    break;
                }
                fprintf(f, "# tally-plot cdf, experiment %s: request latency CDFs, one block "
                           "(two blank lines apart) per policy and inference job,\n"
                           "# requests of the policy's runs pooled; then one block per SLO.\n",
                        shown);
            }
            char *jn = tl_an_clean_label(g->jobs[j].name);
            fprintf(f, "%s# series %zu: \"%s\" job \"%s\" requests %zu\n# latency_ms cdf\n",
                    ns ? "\n\n" : "", ns, g->label, jn, n);
            free(jn);
            for (size_t k = 0; k < n; k++) {
                tl_an_put_num(f, lat[k] / 1e6);
                fputc(' ', f);
                tl_an_put_num(f, (double)(k + 1) / (double)n);
                fputc('\n', f);
            }
            if (lat[0] > 0 && lat[0] / 1e6 < lo)
                lo = lat[0] / 1e6;
            if (lat[n - 1] / 1e6 > hi)
                hi = lat[n - 1] / 1e6;
            free(lat);
            if (ns == cap) {
                cap = cap ? cap * 2 : 8;
                sv = tl_xrealloc(sv, cap * sizeof *sv);
            }
            sv[ns++] = (series){g, j, n};
            if (!job_name)
                job_name = g->jobs[j].name;
            one_job &= !strcmp(job_name, g->jobs[j].name);
            used = true;
        }
        if (used)
            sel[nsel++] = (tl_group *)g;
    }
    if (r == 0 && ns == 0)
        r = tl_errf(err, TL_EMISSING, "%s: experiment %s: no inference requests to plot", a->path, shown);
    if (r < 0) {
        if (f)
            tl_out_discard(f);
        free(sv);
        free(sel);
        return r;
    }
    /* SLO blocks: one per distinct (job, SLO). */
    size_t n_slo = 0;
    for (size_t i = 0; i < ns; i++) {
        const tl_group_job *jb = &sv[i].g->jobs[sv[i].job];
        if (jb->slo_ns <= 0)
            continue;
        bool dup = false;
        for (size_t k = 0; k < i; k++) {
            const tl_group_job *o2 = &sv[k].g->jobs[sv[k].job];
            dup |= o2->slo_ns == jb->slo_ns && !strcmp(o2->name, jb->name);
        }
        if (dup)
            continue;
        char *jn = tl_an_clean_label(jb->name);
        fprintf(f, "\n\n# SLO job \"%s\" slo_ms %.9g\n# latency_ms cdf\n", jn, jb->slo_ns / 1e6);
        free(jn);
        fprintf(f, "%.9g 0\n%.9g 1\n", jb->slo_ns / 1e6, jb->slo_ns / 1e6);
        if (jb->slo_ns / 1e6 > hi)
            hi = jb->slo_ns / 1e6;
        n_slo++;
    }
    if ((r = tl_an_finish(f, o, name, err)) < 0) {
        free(sv);
        free(sel);
        return r;
    }

    snprintf(name, sizeof name, "%s.gp", base);
    if (!(f = tl_an_create(a, o, name, err))) {
        free(sv);
        free(sel);
        return err ? err->code : TL_EIO;
    }
    char reps[64];
    tl_an_reps_phrase(sel, nsel, reps, sizeof reps);
    char *title = tl_an_gp_string(shown);
    tl_an_gp_preamble(f, base, 1000, 700);
    fprintf(f, "set title \"%s: request latency CDF (%s%s)\"\n", title,
            strncmp(reps, "mean of ", 8) ? "" : "pooled over ",
            strncmp(reps, "mean of ", 8) ? reps : reps + 8);
    fprintf(f, "set xlabel \"request latency, arrival to completion (ms)%s\"\n",
            hi > 100 * lo ? ", log scale" : "");
    fprintf(f, "set ylabel \"fraction of requests with latency <= x\"\n"
               "set yrange [0:1.05]\n"
               "set grid\n"
               "set key bottom right box opaque\n"
               "set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb "
               "\"gray40\"\n"
               "set label \"p99\" at graph 0.01, first 0.975 tc rgb \"gray40\"\n");
    if (hi > 100 * lo)
        fprintf(f, "set logscale x\n");
    fprintf(f, "plot ");
    /* 'alone' baselines in black, policies in palette colours other than red,
     * which marks the SLO. */
    size_t colour = 0;
    for (size_t i = 0; i < ns; i++) {
        char *jn = tl_an_gp_string(sv[i].g->jobs[sv[i].job].name);
        char style[96];
        if (tl_group_is_alone(sv[i].g))
            snprintf(style, sizeof style, "lw 3 dt 4 lc rgb \"black\"");
        else {
            if (colour == 3)
                colour++;
            snprintf(style, sizeof style, "lw 2 lc rgb \"%s\"", tl_an_colour(colour++));
        }
        fprintf(f, "%s\"%s.dat\" index %zu using 1:2 with steps %s title \"%s%s%s (%zu requests)\"",
                i ? ", \\\n     " : "", base, i, style, sv[i].g->label, one_job ? "" : ": ",
                one_job ? "" : jn, sv[i].n);
        free(jn);
    }
    size_t k = 0;
    for (size_t i = 0; i < ns && k < n_slo; i++) {
        const tl_group_job *jb = &sv[i].g->jobs[sv[i].job];
        if (jb->slo_ns <= 0)
            continue;
        bool dup = false;
        for (size_t q = 0; q < i; q++) {
            const tl_group_job *o2 = &sv[q].g->jobs[sv[q].job];
            dup |= o2->slo_ns == jb->slo_ns && !strcmp(o2->name, jb->name);
        }
        if (dup)
            continue;
        char *jn = tl_an_gp_string(jb->name);
        fprintf(f, ", \\\n     \"%s.dat\" index %zu using 1:2 with lines dt 2 lw 2 lc rgb \"red\" "
                   "title \"SLO of %s: %.6g ms\"",
                base, ns + k, jn, jb->slo_ns / 1e6);
        free(jn);
        k++;
    }
    fprintf(f, "\n");
    free(title);
    free(sv);
    free(sel);
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        return r;
    return tl_an_render(a, o, base, err);
}

int tl_plot_cdf(tl_analysis *a, const tl_filter *flt, const tl_plot_opts *o, tl_err *err)
{
    return tl_an_per_experiment(a, flt, o, plot_one, err);
}
