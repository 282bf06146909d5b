/* The policy framework: parameter parsing from the declared table, the thin
 * lifecycle wrappers around an ops table, and the helpers policies share
 * (plain launches, stream priorities, stream maps, task queues). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tally/policy.h"

/* ---- parameters ---- */

static const char *param_type_name(tl_param_type t)
{
    switch (t) {
    case TL_PARAM_INT: return "integer";
    case TL_PARAM_DOUBLE: return "number";
    case TL_PARAM_BOOL: return "boolean";
    case TL_PARAM_NS_FROM_MS: return "number (ms)";
    case TL_PARAM_DOUBLE_LIST: return "array of numbers";
    }
    return "?";
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static void param_default(void *state, const tl_param_desc *d)
{
    char *at = (char *)state + d->offset;
    switch (d->type) {
    case TL_PARAM_INT: *(int *)at = (int)d->def; break;
    case TL_PARAM_DOUBLE: *(double *)at = d->def; break;
    case TL_PARAM_BOOL: *(bool *)at = d->def != 0; break;
    case TL_PARAM_NS_FROM_MS: *(tl_ns *)at = (tl_ns)llround(d->def * TL_NS_PER_MS); break;
    case TL_PARAM_DOUBLE_LIST: ((tl_param_list *)at)->n = 0; break;
    }
}

static int check_range(const char *pol, const tl_param_desc *d, double x, const char *what,
                       tl_err *err)
{
    if (x >= d->min && x <= d->max)
        return 0;
    return tl_errf(err, TL_ERANGE, "policy %s: parameter '%s'%s = %g is out of range [%g, %g]",
                   pol, d->name, what, x, d->min, d->max);
}

static int param_set(const char *pol, void *state, const tl_param_desc *d, const json_t *v,
                     tl_err *err)
{
    char *at = (char *)state + d->offset;
    double x = json_is_number(v) ? json_number_value(v) : 0;
    bool ok;
    switch (d->type) {
    case TL_PARAM_INT:
        ok = json_is_integer(v) || (json_is_real(v) && x == floor(x) && fabs(x) < 2e9);
        break;
    case TL_PARAM_BOOL: ok = json_is_boolean(v); break;
    case TL_PARAM_DOUBLE_LIST: ok = json_is_array(v); break;
    default: ok = json_is_number(v); break;
    }
    if (!ok)
        return tl_errf(err, TL_ETYPE, "policy %s: parameter '%s' must be %s, not %s", pol,
                       d->name, param_type_name(d->type), json_type_name(v));
    if (d->type == TL_PARAM_BOOL) {
        *(bool *)at = json_is_true(v);
        return 0;
    }
    if (d->type == TL_PARAM_DOUBLE_LIST) {
        tl_param_list *l = (tl_param_list *)at;
        if (json_array_size(v) > TL_PARAM_LIST_MAX)
            return tl_errf(err, TL_ERANGE, "policy %s: parameter '%s' has %zu entries (at most %d)",
                           pol, d->name, json_array_size(v), TL_PARAM_LIST_MAX);
        l->n = 0;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            char what[32];
            snprintf(what, sizeof what, "[%zu]", i);
            if (!json_is_number(e))
                return tl_errf(err, TL_ETYPE, "policy %s: parameter '%s'%s must be a number, not %s",
                               pol, d->name, what, json_type_name(e));
            int r = check_range(pol, d, json_number_value(e), what, err);
            if (r < 0)
                return r;
            l->v[l->n++] = json_number_value(e);
        }
        return 0;
    }
    int r = check_range(pol, d, x, "", err);
    if (r < 0)
        return r;
    if (d->type == TL_PARAM_INT)
        *(int *)at = (int)x;
    else if (d->type == TL_PARAM_DOUBLE)
        *(double *)at = x;
    else
        *(tl_ns *)at = (tl_ns)llround(x * TL_NS_PER_MS);
    return 0;
}

