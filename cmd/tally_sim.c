/* tally-sim: replay kernel traces of jobs sharing one GPU in the simulator,
 * under one or more policies, and write everything to SQLite. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "tally/analysis.h"
#include "tally/fidelity.h"
#include "tally/metrics.h"
#include "tally/policy.h"
#include "tally/results.h"
#include "tally/sim.h"
#include "tally/spec.h"
#include "tally/trace.h"
#include "tally/transform.h"
#include "tally/sweep.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: tally-sim [run] [OPTIONS]        simulate an experiment (spec file or options)\n"
"       tally-sim info [--skip N] [--iteration-kernel NAME] TRACE...\n"
"                                         print what a trace holds\n"
"       tally-sim convert [--scale-grid N] [--graph] IN OUT\n"
"                                         rewrite a trace in Tally's JSON format (OUT.gz: gzip)\n"
"       tally-sim merge OUT.db SHARD.db...  merge sweep shards into one database\n"
"       tally-sim fidelity [--gpu NAME] [--sim-param KEY=VAL]... TRACE...\n"
"                                         replay each trace alone; compare with the trace\n"
"       tally-sim --list-policies | --list-gpus | --help | --version\n"
"\n"
"Run options:\n"
"  -s, --spec FILE          experiment spec (JSON; see README.md)\n"
"  -d, --db PATH            results database (default results.db)\n"
"  -p, --policy NAME        policy to run (repeatable; overrides the spec's, still checked)\n"
"  -g, --gpu NAME           GPU model (default H100, or the spec's)\n"
"  -J, --job KEY=VAL,...    a job (repeatable; replaces the spec's, still checked): trace=PATH,\n"
"                           role=inference|training, priority=N, load=F | rate=R,\n"
"                           slo_ms=F, sm_percent=F, model_mb=F, name=S, skip=N,\n"
"                           graph=0|1 (what-if: iterations as CUDA graphs)\n"
"  -t, --duration S         measured seconds of simulated time (default 10)\n"
"  -w, --warmup S           discarded warm-up seconds (default 1)\n"
"  -S, --seed N             random seed (default 1, or the spec's)\n"
"  -r, --repetitions N      repetitions with derived seeds\n"
"  -l, --load F             inference load (repeatable: a sweep over loads)\n"
"  -k, --kernels            store per-kernel records (timelines, Chrome export)\n"
"  -j, --jobs N             parallel worker processes (default: one per core)\n"
"      --force              re-run runs already in the database, replacing\n"
"                           them (needed once a trace changed at its path)\n"
"      --stats              print engine statistics per run on stderr (JSON lines)\n"
"      --sim-param KEY=VAL  set a simulator parameter (repeatable; also the spec's\n"
"                           \"sim_params\" object): contention.model=threads|kinds,\n"
"                           contention.alpha, contention.max_slowdown,\n"
"                           contention.starved_rate, contention.mem_alpha,\n"
"                           contention.mem_p, contention.mem_q,\n"
"                           contention.mem_max_slowdown,\n"
"                           contention.partial_starve (default 1: a group starved\n"
"                           on some of its SMs runs on the others; 0: it waits),\n"
"                           contention.starved_tail (experimental, default 0; 1:\n"
"                           its starved blocks, or with mem_share / cc_share its\n"
"                           slowed ones, lag and hold their SMs and the launch\n"
"                           until they finish),\n"
"                           contention.mem_age (experimental, default 0; 1: a\n"
"                           memory block is starved only beside older compute\n"
"                           blocks, as a compute block is),\n"
"                           contention.churn_block_ns (H100 4000: a memory\n"
"                           kernel of shorter blocks slows other launches'\n"
"                           compute blocks on its SMs; 0: off),\n"
"                           contention.churn_slowdown (1.6: by this factor),\n"
"                           launch_latency_ns,\n"
"                           callback_launch_latency_ns, stream_gap_ns, graph_gap_ns,\n"
"                           graph_launch_ns, graph_node_ns,\n"
"                           gap_beside_stream_ns, gap_beside_ctx_ns (what a kernel's\n"
"                           gap grows by while another stream of its context, or\n"
"                           another MPS client, has work on the GPU; H100 60, 300),\n"
"                           graph_tail_ns (added to a graph kernel's gap behind a\n"
"                           kernel that filled every SM with blocks of <= 64 threads;\n"
"                           H100 1600),\n"
"                           ptb_block_overhead_ns, slice_launch_ns, copy_engines,\n"
"                           device_copy_gbps,\n"
"                           coalesce_groups, coalesce_fraction,\n"
"                           idle_handover_ns (time slicing: how long an idle\n"
"                           context keeps the GPU before handing it over),\n"
"                           idle_switch_ns (time slicing: the gap before the\n"
"                           next context runs after an idle hand-over),\n"
"                           slice_restart (1, the H100's default: a context that\n"
"                           idled alone that long starts a new slice with its\n"
"                           next work; 0: slices run on from its switch-in),\n"
"                           slice_overtime (1, the H100's default: a slice that\n"
"                           ran out with nobody waiting renews at the context's\n"
"                           next launch of its own, not a later graph node, and\n"
"                           gives way at once until then; 0: back to back),\n"
"                           mps_client_priority (1: a priority-1 MPS client waits\n"
"                           for priority-0 ones; 0: ignored, the H100's default),\n"
"                           mps_order (1: the MPS client that has placed blocks\n"
"                           least often goes first when room frees, the H100's\n"
"                           default; 0: arrival order),\n"
"                           stream_order (1, the H100's default: streams of one\n"
"                           priority in one context take turns for room as MPS\n"
"                           clients do; 0: the level's head kernel first),\n"
"                           contention.mem_share, contention.mem_share_short,\n"
"                           contention.compute_share, contention.mem_share_tau_ns,\n"
"                           contention.compute_share_tau_ns, contention.cc_share,\n"
"                           contention.cc_share_exp (experimental, default 0: memory blocks\n"
"                           beside compute blocks, and compute blocks beside older\n"
"                           compute blocks, run slower instead of starving, more\n"
"                           beside longer blocks; the others lose a little),\n"
"                           pack_foreign (1, the H100's default: a kernel that\n"
"                           waited for room beside another job fills freed SMs\n"
"                           one by one; 2: also one that did not wait; 0: spread\n"
"                           over all),\n"
"                           crowding_warps (H100 4.74: a compute kernel's crowded\n"
"                           blocks share their SM past that many warps; 0: off),\n"
"                           dram_share (experimental, default 0; 1: memory-bound\n"
"                           kernels share DRAM bandwidth across SMs),\n"
"                           carveout (2, the H100's default: a kernel joins an\n"
"                           SM whose shared-memory carveout holds its occupancy's\n"
"                           shared memory, as measured; 1, experimental: an SM\n"
"                           holds blocks of one carveout at a time; 0: off),\n"
"                           residency_speedup (experimental, default 0: slices\n"
"                           and PTB launches with fewer blocks per SM run each\n"
"                           block faster)\n"
"                           (sim/README.md)\n"
"  -q, --quiet              no progress on stderr\n"
"\n"
"Exit status: 0 ok, 64 usage, 65 bad data, 66 missing input, 73 cannot write the\n"
"database (convert: OUT, written whole or not at all), 70 internal error.\n");
}

enum { OPT_FORCE = 1000, OPT_STATS, OPT_LIST_POLICIES, OPT_LIST_GPUS, OPT_SKIP,
       OPT_ITER_KERNEL, OPT_SCALE_GRID, OPT_GRAPH, OPT_SIM_PARAM };

static const struct option run_opts[] = {
    { "spec", required_argument, NULL, 's' },
    { "db", required_argument, NULL, 'd' },
    { "policy", required_argument, NULL, 'p' },
    { "gpu", required_argument, NULL, 'g' },
    { "job", required_argument, NULL, 'J' },
    { "duration", required_argument, NULL, 't' },
    { "warmup", required_argument, NULL, 'w' },
    { "seed", required_argument, NULL, 'S' },
    { "repetitions", required_argument, NULL, 'r' },
    { "load", required_argument, NULL, 'l' },
    { "kernels", no_argument, NULL, 'k' },
    { "jobs", required_argument, NULL, 'j' },
    { "force", no_argument, NULL, OPT_FORCE },
    { "stats", no_argument, NULL, OPT_STATS },
    { "sim-param", required_argument, NULL, OPT_SIM_PARAM },
    { "quiet", no_argument, NULL, 'q' },
    { "list-policies", no_argument, NULL, OPT_LIST_POLICIES },
    { "list-gpus", no_argument, NULL, OPT_LIST_GPUS },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "skip", required_argument, NULL, OPT_SKIP },
    { "iteration-kernel", required_argument, NULL, OPT_ITER_KERNEL },
    { "scale-grid", required_argument, NULL, OPT_SCALE_GRID },
    { "graph", no_argument, NULL, OPT_GRAPH },
    { NULL, 0, NULL, 0 },
};

/* An option getopt_long did not take: getopt has named an unknown one or a
 * missing value ('?'); one it knows belongs to another command (the commands
 * share run_opts) and is named here. li: its index in run_opts, or -1. */
