/* The results database (SQLite). One schema for simulated and hardware runs,
 * so one query compares them. Every run is written inside one transaction:
 * a run is either all there (runs.status = 'done') or absent, even after kill -9.
 *
 * Schema (version 1):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)              -- schema_version, tool versions
 *   runs(run_id INTEGER PRIMARY KEY,
 *        run_key TEXT UNIQUE NOT NULL,   -- hash of the canonical run config: resume key
 *        experiment TEXT,                -- spec name
 *        kind TEXT NOT NULL,             -- 'sim' or 'hw'
 *        policy TEXT NOT NULL,           -- policy name, or 'alone' for solo baselines
 *        policy_params TEXT,             -- JSON
 *        gpu TEXT, driver TEXT, clocks TEXT,
 *        seed INTEGER, repetition INTEGER, load REAL,
 *        duration_ns INTEGER, warmup_ns INTEGER,
 *        config TEXT,                    -- the full run config as JSON
 *        status TEXT,                    -- 'done'
 *        wall_s REAL, events INTEGER, created TEXT,
 *        inputs TEXT)                    -- digests of the files the run read, per job
 *                                        -- (tl_inputs_record): a resume refuses to reuse
 *                                        -- a run whose trace has changed since; NULL in
 *                                        -- runs written before (the column is added when
 *                                        -- such a database is opened for writing)
 *   jobs(run_id, job_id, name, trace, role TEXT ('inference'|'training'),
 *        priority, arrival TEXT, rate REAL, slo_ns INTEGER,
 *        alone_run_id INTEGER,           -- the 'alone' run of this job (NULL for alone runs)
 *        PRIMARY KEY(run_id, job_id))
 *   requests(run_id, job_id, req_id, arrival_ns, start_ns, end_ns,
 *            latency_ns,                 -- end - arrival (queueing included)
 *            service_ns,                 -- end - start (start = first op issued)
 *            PRIMARY KEY(run_id, job_id, req_id))   -- inference jobs, after warm-up
 *   iterations(run_id, job_id, iter_idx, start_ns, end_ns,
 *            PRIMARY KEY(run_id, job_id, iter_idx)) -- every job, after warm-up
 *   metrics(run_id, job_id, name, value,            -- job_id -1: whole system
 *            PRIMARY KEY(run_id, job_id, name))
 *      names: p50_ns p90_ns p95_ns p99_ns p999_ns mean_latency_ns slo_attainment
 *             mean_service_ns requests throughput (per s of the window: iterations
 *             that ended in it, requests that arrived and were served in it; before
 *             model revision 22 a request counted however late it ended)
 *             throughput_rel (vs alone) p99_overhead (p99 / alone p99 - 1)
 *             util (SM-time occupied / (sms x time)) turnaround_var_ns2
 *             system: system_throughput util, and the device's own figures
 *             (tl_dev_run_metrics): tally-run's cuda_timers, cuda_setup_ns
 *             (the policy's setup, before the run's time 0),
 *             cuda_timer_late_mean_ns, cuda_timer_late_max_ns, and with CUDA
 *             graph jobs cuda_graph_launches, _kernels, _instantiations,
 *             _reuses, _updates, _one_by_one, _batch_cuts,
 *             _issue_to_flush_mean_ns, _launch_call_mean_ns (warm-up included;
 *             the main process's contexts only)
 *   kernels(run_id, job_id, seq, name, stream, start_ns, end_ns, blocks,
 *           avg_sms REAL, ptb INTEGER, retreated INTEGER)  -- only with --kernels
 */
#ifndef TALLY_RESULTS_H
#define TALLY_RESULTS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "tally/common.h"

#define TL_RESULTS_SCHEMA_VERSION 1

typedef struct tl_results {
    sqlite3 *db;
    char *path;
} tl_results;

/* Open (creating the schema if needed). Nothing is written to an existing file
 * before it is known to be a Tally results database of this schema version (or
 * empty): another SQLite database, an older or newer schema, or a file that is
 * no database at all is refused with TL_EFORMAT naming the path and what is
 * wrong, and left byte for byte as it was. An empty path (or ":memory:", both
 * lost at close) is TL_EUNKNOWN, a usage error; a file that cannot be written
 * TL_EDB. Sets a busy timeout so that several worker processes can write one
 * database. */
