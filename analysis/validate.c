/* Validation: match simulated and hardware runs of one spec, average them per
 * policy, job set and load, and compare the rankings of policies
 * (include/tally/validate.h). */
#include "tally/validate.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "tally/metrics.h"
#include "tally/rng.h"

/* ---------- one run, as read from a database ---------- */

typedef struct vjob {
    int job_id;
    char *name, *role;
    int priority;
    bool has_alone;
    long long alone_run_id;
    double v[TL_M_COUNT];
    bool has[TL_M_COUNT];
    bool grows;      /* inference: its queue grows through the run */
    double p99_lo, p99_hi; /* inference, hardware runs: tl_val_p99_range (else NaN) */
    int slow;        /* inference: tl_slow_phases; -1 unknown */
    bool recounted;  /* inference: throughput counted from its requests (load_growth) */
} vjob;

typedef struct vrun {
    long long id;
    char *experiment, *policy, *params, *gpu;
    bool has_load;
    double load;
    char *key;       /* canonical config, device fields dropped */
    char *sim_params;/* the config's simulator parameters ("" none) */
    char *jobsig;
    vjob *jobs;
    int n_jobs;
    double sys;      /* system throughput, NaN unknown */
    long long window_end; /* warm-up + duration (ns): the measured window's end, 0 unknown */
    long long window_ns;  /* duration (ns): the measured window's length, 0 unknown */
    bool used;       /* matched already */
} vrun;

typedef struct vdb {
    vrun *runs;
    size_t n;
} vdb;

static void vdb_free(vdb *d)
{
    for (size_t i = 0; i < d->n; i++) {
        vrun *r = &d->runs[i];
        free(r->experiment);
        free(r->policy);
        free(r->params);
        free(r->gpu);
        free(r->key);
        free(r->sim_params);
        free(r->jobsig);
        for (int j = 0; j < r->n_jobs; j++) {
            free(r->jobs[j].name);
            free(r->jobs[j].role);
        }
        free(r->jobs);
    }
    free(d->runs);
    memset(d, 0, sizeof *d);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void strip_path(json_t *obj, const char *field)
{
    json_t *s = json_object_get(obj, field);
    if (json_is_string(s)) {
        char *b = tl_xstrdup(base_name(json_string_value(s)));
        json_object_set_new(obj, field, json_string(b));
        free(b);
    }
}

/* The config with what names the device (and the simulator's parameters)
 * dropped and paths cut to file names;
 * NULL if it is not a JSON object. */
static char *canonical_config(const char *config)
{
    if (!config)
        return NULL;
    json_t *c = json_loads(config, 0, NULL);
    if (!json_is_object(c)) {
        json_decref(c);
        return NULL;
    }
    json_object_del(c, "kind");
    json_object_del(c, "gpu");
    json_object_del(c, "kernels");
    json_object_del(c, "sim_params"); /* the simulator's knobs: the same run on hardware */
    json_object_del(c, "sim_model");  /* and its revision */
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(c, "jobs"), i, job) {
        if (!json_is_object(job))
            continue;
        strip_path(job, "trace");
        strip_path(json_object_get(job, "arrival"), "path");
    }
    char *s = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(c);
    return s;
}

/* The run config's "sim_params" string ("KEY=VALUE;..."), "" if none. */
static char *config_sim_params(const char *config)
{
    json_t *c = config ? json_loads(config, 0, NULL) : NULL;
    const char *sp = json_string_value(json_object_get(c, "sim_params"));
    char *out = tl_xstrdup(sp ? sp : "");
    json_decref(c);
    return out;
}

static int metric_index(const char *name)
{
    for (int m = 0; m < TL_M_COUNT; m++)
        if (!strcmp(name, tl_metric_name((tl_metric)m)))
            return m;
    return -1;
}

static char *text_col(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return tl_xstrdup(s ? (const char *)s : "");
}

/* The median of v[from, from + q) (copied: v stays in arrival order). */
static double quarter_median(const double *v, size_t from, size_t q)
{
    double *tmp = tl_xmalloc(q * sizeof *tmp);
    memcpy(tmp, v + from, q * sizeof *tmp);
    double m = tl_median(tmp, q);
    free(tmp);
    return m;
}

bool tl_val_queue_grows(const double *arrival, const double *lat, size_t n, size_t unfinished)
{
    if (n + unfinished > 0 && (double)unfinished > TL_VAL_UNFINISHED * (double)(n + unfinished))
        return true;
    if (n < 8)
        return false;
    size_t q = n / 4;
    double dt = quarter_median(arrival, n - q, q) - quarter_median(arrival, 0, q);
    double dl = quarter_median(lat, n - q, q) - quarter_median(lat, 0, q);
    return dt > 0 && dl > TL_VAL_GROWTH * dt;
}

/* The k-th smallest (0-based) of v[0..n), v reordered (Wirth's selection). */
static double select_kth(double *v, size_t n, size_t k)
{
    long l = 0, m = (long)n - 1, kk = (long)k;
    while (l < m) {
        double x = v[kk];
        long i = l, j = m;
        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk)
            l = i;
        if (kk < i)
            m = j;
    }
    return v[kk];
}