static int params_parse(const tl_policy_ops *ops, void *state, const json_t *params, tl_err *err)
{
    for (const tl_param_desc *d = ops->params; d && d->name; d++)
        param_default(state, d);
    if (!params || json_is_null(params))
        return ops->check_params ? ops->check_params(state, err) : 0;
    if (!json_is_object(params))
        return tl_errf(err, TL_ETYPE, "policy %s: parameters must be an object, not %s",
                       ops->name, json_type_name(params));
    /* Keys in sorted order: the first error reported does not depend on hashing. */
    const char *key;
    json_t *v;
    const char *keys[256];
    size_t n = 0;
    if (json_object_size(params) > sizeof keys / sizeof keys[0])
        return tl_errf(err, TL_ERANGE, "policy %s: %zu parameters given (at most %zu)",
                       ops->name, json_object_size(params), sizeof keys / sizeof keys[0]);
    json_object_foreach((json_t *)params, key, v)
        keys[n++] = key;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *tmp = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = tmp;
        }
    for (size_t i = 0; i < n; i++) {
        const tl_param_desc *d = ops->params;
        while (d && d->name && strcmp(d->name, keys[i]) != 0)
            d++;
        if (!d || !d->name) {
            char known[256] = "";
            size_t len = 0;
            for (const tl_param_desc *k = ops->params; k && k->name && len < sizeof known - 1; k++)
                len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
                                        len ? ", " : "", k->name);
            return tl_errf(err, TL_EUNKNOWN, "policy %s: unknown parameter '%s' (known: %s)",
                           ops->name, keys[i], len ? known : "none");
        }
        int r = param_set(ops->name, state, d, json_object_get(params, keys[i]), err);
        if (r < 0)
            return r;
    }
    return ops->check_params ? ops->check_params(state, err) : 0;
}

void tl_policy_print_params(FILE *f, const tl_policy_ops *ops)
{
    for (const tl_param_desc *d = ops->params; d && d->name; d++) {
        if (d->type == TL_PARAM_DOUBLE_LIST)
            fprintf(f, "  %-22s %-17s default []   range [%g, %g] each  %s\n", d->name,
                    param_type_name(d->type), d->min, d->max, d->doc ? d->doc : "");
        else
            fprintf(f, "  %-22s %-17s default %-6g range [%g, %g]  %s\n", d->name,
                    param_type_name(d->type), d->def, d->min, d->max, d->doc ? d->doc : "");
    }
}

/* What tl_policy_run_plain_then's completion needs; records are reused
 * through p->spare_launches rather than allocated per launch. */
typedef struct plain_launch {
    tl_policy *p;
    tl_task *t;
    tl_task_done_fn done;
    struct plain_launch *next; /* in p->spare_launches while unused */
    struct plain_launch *all;  /* every record, from p->all_launches */
} plain_launch;

static plain_launch *launch_get(tl_policy *p)
{
    plain_launch *pl = p->spare_launches;
    if (pl)
        p->spare_launches = pl->next;
    else {
        pl = tl_xmalloc(sizeof *pl);
        pl->all = p->all_launches;
        p->all_launches = pl;
    }
    return pl;
}

static void launch_put(tl_policy *p, plain_launch *pl)
{
    pl->next = p->spare_launches;
    p->spare_launches = pl;
}

/* ---- lifecycle ---- */

/* Parse params into a scratch state as tl_policy_init would; with n_jobs >= 0,
 * also ask the policy whether they suit that many jobs. */
static int check_scratch(const tl_policy_ops *ops, const json_t *params, int n_jobs, tl_err *err)
{
    void *state = tl_xcalloc(1, ops->state_size ? ops->state_size : 1);
    int r = params_parse(ops, state, params, err);
    if (r == 0 && n_jobs >= 0 && ops->check_jobs)
        r = ops->check_jobs(state, n_jobs, err);
    free(state);
    return r;
}

int tl_policy_check_params(const tl_policy_ops *ops, const json_t *params, tl_err *err)
{
    return check_scratch(ops, params, -1, err);
}

int tl_policy_check_jobs(const tl_policy_ops *ops, const json_t *params, int n_jobs, tl_err *err)
{
    return check_scratch(ops, params, n_jobs, err);
}

