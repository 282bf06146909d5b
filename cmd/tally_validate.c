/* tally-validate: the simulator checked against hardware runs of the same spec
 * (simulated vs measured latency and throughput per policy and job, the errors,
 * whether the policies rank the same), from the results databases of
 * tally-sim and tally-run. The logic lives in analysis/validate*.c. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "tally/results.h"
#include "tally/validate.h"

/* Hardware databases one validation may pool (and the same as text). */
#define TL_VALIDATE_MAX_HW 256
#define TL_VALIDATE_MAX_HW_S "256"

static const char usage_text[] =
    "usage: tally-validate [options] SPEC HW.db [HW.db ...]\n"
    "       tally-validate [options] --spec SPEC --hw-db HW.db [--sim-db SIM.db]\n"
    "       tally-validate [options] --hw-db HW.db --sim-db SIM.db\n"
    "\n"
    "Compares simulated runs with hardware runs (tally-run) of the same experiment: per\n"
    "policy and job, simulated vs measured p50 and p99 latency, mean service time\n"
    "(inference: a request's start to its end, its queueing left out, over the requests\n"
    "that ended inside the measured window: the drain after it runs without training)\n"
    "and throughput\n"
    "with the error of each (sim / hw - 1), and whether the policies rank in the same\n"
    "order on the high-priority p99 overhead and on system throughput (with Kendall's\n"
    "tau-b).\n"
    "Inference rows whose request queue grows through the run on either side (the\n"
    "last quarter's requests wait longer than the first quarter's by over 2% of the\n"
    "time between them, or over 5% never finish) are marked \"queue grows\": their\n"
    "p99 depends on the run's length; the summary counts the others apart, and ranks\n"
    "the p99 overhead once more with two policies whose queue grows on the hardware\n"
    "counted as tied.\n"
    "Column \"slow phases\" counts, per side, runs of 3 or more consecutive requests\n"
    "each served in over 1.6x the run's median service time; a hardware run with 3 or\n"
    "more beyond the simulator's is marked \"hw slowed\" (something outside the\n"
    "experiment slowed the GPU or host for tens of ms: the policies make none or\n"
    "one), and the summary counts the p99 of the other rows apart.\n"
    "Runs are matched by their run config (policy, jobs, load, seed, repetition,\n"
    "duration), whatever device ran them. With a spec, the simulator first runs it with\n"
    "the policies, duration, warm-up and repetitions of the hardware runs.\n"
    "Several hardware databases of one spec (e.g. runs of other seeds, made in other\n"
    "sessions) are pooled: each is simulated with its own seed and what it recorded of\n"
    "its replay, runs are matched within each, and every row is the mean over the\n"
    "pairs of all of them.\n"
    "\n"
    "options:\n"
    "  -s, --spec FILE          experiment spec the hardware runs were made from\n"
    "  -H, --hw-db FILE         hardware results database (runs of kind 'hw');\n"
    "                           repeatable (pooled; needs --spec, not --sim-db or --seed)\n"
    "  -d, --sim-db FILE        simulated results database: with --spec the simulated runs\n"
    "                           are written there (runs already there are reused), else\n"
    "                           read only (default with --spec: a temporary file)\n"
    "  -e, --experiment NAME    only the hardware runs of this experiment\n"
    "  -S, --seed N             base seed the hardware runs used (default: the spec's,\n"
    "                           or the one up to 100000 that derives the runs' seeds)\n"
    "  -j, --jobs N             simulation worker processes (default: one per core)\n"
    "  -m, --markdown FILE      also write the report as Markdown\n"
    "  -c, --csv FILE           also write one CSV row per policy and job\n"
    "  -P, --plot-dir DIR       make the simulated-vs-hardware plot there (tally-plot simhw:\n"
    "                           EXPERIMENT_simhw.dat, .gp and images)\n"
    "  -f, --format LIST        plot formats png,svg,pdf (repeatable; default: png,svg,\n"
    "                           and pdf if gnuplot has pdfcairo)\n"
    "      --no-render          plot: write .dat and .gp only\n"
    "  -C, --combined-db FILE   keep the database of both kinds the plot is made from\n"
    "                           (tally-plot reads it; default: a temporary file)\n"
    "      --sim-param KEY=VAL  a simulator parameter for the simulated runs (repeatable;\n"
    "                           names: tally-sim --help). Where tally-run recorded its\n"
    "                           replay's back-to-back gap (meta hw_stream_gap_ns of HW.db;\n"
    "                           inside CUDA graphs hw_graph_gap_ns), stream_gap_ns\n"
    "                           (graph_gap_ns) is that unless given here; where its alone\n"
    "                           runs of graph inference jobs recorded their issue cost\n"
    "                           (run metrics cuda_graph_lag_*), graph_node_ns is its mean\n"
    "                           per op and graph_launch_ns 0 unless either is given here;\n"
    "                           where every synthetic kernel preferred the largest carveout\n"
    "                           (meta hw_synth_carveout 100), carveout is 0 unless given\n"
    "  -k, --kernels            store per-kernel records in the simulated runs (with\n"
    "                           --sim-db, to compare timelines with a tally-run -k)\n"
    "  -q, --quiet              no simulation progress, no list of files written\n"
    "  -h, --help               this help\n"
    "  -V, --version            version\n"
    "\n"
    "Files are written under a temporary name and renamed into place once complete:\n"
    "a failure keeps the file that was there. No output may be an input.\n"
    "\n"
    "exit status: 0 ok, 64 usage (an output that is an input included), 65 bad data or\n"
    "             no matching runs, 66 a database or the spec is missing, 69 gnuplot\n"
    "             missing, 70 gnuplot failed, 73 cannot write (standard output included)\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("tally-validate: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'tally-validate --help'.\n", stderr);
    return EX_USAGE;
}