void tl_val_p99_range(const double *arrival, const double *lat, size_t n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n == 0)
        return;
    /* windows: [start[w], start[w + 1]) index ranges of consecutive arrivals */
    size_t *start = tl_xmalloc((n + 1) * sizeof *start);
    size_t nw = 0;
    double w0 = arrival[0];
    for (size_t i = 0; i < n; i++)
        if (i == 0 || floor((arrival[i] - w0) / TL_VAL_WINDOW_NS) !=
                          floor((arrival[i - 1] - w0) / TL_VAL_WINDOW_NS))
            start[nw++] = i;
    start[nw] = n;
    if (nw >= TL_VAL_MIN_WINDOWS) {
        tl_rng rng;
        tl_rng_init(&rng, 1);
        double *buf = tl_xmalloc(n * TL_VAL_MIN_WINDOWS * sizeof *buf);
        size_t cap = n * TL_VAL_MIN_WINDOWS;
        double p99s[TL_VAL_RESAMPLES];
        for (int b = 0; b < TL_VAL_RESAMPLES; b++) {
            size_t m = 0;
            for (size_t k = 0; k < nw; k++) {
                size_t w = (size_t)(tl_rng_uniform(&rng) * (double)nw);
                size_t len = start[w + 1] - start[w];
                if (m + len > cap) {
                    cap = 2 * (m + len);
                    buf = tl_xrealloc(buf, cap * sizeof *buf);
                }
                memcpy(buf + m, lat + start[w], len * sizeof *buf);
                m += len;
            }
            size_t rank = (size_t)ceil(0.99 * (double)m); /* nearest rank, as tl_percentile */
            p99s[b] = select_kth(buf, m, rank > 0 ? rank - 1 : 0);
        }
        free(buf);
        tl_sort_doubles(p99s, TL_VAL_RESAMPLES);
        *lo = tl_percentile(p99s, TL_VAL_RESAMPLES, 0.05);
        *hi = tl_percentile(p99s, TL_VAL_RESAMPLES, 0.95);
    }
    free(start);
}

/* tl_val_queue_grows of an inference job of run r, from its requests, and
 * tl_slow_phases of those that ended inside the measured window; with
 * range, also tl_val_p99_range. */
static int load_growth(tl_analysis *a, const vrun *r, vjob *j, bool range, tl_err *err)
{
    sqlite3_stmt *st;
    int rc = tl_an_prepare(a,
                           "SELECT end_ns IS NULL, COALESCE(latency_ns, 0), COALESCE(arrival_ns, 0), "
                           "start_ns, end_ns FROM requests "
                           "WHERE run_id=?1 AND job_id=?2 ORDER BY arrival_ns, req_id",
                           &st, err);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int(st, 2, j->job_id);
    double *lat = NULL, *arr = NULL, *svc = NULL, svc_sum = 0;
    size_t n = 0, cap = 0, unfinished = 0, svc_n = 0, served = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int(st, 0)) {
            unfinished++;
            continue;
        }
        long long end = sqlite3_column_int64(st, 4);
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            lat = tl_xrealloc(lat, cap * sizeof *lat);
            arr = tl_xrealloc(arr, cap * sizeof *arr);
            svc = tl_xrealloc(svc, cap * sizeof *svc);
        }
        served += r->window_end > 0 && end < r->window_end;
        if (r->window_end > 0 && end < r->window_end && sqlite3_column_type(st, 3) != SQLITE_NULL) {
            svc[svc_n] = (double)end - (double)sqlite3_column_int64(st, 3); /* any values: no overflow */
            svc_sum += svc[svc_n++];
        }
        lat[n] = sqlite3_column_double(st, 1);
        arr[n++] = sqlite3_column_double(st, 2);
    }
    if (s != SQLITE_DONE)
        rc = tl_errf(err, TL_EDB, "%s: reading requests: %s", a->path, sqlite3_errmsg(a->db));
    sqlite3_finalize(st);
    if (rc == 0)
        j->grows = tl_val_queue_grows(arr, lat, n, unfinished);
    /* The service time compared is that of the requests served inside the measured
     * window, beside the other jobs: after it the run drains with no new training
     * steps, and a grown queue's requests then run alone, which hid a 17% error under
     * MPS beside ViT-B/16 in the all-requests mean (session 17). */
    if (rc == 0 && svc_n > 0) {
        j->v[TL_M_MEAN_SERVICE] = svc_sum / (double)svc_n;
        j->has[TL_M_MEAN_SERVICE] = true;
        j->slow = tl_slow_phases(svc, svc_n);
    }
    /* Throughput as model revision 22 defines it (include/tally/metrics.h): the
     * requests served inside the window. Databases written before it counted
     * every request that arrived, however late it ended (a growing queue's
     * offered rate); recounted here, both worlds compare one definition. The
     * relative figures follow (fill_derived). */
    if (rc == 0 && r->window_end > 0 && r->window_ns > 0 && n + unfinished > 0) {
        j->v[TL_M_THROUGHPUT] = (double)served / ((double)r->window_ns / 1e9);
        j->has[TL_M_THROUGHPUT] = true;
        j->recounted = true;
    }
    j->p99_lo = j->p99_hi = NAN;
    if (rc == 0 && range)
        tl_val_p99_range(arr, lat, n, &j->p99_lo, &j->p99_hi);
    free(lat);
    free(arr);
    free(svc);
    return rc;
}