int tl_policy_init(tl_policy *p, const tl_policy_ops *ops, const json_t *params,
                   tl_device *dev, tl_runtime *rt, tl_job *jobs, int n_jobs, tl_err *err)
{
    memset(p, 0, sizeof *p);
    if (!ops || !ops->name || !ops->setup || !ops->submit)
        return tl_errf(err, TL_EINVAL, "policy %s: ops table lacks a name, setup or submit",
                       ops && ops->name ? ops->name : "?");
    if (!dev || n_jobs < 0 || (n_jobs > 0 && !jobs))
        return tl_errf(err, TL_EINVAL, "policy %s: no device or no jobs", ops->name);
    void *state = tl_xcalloc(1, ops->state_size ? ops->state_size : 1);
    int r = params_parse(ops, state, params, err);
    if (r < 0) {
        free(state);
        return r;
    }
    p->ops = ops;
    p->state = state;
    p->dev = dev;
    p->rt = rt;
    p->jobs = jobs;
    p->n_jobs = n_jobs;
    return 0;
}

int tl_policy_setup(tl_policy *p, tl_err *err)
{
    return p->ops->setup(p, err);
}

void tl_policy_submit(tl_policy *p, tl_task *t)
{
    p->ops->submit(p, t);
}

void tl_policy_job_idle(tl_policy *p, tl_job *j)
{
    if (p->ops->job_idle)
        p->ops->job_idle(p, j);
}

void tl_policy_request_arrived(tl_policy *p, tl_job *j)
{
    if (p->ops->request_arrived)
        p->ops->request_arrived(p, j);
}

void tl_policy_close(tl_policy *p)
{
    if (!p)
        return;
    while (p->all_launches) { /* spare ones and any still in flight */
        plain_launch *pl = p->all_launches;
        p->all_launches = pl->all;
        free(pl);
    }
    p->spare_launches = NULL;
    if (!p->ops)
        return;
    if (p->ops->teardown)
        p->ops->teardown(p);
    free(p->state);
    p->state = NULL;
    p->ops = NULL;
}

void tl_policy_fail(tl_policy *p, int code, const char *fmt, ...)
{
    if (p->error.code != 0)
        return;
    p->error.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error.msg, sizeof p->error.msg, fmt, ap);
    va_end(ap);
}

/* ---- helpers ---- */

bool tl_policy_job_is_high(const tl_policy *p, const tl_job *j)
{
    int best = j->priority;
    for (int i = 0; i < p->n_jobs; i++)
        if (p->jobs[i].priority < best)
            best = p->jobs[i].priority;
    return j->priority <= best;
}

int tl_policy_stream_priority(const tl_policy *p, int rank)
{
    int greatest = p->dev->gpu.stream_prio_greatest;
    if (greatest > 0)
        greatest = 0;
    if (rank < 0)
        rank = 0;
    int prio = greatest + rank;
    return prio > TL_STREAM_PRIO_LEAST ? TL_STREAM_PRIO_LEAST : prio;
}

static void plain_done(void *arg, const tl_launch_result *r)
{
    plain_launch pl = *(plain_launch *)arg;
    launch_put(pl.p, arg);
    if (pl.done)
        pl.done(pl.p, pl.t, r);
    tl_task_complete(pl.p->rt, pl.t, r->start_ns, r->end_ns);
}

void tl_policy_complete_now(tl_policy *p, tl_task *t)
{
    tl_ns now = tl_dev_now(p->dev);
    tl_task_complete(p->rt, t, now, now);
}

