/* Experiment specs and command-line overrides: parsing, strictness, grid
 * expansion and resume keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tally/sim.h"
#include "tally/spec.h"
#include "tally/sweep.h"

#define TRACE "traces/bundled/h100/resnet50_infer_b8.json.gz"

static int parse(const char *text, tl_experiment *e, tl_err *err)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    tl_experiment_init(e);
    int r = tl_experiment_from_json(e, j, "spec.json", NULL, err);
    json_decref(j);
    return r;
}

static void expect_error(const char *text, int code, const char *needle)
{
    tl_experiment e;
    tl_err err = { 0 };
    int r = parse(text, &e, &err);
    if (r != code || !strstr(err.msg, needle))
        print_error("got %d '%s', wanted %d and '%s'\n", r, err.msg, code, needle);
    assert_int_equal(r, code);
    assert_non_null(strstr(err.msg, needle));
    assert_non_null(strstr(err.msg, "spec.json"));
    tl_experiment_close(&e);
}

static void test_minimal_defaults(void **state)
{
    tl_experiment e;
    tl_err err = { 0 };
    int r = parse("{\"policies\":[\"time-slicing\"],\"jobs\":[{\"trace\":\"" TRACE "\",\"role\":\"training\"}]}",
                  &e, &err);
    assert_int_equal(r, 0);
    assert_int_equal(e.gpu.sms, 132); /* H100 by default */
    assert_int_equal(e.duration_ns, 10 * TL_NS_PER_S);
    assert_int_equal(e.warmup_ns, TL_NS_PER_S);
    assert_int_equal(e.seed, 1);
    assert_int_equal(e.sets[0].jobs[0].priority, 1); /* training defaults to rank 1 */
    assert_string_equal(e.sets[0].jobs[0].name, "resnet50_infer_b8");
    tl_experiment_close(&e);
}

