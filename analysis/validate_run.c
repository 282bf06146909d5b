/* Validation, the parts that run or write things: the experiment to simulate
 * for a set of hardware runs, the simulation itself (the ordinary sweep on the
 * simulated device), and the combined database the sim-vs-hw plot reads
 * (include/tally/validate.h). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/results.h"
#include "tally/rng.h"
#include "tally/sim.h"
#include "tally/sweep.h"
#include "tally/validate.h"
#include "an_internal.h"

/* ---------- the experiment the hardware ran ---------- */

/* Fill the spec's policies, duration, warm-up and repetitions from the
 * hardware runs. */
static int hw_grid(tl_analysis *a, const char *experiment, json_t *spec, tl_err *err)
{
    sqlite3_stmt *st;
    static const char where[] = " FROM runs WHERE COALESCE(status,'done')='done' AND kind='hw' "
                                "AND (?1 IS NULL OR experiment=?1)";
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(DISTINCT duration_ns), COUNT(DISTINCT warmup_ns), MIN(duration_ns), "
             "MIN(warmup_ns), MAX(repetition), COUNT(*), COUNT(DISTINCT experiment)%s",
             where);
    int r = tl_an_prepare(a, sql, &st, err);
    if (r < 0)
        return r;
    if (experiment)
        sqlite3_bind_text(st, 1, experiment, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 5) == 0) {
        sqlite3_finalize(st);
        return tl_errf(err, TL_EMISSING, "%s: no finished hardware runs (kind 'hw')%s%s", a->path,
                       experiment ? " of experiment " : "", experiment ? experiment : "");
    }
    int n_dur = sqlite3_column_int(st, 0), n_warm = sqlite3_column_int(st, 1);
    long long dur = sqlite3_column_int64(st, 2), warm = sqlite3_column_int64(st, 3);
    int reps = sqlite3_column_int(st, 4) + 1, n_exp = sqlite3_column_int(st, 6);
    sqlite3_finalize(st);
    if (n_exp > 1)
        return tl_errf(err, TL_EMISSING,
                       "%s: hardware runs of %d experiments: choose one with --experiment", a->path,
                       n_exp);
    if (n_dur != 1 || n_warm != 1)
        return tl_errf(err, TL_EMISSING,
                       "%s: runs.duration_ns/warmup_ns: the hardware runs used %d durations and %d "
                       "warm-ups; simulate them yourself and give --sim-db",
                       a->path, n_dur, n_warm);
    if (dur <= 0 || warm < 0 || reps < 1 || reps > 100000)
        return tl_errf(err, TL_ERANGE, "%s: runs: duration %lld ns, warm-up %lld ns, %d repetitions "
                                       "are out of range", a->path, dur, warm, reps);
    json_object_set_new(spec, "duration_s", json_real((double)dur / 1e9));
    json_object_set_new(spec, "warmup_s", json_real((double)warm / 1e9));
    json_object_set_new(spec, "repetitions", json_integer(reps));
    json_object_set_new(spec, "kernels", json_false());

    snprintf(sql, sizeof sql,
             "SELECT policy, COALESCE(policy_params,''), MIN(run_id)%s AND policy != 'alone' "
             "GROUP BY 1, 2 ORDER BY 3",
             where);
    if ((r = tl_an_prepare(a, sql, &st, err)) < 0)
        return r;
    if (experiment)
        sqlite3_bind_text(st, 1, experiment, -1, SQLITE_STATIC);
    json_t *pols = json_array();
    while (r == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *params = (const char *)sqlite3_column_text(st, 1);
        json_t *p = json_pack("{s:s}", "name", name ? name : "");
        if (params && *params && strcmp(params, "{}")) {
            json_t *pj = json_loads(params, 0, NULL);
            if (!json_is_object(pj)) {
                json_decref(pj);
                json_decref(p);
                r = tl_errf(err, TL_EFORMAT, "%s: runs.policy_params of policy %s: not a JSON "
                                             "object", a->path, name ? name : "?");
                break;
            }
            json_object_set_new(p, "params", pj);
        }
        json_array_append_new(pols, p);
    }
    sqlite3_finalize(st);
    if (r == 0 && json_array_size(pols) == 0)
        r = tl_errf(err, TL_EMISSING, "%s: only 'alone' hardware runs: no policy to validate",
                    a->path);
    if (r == 0) {
        json_object_del(spec, "policy");
        json_object_set(spec, "policies", pols);
    }
    json_decref(pols);
    return r;
}

