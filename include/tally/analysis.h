/* Analysis: everything that READS the results database (include/tally/results.h):
 * comparison plots through gnuplot, a Chrome-trace export of one run, and the
 * report table. Plots are made from the database only, never from scraped text.
 *
 * Runs are selected by a tl_filter and grouped: runs that differ only by seed or
 * repetition (same experiment, kind, policy and its parameters, load and job
 * list) form one group,
 * whose metrics are the mean over its runs. Each plot writes, in the output
 * folder, a whitespace-separated data file (NAME.dat, header comments say what
 * the columns are), a readable gnuplot script (NAME.gp, `gnuplot NAME.gp` makes
 * NAME.png; `gnuplot -e 'fmt="svg"' NAME.gp` the SVG) and the images.
 */
#ifndef TALLY_ANALYSIS_H
#define TALLY_ANALYSIS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>

#include "tally/common.h"

/* ---- The database, opened read-only ------------------------------------- */

typedef struct tl_analysis {
    sqlite3 *db;
    char *path;
    bool has_kernels;    /* kernels table present (it may still be empty) */
    bool has_iterations; /* iterations table present */
} tl_analysis;

/* Open read-only and check the schema: a missing file is TL_EIO, a database
 * without the Tally results schema (or another schema_version) TL_EFORMAT. */
int tl_analysis_open(tl_analysis *a, const char *path, tl_err *err);
void tl_analysis_close(tl_analysis *a);

/* Which runs to look at. Zero-initialized: every finished run. */
typedef struct tl_filter {
    const char *experiment; /* NULL: any */
    long long run_id;       /* 0: any */
    const char *policies;   /* comma-separated policy names; NULL: any */
    const char *kind;       /* "sim" or "hw"; NULL: both */
} tl_filter;

/* ---- Groups of repetitions and their mean metrics ------------------------ */

/* Per-job metrics, the names of the metrics table (results.h). */
typedef enum tl_metric {
    TL_M_P50 = 0,
    TL_M_P90,
    TL_M_P95,
    TL_M_P99,
    TL_M_P999,
    TL_M_MEAN_LATENCY,
    TL_M_SLO_ATTAINMENT,
    TL_M_MEAN_SERVICE,
    TL_M_REQUESTS,
    TL_M_THROUGHPUT,
    TL_M_THROUGHPUT_REL,
    TL_M_P99_OVERHEAD,
    TL_M_UTIL,
    TL_M_TURNAROUND_VAR,
    TL_M_COUNT
} tl_metric;

/* System metrics (metrics.job_id = -1). */
typedef enum tl_sys_metric {
    TL_SYS_THROUGHPUT = 0, /* system_throughput: sum of throughput_rel */
    TL_SYS_UTIL,           /* util */
    TL_SYS_COUNT
} tl_sys_metric;

const char *tl_metric_name(tl_metric m);

typedef struct tl_group_job {
    char *name;
    char *role;      /* "inference" or "training" */
    int priority;    /* rank: 0 is the most important */
    long long slo_ns;/* 0: none */
    int job_id;      /* in the group's first run */
    double sum[TL_M_COUNT];
    int n[TL_M_COUNT]; /* runs that had the metric */
} tl_group_job;

typedef struct tl_group {
    char *experiment; /* "" when the run has none */
    char *kind;       /* "sim" or "hw" */
    char *policy;
    char *params;     /* runs.policy_params ("" for none or "{}") */
    bool has_load;
    double load;
    char *jobsig;     /* job names in job_id order, joined by '+' */
    char *label;      /* short name for legends: policy, plus what tells groups apart */
    long long *run_ids;
    size_t n_runs;
    tl_group_job *jobs;
    int n_jobs;
    int hp;           /* index of the high-priority inference job; -1 if none */
    double sys_sum[TL_SYS_COUNT];
    int sys_n[TL_SYS_COUNT];
} tl_group;

typedef struct tl_groups {
    tl_group *v;
    size_t n;
} tl_groups;

/* Load the selected finished runs, grouped and sorted (experiment, policy,
 * parameters, kind, load, jobs). Missing derived metrics are filled in per run where the run's
 * baseline allows it: p99_overhead and throughput_rel from jobs.alone_run_id,
 * system_throughput as the sum of throughput_rel. No matching run: TL_EMISSING. */
int tl_groups_load(tl_analysis *a, const tl_filter *f, tl_groups *out, tl_err *err);
void tl_groups_close(tl_groups *g);
/* Mean over the group's runs; NaN where no run had the metric. */
double tl_group_job_mean(const tl_group_job *j, tl_metric m);
double tl_group_sys_mean(const tl_group *g, tl_sys_metric m);
bool tl_group_is_alone(const tl_group *g);

/* ---- Plots --------------------------------------------------------------- */

enum {
    TL_FMT_PNG = 1u << 0,
    TL_FMT_SVG = 1u << 1,
    TL_FMT_PDF = 1u << 2,
};

