/* Running an experiment grid (see include/tally/sweep.h). */
#include "tally/sweep.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "tally/digest.h"
#include "tally/metrics.h"
#include "tally/results.h"
#include "tally/sim.h"
#include "tally/trace.h"
#include "tally/transform.h"

/* ---------- traces and arrival files, loaded once before any run ---------- */

typedef struct loaded_trace {
    char *path;
    int skip;
    bool graph;
    char *kernel;
    tl_trace trace;
} loaded_trace;

typedef struct loaded_arrivals {
    char *path;
    tl_ns *times;
    size_t n;
    tl_digest digest;  /* of the file's bytes, recorded with each run (runs.inputs) */
} loaded_arrivals;

typedef struct sweep_ctx {
    const tl_experiment *e;
    const tl_sweep_options *o;
    loaded_trace *traces;
    int n_traces;
    loaded_arrivals *arrivals;
    int n_arrivals;
    tl_run_item *items;
    size_t n_items;
    tl_results db;
} sweep_ctx;

/* One arrival time in seconds a line (decimal), sorted, from the run's start (the
 * warm-up included); blank lines and '#' comments are skipped. A line is read
 * whole however long it is, and a NUL byte (a binary file) is refused rather
 * than ending the line early. */
static int load_arrival_file(loaded_arrivals *a, const char *path, tl_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tl_errf(err, TL_EIO, "%s: cannot open the arrival file: %s", path, strerror(errno));
    a->path = tl_xstrdup(path);
    size_t cap = 0, line_cap = 0;
    char *line = NULL;
    ssize_t len;
    int lineno = 0, r = 0;
    tl_ns last = -1;
    tl_digest_init(&a->digest);
    while (r == 0 && (len = getline(&line, &line_cap, f)) >= 0) {
        lineno++;
        tl_digest_add(&a->digest, line, (size_t)len); /* every byte, comments included */
        if (memchr(line, '\0', (size_t)len)) {
            r = tl_errf(err, TL_EFORMAT, "%s:%d: a NUL byte: not a text file of arrival times",
                        path, lineno);
            break;
        }
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
            continue;
        char *end;
        double s = strtod(p, &end);
        /* strtod also reads hex ("0x1p-3"), "inf" and "nan": decimal only */
        bool decimal = strspn(p, "0123456789.eE+-") >= (size_t)(end - p);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (end == p || *end || !decimal || !isfinite(s) || s < 0 || s > 1e6) {
            size_t n = strcspn(p, "\r\n");
            r = tl_errf(err, TL_EFORMAT, "%s:%d: '%.*s%s' is not an arrival time in seconds from 0 "
                        "to 1e6", path, lineno, (int)(n > 40 ? 40 : n), p, n > 40 ? "..." : "");
            break;
        }
        tl_ns t = (tl_ns)llround(s * 1e9);
        if (t < last) {
            r = tl_errf(err, TL_EFORMAT, "%s:%d: arrival times must be sorted", path, lineno);
            break;
        }
        last = t;
        if (a->n == cap) {
            cap = cap ? cap * 2 : 256;
            a->times = tl_xrealloc(a->times, cap * sizeof *a->times);
        }
        a->times[a->n++] = t;
    }
    /* a folder opens but does not read (EISDIR) */
    if (r == 0 && ferror(f))
        r = tl_errf(err, TL_EIO, "%s: cannot read the arrival file: %s", path, strerror(errno));
    free(line);
    fclose(f);
    if (r == 0 && a->n == 0)
        r = tl_errf(err, TL_EFORMAT, "%s: no arrival times", path);
    return r;
}

/* How graph jobs' iterations are launched (the GPU's defaults, or the
 * experiment's sim_params): graph jobs' solo capacity counts the graph gap
 * (graph_capacity_gap_ns instead where set), the simulated host waits out the
 * graph launch call; on the hardware the real call takes its time, so the
 * host adds none. Parameters that do not parse leave the defaults here; the
 * device refuses them later. */
static tl_graph_launch graph_launch_of(const tl_experiment *e)
{
    tl_sim_params p;
    tl_sim_params_default(&p, &e->gpu);
    tl_err ignored;
    if (tl_sim_params_apply(&p, e->sim_params, &ignored) < 0)
        tl_sim_params_default(&p, &e->gpu);
    tl_graph_launch g = tl_sim_params_graph_launch(&p);
    if (e->graph_capacity_gap_ns > 0)
        g.gap_ns = e->graph_capacity_gap_ns;
    if (e->hardware)
        g.launch_ns = g.node_ns = 0;
    return g;
}


