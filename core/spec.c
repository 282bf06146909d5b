/* Experiment specs: parsing, validation and grid expansion (see spec.h). */
#include "tally/spec.h"
#include "tally/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/rng.h"
#include "tally/sim.h"

const char *tl_role_name(tl_role r)
{
    return r == TL_ROLE_INFERENCE ? "inference" : "training";
}

void tl_experiment_init(tl_experiment *e)
{
    memset(e, 0, sizeof *e);
}

static void job_conf_free(tl_job_conf *j)
{
    free(j->name);
    free(j->trace_path);
    free(j->arrival_path);
    free(j->iteration_kernel);
}

void tl_experiment_close(tl_experiment *e)
{
    free(e->name);
    free(e->sim_params);
    free(e->path);
    for (int i = 0; i < e->n_policies; i++)
        json_decref(e->policies[i].params);
    free(e->policies);
    for (int s = 0; s < e->n_sets; s++) {
        for (int j = 0; j < e->sets[s].n_jobs; j++)
            job_conf_free(&e->sets[s].jobs[j]);
        free(e->sets[s].jobs);
    }
    free(e->sets);
    free(e->loads);
    memset(e, 0, sizeof *e);
}

/* ---------- typed field readers: each names origin and field on error ---------- */

static int check_keys(const json_t *obj, const char *const *allowed, const char *origin,
                      const char *where, tl_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (int i = 0; allowed[i]; i++)
            if (!strcmp(key, allowed[i]))
                ok = true;
        if (!ok)
            return tl_errf(err, TL_EUNKNOWN, "%s: %s: unknown key '%s'", origin, where, key);
    }
    return 0;
}

static int get_number(const json_t *obj, const char *key, double *out, bool *present,
                      const char *origin, const char *where, tl_err *err)
{
    json_t *v = json_object_get(obj, key);
    *present = v != NULL;
    if (!v)
        return 0;
    if (!json_is_number(v))
        return tl_errf(err, TL_ETYPE, "%s: %s: '%s' must be a number", origin, where, key);
    *out = json_number_value(v);
    if (!isfinite(*out))
        return tl_errf(err, TL_ERANGE, "%s: %s: '%s' is not finite", origin, where, key);
    return 0;
}

static int get_string(const json_t *obj, const char *key, const char **out,
                      const char *origin, const char *where, tl_err *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tl_errf(err, TL_ETYPE, "%s: %s: '%s' must be a string", origin, where, key);
    *out = json_string_value(v);
    return 0;
}

/* Resolve a path from a spec: as given if it exists, else beside the spec. */
static char *resolve_path(const char *p, const char *base_dir)
{
    if (p[0] == '/' || !base_dir || access(p, F_OK) == 0)
        return tl_xstrdup(p);
    size_t n = strlen(base_dir) + strlen(p) + 2;
    char *s = tl_xmalloc(n);
    snprintf(s, n, "%s/%s", base_dir, p);
    if (access(s, F_OK) == 0)
        return s;
    free(s);
    return tl_xstrdup(p);
}

static int parse_arrival(const json_t *a, tl_job_conf *j, const char *origin, const char *where,
                         const char *base_dir, tl_err *err)
{
    static const char *const keys[] = { "kind", "rate", "load", "path", NULL };
    if (!json_is_object(a))
        return tl_errf(err, TL_ETYPE, "%s: %s: 'arrival' must be an object", origin, where);
    int r = check_keys(a, keys, origin, where, err);
    if (r < 0)
        return r;
    const char *kind;
    double num;
    bool has_rate, has_load;
    if ((r = get_string(a, "kind", &kind, origin, where, err)) < 0)
        return r;
    if (!kind)
        return tl_errf(err, TL_EMISSING, "%s: %s: arrival needs 'kind'", origin, where);
    if (!strcmp(kind, "closed")) {
        j->arrival = TL_ARRIVAL_CLOSED;
    } else if (!strcmp(kind, "poisson")) {
        if ((r = get_number(a, "rate", &num, &has_rate, origin, where, err)) < 0)
            return r;
        if (has_rate) {
            if (!(num > 0) || num > 1e7)
                return tl_errf(err, TL_ERANGE, "%s: %s: arrival rate %g must be in (0, 1e7] per s",
                               origin, where, num);
            j->arrival = TL_ARRIVAL_POISSON_RATE;
            j->rate = num;
        }
        if ((r = get_number(a, "load", &num, &has_load, origin, where, err)) < 0)
            return r;
        if (has_load) {
            if (!(num > 0) || num > 1)
                return tl_errf(err, TL_ERANGE, "%s: %s: arrival load %g must be in (0, 1]",
                               origin, where, num);
            j->arrival = TL_ARRIVAL_POISSON_LOAD;
            j->load = num;
        }
        if (has_rate == has_load)
            return tl_errf(err, TL_EMISSING, "%s: %s: poisson arrival needs exactly one of 'rate' or 'load'",
                           origin, where);
    } else if (!strcmp(kind, "file")) {
        const char *p;
        if ((r = get_string(a, "path", &p, origin, where, err)) < 0)
            return r;
        if (!p)
            return tl_errf(err, TL_EMISSING, "%s: %s: file arrival needs 'path'", origin, where);
        if (!*p)
            return tl_errf(err, TL_ERANGE, "%s: %s: arrival 'path' is empty", origin, where);
        j->arrival = TL_ARRIVAL_FILE;
        j->arrival_path = resolve_path(p, base_dir);
    } else {
        return tl_errf(err, TL_EUNKNOWN, "%s: %s: unknown arrival kind '%s' (closed, poisson, file)",
                       origin, where, kind);
    }
    return 0;
}