static int bad_option(const char *cmd, int c, int li)
{
    if (c == '?')
        fprintf(stderr, "tally-sim %s: try --help\n", cmd);
    else if (li >= 0)
        fprintf(stderr, "tally-sim %s: --%s does not apply to %s (try --help)\n", cmd,
                run_opts[li].name, cmd);
    else
        fprintf(stderr, "tally-sim %s: -%c does not apply to %s (try --help)\n", cmd, c, cmd);
    return EX_USAGE;
}

/* An integer option's value in [min, max], worded as parse_double's (cmd:
 * the subcommand the option belongs to, NULL for run's). */
static int parse_int(const char *cmd, const char *opt, const char *s, long long min,
                     long long max, long long *out)
{
    int r = tl_parse_int64(s, min, max, out);
    if (r == TL_ERANGE)
        fprintf(stderr, "tally-sim%s%s: --%s: '%s' is out of range (%lld to %lld)\n", cmd ? " " : "",
                cmd ? cmd : "", opt, s, min, max);
    else if (r < 0)
        fprintf(stderr, "tally-sim%s%s: --%s: '%s' is %s\n", cmd ? " " : "", cmd ? cmd : "", opt, s,
                tl_parse_int64_what(r));
    return r < 0 ? -1 : 0;
}

static int cmd_info(int argc, char **argv)
{
    tl_trace_options o = { 0 };
    optind = 1;
    int c, li;
    while ((li = -1, c = getopt_long(argc, argv, "h", run_opts, &li)) != -1) {
        switch (c) {
        case OPT_SKIP: {
            long long v;
            if (parse_int("info", "skip", optarg, 0, 1000000, &v) < 0)
                return EX_USAGE;
            o.skip_iterations = (int)v;
            break;
        }
        case OPT_ITER_KERNEL:
            /* "" would split as if the option were not given */
            if (!*optarg) {
                fprintf(stderr, "tally-sim info: --iteration-kernel: give a part of a kernel name, "
                        "not ''\n");
                return EX_USAGE;
            }
            o.iteration_start_kernel = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return bad_option("info", c, li);
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "tally-sim info: give at least one trace file\n");
        return EX_USAGE;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        tl_trace t;
        tl_err err = { 0 };
        tl_trace_init(&t);
        int r = tl_trace_load(&t, argv[i], &o, &err);
        if (r < 0) {
            fprintf(stderr, "tally-sim: %s\n", err.msg);
            status = tl_exit_code(r);
        } else {
            tl_trace_print_info(stdout, &t);
        }
        tl_trace_close(&t);
    }
    return status;
}