typedef struct tl_plot_opts {
    const char *out_dir;  /* created if missing; NULL: "." */
    unsigned formats;     /* TL_FMT_* bits; 0: PNG and SVG, plus PDF if gnuplot has pdfcairo */
    bool no_render;       /* write .dat and .gp only, do not run gnuplot */
    tl_ns from_ns, to_ns; /* timeline window; to_ns <= from_ns: the whole run */
    FILE *log;            /* one line per file written; NULL: quiet */
} tl_plot_opts;

/* Create o->out_dir (mkdir -p); TL_EIO naming the folder on failure. The plot
 * functions do it themselves; this is for other files that go there. */
int tl_plot_make_out_dir(const tl_plot_opts *o, tl_err *err);

/* Parse "png,svg,pdf" into TL_FMT_* bits. */
int tl_plot_parse_formats(const char *s, unsigned *out, tl_err *err);

/* One plot per experiment in the selection; files are EXPERIMENT_KIND.{dat,gp,png,...}
 * (KIND: tradeoff, cdf, bars, simhw). */
int tl_plot_tradeoff(tl_analysis *a, const tl_filter *f, const tl_plot_opts *o, tl_err *err);
int tl_plot_cdf(tl_analysis *a, const tl_filter *f, const tl_plot_opts *o, tl_err *err);
int tl_plot_bars(tl_analysis *a, const tl_filter *f, const tl_plot_opts *o, tl_err *err);
int tl_plot_simhw(tl_analysis *a, const tl_filter *f, const tl_plot_opts *o, tl_err *err);
/* One run (kernels table needed): files runRUNID_timeline.*. */
int tl_plot_timeline(tl_analysis *a, long long run_id, const tl_plot_opts *o, tl_err *err);

/* Run gnuplot on SCRIPT (a file name inside dir) once per format, with fmt set
 * to "png"/"svg"/"pdf"; check its exit status and that dir/BASE.FMT is a
 * non-empty file. gnuplot is $TALLY_GNUPLOT if set, else found on PATH; missing:
 * TL_ENODEV; failed: TL_EINVAL with the last lines of its stderr. */
int tl_gnuplot_render(const char *dir, const char *script, const char *base,
                      unsigned formats, FILE *log, tl_err *err);
/* Does this gnuplot have the named terminal ("pdfcairo")? false if no gnuplot. */
bool tl_gnuplot_has_terminal(const char *terminal);

/* ---- Chrome trace event export -------------------------------------------- */

/* Write run_id as Chrome trace event JSON (Perfetto, chrome://tracing): one
 * process per job, one thread per stream, kernels as complete ("X") events with
 * args {blocks, avg_sms, ptb, retreated}, requests as spans on "requests"
 * tracks, retreats as instant events. Needs the kernels table. */
int tl_chrome_export(tl_analysis *a, long long run_id, const char *path, tl_err *err);

/* ---- Report ---------------------------------------------------------------- */

/* The comparison table: one row per group and job plus a system row. Printed
 * aligned on out (if not NULL) and written as Markdown to md_path (if not NULL). */
int tl_report(tl_analysis *a, const tl_filter *f, FILE *out, const char *md_path, tl_err *err);

/* ---- Output files and standard output -------------------------------------- */

/* Every file tally-plot and tally-validate write is written to a temporary
 * file beside it and renamed into place once complete: a failure never
 * truncates or removes the file that was there. */

/* An output file: written to a temporary file in the same folder
 * (".NAME.XXXXXX", with the mode NAME has or fopen would give) that
 * tl_out_commit renames over path once everything is written, flushed and
 * synced; whatever fails, the file that was at path is kept (tl_out_discard
 * and a failed commit remove the temporary only). A link is followed: its file
 * is replaced, the link kept. A path that is one of inputs (NULL-terminated,
 * may be NULL: the files read to make it; tl_output_check) is refused with
 * TL_EUNKNOWN before anything is created; other failures are TL_EIO naming
 * the path. Devices and /dev/, /proc/ names (/dev/stdout) are written in place. */
FILE *tl_out_open(const char *path, const char *const *inputs, tl_err *err);
int tl_out_commit(FILE *f, tl_err *err);
void tl_out_discard(FILE *f);

/* Would writing output replace one of inputs (NULL-terminated; the databases
 * or spec being read), or an SQLite companion of one (-wal, -shm, -journal)?
 * Same device and inode when both exist, else the same path with its folders
 * resolved (realpath). The input it would replace, or NULL. */
const char *tl_output_clobbers(const char *output, const char *const *inputs);
/* The same as an error: TL_EUNKNOWN (a usage error: EX_USAGE) naming both. */
int tl_output_check(const char *path, const char *const *inputs, tl_err *err);

/* Close f and say whether everything written to it arrived (gnulib's
 * close_stream): 0, or -1 with errno set to the reason (0 when an earlier
 * write failed and its reason is no longer known). A stream never written
 * whose descriptor was closed is fine. */
int tl_close_stream(FILE *f);
/* At exit: tl_close_stream(stdout); on failure a message "PROG: write error on
 * standard output: REASON" on stderr and EX_CANTCREAT, else 0. */
int tl_close_stdout(const char *prog);

#endif