static int parse_job(const json_t *o, tl_job_conf *j, int idx, const char *origin,
                     const char *base_dir, tl_err *err)
{
    static const char *const keys[] = { "name", "trace", "role", "priority", "slo_ms", "sm_percent",
                                        "model_mb", "arrival", "skip_iterations",
                                        "iteration_kernel", "graph", NULL };
    char where[64];
    snprintf(where, sizeof where, "job %d", idx);
    if (!json_is_object(o))
        return tl_errf(err, TL_ETYPE, "%s: %s: must be an object", origin, where);
    int r = check_keys(o, keys, origin, where, err);
    if (r < 0)
        return r;
    const char *s;
    double num;
    bool has;
    if ((r = get_string(o, "trace", &s, origin, where, err)) < 0)
        return r;
    if (!s)
        return tl_errf(err, TL_EMISSING, "%s: %s: missing 'trace'", origin, where);
    if (!*s)
        return tl_errf(err, TL_ERANGE, "%s: %s: 'trace' is empty", origin, where);
    j->trace_path = resolve_path(s, base_dir);
    if ((r = get_string(o, "name", &s, origin, where, err)) < 0)
        return r;
    if (s && !*s)
        return tl_errf(err, TL_ERANGE, "%s: %s: 'name' is empty", origin, where);
    if (s) {
        j->name = tl_xstrdup(s);
    } else { /* default: the trace's file name without folders and extensions
                (a leading dot is the name's: '.x.json.gz' is '.x', not '') */
        const char *b = strrchr(j->trace_path, '/');
        j->name = tl_xstrdup(b ? b + 1 : j->trace_path);
        char *dot = j->name[0] ? strchr(j->name + 1, '.') : NULL;
        if (dot)
            *dot = 0;
        if (!j->name[0])
            return tl_errf(err, TL_ERANGE, "%s: %s: trace '%s' names no file (it ends in '/')",
                           origin, where, j->trace_path);
    }
    if ((r = get_string(o, "role", &s, origin, where, err)) < 0)
        return r;
    if (!s)
        return tl_errf(err, TL_EMISSING, "%s: %s: missing 'role' (inference or training)", origin, where);
    if (!strcmp(s, "inference"))
        j->role = TL_ROLE_INFERENCE;
    else if (!strcmp(s, "training"))
        j->role = TL_ROLE_TRAINING;
    else
        return tl_errf(err, TL_EUNKNOWN, "%s: %s: unknown role '%s' (inference or training)", origin, where, s);
    j->priority = j->role == TL_ROLE_INFERENCE ? 0 : 1;
    if ((r = get_number(o, "priority", &num, &has, origin, where, err)) < 0)
        return r;
    if (has) {
        if (num != floor(num) || num < 0 || num > 63)
            return tl_errf(err, TL_ERANGE, "%s: %s: priority %g must be an integer in [0, 63]", origin, where, num);
        j->priority = (int)num;
    }
    if ((r = get_number(o, "slo_ms", &num, &has, origin, where, err)) < 0)
        return r;
    if (has) {
        if (!(num >= 1e-3) || num > 1e6) /* below 1 us it rounds to nothing: no SLO anyone runs */
            return tl_errf(err, TL_ERANGE, "%s: %s: slo_ms %g must be in [0.001, 1e6] (1 us to 1000 s)",
                           origin, where, num);
        j->slo_ns = (tl_ns)llround(num * 1e6);
    }
    if ((r = get_number(o, "sm_percent", &num, &has, origin, where, err)) < 0)
        return r;
    if (has) {
        if (!(num > 0) || num > 100)
            return tl_errf(err, TL_ERANGE, "%s: %s: sm_percent %g must be in (0, 100]", origin, where, num);
        j->sm_percent = num;
    }
    if ((r = get_number(o, "model_mb", &num, &has, origin, where, err)) < 0)
        return r;
    if (has) {
        if (num < 0 || num > 1e6)
            return tl_errf(err, TL_ERANGE, "%s: %s: model_mb %g must be in [0, 1e6]", origin, where, num);
        j->model_bytes = (uint64_t)llround(num * 1e6);
    }
    if ((r = get_number(o, "skip_iterations", &num, &has, origin, where, err)) < 0)
        return r;
    if (has) {
        if (num != floor(num) || num < 0 || num > 1e6)
            return tl_errf(err, TL_ERANGE, "%s: %s: skip_iterations %g must be a count", origin, where, num);
        j->skip_iterations = (int)num;
    }
    if ((r = get_string(o, "iteration_kernel", &s, origin, where, err)) < 0)
        return r;
    if (s && !*s) /* it would split as if it were not there */
        return tl_errf(err, TL_ERANGE, "%s: %s: iteration_kernel is empty (give a part of a kernel "
                       "name, or leave it out)", origin, where);
    if (s)
        j->iteration_kernel = tl_xstrdup(s);
    json_t *g = json_object_get(o, "graph");
    if (g) {
        if (!json_is_boolean(g))
            return tl_errf(err, TL_ETYPE, "%s: %s: 'graph' must be true or false", origin, where);
        j->graph = json_is_true(g);
    }
    j->arrival = TL_ARRIVAL_CLOSED;
    json_t *a = json_object_get(o, "arrival");
    if (a && (r = parse_arrival(a, j, origin, where, base_dir, err)) < 0)
        return r;
    if (j->role == TL_ROLE_TRAINING && j->arrival != TL_ARRIVAL_CLOSED)
        return tl_errf(err, TL_EFORMAT, "%s: %s: a training job runs closed loop; drop 'arrival'", origin, where);
    return 0;
}

