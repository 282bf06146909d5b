/* Validation output: the text report, Markdown and CSV (include/tally/validate.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tally/metrics.h"
#include "tally/validate.h"
#include "an_internal.h"

/* The goals of issue 6: p99 within 10%, training throughput within 5%. */
#define P99_GOAL 0.10
#define TPUT_GOAL 0.05

static double rel_err(double sim, double hw)
{
    return isfinite(sim) && isfinite(hw) && hw != 0 ? sim / hw - 1.0 : NAN;
}

static void fmt_num(char *buf, size_t cap, double v, double scale, int decimals)
{
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.*f", decimals, v * scale);
}

static void fmt_pct(char *buf, size_t cap, double v)
{
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%+.1f%%", v * 100.0);
}

static bool is_alone(const tl_val_cell *c)
{
    return !strcmp(c->policy, "alone");
}

static bool same_scope(const tl_val_cell *a, const tl_val_cell *b)
{
    if (strcmp(a->experiment, b->experiment) || is_alone(a) != is_alone(b))
        return false;
    if (is_alone(a))
        return true;
    return !strcmp(a->jobsig, b->jobsig) && a->has_load == b->has_load &&
           (!a->has_load || a->load == b->load);
}

static char *scope_title(const tl_val_cell *c)
{
    tl_sbuf b = {0};
    if (is_alone(c))
        tl_sbuf_printf(&b, "%s: each job alone", c->experiment);
    else {
        tl_sbuf_printf(&b, "%s: %s", c->experiment, c->jobsig);
        if (c->has_load)
            tl_sbuf_printf(&b, ", load %g", c->load);
    }
    return b.s;
}

static char *policy_label(const tl_val_cell *c)
{
    tl_sbuf b = {0};
    tl_sbuf_printf(&b, "%s", c->policy);
    if (*c->params)
        tl_sbuf_printf(&b, " %s", c->params);
    return b.s;
}

/* One table row's cells: 0 policy, 1 job, 2 role, 3 runs, then sim/hw/err for
 * p50, p99, mean service time and throughput (4..15), 16 the hardware p99's 90%
 * range, 17 the sides whose queue grows and 18 the slow phases, simulated /
 * hardware (inference). The system row fills throughput only. */
#define NCOL 19
typedef char row_t[NCOL][96];

/* Was the hardware run slowed by something outside the experiment? (its
 * slow phases exceed the simulator's by TL_VAL_SLOW_EXCESS or more) */
static bool hw_slowed(const tl_val_job *jb)
{
    return isfinite(jb->slow_sim) && isfinite(jb->slow_hw) && jb->slow_hw >= jb->slow_sim + TL_VAL_SLOW_EXCESS;
}

static void job_row(const tl_val_cell *c, int j, row_t row)
{
    const tl_val_job *jb = &c->jobs[j];
    char *pl = policy_label(c);
    snprintf(row[0], sizeof row[0], "%s", pl);
    free(pl);
    snprintf(row[1], sizeof row[1], "%s", jb->name);
    snprintf(row[2], sizeof row[2], "%s", jb->role);
    snprintf(row[3], sizeof row[3], "%d", c->n_pairs);
    static const tl_metric ms[4] = {TL_M_P50, TL_M_P99, TL_M_MEAN_SERVICE, TL_M_THROUGHPUT};
    for (int k = 0; k < 4; k++) {
        double scale = k < 3 ? 1e-6 : 1.0;
        int dec = k < 3 ? 3 : 2;
        fmt_num(row[4 + 3 * k], sizeof row[0], jb->sim[ms[k]], scale, dec);
        fmt_num(row[5 + 3 * k], sizeof row[0], jb->hw[ms[k]], scale, dec);
        fmt_pct(row[6 + 3 * k], sizeof row[0], rel_err(jb->sim[ms[k]], jb->hw[ms[k]]));
    }
    if (strcmp(jb->role, "inference")) /* training: no requests, no service time */
        for (int k = 10; k < 13; k++)
            snprintf(row[k], sizeof row[k], "%s", "");
    row[16][0] = '\0';
    if (!strcmp(jb->role, "inference") && isfinite(jb->p99_hw_lo))
        snprintf(row[16], sizeof row[16], "%.3f-%.3f", jb->p99_hw_lo * 1e-6, jb->p99_hw_hi * 1e-6);
    snprintf(row[17], sizeof row[17], "%s", jb->grows_sim ? (jb->grows_hw ? "sim, hw" : "sim")
                                                          : (jb->grows_hw ? "hw" : ""));
    row[18][0] = '\0';
    if (!strcmp(jb->role, "inference") && isfinite(jb->slow_sim) && isfinite(jb->slow_hw))
        snprintf(row[18], sizeof row[18], "%.3g / %.3g%s", jb->slow_sim, jb->slow_hw,
                 hw_slowed(jb) ? " (hw slowed)" : "");
}

