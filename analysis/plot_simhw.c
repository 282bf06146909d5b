/* Simulated versus hardware: for every policy that has both kinds of runs (same
 * experiment, load and jobs), the p99 latency of the inference jobs and the
 * throughput of every job, side by side, labelled with the simulator's error
 * (sim - hw) / hw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

typedef struct pair {
    const tl_group *sim, *hw;
} pair;

static bool same_setup(const tl_group *a, const tl_group *b)
{
    return !strcmp(a->experiment, b->experiment) && !strcmp(a->policy, b->policy) &&
           !strcmp(a->params, b->params) &&
           a->has_load == b->has_load && (!a->has_load || a->load == b->load) &&
           !strcmp(a->jobsig, b->jobsig);
}

static double err_pct(double sim, double hw)
{
    return hw != 0 ? (sim - hw) / hw * 100.0 : NAN;
}

static void put_row(FILE *f, size_t x, const char *tick, double sim, double hw)
{
    fprintf(f, "%zu \"%s\" ", x, tick);
    tl_an_put_num(f, sim);
    fputc(' ', f);
    tl_an_put_num(f, hw);
    fputc(' ', f);
    tl_an_put_num(f, err_pct(sim, hw));
    fputc('\n', f);
}

static int plot_one(tl_analysis *a, const tl_groups *all, const char *exp, const tl_plot_opts *o,
                    tl_err *err)
{
    const char *shown = *exp ? exp : "(no experiment)";
    pair *pv = tl_xcalloc(all->n, sizeof *pv);
    size_t np = 0;
    for (size_t i = 0; i < all->n; i++) {
        const tl_group *s = &all->v[i];
        if (strcmp(s->experiment, exp) || strcmp(s->kind, "sim"))
            continue;
        for (size_t k = 0; k < all->n; k++)
            if (!strcmp(all->v[k].kind, "hw") && same_setup(s, &all->v[k]))
                pv[np++] = (pair){s, &all->v[k]};
    }
    if (np == 0) {
        free(pv);
        return tl_errf(err, TL_EMISSING,
                       "%s: experiment %s: no policy has both simulated (sim) and hardware (hw) runs",
                       a->path, shown);
    }
    /* Tick labels: policy, then what tells pairs apart among the shared runs
     * (load, job list), then the job when runs have several; 'alone' runs are
     * "alone: JOB". */
    bool loads = false, sigs = false, multi_job = false;
    const tl_group *ref = NULL;
    for (size_t i = 0; i < np; i++) {
        const tl_group *g = pv[i].sim;
        multi_job |= g->n_jobs > 1;
        if (tl_group_is_alone(g))
            continue;
        if (!ref)
            ref = g;
        loads |= g->has_load != ref->has_load || g->load != ref->load;
        sigs |= strcmp(g->jobsig, ref->jobsig) != 0;
    }
    char *safe = tl_an_safe_name(exp);
    char base[300], name[320];
    snprintf(base, sizeof base, "%s_simhw", safe);
    free(safe);
    snprintf(name, sizeof name, "%s.dat", base);
    FILE *f = tl_an_create(a, o, name, err);
    if (!f) {
        free(pv);
        return err ? err->code : TL_EIO;
    }
    fprintf(f, "# tally-plot simhw, experiment %s: simulated vs hardware, mean over runs;\n"
               "# err_pct = (sim - hw) / hw * 100. Block 0: throughput (requests or\n"
               "# iterations per s) of every job; block 1: p99 latency (ms) of inference jobs.\n",
            shown);
    size_t n_lat = 0, n_tput = 0, longest = 0;
    double vmin[2] = {INFINITY, INFINITY}, vmax[2] = {0, 0}; /* per block: positive values */
    for (int blk = 0; blk < 2; blk++) {
        fprintf(f, "%s# x label %s\n", blk ? "\n\n" : "",
                blk ? "p99_sim_ms p99_hw_ms p99_err_pct" : "tput_sim tput_hw tput_err_pct");
        size_t x = 0;
        for (size_t i = 0; i < np; i++) {
            const tl_group *s = pv[i].sim, *h = pv[i].hw;
            for (int j = 0; j < s->n_jobs && j < h->n_jobs; j++) {
                bool inf = !strcmp(s->jobs[j].role, "inference");
                if (blk == 1 && !inf)
                    continue;
                tl_sbuf t = {0};
                tl_sbuf_printf(&t, "%s", s->policy);
                if (loads && s->has_load)
                    tl_sbuf_printf(&t, " load=%g", s->load);
                if (sigs && !tl_group_is_alone(s))
                    tl_sbuf_printf(&t, " [%s]", s->jobsig);
                if (multi_job || tl_group_is_alone(s))
                    tl_sbuf_printf(&t, ": %s", s->jobs[j].name);
                char *tick = tl_an_clean_label(t.s);
                tl_sbuf_free(&t);
                if (strlen(tick) > longest)
                    longest = strlen(tick);
                double vs, vh;
                if (blk == 1) {
                    vs = tl_group_job_mean(&s->jobs[j], TL_M_P99) / 1e6;
                    vh = tl_group_job_mean(&h->jobs[j], TL_M_P99) / 1e6;
                } else {
                    vs = tl_group_job_mean(&s->jobs[j], TL_M_THROUGHPUT);
                    vh = tl_group_job_mean(&h->jobs[j], TL_M_THROUGHPUT);
                }
                put_row(f, x++, tick, vs, vh);
                for (int k = 0; k < 2; k++) {
                    double v = k ? vh : vs;
                    if (v > 0 && isfinite(v)) {
                        vmin[blk] = v < vmin[blk] ? v : vmin[blk];
                        vmax[blk] = v > vmax[blk] ? v : vmax[blk];
                    }
                }
                free(tick);
            }
        }
        if (blk == 1)
            n_lat = x;
        else
            n_tput = x;
    }
    int r = tl_an_finish(f, o, name, err);
    if (r < 0) {
        free(pv);
        return r;
    }

    snprintf(name, sizeof name, "%s.gp", base);
    if (!(f = tl_an_create(a, o, name, err))) {
        free(pv);
        return err ? err->code : TL_EIO;
    }
    tl_group **sel = tl_xcalloc(np * 2, sizeof *sel);
    for (size_t i = 0; i < np; i++) {
        sel[2 * i] = (tl_group *)pv[i].sim;
        sel[2 * i + 1] = (tl_group *)pv[i].hw;
    }
    char reps[64];
    tl_an_reps_phrase(sel, np * 2, reps, sizeof reps);
    free(sel);
    char *title = tl_an_gp_string(shown);
    int panels = (n_lat > 0) + (n_tput > 0);
    /* Room for every bar (a page wider with more of them) and for the tick
     * labels, set at 45 degrees below each panel (bmargin in lines). */
    size_t bars = n_lat > n_tput ? n_lat : n_tput;
    int width = (int)(bars * 34 + 260), bmargin = (int)(longest * 0.42) + 3;
    width = width < 1100 ? 1100 : width > 4000 ? 4000 : width;
    bmargin = bmargin > 40 ? 40 : bmargin;
    tl_an_gp_preamble(f, base, width, (380 + bmargin * 13) * panels + 60);
    fprintf(f, "# data: %s.dat; columns: 1 x, 2 label, 3 sim, 4 hw, 5 error %% of sim vs hw\n",
            base);
    fprintf(f,
            "set multiplot layout %d,1 title \"%s: simulated vs hardware (%s; labels: sim error "
            "vs hw)\"\n"
            "set style fill solid 0.85 border lc rgb \"black\"\n"
            "set grid ytics\nset key outside right top\n"
            "set xtics rotate by 45 right nomirror\nset lmargin 12\nset rmargin 18\n"
            "set bmargin %d\n",
            panels, title, reps, bmargin);
    free(title);
    /* p99s of queues that grow and of ones that do not, and the throughputs
     * of inference and training, differ by orders of magnitude: on a linear
     * axis the small bars vanish */
    static const char *what[2][2] = {{"throughput of every job", "throughput (requests or iterations / s)"},
                                     {"p99 latency of the inference jobs", "p99 latency (ms)"}};
    /* p99 first on the page; block 1 is last in the file, so an empty one is harmless */
    for (int blk = 1; blk >= 0; blk--) {
        size_t n = blk ? n_lat : n_tput;
        if (!n)
            continue;
        bool log = vmax[blk] > 0 && vmax[blk] / vmin[blk] > 50;
        if (log) /* the bars rise from below the smallest value */
            fprintf(f, "\nset logscale y\nset yrange [%.6g:%.6g]\nset offsets 0, 0, 0, 0\n",
                    vmin[blk] / 2, vmax[blk] * 8);
        else
            fprintf(f, "\nunset logscale y\nset yrange [0:*]\nset offsets 0, 0, graph 0.25, 0\n");
        fprintf(f,
                "set title \"%s%s\"\nset ylabel \"%s\"\nset xrange [-0.6:%.1f]\n"
                "plot \"%s.dat\" index %d using ($1-0.2):3:(0.4):xticlabels(2) with boxes lc rgb "
                "\"#1f77b4\" title \"simulated\", \\\n"
                "     \"\" index %d using ($1+0.2):4:(0.4) with boxes lc rgb \"#ff7f0e\" title "
                "\"hardware\", \\\n"
                "     \"\" index %d using 1:($3>$4?$3:$4):(sprintf(\"%%+.1f%%%%\", $5)) with labels "
                "rotate by 90 left offset char 0,0.5 notitle\n",
                what[blk][0], log ? " (log scale)" : "", what[blk][1], (double)n - 0.4, base, blk,
                blk, blk);
    }
    fprintf(f, "unset multiplot\n");
    free(pv);
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        return r;
    return tl_an_render(a, o, base, err);
}

int tl_plot_simhw(tl_analysis *a, const tl_filter *flt, const tl_plot_opts *o, tl_err *err)
{
    tl_filter both = flt ? *flt : (tl_filter){0};
    both.kind = NULL; /* the comparison needs both kinds */
    return tl_an_per_experiment(a, &both, o, plot_one, err);
}