static int load_inputs(sweep_ctx *c, tl_err *err)
{
    const tl_experiment *e = c->e;
    for (int s = 0; s < e->n_sets; s++)
        for (int j = 0; j < e->sets[s].n_jobs; j++) {
            const tl_job_conf *jc = &e->sets[s].jobs[j];
            bool have = false;
            for (int i = 0; i < c->n_traces && !have; i++)
                have = !strcmp(c->traces[i].path, jc->trace_path) && c->traces[i].skip == jc->skip_iterations &&
                       c->traces[i].graph == jc->graph &&
                       !strcmp(c->traces[i].kernel ? c->traces[i].kernel : "",
                               jc->iteration_kernel ? jc->iteration_kernel : "");
            if (!have) {
                c->traces = tl_xrealloc(c->traces, (size_t)(c->n_traces + 1) * sizeof *c->traces);
                loaded_trace *lt = &c->traces[c->n_traces++];
                memset(lt, 0, sizeof *lt);
                lt->path = tl_xstrdup(jc->trace_path);
                lt->skip = jc->skip_iterations;
                lt->graph = jc->graph;
                lt->kernel = jc->iteration_kernel ? tl_xstrdup(jc->iteration_kernel) : NULL;
                tl_trace_init(&lt->trace);
                tl_trace_options to = { .skip_iterations = jc->skip_iterations,
                                        .iteration_start_kernel = jc->iteration_kernel };
                int r = tl_trace_load(&lt->trace, jc->trace_path, &to, err);
                if (r < 0)
                    return r;
                if (jc->graph) {
                    tl_graph_launch gl = graph_launch_of(e);
                    tl_trace_as_graph(&lt->trace, &gl);
                }
                if (lt->trace.n_iters == 0)
                    return tl_errf(err, TL_EFORMAT, "%s: no iterations left (skip_iterations too large?)",
                                   jc->trace_path);
                if ((r = tl_trace_check_replayable(&lt->trace, &e->gpu, err)) < 0)
                    return r;
            }
            if (jc->arrival == TL_ARRIVAL_FILE) {
                bool got = false;
                for (int i = 0; i < c->n_arrivals && !got; i++)
                    got = !strcmp(c->arrivals[i].path, jc->arrival_path);
                if (!got) {
                    c->arrivals = tl_xrealloc(c->arrivals, (size_t)(c->n_arrivals + 1) * sizeof *c->arrivals);
                    loaded_arrivals *a = &c->arrivals[c->n_arrivals++];
                    memset(a, 0, sizeof *a);
                    int r = load_arrival_file(a, jc->arrival_path, err);
                    if (r < 0)
                        return r;
                    /* Only arrivals inside the window are requests that count:
                     * a file wholly outside it measures nothing (0 requests). */
                    tl_ns from = e->warmup_ns, to = e->warmup_ns + e->duration_ns;
                    bool inside = false;
                    for (size_t k = 0; k < a->n && !inside; k++)
                        inside = a->times[k] >= from && a->times[k] < to;
                    if (!inside)
                        return tl_errf(err, TL_ERANGE, "%s: none of its %zu arrival times falls in the "
                                       "measured window, %g s to %g s after the run's start (the "
                                       "warm-up included)", jc->arrival_path, a->n, from / 1e9, to / 1e9);
                }
            }
        }
    return 0;
}

static const tl_trace *find_trace(const sweep_ctx *c, const tl_job_conf *jc)
{
    for (int i = 0; i < c->n_traces; i++)
        if (!strcmp(c->traces[i].path, jc->trace_path) && c->traces[i].skip == jc->skip_iterations &&
            c->traces[i].graph == jc->graph &&
            !strcmp(c->traces[i].kernel ? c->traces[i].kernel : "",
                    jc->iteration_kernel ? jc->iteration_kernel : ""))
            return &c->traces[i].trace;
    return NULL;
}

static const loaded_arrivals *find_arrivals(const sweep_ctx *c, const char *path)
{
    for (int i = 0; i < c->n_arrivals; i++)
        if (!strcmp(c->arrivals[i].path, path))
            return &c->arrivals[i];
    return NULL;
}

/* What the jobs of run it read (confs: tl_item_job_confs of it), for runs.inputs. */
static void item_inputs(const sweep_ctx *c, const tl_job_conf *confs, int n, tl_job_inputs *in)
{
    for (int j = 0; j < n; j++) {
        const tl_trace *t = find_trace(c, &confs[j]);
        const loaded_arrivals *a = confs[j].arrival == TL_ARRIVAL_FILE
                                       ? find_arrivals(c, confs[j].arrival_path) : NULL;
        in[j].trace = t ? &t->digest : NULL;
        in[j].arrivals = a ? &a->digest : NULL;
    }
}

static void free_inputs(sweep_ctx *c)
{
    for (int i = 0; i < c->n_traces; i++) {
        free(c->traces[i].path);
        free(c->traces[i].kernel);
        tl_trace_close(&c->traces[i].trace);
    }
    free(c->traces);
    for (int i = 0; i < c->n_arrivals; i++) {
        free(c->arrivals[i].path);
        free(c->arrivals[i].times);
    }
    free(c->arrivals);
}

/* ---------- one run ---------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The device's own figures of a run (tl_dev_run_metrics), kept until the run
 * is written: as many as it gives (a fixed cap of 32 once dropped tally-run's
 * last ones silently, when the GPU clock figures came). */
typedef struct device_figures {
    int n, cap;
    char **names;
    double *values;
} device_figures;

static void keep_figure(void *arg, const char *name, double value)
{
    device_figures *f = arg;
    if (!name || !*name)
        return;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 32;
        f->names = tl_xrealloc(f->names, (size_t)f->cap * sizeof *f->names);
        f->values = tl_xrealloc(f->values, (size_t)f->cap * sizeof *f->values);
    }
    f->names[f->n] = tl_xstrdup(name);
    f->values[f->n++] = value;
}

static void figures_free(device_figures *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    free(f->values);
}

static double figure(const device_figures *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name))
            return f->values[i];
    return NAN;
}

/* A hardware run whose inference had TL_SLOW_WARN or more slow phases was
 * probably slowed by something outside the experiment (the policies make
 * none or one): say so, with the GPU's SM clock over the run where the device
 * sampled it, so that the user can tell a clock dip from other interference. */
static void warn_slowed(const tl_run_item *it, const tl_policy_ops *ops, bool shared, const tl_job_conf *confs,
                        const tl_job_metrics *m, int n, const device_figures *figs)
{
    for (int j = 0; j < n; j++) {
        if (confs[j].role != TL_ROLE_INFERENCE || !(m[j].slow_phases >= TL_SLOW_WARN))
            continue;
        double lo = figure(figs, "gpu_sm_mhz_min"), hi = figure(figs, "gpu_sm_mhz_max");
        fprintf(stderr, "tally: warning: run %.12s (%s): %s had %.0f slow phases (%d or more requests in a row "
                        "each served in over %.1fx the median): something outside the experiment may have "
                        "slowed the GPU or the host",
                it->key, shared ? ops->name : "alone", confs[j].name, m[j].slow_phases, TL_SLOW_RUN,
                TL_SLOW_FACTOR);
        if (isfinite(lo) && isfinite(hi))
            fprintf(stderr, "; the SM clock was %.0f-%.0f MHz", lo, hi);
        fputc('\n', stderr);
    }
}