int tl_validation_experiment(tl_experiment *e, const char *spec_path, const char *hw_db,
                             const char *experiment, long long seed, tl_err *err)
{
    json_error_t je;
    json_t *spec = json_load_file(spec_path, JSON_REJECT_DUPLICATES, &je);
    if (!spec) {
        if (access(spec_path, R_OK) != 0)
            return tl_errf(err, TL_EIO, "%s: cannot read the spec: %s", spec_path, strerror(errno));
        return tl_errf(err, TL_EFORMAT, "%s:%d:%d: malformed JSON: %s", spec_path, je.line,
                       je.column, je.text);
    }
    if (!json_is_object(spec)) {
        json_decref(spec);
        return tl_errf(err, TL_EFORMAT, "%s: the spec must be a JSON object", spec_path);
    }
    tl_analysis a;
    int r = tl_analysis_open(&a, hw_db, err);
    if (r == 0) {
        r = hw_grid(&a, experiment, spec, err);
        tl_analysis_close(&a);
    }
    if (r == 0 && seed >= 0)
        json_object_set_new(spec, "seed", json_integer(seed));
    if (r == 0) {
        char *dir = tl_xstrdup(spec_path), *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            strcpy(dir, ".");
        r = tl_experiment_from_json(e, spec, spec_path, dir, err);
        free(dir);
        if (r == 0)
            e->path = tl_xstrdup(spec_path);
    }
    json_decref(spec);
    return r;
}

/* A hardware run's stored seed and its repetition. */
typedef struct run_seed {
    long long seed, repetition;
} run_seed;

/* Whether base derives every run's seed (core/spec.c's derivation). */
static bool derives_all(uint64_t base, const run_seed *runs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((long long)(tl_rng_derive_seed(base, (uint64_t)runs[i].repetition, 0) >> 1) !=
            runs[i].seed)
            return false;
    return true;
}

int tl_validation_hw_seed(const char *spec_path, const char *hw_db, const char *experiment,
                          long long *seed, tl_err *err)
{
    json_error_t je;
    json_t *spec = json_load_file(spec_path, 0, &je);
    if (!spec)
        return 0; /* tl_validation_experiment reports it */
    json_t *js = json_object_get(spec, "seed");
    /* the spec's default seed is 1 (core/spec.c); a bad one is the spec
     * loader's to report */
    uint64_t spec_seed = json_is_integer(js) && json_integer_value(js) >= 0
                             ? (uint64_t)json_integer_value(js) : 1;
    json_decref(spec);
    tl_analysis a;
    int r = tl_analysis_open(&a, hw_db, err);
    if (r < 0)
        return r;
    enum { MAX_RUNS = 1000 }; /* distinct (seed, repetition) pairs: one per repetition */
    run_seed *runs = tl_xcalloc(MAX_RUNS, sizeof *runs);
    size_t n = 0;
    sqlite3_stmt *st;
    r = tl_an_prepare(&a, "SELECT DISTINCT seed, repetition FROM runs WHERE kind='hw' "
                          "AND COALESCE(status,'done')='done' AND (?1 IS NULL OR experiment=?1) "
                          "AND seed IS NOT NULL AND repetition IS NOT NULL LIMIT 1000", &st, err);
    if (r == 0) {
        if (experiment)
            sqlite3_bind_text(st, 1, experiment, -1, SQLITE_STATIC);
        while (n < MAX_RUNS && sqlite3_step(st) == SQLITE_ROW) {
            runs[n].seed = sqlite3_column_int64(st, 0);
            runs[n].repetition = sqlite3_column_int64(st, 1);
            n++;
        }
        sqlite3_finalize(st);
    }
    tl_analysis_close(&a);
    int found = 0;
    if (r == 0 && n > 0 && !derives_all(spec_seed, runs, n))
        for (uint64_t b = 0; b <= TL_VALIDATION_SEED_SEARCH && !found; b++)
            if (b != spec_seed && derives_all(b, runs, n)) {
                *seed = (long long)b;
                found = 1;
            }
    free(runs);
    return r < 0 ? r : found;
}