static void system_row(const tl_val_cell *c, row_t row)
{
    for (int k = 0; k < NCOL; k++)
        snprintf(row[k], sizeof row[k], "%s", "");
    char *pl = policy_label(c);
    snprintf(row[0], sizeof row[0], "%s", pl);
    free(pl);
    snprintf(row[1], sizeof row[1], "system");
    snprintf(row[3], sizeof row[3], "%d", c->n_pairs);
    fmt_num(row[13], sizeof row[0], c->sys_sim, 1, 3);
    fmt_num(row[14], sizeof row[0], c->sys_hw, 1, 3);
    fmt_pct(row[15], sizeof row[0], rel_err(c->sys_sim, c->sys_hw));
}

static const char *const headers[NCOL] = {"policy", "job", "role", "runs",
                                          "p50 sim", "p50 hw", "err",
                                          "p99 sim", "p99 hw", "err",
                                          "svc sim", "svc hw", "err",
                                          "thr sim", "thr hw", "err", "p99 hw 90%",
                                          "queue grows", "slow phases"};

static const char *rank_title(tl_val_rank_metric m)
{
    return m == TL_VAL_RANK_P99_OVERHEAD ? "high-priority p99 overhead, lowest first"
                                         : "system throughput, highest first";
}

static void rank_value(char *buf, size_t cap, tl_val_rank_metric m, double v)
{
    if (m == TL_VAL_RANK_P99_OVERHEAD)
        fmt_pct(buf, cap, v);
    else
        fmt_num(buf, cap, v, 1, 3);
}

static void print_order(FILE *out, const tl_val_ranking *r, const int *order, const double *v,
                        const char *sep)
{
    for (int i = 0; i < r->n; i++) {
        char val[32];
        rank_value(val, sizeof val, r->metric, v[order[i]]);
        fprintf(out, "%s%s %s", i ? sep : "", r->policies[order[i]], val);
    }
}

/* ---------- summary figures ---------- */

typedef struct summary {
    int p99_n, p99_ok, p99_grows, p99_steady_ok, p99_ranged, p99_in_range, svc_n, svc_ok, tput_n, tput_ok, rank_n[TL_VAL_RANK_COUNT], rank_same[TL_VAL_RANK_COUNT];
    int p99_slowed, p99_unslowed_ok; /* rows whose hardware run was slowed (hw_slowed) */
    int rank_ties[TL_VAL_RANK_COUNT], pairs[TL_VAL_RANK_COUNT], discordant[TL_VAL_RANK_COUNT];
    int rank_ov, pairs_ov, discordant_ov; /* p99 overhead, overloaded policies tied */
    double p99_abs_sum, svc_abs_sum, tput_abs_sum;
} summary;

