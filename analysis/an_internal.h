/* Helpers shared by the analysis/ files (not a public interface). */
#ifndef TALLY_AN_INTERNAL_H
#define TALLY_AN_INTERNAL_H

#include <stdio.h>

#include "tally/analysis.h"

/* Growable string. */
typedef struct tl_sbuf {
    char *s;
    size_t len, cap;
} tl_sbuf;
void tl_sbuf_printf(tl_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tl_sbuf_free(tl_sbuf *b);

/* "a/b" + "/" + "name" (malloc'ed). */
char *tl_an_path(const char *dir, const char *name);
/* A file-name-safe copy of s: [A-Za-z0-9._-] kept, the rest '_'; "" -> "unnamed". */
char *tl_an_safe_name(const char *s);
/* Label for a .dat string column or a gnuplot string: double quotes and
 * backslashes removed, control characters blanked (malloc'ed). */
char *tl_an_clean_label(const char *s);
/* Print a double for a data file: "NaN" when not finite, else %.9g. */
void tl_an_put_num(FILE *f, double v);

/* Prepare or fill err with the statement and SQLite's message. */
int tl_an_prepare(tl_analysis *a, const char *sql, sqlite3_stmt **st, tl_err *err);

/* Open o->out_dir/name for writing (tl_out_open; a->path is the input it must
 * not replace); tl_an_finish commits it and logs the path, tl_out_discard
 * drops it. */
FILE *tl_an_create(tl_analysis *a, const tl_plot_opts *o, const char *name, tl_err *err);
int tl_an_finish(FILE *f, const tl_plot_opts *o, const char *name, tl_err *err);

/* The databases a validation read (every source's hardware and simulated
 * one), NULL-terminated, for tl_out_open and tl_output_check; free the array,
 * not the paths (v's). */
struct tl_validation;
const char **tl_val_inputs(const struct tl_validation *v);

/* Colour i of a 10-colour qualitative palette ("#rrggbb"). */
const char *tl_an_colour(size_t i);

/* Start of every .gp script: terminal chosen from fmt (default png), output BASE.fmt. */
void tl_an_gp_preamble(FILE *f, const char *base, int width, int height);
/* Render BASE.gp unless o->no_render (no image may be a->path). */
int tl_an_render(tl_analysis *a, const tl_plot_opts *o, const char *base, tl_err *err);

/* "mean of 3 runs per policy" / "mean of 1-3 runs per policy" / "1 run per policy"
 * for the groups sel[0..n), into buf. */
void tl_an_reps_phrase(tl_group *const *sel, size_t n, char *buf, size_t cap);
/* Escape s for a double-quoted gnuplot string (malloc'ed). */
char *tl_an_gp_string(const char *s);

/* Experiments present in groups (distinct, in group order); borrowed strings. */
size_t tl_an_experiments(const tl_groups *g, const char ***out);

/* One run's description and jobs (timeline, Chrome export). */
typedef struct tl_an_run {
    char *experiment, *policy, *kind, *gpu;
    int n_jobs;
    int *job_ids;
    char **names;    /* cleaned for labels */
    bool *inference;
} tl_an_run;
/* TL_EMISSING when there is no finished run run_id. */
int tl_an_run_info(tl_analysis *a, long long run_id, tl_an_run *ri, tl_err *err);
void tl_an_run_info_free(tl_an_run *ri);
int tl_an_job_index(const tl_an_run *ri, int job_id);

/* Load the groups and call fn once per experiment. An experiment with nothing
 * to show (fn returns TL_EMISSING) is skipped when another one made a plot. */
typedef int (*tl_an_plot_fn)(tl_analysis *a, const tl_groups *g, const char *experiment, const tl_plot_opts *o,
                             tl_err *err);
int tl_an_per_experiment(tl_analysis *a, const tl_filter *f, const tl_plot_opts *o,
                         tl_an_plot_fn fn, tl_err *err);

#endif