/* convert: any readable trace -> our JSON; --scale-grid multiplies every
 * kernel's grid (x dimension) keeping its duration: a what-if for wider GPUs
 * and the benchmark of cost against grid size. */
static int cmd_convert(int argc, char **argv)
{
    long long scale = 1;
    bool graph = false;
    optind = 1;
    int c, li;
    while ((li = -1, c = getopt_long(argc, argv, "h", run_opts, &li)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == OPT_GRAPH) {
            graph = true;
            continue;
        }
        if (c != OPT_SCALE_GRID)
            return bad_option("convert", c, li);
        if (parse_int("convert", "scale-grid", optarg, 1, 1000000, &scale) < 0)
            return EX_USAGE;
    }
    if (argc - optind != 2) {
        fprintf(stderr, "tally-sim convert: give IN and OUT\n");
        return EX_USAGE;
    }
    const char *in = argv[optind], *out = argv[optind + 1];
    if (!*out) {
        fprintf(stderr, "tally-sim convert: OUT is empty: '' names no file\n");
        return EX_USAGE;
    }
    tl_trace t;
    tl_err err = { 0 };
    const char *inputs[] = { in, NULL };
    if (strcmp(out, "-") && tl_output_check(out, inputs, &err) < 0) {
        fprintf(stderr, "tally-sim: %s\n", err.msg);
        return EX_USAGE;
    }
    tl_trace_init(&t);
    int r = tl_trace_load(&t, in, NULL, &err);
    if (r == 0)
        r = tl_trace_scale_grid(&t, (uint32_t)scale, &err);
    tl_gpu_props g;
    if (r == 0 && graph && (r = tl_trace_gpu(&t, &g, &err)) == 0) {
        /* the capacity counts the graph gap of the trace's GPU */
        tl_sim_params p;
        tl_sim_params_default(&p, &g);
        tl_graph_launch gl = tl_sim_params_graph_launch(&p);
        tl_trace_as_graph(&t, &gl);
    }
    if (r < 0) {
        tl_trace_close(&t);
        fprintf(stderr, "tally-sim: %s\n", err.msg);
        return tl_exit_code(r);
    }
    /* Written under a temporary name and renamed over OUT once complete: a
     * failed write keeps the file OUT was, and OUT may not be IN. */
    if (!strcmp(out, "-")) {
        r = tl_trace_write_json(&t, out, &err);
    } else {
        FILE *f = tl_out_open(out, inputs, &err);
        size_t len = strlen(out);
        /* OUT.gz is gzip: plain JSON under that name loaded, but gunzip refused it */
        if (f && len > 3 && !strcmp(out + len - 3, ".gz")) {
            r = tl_trace_write_json_gz_stream(&t, f, &err);
            if (r < 0) {
                tl_out_discard(f); /* the file OUT was is kept */
                char msg[sizeof err.msg];
                snprintf(msg, sizeof msg, "%s", err.msg);
                tl_errf(&err, r, "%s: %s", out, msg);
            } else {
                r = tl_out_commit(f, &err);
            }
        } else if (f) {
            tl_trace_write_json_stream(&t, f);
            r = tl_out_commit(f, &err);
        } else {
            r = err.code;
        }
    }
    tl_trace_close(&t);
    if (r < 0) {
        fprintf(stderr, "tally-sim: %s\n", err.msg);
        return r == TL_EIO ? EX_CANTCREAT : tl_exit_code(r);
    }
    return 0;
}

