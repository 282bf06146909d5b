/* Select runs, group repetitions, average their metrics.
 *
 * A group is every finished run with the same experiment, kind, policy, load and
 * job list (names in job_id order): such runs differ only by seed/repetition, so
 * their metrics are averaged. Jobs are matched by position, which the equal job
 * lists make safe. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static const char *const metric_names[TL_M_COUNT] = {
    [TL_M_P50] = "p50_ns",
    [TL_M_P90] = "p90_ns",
    [TL_M_P95] = "p95_ns",
    [TL_M_P99] = "p99_ns",
    [TL_M_P999] = "p999_ns",
    [TL_M_MEAN_LATENCY] = "mean_latency_ns",
    [TL_M_SLO_ATTAINMENT] = "slo_attainment",
    [TL_M_MEAN_SERVICE] = "mean_service_ns",
    [TL_M_REQUESTS] = "requests",
    [TL_M_THROUGHPUT] = "throughput",
    [TL_M_THROUGHPUT_REL] = "throughput_rel",
    [TL_M_P99_OVERHEAD] = "p99_overhead",
    [TL_M_UTIL] = "util",
    [TL_M_TURNAROUND_VAR] = "turnaround_var_ns2",
};

const char *tl_metric_name(tl_metric m)
{
    return (unsigned)m < TL_M_COUNT ? metric_names[m] : "?";
}

static int metric_from_name(const char *s)
{
    for (int m = 0; m < TL_M_COUNT; m++)
        if (!strcmp(s, metric_names[m]))
            return m;
    return -1;
}

/* One run's jobs and metrics, before averaging. */
typedef struct run_job {
    int job_id;
    char *name, *role;
    int priority;
    long long slo_ns;
    bool has_alone;
    long long alone_run_id;
    double v[TL_M_COUNT];
    bool has[TL_M_COUNT];
    bool recounted; /* inference: throughput counted from its requests (served_rate) */
} run_job;

typedef struct run_data {
    run_job *jobs;
    int n_jobs;
    double sys[TL_SYS_COUNT];
    bool sys_has[TL_SYS_COUNT];
} run_data;

static void run_data_free(run_data *r)
{
    for (int i = 0; i < r->n_jobs; i++) {
        free(r->jobs[i].name);
        free(r->jobs[i].role);
    }
    free(r->jobs);
    memset(r, 0, sizeof *r);
}

/* Names go into file names, data files, gnuplot strings and JSON: cleaned once here. */
static char *col_text(sqlite3_stmt *st, int i)
{
    return tl_an_clean_label((const char *)sqlite3_column_text(st, i));
}

/* An inference job's throughput as model revision 22 defines it
 * (include/tally/metrics.h): its requests served inside the measured window,
 * per second of it, counted from the requests table, so that a database
 * written before that revision (which counted every request that arrived)
 * reads the same. False when the run has no requests of the job or no window. */
static bool served_rate(tl_analysis *a, long long run_id, int job_id, double *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT COUNT(*), SUM(q.end_ns IS NOT NULL AND q.end_ns < "
                           "COALESCE(r.warmup_ns, 0) + COALESCE(r.duration_ns, 0)), "
                           "COALESCE(r.duration_ns, 0) FROM requests q JOIN runs r ON "
                           "r.run_id = q.run_id WHERE q.run_id=?1 AND q.job_id=?2",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, job_id);
    bool ok = false;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0 &&
        sqlite3_column_int64(st, 2) > 0) {
        *out = (double)sqlite3_column_int64(st, 1) / ((double)sqlite3_column_int64(st, 2) / 1e9);
        ok = true;
    }
    sqlite3_finalize(st);
    return ok;
}