static int load_jobs(tl_analysis *a, vrun *r, bool range, tl_err *err)
{
    sqlite3_stmt *st;
    int rc = tl_an_prepare(a,
                           "SELECT job_id, name, role, priority, alone_run_id FROM jobs "
                           "WHERE run_id=?1 ORDER BY job_id",
                           &st, err);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, r->id);
    int cap = 0;
    tl_sbuf sig = {0};
    tl_sbuf_printf(&sig, "%s", "");
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (r->n_jobs == cap) {
            cap = cap ? cap * 2 : 4;
            r->jobs = tl_xrealloc(r->jobs, (size_t)cap * sizeof *r->jobs);
        }
        vjob *j = &r->jobs[r->n_jobs++];
        memset(j, 0, sizeof *j);
        j->p99_lo = j->p99_hi = NAN;
        j->slow = -1;
        j->job_id = sqlite3_column_int(st, 0);
        j->name = tl_an_clean_label((const char *)sqlite3_column_text(st, 1));
        j->role = tl_an_clean_label((const char *)sqlite3_column_text(st, 2));
        j->priority = sqlite3_column_int(st, 3);
        j->has_alone = sqlite3_column_type(st, 4) != SQLITE_NULL;
        j->alone_run_id = sqlite3_column_int64(st, 4);
        tl_sbuf_printf(&sig, "%s%s", r->n_jobs > 1 ? "+" : "", j->name);
    }
    sqlite3_finalize(st);
    r->jobsig = sig.s;

    rc = tl_an_prepare(a, "SELECT job_id, name, value FROM metrics WHERE run_id=?1", &st, err);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, r->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_double(st, 2);
        if (!name || sqlite3_column_type(st, 2) == SQLITE_NULL || !isfinite(v))
            continue;
        int job_id = sqlite3_column_int(st, 0);
        if (job_id == -1) {
            if (!strcmp(name, "system_throughput"))
                r->sys = v;
            continue;
        }
        int m = metric_index(name);
        for (int k = 0; m >= 0 && k < r->n_jobs; k++)
            if (r->jobs[k].job_id == job_id) {
                r->jobs[k].v[m] = v;
                r->jobs[k].has[m] = true;
            }
    }
    sqlite3_finalize(st);
    for (int k = 0; k < r->n_jobs; k++)
        if (!strcmp(r->jobs[k].role, "inference")) {
            rc = load_growth(a, r, &r->jobs[k], range, err);
            if (rc < 0)
                return rc;
        }
    return 0;
}

static vrun *find_run(vdb *d, long long id)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->runs[i].id == id)
            return &d->runs[i];
    return NULL;
}

/* A metric of a job in its alone run: the job of the same name there, or its
 * only job. */
static bool alone_value(vdb *d, const vjob *j, int m, double *out)
{
    vrun *a = j->has_alone ? find_run(d, j->alone_run_id) : NULL;
    if (!a)
        return false;
    for (int k = 0; k < a->n_jobs; k++)
        if ((!strcmp(a->jobs[k].name, j->name) || a->n_jobs == 1) && a->jobs[k].has[m] &&
            a->jobs[k].v[m] > 0) {
            *out = a->jobs[k].v[m];
            return true;
        }
    return false;
}

/* Relative metrics a writer left out, as results.h defines them. */
static void fill_derived(vdb *d)
{
    for (size_t i = 0; i < d->n; i++) {
        vrun *r = &d->runs[i];
        bool all_rel = r->n_jobs > 0;
        double sum = 0;
        for (int k = 0; k < r->n_jobs; k++) {
            vjob *j = &r->jobs[k];
            double base;
            if (!j->has[TL_M_P99_OVERHEAD] && j->has[TL_M_P99] &&
                alone_value(d, j, TL_M_P99, &base)) {
                j->v[TL_M_P99_OVERHEAD] = j->v[TL_M_P99] / base - 1.0;
                j->has[TL_M_P99_OVERHEAD] = true;
            }
            /* an inference job's throughput recounted from its requests
             * (load_growth): its relative figure, and the system's, again */
            if ((j->recounted || !j->has[TL_M_THROUGHPUT_REL]) && j->has[TL_M_THROUGHPUT] &&
                alone_value(d, j, TL_M_THROUGHPUT, &base)) {
                j->v[TL_M_THROUGHPUT_REL] = j->v[TL_M_THROUGHPUT] / base;
                j->has[TL_M_THROUGHPUT_REL] = true;
                if (j->recounted)
                    r->sys = NAN;
            }
            all_rel &= j->has[TL_M_THROUGHPUT_REL];
            sum += j->v[TL_M_THROUGHPUT_REL];
        }
        if (isnan(r->sys) && all_rel)
            r->sys = sum;
    }
}