static void summarize(const tl_validation *v, summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < v->n_cells; i++) {
        const tl_val_cell *c = &v->cells[i];
        for (int j = 0; j < c->n_jobs; j++) {
            const tl_val_job *jb = &c->jobs[j];
            if (!strcmp(jb->role, "inference")) {
                double e = rel_err(jb->sim[TL_M_P99], jb->hw[TL_M_P99]);
                if (isfinite(e)) {
                    s->p99_n++;
                    s->p99_ok += fabs(e) <= P99_GOAL;
                    s->p99_abs_sum += fabs(e);
                    if (isfinite(jb->p99_hw_lo)) {
                        double sim = jb->sim[TL_M_P99];
                        s->p99_ranged++;
                        s->p99_in_range += fabs(e) <= P99_GOAL ||
                                           (sim >= jb->p99_hw_lo && sim <= jb->p99_hw_hi);
                    }
                    if (jb->grows_sim || jb->grows_hw)
                        s->p99_grows++;
                    else
                        s->p99_steady_ok += fabs(e) <= P99_GOAL;
                    if (hw_slowed(jb))
                        s->p99_slowed++;
                    else
                        s->p99_unslowed_ok += fabs(e) <= P99_GOAL;
                }
                e = rel_err(jb->sim[TL_M_MEAN_SERVICE], jb->hw[TL_M_MEAN_SERVICE]);
                if (isfinite(e)) {
                    s->svc_n++;
                    s->svc_ok += fabs(e) <= P99_GOAL;
                    s->svc_abs_sum += fabs(e);
                }
            } else {
                double e = rel_err(jb->sim[TL_M_THROUGHPUT], jb->hw[TL_M_THROUGHPUT]);
                if (isfinite(e)) {
                    s->tput_n++;
                    s->tput_ok += fabs(e) <= TPUT_GOAL;
                    s->tput_abs_sum += fabs(e);
                }
            }
        }
    }
    for (size_t i = 0; i < v->n_ranks; i++) {
        s->rank_n[v->ranks[i].metric]++;
        s->rank_same[v->ranks[i].metric] += v->ranks[i].same;
        s->rank_ties[v->ranks[i].metric] += v->ranks[i].discordant == 0;
        s->pairs[v->ranks[i].metric] += v->ranks[i].separated;
        s->discordant[v->ranks[i].metric] += v->ranks[i].discordant;
        if (v->ranks[i].metric == TL_VAL_RANK_P99_OVERHEAD) {
            s->rank_ov += v->ranks[i].discordant_ov == 0;
            s->pairs_ov += v->ranks[i].separated_ov;
            s->discordant_ov += v->ranks[i].discordant_ov;
        }
    }
}

static void print_summary(FILE *out, const tl_validation *v, const char *bullet)
{
    summary s;
    summarize(v, &s);
    fprintf(out, "%sinference p99 latency within 10%% of the hardware: %d of %d (mean |error| %.1f%%)\n",
            bullet, s.p99_ok, s.p99_n, s.p99_n ? 100.0 * s.p99_abs_sum / s.p99_n : 0.0);
    fprintf(out, "%sinference p99 within 10%% of the hardware or inside the hardware p99's 90%% "
                 "range (column \"p99 hw 90%%\": a block bootstrap over %.0f s windows of each "
                 "hardware run, for its stalls): %d of the %d rows with a range\n",
            bullet, TL_VAL_WINDOW_NS / 1e9, s.p99_in_range, s.p99_ranged);
    fprintf(out, "%sinference rows whose queue grows through the run on either side (column \"queue "
                 "grows\": the last quarter's requests wait longer than the first quarter's by over "
                 "%.0f%% of the time between them, or over %.0f%% never finish; their p99 depends on "
                 "how long the run is): %d of %d; p99 within 10%% in %d of the other %d\n",
            bullet, 100 * TL_VAL_GROWTH, 100 * TL_VAL_UNFINISHED, s.p99_grows, s.p99_n, s.p99_steady_ok,
            s.p99_n - s.p99_grows);
    fprintf(out, "%sinference rows whose hardware run was slowed by something outside the experiment "
                 "(column \"slow phases\", simulated / hardware: runs of %d or more consecutive "
                 "requests each served in over %.1fx the run's median service time; %d or more "
                 "phases beyond the simulator's, where the policies make none or one): %d of %d; "
                 "p99 within 10%% in %d of the other %d\n",
            bullet, TL_SLOW_RUN, TL_SLOW_FACTOR, TL_VAL_SLOW_EXCESS, s.p99_slowed, s.p99_n,
            s.p99_unslowed_ok, s.p99_n - s.p99_slowed);
    fprintf(out, "%sinference mean service time (a request's start to its end, without its wait in "
                 "the queue, over the requests that ended inside the measured window, beside the "
                 "other jobs; \"svc\", ms) within 10%% of the hardware: %d of %d (mean |error| %.1f%%)\n",
            bullet, s.svc_ok, s.svc_n, s.svc_n ? 100.0 * s.svc_abs_sum / s.svc_n : 0.0);
    fprintf(out, "%straining throughput within 5%% of the hardware: %d of %d (mean |error| %.1f%%)\n",
            bullet, s.tput_ok, s.tput_n, s.tput_n ? 100.0 * s.tput_abs_sum / s.tput_n : 0.0);
    fprintf(out, "%spolicies in the same order as on the hardware: p99 overhead %d of %d rankings, "
                 "system throughput %d of %d\n",
            bullet, s.rank_same[0], s.rank_n[0], s.rank_same[1], s.rank_n[1]);
    fprintf(out, "%sthe same order up to the hardware's ties (p99 overhead within %.0f points, system "
                 "throughput within %.2f): p99 overhead %d of %d rankings (%d of %d separated pairs "
                 "discordant), system throughput %d of %d (%d of %d)\n",
            bullet, 100 * TL_VAL_TIE_P99, TL_VAL_TIE_SYS, s.rank_ties[0], s.rank_n[0], s.discordant[0],
            s.pairs[0], s.rank_ties[1], s.rank_n[1], s.discordant[1], s.pairs[1]);
    fprintf(out, "%sthe same, with two policies whose high-priority queue grows on the hardware also "
                 "tied (neither p99 has a steady-state value; it depends on the run's length): p99 "
                 "overhead %d of %d rankings (%d of %d separated pairs discordant)\n",
            bullet, s.rank_ov, s.rank_n[0], s.discordant_ov, s.pairs_ov);
}