static void test_errors_name_the_field(void **state)
{
    const char *job = "{\"trace\":\"" TRACE "\",\"role\":\"inference\"}";
    char buf[512];
    expect_error("[]", TL_EFORMAT, "JSON object");
    snprintf(buf, sizeof buf, "{\"policies\":[\"nope\"],\"jobs\":[%s]}", job);
    expect_error(buf, TL_EUNKNOWN, "unknown policy 'nope'");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"durration_s\":3}", job);
    expect_error(buf, TL_EUNKNOWN, "unknown key 'durration_s'");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"gpu\":\"Z80\"}", job);
    expect_error(buf, TL_EUNKNOWN, "gpu");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"duration_s\":-1}", job);
    expect_error(buf, TL_ERANGE, "duration_s");
    /* 0.4 ns rounds to a run of no time: refused here, not by the runner later */
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"duration_s\":4e-10}", job);
    expect_error(buf, TL_ERANGE, "duration_s 4e-10 must be in (0, 86400] and at least 1 ns");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"seed\":\"x\"}", job);
    expect_error(buf, TL_ETYPE, "'seed' must be a number");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"role\":\"training\"}]}", TL_EMISSING,
                 "job 0: missing 'trace'");
    /* empty strings (fuzzing): refused naming the field, not left to fail later as
     * "tally-sim: : cannot open" or to label a job with nothing */
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"\",\"role\":\"training\"}]}",
                 TL_ERANGE, "job 0: 'trace' is empty");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"name\":\"\",\"role\":\"training\"}]}",
                 TL_ERANGE, "job 0: 'name' is empty");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"inference\","
                 "\"arrival\":{\"kind\":\"file\",\"path\":\"\"}}]}", TL_ERANGE,
                 "job 0: arrival 'path' is empty");
    /* "" split the trace as if iteration_kernel were not given */
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"training\","
                 "\"iteration_kernel\":\"\"}]}", TL_ERANGE, "job 0: iteration_kernel is empty");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"gaming\"}]}",
                 TL_EUNKNOWN, "unknown role 'gaming'");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"inference\","
                 "\"arrival\":{\"kind\":\"poisson\",\"load\":1.5}}]}", TL_ERANGE, "load");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"inference\","
                 "\"arrival\":{\"kind\":\"poisson\"}}]}", TL_EMISSING, "exactly one of 'rate' or 'load'");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"training\","
                 "\"arrival\":{\"kind\":\"poisson\",\"rate\":3}}]}", TL_EFORMAT, "closed loop");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"inference\","
                 "\"slo_ms\":0}]}", TL_ERANGE, "slo_ms");
    /* 1e-320 ms rounds to 0 ns: a target no request can meet, refused (fuzzing) */
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"inference\","
                 "\"slo_ms\":1e-320}]}", TL_ERANGE, "must be in [0.001, 1e6] (1 us to 1000 s)");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"loads\":[0.5, 0]}", job);
    expect_error(buf, TL_ERANGE, "loads[1]");
    snprintf(buf, sizeof buf, "{\"jobs\":[%s]}", job);
    expect_error(buf, TL_EMISSING, "policies");
    /* the same run twice would clash in the results: refused up front */
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\",{\"name\":\"mps\",\"params\":{}}],\"jobs\":[%s]}", job);
    expect_error(buf, TL_EFORMAT, "policies 0 and 1 are the same");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"loads\":[0.5, 0.5]}", job);
    expect_error(buf, TL_EFORMAT, "loads 0 and 1 are the same");
    /* "policy" beside "policies" was ignored (fuzzing) */
    snprintf(buf, sizeof buf, "{\"policy\":\"tgs\",\"policies\":[\"mps\"],\"jobs\":[%s]}", job);
    expect_error(buf, TL_EFORMAT, "spec.json: give one of 'policies' or 'policy', not both");
    /* a per-job list longer than a job set failed only at the first shared
     * run, after the alone runs, naming no file (fuzzing) */
    snprintf(buf, sizeof buf, "{\"policies\":[{\"name\":\"mps\",\"params\":{\"sm_percents\":"
             "[50,50]}}],\"jobs\":[%s]}", job);
    expect_error(buf, TL_ERANGE, "spec.json: policy 0 (mps): sm_percents has 2 values for 1 jobs");
    snprintf(buf, sizeof buf, "{\"policies\":[\"tally\",{\"name\":\"mps-priority\",\"params\":"
             "{\"sm_percents\":[50,50]}}],\"job_sets\":[[%s,%s],[%s]]}", job, job, job);
    expect_error(buf, TL_ERANGE, "policy 1 (mps-priority), job set 1: sm_percents has 2 values");
    /* loads with no inference job to set ran identical runs once per load,
     * labelled with loads that changed nothing (fuzzing) */
    expect_error("{\"policies\":[\"mps\"],\"loads\":[0.3,0.6],\"jobs\":[{\"trace\":\"x\","
                 "\"role\":\"training\"}]}", TL_EFORMAT, "spec.json: loads set inference "
                 "jobs' arrivals, and no job is an inference job");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"loads\":[0.3],\"job_sets\":[[%s],"
             "[{\"trace\":\"x\",\"role\":\"training\"}]]}", job);
    expect_error(buf, TL_EFORMAT, "job set 1 has no inference job");
    snprintf(buf, sizeof buf, "{\"policies\":[\"mps\"],\"jobs\":[%s],\"description\":5}", job);
    expect_error(buf, TL_ETYPE, "'description' must be a string");
    /* a policy's parameters are checked when the spec loads, before any run */
    snprintf(buf, sizeof buf, "{\"policies\":[{\"name\":\"tgs\",\"params\":{\"window_ms\":-5}}],\"jobs\":[%s]}", job);
    expect_error(buf, TL_ERANGE, "policy 0: policy tgs: parameter 'window_ms'");
    /* and what one parameter's range cannot say (the policy's check_params hook) */
    snprintf(buf, sizeof buf, "{\"policies\":[{\"name\":\"tgs\",\"params\":{\"min_rate\":2,\"max_rate\":1}}],"
             "\"jobs\":[%s]}", job);
    expect_error(buf, TL_ERANGE, "min_rate 2 is above max_rate 1");
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"training\",\"name\":\"a\"},"
                 "{\"trace\":\"y\",\"role\":\"training\",\"name\":\"a\"}]}", TL_EFORMAT,
                 "jobs 0 and 1 are both named 'a'");
}

/* Results are grouped by job name: two jobs of one trace without names get
 * distinct ones, and policies of one name with other params are two. */