static int run_item(sweep_ctx *c, const tl_run_item *it, tl_err *err)
{
    const tl_experiment *e = c->e;
    tl_job_conf confs[64];
    tl_job_spec specs[64];
    int n = 0;
    tl_item_job_confs(e, it, confs, &n);
    memset(specs, 0, sizeof specs);
    for (int j = 0; j < n; j++) {
        const tl_job_conf *jc = &confs[j];
        tl_job_spec *s = &specs[j];
        s->name = jc->name;
        s->trace = find_trace(c, jc);
        s->role = jc->role;
        s->priority = jc->priority;
        s->slo_ns = jc->slo_ns;
        s->arrival = jc->arrival;
        s->rate = jc->rate;
        s->load = jc->load;
        if (jc->arrival == TL_ARRIVAL_FILE) {
            const loaded_arrivals *a = find_arrivals(c, jc->arrival_path);
            s->arrival_times = a->times;
            s->n_arrival_times = a->n;
        }
        s->sm_percent = jc->sm_percent;
        s->model_bytes = jc->model_bytes;
        /* The job's position in its set: the same arrivals alone and shared. */
        s->rng_stream = (uint32_t)(it->alone_job >= 0 ? it->alone_job : j);
    }
    const tl_policy_conf *pc = it->policy >= 0 ? &e->policies[it->policy] : NULL;
    const tl_policy_ops *ops = pc ? pc->ops : tl_policy_find("time-slicing");
    if (!ops)
        ops = tl_policy_all()[0];
    tl_run_config cfg = { .jobs = specs, .n_jobs = n, .policy = ops,
                          .policy_params = pc ? pc->params : NULL,
                          .duration_ns = e->duration_ns, .warmup_ns = e->warmup_ns,
                          .seed = it->seed, .record_kernels = e->record_kernels };
    tl_device dev;
    memset(&dev, 0, sizeof dev);
    int r = c->o->open_device(c->o->device_arg, &dev, &e->gpu, err);
    if (r < 0)
        return r;
    tl_run_result res;
    double t0 = now_s();
    r = tl_run(&cfg, &dev, &res, err);
    if (r < 0 && !pc) { /* an alone run borrows time-slicing: say which run it was */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        tl_errf(err, r, "the alone run of job %s: %s", n ? confs[0].name : "?", msg);
    }
    double wall = now_s() - t0;
    uint64_t events = 0;
    if (r == 0 && !strcmp(dev.ops->name, "sim")) {
        tl_sim_stats st;
        tl_sim_get_stats(&dev, &st);
        events = st.events;
        if (c->o->stats) {
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            double sim_s = (double)(e->duration_ns + e->warmup_ns) / 1e9;
            fprintf(stderr,
                    "{\"run_key\":\"%s\",\"policy\":\"%s\",\"wall_s\":%.6f,\"sim_s\":%.3f,"
                    "\"speedup\":%.1f,\"events\":%llu,\"kernels\":%llu,\"events_per_s\":%.0f,"
                    "\"events_per_kernel\":%.2f,\"block_groups\":%llu,\"peak_queue\":%zu,"
                    "\"maxrss_kb\":%ld}\n",
                    it->key, ops->name, wall, sim_s, wall > 0 ? sim_s / wall : 0,
                    (unsigned long long)st.events, (unsigned long long)st.kernels,
                    wall > 0 ? (double)st.events / wall : 0,
                    st.kernels ? (double)st.events / (double)st.kernels : 0,
                    (unsigned long long)st.block_groups, st.peak_queue, ru.ru_maxrss);
        }
    }
    device_figures figs = {0};
    if (r == 0)
        tl_dev_run_metrics(&dev, keep_figure, &figs);
    tl_dev_close(&dev);
    if (r < 0)
        return r;

    tl_job_metrics m[64];
    tl_metrics_compute(&res, &cfg, e->gpu.sms, m);
    if (c->o->kind && !strcmp(c->o->kind, "hw"))
        warn_slowed(it, ops, pc != NULL, confs, m, n, &figs);
    long long alone_ids[64];
    double util = 0;
    for (int j = 0; j < n; j++) {
        alone_ids[j] = -1;
        util += m[j].util;
        if (it->policy < 0)
            continue;
        char key[33];
        tl_item_alone_key(e, it, j, key);
        long long aid;
        int found = tl_results_has_run(&c->db, key, &aid, err);
        if (found < 0) {
            figures_free(&figs);
            tl_run_result_close(&res);
            return found;
        }
        if (found) {
            tl_job_metrics alone;
            if (tl_results_job_metrics(&c->db, aid, 0, &alone, err) == 0) {
                alone_ids[j] = aid;
                tl_metrics_relate(&m[j], &alone);
            }
        }
    }
    if (it->policy < 0) /* alone: relative to itself */
        for (int j = 0; j < n; j++)
            tl_metrics_relate(&m[j], &m[j]);
    char *params = pc && pc->params ? json_dumps(pc->params, JSON_SORT_KEYS | JSON_COMPACT)
                                    : tl_xstrdup("{}");
    char *config = json_dumps(it->config, JSON_SORT_KEYS | JSON_COMPACT);
    tl_job_inputs in[64];
    item_inputs(c, confs, n, in);
    char *inputs = tl_inputs_record(in, n);
    tl_run_record rec = {
        .run_key = it->key, .experiment = e->name, .kind = c->o->kind,
        .policy = pc ? ops->name : "alone", .policy_params = params, .gpu = e->gpu.name,
        .driver = c->o->driver, .clocks = c->o->clocks, .seed = it->seed,
        .repetition = it->repetition,
        .load = it->load >= 0 && (it->policy >= 0 || confs[0].role == TL_ROLE_INFERENCE)
                    ? e->loads[it->load] : NAN,
        .duration_ns = e->duration_ns, .warmup_ns = e->warmup_ns, .config = config,
        .inputs = inputs,
        .wall_s = wall, .events = events, .n_jobs = n, .jobs = confs, .alone_run_ids = alone_ids,
        .result = &res, .metrics = m, .system_throughput = tl_metrics_system_throughput(m, n),
        .system_util = util, .replace = c->o->force, .n_device_metrics = figs.n,
        .device_metric_names = (const char *const *)figs.names, .device_metric_values = figs.values,
    };
    r = tl_results_write_run(&c->db, &rec, NULL, err);
    if (r < 0 && !c->o->force) {
        /* Another sweep on this database (a second process, or a shard being
         * resumed) may have written the same run since we looked: the same
         * configuration and seed, so the same result. Keep theirs. */
        tl_err e2;
        if (tl_results_has_run(&c->db, it->key, NULL, &e2) == 1)
            r = 0;
    }
    figures_free(&figs);
    free(params);
    free(config);
    free(inputs);
    tl_run_result_close(&res);
    return r;
}

