/* tally-plot: plots, timelines, a Chrome trace export and the report table,
 * all read from the results database that tally-sim / tally-run write. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tally/analysis.h"

static const char usage_text[] =
    "usage: tally-plot COMMAND [options]\n"
    "\n"
    "Plots and tables from a Tally results database (SQLite). Each plot writes NAME.dat\n"
    "(the data), NAME.gp (a gnuplot script you can edit and rerun) and the images.\n"
    "Repetitions of a run (same experiment, kind, policy, load and jobs) are averaged.\n"
    "\n"
    "commands:\n"
    "  tradeoff   high-priority p99 latency overhead vs throughput relative to alone,\n"
    "             one point per policy (EXPERIMENT_tradeoff.*)\n"
    "  cdf        request latency CDFs per policy, SLO marked (EXPERIMENT_cdf.*)\n"
    "  bars       p50/p99 latency, throughput vs alone, utilization per policy and job\n"
    "  timeline   SM occupancy per job with request arrivals/completions, one run\n"
    "             (--run-id, window --from-ms/--to-ms) (runN_timeline.*)\n"
    "  simhw      simulated vs hardware runs per policy: p99 and throughput, error %\n"
    "  chrome     Chrome trace event JSON of one run (--run-id; Perfetto, chrome://tracing)\n"
    "  report     comparison table on stdout (--markdown FILE writes it as Markdown too)\n"
    "  all        tradeoff, cdf and bars\n"
    "\n"
    "options:\n"
    "  -d, --db FILE          results database (default: results.db)\n"
    "  -O, --out-dir DIR      folder for plots (default: plots; created if missing)\n"
    "  -e, --experiment NAME  only runs of this experiment\n"
    "  -r, --run-id N         only this run (required by timeline and chrome)\n"
    "  -p, --policy LIST      only these policies (comma-separated; repeatable)\n"
    "  -k, --kind sim|hw      only simulated or only hardware runs\n"
    "      --from-ms T        timeline window start (ms since the run's start)\n"
    "      --to-ms T          timeline window end (default: the whole run)\n"
    "  -f, --format LIST      png,svg,pdf (repeatable; default: png,svg, and pdf if gnuplot\n"
    "                         has pdfcairo)\n"
    "      --no-render        write .dat and .gp only; do not run gnuplot\n"
    "  -o, --output FILE      chrome: output file (default: OUT-DIR/runN.json)\n"
    "  -m, --markdown FILE    report: also write the table as Markdown\n"
    "  -q, --quiet            do not list the files written\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n"
    "\n"
    "Every file is written under a temporary name and renamed into place once\n"
    "complete: a failure keeps the file that was there. No output may be the database.\n"
    "\n"
    "environment: TALLY_GNUPLOT  gnuplot to run (default: gnuplot on PATH)\n"
    "exit status: 0 ok, 64 usage (an output that is the database included), 65 bad data\n"
    "             or no matching runs, 66 database missing, 69 gnuplot missing, 70 gnuplot\n"
    "             failed, 73 cannot write the output (standard output included)\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("tally-plot: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'tally-plot --help'.\n", stderr);
    return EX_USAGE;
}

static int fail(const tl_err *err)
{
    fprintf(stderr, "tally-plot: %s\n", err->msg[0] ? err->msg : tl_strerror(err->code));
    return tl_exit_code(err->code);
}

static bool parse_ms(const char *s, tl_ns *out)
{
    double v;
    if (tl_parse_decimal(s, &v) < 0 || v < 0 || v > 9e9)
        return false;
    *out = (tl_ns)llround(v * 1e6);
    return true;
}

/* A comma-separated list with no empty item ("", "a,,b", "a," are not). */
static bool list_ok(const char *s)
{
    return *s && *s != ',' && !strstr(s, ",,") && s[strlen(s) - 1] != ',';
}

enum { OPT_FROM = 256, OPT_TO, OPT_NO_RENDER };