/* hw_db opened read-only, or an error naming it. */
static int open_hw_db(const char *hw_db, sqlite3 **db, tl_err *err)
{
    *db = NULL;
    if (tl_results_sqlite_open(hw_db, SQLITE_OPEN_READONLY, db) == SQLITE_OK)
        return 0;
    int r = tl_errf(err, TL_EIO, "%s: cannot open: %s", hw_db, *db ? sqlite3_errmsg(*db) : "?");
    sqlite3_close(*db);
    *db = NULL;
    return r;
}

int tl_validation_hw_meta(const char *hw_db, const char *key, char *buf, size_t cap, tl_err *err)
{
    sqlite3 *db;
    int r = open_hw_db(hw_db, &db, err);
    if (r < 0)
        return r;
    sqlite3_stmt *st = NULL;
    int found = 0;
    /* a database without a meta table (older, or foreign) has no such key */
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key=?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
            snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
            found = 1;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return found;
}

/* The replay's issue cost per op of a graph, from hw_db's alone runs of
 * inference jobs (their run metrics cuda_graph_lag_*: each batch's submission
 * after the event that issued its first op, summed, and the batches' ops): 1
 * and the rounded mean in *per_op_ns, 0 when no such run recorded it (older
 * databases), < 0 on errors. The alone runs of the inference jobs are the
 * cleanest record of it (no other job's completions in the loop); a training
 * job's host waits on its launch queue, which its own timeline models. */
static int hw_graph_lag_per_op(const char *hw_db, long long *per_op_ns, tl_err *err)
{
    sqlite3 *db;
    int r = open_hw_db(hw_db, &db, err);
    if (r < 0)
        return r;
    static const char *const sql =
        "SELECT SUM(CASE m.name WHEN 'cuda_graph_lag_sum_ns' THEN m.value END),"
        " SUM(CASE m.name WHEN 'cuda_graph_lag_ops' THEN m.value END)"
        " FROM metrics m JOIN runs r ON r.run_id = m.run_id"
        " WHERE m.job_id = -1 AND r.kind = 'hw' AND r.policy = 'alone'"
        " AND EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.run_id AND j.role = 'inference')";
    sqlite3_stmt *st = NULL;
    int found = 0;
    /* a database without these tables (foreign) has no such runs */
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL) {
            double sum = sqlite3_column_double(st, 0), ops = sqlite3_column_double(st, 1);
            if (ops >= 1 && sum >= 0) {
                *per_op_ns = (long long)(sum / ops + 0.5);
                found = 1;
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return found;
}

/* Meta keys tally-run records of its replay, and the simulator parameter each
 * one sets. */
static const struct { const char *meta, *param; } hw_meta_params[] = {
    {"hw_stream_gap_ns", "stream_gap_ns"}, /* back-to-back gap, launched one by one */
    {"hw_graph_gap_ns", "graph_gap_ns"},   /* the same inside a CUDA graph */
};

static bool user_set(const char *sim_params, const char *param)
{
    size_t n = strlen(param);
    for (const char *at = sim_params; (at = strstr(at, param)); at += n)
        if ((at == sim_params || at[-1] == ';') && at[n] == '=')
            return true;
    return false;
}

/* Set KEY=VALUE (from what hw_db recorded, named by what) on e and append it
 * to applied. */
static int apply_recorded(tl_experiment *e, const char *hw_db, const char *what, const char *param,
                          const char *val, char *applied, size_t cap, size_t *used, tl_err *err)
{
    char kv[96];
    snprintf(kv, sizeof kv, "%s=%s", param, val);
    tl_sim_params before;
    tl_sim_params_default(&before, &e->gpu);
    if (tl_sim_params_apply(&before, e->sim_params, err) < 0)
        return tl_errf(err, TL_EINVAL, "%s: the simulator parameters '%s' do not apply", hw_db,
                       e->sim_params);
    int r = tl_experiment_set_sim_param(e, kv, err);
    if (r < 0) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return tl_errf(err, r, "%s: %s '%s': %s", hw_db, what, val, why);
    }
    /* The hardware runs' graph jobs arrived at a load of their capacity
     * with the gap they were given (not the replay's): so do the twin's. */
    if (!strcmp(param, "graph_gap_ns") && e->graph_capacity_gap_ns <= 0)
        e->graph_capacity_gap_ns = before.graph_gap_ns;
    if (*used < cap) {
        int w = snprintf(applied + *used, cap - *used, "%s%s", *used ? ";" : "", kv);
        *used += w > 0 ? (size_t)w : 0;
        if (*used > cap)
            *used = cap;
    }
    return 0;
}