/* ---------- progress on stderr ---------- */

typedef struct progress {
    size_t done, total;
    double t0, last_print;
    bool quiet, tty;
} progress;

static void progress_show(progress *p, bool final)
{
    if (p->quiet || p->total == 0)
        return;
    double t = now_s(), el = t - p->t0;
    if (!final && !p->tty && t - p->last_print < 5.0)
        return; /* logs get a line every 5 s, terminals a live bar */
    p->last_print = t;
    double rate = el > 0 ? (double)p->done / el : 0;
    double left = rate > 0 ? (double)(p->total - p->done) / rate : 0;
    int width = 30, fill = (int)((double)width * (double)p->done / (double)p->total);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "%s[%s] %zu/%zu runs  %.2f runs/s  %02d:%02d left%s", p->tty ? "\r" : "", bar,
            p->done, p->total, rate, (int)(left / 60), (int)fmod(left, 60),
            p->tty && !final ? "" : "\n");
    fflush(stderr);
}

/* ---------- the worker pool ---------- */

typedef struct msg { int32_t worker, item, status; } msg;

static void worker_main(sweep_ctx *c, int in_fd, int out_fd, int id, pid_t parent)
{
    tl_err err = { 0 };
#ifdef __linux__
    /* A parent killed outright (kill -9) cannot tell its workers; without
     * this they finished their current run, minutes of CPU for nothing. A run
     * killed mid-way leaves its transaction uncommitted, so the database keeps
     * only complete runs, and a resumed sweep redoes the lost one. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* it died before the call */
        _exit(EX_SOFTWARE);
#else
    (void)parent;
#endif
    if (tl_results_open(&c->db, c->o->db_path, &err) < 0) {
        fprintf(stderr, "tally: worker %d: %s\n", id, err.msg);
        _exit(EX_CANTCREAT);
    }
    int32_t idx;
    while (read(in_fd, &idx, sizeof idx) == (ssize_t)sizeof idx && idx >= 0) {
        int r = run_item(c, &c->items[idx], &err);
        if (r < 0)
            fprintf(stderr, "tally: run %s: %s\n", c->items[idx].key, err.msg);
        msg m = { id, idx, r };
        if (write(out_fd, &m, sizeof m) != (ssize_t)sizeof m)
            break;
    }
    tl_results_close(&c->db);
    _exit(0);
}

/* Reap workers that ended; a worker that ended during a run is an error.
 * Returns how many runs were lost with them. */
static size_t reap_dead(sweep_ctx *c, pid_t *pids, int32_t *busy, int workers, bool block,
                        int *first_error, tl_err *err)
{
    size_t lost = 0;
    for (int w = 0; w < workers; w++) {
        int st;
        if (pids[w] <= 0 || waitpid(pids[w], &st, block ? 0 : WNOHANG) != pids[w])
            continue;
        pids[w] = -1;
        if (busy[w] < 0)
            continue;
        if (!*first_error)
            *first_error = tl_errf(err, TL_EINVAL, "sweep worker %d died (%s %d) during run %s", w,
                                   WIFSIGNALED(st) ? "signal" : "exit status",
                                   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
                                   c->items[busy[w]].key);
        busy[w] = -1;
        lost++;
    }
    return lost;
}