/* Is this name job i's to take: does an earlier job, or a later one named
 * in the spec, have it? (Later default names give way to job i.) */
static bool name_taken(const tl_job_set *set, const bool *named, int i, const char *name)
{
    for (int k = 0; k < set->n_jobs; k++)
        if (k != i && (k < i || named[k]) && !strcmp(set->jobs[k].name, name))
            return true;
    return false;
}

static int parse_jobs(const json_t *arr, tl_job_set *set, const char *origin, const char *base_dir,
                      tl_err *err)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return tl_errf(err, TL_EMISSING, "%s: 'jobs' must be a non-empty array", origin);
    if (json_array_size(arr) > 64)
        return tl_errf(err, TL_ERANGE, "%s: at most 64 jobs per run", origin);
    set->n_jobs = (int)json_array_size(arr);
    set->jobs = tl_xcalloc((size_t)set->n_jobs, sizeof *set->jobs);
    for (int i = 0; i < set->n_jobs; i++) {
        int r = parse_job(json_array_get(arr, (size_t)i), &set->jobs[i], i, origin, base_dir, err);
        if (r < 0)
            return r;
    }
    /* Results are grouped by job name, so the jobs of a run need distinct
     * ones: given names must differ; a default name (the trace's) that an
     * earlier job, or a named one, has gets the first free suffix. */
    bool named[64]; /* at most 64 jobs, checked above */
    for (int i = 0; i < set->n_jobs; i++) {
        named[i] = json_object_get(json_array_get(arr, (size_t)i), "name") != NULL;
        for (int k = 0; k < i; k++)
            if (named[i] && named[k] && !strcmp(set->jobs[k].name, set->jobs[i].name))
                return tl_errf(err, TL_EFORMAT, "%s: jobs %d and %d are both named '%s'", origin, k, i,
                               set->jobs[i].name);
    }
    for (int i = 0; i < set->n_jobs; i++) {
        if (named[i] || !name_taken(set, named, i, set->jobs[i].name))
            continue;
        size_t n = strlen(set->jobs[i].name) + 16;
        char *u = tl_xmalloc(n);
        for (int suffix = 2;; suffix++) {
            snprintf(u, n, "%s-%d", set->jobs[i].name, suffix);
            if (!name_taken(set, named, i, u))
                break;
        }
        free(set->jobs[i].name);
        set->jobs[i].name = u;
    }
    return 0;
}

/* No params and {} are the same parameters (the policy's defaults). */
static bool same_params(const json_t *a, const json_t *b)
{
    if (!a || !json_object_size(a))
        return !b || !json_object_size(b);
    return b && json_equal((json_t *)a, (json_t *)b);
}