int tl_validation_hw_params(tl_experiment *e, const char *hw_db, char *applied, size_t cap,
                            tl_err *err)
{
    if (cap)
        applied[0] = '\0';
    size_t used = 0;
    int r;
    for (size_t i = 0; i < sizeof hw_meta_params / sizeof hw_meta_params[0]; i++) {
        const char *param = hw_meta_params[i].param, *meta = hw_meta_params[i].meta;
        if (user_set(e->sim_params ? e->sim_params : "", param))
            continue; /* the user's choice */
        char val[64], what[80];
        int have = tl_validation_hw_meta(hw_db, meta, val, sizeof val, err);
        if (have < 0)
            return have;
        if (have == 0)
            continue;
        snprintf(what, sizeof what, "meta %s", meta);
        if ((r = apply_recorded(e, hw_db, what, param, val, applied, cap, &used, err)) < 0)
            return r;
    }
    /* A diagnostic replay whose synthetic kernels all preferred the largest
     * carveout (TALLY_SYNTH_CARVEOUT=100): every SM's carveout holds any
     * kernel beside any other, so the H100's co-residency rule (carveout 2)
     * does not apply: carveout 0, unless the user set it. Other values are
     * not measured and change nothing. */
    if (!user_set(e->sim_params ? e->sim_params : "", "carveout")) {
        char val[16];
        int have = tl_validation_hw_meta(hw_db, "hw_synth_carveout", val, sizeof val, err);
        if (have < 0)
            return have;
        if (have && !strcmp(val, "100") &&
            (r = apply_recorded(e, hw_db, "meta hw_synth_carveout", "carveout", "0", applied, cap,
                                &used, err)) < 0)
            return r;
    }
    /* A graph's issue cost: graph_node_ns per op, the launch call included
     * (graph_launch_ns 0), unless the user set either. */
    const char *sp = e->sim_params ? e->sim_params : "";
    if (!user_set(sp, "graph_node_ns") && !user_set(sp, "graph_launch_ns")) {
        long long per_op = 0;
        int have = hw_graph_lag_per_op(hw_db, &per_op, err);
        if (have < 0)
            return have;
        if (have) {
            char val[32];
            const char *what = "the alone inference runs' metrics cuda_graph_lag_*";
            snprintf(val, sizeof val, "%lld", per_op);
            if ((r = apply_recorded(e, hw_db, what, "graph_node_ns", val, applied, cap, &used, err)) < 0 ||
                (r = apply_recorded(e, hw_db, what, "graph_launch_ns", "0", applied, cap, &used, err)) < 0)
                return r;
        }
    }
    return 0;
}

int tl_validation_simulate(const tl_experiment *e, const char *sim_db, const char *label,
                           int workers, bool quiet, tl_err *err)
{
    tl_sweep_options so = {.db_path = sim_db, .db_label = label, .workers = workers, .quiet = quiet, .kind = "sim",
                           .open_device = tl_sweep_open_sim, .device_arg = (void *)e};
    return tl_sweep_run(e, &so, NULL, err);
}

/* ---------- the combined database ---------- */

static const char combined_mark[] = "tally-validate combined";

/* May out_path be replaced? Yes when it is not there or is an earlier combined
 * database; anything else is refused. */