/* ---------- text ---------- */

static void print_rows(FILE *out, row_t *rows, int n)
{
    int w[NCOL];
    for (int k = 0; k < NCOL; k++) {
        w[k] = (int)strlen(headers[k]);
        for (int i = 0; i < n; i++)
            if ((int)strlen(rows[i][k]) > w[k])
                w[k] = (int)strlen(rows[i][k]);
    }
    for (int i = -1; i < n; i++) {
        for (int k = 0; k < NCOL; k++) {
            const char *cell = i < 0 ? headers[k] : rows[i][k];
            if (k < 3 || k == NCOL - 1)
                fprintf(out, "%s%-*s", k ? "  " : "", w[k], cell);
            else
                fprintf(out, "  %*s", w[k], cell);
        }
        fputc('\n', out);
    }
}

/* Rows of the scope starting at cell i; returns the number of cells used. */
static size_t scope_rows(const tl_validation *v, size_t i, row_t **rows, int *n)
{
    size_t k = i;
    *n = 0;
    *rows = NULL;
    int cap = 0;
    for (; k < v->n_cells && same_scope(&v->cells[i], &v->cells[k]); k++) {
        const tl_val_cell *c = &v->cells[k];
        int need = *n + c->n_jobs + 1;
        if (need > cap) {
            cap = need * 2;
            *rows = tl_xrealloc(*rows, (size_t)cap * sizeof **rows);
        }
        for (int j = 0; j < c->n_jobs; j++)
            job_row(c, j, (*rows)[(*n)++]);
        if (!is_alone(c) && isfinite(c->sys_sim) && isfinite(c->sys_hw))
            system_row(c, (*rows)[(*n)++]);
    }
    return k - i;
}

/* The header of a validation pooled from several pairs of databases: one
 * line per pair (its runs, pairs, simulator parameters and graph calibration),
 * as a Markdown list when md. */