static int parse_policies(tl_experiment *e, const json_t *arr, const char *origin, tl_err *err)
{
    if (json_is_string(arr) || json_is_object(arr)) { /* a single policy */
        json_t *one = json_array();
        json_array_append((json_t *)one, (json_t *)arr);
        int r = parse_policies(e, one, origin, err);
        json_decref(one);
        return r;
    }
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return tl_errf(err, TL_EMISSING, "%s: 'policies' must be a non-empty array of names or {name, params}", origin);
    e->n_policies = (int)json_array_size(arr);
    e->policies = tl_xcalloc((size_t)e->n_policies, sizeof *e->policies);
    for (int i = 0; i < e->n_policies; i++) {
        json_t *p = json_array_get(arr, (size_t)i);
        const char *name = NULL;
        json_t *params = NULL;
        if (json_is_string(p)) {
            name = json_string_value(p);
        } else if (json_is_object(p)) {
            static const char *const keys[] = { "name", "params", NULL };
            char where[32];
            snprintf(where, sizeof where, "policy %d", i);
            int r = check_keys(p, keys, origin, where, err);
            if (r < 0)
                return r;
            name = json_string_value(json_object_get(p, "name"));
            params = json_object_get(p, "params");
            if (params && !json_is_object(params))
                return tl_errf(err, TL_ETYPE, "%s: policy %d: 'params' must be an object", origin, i);
        }
        if (!name)
            return tl_errf(err, TL_EMISSING, "%s: policy %d: needs a name", origin, i);
        e->policies[i].ops = tl_policy_find(name);
        if (!e->policies[i].ops)
            return tl_errf(err, TL_EUNKNOWN, "%s: unknown policy '%s' (tally-sim --list-policies)", origin, name);
        tl_err pe = { 0 };
        int r = tl_policy_check_params(e->policies[i].ops, params, &pe);
        if (r < 0)
            return tl_errf(err, r, "%s: policy %d: %s", origin, i, pe.msg);
        e->policies[i].params = params ? json_deep_copy(params) : NULL;
        for (int k = 0; k < i; k++) /* the same runs twice: their results would clash */
            if (e->policies[k].ops == e->policies[i].ops &&
                same_params(e->policies[k].params, e->policies[i].params))
                return tl_errf(err, TL_EFORMAT, "%s: policies %d and %d are the same (%s)", origin, k, i, name);
    }
    return 0;
}

/* A spec's policies: "policies", or its one-policy spelling "policy"; NULL
 * when neither is there. Both at once is refused: "policies" was read and
 * "policy" silently ignored. */
static int spec_policies(const json_t *spec, const char *origin, const json_t **out, tl_err *err)
{
    const json_t *pol = json_object_get(spec, "policies"), *one = json_object_get(spec, "policy");
    *out = pol ? pol : one;
    if (pol && one)
        return tl_errf(err, TL_EFORMAT, "%s: give one of 'policies' or 'policy', not both", origin);
    return 0;
}

/* A spec's job sets: the one of "jobs", else those of "job_sets" (the caller
 * has checked that one of the two is there). */
static int parse_job_sets(tl_experiment *e, const json_t *spec, const char *origin,
                          const char *base_dir, tl_err *err)
{
    const json_t *jobs = json_object_get(spec, "jobs"), *sets = json_object_get(spec, "job_sets");
    if (jobs) {
        e->n_sets = 1;
        e->sets = tl_xcalloc(1, sizeof *e->sets);
        return parse_jobs(jobs, &e->sets[0], origin, base_dir, err);
    }
    if (!json_is_array(sets) || json_array_size(sets) == 0)
        return tl_errf(err, TL_ETYPE, "%s: 'job_sets' must be a non-empty array of job arrays", origin);
    e->n_sets = (int)json_array_size(sets);
    e->sets = tl_xcalloc((size_t)e->n_sets, sizeof *e->sets);
    for (int i = 0; i < e->n_sets; i++) {
        int r = parse_jobs(json_array_get(sets, (size_t)i), &e->sets[i], origin, base_dir, err);
        if (r < 0)
            return r;
    }
    return 0;
}

int tl_spec_check_replaced(const json_t *spec, bool policies, bool jobs, const char *origin,
                           const char *base_dir, tl_err *err)
{
    tl_experiment scratch;
    tl_experiment_init(&scratch);
    const json_t *pol;
    int r = spec_policies(spec, origin, &pol, err);
    if (r == 0 && policies && pol)
        r = parse_policies(&scratch, pol, origin, err);
    if (r == 0 && jobs && (json_object_get(spec, "jobs") || json_object_get(spec, "job_sets")))
        r = parse_job_sets(&scratch, spec, origin, base_dir, err);
    tl_experiment_close(&scratch);
    return r;
}

/* "sim_params": {"KEY": number or string, ...} (include/tally/sim.h,
 * tl_sim_params_set): kept as "KEY=VALUE;..." in key order, checked against
 * this GPU's defaults now so that a bad name or value fails at load time. */