static int load_db(tl_analysis *a, const char *kind, const char *experiment, vdb *d, tl_err *err)
{
    sqlite3_stmt *st;
    int rc = tl_an_prepare(a,
                           "SELECT run_id, COALESCE(experiment,''), policy, "
                           "COALESCE(policy_params,''), COALESCE(gpu,''), load, config, "
                           "COALESCE(warmup_ns, 0) + COALESCE(duration_ns, 0), "
                           "COALESCE(duration_ns, 0) FROM runs "
                           "WHERE COALESCE(status,'done')='done' AND kind=?1 "
                           "AND (?2 IS NULL OR experiment=?2) ORDER BY run_id",
                           &st, err);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    if (experiment)
        sqlite3_bind_text(st, 2, experiment, -1, SQLITE_STATIC);
    size_t cap = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        char *key = canonical_config((const char *)sqlite3_column_text(st, 6));
        if (!key)
            continue; /* no usable config: cannot be matched */
        if (d->n == cap) {
            cap = cap ? cap * 2 : 64;
            d->runs = tl_xrealloc(d->runs, cap * sizeof *d->runs);
        }
        vrun *r = &d->runs[d->n++];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(st, 0);
        r->experiment = tl_an_clean_label((const char *)sqlite3_column_text(st, 1));
        r->policy = tl_an_clean_label((const char *)sqlite3_column_text(st, 2));
        r->params = text_col(st, 3);
        if (!strcmp(r->params, "{}"))
            r->params[0] = '\0';
        r->gpu = text_col(st, 4);
        r->window_end = sqlite3_column_int64(st, 7);
        r->window_ns = sqlite3_column_int64(st, 8);
        r->has_load = sqlite3_column_type(st, 5) != SQLITE_NULL;
        r->load = sqlite3_column_double(st, 5);
        r->key = key;
        r->sim_params = config_sim_params((const char *)sqlite3_column_text(st, 6));
        r->sys = NAN;
    }
    if (s != SQLITE_DONE)
        rc = tl_errf(err, TL_EDB, "%s: reading runs: %s", a->path, sqlite3_errmsg(a->db));
    sqlite3_finalize(st);
    for (size_t i = 0; rc == 0 && i < d->n; i++)
        rc = load_jobs(a, &d->runs[i], !strcmp(kind, "hw"), err);
    if (rc == 0)
        fill_derived(d);
    return rc;
}

/* ---------- cells ---------- */

static bool same_cell(const tl_val_cell *c, const vrun *h)
{
    return !strcmp(c->experiment, h->experiment) && !strcmp(c->policy, h->policy) &&
           !strcmp(c->params, h->params) && c->has_load == h->has_load &&
           (!c->has_load || c->load == h->load) && !strcmp(c->jobsig, h->jobsig);
}

typedef struct cell_acc {
    double sum[2][64][TL_M_COUNT];
    int n[2][64][TL_M_COUNT];
    double sys_sum[2];
    int sys_n[2];
    double range_sum[64][2]; /* hardware p99 ranges (lo, hi) */
    int range_n[64];
    double slow_sum[2][64];  /* slow phases, per side (sim, hw) */
    int slow_n[2][64];
    size_t first;   /* order of appearance of the job set among the hw runs */
} cell_acc;

static bool is_alone(const tl_val_cell *c)
{
    return !strcmp(c->policy, "alone");
}

static void add_pair(tl_val_cell *c, cell_acc *acc, const vrun *s, const vrun *h, int src)
{
    c->sim_ids = tl_xrealloc(c->sim_ids, (size_t)(c->n_pairs + 1) * sizeof *c->sim_ids);
    c->hw_ids = tl_xrealloc(c->hw_ids, (size_t)(c->n_pairs + 1) * sizeof *c->hw_ids);
    c->src = tl_xrealloc(c->src, (size_t)(c->n_pairs + 1) * sizeof *c->src);
    c->sim_ids[c->n_pairs] = s->id;
    c->hw_ids[c->n_pairs] = h->id;
    c->src[c->n_pairs] = src;
    c->n_pairs++;
    const vrun *rr[2] = {s, h};
    for (int side = 0; side < 2; side++) {
        const vrun *r = rr[side];
        for (int j = 0; j < r->n_jobs && j < c->n_jobs && j < 64; j++) {
            if (r->jobs[j].grows)
                *(side ? &c->jobs[j].grows_hw : &c->jobs[j].grows_sim) = true;
            if (r->jobs[j].slow >= 0) {
                acc->slow_sum[side][j] += r->jobs[j].slow;
                acc->slow_n[side][j]++;
            }
            if (side && isfinite(r->jobs[j].p99_lo)) {
                acc->range_sum[j][0] += r->jobs[j].p99_lo;
                acc->range_sum[j][1] += r->jobs[j].p99_hi;
                acc->range_n[j]++;
            }
            for (int m = 0; m < TL_M_COUNT; m++)
                if (r->jobs[j].has[m]) {
                    acc->sum[side][j][m] += r->jobs[j].v[m];
                    acc->n[side][j][m]++;
                }
        }
        if (!isnan(r->sys)) {
            acc->sys_sum[side] += r->sys;
            acc->sys_n[side]++;
        }
    }
}

typedef struct cell_sort {
    tl_val_cell cell;
    size_t set_order, policy_order;
} cell_sort;