/* Run items idx[0..n) with 'workers' processes; returns the first error. */
static int run_pool(sweep_ctx *c, const size_t *idx, size_t n, int workers, progress *pg,
                    tl_err *err)
{
    if (n == 0)
        return 0;
    if (workers <= 1 || n == 1) {
        for (size_t i = 0; i < n; i++) {
            int r = run_item(c, &c->items[idx[i]], err);
            if (r < 0)
                return r;
            pg->done++;
            progress_show(pg, false);
        }
        return 0;
    }
    if ((size_t)workers > n)
        workers = (int)n;
    int back[2];
    if (pipe(back) < 0)
        return tl_errf(err, TL_EIO, "pipe: %s", strerror(errno));
    int *to = tl_xcalloc((size_t)workers, sizeof *to);
    pid_t *pids = tl_xcalloc((size_t)workers, sizeof *pids);
    tl_results_close(&c->db); /* never share a SQLite handle across fork */
    /* A crashed worker's pipe must give EPIPE here, not kill the parent. */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    fflush(NULL);
    pid_t self = getpid();
    for (int w = 0; w < workers; w++) {
        int fd[2];
        if (pipe(fd) < 0)
            return tl_errf(err, TL_EIO, "pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0)
            return tl_errf(err, TL_EIO, "fork: %s", strerror(errno));
        if (pid == 0) {
            close(fd[1]);
            close(back[0]);
            for (int k = 0; k < w; k++)
                close(to[k]);
            worker_main(c, fd[0], back[1], w, self);
        }
        close(fd[0]);
        to[w] = fd[1];
        pids[w] = pid;
    }
    close(back[1]);
    size_t next = 0, outstanding = 0;
    int first_error = 0;
    int32_t *busy = tl_xmalloc((size_t)workers * sizeof *busy); /* item each worker runs */
    for (int w = 0; w < workers; w++)
        busy[w] = -1;
    for (int w = 0; w < workers && next < n; w++, next++) {
        int32_t v = (int32_t)idx[next];
        if (write(to[w], &v, sizeof v) != (ssize_t)sizeof v) {
            first_error = tl_errf(err, TL_EIO, "cannot reach sweep worker %d", w);
            break;
        }
        busy[w] = v;
        outstanding++;
    }
    while (outstanding > 0) {
        msg m;
        /* Wait for a result, but look after the workers too: one killed by a
         * signal (a crash) never reports, and the others keep the pipe open. */
        struct pollfd pfd = { .fd = back[0], .events = POLLIN };
        int ready = poll(&pfd, 1, 200);
        if (ready == 0) {
            outstanding -= reap_dead(c, pids, busy, workers, false, &first_error, err);
            continue;
        }
        ssize_t got = ready > 0 ? read(back[0], &m, sizeof m) : -1;
        if (got != (ssize_t)sizeof m) {
            if (ready < 0 && errno == EINTR)
                continue;
            /* every worker closed the pipe: they are gone; say how */
            outstanding -= reap_dead(c, pids, busy, workers, true, &first_error, err);
            if (!first_error)
                first_error = tl_errf(err, TL_EINVAL, "the sweep workers ended without reporting");
            break;
        }
        outstanding--;
        busy[m.worker] = -1;
        pg->done++;
        progress_show(pg, false);
        if (m.status < 0 && !first_error)
            first_error = tl_errf(err, m.status, "run %s failed (see the message above)",
                                  c->items[m.item].key);
        if (!first_error && next < n) {
            int32_t v = (int32_t)idx[next++];
            if (write(to[m.worker], &v, sizeof v) == (ssize_t)sizeof v) {
                outstanding++;
                busy[m.worker] = v;
            }
        }
    }
    for (int w = 0; w < workers; w++) {
        int32_t stop = -1;
        if (write(to[w], &stop, sizeof stop) < 0) { /* worker already gone */ }
        close(to[w]);
    }
    for (int w = 0; w < workers; w++)
        if (pids[w] > 0)
            waitpid(pids[w], NULL, 0);
    close(back[0]);
    free(to);
    free(pids);
    free(busy);
    signal(SIGPIPE, old_pipe);
    tl_err e2 = { 0 };
    int r = tl_results_open(&c->db, c->o->db_path, &e2);
    if (r < 0 && !first_error) {
        *err = e2;
        first_error = r;
    }
    return first_error;
}

/* ---------- summary ---------- */

static double metric(sweep_ctx *c, long long run, int job, const char *name)
{
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(c->db.db, "SELECT value FROM metrics WHERE run_id=?1 AND job_id=?2 AND name=?3",
                           -1, &st, NULL) != SQLITE_OK)
        return NAN;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int(st, 2, job);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void fmt(char *buf, size_t n, double v, double scale, const char *f)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, f, v * scale);
}

/* Deterministic text: values come from the database, no wall-clock figures. */
static void print_summary(sweep_ctx *c, FILE *out)
{
    const tl_experiment *e = c->e;
    fprintf(out, "experiment %s  gpu %s  seed %llu  duration %.3f s  warm-up %.3f s\n", e->name,
            e->gpu.name, (unsigned long long)e->seed, (double)e->duration_ns / 1e9,
            (double)e->warmup_ns / 1e9);
    fprintf(out, "%-16s %5s %3s %-22s %-9s %9s %9s %9s %8s %10s %8s %6s %7s\n", "policy", "load",
            "rep", "job", "role", "p50_ms", "p99_ms", "p99_ovh%", "slo%", "thr/s", "thr_rel",
            "util%", "sys_thr");
    for (size_t i = 0; i < c->n_items; i++) {
        const tl_run_item *it = &c->items[i];
        long long run;
        tl_err err;
        if (tl_results_has_run(&c->db, it->key, &run, &err) != 1)
            continue;
        tl_job_conf confs[64];
        int n;
        tl_item_job_confs(e, it, confs, &n);
        double sys = metric(c, run, -1, "system_throughput");
        for (int j = 0; j < n; j++) {
            char p50[32], p99[32], ovh[32], slo[32], thr[32], rel[32], util[32], st[32], load[16];
            fmt(p50, sizeof p50, metric(c, run, j, "p50_ns"), 1e-6, "%.3f");
            fmt(p99, sizeof p99, metric(c, run, j, "p99_ns"), 1e-6, "%.3f");
            fmt(ovh, sizeof ovh, it->policy >= 0 ? metric(c, run, j, "p99_overhead") : NAN, 100, "%.1f");
            fmt(slo, sizeof slo, metric(c, run, j, "slo_attainment"), 100, "%.1f");
            fmt(thr, sizeof thr, metric(c, run, j, "throughput"), 1, "%.2f");
            fmt(rel, sizeof rel, metric(c, run, j, "throughput_rel"), 1, "%.3f");
            fmt(util, sizeof util, metric(c, run, j, "util"), 100, "%.1f");
            fmt(st, sizeof st, j == 0 && it->policy >= 0 ? sys : NAN, 1, "%.3f");
            fmt(load, sizeof load, it->load >= 0 ? e->loads[it->load] : NAN, 1, "%.2f");
            const char *pname = it->policy >= 0 ? e->policies[it->policy].ops->name : "alone";
            fprintf(out, "%-16s %5s %3d %-22.22s %-9s %9s %9s %9s %8s %10s %8s %6s %7s\n", pname,
                    load, it->repetition, confs[j].name, tl_role_name(confs[j].role), p50, p99, ovh,
                    slo, thr, rel, util, st);
        }
    }
}

