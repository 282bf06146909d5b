/* The comparison table: per experiment, kind, policy and load (repetitions
 * averaged), one row per job and one for the whole system. Printed aligned for a
 * terminal and, on request, as a Markdown table. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

enum {
    C_EXP, C_KIND, C_POLICY, C_LOAD, C_RUNS, C_JOB, C_ROLE, C_P50, C_P99, C_OVH, C_SLO, C_TPUT,
    C_TREL, C_UTIL, C_N
};

static const char *const headers[C_N] = {
    "experiment", "kind",   "policy",  "load",     "runs",     "job",            "role",
    "p50 ms",     "p99 ms", "p99 ovh %", "SLO met %", "throughput/s", "tput rel", "util %"};

/* Columns from C_LOAD on are numbers: right-aligned. */
static bool numeric(int c)
{
    return c == C_LOAD || c == C_RUNS || c >= C_P50;
}

static char *num(const char *fmt, double v)
{
    char buf[64];
    if (!isfinite(v))
        return tl_xstrdup("-");
    snprintf(buf, sizeof buf, fmt, v);
    return tl_xstrdup(buf);
}

typedef struct table {
    char **cell; /* [rows][C_N] */
    size_t rows, cap;
} table;

static char **new_row(table *t)
{
    if (t->rows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cell = tl_xrealloc(t->cell, t->cap * C_N * sizeof *t->cell);
    }
    char **r = &t->cell[t->rows++ * C_N];
    for (int c = 0; c < C_N; c++)
        r[c] = NULL;
    return r;
}

static void fill_group_cells(char **r, const tl_group *g)
{
    r[C_EXP] = tl_xstrdup(*g->experiment ? g->experiment : "-");
    r[C_KIND] = tl_xstrdup(g->kind);
    tl_sbuf p = {0};
    tl_sbuf_printf(&p, "%s%s%s", g->policy, *g->params ? " " : "", g->params);
    r[C_POLICY] = p.s;
    r[C_LOAD] = g->has_load ? num("%g", g->load) : tl_xstrdup("-");
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", g->n_runs);
    r[C_RUNS] = tl_xstrdup(buf);
}

static void build(const tl_groups *g, table *t)
{
    for (size_t i = 0; i < g->n; i++) {
        const tl_group *x = &g->v[i];
        for (int j = 0; j < x->n_jobs; j++) {
            const tl_group_job *jb = &x->jobs[j];
            char **r = new_row(t);
            fill_group_cells(r, x);
            r[C_JOB] = tl_xstrdup(jb->name);
            r[C_ROLE] = tl_xstrdup(jb->role);
            r[C_P50] = num("%.3f", tl_group_job_mean(jb, TL_M_P50) / 1e6);
            r[C_P99] = num("%.3f", tl_group_job_mean(jb, TL_M_P99) / 1e6);
            r[C_OVH] = num("%+.1f", tl_group_job_mean(jb, TL_M_P99_OVERHEAD) * 100);
            r[C_SLO] = num("%.1f", tl_group_job_mean(jb, TL_M_SLO_ATTAINMENT) * 100);
            r[C_TPUT] = num("%.2f", tl_group_job_mean(jb, TL_M_THROUGHPUT));
            r[C_TREL] = num("%.3f", tl_group_job_mean(jb, TL_M_THROUGHPUT_REL));
            r[C_UTIL] = num("%.1f", tl_group_job_mean(jb, TL_M_UTIL) * 100);
        }
        char **r = new_row(t);
        fill_group_cells(r, x);
        r[C_JOB] = tl_xstrdup("(system)");
        r[C_ROLE] = tl_xstrdup("-");
        for (int c = C_P50; c <= C_TPUT; c++)
            r[c] = tl_xstrdup("-");
        r[C_TREL] = num("%.3f", tl_group_sys_mean(x, TL_SYS_THROUGHPUT));
        r[C_UTIL] = num("%.1f", tl_group_sys_mean(x, TL_SYS_UTIL) * 100);
    }
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->rows * C_N; i++)
        free(t->cell[i]);
    free(t->cell);
}

static void print_aligned(FILE *out, const table *t)
{
    size_t w[C_N];
    for (int c = 0; c < C_N; c++) {
        w[c] = strlen(headers[c]);
        for (size_t i = 0; i < t->rows; i++) {
            size_t l = strlen(t->cell[i * C_N + c]);
            w[c] = l > w[c] ? l : w[c];
        }
    }
    for (int c = 0; c < C_N; c++)
        fprintf(out, "%s%*s", c ? "  " : "", numeric(c) ? (int)w[c] : -(int)w[c], headers[c]);
    fputc('\n', out);
    for (int c = 0; c < C_N; c++) {
        fputs(c ? "  " : "", out);
        for (size_t k = 0; k < w[c]; k++)
            fputc('-', out);
    }
    fputc('\n', out);
    for (size_t i = 0; i < t->rows; i++) {
        for (int c = 0; c < C_N; c++) {
            /* no trailing blanks after the last column */
            if (c == C_N - 1 || numeric(c))
                fprintf(out, "%s%*s", c ? "  " : "", numeric(c) ? (int)w[c] : 0,
                        t->cell[i * C_N + c]);
            else
                fprintf(out, "%s%-*s", c ? "  " : "", (int)w[c], t->cell[i * C_N + c]);
        }
        fputc('\n', out);
    }
}

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static int write_markdown(const char *path, const char *db, const tl_groups *g, const table *t,
                          tl_err *err)
{
    const char *inputs[] = {db, NULL};
    FILE *f = tl_out_open(path, inputs, err);
    if (!f)
        return err ? err->code : TL_EIO;
    size_t runs = 0;
    for (size_t i = 0; i < g->n; i++)
        runs += g->v[i].n_runs;
    fprintf(f, "# Tally results\n\nFrom `");
    md_cell(f, db);
    fprintf(f, "`: %zu runs in %zu groups. Runs that differ only by seed or repetition form a "
               "group; every value is the mean over the group's runs. Latency runs from a "
               "request's arrival to its completion (queueing included); p99 ovh = p99 / p99 "
               "alone - 1; tput rel = throughput / throughput alone; the (system) row gives "
               "the system throughput (sum of tput rel) and the whole GPU's utilization.\n\n",
            runs, g->n);
    fputc('|', f);
    for (int c = 0; c < C_N; c++)
        fprintf(f, " %s |", headers[c]);
    fputs("\n|", f);
    for (int c = 0; c < C_N; c++)
        fputs(numeric(c) ? " ---: |" : " --- |", f);
    fputc('\n', f);
    for (size_t i = 0; i < t->rows; i++) {
        fputc('|', f);
        for (int c = 0; c < C_N; c++) {
            fputc(' ', f);
            md_cell(f, t->cell[i * C_N + c]);
            fputs(" |", f);
        }
        fputc('\n', f);
    }
    return tl_out_commit(f, err);
}

int tl_report(tl_analysis *a, const tl_filter *f, FILE *out, const char *md_path, tl_err *err)
{
    tl_groups g;
    int r = tl_groups_load(a, f, &g, err);
    if (r < 0)
        return r;
    table t = {0};
    build(&g, &t);
    if (out)
        print_aligned(out, &t);
    if (md_path)
        r = write_markdown(md_path, a->path, &g, &t, err);
    table_free(&t);
    tl_groups_close(&g);
    return r;
}