static int parse_sim_params(tl_experiment *e, const json_t *o, const char *origin, tl_err *err)
{
    if (!o)
        return 0;
    if (!json_is_object(o))
        return tl_errf(err, TL_ETYPE, "%s: 'sim_params' must be an object of parameter: value", origin);
    const char **keys = tl_xcalloc(json_object_size(o) + 1, sizeof *keys);
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) keys[n++] = k;
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of keys */
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    size_t cap = 64, len = 0;
    char *list = tl_xmalloc(cap);
    list[0] = 0;
    tl_sim_params p;
    tl_sim_params_default(&p, &e->gpu);
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        json_t *x = json_object_get(o, keys[i]);
        char val[64];
        if (json_is_string(x) && strlen(json_string_value(x)) >= sizeof val) {
            /* cut to fit, "0.1000...0e5" read as 0.1: refused, not shortened */
            r = tl_errf(err, TL_ERANGE, "%s: sim_params.%s: the value is %zu characters long (at "
                        "most %zu)", origin, keys[i], strlen(json_string_value(x)), sizeof val - 1);
            break;
        } else if (json_is_string(x))
            snprintf(val, sizeof val, "%s", json_string_value(x));
        else if (json_is_number(x))
            snprintf(val, sizeof val, "%.17g", json_number_value(x));
        else {
            r = tl_errf(err, TL_ETYPE, "%s: sim_params.%s must be a number or a string", origin, keys[i]);
            break;
        }
        tl_err e2;
        if ((r = tl_sim_params_set(&p, keys[i], val, &e2)) < 0) {
            tl_errf(err, r, "%s: %s", origin, e2.msg);
            break;
        }
        size_t need = len + strlen(keys[i]) + strlen(val) + 3;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            list = tl_xrealloc(list, cap);
        }
        len += (size_t)sprintf(list + len, "%s%s=%s", len ? ";" : "", keys[i], val);
    }
    tl_err e3;
    if (r == 0 && (r = tl_sim_params_validate(&p, &e3)) < 0)
        tl_errf(err, r, "%s: %s", origin, e3.msg);
    free(keys);
    if (r < 0 || n == 0) {
        free(list);
        return r;
    }
    free(e->sim_params);
    e->sim_params = list;
    return 0;
}

/* Below 0.5 ns a window rounds to a run of no time, which the runner refuses
 * later without naming the spec or the option. */
bool tl_spec_duration_ok(double seconds)
{
    return seconds > 0 && seconds <= TL_SPEC_MAX_SECONDS && llround(seconds * 1e9) >= 1;
}

bool tl_spec_warmup_ok(double seconds)
{
    return seconds >= 0 && seconds <= TL_SPEC_MAX_SECONDS;
}

int tl_experiment_set_sim_param(tl_experiment *e, const char *assignment, tl_err *err)
{
    const char *eq = assignment ? strchr(assignment, '=') : NULL;
    if (!eq || eq == assignment)
        return tl_errf(err, TL_EUNKNOWN, "--sim-param '%s': expected KEY=VALUE",
                       assignment ? assignment : "");
    json_t *o = json_object();
    char *list = e->sim_params ? tl_xstrdup(e->sim_params) : NULL;
    for (char *save = NULL, *t = list ? strtok_r(list, ";", &save) : NULL; t;
         t = strtok_r(NULL, ";", &save)) {
        char *q = strchr(t, '=');
        if (q) {
            *q = 0;
            json_object_set_new(o, t, json_string(q + 1));
        }
    }
    free(list);
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
    /* jansson takes UTF-8 only; a key or value of other bytes was dropped
     * and the option silently ignored */
    int r = 0;
    if (json_object_set_new(o, key, json_string(eq + 1)) < 0)
        r = tl_errf(err, TL_EUNKNOWN, "--sim-param '%s': not UTF-8 text", assignment);
    if (r == 0)
        r = parse_sim_params(e, o, "--sim-param", err);
    /* The option's mistake (exit 64, as fidelity's --sim-param and --job say),
     * not bad data: in a spec's "sim_params" the same value exits 65. */
    if (r < 0 && r != TL_EUNKNOWN) {
        r = TL_EUNKNOWN;
        if (err)
            err->code = r;
    }
    json_decref(o);
    return r;
}

/* What a policy's parameters say per job (mps's sm_percents) must fit every
 * job set: setup refused it only at the first shared run, after the alone
 * runs had been simulated, and without naming the spec. */
static int check_policies_fit(const tl_experiment *e, const char *origin, tl_err *err)
{
    for (int p = 0; p < e->n_policies; p++)
        for (int s = 0; s < e->n_sets; s++) {
            tl_err pe = { 0 };
            int r = tl_policy_check_jobs(e->policies[p].ops, e->policies[p].params,
                                         e->sets[s].n_jobs, &pe);
            if (r == 0)
                continue;
            if (e->n_sets == 1)
                return tl_errf(err, r, "%s: policy %d (%s): %s", origin, p, e->policies[p].ops->name,
                               pe.msg);
            return tl_errf(err, r, "%s: policy %d (%s), job set %d: %s", origin, p,
                           e->policies[p].ops->name, s, pe.msg);
        }
    return 0;
}

/* "loads" set the arrivals of inference jobs. A job set with none ran the
 * same runs once per load, each labelled with a load that changed nothing:
 * a sweep that swept nothing, refused. */
static int check_loads_apply(const tl_experiment *e, const char *origin, const char *what, int code,
                             tl_err *err)
{
    for (int s = 0; s < e->n_sets; s++) {
        bool inference = false;
        for (int j = 0; j < e->sets[s].n_jobs; j++)
            inference |= e->sets[s].jobs[j].role == TL_ROLE_INFERENCE;
        if (inference)
            continue;
        if (e->n_sets == 1)
            return tl_errf(err, code, "%s: %s set inference jobs' arrivals, and no job is an "
                           "inference job", origin, what);
        return tl_errf(err, code, "%s: %s set inference jobs' arrivals, and job set %d has no "
                       "inference job", origin, what, s);
    }
    return 0;
}

