/* Chrome trace event export of one run (opens in Perfetto and chrome://tracing).
 *
 * Layout: one process per job; in it one thread (track) per stream holding the
 * kernels as complete ("X") events, "requests" tracks with every request as a
 * span from arrival to completion (its "service" part nested inside, so that
 * queueing shows), an "iterations" track for training jobs, and an instant
 * "retreat" event where a persistent-thread-block kernel was told to stop.
 * Events are written one by one (each through jansson, which does the escaping)
 * so that runs with millions of kernels do not need a tree in memory.
 * Times: "ts"/"dur" in microseconds, as the format wants, from integer ns. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

/* Thread ids of the non-stream tracks: far above any stream number. */
#define TID_REQUESTS 1000000000LL
#define TID_ITERATIONS 1000000900LL

typedef struct writer {
    FILE *f;
    size_t n;
} writer;

static void emit(writer *w, json_t *ev)
{
    if (!ev) /* json_pack failed: nothing half-written */
        return;
    fputs(w->n++ ? ",\n" : "\n", w->f);
    json_dumpf(ev, w->f, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(ev);
}

static json_t *meta(const char *what, int pid, long long tid, const char *key, json_t *value)
{
    return json_pack("{s:s, s:s, s:i, s:I, s:{s:o}}", "name", what, "ph", "M", "pid", pid, "tid",
                     (json_int_t)tid, "args", key, value);
}

static double us(long long ns)
{
    return (double)ns / 1000.0;
}

/* to - from in us, in double: times read from a damaged database may be
 * anything, and their difference in long long would overflow. */
static double us_between(long long from, long long to)
{
    return ((double)to - (double)from) / 1000.0;
}

/* Requests of one job: greedy lanes so that overlapping requests (queueing)
 * never share a track, which X events on one thread would need. */
static int export_requests(tl_analysis *a, writer *w, long long run_id, int pid, int job_id,
                           tl_err *err)
{
    sqlite3_stmt *st;
    int r = tl_an_prepare(a, "SELECT req_id, arrival_ns, start_ns, end_ns, latency_ns, service_ns "
                             "FROM requests WHERE run_id=?1 AND job_id=?2 "
                             "ORDER BY arrival_ns, req_id",
                          &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, job_id);
    long long *lane_end = NULL;
    int lanes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(st, 0), arr = sqlite3_column_int64(st, 1),
                  start = sqlite3_column_int64(st, 2), end = sqlite3_column_int64(st, 3);
        int lane = 0;
        while (lane < lanes && lane_end[lane] > arr)
            lane++;
        if (lane == lanes) {
            lane_end = tl_xrealloc(lane_end, (size_t)(lanes + 1) * sizeof *lane_end);
            char nm[32];
            if (lanes)
                snprintf(nm, sizeof nm, "requests (%d)", lanes + 1);
            else
                snprintf(nm, sizeof nm, "requests");
            emit(w, meta("thread_name", pid, TID_REQUESTS + lanes, "name", json_string(nm)));
            emit(w, meta("thread_sort_index", pid, TID_REQUESTS + lanes, "sort_index",
                         json_integer(-1000 + lanes)));
            lanes++;
        }
        lane_end[lane] = end;
        char nm[48];
        snprintf(nm, sizeof nm, "request %lld", id);
        emit(w, json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f, s:{s:I, s:f, s:f, s:f}}", "name",
                          nm, "cat", "request", "ph", "X", "pid", pid, "tid",
                          (json_int_t)(TID_REQUESTS + lane), "ts", us(arr), "dur",
                          us_between(arr, end), "args", "req_id", (json_int_t)id, "latency_ms",
                          sqlite3_column_double(st, 4) / 1e6, "service_ms",
                          sqlite3_column_double(st, 5) / 1e6, "queued_ms",
                          ((double)start - (double)arr) / 1e6));
        if (start > arr && start <= end)
            emit(w, json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f}", "name", "service", "cat",
                              "request", "ph", "X", "pid", pid, "tid",
                              (json_int_t)(TID_REQUESTS + lane), "ts", us(start), "dur",
                              us_between(start, end)));
    }
    sqlite3_finalize(st);
    free(lane_end);
    return 0;
}

static int export_iterations(tl_analysis *a, writer *w, long long run_id, int pid, int job_id,
                             tl_err *err)
{
    sqlite3_stmt *st;
    int r = tl_an_prepare(a, "SELECT iter_idx, start_ns, end_ns FROM iterations WHERE run_id=?1 "
                             "AND job_id=?2 ORDER BY start_ns, iter_idx",
                          &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, job_id);
    bool named = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!named) {
            emit(w, meta("thread_name", pid, TID_ITERATIONS, "name", json_string("iterations")));
            emit(w, meta("thread_sort_index", pid, TID_ITERATIONS, "sort_index",
                         json_integer(-2000)));
            named = true;
        }
        long long it = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1),
                  e = sqlite3_column_int64(st, 2);
        char nm[48];
        snprintf(nm, sizeof nm, "iteration %lld", it);
        emit(w, json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f}", "name", nm, "cat", "iteration",
                          "ph", "X", "pid", pid, "tid", (json_int_t)TID_ITERATIONS, "ts", us(s),
                          "dur", us_between(s, e)));
    }
    sqlite3_finalize(st);
    return 0;
}

/* Kernels, job by job and stream by stream in launch order; a thread_name is
 * written the first time a (job, stream) pair appears. */