static int load_run(tl_analysis *a, long long run_id, run_data *rd, tl_err *err)
{
    sqlite3_stmt *st;
    int r = tl_an_prepare(a,
                          "SELECT job_id, name, role, priority, slo_ns, alone_run_id FROM jobs "
                          "WHERE run_id=?1 ORDER BY job_id",
                          &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (rd->n_jobs == cap) {
            cap = cap ? cap * 2 : 4;
            rd->jobs = tl_xrealloc(rd->jobs, (size_t)cap * sizeof *rd->jobs);
        }
        run_job *j = &rd->jobs[rd->n_jobs++];
        memset(j, 0, sizeof *j);
        j->job_id = sqlite3_column_int(st, 0);
        j->name = col_text(st, 1);
        j->role = col_text(st, 2);
        j->priority = sqlite3_column_int(st, 3);
        j->slo_ns = sqlite3_column_int64(st, 4);
        j->has_alone = sqlite3_column_type(st, 5) != SQLITE_NULL;
        j->alone_run_id = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);

    r = tl_an_prepare(a, "SELECT job_id, name, value FROM metrics WHERE run_id=?1", &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        int job_id = sqlite3_column_int(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_double(st, 2);
        if (!name || !isfinite(v))
            continue;
        if (job_id == -1) {
            if (!strcmp(name, "system_throughput")) {
                rd->sys[TL_SYS_THROUGHPUT] = v;
                rd->sys_has[TL_SYS_THROUGHPUT] = true;
            } else if (!strcmp(name, "util")) {
                rd->sys[TL_SYS_UTIL] = v;
                rd->sys_has[TL_SYS_UTIL] = true;
            }
            continue;
        }
        int m = metric_from_name(name);
        if (m < 0)
            continue;
        for (int i = 0; i < rd->n_jobs; i++)
            if (rd->jobs[i].job_id == job_id) {
                rd->jobs[i].v[m] = v;
                rd->jobs[i].has[m] = true;
            }
    }
    sqlite3_finalize(st);
    for (int i = 0; i < rd->n_jobs; i++) {
        run_job *j = &rd->jobs[i];
        double v;
        if (j->role && !strcmp(j->role, "inference") && served_rate(a, run_id, j->job_id, &v)) {
            j->v[TL_M_THROUGHPUT] = v;
            j->has[TL_M_THROUGHPUT] = true;
            j->recounted = true; /* its relative figure follows (fill_derived) */
        }
    }
    return 0;
}

/* The job of an 'alone' baseline run that stands for job_name: the job of
 * that name there, or the run's only job. */
static bool alone_job(tl_analysis *a, long long alone_run, const char *job_name, int *job_id)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT job_id FROM jobs WHERE run_id=?1 AND (name=?2 OR "
                           "(SELECT COUNT(*) FROM jobs WHERE run_id=?1)=1) "
                           "ORDER BY (name=?2) DESC, job_id LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, alone_run);
    sqlite3_bind_text(st, 2, job_name, -1, SQLITE_STATIC);
    bool ok = sqlite3_step(st) == SQLITE_ROW;
    if (ok)
        *job_id = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return ok;
}

/* The job's metric in its 'alone' baseline run (alone_job). */
static bool alone_metric(tl_analysis *a, long long alone_run, const char *job_name,
                         const char *metric, double *out)
{
    int job;
    sqlite3_stmt *st;
    if (!alone_job(a, alone_run, job_name, &job) ||
        sqlite3_prepare_v2(a->db, "SELECT value FROM metrics WHERE run_id=?1 AND job_id=?2 AND name=?3",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, alone_run);
    sqlite3_bind_int(st, 2, job);
    sqlite3_bind_text(st, 3, metric, -1, SQLITE_STATIC);
    bool ok = false;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *out = sqlite3_column_double(st, 0);
        ok = isfinite(*out) && *out > 0;
    }
    sqlite3_finalize(st);
    return ok;
}

/* The alone throughput of a recounted inference job: recounted the same way
 * (served_rate) in its alone run's job (alone_job). */
static bool alone_served(tl_analysis *a, long long alone_run, const char *job_name, double *out)
{
    int job;
    return alone_job(a, alone_run, job_name, &job) && served_rate(a, alone_run, job, out) && *out > 0;
}

/* Derived metrics the writer may have left out, computed as results.h defines them. */
static void fill_derived(tl_analysis *a, run_data *rd)
{
    bool rederived = false; /* a recounted job's relative throughput: the system's again */
    for (int i = 0; i < rd->n_jobs; i++) {
        run_job *j = &rd->jobs[i];
        double base;
        if (!j->has[TL_M_P99_OVERHEAD] && j->has[TL_M_P99] && j->has_alone &&
            alone_metric(a, j->alone_run_id, j->name, "p99_ns", &base)) {
            j->v[TL_M_P99_OVERHEAD] = j->v[TL_M_P99] / base - 1.0;
            j->has[TL_M_P99_OVERHEAD] = true;
        }
        if (j->recounted && j->has_alone && alone_served(a, j->alone_run_id, j->name, &base)) {
            j->v[TL_M_THROUGHPUT_REL] = j->v[TL_M_THROUGHPUT] / base;
            j->has[TL_M_THROUGHPUT_REL] = true;
            rederived = true;
        } else if (!j->has[TL_M_THROUGHPUT_REL] && j->has[TL_M_THROUGHPUT] && j->has_alone &&
                   alone_metric(a, j->alone_run_id, j->name, "throughput", &base)) {
            j->v[TL_M_THROUGHPUT_REL] = j->v[TL_M_THROUGHPUT] / base;
            j->has[TL_M_THROUGHPUT_REL] = true;
        }
    }
    if ((!rd->sys_has[TL_SYS_THROUGHPUT] || rederived) && rd->n_jobs > 0) {
        double s = 0;
        bool all = true;
        for (int i = 0; i < rd->n_jobs; i++) {
            all &= rd->jobs[i].has[TL_M_THROUGHPUT_REL];
            s += rd->jobs[i].v[TL_M_THROUGHPUT_REL];
        }
        if (all) {
            rd->sys[TL_SYS_THROUGHPUT] = s;
            rd->sys_has[TL_SYS_THROUGHPUT] = true;
        }
    }
}

static char *job_signature(const run_data *rd)
{
    tl_sbuf b = {0};
    tl_sbuf_printf(&b, "%s", "");
    for (int i = 0; i < rd->n_jobs; i++)
        tl_sbuf_printf(&b, "%s%s", i ? "+" : "", rd->jobs[i].name);
    return b.s;
}

static bool policy_selected(const char *list, const char *policy)
{
    if (!list || !*list)
        return true;
    size_t n = strlen(policy);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, policy, n))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static tl_group *find_group(tl_groups *g, const char *exp, const char *kind, const char *policy,
                            const char *params, bool has_load, double load, const char *sig)
{
    for (size_t i = 0; i < g->n; i++) {
        tl_group *x = &g->v[i];
        if (!strcmp(x->experiment, exp) && !strcmp(x->kind, kind) && !strcmp(x->policy, policy) &&
            !strcmp(x->params, params) &&
            x->has_load == has_load && (!has_load || x->load == load) && !strcmp(x->jobsig, sig))
            return x;
    }
    return NULL;
}