/* The loads in e->loads: distinct, in (0, 1], and something to apply to.
 * what names them in messages; code is the error's (a spec's mistake or the
 * command line's). */
static int check_loads(const tl_experiment *e, const char *origin, const char *what, int code,
                       tl_err *err)
{
    for (int i = 0; i < e->n_loads; i++) {
        if (!(e->loads[i] > 0) || e->loads[i] > 1)
            return tl_errf(err, code == TL_EFORMAT ? TL_ERANGE : code,
                           "%s: %s[%d] must be a number in (0, 1]", origin, what, i);
        for (int m = 0; m < i; m++)
            if (e->loads[m] == e->loads[i])
                return tl_errf(err, code, "%s: %s %d and %d are the same (%g)", origin, what, m, i,
                               e->loads[i]);
    }
    return check_loads_apply(e, origin, what, code, err);
}

int tl_experiment_set_loads(tl_experiment *e, const double *loads, int n, tl_err *err)
{
    free(e->loads);
    e->n_loads = n;
    e->loads = tl_xcalloc((size_t)(n > 0 ? n : 1), sizeof *e->loads);
    memcpy(e->loads, loads, (size_t)n * sizeof *loads);
    return check_loads(e, "command line", "--load", TL_EUNKNOWN, err);
}

int tl_experiment_from_json(tl_experiment *e, const json_t *spec, const char *origin,
                            const char *base_dir, tl_err *err)
{
    static const char *const keys[] = { "name", "gpu", "duration_s", "warmup_s", "seed",
                                        "repetitions", "kernels", "policies", "policy", "jobs",
                                        "job_sets", "loads", "description", "sim_params", NULL };
    if (!json_is_object(spec))
        return tl_errf(err, TL_EFORMAT, "%s: the spec must be a JSON object", origin);
    int r = check_keys(spec, keys, origin, "spec", err);
    if (r < 0)
        return r;
    const json_t *desc = json_object_get(spec, "description");
    if (desc && !json_is_string(desc))
        return tl_errf(err, TL_ETYPE, "%s: 'description' must be a string", origin);
    const char *s;
    double num;
    bool has;
    if ((r = get_string(spec, "name", &s, origin, "spec", err)) < 0)
        return r;
    if (s) {
        e->name = tl_xstrdup(s);
    } else {
        const char *b = strrchr(origin, '/');
        e->name = tl_xstrdup(b ? b + 1 : origin);
        char *dot = strrchr(e->name, '.');
        if (dot && dot != e->name)
            *dot = 0;
    }
    if ((r = get_string(spec, "gpu", &s, origin, "spec", err)) < 0)
        return r;
    tl_err gerr = { 0 };
    /* a GPU already on e (--gpu, looked up by tl_experiment_from_overrides)
     * stands when the spec names none */
    if ((s || !e->gpu.name[0]) && (r = tl_gpu_lookup(s ? s : "H100", &e->gpu, &gerr)) < 0)
        return tl_errf(err, r, "%s: %s", origin, gerr.msg);
    e->duration_ns = 10 * TL_NS_PER_S;
    if ((r = get_number(spec, "duration_s", &num, &has, origin, "spec", err)) < 0)
        return r;
    if (has) {
        if (!tl_spec_duration_ok(num))
            return tl_errf(err, TL_ERANGE, "%s: duration_s %g must be in (0, %d] and at least "
                           "1 ns", origin, num, TL_SPEC_MAX_SECONDS);
        e->duration_ns = (tl_ns)llround(num * 1e9);
    }
    e->warmup_ns = TL_NS_PER_S;
    if ((r = get_number(spec, "warmup_s", &num, &has, origin, "spec", err)) < 0)
        return r;
    if (has) {
        if (!tl_spec_warmup_ok(num))
            return tl_errf(err, TL_ERANGE, "%s: warmup_s %g must be in [0, %d]", origin, num,
                           TL_SPEC_MAX_SECONDS);
        e->warmup_ns = (tl_ns)llround(num * 1e9);
    }
    e->seed = 1;
    if ((r = get_number(spec, "seed", &num, &has, origin, "spec", err)) < 0)
        return r;
    if (has) {
        if (num < 0 || num != floor(num) || num > 9007199254740991.0)
            return tl_errf(err, TL_ERANGE, "%s: seed %g must be a non-negative integer", origin, num);
        e->seed = (uint64_t)num;
    }
    e->repetitions = 1;
    if ((r = get_number(spec, "repetitions", &num, &has, origin, "spec", err)) < 0)
        return r;
    if (has) {
        if (num < 1 || num != floor(num) || num > 1000)
            return tl_errf(err, TL_ERANGE, "%s: repetitions %g must be an integer in [1, 1000]", origin, num);
        e->repetitions = (int)num;
    }
    json_t *k = json_object_get(spec, "kernels");
    if (k) {
        if (!json_is_boolean(k))
            return tl_errf(err, TL_ETYPE, "%s: 'kernels' must be true or false", origin);
        e->record_kernels = json_is_true(k);
    }
    if ((r = parse_sim_params(e, json_object_get(spec, "sim_params"), origin, err)) < 0)
        return r;
    const json_t *pol;
    if ((r = spec_policies(spec, origin, &pol, err)) < 0)
        return r;
    if (!pol)
        return tl_errf(err, TL_EMISSING, "%s: missing 'policies'", origin);
    if ((r = parse_policies(e, pol, origin, err)) < 0)
        return r;
    if (!json_object_get(spec, "jobs") == !json_object_get(spec, "job_sets"))
        return tl_errf(err, TL_EMISSING, "%s: give exactly one of 'jobs' or 'job_sets'", origin);
    if ((r = parse_job_sets(e, spec, origin, base_dir, err)) < 0)
        return r;
    if ((r = check_policies_fit(e, origin, err)) < 0)
        return r;
    json_t *loads = json_object_get(spec, "loads");
    if (loads) {
        if (!json_is_array(loads) || json_array_size(loads) == 0)
            return tl_errf(err, TL_ETYPE, "%s: 'loads' must be a non-empty array of numbers", origin);
        e->n_loads = (int)json_array_size(loads);
        e->loads = tl_xcalloc((size_t)e->n_loads, sizeof *e->loads);
        for (int i = 0; i < e->n_loads; i++) {
            json_t *v = json_array_get(loads, (size_t)i);
            if (!json_is_number(v))
                return tl_errf(err, TL_ERANGE, "%s: loads[%d] must be a number in (0, 1]", origin, i);
            e->loads[i] = json_number_value(v);
        }
        return check_loads(e, origin, "loads", TL_EFORMAT, err);
    }
    return 0;
}