static int cmp_cells(const void *pa, const void *pb)
{
    const cell_sort *a = pa, *b = pb;
    int c = strcmp(a->cell.experiment, b->cell.experiment);
    if (c)
        return c;
    if (is_alone(&a->cell) != is_alone(&b->cell))
        return is_alone(&a->cell) ? -1 : 1;
    if (a->set_order != b->set_order)
        return a->set_order < b->set_order ? -1 : 1;
    if (a->cell.has_load != b->cell.has_load)
        return a->cell.has_load ? 1 : -1;
    if (a->cell.has_load && a->cell.load != b->cell.load)
        return a->cell.load < b->cell.load ? -1 : 1;
    if (a->policy_order != b->policy_order)
        return a->policy_order < b->policy_order ? -1 : 1;
    return strcmp(a->cell.params, b->cell.params);
}

static size_t first_index(const vdb *h, bool by_policy, const tl_val_cell *c)
{
    for (size_t i = 0; i < h->n; i++) {
        const vrun *r = &h->runs[i];
        if (by_policy ? !strcmp(r->policy, c->policy) : !strcmp(r->jobsig, c->jobsig))
            return i;
    }
    return h->n;
}

/* ---------- rankings ---------- */

double tl_kendall_tau_b(const double *x, const double *y, int n)
{
    if (n < 2)
        return NAN;
    double conc = 0, disc = 0, tx = 0, ty = 0, pairs = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double dx = x[i] - x[j], dy = y[i] - y[j];
            pairs++;
            if (dx == 0)
                tx++;
            if (dy == 0)
                ty++;
            if (dx * dy > 0)
                conc++;
            else if (dx * dy < 0)
                disc++;
        }
    double den = sqrt((pairs - tx) * (pairs - ty));
    return den > 0 ? (conc - disc) / den : NAN;
}

static void order_by(const double *v, char *const *names, int n, bool desc, int *out)
{
    for (int i = 0; i < n; i++)
        out[i] = i;
    /* insertion sort: a handful of policies, stable and without a context-less comparator */
    for (int i = 1; i < n; i++) {
        int k = out[i], j = i - 1;
        while (j >= 0) {
            double a = v[out[j]], b = v[k];
            bool after = desc ? a < b : a > b;
            if (!after && a == b)
                after = strcmp(names[out[j]], names[k]) > 0;
            if (!after)
                break;
            out[j + 1] = out[j];
            j--;
        }
        out[j + 1] = k;
    }
}

static char *cell_label(const tl_val_cell *c)
{
    tl_sbuf b = {0};
    tl_sbuf_printf(&b, "%s", c->policy);
    if (*c->params)
        tl_sbuf_printf(&b, " %s", c->params);
    return b.s;
}

static void cell_rank_values(const tl_val_cell *c, tl_val_rank_metric m, double *s, double *h)
{
    if (m == TL_VAL_RANK_P99_OVERHEAD) {
        *s = c->hp >= 0 ? c->jobs[c->hp].sim[TL_M_P99_OVERHEAD] : NAN;
        *h = c->hp >= 0 ? c->jobs[c->hp].hw[TL_M_P99_OVERHEAD] : NAN;
    } else {
        *s = c->sys_sim;
        *h = c->sys_hw;
    }
}

void tl_val_count_pairs(const double *sim, const double *hw, const bool *over, int n, double band,
                        int *separated, int *discordant)
{
    *separated = *discordant = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double dh = hw[i] - hw[j], ds = sim[i] - sim[j];
            if (!(fabs(dh) > band))
                continue; /* a tie on the hardware (or NaN) */
            if (over && over[i] && over[j])
                continue; /* both overloaded on the hardware */
            (*separated)++;
            if (!(ds * dh > 0))
                (*discordant)++;
        }
}

/* Takes names, s, h and over (may be NULL: none overloaded). */
static void add_ranking(tl_validation *v, const char *experiment, const char *scope,
                        tl_val_rank_metric m, char **names, double *s, double *h, bool *over, int n)
{
    if (n < 2) {
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        free(s);
        free(h);
        free(over);
        return;
    }
    v->ranks = tl_xrealloc(v->ranks, (v->n_ranks + 1) * sizeof *v->ranks);
    tl_val_ranking *r = &v->ranks[v->n_ranks++];
    memset(r, 0, sizeof *r);
    r->experiment = tl_xstrdup(experiment);
    r->scope = tl_xstrdup(scope);
    r->metric = m;
    r->n = n;
    r->policies = names;
    r->sim = s;
    r->hw = h;
    r->order_sim = tl_xcalloc((size_t)n, sizeof *r->order_sim);
    r->order_hw = tl_xcalloc((size_t)n, sizeof *r->order_hw);
    bool desc = m == TL_VAL_RANK_SYS_THROUGHPUT;
    order_by(s, names, n, desc, r->order_sim);
    order_by(h, names, n, desc, r->order_hw);
    r->same = true;
    for (int i = 0; i < n; i++)
        r->same &= r->order_sim[i] == r->order_hw[i];
    r->tau = tl_kendall_tau_b(s, h, n);
    double band = m == TL_VAL_RANK_SYS_THROUGHPUT ? TL_VAL_TIE_SYS : TL_VAL_TIE_P99;
    tl_val_count_pairs(s, h, NULL, n, band, &r->separated, &r->discordant);
    r->over_hw = over;
    tl_val_count_pairs(s, h, m == TL_VAL_RANK_P99_OVERHEAD ? over : NULL, n, band, &r->separated_ov,
                       &r->discordant_ov);
}