static void add_run(tl_group *grp, long long run_id, const run_data *rd)
{
    grp->run_ids = tl_xrealloc(grp->run_ids, (grp->n_runs + 1) * sizeof *grp->run_ids);
    grp->run_ids[grp->n_runs++] = run_id;
    if (!grp->jobs) {
        grp->n_jobs = rd->n_jobs;
        grp->jobs = tl_xcalloc(rd->n_jobs ? (size_t)rd->n_jobs : 1, sizeof *grp->jobs);
        for (int i = 0; i < rd->n_jobs; i++) {
            grp->jobs[i].name = tl_xstrdup(rd->jobs[i].name);
            grp->jobs[i].role = tl_xstrdup(rd->jobs[i].role);
            grp->jobs[i].priority = rd->jobs[i].priority;
            grp->jobs[i].slo_ns = rd->jobs[i].slo_ns;
            grp->jobs[i].job_id = rd->jobs[i].job_id;
        }
    }
    for (int i = 0; i < rd->n_jobs && i < grp->n_jobs; i++)
        for (int m = 0; m < TL_M_COUNT; m++)
            if (rd->jobs[i].has[m]) {
                grp->jobs[i].sum[m] += rd->jobs[i].v[m];
                grp->jobs[i].n[m]++;
            }
    for (int m = 0; m < TL_SYS_COUNT; m++)
        if (rd->sys_has[m]) {
            grp->sys_sum[m] += rd->sys[m];
            grp->sys_n[m]++;
        }
}