static int export_kernels(tl_analysis *a, writer *w, long long run_id, const tl_an_run *ri,
                          size_t *count, tl_err *err)
{
    sqlite3_stmt *st;
    int r = tl_an_prepare(a, "SELECT job_id, seq, name, stream, start_ns, end_ns, blocks, avg_sms, "
                             "ptb, retreated FROM kernels WHERE run_id=?1 "
                             "ORDER BY job_id, stream, start_ns, seq",
                          &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    int last_job = -1;
    long long last_stream = 0;
    bool any = false;
    *count = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int job_id = sqlite3_column_int(st, 0);
        long long stream = sqlite3_column_int64(st, 3);
        int pid = job_id + 1;
        if (!any || job_id != last_job || stream != last_stream) {
            char nm[48];
            snprintf(nm, sizeof nm, "stream %lld", stream);
            emit(w, meta("thread_name", pid, stream, "name", json_string(nm)));
            emit(w, meta("thread_sort_index", pid, stream, "sort_index",
                         json_integer((json_int_t)stream)));
            if (tl_an_job_index(ri, job_id) < 0) {
                /* a kernel of a job missing from the jobs table: still give it a name */
                char pn[48];
                snprintf(pn, sizeof pn, "job %d", job_id);
                emit(w, meta("process_name", pid, 0, "name", json_string(pn)));
            }
            any = true;
            last_job = job_id;
            last_stream = stream;
        }
        const unsigned char *t = sqlite3_column_text(st, 2);
        char *kname = tl_xstrdup(t ? (const char *)t : "kernel");
        /* jansson takes UTF-8 only: a name that is not becomes ASCII with '?' */
        json_t *probe = json_string(kname);
        if (!probe)
            for (char *p = kname; *p; p++)
                if ((unsigned char)*p >= 0x80)
                    *p = '?';
        json_decref(probe);
        long long s = sqlite3_column_int64(st, 4), e = sqlite3_column_int64(st, 5);
        bool ptb = sqlite3_column_int(st, 8) != 0, retreated = sqlite3_column_int(st, 9) != 0;
        /* Distinct names give PTB and retreated launches their own colours in Perfetto. */
        tl_sbuf nm = {0};
        tl_sbuf_printf(&nm, "%s%s%s", kname, ptb ? " [ptb]" : "", retreated ? " [retreated]" : "");
        emit(w, json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f, s:{s:I, s:f, s:b, s:b, s:I}}",
                          "name", nm.s, "cat", ptb ? "kernel,ptb" : "kernel", "ph", "X", "pid",
                          pid, "tid", (json_int_t)stream, "ts", us(s), "dur", us_between(s, e), "args",
                          "blocks", (json_int_t)sqlite3_column_int64(st, 6), "avg_sms",
                          sqlite3_column_double(st, 7), "ptb", ptb, "retreated", retreated, "seq",
                          (json_int_t)sqlite3_column_int64(st, 1)));
        tl_sbuf_free(&nm);
        if (retreated)
            emit(w, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:{s:s, s:I}}", "name",
                              "retreat", "cat", "preemption", "ph", "i", "s", "t", "pid", pid,
                              "tid", (json_int_t)stream, "ts", us(e), "args", "kernel", kname,
                              "blocks_done", (json_int_t)sqlite3_column_int64(st, 6)));
        free(kname);
        (*count)++;
    }
    sqlite3_finalize(st);
    return 0;
}

int tl_chrome_export(tl_analysis *a, long long run_id, const char *path, tl_err *err)
{
    tl_an_run ri;
    int r = tl_an_run_info(a, run_id, &ri, err);
    if (r < 0)
        return r;
    if (!a->has_kernels) {
        tl_an_run_info_free(&ri);
        return tl_errf(err, TL_EMISSING, "%s: no kernels table (run tally-sim with --kernels)",
                       a->path);
    }
    /* A temporary file renamed over path only when complete: a failure keeps
     * whatever was at path, and path can never be the database read. */
    const char *inputs[] = {a->path, NULL};
    FILE *f = tl_out_open(path, inputs, err);
    if (!f) {
        r = err ? err->code : TL_EIO;
        tl_an_run_info_free(&ri);
        return r;
    }
    writer w = {f, 0};
    json_t *other = json_pack("{s:I, s:s, s:s, s:s, s:s}", "run_id", (json_int_t)run_id,
                              "experiment", ri.experiment, "policy", ri.policy, "kind", ri.kind,
                              "source", a->path);
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":", f);
    json_dumpf(other, f, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(other);
    fputs(",\"traceEvents\":[", f);
    for (int j = 0; j < ri.n_jobs; j++) {
        int pid = ri.job_ids[j] + 1;
        char pn[300];
        snprintf(pn, sizeof pn, "job %d: %s (%s)", ri.job_ids[j], ri.names[j],
                 ri.inference[j] ? "inference" : "training");
        emit(&w, meta("process_name", pid, 0, "name", json_string(pn)));
        emit(&w, meta("process_sort_index", pid, 0, "sort_index", json_integer(ri.job_ids[j])));
    }
    size_t nk = 0;
    r = export_kernels(a, &w, run_id, &ri, &nk, err);
    for (int j = 0; j < ri.n_jobs && r == 0; j++) {
        int pid = ri.job_ids[j] + 1;
        if (ri.inference[j])
            r = export_requests(a, &w, run_id, pid, ri.job_ids[j], err);
        else if (a->has_iterations)
            r = export_iterations(a, &w, run_id, pid, ri.job_ids[j], err);
    }
    fputs("\n]}\n", f);
    if (r == 0 && nk == 0)
        r = tl_errf(err, TL_EMISSING,
                    "%s: run %lld has no kernel records (run tally-sim with --kernels)", a->path,
                    run_id);
    if (r == 0)
        r = tl_out_commit(f, err);
    else
        tl_out_discard(f); /* the temporary only */
    tl_an_run_info_free(&ri);
    return r;
}