static void test_default_names_distinct(void **state)
{
    tl_experiment e;
    tl_err err = { 0 };
    int r = parse("{\"policies\":[\"tgs\",{\"name\":\"tgs\",\"params\":{\"window_ms\":5}}],\"jobs\":["
                  "{\"trace\":\"" TRACE "\",\"role\":\"inference\"},"
                  "{\"trace\":\"" TRACE "\",\"role\":\"training\"},"
                  "{\"trace\":\"" TRACE "\",\"role\":\"training\",\"name\":\"resnet50_infer_b8-2\"}]}",
                  &e, &err);
    assert_int_equal(r, 0);
    assert_string_equal(e.sets[0].jobs[0].name, "resnet50_infer_b8");
    assert_string_equal(e.sets[0].jobs[1].name, "resnet50_infer_b8-3");
    assert_string_equal(e.sets[0].jobs[2].name, "resnet50_infer_b8-2");
    assert_int_equal(e.n_policies, 2);
    tl_experiment_close(&e);
    /* a file name that starts with a dot keeps it: the name is never empty */
    r = parse("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"dir/.hidden.json.gz\",\"role\":\"training\"}]}",
              &e, &err);
    assert_int_equal(r, 0);
    assert_string_equal(e.sets[0].jobs[0].name, ".hidden");
    tl_experiment_close(&e);
    expect_error("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"dir/\",\"role\":\"training\"}]}",
                 TL_ERANGE, "names no file");
    (void)state;
}

/* policies x sets x loads x reps shared runs, plus one alone run per distinct
 * job config; keys are unique and stable. */
static void test_expand_grid(void **state)
{
    tl_experiment e;
    tl_err err = { 0 };
    const char *spec =
        "{\"policies\":[\"time-slicing\",\"mps\",\"priority-streams\"],\"repetitions\":2,"
        "\"loads\":[0.3,0.6],\"job_sets\":["
        "[{\"trace\":\"a\",\"role\":\"inference\",\"arrival\":{\"kind\":\"poisson\",\"load\":0.5}},"
        " {\"trace\":\"t\",\"role\":\"training\"}],"
        "[{\"trace\":\"b\",\"role\":\"inference\",\"arrival\":{\"kind\":\"poisson\",\"load\":0.5}},"
        " {\"trace\":\"t\",\"role\":\"training\"}]]}";
    assert_int_equal(parse(spec, &e, &err), 0);
    tl_run_item *items;
    size_t n;
    assert_int_equal(tl_experiment_expand(&e, &items, &n, &err), 0);
    /* shared: 3 x 2 x 2 x 2 = 24; alone per rep: a@0.3, a@0.6, b@0.3, b@0.6, t = 5 -> 10 */
    size_t shared = 0, alone = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].policy >= 0)
            shared++;
        else
            alone++;
    assert_int_equal(shared, 24);
    assert_int_equal(alone, 10);
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            assert_string_not_equal(items[i].key, items[k].key);
    /* every shared run finds its alone runs among the items */
    for (size_t i = 0; i < n; i++) {
        if (items[i].policy < 0)
            continue;
        for (int j = 0; j < 2; j++) {
            char key[33];
            tl_item_alone_key(&e, &items[i], j, key);
            bool found = false;
            for (size_t k = 0; k < n; k++)
                found |= items[k].policy < 0 && !strcmp(items[k].key, key);
            assert_true(found);
        }
    }
    /* stable: expanding again gives the same keys */
    tl_run_item *again;
    size_t n2;
    assert_int_equal(tl_experiment_expand(&e, &again, &n2, &err), 0);
    assert_int_equal(n, n2);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(items[i].key, again[i].key);
    tl_run_items_free(items, n);
    tl_run_items_free(again, n2);
    tl_experiment_close(&e);
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(((const tl_run_item *)a)->key, ((const tl_run_item *)b)->key);
}

/* The alone runs' dedupe (a hash table since it compared each new key with
 * every one before it: 300,000 runs took nearly two minutes to expand). Its
 * speed is not timed here (tests are not benchmarks); what it must keep is
 * the order and one run per key. 50 repetitions x 100 loads: alone a@load,
 * b@load (distinct) and t (the same at every load), then one policy's runs. */