static int check_old(const char *out_path, tl_err *err)
{
    if (access(out_path, F_OK) != 0)
        return 0;
    sqlite3 *db = NULL;
    bool ours = false;
    if (tl_results_sqlite_open(out_path, SQLITE_OPEN_READONLY, &db) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='made_by'", -1, &st, NULL) ==
            SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) {
                const char *v = (const char *)sqlite3_column_text(st, 0);
                ours = v && !strcmp(v, combined_mark);
            }
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
    if (!ours)
        return tl_errf(err, TL_EIO,
                       "%s: exists and is not a database tally-validate combined: not overwritten",
                       out_path);
    return 0;
}

/* SQLite's companions of path (-wal, -shm, -journal): removed before a new
 * database is renamed to path, which must not meet the old one's journal. */
static int remove_companions(const char *path, tl_err *err)
{
    static const char *const sfx[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        if (unlink(p) != 0 && errno != ENOENT)
            return tl_errf(err, TL_EIO, "%s: cannot remove: %s", p, strerror(errno));
    }
    return 0;
}

static int exec_sql(tl_results *r, const char *sql, tl_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = tl_errf(err, TL_EDB, "%s: %s", r->path, msg ? msg : sqlite3_errmsg(r->db));
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

/* Copy the matched runs of one side of source si (with their jobs, requests,
 * iterations and metrics) into r, keys prefixed ("hw:", "sim:"; with several
 * sources "hw:N:", as two sessions may have run the same config), experiment
 * names set per run. */
static int copy_side(tl_results *r, const tl_validation *v, size_t si, bool hw, tl_err *err)
{
    const char *src = hw ? v->sources[si].hw_path : v->sources[si].sim_path;
    char prefix[32];
    if (v->n_sources > 1)
        snprintf(prefix, sizeof prefix, "%s:%zu:", hw ? "hw" : "sim", si + 1);
    else
        snprintf(prefix, sizeof prefix, "%s:", hw ? "hw" : "sim");
    int rc = tl_results_attach_src(r, src, err);
    if (rc < 0)
        return rc;
    sqlite3_stmt *st;
    rc = exec_sql(r, "CREATE TEMP TABLE idmap(old_id INTEGER PRIMARY KEY, new_id INTEGER);", err);
    if (rc == 0)
        rc = tl_results_begin(r, err);
    if (rc == 0 &&
        sqlite3_prepare_v2(r->db,
                           "INSERT INTO main.runs(run_key, experiment, kind, policy, policy_params, "
                           "gpu, driver, clocks, seed, repetition, load, duration_ns, warmup_ns, "
                           "config, status, wall_s, events, created) SELECT ?2 || run_key, ?3, "
                           "kind, policy, policy_params, gpu, driver, clocks, seed, repetition, "
                           "load, duration_ns, warmup_ns, config, status, wall_s, events, created "
                           "FROM src.runs WHERE run_id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        rc = tl_errf(err, TL_EDB, "%s: %s", r->path, sqlite3_errmsg(r->db));
    for (size_t i = 0; rc == 0 && i < v->n_cells; i++) {
        const tl_val_cell *c = &v->cells[i];
        for (int k = 0; rc == 0 && k < c->n_pairs; k++) {
            if ((size_t)c->src[k] != si)
                continue;
            long long old = hw ? c->hw_ids[k] : c->sim_ids[k];
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, old);
            sqlite3_bind_text(st, 2, prefix, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, c->experiment, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE) {
                rc = tl_errf(err, TL_EDB, "%s: copying run %lld of %s: %s", r->path, old, src,
                             sqlite3_errmsg(r->db));
                break;
            }
            char sql[128];
            snprintf(sql, sizeof sql, "INSERT INTO temp.idmap VALUES(%lld, %lld);", old,
                     (long long)sqlite3_last_insert_rowid(r->db));
            rc = exec_sql(r, sql, err);
        }
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = exec_sql(r,
                      "INSERT INTO main.jobs SELECT i.new_id, j.job_id, j.name, j.trace, j.role, "
                      "j.priority, j.arrival, j.rate, j.slo_ns, (SELECT k.new_id FROM temp.idmap k "
                      "WHERE k.old_id = j.alone_run_id) FROM src.jobs j JOIN temp.idmap i ON "
                      "j.run_id = i.old_id;"
                      "INSERT INTO main.requests SELECT i.new_id, q.job_id, q.req_id, q.arrival_ns, "
                      "q.start_ns, q.end_ns, q.latency_ns, q.service_ns FROM src.requests q JOIN "
                      "temp.idmap i ON q.run_id = i.old_id;"
                      "INSERT INTO main.iterations SELECT i.new_id, t.job_id, t.iter_idx, "
                      "t.start_ns, t.end_ns FROM src.iterations t JOIN temp.idmap i ON "
                      "t.run_id = i.old_id;"
                      "INSERT INTO main.metrics SELECT i.new_id, x.job_id, x.name, x.value FROM "
                      "src.metrics x JOIN temp.idmap i ON x.run_id = i.old_id;",
                      err);
    if (rc == 0)
        rc = tl_results_commit(r, err);
    else
        tl_results_rollback(r);
    sqlite3_exec(r->db, "DROP TABLE IF EXISTS temp.idmap; DETACH src;", NULL, NULL, NULL);
    return rc;
}

int tl_validation_combine(const tl_validation *v, const char *out_path, tl_err *err)
{
    /* Never one of the databases it is made from; an earlier combined
     * database is replaced only once the new one is complete. */
    const char **inputs = tl_val_inputs(v);
    int rc = tl_output_check(out_path, inputs, err);
    free(inputs);
    if (rc == 0)
        rc = check_old(out_path, err);
    tl_err mk = {0};
    if (rc == 0 && tl_mkdirs_for(out_path, &mk) < 0) /* as for the results database */
        rc = tl_errf(err, TL_EIO, "%s: cannot write: %s", out_path, mk.msg);
    if (rc < 0)
        return rc;
    const char *slash = strrchr(out_path, '/');
    size_t dlen = slash ? (size_t)(slash - out_path) + 1 : 0;
    size_t n = strlen(out_path) + 16;
    char *tmp = tl_xmalloc(n);
    snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)dlen, out_path, slash ? slash + 1 : out_path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rc = tl_errf(err, TL_EIO, "%s: cannot write: %s", out_path, strerror(errno));
        free(tmp);
        return rc;
    }
    close(fd);
    tl_results r;
    rc = tl_results_open(&r, tmp, err);
    if (rc == 0) {
        char sql[160];
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta VALUES('made_by', '%s');",
                 combined_mark);
        rc = exec_sql(&r, sql, err);
        for (size_t i = 0; rc == 0 && i < v->n_sources; i++) {
            rc = copy_side(&r, v, i, true, err);
            if (rc == 0)
                rc = copy_side(&r, v, i, false, err);
        }
        /* back to a journal of its own: the file is complete by itself */
        if (rc == 0 && sqlite3_exec(r.db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK)
            rc = tl_errf(err, TL_EDB, "%s: %s", out_path, sqlite3_errmsg(r.db));
        tl_results_close(&r);
    }
    if (rc < 0 && err && strstr(err->msg, tmp)) {
        /* name the file the user asked for, not the temporary */
        tl_err e = *err;
        char *at = strstr(e.msg, tmp);
        snprintf(err->msg, sizeof err->msg, "%.*s%s%s", (int)(at - e.msg), e.msg, out_path,
                 at + strlen(tmp));
    }
    if (rc == 0 && (rc = check_old(out_path, err)) == 0 && (rc = remove_companions(out_path, err)) == 0 &&
        rename(tmp, out_path) != 0)
        rc = tl_errf(err, TL_EIO, "%s: cannot write: %s", out_path, strerror(errno));
    if (rc < 0) {
        unlink(tmp);
        tl_err ignore;
        remove_companions(tmp, &ignore);
    }
    free(tmp);
    return rc;
}

int tl_validation_plot(const tl_validation *v, const char *combined_db, const tl_plot_opts *o,
                       tl_err *err)
{
    (void)v;
    tl_analysis a;
    int r = tl_analysis_open(&a, combined_db, err);
    if (r < 0)
        return r;
    r = tl_plot_simhw(&a, NULL, o, err);
    tl_analysis_close(&a);
    return r;
}