/* A CSV field (RFC 4180): quoted, its quotes doubled, when it holds a comma,
 * a quote or a line break; a trace path such as "runs/a,b.json" made a row
 * of one column too many. */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* fidelity: each trace alone in the simulator vs its own numbers (CSV on stdout). */
static int cmd_fidelity(int argc, char **argv)
{
    const char *gpu_name = NULL;
    char *params = tl_xstrdup(""); /* every parameter at once is over 4 KiB */
    size_t params_len = 0;
    int status = 0;
    optind = 1;
    int c, li;
    while ((li = -1, c = getopt_long(argc, argv, "g:h", run_opts, &li)) != -1) {
        if (c == 'h') {
            usage(stdout);
            goto out;
        }
        if (c == OPT_SIM_PARAM) {
            /* joined as tl_sim_params_apply reads them; a ';' inside would split,
             * an empty one would vanish */
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "tally-sim fidelity: --sim-param '%s': expected KEY=VALUE\n", optarg);
                status = EX_USAGE;
                goto out;
            }
            if (strchr(optarg, ';')) {
                fprintf(stderr, "tally-sim fidelity: --sim-param '%s': one KEY=VALUE per option\n",
                        optarg);
                status = EX_USAGE;
                goto out;
            }
            params = tl_xrealloc(params, params_len + strlen(optarg) + 2);
            params_len += (size_t)sprintf(params + params_len, "%s%s", params_len ? ";" : "", optarg);
            continue;
        }
        if (c != 'g') {
            status = bad_option("fidelity", c, li);
            goto out;
        }
        gpu_name = optarg;
    }
    if (optind >= argc) {
        fprintf(stderr, "tally-sim fidelity: give at least one trace\n");
        status = EX_USAGE;
        goto out;
    }
    tl_gpu_props gpu;
    tl_err err = { 0 };
    if (gpu_name && tl_gpu_lookup(gpu_name, &gpu, &err) < 0) {
        fprintf(stderr, "tally-sim: --gpu: %s\n", err.msg);
        status = EX_USAGE;
        goto out;
    }
    tl_sim_params check; /* a bad name or value is a usage error, before any trace */
    tl_sim_params_default(&check, gpu_name ? &gpu : NULL);
    if (tl_sim_params_apply(&check, params, &err) < 0) {
        fprintf(stderr, "tally-sim fidelity: --sim-param: %s\n", err.msg);
        status = EX_USAGE;
        goto out;
    }
    printf("trace,gpu,iterations,traced_iter_ms,replay_iter_ms,iter_err_pct,traced_busy_ms,"
           "replay_busy_ms,busy_err_pct\n");
    for (int i = optind; i < argc; i++) {
        tl_trace t;
        tl_fidelity f;
        tl_trace_init(&t);
        int r = tl_trace_load(&t, argv[i], NULL, &err);
        if (r == 0)
            r = tl_fidelity_check_params(&t, gpu_name ? &gpu : NULL, params, &f, &err);
        if (r < 0) {
            fprintf(stderr, "tally-sim: %s\n", err.msg);
            status = tl_exit_code(r);
        } else {
            csv_field(argv[i]);
            putchar(',');
            csv_field(gpu_name ? gpu.name : (t.has_gpu_props ? t.gpu.name : "H100"));
            printf(",%u,%.4f,%.4f,%.2f,%.4f,%.4f,%.2f\n", f.iterations,
                   f.traced_iter_ns / 1e6, f.replay_iter_ns / 1e6, f.iter_err * 100,
                   f.traced_busy_ns / 1e6, f.replay_busy_ns / 1e6, f.busy_err * 100);
        }
        tl_trace_close(&t);
    }