static char *policies; /* the --policy lists, joined */

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},
        {"out-dir", required_argument, NULL, 'O'},
        {"experiment", required_argument, NULL, 'e'},
        {"run-id", required_argument, NULL, 'r'},
        {"policy", required_argument, NULL, 'p'},
        {"kind", required_argument, NULL, 'k'},
        {"from-ms", required_argument, NULL, OPT_FROM},
        {"to-ms", required_argument, NULL, OPT_TO},
        {"format", required_argument, NULL, 'f'},
        {"no-render", no_argument, NULL, OPT_NO_RENDER},
        {"output", required_argument, NULL, 'o'},
        {"markdown", required_argument, NULL, 'm'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *db = "results.db", *output = NULL, *markdown = NULL;
    tl_filter flt = {0};
    tl_plot_opts po = {.out_dir = "plots", .log = stdout};
    bool from_set = false, to_set = false;
    tl_err err = {0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:O:e:r:p:k:f:o:m:qhV", longopts, NULL)) != -1) {
        /* '' is no folder, file, name or policy: it used to mean this folder
         * (--out-dir), every run (--experiment, --policy) or to be refused
         * only after the report was printed (--markdown) */
        if (optarg && !*optarg && c > 0 && c < 128 && strchr("Oeom", c))
            return usage_error("%s: '' is empty (give a name)",
                               c == 'O' ? "--out-dir" : c == 'e' ? "--experiment"
                               : c == 'o' ? "--output" : "--markdown");
        switch (c) {
        case 'd': db = optarg; break;
        case 'O': po.out_dir = optarg; break;
        case 'e': flt.experiment = optarg; break;
        case 'r': {
            int r = tl_parse_int64(optarg, 1, LLONG_MAX, &flt.run_id);
            if (r < 0)
                return usage_error(r == TL_ERANGE ? "--run-id: '%s' is out of range (run ids start at 1)"
                                                  : "--run-id: '%s' is not an integer", optarg);
            break;
        }
        case 'p':
            if (!list_ok(optarg))
                return usage_error("--policy: '%s' has an empty policy name", optarg);
            /* repeated, the lists add up (the last one alone was used) */
            if (policies) {
                size_t n = strlen(policies) + strlen(optarg) + 2;
                policies = tl_xrealloc(policies, n);
                strcat(strcat(policies, ","), optarg);
            } else {
                policies = tl_xstrdup(optarg);
            }
            flt.policies = policies;
            break;
        case 'k':
            if (strcmp(optarg, "sim") && strcmp(optarg, "hw"))
                return usage_error("--kind: '%s' is neither sim nor hw", optarg);
            flt.kind = optarg;
            break;
        case OPT_FROM:
            if (!parse_ms(optarg, &po.from_ns))
                return usage_error("--from-ms: '%s' is not a time in ms", optarg);
            from_set = true;
            break;
        case OPT_TO:
            if (!parse_ms(optarg, &po.to_ns))
                return usage_error("--to-ms: '%s' is not a time in ms", optarg);
            to_set = true;
            break;
        case 'f': {
            unsigned f; /* repeated, the lists add up */
            if (tl_plot_parse_formats(optarg, &f, &err) < 0)
                return usage_error("%s", err.msg);
            po.formats |= f;
            break;
        }
        case OPT_NO_RENDER: po.no_render = true; break;
        case 'o': output = optarg; break;
        case 'm': markdown = optarg; break;
        case 'q': po.log = NULL; break;
        case 'h': fputs(usage_text, stdout); return EX_OK;
        case 'V': printf("tally-plot %s\n", TL_VERSION); return EX_OK;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no command given (tradeoff, cdf, bars, timeline, simhw, "
                                 "chrome, report, all)");
    const char *cmd = argv[optind];
    if (optind + 1 < argc)
        return usage_error("unexpected argument '%s'", argv[optind + 1]);
    static const char *const cmds[] = {"tradeoff", "cdf",    "bars", "timeline", "simhw",
                                       "chrome",   "report", "all"};
    bool known = false;
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        known |= !strcmp(cmd, cmds[i]);
    if (!known)
        return usage_error("unknown command '%s' (tradeoff, cdf, bars, timeline, simhw, chrome, "
                           "report, all)",
                           cmd);
    bool one_run = !strcmp(cmd, "timeline") || !strcmp(cmd, "chrome");
    if (one_run && !flt.run_id)
        return usage_error("%s needs --run-id N", cmd);
    if ((from_set || to_set) && strcmp(cmd, "timeline"))
        return usage_error("--from-ms/--to-ms apply to timeline, not %s", cmd);
    if (to_set && po.to_ns <= po.from_ns)
        return usage_error("--to-ms must be after --from-ms (%s)", "empty window");
    if (from_set && !to_set)
        po.to_ns = INT64_MAX;
    if (output && strcmp(cmd, "chrome"))
        return usage_error("--output applies to chrome, not %s", cmd);
    if (markdown && strcmp(cmd, "report"))
        return usage_error("--markdown applies to report, not %s", cmd);

    /* An output must never replace the database it is made from. */
    const char *inputs[] = {db, NULL};
    if (output && tl_output_clobbers(output, inputs))
        return usage_error("--output '%s' would overwrite the results database (--db): refused",
                           output);
    if (markdown && tl_output_clobbers(markdown, inputs))
        return usage_error("--markdown '%s' would overwrite the results database (--db): refused",
                           markdown);

    tl_analysis a;
    if (tl_analysis_open(&a, db, &err) < 0)
        return fail(&err);

    int r = 0;
    if (!strcmp(cmd, "tradeoff"))
        r = tl_plot_tradeoff(&a, &flt, &po, &err);
    else if (!strcmp(cmd, "cdf"))
        r = tl_plot_cdf(&a, &flt, &po, &err);
    else if (!strcmp(cmd, "bars"))
        r = tl_plot_bars(&a, &flt, &po, &err);
    else if (!strcmp(cmd, "simhw"))
        r = tl_plot_simhw(&a, &flt, &po, &err);
    else if (!strcmp(cmd, "timeline"))
        r = tl_plot_timeline(&a, flt.run_id, &po, &err);
    else if (!strcmp(cmd, "report"))
        r = tl_report(&a, &flt, stdout, markdown, &err);
    else if (!strcmp(cmd, "chrome")) {
        char def[4096];
        if (!output) {
            r = tl_plot_make_out_dir(&po, &err);
            snprintf(def, sizeof def, "%s/run%lld.json", po.out_dir, flt.run_id);
            output = def;
        }
        if (r == 0)
            r = tl_chrome_export(&a, flt.run_id, output, &err);
        if (r == 0 && po.log)
            fprintf(po.log, "wrote %s\n", output);
    } else { /* all: each plot that can be made; one that lacks its data is skipped */
        int (*const fns[])(tl_analysis *, const tl_filter *, const tl_plot_opts *, tl_err *) = {
            tl_plot_tradeoff, tl_plot_cdf, tl_plot_bars};
        static const char *const names[] = {"tradeoff", "cdf", "bars"};
        int made = 0;
        tl_err first = {0};
        for (int i = 0; i < 3; i++) {
            tl_err e = {0};
            int ri = fns[i](&a, &flt, &po, &e);
            if (ri == 0) {
                made++;
                continue;
            }
            if (ri != TL_EMISSING) {
                err = e;
                r = ri;
                break;
            }
            fprintf(stderr, "tally-plot: %s: skipped: %s\n", names[i], e.msg);
            if (!first.code)
                first = e;
        }
        if (r == 0 && !made) {
            err = first;
            r = first.code;
        }
    }
    tl_analysis_close(&a);
    if (r < 0) {
        /* Once the database is open, the only I/O that can fail is writing our
         * files (folder, data, script, image, JSON, Markdown). */
        if (r == TL_EIO) {
            fprintf(stderr, "tally-plot: %s\n", err.msg);
            return EX_CANTCREAT;
        }
        return fail(&err);
    }
    return EX_OK;
}

int main(int argc, char **argv)
{
    int status = run(argc, argv);
    /* what went to stdout (report, --help, the files written) must have arrived */
    int out = tl_close_stdout("tally-plot");
    return status ? status : out;
}