int tl_experiment_load(tl_experiment *e, const char *path, tl_err *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (access(path, R_OK) != 0)
            return tl_errf(err, TL_EIO, "%s: cannot read the spec", path);
        return tl_errf(err, TL_EFORMAT, "%s:%d:%d: malformed JSON: %s", path, je.line, je.column, je.text);
    }
    char *dir = tl_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    int r = tl_experiment_from_json(e, root, path, dir, err);
    free(dir);
    json_decref(root);
    if (r == 0)
        e->path = tl_xstrdup(path);
    return r;
}

/* ---------- expansion ---------- */

static json_t *job_conf_json(const tl_job_conf *j)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:I, s:i}", "name", j->name, "trace",
                          j->trace_path, "role", tl_role_name(j->role), "priority", j->priority,
                          "slo_ns", (json_int_t)j->slo_ns, "sm_percent", j->sm_percent,
                          "model_bytes", (json_int_t)j->model_bytes, "skip_iterations",
                          j->skip_iterations);
    if (j->iteration_kernel)
        json_object_set_new(o, "iteration_kernel", json_string(j->iteration_kernel));
    if (j->graph) /* only when set: older run keys stay valid */
        json_object_set_new(o, "graph", json_true());
    json_t *a = json_object();
    switch (j->arrival) {
    case TL_ARRIVAL_CLOSED:
        json_object_set_new(a, "kind", json_string("closed"));
        break;
    case TL_ARRIVAL_POISSON_RATE:
        json_object_set_new(a, "kind", json_string("poisson"));
        json_object_set_new(a, "rate", json_real(j->rate));
        break;
    case TL_ARRIVAL_POISSON_LOAD:
        json_object_set_new(a, "kind", json_string("poisson"));
        json_object_set_new(a, "load", json_real(j->load));
        break;
    case TL_ARRIVAL_FILE:
        json_object_set_new(a, "kind", json_string("file"));
        json_object_set_new(a, "path", json_string(j->arrival_path));
        break;
    }
    json_object_set_new(o, "arrival", a);
    return o;
}

void tl_item_job_confs(const tl_experiment *e, const tl_run_item *it, tl_job_conf *out, int *n_out)
{
    const tl_job_set *set = &e->sets[it->set];
    int n = 0;
    for (int j = 0; j < set->n_jobs; j++) {
        if (it->alone_job >= 0 && j != it->alone_job)
            continue;
        out[n] = set->jobs[j]; /* shallow: strings stay owned by the experiment */
        if (it->load >= 0 && out[n].role == TL_ROLE_INFERENCE) {
            out[n].arrival = TL_ARRIVAL_POISSON_LOAD;
            out[n].load = e->loads[it->load];
        }
        n++;
    }
    *n_out = n;
}