bool tl_group_is_alone(const tl_group *g)
{
    return !strcmp(g->policy, "alone");
}

static int cmp_group(const void *pa, const void *pb)
{
    const tl_group *a = pa, *b = pb;
    int c = strcmp(a->experiment, b->experiment);
    if (c)
        return c;
    if (tl_group_is_alone(a) != tl_group_is_alone(b))
        return tl_group_is_alone(a) ? -1 : 1;
    if ((c = strcmp(a->policy, b->policy)))
        return c;
    if ((c = strcmp(a->params, b->params)))
        return c;
    if ((c = strcmp(a->kind, b->kind)))
        return c;
    if (a->has_load != b->has_load)
        return a->has_load ? 1 : -1;
    if (a->has_load && a->load != b->load)
        return a->load < b->load ? -1 : 1;
    return strcmp(a->jobsig, b->jobsig);
}

/* The high-priority job: the inference job of smallest priority rank. */
static int pick_hp(const tl_group *g)
{
    int hp = -1;
    for (int i = 0; i < g->n_jobs; i++)
        if (!strcmp(g->jobs[i].role, "inference") &&
            (hp < 0 || g->jobs[i].priority < g->jobs[hp].priority))
            hp = i;
    return hp;
}

/* Legends need to tell groups apart: policy, plus kind, load or job list when
 * those differ between the groups of one experiment. */
static void make_labels(tl_groups *g)
{
    for (size_t i = 0; i < g->n; i++) {
        tl_group *x = &g->v[i];
        bool kinds = false, loads = false, sigs = false, params = false;
        for (size_t k = 0; k < g->n; k++) {
            tl_group *y = &g->v[k];
            if (strcmp(x->experiment, y->experiment) || tl_group_is_alone(y))
                continue;
            kinds |= strcmp(x->kind, y->kind) != 0;
            loads |= x->has_load != y->has_load || (x->has_load && x->load != y->load);
            sigs |= strcmp(x->jobsig, y->jobsig) != 0;
            params |= !strcmp(x->policy, y->policy) && strcmp(x->params, y->params) != 0;
        }
        tl_sbuf b = {0};
        tl_sbuf_printf(&b, "%s", x->policy);
        if (params && *x->params)
            tl_sbuf_printf(&b, " %s", x->params);
        if (kinds)
            tl_sbuf_printf(&b, " (%s)", x->kind);
        if (loads && x->has_load)
            tl_sbuf_printf(&b, " load=%g", x->load);
        if (sigs || tl_group_is_alone(x))
            tl_sbuf_printf(&b, " [%s]", x->jobsig);
        char *clean = tl_an_clean_label(b.s);
        tl_sbuf_free(&b);
        x->label = clean;
    }
}