int tl_policy_run_plain_then(tl_policy *p, tl_task *t, tl_stream_id s, tl_task_done_fn done)
{
    plain_launch *pl = launch_get(p);
    pl->p = p;
    pl->t = t;
    pl->done = done;
    tl_launch_id id;
    int r;
    if (t->op->kind == TL_OP_KERNEL) {
        tl_kernel_desc k = { .op = t->op, .job = t->job->id, .tag = t->seq };
        r = tl_dev_launch(p->dev, s, &k, plain_done, pl, &id);
    } else {
        r = tl_dev_copy(p->dev, s, t->op, t->job->id, plain_done, pl, &id);
    }
    if (r < 0) {
        launch_put(p, pl);
        const tl_trace *tr = t->job->trace;
        const char *name = tr && t->op->kind == TL_OP_KERNEL ? tl_trace_op_name(tr, t->op) : NULL;
        tl_policy_fail(p, r, "policy %s: job %s (%s): the device refused op %u of iteration %u, %s%s%s (%s)",
                       p->ops->name, t->job->name ? t->job->name : "?", tr && tr->path ? tr->path : "?",
                       t->index, t->iter, t->op->kind == TL_OP_KERNEL ? "kernel" : "a copy or memset",
                       name && *name ? " " : "", name ? name : "", tl_strerror(r));
        tl_policy_complete_now(p, t);
    }
    return r;
}

int tl_policy_run_plain(tl_policy *p, tl_task *t, tl_stream_id s)
{
    return tl_policy_run_plain_then(p, t, s, NULL);
}

int tl_stream_map_create(tl_stream_map *m, tl_device *dev, tl_ctx_id ctx,
                         const tl_job *job, int priority, tl_err *err)
{
    int n = job->trace && job->trace->n_streams > 0 ? job->trace->n_streams : 1;
    /* More trace streams than slots fold onto shared device streams: that
     * only adds ordering (the runner resolves cross-stream dependencies). */
    if (n > TL_MAX_JOB_STREAMS)
        n = TL_MAX_JOB_STREAMS;
    m->n = 0;
    for (int i = 0; i < n; i++) {
        int r = tl_dev_stream_create(dev, ctx, priority, &m->s[i], err);
        if (r < 0)
            return r;
        m->n++;
    }
    return 0;
}

tl_stream_id tl_stream_map_get(const tl_stream_map *m, const tl_op *op)
{
    if (m->n <= 0)
        return -1;
    int32_t i = op->stream < 0 ? 0 : op->stream;
    if (i >= m->n) /* a division only when it wraps (once per launch otherwise) */
        i %= m->n;
    return m->s[i];
}

int tl_policy_setup_jobs(tl_policy *p, const tl_job_ctx_plan *plan, tl_ctx_id *ctxs,
                         tl_stream_map *maps, tl_err *err)
{
    tl_ctx_id shared = -1;
    for (int j = 0; j < p->n_jobs; j++) {
        tl_job *job = &p->jobs[j];
        tl_ctx_id ctx = shared;
        if (!plan->shared || shared < 0) {
            tl_ctx_config c = {
                .kind = plan->kind,
                .job = plan->shared ? -1 : j,
                .sm_percent = plan->sm_percent ? plan->sm_percent[j] : 0,
                .mps_priority = plan->mps_priority ? plan->mps_priority[j] : 0,
            };
            int r = tl_dev_ctx_create(p->dev, &c, &ctx, err);
            if (r < 0)
                return r;
            if (plan->shared)
                shared = ctx;
        }
        if (ctxs)
            ctxs[j] = ctx;
        int prio = plan->stream_prio ? plan->stream_prio[j]
                                     : tl_policy_stream_priority(p, job->priority);
        int r = tl_stream_map_create(&maps[j], p->dev, ctx, job, prio, err);
        if (r < 0)
            return r;
    }
    return 0;
}

/* ---- task queue ---- */

void tl_task_queue_init(tl_task_queue *q)
{
    memset(q, 0, sizeof *q);
}

void tl_task_queue_close(tl_task_queue *q)
{
    free(q->v);
    memset(q, 0, sizeof *q);
}

void tl_task_queue_push(tl_task_queue *q, tl_task *t)
{
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 16;
        tl_task **v = tl_xmalloc(cap * sizeof *v);
        for (size_t i = 0; i < q->len; i++)
            v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->cap = cap;
        q->head = 0;
    }
    q->v[(q->head + q->len) % q->cap] = t;
    q->len++;
}

tl_task *tl_task_queue_peek(const tl_task_queue *q)
{
    return q->len ? q->v[q->head] : NULL;
}

tl_task *tl_task_queue_pop(tl_task_queue *q)
{
    if (!q->len)
        return NULL;
    tl_task *t = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    return t;
}