/* 128-bit FNV-1a-like hash of the canonical config, as 32 hex digits. */
static void hash_key(const char *s, char out[33])
{
    uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h1 = (h1 ^ *p) * 0x100000001b3ULL;
        h2 = (h2 ^ *p) * 0x100000001b3ULL + (h1 >> 29);
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

static void finish_item(const tl_experiment *e, tl_run_item *it)
{
    tl_job_conf confs[64];
    int n;
    tl_item_job_confs(e, it, confs, &n);
    json_t *jobs = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(jobs, job_conf_json(&confs[i]));
    const tl_policy_conf *p = it->policy >= 0 ? &e->policies[it->policy] : NULL;
    it->config = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:o, s:b}", "kind", "sim",
                           "gpu", e->gpu.name, "policy", p ? p->ops->name : "alone",
                           "duration_ns", (json_int_t)e->duration_ns, "warmup_ns",
                           (json_int_t)e->warmup_ns, "seed", (json_int_t)it->seed, "repetition",
                           it->repetition, "jobs", jobs, "kernels", e->record_kernels);
    json_object_set_new(it->config, "policy_params",
                        p && p->params ? json_deep_copy(p->params) : json_object());
    /* Alone runs carry the load inside their job's arrival only, so that a
     * training job's alone run is shared by every load of a sweep. */
    if (it->load >= 0 && it->policy >= 0)
        json_object_set_new(it->config, "load", json_real(e->loads[it->load]));
    if (!e->hardware)
        json_object_set_new(it->config, "sim_model", json_integer(TL_SIM_MODEL_REVISION));
    /* only when set: runs keep their keys otherwise */
    if (e->sim_params)
        json_object_set_new(it->config, "sim_params", json_string(e->sim_params));
    char *canon = json_dumps(it->config, JSON_SORT_KEYS | JSON_COMPACT);
    hash_key(canon, it->key);
    free(canon);
}

/* Where a key goes in a table of 1 << bits slots: its first 16 hex digits
 * (a hash already), spread by a multiply. */
static size_t key_slot(const char key[33], int bits)
{
    uint64_t h = 0;
    for (int i = 0; i < 16; i++)
        h = h << 4 | (uint64_t)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
    return (size_t)((h * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

int tl_experiment_expand(const tl_experiment *e, tl_run_item **items, size_t *n, tl_err *err)
{
    size_t loads = e->n_loads ? (size_t)e->n_loads : 1;
    size_t max_jobs = 0;
    for (int s = 0; s < e->n_sets; s++)
        max_jobs += (size_t)e->sets[s].n_jobs;
    size_t cap = (max_jobs * loads + (size_t)e->n_policies * (size_t)e->n_sets * loads) *
                 (size_t)e->repetitions;
    if (cap > 1000000)
        return tl_errf(err, TL_ERANGE, "%s: the sweep has %zu runs; at most 1000000", e->name, cap);
    tl_run_item *v = tl_xcalloc(cap ? cap : 1, sizeof *v);
    size_t k = 0;
    /* Alone baselines first: shared runs need them for relative metrics. Their
     * keys deduplicate identical job configs across sets and loads: the first
     * of each is kept, found in a hash table of its index + 1 (0: empty), at
     * most half full. Each new key was compared with every one before it,
     * which near the 1000000-run limit took hours. */
    int bits = 4;
    while (((size_t)1 << bits) < 2 * max_jobs * loads * (size_t)e->repetitions)
        bits++;
    size_t mask = ((size_t)1 << bits) - 1, *seen = tl_xcalloc(mask + 1, sizeof *seen);
    for (int rep = 0; rep < e->repetitions; rep++)
        for (int s = 0; s < e->n_sets; s++)
            for (size_t l = 0; l < loads; l++)
                for (int j = 0; j < e->sets[s].n_jobs; j++) {
                    tl_run_item *it = &v[k];
                    it->policy = -1;
                    it->set = s;
                    it->load = e->n_loads ? (int)l : -1;
                    it->repetition = rep;
                    it->alone_job = j;
                    it->seed = tl_rng_derive_seed(e->seed, (uint64_t)rep, 0) >> 1; /* fits SQLite's signed integers */
                    finish_item(e, it);
                    size_t h = key_slot(it->key, bits);
                    bool dup = false;
                    while (seen[h] && !(dup = !strcmp(v[seen[h] - 1].key, it->key)))
                        h = (h + 1) & mask;
                    if (dup) {
                        json_decref(it->config);
                        memset(it, 0, sizeof *it);
                    } else {
                        seen[h] = ++k;
                    }
                }
    free(seen);
    for (int rep = 0; rep < e->repetitions; rep++)
        for (int s = 0; s < e->n_sets; s++)
            for (size_t l = 0; l < loads; l++)
                for (int p = 0; p < e->n_policies; p++) {
                    tl_run_item *it = &v[k++];
                    it->policy = p;
                    it->set = s;
                    it->load = e->n_loads ? (int)l : -1;
                    it->repetition = rep;
                    it->alone_job = -1;
                    it->seed = tl_rng_derive_seed(e->seed, (uint64_t)rep, 0) >> 1; /* fits SQLite's signed integers */
                    finish_item(e, it);
                }
    *items = v;
    *n = k;
    return 0;
}

void tl_item_alone_key(const tl_experiment *e, const tl_run_item *it, int j, char key[33])
{
    tl_run_item a = *it;
    a.policy = -1;
    a.alone_job = j;
    a.config = NULL;
    finish_item(e, &a);
    memcpy(key, a.key, 33);
    json_decref(a.config);
}

void tl_run_items_free(tl_run_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(items[i].config);
    free(items);
}