static void test_expand_many_alone(void **state)
{
    (void)state;
    char *spec = malloc(4096), *p = spec;
    p += sprintf(p, "{\"policies\":[\"mps\"],\"repetitions\":50,\"loads\":[");
    for (int l = 1; l <= 100; l++)
        p += sprintf(p, "%s%g", l > 1 ? "," : "", l / 100.0);
    sprintf(p, "],\"jobs\":[{\"trace\":\"a\",\"role\":\"inference\"},{\"trace\":\"b\",\"role\":\"inference\"},"
               "{\"trace\":\"t\",\"role\":\"training\"}]}");
    tl_experiment e;
    tl_err err = { 0 };
    assert_int_equal(parse(spec, &e, &err), 0);
    free(spec);
    tl_run_item *items;
    size_t n;
    assert_int_equal(tl_experiment_expand(&e, &items, &n, &err), 0);
    assert_int_equal(n, 50 * (100 * 2 + 1) + 50 * 100);
    /* in order: per repetition, load by load, a, b and (at the first load only) t */
    for (size_t i = 0; i < 50 * 201; i++) {
        const tl_run_item *it = &items[i];
        size_t rep = i / 201, at = i % 201;
        assert_int_equal(it->policy, -1);
        assert_int_equal(it->repetition, (int)rep);
        assert_int_equal(it->load, at < 3 ? 0 : (int)(at - 3) / 2 + 1);
        assert_int_equal(it->alone_job, at < 3 ? (int)at : (int)(at - 3) % 2);
    }
    /* no key twice */
    qsort(items, n, sizeof *items, cmp_key);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(items[i - 1].key, items[i].key) < 0);
    tl_run_items_free(items, n);
    tl_experiment_close(&e);
}