static void print_sources(FILE *f, const tl_validation *v, bool md)
{
    const char *q = md ? "`" : "";
    fprintf(f, "Simulated (%s) vs hardware (%s) runs, pooled from %zu pairs of databases: %zu "
               "pairs matched by run config, %zu of %zu hardware runs.%s",
            v->sim_gpu ? v->sim_gpu : "?", v->hw_gpu ? v->hw_gpu : "?", v->n_sources, v->matched,
            v->matched, v->hw_runs, md ? "\n\n" : "\n");
    for (size_t i = 0; i < v->n_sources; i++) {
        const tl_val_source *so = &v->sources[i];
        fprintf(f, "%s%s%s%s (%zu runs) vs %s%s%s (%zu runs): %zu pairs; simulator parameters: "
                   "%s%s%s",
                md ? "- " : "  ", q, so->hw_path, q, so->hw_runs, q, so->sim_path, q, so->sim_runs,
                so->matched, so->sim_params && *so->sim_params ? q : "",
                so->sim_params && *so->sim_params ? so->sim_params : "the GPU's defaults",
                so->sim_params && *so->sim_params ? q : "");
        if (so->hw_graph_calib)
            fprintf(f, "; graph kernels calibrated as: %s", so->hw_graph_calib);
        fputs(".\n", f);
    }
    fprintf(f, "%sMeans over the matched repetitions of every pair of databases; err = sim / hw "
               "- 1; p50, p99 in ms (training: iteration time);%sthroughput in requests or "
               "iterations per s (system: sum of the jobs' throughput relative to alone).\n%s",
            md ? "\n" : "", md ? " " : "\n", md ? "\n" : "");
}

void tl_validation_print(const tl_validation *v, FILE *out)
{
    const tl_val_source *so = &v->sources[0];
    if (v->n_sources > 1) {
        print_sources(out, v, false);
    } else {
        fprintf(out,
                "Simulated (%s: %zu runs, %s) vs hardware (%s: %zu runs, %s): %zu pairs matched.\n"
                "Means over the matched repetitions; err = sim / hw - 1; p50, p99 in ms (training: "
                "iteration time);\nthroughput in requests or iterations per s (system: sum of the "
                "jobs' throughput relative to alone).\n",
                so->sim_path, v->sim_runs, v->sim_gpu ? v->sim_gpu : "?", so->hw_path, v->hw_runs,
                v->hw_gpu ? v->hw_gpu : "?", v->matched);
        fprintf(out, "Simulator parameters: %s.\n",
                so->sim_params && *so->sim_params ? so->sim_params : "the GPU's defaults");
        if (so->hw_graph_calib)
            fprintf(out, "Hardware graph jobs' kernels calibrated as: %s.\n", so->hw_graph_calib);
    }
    for (size_t i = 0; i < v->n_cells;) {
        char *t = scope_title(&v->cells[i]);
        fprintf(out, "\n== %s\n", t);
        free(t);
        row_t *rows;
        int n;
        i += scope_rows(v, i, &rows, &n);
        print_rows(out, rows, n);
        free(rows);
    }
    if (v->n_ranks)
        fprintf(out, "\nRankings of the policies (simulated vs hardware):\n");
    for (size_t i = 0; i < v->n_ranks; i++) {
        const tl_val_ranking *r = &v->ranks[i];
        char tau[32];
        fmt_num(tau, sizeof tau, r->tau, 1, 2);
        fprintf(out, "\n%s, %s: %s\n  same order: %s (Kendall tau-b %s); up to ties: %s (%d of %d "
                     "separated pairs discordant)", r->experiment, r->scope,
                rank_title(r->metric), r->same ? "yes" : "no", tau, r->discordant ? "no" : "yes",
                r->discordant, r->separated);
        if (r->metric == TL_VAL_RANK_P99_OVERHEAD)
            fprintf(out, "; overloaded policies tied too: %s (%d of %d)", r->discordant_ov ? "no" : "yes",
                    r->discordant_ov, r->separated_ov);
        fprintf(out, "\n  sim: ");
        print_order(out, r, r->order_sim, r->sim, ", ");
        fprintf(out, "\n  hw:  ");
        print_order(out, r, r->order_hw, r->hw, ", ");
        fputc('\n', out);
    }
    fprintf(out, "\nSummary:\n");
    print_summary(out, v, "  ");
}

/* ---------- Markdown ---------- */

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s, f);
    }
}