int tl_groups_load(tl_analysis *a, const tl_filter *f, tl_groups *out, tl_err *err)
{
    static const tl_filter none = {0};
    if (!f)
        f = &none;
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int r = tl_an_prepare(a,
                          "SELECT run_id, COALESCE(experiment,''), kind, policy, load, "
                          "COALESCE(policy_params,'') FROM runs "
                          "WHERE COALESCE(status,'done')='done' "
                          "AND (?1 IS NULL OR experiment=?1) AND (?2=0 OR run_id=?2) "
                          "AND (?3 IS NULL OR kind=?3) ORDER BY run_id",
                          &st, err);
    if (r < 0)
        return r;
    if (f->experiment)
        sqlite3_bind_text(st, 1, f->experiment, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, f->run_id);
    if (f->kind)
        sqlite3_bind_text(st, 3, f->kind, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long long run_id = sqlite3_column_int64(st, 0);
        const char *exp = (const char *)sqlite3_column_text(st, 1);
        const char *kind = (const char *)sqlite3_column_text(st, 2);
        const char *policy = (const char *)sqlite3_column_text(st, 3);
        bool has_load = sqlite3_column_type(st, 4) != SQLITE_NULL;
        double load = sqlite3_column_double(st, 4);
        char *params = tl_an_clean_label((const char *)sqlite3_column_text(st, 5));
        /* "{}" and "" both mean the policy's defaults */
        if (!strcmp(params, "{}"))
            params[0] = '\0';
        if (!kind)
            kind = "";
        if (!policy)
            policy = "";
        if (!policy_selected(f->policies, policy)) {
            free(params);
            continue;
        }
        run_data rd = {0};
        if ((r = load_run(a, run_id, &rd, err)) < 0) {
            run_data_free(&rd);
            free(params);
            break;
        }
        fill_derived(a, &rd);
        char *sig = job_signature(&rd);
        char *cexp = tl_an_clean_label(exp), *ckind = tl_an_clean_label(kind),
             *cpol = tl_an_clean_label(policy);
        tl_group *grp = find_group(out, cexp, ckind, cpol, params, has_load, load, sig);
        free(cexp);
        free(ckind);
        free(cpol);
        if (!grp) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 8;
                out->v = tl_xrealloc(out->v, cap * sizeof *out->v);
            }
            grp = &out->v[out->n++];
            memset(grp, 0, sizeof *grp);
            grp->experiment = tl_an_clean_label(exp);
            grp->kind = tl_an_clean_label(kind);
            grp->policy = tl_an_clean_label(policy);
            grp->params = params;
            params = NULL;
            grp->has_load = has_load;
            grp->load = load;
            grp->jobsig = sig;
            sig = NULL;
        }
        free(sig);
        free(params);
        add_run(grp, run_id, &rd);
        run_data_free(&rd);
    }
    if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = tl_errf(err, TL_EDB, "%s: reading runs: %s", a->path, sqlite3_errmsg(a->db));
    sqlite3_finalize(st);
    if (r < 0) {
        tl_groups_close(out);
        return r;
    }
    if (out->n == 0) {
        tl_sbuf b = {0};
        tl_sbuf_printf(&b, "%s: no finished runs match", a->path);
        if (f->experiment)
            tl_sbuf_printf(&b, " --experiment %s", f->experiment);
        if (f->run_id)
            tl_sbuf_printf(&b, " --run-id %lld", f->run_id);
        if (f->policies)
            tl_sbuf_printf(&b, " --policy %s", f->policies);
        if (f->kind)
            tl_sbuf_printf(&b, " --kind %s", f->kind);
        r = tl_errf(err, TL_EMISSING, "%s", b.s);
        tl_sbuf_free(&b);
        return r;
    }
    qsort(out->v, out->n, sizeof *out->v, cmp_group);
    for (size_t i = 0; i < out->n; i++)
        out->v[i].hp = pick_hp(&out->v[i]);
    make_labels(out);
    return 0;
}

void tl_groups_close(tl_groups *g)
{
    for (size_t i = 0; i < g->n; i++) {
        tl_group *x = &g->v[i];
        free(x->experiment);
        free(x->kind);
        free(x->policy);
        free(x->params);
        free(x->jobsig);
        free(x->label);
        free(x->run_ids);
        for (int k = 0; k < x->n_jobs; k++) {
            free(x->jobs[k].name);
            free(x->jobs[k].role);
        }
        free(x->jobs);
    }
    free(g->v);
    memset(g, 0, sizeof *g);
}

double tl_group_job_mean(const tl_group_job *j, tl_metric m)
{
    if ((unsigned)m >= TL_M_COUNT || j->n[m] == 0)
        return NAN;
    return j->sum[m] / j->n[m];
}

double tl_group_sys_mean(const tl_group *g, tl_sys_metric m)
{
    if ((unsigned)m >= TL_SYS_COUNT || g->sys_n[m] == 0)
        return NAN;
    return g->sys_sum[m] / g->sys_n[m];
}