static void test_overrides(void **state)
{
    tl_spec_overrides o;
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=inference,load=0.5,slo_ms=20";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=training,name=bg";
    o.duration_s = 2;
    o.seed = 7;
    tl_experiment e;
    tl_err err = { 0 };
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), 0);
    assert_int_equal(e.sets[0].n_jobs, 2);
    assert_int_equal(e.sets[0].jobs[0].arrival, TL_ARRIVAL_POISSON_LOAD);
    assert_true(e.sets[0].jobs[0].load == 0.5);
    assert_int_equal(e.sets[0].jobs[0].slo_ns, 20 * TL_NS_PER_MS);
    assert_string_equal(e.sets[0].jobs[1].name, "bg");
    assert_int_equal(e.duration_ns, 2 * TL_NS_PER_S);
    assert_int_equal(e.seed, 7);
    tl_experiment_close(&e);

    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=x,role=inference,colour=blue";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "unknown key 'colour'"));
    tl_experiment_close(&e);

    /* a key given twice is refused, not "the last one wins" (fuzzing) */
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=inference,load=0.5,trace=other.json";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "'trace' is given twice"));
    tl_experiment_close(&e);
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=training,skip=1,skip=2";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "'skip' is given twice"));
    tl_experiment_close(&e);

    /* the command line's mistakes are usage errors, named as the option's:
     * the spec loader said "command line: job 0: 'name' is empty", exit 65 */
    static const struct { const char *job; const char *msg; } bad_jobs[] = {
        { "trace=" TRACE ",role=training,name=", "name is empty" },
        { "trace=,role=training", "trace is empty" },
        { "trace=" TRACE ",role=inference,arrivals=", "arrivals is empty" },
        { "trace=" TRACE, "no role=inference or role=training" },
        { "role=training", "no trace=PATH" },
    };
    for (size_t i = 0; i < sizeof bad_jobs / sizeof bad_jobs[0]; i++) {
        tl_spec_overrides_init(&o);
        o.policies[o.n_policies++] = "mps";
        o.jobs[o.n_jobs++] = bad_jobs[i].job;
        tl_experiment_init(&e);
        assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
        assert_non_null(strstr(err.msg, bad_jobs[i].msg));
        tl_experiment_close(&e);
    }
    /* --load with nothing to set, or twice the same: the option's mistake */
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=training";
    o.loads[o.n_loads++] = 0.5;
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_string_equal(err.msg, "command line: --load set inference jobs' arrivals, and no job is "
                                 "an inference job");
    tl_experiment_close(&e);
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=inference";
    o.loads[o.n_loads++] = 0.5;
    o.loads[o.n_loads++] = 0.5;
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "--load 0 and 1 are the same"));
    tl_experiment_close(&e);
    /* and a good --load still replaces the spec's loads */
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=inference";
    o.loads[o.n_loads++] = 0.25;
    o.loads[o.n_loads++] = 0.75;
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), 0);
    assert_int_equal(e.n_loads, 2);
    assert_true(e.loads[0] == 0.25 && e.loads[1] == 0.75);
    tl_experiment_close(&e);

    /* --policy replaces a spec's policies, but a mistake in them still
     * surfaces: the spec is wrong whatever this command line runs (fuzzing) */
    char spec[256];
    snprintf(spec, sizeof spec, "%s/override_spec.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fputs("{\"policies\":[{\"name\":\"tgs\",\"params\":{\"no_such\":1}}],"
          "\"jobs\":[{\"trace\":\"" TRACE "\",\"role\":\"training\"}]}", f);
    fclose(f);
    tl_spec_overrides_init(&o);
    o.spec_path = spec;
    o.policies[o.n_policies++] = "mps";
    tl_experiment_init(&e);
    assert_true(tl_experiment_from_overrides(&e, &o, &err) < 0);
    assert_non_null(strstr(err.msg, "override_spec.json: policy 0:"));
    tl_experiment_close(&e);
    /* the same for jobs that --job replaces */
    f = fopen(spec, "w");
    assert_non_null(f);
    fputs("{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"x\",\"role\":\"gaming\"}]}", f);
    fclose(f);
    tl_spec_overrides_init(&o);
    o.spec_path = spec;
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=training";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "override_spec.json: job 0: unknown role 'gaming'"));
    tl_experiment_close(&e);
    /* and a spec with both "policy" and "policies" that --policy replaces */
    f = fopen(spec, "w");
    assert_non_null(f);
    fputs("{\"policy\":\"tgs\",\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"" TRACE "\","
          "\"role\":\"training\"}]}", f);
    fclose(f);
    tl_spec_overrides_init(&o);
    o.spec_path = spec;
    o.policies[o.n_policies++] = "tally";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "override_spec.json: give one of 'policies' or 'policy'"));
    tl_experiment_close(&e);
    remove(spec);

    tl_spec_overrides_init(&o);
    o.spec_path = "/nonexistent/spec.json";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/spec.json"));
    tl_experiment_close(&e);
}

/* Command-line text that is not UTF-8 (JSON strings are) is refused, naming
 * the option: jansson's NULL for it was dropped, and the run went on without
 * the value (the default GPU, a closed loop, the trace's name; fuzzing). */
static void test_overrides_not_utf8(void **state)
{
    static const struct {
        const char *gpu, *policy, *job, *needle;
    } cases[] = {
        { "A100\xff", "mps", "trace=" TRACE ",role=training", "--gpu: 'A100\xff' is not UTF-8" },
        { NULL, "mps\xff", "trace=" TRACE ",role=training", "--policy: 'mps\xff' is not UTF-8" },
        { NULL, "mps", "trace=" TRACE ",role=training,name=b\xe9g", "--job name: 'b\xe9g'" },
        { NULL, "mps", "trace=" TRACE ",role=inference,arrivals=/tmp/\xff", "--job arrivals:" },
        { NULL, "mps", "trace=" TRACE ",role=training,iteration_kernel=\xc3", "--job iteration_kernel:" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_spec_overrides o;
        tl_spec_overrides_init(&o);
        o.gpu = cases[i].gpu;
        o.policies[o.n_policies++] = cases[i].policy;
        o.jobs[o.n_jobs++] = cases[i].job;
        tl_experiment e;
        tl_err err = { 0 };
        tl_experiment_init(&e);
        assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
        if (!strstr(err.msg, cases[i].needle))
            print_error("case %zu: '%s'\n", i, err.msg);
        assert_non_null(strstr(err.msg, cases[i].needle));
        tl_experiment_close(&e);
    }
    /* --sim-param: a key or value of other bytes was ignored */
    tl_spec_overrides o;
    tl_spec_overrides_init(&o);
    o.policies[o.n_policies++] = "mps";
    o.jobs[o.n_jobs++] = "trace=" TRACE ",role=training";
    tl_experiment e;
    tl_err err = { 0 };
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), 0);
    assert_int_equal(tl_experiment_set_sim_param(&e, "stream_gap_ns=5\xff", &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "not UTF-8"));
    assert_int_equal(tl_experiment_set_sim_param(&e, "\xff=5", &err), TL_EUNKNOWN);
    assert_null(e.sim_params);
    tl_experiment_close(&e);
}