/* A run is stored once per database, under the experiment that ran it: the
 * run key is its configuration and seed, not the experiment's name. A
 * shared run skipped because another experiment (a copy of the spec under a
 * new name) ran it keeps that name, and tally-plot --experiment of this one
 * left its policy out without a word (or found no runs at all). Alone runs
 * are shared on purpose: they are found by id, whatever their name. */
static void warn_foreign_runs(sweep_ctx *c, const bool *skipped)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db.db, "SELECT COALESCE(experiment, '') FROM runs WHERE run_key=?1 "
                                     "AND status='done'", -1, &st, NULL) != SQLITE_OK)
        return;
    size_t n = 0;
    char other[128] = "";
    for (size_t i = 0; i < c->n_items; i++) {
        if (!skipped[i] || c->items[i].policy < 0)
            continue;
        sqlite3_bind_text(st, 1, c->items[i].key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *x = (const char *)sqlite3_column_text(st, 0);
            if (x && strcmp(x, c->e->name) && !n++)
                snprintf(other, sizeof other, "%s", x);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (n)
        fprintf(stderr, "tally: warning: %zu shared run%s skipped %s stored under experiment '%s'%s "
                "(the same configuration and seed: a database keeps a run once), and tally-plot "
                "--experiment %s leaves %s out; give another --db to have %s under this name\n",
                n, n > 1 ? "s" : "", n > 1 ? "are" : "is", other, n > 1 ? " or another" : "",
                c->e->name, n > 1 ? "them" : "it", n > 1 ? "them" : "it");
}

/* The runs about to be reused (skipped[i]) against the files their jobs read
 * now. A run key names a trace by its path only (keys must stay as they are),
 * so a trace captured again or edited at the same path kept its runs, and the
 * sweep reported the old trace's results as the new one's. Refused before
 * anything runs, naming the file (TL_EFORMAT: the input is not what the
 * database holds results of, exit 65). Runs written before digests were
 * recorded are reused as they were, with a note. */
static int check_reused(sweep_ctx *c, const bool *skipped, tl_err *err)
{
    size_t changed = 0, unrecorded = 0;
    char what[1024] = "";
    for (size_t i = 0; i < c->n_items; i++) {
        if (!skipped[i])
            continue;
        char *rec;
        int have = tl_results_run_inputs(&c->db, c->items[i].key, &rec, err);
        if (have < 0)
            return have;
        tl_job_conf confs[64];
        tl_job_inputs in[64];
        int n, job;
        bool arrivals;
        char was[TL_DIGEST_TEXT], now[TL_DIGEST_TEXT];
        tl_item_job_confs(c->e, &c->items[i], confs, &n);
        item_inputs(c, confs, n, in);
        int k = have ? tl_inputs_compare(rec, in, n, &job, &arrivals, was) : TL_INPUTS_SAME;
        free(rec);
        if (k == TL_INPUTS_UNRECORDED)
            unrecorded++;
        if (k != TL_INPUTS_CHANGED || changed++)
            continue;
        tl_digest_text(arrivals ? in[job].arrivals : in[job].trace, now);
        snprintf(what, sizeof what, "%s (the %s of job %s) has changed since runs of it went into "
                 "%s (%s there, %s now)", arrivals ? confs[job].arrival_path : confs[job].trace_path,
                 arrivals ? "arrival file" : "trace", confs[job].name, c->o->db_path, was, now);
    }
    if (changed)
        return tl_errf(err, TL_EFORMAT, "%s: resuming would reuse %zu run%s of earlier inputs as "
                       "this sweep's. Give --force to run %s again, or another --db", what, changed,
                       changed > 1 ? "s" : "", changed > 1 ? "them" : "it");
    if (unrecorded)
        fprintf(stderr, "tally: note: %zu run%s in %s %s written by a Tally that recorded no "
                "digests of the traces: reused without checking that those files are unchanged\n",
                unrecorded, unrecorded > 1 ? "s" : "", c->o->db_path, unrecorded > 1 ? "were" : "was");
    return 0;
}

int tl_sweep_check_inputs(const tl_experiment *e, tl_err *err)
{
    sweep_ctx c = { .e = e };
    int r = load_inputs(&c, err);
    free_inputs(&c);
    return r;
}

int tl_sweep_run(const tl_experiment *e, const tl_sweep_options *o, FILE *summary, tl_err *err)
{
    sweep_ctx c = { .e = e, .o = o };
    int r = load_inputs(&c, err);
    if (r == 0)
        r = tl_experiment_expand(e, &c.items, &c.n_items, err);
    if (r == 0)
        r = tl_results_open(&c.db, o->db_path, err);
    if (r < 0) {
        free_inputs(&c);
        if (c.items)
            tl_run_items_free(c.items, c.n_items);
        return r;
    }
    fprintf(stderr, "tally: experiment %s: %zu runs, seed %llu, database %s\n", e->name, c.n_items,
            (unsigned long long)e->seed, o->db_label ? o->db_label : o->db_path);
    size_t *alone = tl_xcalloc(c.n_items + 1, sizeof *alone), *shared = tl_xcalloc(c.n_items + 1, sizeof *shared);
    size_t na = 0, ns = 0, skipped = 0;
    bool *was_there = tl_xcalloc(c.n_items + 1, sizeof *was_there);
    for (size_t i = 0; i < c.n_items && r == 0; i++) {
        int have = o->force ? 0 : tl_results_has_run(&c.db, c.items[i].key, NULL, err);
        if (have < 0)
            r = have;
        else if (have) {
            skipped++;
            was_there[i] = true;
        }
        else if (c.items[i].policy < 0)
            alone[na++] = i;
        else
            shared[ns++] = i;
    }
    if (r == 0 && skipped)
        r = check_reused(&c, was_there, err);
    if (r == 0 && skipped)
        fprintf(stderr, "tally: %zu runs already in %s: skipped (resume)\n", skipped, o->db_path);
    if (r == 0 && skipped)
        warn_foreign_runs(&c, was_there);
    free(was_there);
    progress pg = { .total = na + ns, .t0 = now_s(), .quiet = o->quiet, .tty = isatty(2) };
    if (r == 0)
        r = run_pool(&c, alone, na, o->workers, &pg, err);
    if (r == 0)
        r = run_pool(&c, shared, ns, o->workers, &pg, err);
    if (na + ns)
        progress_show(&pg, true);
    if (r == 0 && summary)
        print_summary(&c, summary);
    free(alone);
    free(shared);
    tl_results_close(&c.db);
    free_inputs(&c);
    tl_run_items_free(c.items, c.n_items);
    return r;
}

int tl_sweep_open_sim(void *experiment, tl_device *dev, const tl_gpu_props *gpu, tl_err *err)
{
    const tl_experiment *e = experiment;
    tl_sim_params p;
    tl_sim_params_default(&p, gpu);
    int r = tl_sim_params_apply(&p, e ? e->sim_params : NULL, err);
    return r < 0 ? r : tl_sim_open(dev, gpu, &p, err);
}

/* ---------- command-line overrides ---------- */

void tl_spec_overrides_init(tl_spec_overrides *o)
{
    memset(o, 0, sizeof *o);
    o->duration_s = o->warmup_s = -1;
    o->seed = -1;
}

/* Command-line text as a JSON string. jansson takes UTF-8 only: its NULL for
 * anything else made json_object_set_new drop the value, and the run went on
 * without it (a --gpu of other bytes ran the spec's GPU, such an arrivals path
 * a closed loop, such a name the trace's). */
static int cli_string(const char *what, const char *text, json_t **out, tl_err *err)
{
    *out = json_string(text);
    if (!*out)
        return tl_errf(err, TL_EUNKNOWN, "%s: '%s' is not UTF-8 text", what, text);
    return 0;
}

/* "trace=PATH,role=inference,load=0.5" -> a job object. Its mistakes are the
 * command line's: TL_EUNKNOWN (usage). */
static int job_from_text(const char *text, json_t **out, tl_err *err)
{
    json_t *job = json_object(), *arrival = NULL;
    char *copy = tl_xstrdup(text), *save = NULL;
    int r = 0;
    for (char *kv = strtok_r(copy, ",", &save); kv && r == 0; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            r = tl_errf(err, TL_EUNKNOWN, "--job '%s': '%s' is not KEY=VALUE", text, kv);
            break;
        }
        *eq = 0;
        const char *k = kv, *v = eq + 1;
        /* a key given twice is a mistake, as in a spec (JSON_REJECT_DUPLICATES);
         * the last one silently won */
        if (json_object_get(job, !strcmp(k, "skip") ? "skip_iterations" : k)) {
            r = tl_errf(err, TL_EUNKNOWN, "--job '%s': '%s' is given twice", text, k);
            break;
        }
        double num = 0;
        bool numeric = tl_parse_decimal(v, &num) == 0;
        json_t *str;
        char what[64];
        snprintf(what, sizeof what, "--job %s", k);
        if (!strcmp(k, "trace") || !strcmp(k, "role") || !strcmp(k, "name") ||
            !strcmp(k, "iteration_kernel")) {
            if (!*v) /* the spec loader's 'is empty' blamed the spec, or exited 65 */
                r = tl_errf(err, TL_EUNKNOWN, "--job '%s': %s is empty", text, k);
            else if ((r = cli_string(what, v, &str, err)) == 0)
                json_object_set_new(job, k, str);
        } else if (!strcmp(k, "priority") || !strcmp(k, "slo_ms") || !strcmp(k, "sm_percent") ||
                   !strcmp(k, "model_mb") || !strcmp(k, "skip")) {
            if (!numeric)
                r = tl_errf(err, TL_EUNKNOWN, "--job '%s': %s must be a number", text, k);
            else
                json_object_set_new(job, !strcmp(k, "skip") ? "skip_iterations" : k, json_real(num));
        } else if (!strcmp(k, "graph")) {
            if (strcmp(v, "0") && strcmp(v, "1"))
                r = tl_errf(err, TL_EUNKNOWN, "--job '%s': graph must be 0 or 1", text);
            else
                json_object_set_new(job, "graph", json_boolean(!strcmp(v, "1")));
        } else if (arrival && (!strcmp(k, "load") || !strcmp(k, "rate") || !strcmp(k, "arrivals"))) {
            r = tl_errf(err, TL_EUNKNOWN, "--job '%s': give one of load, rate and arrivals", text);
        } else if (!strcmp(k, "load") || !strcmp(k, "rate")) {
            if (!numeric || num <= 0)
                r = tl_errf(err, TL_EUNKNOWN, "--job '%s': %s must be a number > 0", text, k);
            else
                arrival = json_pack("{s:s, s:f}", "kind", "poisson", k, num);
        } else if (!strcmp(k, "arrivals")) {
            if (!*v)
                r = tl_errf(err, TL_EUNKNOWN, "--job '%s': %s is empty", text, k);
            else if ((r = cli_string(what, v, &str, err)) == 0)
                arrival = json_pack("{s:s, s:o}", "kind", "file", "path", str);
        } else {
            r = tl_errf(err, TL_EUNKNOWN, "--job '%s': unknown key '%s'", text, k);
        }
    }
    free(copy);
    /* the spec loader would say so too, but as a spec's missing field (exit 65) */
    if (r == 0 && !json_object_get(job, "trace"))
        r = tl_errf(err, TL_EUNKNOWN, "--job '%s': no trace=PATH", text);
    if (r == 0 && !json_object_get(job, "role"))
        r = tl_errf(err, TL_EUNKNOWN, "--job '%s': no role=inference or role=training", text);
    if (arrival)
        json_object_set_new(job, "arrival", arrival);
    if (r < 0) {
        json_decref(job);
        return r;
    }
    *out = job;
    return 0;
}