int tl_results_open(tl_results *r, const char *path, tl_err *err);
/* Is path a Tally results database of this schema version, with its runs,
 * jobs, requests and metrics tables? Opened read-only: nothing is written.
 * 0; TL_EIO when it cannot be read (missing); TL_EFORMAT when it is not one. */
int tl_results_check(const char *path, tl_err *err);
/* Do a and b name the same file? Device and inode when both exist; when
 * neither does, the same path once its folders are resolved (realpath). */
bool tl_results_same_file(const char *a, const char *b);
/* sqlite3_open_v2 of a file by its name: a relative name starting with "file:"
 * is opened as a file, not read as a URI (SQLite does that where the flags or
 * its build allow URIs). Every results, hardware or calibration database given
 * by a user is opened through this. Returns SQLite's code; *db as it sets it. */
int tl_results_sqlite_open(const char *path, int flags, sqlite3 **db);
/* path with its folders resolved (realpath), also for a file that does not
 * exist yet (its folder must); NULL if that fails. malloc'ed. */
char *tl_results_canonical_path(const char *path);
void tl_results_close(tl_results *r);
/* Is a finished run with this key already in the database? (sweep resume) */
int tl_results_has_run(tl_results *r, const char *run_key, long long *run_id, tl_err *err);
/* The runs.inputs of the finished run with this key: 1 and *inputs (malloc'ed,
 * NULL where the run has none), or 0 when there is no such run. */
int tl_results_run_inputs(tl_results *r, const char *run_key, char **inputs, tl_err *err);
int tl_results_begin(tl_results *r, tl_err *err);
int tl_results_commit(tl_results *r, tl_err *err);
void tl_results_rollback(tl_results *r);
const char *tl_results_schema_sql(void);
/* A key of the meta table (one statement: atomic). Keys in use:
 * schema_version, made_by (tally-validate's combined databases),
 * hw_stream_gap_ns (tally-run: the replay's measured back-to-back gap). */
int tl_results_set_meta(tl_results *r, const char *key, const char *value, tl_err *err);

/* Everything about one finished run, written in one transaction. */
struct tl_run_result;
struct tl_job_metrics;
struct tl_job_conf;
typedef struct tl_run_record {
    const char *run_key, *experiment, *kind, *policy;
    const char *policy_params;  /* JSON text */
    const char *gpu, *driver, *clocks;
    uint64_t seed;
    int repetition;
    double load;                /* NAN: none */
    tl_ns duration_ns, warmup_ns;
    const char *config;         /* JSON text */
    const char *inputs;         /* runs.inputs (tl_inputs_record); NULL: none */
    double wall_s;
    uint64_t events;
    int n_jobs;
    const struct tl_job_conf *jobs;
    const long long *alone_run_ids;  /* per job, -1 none */
    const struct tl_run_result *result;
    const struct tl_job_metrics *metrics;   /* per job */
    double system_throughput;   /* NAN: unknown */
    double system_util;
    bool replace;               /* delete an earlier run with the same key first */
    int n_device_metrics;       /* the device's own figures (tl_dev_run_metrics), */
    const char *const *device_metric_names; /* ... written as metrics of job -1 */
    const double *device_metric_values;
} tl_run_record;

int tl_results_write_run(tl_results *r, const tl_run_record *rec, long long *run_id, tl_err *err);
/* Merge the finished runs of another database (a sweep shard) into r; runs
 * whose key r has are skipped, run ids renumbered. One transaction. The shard
 * is checked as tl_results_check does and read only (attached read-only):
 * missing TL_EIO, not a results database TL_EFORMAT, r's own file TL_EUNKNOWN. */
int tl_results_merge(tl_results *r, const char *shard, int *merged, tl_err *err);
/* Attach the file at path to r's connection as schema "src", read-only (by its
 * resolved path; a relative name starting with "file:" is a file name). TL_EIO
 * when it cannot be resolved or attached. DETACH src when done. */
int tl_results_attach_src(tl_results *r, const char *path, tl_err *err);
/* Read a job's metrics back (for relative metrics from alone runs). */
int tl_results_job_metrics(tl_results *r, long long run_id, int job_id,
                           struct tl_job_metrics *out, tl_err *err);

#endif