out:
    free(params);
    return status;
}

static void merge_usage(FILE *f)
{
    fprintf(f,
"Usage: tally-sim merge [--] OUT.db SHARD.db...\n"
"\n"
"Merge the finished runs of sweep shards (results databases of tally-sim or\n"
"tally-run) into OUT.db, created if missing. Runs whose key OUT.db has already\n"
"are skipped; run ids are renumbered. Every shard is checked before anything is\n"
"written and is only read, never changed. A shard that is OUT.db or is given\n"
"twice is a usage error.\n"
"\n"
"Options:\n"
"  -h, --help   this help\n"
"\n"
"Exit status: 0 ok, 64 usage, 65 a shard or OUT.db is not a Tally results database\n"
"(of this schema version), 66 a shard is missing, 73 cannot write OUT.db.\n");
}

static const struct option merge_opts[] = {
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int cmd_merge(int argc, char **argv)
{
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", merge_opts, NULL)) != -1) {
        if (c == 'h') {
            merge_usage(stdout);
            return 0;
        }
        fprintf(stderr, "tally-sim merge: unknown option (try --help)\n");
        return EX_USAGE;
    }
    if (argc - optind < 2) {
        fprintf(stderr, "tally-sim merge: give OUT.db and at least one SHARD.db (try --help)\n");
        return EX_USAGE;
    }
    const char *out = argv[optind];
    char **shards = argv + optind + 1;
    int n_shards = argc - optind - 1;
    tl_err err = { 0 };
    /* Everything is checked before the output is opened: a bad shard leaves
     * every file as it was. */
    if (!*out) {
        fprintf(stderr, "tally-sim merge: OUT.db is an empty file name\n");
        return EX_USAGE;
    }
    for (int i = 0; i < n_shards; i++) {
        int rc = tl_results_check(shards[i], &err);
        if (rc < 0) {
            fprintf(stderr, "tally-sim merge: %s\n", err.msg);
            return tl_exit_code(rc);
        }
        if (tl_results_same_file(shards[i], out)) {
            fprintf(stderr, "tally-sim merge: %s: a shard is the output database %s\n", shards[i],
                    out);
            return EX_USAGE;
        }
        for (int k = 0; k < i; k++)
            if (tl_results_same_file(shards[i], shards[k])) {
                fprintf(stderr, "tally-sim merge: %s: a shard listed twice%s%s%s\n", shards[i],
                        strcmp(shards[i], shards[k]) ? " (as " : "",
                        strcmp(shards[i], shards[k]) ? shards[k] : "",
                        strcmp(shards[i], shards[k]) ? ")" : "");
                return EX_USAGE;
            }
    }
    tl_results r;
    int rc = tl_results_open(&r, out, &err);
    for (int i = 0; rc == 0 && i < n_shards; i++) {
        int n = 0;
        rc = tl_results_merge(&r, shards[i], &n, &err);
        if (rc == 0)
            fprintf(stderr, "tally-sim: merged %d runs from %s\n", n, shards[i]);
    }
    if (r.db)
        tl_results_close(&r);
    if (rc < 0) {
        fprintf(stderr, "tally-sim merge: %s\n", err.msg);
        return tl_exit_code(rc);
    }
    return 0;
}