/* Rankings per job set and load, then over the mean of every job set (policies
 * present in all of them) when an experiment has several. */
static void make_rankings(tl_validation *v)
{
    for (size_t i = 0; i < v->n_cells; i++) {
        const tl_val_cell *c0 = &v->cells[i];
        if (is_alone(c0))
            continue;
        bool first = true; /* one ranking per (experiment, job set, load) */
        for (size_t k = 0; k < i && first; k++) {
            const tl_val_cell *p = &v->cells[k];
            first = is_alone(p) || strcmp(p->experiment, c0->experiment) ||
                    strcmp(p->jobsig, c0->jobsig) || p->has_load != c0->has_load ||
                    (p->has_load && p->load != c0->load);
        }
        if (!first)
            continue;
        tl_sbuf scope = {0};
        tl_sbuf_printf(&scope, "%s", c0->jobsig);
        if (c0->has_load)
            tl_sbuf_printf(&scope, " load %g", c0->load);
        for (int m = 0; m < TL_VAL_RANK_COUNT; m++) {
            char **names = tl_xcalloc(v->n_cells, sizeof *names);
            double *s = tl_xcalloc(v->n_cells, sizeof *s), *h = tl_xcalloc(v->n_cells, sizeof *h);
            bool *over = tl_xcalloc(v->n_cells, sizeof *over);
            int n = 0;
            for (size_t k = i; k < v->n_cells; k++) {
                const tl_val_cell *c = &v->cells[k];
                if (is_alone(c) || strcmp(c->experiment, c0->experiment) ||
                    strcmp(c->jobsig, c0->jobsig) || c->has_load != c0->has_load ||
                    (c->has_load && c->load != c0->load))
                    continue;
                cell_rank_values(c, (tl_val_rank_metric)m, &s[n], &h[n]);
                if (isnan(s[n]) || isnan(h[n]))
                    continue;
                over[n] = c->hp >= 0 && c->jobs[c->hp].grows_hw;
                names[n++] = cell_label(c);
            }
            add_ranking(v, c0->experiment, scope.s, (tl_val_rank_metric)m, names, s, h, over, n);
        }
        tl_sbuf_free(&scope);
    }
    /* over job sets: per experiment with two or more scopes, each policy's mean
     * over the scopes (only policies ranked in every one of them) */
    size_t n_scoped = v->n_ranks;
    for (size_t i = 0; i < n_scoped; i++) {
        const char *exp = v->ranks[i].experiment;
        bool first = true;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(v->ranks[k].experiment, exp) != 0;
        if (!first)
            continue;
        for (int m = 0; m < TL_VAL_RANK_COUNT; m++) {
            int scopes = 0;
            const tl_val_ranking *ref = NULL;
            for (size_t l = 0; l < n_scoped; l++)
                if (!strcmp(v->ranks[l].experiment, exp) && v->ranks[l].metric == (tl_val_rank_metric)m) {
                    scopes++;
                    if (!ref)
                        ref = &v->ranks[l];
                }
            if (scopes < 2)
                continue;
            char **names = tl_xcalloc((size_t)ref->n, sizeof *names);
            double *s = tl_xcalloc((size_t)ref->n, sizeof *s), *h = tl_xcalloc((size_t)ref->n, sizeof *h);
            bool *over = tl_xcalloc((size_t)ref->n, sizeof *over);
            int n = 0;
            for (int q = 0; q < ref->n; q++) {
                double ss = 0, hh = 0;
                int got = 0;
                bool ov = false; /* overloaded in any job set: the mean has no steady state either */
                for (size_t l = 0; l < n_scoped; l++) {
                    const tl_val_ranking *r = &v->ranks[l];
                    if (strcmp(r->experiment, exp) || r->metric != (tl_val_rank_metric)m)
                        continue;
                    for (int x = 0; x < r->n; x++)
                        if (!strcmp(r->policies[x], ref->policies[q])) {
                            ss += r->sim[x];
                            hh += r->hw[x];
                            ov |= r->over_hw && r->over_hw[x];
                            got++;
                            break;
                        }
                }
                if (got < scopes)
                    continue;
                s[n] = ss / got;
                h[n] = hh / got;
                over[n] = ov;
                names[n++] = tl_xstrdup(ref->policies[q]);
            }
            add_ranking(v, exp, "mean over job sets", (tl_val_rank_metric)m, names, s, h, over, n);
        }
    }
}

/* ---------- load ---------- */

/* Cells being built: one per policy, parameters, job set and load. */
typedef struct builder {
    cell_sort *cs;
    cell_acc **acc;
    size_t nc;
} builder;