static int fail(const tl_err *err)
{
    fprintf(stderr, "tally-validate: %s\n", err->msg[0] ? err->msg : tl_strerror(err->code));
    return tl_exit_code(err->code);
}

/* An integer option's value in [lo, hi]; false after saying what is wrong. */
static bool parse_count(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
    int r = tl_parse_int64(s, lo, hi, out);
    if (r == TL_ERANGE)
        fprintf(stderr, "tally-validate: --%s: '%s' is out of range (%lld to %lld)\n", opt, s, lo, hi);
    else if (r < 0)
        fprintf(stderr, "tally-validate: --%s: '%s' is %s\n", opt, s, tl_parse_int64_what(r));
    if (r < 0)
        fputs("Try 'tally-validate --help'.\n", stderr);
    return r == 0;
}

/* A temporary folder for the files the user did not ask to keep. */
typedef struct scratch {
    char dir[256];
    bool made;
} scratch;

static const char *scratch_path(scratch *s, const char *name, char *buf, size_t cap)
{
    if (!s->made) {
        const char *tmp = getenv("TMPDIR");
        snprintf(s->dir, sizeof s->dir, "%s/tally-validate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(s->dir))
            return NULL;
        s->made = true;
    }
    snprintf(buf, cap, "%s/%s", s->dir, name);
    return buf;
}

static void scratch_remove(scratch *s)
{
    if (!s->made)
        return;
    /* the folder is ours alone: everything in it (databases and their
     * journals) goes */
    DIR *d = opendir(s->dir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", s->dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(s->dir);
}

static char *command_line(int argc, char **argv)
{
    size_t n = 1;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = malloc(n), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = i == 0 ? "tally-validate" : argv[i];
        if (i == 0 && strrchr(argv[0], '/'))
            a = argv[0];
        p += sprintf(p, "%s%s", i ? " " : "", a);
    }
    *p = '\0';
    return s;
}

/* Replace every occurrence of a temporary database's path in msg (it is gone
 * by the time the message is read) by what it was. */
static void name_temporary(char *msg, size_t cap, const char *tmp_path, const char *what)
{
    size_t n = strlen(tmp_path);
    if (!n)
        return;
    char *at;
    while ((at = strstr(msg, tmp_path))) {
        char rest[1024];
        snprintf(rest, sizeof rest, "%s", at + n);
        snprintf(at, cap - (size_t)(at - msg), "%s%s", what, rest);
    }
}

/* What simulating the twin of a hardware database takes from the command line. */
typedef struct twin_opts {
    const char *spec, *experiment;
    long long seed;              /* < 0: the hardware runs' own */
    bool kernels;
    const char *const *sim_params;
    int n_sim_params;
    int jobs;                    /* workers; 0: one per core */
    bool quiet;
} twin_opts;

/* Simulate the spec as the runs of hw_db were made (their policies, seed,
 * duration and what tally-run recorded of its replay) into sim_db; the
 * experiment's name in name (cap bytes). */
static int simulate_twin(const twin_opts *o, const char *hw_db, const char *sim_db,
                         bool temporary, char *name, size_t cap, tl_err *err)
{
    long long seed = o->seed;
    int r = 0;
    if (seed < 0) {
        /* hardware runs made with another --seed than the spec's */
        int f = tl_validation_hw_seed(o->spec, hw_db, o->experiment, &seed, err);
        if (f < 0)
            return f;
        if (f > 0 && !o->quiet)
            fprintf(stderr, "tally-validate: %s: the hardware runs were made with seed %lld, "
                            "not the spec's: simulating with it (--seed overrides)\n",
                    hw_db, seed);
    }
    tl_experiment e;
    tl_experiment_init(&e);
    r = tl_validation_experiment(&e, o->spec, hw_db, o->experiment, seed, err);
    if (r == 0)
        snprintf(name, cap, "%s", e.name ? e.name : "");
    if (r == 0 && o->kernels)
        e.record_kernels = true; /* the grid copies the hardware runs' choice: false */
    for (int i = 0; i < o->n_sim_params && r == 0; i++)
        r = tl_experiment_set_sim_param(&e, o->sim_params[i], err);
    char applied[256] = "";
    if (r == 0)
        r = tl_validation_hw_params(&e, hw_db, applied, sizeof applied, err);
    if (r == 0 && *applied && !o->quiet)
        fprintf(stderr, "tally-validate: simulating with what %s recorded of its replay: %s "
                        "(--sim-param overrides)\n", hw_db, applied);
    if (r == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int workers = o->jobs > 0 ? o->jobs : ncpu > 0 ? (int)ncpu : 1;
        /* a temporary database's path means nothing to the user */
        char label[PATH_MAX + 64];
        snprintf(label, sizeof label, "temporary (the twin of %s)", hw_db);
        r = tl_validation_simulate(&e, sim_db, temporary ? label : NULL, workers, o->quiet, err);
    }
    tl_experiment_close(&e);
    return r;
}

enum { OPT_NO_RENDER = 256, OPT_SIM_PARAM };

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"spec", required_argument, NULL, 's'},
        {"hw-db", required_argument, NULL, 'H'},
        {"sim-db", required_argument, NULL, 'd'},
        {"experiment", required_argument, NULL, 'e'},
        {"seed", required_argument, NULL, 'S'},
        {"jobs", required_argument, NULL, 'j'},
        {"markdown", required_argument, NULL, 'm'},
        {"csv", required_argument, NULL, 'c'},
        {"plot-dir", required_argument, NULL, 'P'},
        {"format", required_argument, NULL, 'f'},
        {"no-render", no_argument, NULL, OPT_NO_RENDER},
        {"sim-param", required_argument, NULL, OPT_SIM_PARAM},
        {"combined-db", required_argument, NULL, 'C'},
        {"kernels", no_argument, NULL, 'k'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *spec = NULL, *sim_db = NULL, *experiment = NULL;
    const char *hw_dbs[TL_VALIDATE_MAX_HW];
    size_t n_hw = 0;
    const char *markdown = NULL, *csv = NULL, *plot_dir = NULL, *combined = NULL;
    long long seed = -1, jobs = 0;
    bool quiet = false, kernels = false;
    const char *sim_params[64];
    int n_sim_params = 0;
    tl_plot_opts po = {.log = stdout};
    tl_err err = {0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:H:d:e:S:j:m:c:P:f:C:kqhV", longopts, NULL)) != -1) {
        /* '' is no file, folder or name: --plot-dir '' plotted into this
         * folder, --combined-db '' failed as "tally-validate: : cannot write",
         * --markdown '' and --csv '' were refused only after the simulation */
        if (optarg && !*optarg && c > 0 && c < 128 && strchr("emcPC", c))
            return usage_error("%s: '' is empty (give a name)",
                               c == 'e' ? "--experiment" : c == 'm' ? "--markdown"
                               : c == 'c' ? "--csv" : c == 'P' ? "--plot-dir" : "--combined-db");
        switch (c) {
        case 's': spec = optarg; break;
        case 'H':
            if (n_hw == TL_VALIDATE_MAX_HW)
                return usage_error("at most %s hardware databases", TL_VALIDATE_MAX_HW_S);
            hw_dbs[n_hw++] = optarg;
            break;
        case 'd': sim_db = optarg; break;
        case 'e': experiment = optarg; break;
        case 'S':
            if (!parse_count("seed", optarg, 0, 9000000000000000000LL, &seed))
                return EX_USAGE;
            break;
        case 'j':
            if (!parse_count("jobs", optarg, 1, 100000, &jobs))
                return EX_USAGE;
            break;
        case 'm': markdown = optarg; break;
        case 'c': csv = optarg; break;
        case 'P': plot_dir = optarg; break;
        case 'f': {
            unsigned f; /* repeated, the lists add up */
            if (tl_plot_parse_formats(optarg, &f, &err) < 0)
                return usage_error("%s", err.msg);
            po.formats |= f;
            break;
        }
        case OPT_NO_RENDER: po.no_render = true; break;
        case 'C': combined = optarg; break;
        case 'k': kernels = true; break;
        case 'q': quiet = true; break;
        case OPT_SIM_PARAM:
            if (n_sim_params == 64) return usage_error("%s", "at most 64 --sim-param");
            sim_params[n_sim_params++] = optarg;
            break;
        case 'h': fputs(usage_text, stdout); return EX_OK;
        case 'V': printf("tally-validate %s\n", TL_VERSION); return EX_OK;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    /* positional form: SPEC HW.db [HW.db ...] */
    if (optind < argc && !spec)
        spec = argv[optind++];
    for (; optind < argc; optind++) {
        if (n_hw == TL_VALIDATE_MAX_HW)
            return usage_error("at most %s hardware databases", TL_VALIDATE_MAX_HW_S);
        hw_dbs[n_hw++] = argv[optind];
    }
    if (!n_hw)
        return usage_error("%s", "no hardware database: give SPEC HW.db or --hw-db FILE");
    if (!spec && !sim_db)
        return usage_error("%s", "give the spec to simulate (--spec FILE) or simulated runs "
                                 "(--sim-db FILE)");
    if (n_hw > 1 && !spec)
        return usage_error("%s", "several hardware databases need the spec (--spec FILE): "
                                 "each is simulated with what it recorded");
    if (n_hw > 1 && sim_db)
        return usage_error("%s", "--sim-db takes the twins of one hardware database; with "
                                 "several each is simulated into a temporary database");
    if (n_hw > 1 && seed >= 0)
        return usage_error("%s", "--seed applies to one hardware database; with several each "
                                 "one's seed is found from its runs");
    for (size_t i = 0; i < n_hw; i++)
        for (size_t k = 0; k < i; k++)
            if (tl_results_same_file(hw_dbs[i], hw_dbs[k]))
                return usage_error("hardware database '%s' given twice", hw_dbs[i]);
    if (!spec && seed >= 0)
        return usage_error("%s", "--seed needs --spec (it is the seed to simulate with)");
    if (!plot_dir && (po.formats || po.no_render))
        return usage_error("%s", "--format/--no-render apply to the plot: give --plot-dir DIR");
    if (n_sim_params && !spec)
        return usage_error("%s", "--sim-param applies to the runs simulated from --spec");
    if (kernels && !spec)
        return usage_error("%s", "--kernels applies to the runs simulated from --spec");
    if (quiet)
        po.log = NULL;
    po.out_dir = plot_dir;
    /* No output may replace an input (with --spec the simulated database is
     * written, not replaced: it may be an existing one). */
    {
        const char *inputs[TL_VALIDATE_MAX_HW + 3];
        size_t ni = 0;
        for (size_t i = 0; i < n_hw; i++)
            inputs[ni++] = hw_dbs[i];
        if (spec)
            inputs[ni++] = spec;
        if (sim_db)
            inputs[ni++] = sim_db;
        inputs[ni] = NULL;
        const char *const outs[][2] = {{"--markdown", markdown}, {"--csv", csv},
                                       {"--combined-db", combined}};
        for (int i = 0; i < 3; i++) {
            if (!outs[i][1])
                continue;
            const char *in = tl_output_clobbers(outs[i][1], inputs);
            if (in) {
                fprintf(stderr, "tally-validate: %s '%s' is %s, read to make it: not "
                                "overwritten\nTry 'tally-validate --help'.\n",
                        outs[i][0], outs[i][1],
                        in == spec     ? "the spec (--spec)"
                        : in == sim_db ? "the simulated database (--sim-db)"
                        : n_hw == 1    ? "the hardware database (--hw-db)"
                                       : "a hardware database (--hw-db)");
                return EX_USAGE;
            }
            for (int k = 0; k < i; k++)
                if (outs[k][1] && tl_results_same_file(outs[i][1], outs[k][1])) {
                    fprintf(stderr, "tally-validate: %s and %s name the same file '%s'\nTry "
                                    "'tally-validate --help'.\n", outs[k][0], outs[i][0], outs[i][1]);
                    return EX_USAGE;
                }
        }
    }

    scratch tmp = {0};
    /* the simulated database of each hardware one (the user's --sim-db, or
     * temporaries named by sim_tmp) */
    const char *sim_dbs[TL_VALIDATE_MAX_HW];
    char (*sim_tmp)[400] = calloc(n_hw, sizeof *sim_tmp);
    char comb_buf[400];
    char sim_exp[256] = ""; /* the experiment simulated from the spec */
    int r = 0;
    bool writing = false; /* a TL_EIO is then ours to write, not an input to read */
    if (!sim_tmp)
        return fail(&(tl_err){TL_ENOMEM, "out of memory"});
    for (size_t i = 0; i < n_hw && r == 0; i++) {
        sim_dbs[i] = sim_db;
        if (spec && !sim_db) {
            char name[32];
            snprintf(name, sizeof name, n_hw > 1 ? "sim-%zu.db" : "sim.db", i + 1);
            if (!(sim_dbs[i] = scratch_path(&tmp, name, sim_tmp[i], sizeof sim_tmp[i]))) {
                r = tl_errf(&err, TL_EIO, "cannot create a temporary folder: %s", strerror(errno));
                writing = true;
                break;
            }
        }
        if (spec) {
            if (n_hw > 1 && !quiet)
                fprintf(stderr, "tally-validate: [%zu/%zu] %s\n", i + 1, n_hw, hw_dbs[i]);
            const twin_opts to = {spec, experiment, seed, kernels, sim_params, n_sim_params,
                                  (int)jobs, quiet};
            r = simulate_twin(&to, hw_dbs[i], sim_dbs[i], !sim_db, sim_exp, sizeof sim_exp, &err);
        }
    }
    tl_validation v;
    memset(&v, 0, sizeof v);
    if (r == 0)
        /* with a spec, only what was simulated from it (a kept --sim-db may
         * hold older runs of other specs, fuzz round 26) */
        r = tl_validation_load_many(&v, n_hw, sim_dbs, hw_dbs, experiment,
                                    spec && *sim_exp ? sim_exp : NULL, &err);
    /* A spec that is not what tally-run ran still matches some runs: say so,
     * quiet or not, for the report alone would not (fuzz round 2). */
    for (size_t i = 0; r == 0 && i < v.n_sources; i++)
        if (v.sources[i].matched < v.sources[i].hw_runs)
            fprintf(stderr, "tally-validate: warning: %zu of the %zu hardware runs in %s have no "
                            "simulated twin (another policy, job set, load, seed, repetition, "
                            "duration or warm-up than the spec's): the report leaves them out\n",
                    v.sources[i].hw_runs - v.sources[i].matched, v.sources[i].hw_runs,
                    v.sources[i].hw_path);
    if (r == 0 && v.sim_gpu && v.hw_gpu && !strstr(v.hw_gpu, v.sim_gpu))
        fprintf(stderr, "tally-validate: warning: the simulated GPU (%s) is not the one the "
                        "hardware runs used (%s)\n", v.sim_gpu, v.hw_gpu);
    /* reports name a temporary simulated database by what it is, not by its
     * path; the paths come back before the combined database is made */
    char *real[TL_VALIDATE_MAX_HW];
    for (size_t i = 0; i < v.n_sources; i++) {
        real[i] = v.sources[i].sim_path;
        if (sim_tmp[i][0])
            v.sources[i].sim_path = "simulated now, temporary";
    }
    if (r == 0) {
        tl_validation_print(&v, stdout);
        fflush(stdout);
        writing = true;
    }
    if (r == 0 && markdown) {
        char *cmd = command_line(argc, argv);
        r = tl_validation_write_markdown(&v, markdown, cmd, &err);
        free(cmd);
        if (r == 0 && po.log)
            fprintf(po.log, "wrote %s\n", markdown);
    }
    if (r == 0 && csv) {
        r = tl_validation_write_csv(&v, csv, &err);
        if (r == 0 && po.log)
            fprintf(po.log, "wrote %s\n", csv);
    }
    for (size_t i = 0; i < v.n_sources; i++)
        v.sources[i].sim_path = real[i];
    if (r == 0 && (plot_dir || combined)) {
        if (!combined && !(combined = scratch_path(&tmp, "combined.db", comb_buf, sizeof comb_buf)))
            r = tl_errf(&err, TL_EIO, "cannot create a temporary folder: %s", strerror(errno));
        if (r == 0)
            r = tl_validation_combine(&v, combined, &err);
        if (r == 0 && po.log && combined != comb_buf)
            fprintf(po.log, "wrote %s\n", combined);
        if (r == 0 && plot_dir)
            r = tl_validation_plot(&v, combined, &po, &err);
    }
    tl_validation_close(&v);
    scratch_remove(&tmp);
    if (r < 0) {
        /* the temporary databases are gone: say what they were, not where */
        for (size_t i = 0; i < n_hw; i++)
            if (sim_tmp[i][0])
                name_temporary(err.msg, sizeof err.msg, sim_tmp[i],
                               "simulated now, temporary (not kept; --sim-db FILE keeps it)");
        if (combined == comb_buf)
            name_temporary(err.msg, sizeof err.msg, comb_buf,
                           "combined now, temporary (not kept; --combined-db FILE keeps it)");
        free(sim_tmp);
        if (r == TL_EIO && writing) {
            fprintf(stderr, "tally-validate: %s\n", err.msg);
            return EX_CANTCREAT;
        }
        return fail(&err);
    }
    free(sim_tmp);
    return EX_OK;
}

int main(int argc, char **argv)
{
    int status = run(argc, argv);
    /* the report on stdout (and --help) must have arrived */
    int out = tl_close_stdout("tally-validate");
    return status ? status : out;
}