/* --gpu is looked up once, by tl_experiment_from_overrides, into the
 * experiment; the spec loader keeps a GPU already there when the spec names
 * none, and the option replaces the spec's own "gpu" (even one it does not
 * know). */
static void test_overrides_gpu(void **state)
{
    (void)state;
    tl_experiment e;
    tl_err err = { 0 };
    tl_experiment_init(&e);
    assert_int_equal(tl_gpu_lookup("A100-SXM4-80GB", &e.gpu, &err), 0);
    const char *spec = "{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"a\",\"role\":\"training\"}]}";
    json_t *j = json_loads(spec, 0, NULL);
    assert_int_equal(tl_experiment_from_json(&e, j, "spec.json", NULL, &err), 0);
    assert_string_equal(e.gpu.name, "A100-SXM4-80GB");
    tl_experiment_close(&e);
    assert_int_equal(tl_experiment_from_json(&e, j, "spec.json", NULL, &err), 0);
    assert_string_equal(e.gpu.name, "H100 80GB HBM3");
    tl_experiment_close(&e);
    json_decref(j);

    char path[] = "/tmp/tally-test-spec-gpu-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"gpu\":\"Z80\",\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"%s\","
               "\"role\":\"training\"}]}", TRACE);
    fclose(f);
    tl_spec_overrides o;
    tl_spec_overrides_init(&o);
    o.spec_path = path;
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, ": gpu: unknown GPU 'Z80'"));
    tl_experiment_close(&e);
    o.gpu = "A100-SXM4-80GB";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), 0);
    assert_string_equal(e.gpu.name, "A100-SXM4-80GB");
    tl_run_item *items;
    size_t n;
    assert_int_equal(tl_experiment_expand(&e, &items, &n, &err), 0);
    assert_string_equal(json_string_value(json_object_get(items[0].config, "gpu")), "A100-SXM4-80GB");
    tl_run_items_free(items, n);
    tl_experiment_close(&e);
    o.gpu = "Z80";
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &o, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "--gpu: unknown GPU 'Z80'"));
    tl_experiment_close(&e);
    unlink(path);
}

/* "sim_params" (and --sim-param): kept in key order, checked at load time,
 * part of the run key only when set. */