int tl_validation_write_markdown(const tl_validation *v, const char *path, const char *command,
                                 tl_err *err)
{
    /* never one of the databases compared (the output is renamed into place) */
    const char **inputs = tl_val_inputs(v);
    FILE *f = tl_out_open(path, inputs, err);
    free(inputs);
    if (!f)
        return err ? err->code : TL_EIO;
    fprintf(f, "# Simulator vs hardware\n\n");
    if (command)
        fprintf(f, "Made with `%s`.\n\n", command);
    const tl_val_source *so = &v->sources[0];
    if (v->n_sources > 1) {
        print_sources(f, v, true);
    } else {
        fprintf(f,
                "Simulated runs: `%s` (%zu runs, %s); hardware runs: `%s` (%zu runs, %s); %zu "
                "pairs matched by run config. Means over the matched repetitions; err = sim / hw "
                "- 1; p50 and p99 in ms (for training jobs: iteration time); throughput in "
                "requests or iterations per s; system: the sum of the jobs' throughput relative "
                "to alone.\n\n",
                so->sim_path, v->sim_runs, v->sim_gpu ? v->sim_gpu : "?", so->hw_path, v->hw_runs,
                v->hw_gpu ? v->hw_gpu : "?", v->matched);
        if (so->sim_params && *so->sim_params)
            fprintf(f, "Simulator parameters other than the GPU's defaults: `%s`.\n\n",
                    so->sim_params);
        else
            fprintf(f, "Simulator parameters: the GPU's defaults.\n\n");
        if (so->hw_graph_calib)
            fprintf(f, "Hardware graph jobs' kernels calibrated as: %s (tally-run's meta "
                       "hw_graph_calibration).\n\n", so->hw_graph_calib);
    }
    fprintf(f, "## Summary\n\n");
    print_summary(f, v, "- ");
    for (size_t i = 0; i < v->n_cells;) {
        char *t = scope_title(&v->cells[i]);
        fprintf(f, "\n## ");
        md_cell(f, t);
        fprintf(f, "\n\n|");
        free(t);
        for (int k = 0; k < NCOL; k++)
            fprintf(f, " %s |", headers[k]);
        fprintf(f, "\n|");
        for (int k = 0; k < NCOL; k++)
            fprintf(f, "%s|", k < 3 || k == NCOL - 1 ? "---" : "---:");
        fputc('\n', f);
        row_t *rows;
        int n;
        i += scope_rows(v, i, &rows, &n);
        for (int r = 0; r < n; r++) {
            fputc('|', f);
            for (int k = 0; k < NCOL; k++) {
                fputc(' ', f);
                md_cell(f, rows[r][k]);
                fputs(" |", f);
            }
            fputc('\n', f);
        }
        free(rows);
    }
    if (v->n_ranks) {
        fprintf(f, "\n## Rankings of the policies\n\n| experiment | scope | metric | same order | "
                   "Kendall tau-b | up to ties: discordant of separated pairs | simulated | hardware "
                   "|\n|---|---|---|---|---:|---:|---|---|\n");
        for (size_t i = 0; i < v->n_ranks; i++) {
            const tl_val_ranking *r = &v->ranks[i];
            char tau[32];
            fmt_num(tau, sizeof tau, r->tau, 1, 2);
            fputs("| ", f);
            md_cell(f, r->experiment);
            fputs(" | ", f);
            md_cell(f, r->scope);
            fprintf(f, " | %s | %s | %s | %d of %d", rank_title(r->metric), r->same ? "yes" : "no", tau,
                    r->discordant, r->separated);
            if (r->metric == TL_VAL_RANK_P99_OVERHEAD)
                fprintf(f, " (overloaded tied: %d of %d)", r->discordant_ov, r->separated_ov);
            fputs(" | ", f);
            print_order(f, r, r->order_sim, r->sim, " > ");
            fputs(" | ", f);
            print_order(f, r, r->order_hw, r->hw, " > ");
            fputs(" |\n", f);
        }
        fprintf(f, "\n(`a > b`: a ranks before b.)\n");
    }
    return tl_out_commit(f, err);
}