int tl_experiment_from_overrides(tl_experiment *e, const tl_spec_overrides *o, tl_err *err)
{
    json_t *root;
    const char *origin = o->spec_path ? o->spec_path : "command line";
    char *dir = NULL;
    if (o->spec_path) {
        json_error_t je;
        struct stat sb;
        if (stat(o->spec_path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return tl_errf(err, TL_EIO, "%s: is a folder, not a spec file", o->spec_path);
        root = json_load_file(o->spec_path, JSON_REJECT_DUPLICATES, &je);
        if (!root) {
            if (access(o->spec_path, R_OK) != 0)
                return tl_errf(err, TL_EIO, "%s: cannot read the spec: %s", o->spec_path, strerror(errno));
            return tl_errf(err, TL_EFORMAT, "%s:%d:%d: malformed JSON: %s", o->spec_path, je.line,
                           je.column, je.text);
        }
        if (!json_is_object(root)) {
            json_decref(root);
            return tl_errf(err, TL_EFORMAT, "%s: the spec must be a JSON object", o->spec_path);
        }
        dir = tl_xstrdup(o->spec_path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        else
            strcpy(dir, ".");
    } else {
        root = json_object();
        json_object_set_new(root, "name", json_string("cli"));
    }
    int r = 0;
    json_t *str;
    if (o->gpu && (r = cli_string("--gpu", o->gpu, &str, err)) == 0) {
        /* looked up here, once, into e: the spec loader keeps it (the spec's
         * own "gpu" is dropped), and would blame the spec file for the option */
        json_decref(str);
        tl_err gerr = { 0 };
        if (tl_gpu_lookup(o->gpu, &e->gpu, &gerr) < 0)
            r = tl_errf(err, TL_EUNKNOWN, "--%s", gerr.msg);
        json_object_del(root, "gpu");
    }
    if (r == 0 && o->spec_path && (o->n_policies || o->n_jobs) &&
        (r = tl_spec_check_replaced(root, o->n_policies > 0, o->n_jobs > 0, origin, dir, err)) < 0) {
        json_decref(root);
        free(dir);
        return r;
    }
    if (o->n_policies) {
        json_t *p = json_array();
        for (int i = 0; i < o->n_policies && r == 0; i++)
            if ((r = cli_string("--policy", o->policies[i], &str, err)) == 0)
                json_array_append_new(p, str);
        json_object_del(root, "policy");
        json_object_set_new(root, "policies", p);
    }
    if (o->n_jobs) {
        json_t *jobs = json_array();
        for (int i = 0; i < o->n_jobs && r == 0; i++) {
            json_t *j;
            r = job_from_text(o->jobs[i], &j, err);
            if (r == 0)
                json_array_append_new(jobs, j);
        }
        json_object_del(root, "job_sets");
        json_object_set_new(root, "jobs", jobs);
    }
    if (o->n_loads) /* set after the spec's jobs are known, as the option's */
        json_object_del(root, "loads");
    /* The options' ranges, checked here: the spec loader blamed the spec
     * file for them ('demo.json: duration_s 86401 must be in ...', exit 65). */
    bool duration = o->duration_s >= 0 || o->duration_s < -1, warmup = o->warmup_s >= 0 || o->warmup_s < -1;
    if (r == 0 && duration && !tl_spec_duration_ok(o->duration_s))
        r = tl_errf(err, TL_EUNKNOWN, "--duration: %g must be in (0, %d] seconds and at least 1 ns",
                    o->duration_s, TL_SPEC_MAX_SECONDS);
    if (r == 0 && warmup && !tl_spec_warmup_ok(o->warmup_s))
        r = tl_errf(err, TL_EUNKNOWN, "--warmup: %g must be in [0, %d] seconds", o->warmup_s,
                    TL_SPEC_MAX_SECONDS);
    if (duration)
        json_object_set_new(root, "duration_s", json_real(o->duration_s));
    if (warmup)
        json_object_set_new(root, "warmup_s", json_real(o->warmup_s));
    if (o->seed >= 0)
        json_object_set_new(root, "seed", json_integer(o->seed));
    if (o->repetitions > 0)
        json_object_set_new(root, "repetitions", json_integer(o->repetitions));
    if (o->kernels)
        json_object_set_new(root, "kernels", json_true());
    if (r == 0 && !o->spec_path && !o->n_jobs)
        r = tl_errf(err, TL_EUNKNOWN, "no experiment: give --spec FILE or at least one --job");
    if (r == 0 && !json_object_get(root, "policies") && !json_object_get(root, "policy"))
        /* a usage error on the command line, a missing field in a spec */
        r = tl_errf(err, o->spec_path ? TL_EMISSING : TL_EUNKNOWN,
                    "%s: no policy: give --policy NAME (tally-sim --list-policies)", origin);
    if (r == 0)
        r = tl_experiment_from_json(e, root, origin, dir, err);
    if (r == 0 && o->n_loads)
        r = tl_experiment_set_loads(e, o->loads, o->n_loads, err);
    for (int i = 0; i < o->n_sim_params && r == 0; i++) /* on top of the spec's */
        r = tl_experiment_set_sim_param(e, o->sim_params[i], err);
    if (r == 0 && o->spec_path)
        e->path = tl_xstrdup(o->spec_path);
    json_decref(root);
    free(dir);
    return r;
}