static void test_sim_params(void **state)
{
    (void)state;
    const char *base = "{\"policies\":[\"mps\"],\"jobs\":[{\"trace\":\"" TRACE "\",\"role\":\"training\"}]";
    char buf[512];
    tl_experiment e;
    tl_err err = { 0 };
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"launch_latency_ns\":2000,\"contention.model\":\"threads\"}}", base);
    assert_int_equal(parse(buf, &e, &err), 0);
    assert_string_equal(e.sim_params, "contention.model=threads;launch_latency_ns=2000");
    tl_run_item *with, *without;
    size_t n1, n2;
    assert_int_equal(tl_experiment_expand(&e, &with, &n1, &err), 0);
    assert_int_equal(tl_experiment_set_sim_param(&e, "callback_launch_latency_ns=15000", &err), 0);
    assert_string_equal(e.sim_params,
                        "callback_launch_latency_ns=15000;contention.model=threads;launch_latency_ns=2000");
    assert_int_equal(tl_experiment_set_sim_param(&e, "launch_latency_ns", &err), TL_EUNKNOWN);
    tl_experiment_close(&e);
    snprintf(buf, sizeof buf, "%s}", base);
    assert_int_equal(parse(buf, &e, &err), 0);
    assert_null(e.sim_params);
    assert_int_equal(tl_experiment_expand(&e, &without, &n2, &err), 0);
    assert_int_equal(n1, n2);
    assert_true(strcmp(with[0].key, without[0].key) != 0);
    assert_null(json_object_get(without[0].config, "sim_params"));
    /* the model revision is in every simulated run's config (and so in its
     * key), not in a hardware run's: those keep their keys across revisions */
    assert_int_equal(json_integer_value(json_object_get(without[0].config, "sim_model")),
                     TL_SIM_MODEL_REVISION);
    tl_run_item *hw;
    size_t n3;
    e.hardware = true;
    assert_int_equal(tl_experiment_expand(&e, &hw, &n3, &err), 0);
    assert_null(json_object_get(hw[0].config, "sim_model"));
    assert_true(strcmp(hw[0].key, without[0].key) != 0);
    tl_run_items_free(hw, n3);
    tl_run_items_free(with, n1);
    tl_run_items_free(without, n2);
    tl_experiment_close(&e);
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"no_such\":1}}", base);
    expect_error(buf, TL_EUNKNOWN, "no_such");
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"contention.model\":\"fast\"}}", base);
    expect_error(buf, TL_ERANGE, "threads or kinds");
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"callback_launch_latency_ns\":-5}}", base);
    expect_error(buf, TL_ERANGE, "callback_launch_latency_ns");
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"copy_engines\":1.5}}", base);
    expect_error(buf, TL_ERANGE, "whole number");
    snprintf(buf, sizeof buf, "%s,\"sim_params\":[1]}", base);
    expect_error(buf, TL_ETYPE, "sim_params");
    /* a value too long for the buffer was cut and the rest ignored: 0.1 and
     * 70 zeros then e5 (1e4, out of range) ran as 0.1 (fuzzing) */
    snprintf(buf, sizeof buf, "%s,\"sim_params\":{\"residency_speedup\":\"0.1%070de5\"}}", base, 0);
    expect_error(buf, TL_ERANGE, "sim_params.residency_speedup: the value is 75 characters long");
    snprintf(buf, sizeof buf, "%s}", base);
    assert_int_equal(parse(buf, &e, &err), 0);
    assert_int_equal(tl_experiment_set_sim_param(&e, "residency_speedup=0.1000000000000000000000000000000"
                                                 "0000000000000000000000000000000000000000e5", &err),
                     TL_EUNKNOWN); /* the option's mistake: exit 64 */
    assert_null(e.sim_params);
    tl_experiment_close(&e);
}

/* Every parameter in a spec's "sim_params" at once, each value 57 characters
 * long ("1.000..."): the list (over 3 KiB) loaded, and every run then failed
 * with "sim params: list longer than 2047 characters", naming no spec. */
static void test_sim_params_long_list(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:[s], s:[{s:s, s:s}]}", "policies", "mps", "jobs", "trace", TRACE,
                             "role", "training");
    json_t *params = json_object();
    char val[64];
    snprintf(val, sizeof val, "1.%055d", 0);
    for (int i = 0; tl_sim_param_name(i); i++) {
        const char *k = tl_sim_param_name(i);
        if (strcmp(k, "contention.model") && strcmp(k, "residency_speedup")) /* 1 is no value of theirs */
            json_object_set_new(params, k, json_string(val));
    }
    json_object_set_new(spec, "sim_params", params);
    tl_experiment e;
    tl_experiment_init(&e);
    tl_err err = { 0 };
    if (tl_experiment_from_json(&e, spec, "spec.json", NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(strlen(e.sim_params) > 2048);
    tl_sim_params p;
    tl_sim_params_default(&p, &e.gpu);
    if (tl_sim_params_apply(&p, e.sim_params, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(p.copy_engines == 1 && p.launch_latency_ns == 1);
    tl_experiment_close(&e);
    json_decref(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_errors_name_the_field),
        cmocka_unit_test(test_default_names_distinct),
        cmocka_unit_test(test_expand_grid),
        cmocka_unit_test(test_expand_many_alone),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_overrides_not_utf8),
        cmocka_unit_test(test_overrides_gpu),
        cmocka_unit_test(test_sim_params),
        cmocka_unit_test(test_sim_params_long_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