static int parse_double(const char *opt, const char *s, double *out)
{
    int r = tl_parse_decimal(s, out);
    if (r < 0)
        fprintf(stderr, "tally-sim: --%s: '%s' is %s\n", opt, s,
                tl_parse_decimal_what(r));
    return r < 0 ? -1 : 0;
}

/* Seconds and loads: > 0 (or >= 0 where zero_ok). Negative values must not
 * pass for "not given", which the overrides mark with -1. */
static bool out_of_range(const char *opt, const char *s, double v, bool zero_ok)
{
    if (zero_ok ? v >= 0 : v > 0)
        return false;
    fprintf(stderr, "tally-sim: --%s: '%s' must be %s 0\n", opt, s, zero_ok ? ">=" : ">");
    return true;
}

/* A subcommand's argv, its argv[0] the full name getopt puts in its messages
 * ("tally-sim info: unrecognized option"). */
static char **sub_argv(char **argv, const char *full)
{
    argv[1] = (char *)full;
    return argv + 1;
}

static int sim_main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "info"))
        return cmd_info(argc - 1, sub_argv(argv, "tally-sim info"));
    if (argc > 1 && !strcmp(argv[1], "convert"))
        return cmd_convert(argc - 1, sub_argv(argv, "tally-sim convert"));
    if (argc > 1 && !strcmp(argv[1], "fidelity"))
        return cmd_fidelity(argc - 1, sub_argv(argv, "tally-sim fidelity"));
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return cmd_merge(argc - 1, sub_argv(argv, "tally-sim merge"));
    if (argc > 1 && !strcmp(argv[1], "run")) {
        argc--;
        argv = sub_argv(argv, "tally-sim run");
    }
    tl_spec_overrides ov;
    tl_spec_overrides_init(&ov);
    tl_sweep_options so = { .db_path = "results.db", .kind = "sim", .open_device = tl_sweep_open_sim };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    so.workers = ncpu > 0 ? (int)ncpu : 1;
    int c, li;
    long long n;
    while ((li = -1, c = getopt_long(argc, argv, "s:d:p:g:J:t:w:S:r:l:kj:qhV", run_opts, &li)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("tally-sim %s\n", TL_VERSION);
            return 0;
        case OPT_LIST_POLICIES:
            for (const tl_policy_ops *const *p = tl_policy_all(); *p; p++)
                printf("%-18s %s\n", (*p)->name, (*p)->summary ? (*p)->summary : "");
            return 0;
        case OPT_LIST_GPUS:
            for (const char *const *g = tl_gpu_names(); *g; g++)
                printf("%s\n", *g);
            return 0;
        case 's': ov.spec_path = optarg; break;
        case 'd': so.db_path = optarg; break;
        case 'g': ov.gpu = optarg; break;
        case 'k': ov.kernels = true; break;
        case 'q': so.quiet = true; break;
        case OPT_FORCE: so.force = true; break;
        case OPT_STATS: so.stats = true; break;
        case OPT_SIM_PARAM:
            if (ov.n_sim_params == 64) {
                fprintf(stderr, "tally-sim: at most 64 --sim-param\n");
                return EX_USAGE;
            }
            ov.sim_params[ov.n_sim_params++] = optarg;
            break;
        case 'p':
        case 'J':
        case 'l':
            if ((c == 'p' ? ov.n_policies : c == 'J' ? ov.n_jobs : ov.n_loads) >= 64) {
                fprintf(stderr, "tally-sim: too many --%s options (64 at most)\n",
                        c == 'p' ? "policy" : c == 'J' ? "job" : "load");
                return EX_USAGE;
            }
            if (c == 'p')
                ov.policies[ov.n_policies++] = optarg;
            else if (c == 'J')
                ov.jobs[ov.n_jobs++] = optarg;
            else if (parse_double("load", optarg, &ov.loads[ov.n_loads++]) < 0 ||
                     out_of_range("load", optarg, ov.loads[ov.n_loads - 1], false))
                return EX_USAGE;
            break;
        case 't':
            if (parse_double("duration", optarg, &ov.duration_s) < 0 ||
                out_of_range("duration", optarg, ov.duration_s, false))
                return EX_USAGE;
            break;
        case 'w':
            if (parse_double("warmup", optarg, &ov.warmup_s) < 0 ||
                out_of_range("warmup", optarg, ov.warmup_s, true))
                return EX_USAGE;
            break;
        case 'S':
        case 'r':
        case 'j':
            if (parse_int(NULL, c == 'S' ? "seed" : c == 'r' ? "repetitions" : "jobs", optarg,
                          c == 'S' ? 0 : 1, c == 'S' ? 9000000000000000LL : c == 'r' ? 1000 : 100000,
                          &n) < 0)
                return EX_USAGE;
            if (c == 'S')
                ov.seed = n;
            else if (c == 'r')
                ov.repetitions = (int)n;
            else
                so.workers = (int)n;
            break;
        default:
            return bad_option("run", c, li);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tally-sim: unexpected argument '%s' (try --help)\n", argv[optind]);
        return EX_USAGE;
    }
    tl_experiment e;
    tl_err err = { 0 };
    tl_experiment_init(&e);
    int r = tl_experiment_from_overrides(&e, &ov, &err);
    so.device_arg = &e;
    if (r == 0)
        r = tl_sweep_run(&e, &so, stdout, &err);
    tl_experiment_close(&e);
    if (r < 0) {
        fprintf(stderr, "tally-sim: %s\n", err.msg);
        return tl_exit_code(r);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int status = sim_main(argc, argv);
    /* the results table, info and fidelity's CSV must have arrived */
    int out = tl_close_stdout("tally-sim");
    return status ? status : out;
}