/* ---------- CSV ---------- */

static void csv_text(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v)
{
    fputc(',', f);
    if (isfinite(v))
        fprintf(f, "%.9g", v);
}

int tl_validation_write_csv(const tl_validation *v, const char *path, tl_err *err)
{
    /* never one of the databases compared (the output is renamed into place) */
    const char **inputs = tl_val_inputs(v);
    FILE *f = tl_out_open(path, inputs, err);
    free(inputs);
    if (!f)
        return err ? err->code : TL_EIO;
    fprintf(f, "experiment,job_set,load,policy,params,job,role,runs,"
               "p50_sim_ms,p50_hw_ms,p50_err,p99_sim_ms,p99_hw_ms,p99_err,"
               "throughput_sim,throughput_hw,throughput_err,"
               "p99_overhead_sim,p99_overhead_hw,throughput_rel_sim,throughput_rel_hw,"
               "queue_grows_sim,queue_grows_hw,service_sim_ms,service_hw_ms,service_err,"
               "p99_hw_lo_ms,p99_hw_hi_ms,slow_phases_sim,slow_phases_hw\n");
    for (size_t i = 0; i < v->n_cells; i++) {
        const tl_val_cell *c = &v->cells[i];
        for (int j = 0; j <= c->n_jobs; j++) {
            bool sys = j == c->n_jobs;
            if (sys && (is_alone(c) || (isnan(c->sys_sim) && isnan(c->sys_hw))))
                continue;
            csv_text(f, c->experiment);
            fputc(',', f);
            csv_text(f, c->jobsig);
            fputc(',', f);
            if (c->has_load)
                fprintf(f, "%g", c->load);
            fputc(',', f);
            csv_text(f, c->policy);
            fputc(',', f);
            csv_text(f, c->params);
            fputc(',', f);
            csv_text(f, sys ? "system" : c->jobs[j].name);
            fputc(',', f);
            csv_text(f, sys ? "" : c->jobs[j].role);
            fprintf(f, ",%d", c->n_pairs);
            if (sys) {
                fputs(",,,,,,", f);
                csv_num(f, c->sys_sim);
                csv_num(f, c->sys_hw);
                csv_num(f, rel_err(c->sys_sim, c->sys_hw));
                fputs(",,,,,,,,,,,,,\n", f);
                continue;
            }
            const tl_val_job *jb = &c->jobs[j];
            static const tl_metric ms[3] = {TL_M_P50, TL_M_P99, TL_M_THROUGHPUT};
            for (int k = 0; k < 3; k++) {
                double scale = k < 2 ? 1e-6 : 1.0;
                csv_num(f, jb->sim[ms[k]] * scale);
                csv_num(f, jb->hw[ms[k]] * scale);
                csv_num(f, rel_err(jb->sim[ms[k]], jb->hw[ms[k]]));
            }
            csv_num(f, jb->sim[TL_M_P99_OVERHEAD]);
            csv_num(f, jb->hw[TL_M_P99_OVERHEAD]);
            csv_num(f, jb->sim[TL_M_THROUGHPUT_REL]);
            csv_num(f, jb->hw[TL_M_THROUGHPUT_REL]);
            if (!strcmp(jb->role, "inference")) {
                fprintf(f, ",%d,%d", jb->grows_sim, jb->grows_hw);
                csv_num(f, jb->sim[TL_M_MEAN_SERVICE] * 1e-6);
                csv_num(f, jb->hw[TL_M_MEAN_SERVICE] * 1e-6);
                csv_num(f, rel_err(jb->sim[TL_M_MEAN_SERVICE], jb->hw[TL_M_MEAN_SERVICE]));
                csv_num(f, jb->p99_hw_lo * 1e-6);
                csv_num(f, jb->p99_hw_hi * 1e-6);
                csv_num(f, jb->slow_sim);
                csv_num(f, jb->slow_hw);
                fputc('\n', f);
            } else {
                fputs(",,,,,,,,,\n", f);
            }
        }
    }
    return tl_out_commit(f, err);
}