static tl_val_cell *new_cell(builder *b, const vrun *h)
{
    b->cs = tl_xrealloc(b->cs, (b->nc + 1) * sizeof *b->cs);
    b->acc = tl_xrealloc(b->acc, (b->nc + 1) * sizeof *b->acc);
    b->acc[b->nc] = tl_xcalloc(1, sizeof **b->acc);
    tl_val_cell *c = &b->cs[b->nc++].cell;
    memset(c, 0, sizeof *c);
    c->experiment = tl_xstrdup(h->experiment);
    c->policy = tl_xstrdup(h->policy);
    c->params = tl_xstrdup(h->params);
    c->has_load = h->has_load;
    c->load = h->load;
    c->jobsig = tl_xstrdup(h->jobsig);
    c->n_jobs = h->n_jobs < 64 ? h->n_jobs : 64;
    c->jobs = tl_xcalloc(c->n_jobs ? (size_t)c->n_jobs : 1, sizeof *c->jobs);
    c->hp = -1;
    for (int j = 0; j < c->n_jobs; j++) {
        c->jobs[j].name = tl_xstrdup(h->jobs[j].name);
        c->jobs[j].role = tl_xstrdup(h->jobs[j].role);
        c->jobs[j].priority = h->jobs[j].priority;
        if (!strcmp(c->jobs[j].role, "inference") &&
            (c->hp < 0 || c->jobs[j].priority < c->jobs[c->hp].priority))
            c->hp = j;
    }
    return c;
}

/* Match the hardware runs of one source with its simulated runs and add the
 * pairs to their cells. */
static void match_source(tl_validation *v, builder *b, vdb *sim, vdb *hw, int src)
{
    tl_val_source *so = &v->sources[src];
    for (size_t i = 0; i < hw->n; i++) {
        vrun *h = &hw->runs[i];
        vrun *s = NULL;
        /* the same config; a run of the same experiment name first */
        for (int pass = 0; pass < 2 && !s; pass++)
            for (size_t k = 0; k < sim->n && !s; k++) {
                vrun *c = &sim->runs[k];
                if (!c->used && !strcmp(c->key, h->key) &&
                    (pass == 1 || !strcmp(c->experiment, h->experiment)) &&
                    c->n_jobs == h->n_jobs)
                    s = c;
            }
        if (!s)
            continue;
        s->used = true;
        if (!so->matched++)
            so->sim_params = tl_xstrdup(s->sim_params);
        if (!v->matched++) {
            v->hw_gpu = tl_xstrdup(h->gpu);
            v->sim_gpu = tl_xstrdup(s->gpu);
        }
        size_t ci = 0;
        while (ci < b->nc && !same_cell(&b->cs[ci].cell, h))
            ci++;
        tl_val_cell *c = ci < b->nc ? &b->cs[ci].cell : new_cell(b, h);
        add_pair(c, b->acc[ci], s, h, src);
    }
}

/* The order of first appearance among the hardware runs of every source, in
 * order. */
static size_t first_index_all(const vdb *hws, size_t n, bool by_policy, const tl_val_cell *c)
{
    size_t base = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = first_index(&hws[i], by_policy, c);
        if (k < hws[i].n)
            return base + k;
        base += hws[i].n;
    }
    return base;
}

/* Means over each cell's pairs, the cells in report order, the rankings. */
static void finish(tl_validation *v, builder *b, const vdb *hws, size_t n_src)
{
    cell_sort *cs = b->cs;
    size_t nc = b->nc;
    for (size_t i = 0; i < nc; i++) {
        tl_val_cell *c = &cs[i].cell;
        cell_acc *acc = b->acc[i];
        for (int j = 0; j < c->n_jobs; j++) {
            int nr = acc->range_n[j];
            c->jobs[j].p99_hw_lo = nr ? acc->range_sum[j][0] / nr : NAN;
            c->jobs[j].p99_hw_hi = nr ? acc->range_sum[j][1] / nr : NAN;
            int n0 = acc->slow_n[0][j], n1 = acc->slow_n[1][j];
            c->jobs[j].slow_sim = n0 ? acc->slow_sum[0][j] / n0 : NAN;
            c->jobs[j].slow_hw = n1 ? acc->slow_sum[1][j] / n1 : NAN;
        }
        for (int j = 0; j < c->n_jobs; j++)
            for (int m = 0; m < TL_M_COUNT; m++) {
                int ns = acc->n[0][j][m], nh = acc->n[1][j][m];
                c->jobs[j].sim[m] = ns ? acc->sum[0][j][m] / ns : NAN;
                c->jobs[j].hw[m] = nh ? acc->sum[1][j][m] / nh : NAN;
            }
        c->sys_sim = acc->sys_n[0] ? acc->sys_sum[0] / acc->sys_n[0] : NAN;
        c->sys_hw = acc->sys_n[1] ? acc->sys_sum[1] / acc->sys_n[1] : NAN;
        if (is_alone(c)) /* a job alone has no system throughput to speak of */
            c->sys_sim = c->sys_hw = NAN;
        cs[i].set_order = first_index_all(hws, n_src, false, c);
        cs[i].policy_order = first_index_all(hws, n_src, true, c);
        free(acc);
    }
    free(b->acc);
    if (nc)
        qsort(cs, nc, sizeof *cs, cmp_cells);
    v->cells = tl_xcalloc(nc ? nc : 1, sizeof *v->cells);
    for (size_t i = 0; i < nc; i++)
        v->cells[i] = cs[i].cell;
    v->n_cells = nc;
    free(cs);
    memset(b, 0, sizeof *b);
    make_rankings(v);
}

/* Read one source's two databases. */
static int load_source(tl_val_source *so, const char *experiment, const char *sim_experiment,
                       vdb *sim, vdb *hw, tl_err *err)
{
    tl_analysis as, ah;
    int r = tl_analysis_open(&ah, so->hw_path, err);
    if (r < 0)
        return r;
    if ((r = tl_analysis_open(&as, so->sim_path, err)) < 0) {
        tl_analysis_close(&ah);
        return r;
    }
    r = load_db(&ah, "hw", experiment, hw, err);
    if (r == 0)
        r = load_db(&as, "sim", sim_experiment, sim, err);
    tl_analysis_close(&as);
    tl_analysis_close(&ah);
    if (r == 0) {
        char cal[32];
        int m = tl_validation_hw_meta(so->hw_path, "hw_graph_calibration", cal, sizeof cal, err);
        if (m < 0)
            r = m;
        else if (m == 1)
            so->hw_graph_calib = tl_xstrdup(cal);
    }
    so->hw_runs = hw->n;
    so->sim_runs = sim->n;
    if (r == 0 && hw->n == 0)
        r = tl_errf(err, TL_EMISSING, "%s: no finished hardware runs (kind 'hw')%s%s",
                    so->hw_path, experiment ? " of experiment " : "", experiment ? experiment : "");
    else if (r == 0 && sim->n == 0)
        r = tl_errf(err, TL_EMISSING, "%s: no finished simulated runs (kind 'sim')%s%s",
                    so->sim_path, sim_experiment ? " of experiment " : "",
                    sim_experiment ? sim_experiment : "");
    return r;
}

int tl_validation_load_many(tl_validation *v, size_t n, const char *const *sim_dbs,
                            const char *const *hw_dbs, const char *experiment,
                            const char *sim_experiment, tl_err *err)
{
    memset(v, 0, sizeof *v);
    if (n == 0)
        return tl_errf(err, TL_EINVAL, "no hardware database to validate");
    v->sources = tl_xcalloc(n, sizeof *v->sources);
    v->n_sources = n;
    for (size_t i = 0; i < n; i++) {
        v->sources[i].hw_path = tl_xstrdup(hw_dbs[i]);
        v->sources[i].sim_path = tl_xstrdup(sim_dbs[i]);
    }
    vdb *sims = tl_xcalloc(n, sizeof *sims), *hws = tl_xcalloc(n, sizeof *hws);
    builder b = {0};
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        tl_val_source *so = &v->sources[i];
        r = load_source(so, experiment, sim_experiment, &sims[i], &hws[i], err);
        v->hw_runs += so->hw_runs;
        v->sim_runs += so->sim_runs;
        if (r == 0)
            match_source(v, &b, &sims[i], &hws[i], (int)i);
        if (r == 0 && so->matched == 0)
            r = tl_errf(err, TL_EMISSING,
                        "%s: none of its %zu simulated runs has the config of one of the %zu "
                        "hardware runs of %s (same policy, jobs, load, seed, repetition, "
                        "duration and warm-up needed; hardware run with another --seed?)",
                        so->sim_path, so->sim_runs, so->hw_runs, so->hw_path);
    }
    finish(v, &b, hws, n); /* the cells become v's: close frees them on errors too */
    for (size_t i = 0; i < n; i++) {
        vdb_free(&sims[i]);
        vdb_free(&hws[i]);
    }
    free(sims);
    free(hws);
    if (r < 0)
        tl_validation_close(v);
    return r;
}

const char **tl_val_inputs(const tl_validation *v)
{
    const char **in = tl_xcalloc(2 * v->n_sources + 1, sizeof *in);
    for (size_t i = 0; i < v->n_sources; i++) {
        in[2 * i] = v->sources[i].hw_path;
        in[2 * i + 1] = v->sources[i].sim_path;
    }
    return in;
}

int tl_validation_load(tl_validation *v, const char *sim_db, const char *hw_db,
                       const char *experiment, tl_err *err)
{
    return tl_validation_load_many(v, 1, &sim_db, &hw_db, experiment, NULL, err);
}

void tl_validation_close(tl_validation *v)
{
    for (size_t i = 0; i < v->n_cells; i++) {
        tl_val_cell *c = &v->cells[i];
        free(c->experiment);
        free(c->policy);
        free(c->params);
        free(c->jobsig);
        free(c->sim_ids);
        free(c->hw_ids);
        free(c->src);
        for (int j = 0; j < c->n_jobs; j++) {
            free(c->jobs[j].name);
            free(c->jobs[j].role);
        }
        free(c->jobs);
    }
    free(v->cells);
    for (size_t i = 0; i < v->n_ranks; i++) {
        tl_val_ranking *r = &v->ranks[i];
        free(r->experiment);
        free(r->scope);
        for (int k = 0; k < r->n; k++)
            free(r->policies[k]);
        free(r->policies);
        free(r->sim);
        free(r->hw);
        free(r->over_hw);
        free(r->order_sim);
        free(r->order_hw);
    }
    free(v->ranks);
    free(v->hw_gpu);
    free(v->sim_gpu);
    for (size_t i = 0; i < v->n_sources; i++) {
        tl_val_source *so = &v->sources[i];
        free(so->hw_path);
        free(so->sim_path);
        free(so->sim_params);
        free(so->hw_graph_calib);
    }
    free(v->sources);
    memset(v, 0, sizeof *v);
}
