/* tally-run: the same experiments as tally-sim, on a real GPU.
 *
 *   tally-run [run] OPTIONS       same spec and options as tally-sim; runs.kind = 'hw'
 *   tally-run info                the GPU, its driver and clocks, the synthetic kernels
 *   tally-run calibrate TRACE...  calibrate every kernel of the traces (cached)
 *   tally-run fidelity TRACE...   replay each trace alone; compare with the trace
 *   tally-run selftest            PTB retreat/resume, priority streams, SM partitions
 *   tally-run contention          co-run slowdowns of synthetic kernels, and the fit of
 *                                 the simulator's contention formula to them
 *   tally-run crowding            block times of synthetic kernels at 1..occupancy blocks
 *                                 an SM, and the fit of the simulator's crowding rule
 *   tally-run jitter              how long this host stalls a runnable thread (no GPU)
 *
 * Every subcommand but jitter (and contention --fit) first checks for a GPU and refuses with exit status 69
 * (EX_UNAVAILABLE) and a one-line reason when there is none.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "block_trace.h"
#include "synth.h"
#include "cuda_device.h"
#include "worker.h"
#include "tally/transform.h"
#include "tally/policy.h"
#include "tally/results.h"
#include "tally/runner.h"
#include "tally/spec.h"
#include "tally/sweep.h"
#include "tally/trace.h"

int tl_hw_selftest(FILE *out, const tl_cuda_options *o, tl_err *err);
int tl_hw_contention(FILE *out, FILE *csv, int device, tl_contention_result *fit, tl_err *err);
int tl_hw_crowding(FILE *out, FILE *csv, int device, tl_crowding_result *fit, tl_err *err);

static void usage(FILE *f)
{
    fprintf(f,
"Usage: tally-run [run] [OPTIONS]       run an experiment on this machine's GPU\n"
"       tally-run info                   GPU, driver, clocks, synthetic kernels\n"
"       tally-run calibrate [--csv F] TRACE...   calibrate the traces' kernels\n"
"       tally-run fidelity [--csv F] [-t S] [-w S] TRACE...  solo replay vs trace\n"
"       tally-run selftest               PTB retreat, priorities, SM partitions\n"
"       tally-run contention [--csv F]   co-run slowdowns of compute/memory kernel pairs\n"
"                                        and the fit of the simulator's contention model\n"
"       tally-run contention --fit F     the fit again from a CSV written before (no GPU)\n"
"       tally-run crowding [--csv F]     block times at 1..occupancy blocks an SM and the fit\n"
"                                        of the simulator's crowding rule\n"
"       tally-run jitter [-t S] [--sleep-us N] [--threshold-us N]\n"
"                        [--timer-slack-ns N] [--csv F]\n"
"                                        how long this host keeps a runnable thread off\n"
"                                        its CPU (no GPU needed; default 10 s spinning,\n"
"                                        stalls from 10 us; --csv: one line a stall)\n"
"\n"
"Run options (as tally-sim):\n"
"  -s, --spec FILE          experiment spec (JSON)\n"
"  -d, --db PATH            results database (default results.db)\n"
"  -p, --policy NAME        policy to run (repeatable)\n"
"  -J, --job KEY=VAL,...    a job without a spec (repeatable; see tally-sim --help)\n"
"  -t, --duration S         measured seconds (default 10)\n"
"  -w, --warmup S           discarded warm-up seconds (default 1)\n"
"  -S, --seed N             random seed\n"
"  -r, --repetitions N      repetitions with derived seeds\n"
"  -l, --load F             inference load (repeatable)\n"
"  -k, --kernels            store per-kernel records\n"
"      --force              re-run runs already in the database, replacing\n"
"                           them (needed once a trace changed at its path)\n"
"  -q, --quiet              no progress on stderr\n"
"Hardware options:\n"
"      --device N           CUDA device (default 0)\n"
"      --calib-db PATH      calibration cache (default $TALLY_CALIB_DB or\n"
"                           ~/.cache/tally/calib.sqlite)\n"
"      --calib-tol F        calibration tolerance (default 0.02)\n"
"      --watchdog S         end a run whose GPU work makes no progress for S s (20)\n"
"      --keep-context       keep the CUDA context from one run to the next (default:\n"
"                           each run starts in a fresh one; an earlier run's state\n"
"                           can slow the next one's kernels)\n"
"      --plain-node-calibration  calibrate a graph job's kernels as launches\n"
"                           (before session 12; default: inside a CUDA graph, as\n"
"                           the replay runs them)\n"
"  -v, --verbose            calibration details on stderr\n"
"\n"
"After its runs, run records in the database's meta where it ran: hw_gpu_uuid,\n"
"hw_pci_bus, hw_host.\n"
"Before its runs, run measures the gap the replay's kernels leave between them\n"
"on a stream and records it in the database (meta hw_stream_gap_ns; with graph\n"
"jobs also inside a CUDA graph: hw_graph_gap_ns), which tally-validate then\n"
"simulates with. Jobs with \"graph\": true launch each iteration's kernels as\n"
"one CUDA graph (cached per distinct iteration and stream); how their kernels\n"
"were calibrated is recorded as meta hw_graph_calibration (node or launch).\n"
"\n"
"Environment: TALLY_SYNTH_CARVEOUT=P (0-100, a diagnostic) makes every synthetic\n"
"kernel prefer the same shared-memory carveout, so that SMs may hold blocks of\n"
"any two kernels together (the H100 otherwise holds one carveout an SM); runs\n"
"record it as meta hw_synth_carveout. Diagnostics (the logs change nothing):\n"
"TALLY_TIMER_LOG=PATH appends a CSV line for every timer the event loop fires\n"
"(due, set and fired times, the loop's logical time, the callback; lines\n"
"'# origin_mono_ns=N' give the run clock's origin on CLOCK_MONOTONIC, the clock\n"
"of tally-run jitter --csv);\n"
"TALLY_SLEEP_MARGIN_US=N wakes the idle loop N us before its next timer\n"
"(default 60; negative: it spins);\n"
"TALLY_TIMER_SLACK_NS=N sets the loop thread's timer slack (Linux: 50000);\n"
"TALLY_GPU_SAMPLE_MS=N reads the GPU's clocks through NVML every N ms during a\n"
"run (default 10; 0: off; metrics gpu_*), TALLY_GPU_SAMPLE_LOG=PATH appends\n"
"every sample there;\n"
"TALLY_SM_TRACE=1 makes every synthetic block mark its SM, and the kernel\n"
"records' avg_sms (-k) the number of SMs each launch's blocks ran on, where it\n"
"is otherwise min(grid, SMs);\n"
"TALLY_BLOCK_TRACE=DIR writes every block's SM, start and duration, for the\n"
"launches enqueued in a window of TALLY_BLOCK_TRACE_WINDOW_US (default 5000)\n"
"every TALLY_BLOCK_TRACE_PERIOD_MS (default 250), up to TALLY_BLOCK_TRACE_MAX\n"
"blocks (default 4194304) per process and run, to DIR/blocks-run<R>-pid<P>-<K>.csv\n"
"(R: the run's place in the sweep; graph nodes are not traced);\n"
"TALLY_TGS_LOG and TALLY_TALLY_LOG log those policies' decisions.\n"
"\n"
"Exit status: 0 ok, 64 usage, 65 bad data, 66 missing input, 69 no GPU / no MPS,\n"
"70 internal error or watchdog, 73 cannot write the database.\n");
}

enum { OPT_FORCE = 1000, OPT_DEVICE, OPT_CALIB_DB, OPT_CALIB_TOL, OPT_WATCHDOG, OPT_CSV,
       OPT_FIT, OPT_KEEP_CONTEXT, OPT_PLAIN_NODE_CALIB, OPT_SLEEP_US, OPT_THRESHOLD_US, OPT_TIMER_SLACK };

static const struct option opts[] = {
    {"spec", required_argument, NULL, 's'},      {"db", required_argument, NULL, 'd'},
    {"policy", required_argument, NULL, 'p'},    {"gpu", required_argument, NULL, 'g'},
    {"job", required_argument, NULL, 'J'},       {"duration", required_argument, NULL, 't'},
    {"warmup", required_argument, NULL, 'w'},    {"seed", required_argument, NULL, 'S'},
    {"repetitions", required_argument, NULL, 'r'}, {"load", required_argument, NULL, 'l'},
    {"kernels", no_argument, NULL, 'k'},         {"force", no_argument, NULL, OPT_FORCE},
    {"quiet", no_argument, NULL, 'q'},           {"verbose", no_argument, NULL, 'v'},
    {"device", required_argument, NULL, OPT_DEVICE}, {"calib-db", required_argument, NULL, OPT_CALIB_DB},
    {"calib-tol", required_argument, NULL, OPT_CALIB_TOL}, {"watchdog", required_argument, NULL, OPT_WATCHDOG},
    {"csv", required_argument, NULL, OPT_CSV},   {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'}, {"fit", required_argument, NULL, OPT_FIT},
    {"keep-context", no_argument, NULL, OPT_KEEP_CONTEXT},
    {"plain-node-calibration", no_argument, NULL, OPT_PLAIN_NODE_CALIB},
    {"sleep-us", required_argument, NULL, OPT_SLEEP_US},
    {"threshold-us", required_argument, NULL, OPT_THRESHOLD_US},
    {"timer-slack-ns", required_argument, NULL, OPT_TIMER_SLACK},
    {NULL, 0, NULL, 0},
};

static int num(const char *opt, const char *s, double *out)
{
    int r = tl_parse_decimal(s, out);
    if (r < 0)
        fprintf(stderr, "tally-run: --%s: '%s' is %s\n", opt, s,
                tl_parse_decimal_what(r));
    return r < 0 ? -1 : 0;
}

typedef struct cli {
    tl_spec_overrides ov;
    tl_sweep_options so;
    tl_cuda_options co;
    const char *csv;
    const char *fit;
    double duration_s, warmup_s;
    double sleep_us, threshold_us, timer_slack_ns; /* jitter: NAN until given */
} cli;

static int parse(cli *c, int argc, char **argv)
{
    int ch;
    double v;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "s:d:p:g:J:t:w:S:r:l:kqvhV", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); exit(0);
        case 'V': printf("tally-run %s\n", TL_VERSION); exit(0);
        case 's': c->ov.spec_path = optarg; break;
        case 'd': c->so.db_path = optarg; break;
        case 'g': c->ov.gpu = optarg; break;
        case 'k': c->ov.kernels = true; break;
        case 'q': c->so.quiet = true; break;
        case 'v': c->co.verbose = true; break;
        case OPT_FORCE: c->so.force = true; break;
        case OPT_CSV: c->csv = optarg; break;
        case OPT_FIT: c->fit = optarg; break;
        case OPT_KEEP_CONTEXT: c->co.keep_context = true; break;
        case OPT_PLAIN_NODE_CALIB: c->co.plain_node_calib = true; break;
        case OPT_CALIB_DB: c->co.calib_db = optarg; break;
        case 'p': case 'J': case 'l':
            if ((ch == 'p' ? c->ov.n_policies : ch == 'J' ? c->ov.n_jobs : c->ov.n_loads) >= 64) {
                fprintf(stderr, "tally-run: too many repeated options (64 at most)\n");
                return EX_USAGE;
            }
            if (ch == 'p') c->ov.policies[c->ov.n_policies++] = optarg;
            else if (ch == 'J') c->ov.jobs[c->ov.n_jobs++] = optarg;
            else if (num("load", optarg, &c->ov.loads[c->ov.n_loads++]) < 0) return EX_USAGE;
            break;
        case 't':
            if (num("duration", optarg, &c->ov.duration_s) < 0) return EX_USAGE;
            if (!(c->ov.duration_s > 0)) {
                fprintf(stderr, "tally-run: --duration %s: must be more than 0 seconds\n", optarg);
                return EX_USAGE;
            }
            c->duration_s = c->ov.duration_s;
            break;
        case 'w':
            if (num("warmup", optarg, &c->ov.warmup_s) < 0) return EX_USAGE;
            if (c->ov.warmup_s < 0) {
                fprintf(stderr, "tally-run: --warmup %s: must be 0 seconds or more\n", optarg);
                return EX_USAGE;
            }
            c->warmup_s = c->ov.warmup_s;
            break;
        case 'S': case 'r': case OPT_DEVICE: {
            const char *name = ch == 'S' ? "seed" : ch == 'r' ? "repetitions" : "device";
            long long n, lo = ch == 'r' ? 1 : 0, hi = ch == 'S' ? 9000000000000000LL : ch == 'r' ? 1000 : 1023;
            int r = tl_parse_int64(optarg, lo, hi, &n);
            if (r == TL_ERANGE)
                fprintf(stderr, "tally-run: --%s: '%s' is out of range (%lld to %lld)\n", name, optarg, lo, hi);
            else if (r < 0)
                fprintf(stderr, "tally-run: --%s: '%s' is %s\n", name, optarg, tl_parse_int64_what(r));
            if (r < 0) return EX_USAGE;
            if (ch == 'S') c->ov.seed = n;
            else if (ch == 'r') c->ov.repetitions = (int)n;
            else c->co.device = (int)n;
            break;
        }
        case OPT_CALIB_TOL:
            if (num("calib-tol", optarg, &v) < 0) return EX_USAGE;
            if (!(v > 0 && v < 1)) {
                fprintf(stderr, "tally-run: --calib-tol: '%s' must be in (0, 1)\n", optarg);
                return EX_USAGE;
            }
            c->co.calib_tol = v;
            break;
        case OPT_SLEEP_US: case OPT_THRESHOLD_US: case OPT_TIMER_SLACK:
            if (num(ch == OPT_SLEEP_US ? "sleep-us" : ch == OPT_THRESHOLD_US ? "threshold-us" : "timer-slack-ns",
                    optarg, &v) < 0)
                return EX_USAGE;
            if (ch == OPT_SLEEP_US) c->sleep_us = v;
            else if (ch == OPT_THRESHOLD_US) c->threshold_us = v;
            else c->timer_slack_ns = v;
            break;
        case OPT_WATCHDOG:
            if (num("watchdog", optarg, &v) < 0) return EX_USAGE;
            if (!(v > 0) || v > 1e6) {
                fprintf(stderr, "tally-run: --watchdog: '%s' must be in (0, 1e6] seconds\n", optarg);
                return EX_USAGE;
            }
            c->co.watchdog_ns = (tl_ns)(v * 1e9);
            break;
        default:
            fprintf(stderr, "tally-run: try --help\n");
            return EX_USAGE;
        }
    }
    return 0;
}

static int need_gpu(const cli *c, tl_cuda_info *info)
{
    tl_err err = {0};
    int r = tl_cuda_probe(c->co.device, info, &err);
    if (r < 0) {
        fprintf(stderr, "tally-run: %s\n", err.msg);
        return r == TL_ENODEV ? EX_UNAVAILABLE : tl_exit_code(r);
    }
    return 0;
}

static int fail(const tl_err *err, int code)
{
    fprintf(stderr, "tally-run: %s\n", err->msg);
    return code == TL_ENODEV ? EX_UNAVAILABLE : tl_exit_code(code);
}

/* --csv F opened for writing (*csv NULL without --csv), its missing folders
 * made as for the results database: 0, or EX_CANTCREAT with a message naming
 * the file (and the folder that could not be made). */
static int open_csv(const cli *c, FILE **csv)
{
    *csv = NULL;
    tl_err mk = {0};
    if (c->csv && tl_mkdirs_for(c->csv, &mk) < 0) {
        fprintf(stderr, "tally-run: %s: cannot write: %s\n", c->csv, mk.msg);
        return EX_CANTCREAT;
    }
    if (c->csv && !(*csv = fopen(c->csv, "w"))) {
        fprintf(stderr, "tally-run: %s: cannot write: %s\n", c->csv, strerror(errno));
        return EX_CANTCREAT;
    }
    return 0;
}

/* Closes what open_csv opened. Returns status, or EX_CANTCREAT with a message
 * when status was 0 and the data did not all reach the file. */
static int close_csv(const cli *c, FILE *csv, int status)
{
    if (csv && fclose(csv) != 0 && status == 0) {
        fprintf(stderr, "tally-run: %s: write failed: %s\n", c->csv, strerror(errno));
        return EX_CANTCREAT;
    }
    return status;
}

/* ---- info ---- */

static int cmd_info(cli *c)
{
    tl_cuda_info info;
    int r = need_gpu(c, &info);
    if (r) return r;
    tl_device d;
    tl_err err = {0};
    c->co.watchdog_ns = -1;
    if ((r = tl_cuda_open(&d, &c->co, &err)) < 0) return fail(&err, r);
    tl_cuda_get_info(&d, &info);
    printf("gpu: %s\nsms: %d\ndriver: %s\nruntime: %s\nclocks: %s\n", info.name, info.sms, info.driver,
           info.runtime, info.clocks);
    printf("uuid: %s\npci_bus: %s\nhost: %s\n", info.uuid, info.pci_bus, info.host);
    printf("globaltimer_resolution_ns: %lld\nclock_offset_ns: %lld\n", info.timer_res_ns, info.clock_offset_ns);
    printf("stream_priorities: 0..%d\n", d.gpu.stream_prio_greatest);
    tl_dev_close(&d);
    return 0;
}

/* ---- calibrate ---- */

static int load_trace(tl_trace *t, const char *path)
{
    tl_err err = {0};
    tl_trace_init(t);
    int r = tl_trace_load(t, path, NULL, &err);
    if (r < 0) {
        fprintf(stderr, "tally-run: %s\n", err.msg);
        tl_trace_close(t);
        return tl_exit_code(r);
    }
    return 0;
}

/* Every trace named on the command line loaded and let go, before the GPU is
 * looked for: a missing or bad trace is said as such (66, 65), not hidden
 * behind "no usable GPU" (69). */
static int check_traces(int argc, char **argv)
{
    for (int a = optind; a < argc; a++) {
        tl_trace t;
        int r = load_trace(&t, argv[a]);
        if (r) return r;
        tl_trace_close(&t);
    }
    return 0;
}

static int cmd_calibrate(cli *c, int argc, char **argv)
{
    if (optind >= argc) {
        fprintf(stderr, "tally-run calibrate: give at least one trace\n");
        return EX_USAGE;
    }
    tl_cuda_info info;
    int r = check_traces(argc, argv);
    if (r || (r = need_gpu(c, &info))) return r;
    tl_device d;
    tl_err err = {0};
    if ((r = tl_cuda_open(&d, &c->co, &err)) < 0) return fail(&err, r);
    FILE *csv;
    if ((r = open_csv(c, &csv))) {
        tl_dev_close(&d);
        return r;
    }
    if (csv) fprintf(csv, "trace,iter,op,kernel,kind,variant,grid,threads,smem,regs,target_ns,iters,calibrated_ns\n");
    int status = 0;
    for (int a = optind; a < argc && !status; a++) {
        tl_trace t;
        if ((status = load_trace(&t, argv[a]))) break;
        tl_ns t0 = tl_mono_ns();
        if ((r = tl_cuda_prepare_trace(&d, &t, &err)) < 0) {
            status = fail(&err, r);
        } else {
            tl_cuda_calib_stats st;
            tl_cuda_get_calib_stats(&d, &st);
            fprintf(stderr, "%s: calibrated in %.1f s (cumulative: %llu kernels, %llu cached, %llu measurements, "
                            "%llu below the floor, %llu outside tolerance)\n",
                    argv[a], (double)(tl_mono_ns() - t0) / 1e9, (unsigned long long)st.kernels,
                    (unsigned long long)st.cache_hits, (unsigned long long)st.measurements,
                    (unsigned long long)st.below_floor, (unsigned long long)st.outside_tol);
            for (uint32_t i = 0; csv && i < t.n_iters; i++)
                for (uint32_t j = 0; j < t.iters[i].n_ops; j++) {
                    const tl_op *op = &t.iters[i].ops[j];
                    if (op->kind != TL_OP_KERNEL) continue;
                    tl_kernel_plan pl;
                    if (tl_cuda_plan(&d, &t, op, &pl, &err) < 0) continue;
                    const char *name = tl_trace_op_name(&t, op);
                    fprintf(csv, "\"%s\",%u,%u,\"%.80s\",%s,%d,%llu,%u,%u,%u,%lld,%u,%lld\n", argv[a], i, j, name,
                            tl_kernel_kind_name(pl.kind), pl.variant, (unsigned long long)tl_op_blocks(op),
                            tl_op_threads(op), op->static_smem + op->dynamic_smem, op->regs, (long long)op->dur_ns,
                            pl.iters, (long long)pl.expected_ns);
                }
        }
        tl_cuda_forget_trace(&d, &t);
        tl_trace_close(&t);
    }
    status = close_csv(c, csv, status);
    tl_dev_close(&d);
    return status;
}

/* ---- fidelity: each trace alone, closed loop, against its own numbers ---- */

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : x > y;
}

static tl_ns median(tl_ns *v, size_t n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_ns);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmd_fidelity(cli *c, int argc, char **argv)
{
    if (optind >= argc) {
        fprintf(stderr, "tally-run fidelity: give at least one trace\n");
        return EX_USAGE;
    }
    tl_cuda_info info;
    int r = check_traces(argc, argv);
    if (r || (r = need_gpu(c, &info))) return r;
    const tl_policy_ops *pol = tl_policy_find("priority-streams");
    if (!pol) pol = tl_policy_all()[0];
    FILE *csv;
    if ((r = open_csv(c, &csv)))
        return r;
    FILE *kcsv = NULL;
    if (c->csv) {
        char kp[1024];
        snprintf(kp, sizeof kp, "%s.kernels.csv", c->csv);
        if ((kcsv = fopen(kp, "w")))
            fprintf(kcsv, "trace,kernel,launches,traced_median_ns,calibrated_median_ns,replayed_median_ns,"
                          "traced_total_ns,replayed_total_ns\n");
    }
    if (csv)
        fprintf(csv, "trace,gpu,iterations,traced_iter_ns,measured_iter_ns,iter_err,kernels,"
                     "traced_kernel_median_ns,measured_kernel_median_ns,kernel_median_err,"
                     "names,names_within_5pct,traced_busy_ns,measured_busy_ns,timers,timer_late_mean_ns,"
                     "timer_late_max_ns,timers_late_over_10us\n");
    printf("%-36s %5s %12s %12s %7s %12s %12s %7s %9s\n", "trace", "iters", "traced_it_us", "hw_it_us", "err%",
           "traced_k_ns", "hw_k_ns", "err%", "names<5%");
    int status = 0;
    for (int a = optind; a < argc && !status; a++) {
        tl_trace t;
        if ((status = load_trace(&t, argv[a]))) break;
        tl_device d;
        tl_err err = {0};
        if ((r = tl_cuda_open(&d, &c->co, &err)) < 0 || (r = tl_cuda_prepare_trace(&d, &t, &err)) < 0) {
            status = fail(&err, r);
            if (d.ops) tl_dev_close(&d);
            tl_trace_close(&t);
            break;
        }
        tl_dev_close(&d);
        /* A fresh device for the run, as tally-run's sweep does. */
        if ((r = tl_cuda_open(&d, &c->co, &err)) < 0 || (r = tl_cuda_prepare_trace(&d, &t, &err)) < 0) {
            status = fail(&err, r);
            if (d.ops) tl_dev_close(&d);
            tl_trace_close(&t);
            break;
        }
        tl_job_spec js = {.name = argv[a], .trace = &t, .role = TL_ROLE_TRAINING, .arrival = TL_ARRIVAL_CLOSED};
        tl_run_config cfg = {.jobs = &js, .n_jobs = 1, .policy = pol,
                             .duration_ns = (tl_ns)((c->duration_s > 0 ? c->duration_s : 3) * 1e9),
                             .warmup_ns = (tl_ns)((c->warmup_s >= 0 ? c->warmup_s : 0.5) * 1e9),
                             .seed = 1, .record_kernels = true};
        tl_run_result res;
        r = tl_run(&cfg, &d, &res, &err);
        if (r < 0) {
            tl_dev_close(&d);
            status = fail(&err, r);
            tl_trace_close(&t);
            break;
        }
        /* Iteration time: traced mean over the trace's iterations vs the mean
         * of the replayed ones. Busy: GPU busy per iteration. */
        double traced_it = 0, traced_busy = 0;
        for (uint32_t i = 0; i < t.n_iters; i++) {
            traced_it += (double)t.iters[i].traced_ns;
            traced_busy += (double)t.iters[i].traced_busy_ns;
        }
        traced_it /= t.n_iters;
        traced_busy /= t.n_iters;
        double hw_it = 0, hw_busy = 0;
        for (size_t i = 0; i < res.n_recs; i++) {
            hw_it += (double)(res.recs[i].end_ns - res.recs[i].start_ns);
            hw_busy += (double)res.recs[i].busy_ns;
        }
        if (res.n_recs) {
            hw_it /= (double)res.n_recs;
            hw_busy /= (double)res.n_recs;
        }
        /* Kernels: median over all replayed launches vs median over the same
         * ops' traced durations; and per kernel name. */
        size_t nk = res.n_kernels;
        tl_ns *a1 = tl_xcalloc(nk + 1, sizeof *a1), *a2 = tl_xcalloc(nk + 1, sizeof *a2);
        for (size_t i = 0; i < nk; i++) {
            a1[i] = res.kernels[i].op->dur_ns;
            a2[i] = res.kernels[i].end_ns - res.kernels[i].start_ns;
        }
        tl_ns km_tr = median(a1, nk), km_hw = median(a2, nk);
        /* per name */
        int names = 0, names_ok = 0;
        char *seen = tl_xcalloc(t.n_strings + 1, 1);
        tl_ns *a3 = tl_xcalloc(nk + 1, sizeof *a3);
        for (size_t i = 0; i < nk; i++) {
            uint32_t nm = res.kernels[i].op->name;
            if (nm >= t.n_strings || seen[nm]) continue;
            seen[nm] = 1;
            size_t m = 0;
            double sum_t = 0, sum_h = 0;
            for (size_t k = i; k < nk; k++)
                if (res.kernels[k].op->name == nm) {
                    a1[m] = res.kernels[k].op->dur_ns;
                    a2[m] = res.kernels[k].end_ns - res.kernels[k].start_ns;
                    tl_kernel_plan pl = {0};
                    tl_err e2;
                    if (tl_cuda_plan(&d, &t, res.kernels[k].op, &pl, &e2) == 0) a3[m] = pl.expected_ns;
                    sum_t += (double)a1[m];
                    sum_h += (double)a2[m];
                    m++;
                }
            tl_ns mt = median(a1, m), mh = median(a2, m), mc = median(a3, m);
            names++;
            if (mt > 0 && fabs((double)mh / (double)mt - 1) <= 0.05) names_ok++;
            if (kcsv)
                fprintf(kcsv, "\"%s\",\"%.100s\",%zu,%lld,%lld,%lld,%.0f,%.0f\n", argv[a], t.strings[nm], m,
                        (long long)mt, (long long)mc, (long long)mh, sum_t, sum_h);
        }
        free(seen);
        free(a3);
        tl_cuda_loop_stats ls;
        tl_cuda_get_loop_stats(&d, &ls);
        tl_dev_close(&d);
        free(a1);
        free(a2);
        double it_err = traced_it > 0 ? hw_it / traced_it - 1 : 0;
        double k_err = km_tr > 0 ? (double)km_hw / (double)km_tr - 1 : 0;
        printf("%-36.36s %5zu %12.1f %12.1f %+7.2f %12lld %12lld %+7.2f %4d/%-4d\n", argv[a], res.n_recs,
               traced_it / 1e3, hw_it / 1e3, 100 * it_err, (long long)km_tr, (long long)km_hw, 100 * k_err,
               names_ok, names);
        if (csv)
            fprintf(csv, "\"%s\",\"%s\",%zu,%.0f,%.0f,%.5f,%zu,%lld,%lld,%.5f,%d,%d,%.0f,%.0f,%llu,%.0f,%lld,%llu\n",
                    argv[a], info.name, res.n_recs, traced_it, hw_it, it_err, nk, (long long)km_tr, (long long)km_hw,
                    k_err, names, names_ok, traced_busy, hw_busy, (unsigned long long)ls.timers,
                    ls.timers ? (double)ls.late_sum_ns / (double)ls.timers : 0.0, (long long)ls.late_max_ns,
                    (unsigned long long)ls.late_over_10us);
        tl_run_result_close(&res);
        tl_trace_close(&t);
    }
    if (kcsv) fclose(kcsv);
    return close_csv(c, csv, status);
}

/* ---- run: the sweep with a CUDA device per run ---- */

static int cuda_factory(void *arg, tl_device *dev, const tl_gpu_props *gpu, tl_err *err)
{
    (void)gpu;
    /* TALLY_BLOCK_TRACE: the run's place in the sweep names its files (the
     * context workers started for it inherit the variable) */
    static unsigned runs;
    if (tl_btrace_enabled()) {
        char n[16];
        snprintf(n, sizeof n, "%u", ++runs);
        setenv("TALLY_BLOCK_TRACE_RUN", n, 1);
    }
    return tl_cuda_open(dev, (const tl_cuda_options *)arg, err);
}

/* The replay's back-to-back gap on this GPU, before the runs (hw_gap.c):
 * 2000 queued 5 us kernels of 132 x 128 threads, the size of many of a
 * framework's small kernels; graph: the same kernels launched as one CUDA
 * graph, as graph jobs' are (graph_cache.h). */
static int probe_stream_gap(tl_device *d, bool graph, tl_hw_gap *g, tl_err *err)
{
    static char *names[] = {"", "tally_stream_gap_probe"};
    tl_op op;
    memset(&op, 0, sizeof op);
    op.kind = TL_OP_KERNEL;
    op.name = 1;
    op.grid[0] = 132, op.grid[1] = op.grid[2] = 1;
    op.block[0] = 128, op.block[1] = op.block[2] = 1;
    op.regs = 32;
    op.dur_ns = 5 * TL_NS_PER_US;
    op.event = -1;
    op.graph = graph;
    tl_iteration it = {.ops = &op, .n_ops = 1};
    tl_trace t;
    memset(&t, 0, sizeof t);
    t.iters = &it;
    t.n_iters = 1;
    t.strings = names;
    t.n_strings = 2;
    tl_ctx_config cc = {.kind = TL_CTX_TIMESLICED, .job = 0};
    tl_ctx_id ctx;
    tl_stream_id s;
    int r;
    if ((r = tl_cuda_prepare_trace(d, &t, err)) < 0 || (r = tl_dev_ctx_create(d, &cc, &ctx, err)) < 0 ||
        (r = tl_dev_stream_create(d, ctx, 0, &s, err)) < 0)
        return r;
    r = tl_hw_stream_gap(d, s, &op, 2000, g, err);
    tl_cuda_forget_trace(d, &t);
    return r;
}

static bool needs_mps(const tl_experiment *e)
{
    for (int i = 0; i < e->n_policies; i++) {
        const char *n = e->policies[i].ops->name;
        if (!strncmp(n, "mps", 3)) return true;
        if (!strcmp(n, "tgs") && e->policies[i].params) {
            json_t *m = json_object_get(e->policies[i].params, "mps");
            if (m && json_is_true(m)) return true;
        }
    }
    return false;
}

/* Arguments left after the options: a usage error of subcommand cmd. */
static bool extra_args(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return false;
    fprintf(stderr, "tally-run%s%s: unexpected argument '%s' (try --help)\n", *cmd ? " " : "", cmd, argv[optind]);
    return true;
}

static int cmd_run(cli *c, int argc, char **argv)
{
    if (extra_args("", argc, argv))
        return EX_USAGE;
    /* The spec and its traces first: their mistakes are worth knowing on a
     * machine without a GPU. */
    tl_experiment e;
    tl_err err = {0};
    tl_experiment_init(&e);
    int r = tl_experiment_from_overrides(&e, &c->ov, &err);
    if (r >= 0)
        r = tl_sweep_check_inputs(&e, &err);
    if (r < 0) {
        tl_experiment_close(&e);
        return fail(&err, r);
    }
    tl_cuda_info info;
    if ((r = need_gpu(c, &info))) {
        tl_experiment_close(&e);
        return r;
    }
    if (needs_mps(&e)) {
        char ctl[512];
        if ((r = tl_mps_find_control(ctl, sizeof ctl, &err)) < 0) {
            tl_experiment_close(&e);
            return fail(&err, r);
        }
    }
    /* Hardware runs keep their keys whatever the simulator's revision (resume). */
    e.hardware = true;
    /* The runs are recorded under the real GPU's name, whatever the spec said. */
    snprintf(e.gpu.name, sizeof e.gpu.name, "%.63s", info.name);
    /* Calibrate every trace before any run: calibrating mid-run would stall it. */
    tl_device d;
    if ((r = tl_cuda_open(&d, &c->co, &err)) < 0) {
        tl_experiment_close(&e);
        return fail(&err, r);
    }
    for (int s = 0; s < e.n_sets && r >= 0; s++)
        for (int j = 0; j < e.sets[s].n_jobs && r >= 0; j++) {
            const tl_job_conf *jc = &e.sets[s].jobs[j];
            tl_trace_options to = {.iteration_start_kernel = jc->iteration_kernel,
                                   .skip_iterations = jc->skip_iterations};
            tl_trace t;
            tl_trace_init(&t);
            if ((r = tl_trace_load(&t, jc->trace_path, &to, &err)) >= 0) {
                /* marks the ops as graph nodes, which are calibrated as such */
                tl_graph_launch gl = {0};
                if (jc->graph) tl_trace_as_graph(&t, &gl);
                r = tl_cuda_prepare_trace(&d, &t, &err);
            }
            tl_cuda_forget_trace(&d, &t);
            tl_trace_close(&t);
        }
    /* [0]: launched one by one (meta hw_stream_gap_ns); [1]: inside a CUDA
     * graph (hw_graph_gap_ns), probed when a job is launched as graphs */
    static const char *const gap_meta[2] = {"hw_stream_gap_ns", "hw_graph_gap_ns"};
    tl_hw_gap gap[2];
    bool have_gap[2] = {false, false};
    bool graphs = false;
    for (int s = 0; s < e.n_sets; s++)
        for (int j = 0; j < e.sets[s].n_jobs; j++) graphs |= e.sets[s].jobs[j].graph;
    for (int g = 0; g < (graphs ? 2 : 1) && r >= 0; g++) {
        /* a probe that fails costs the record, not the runs */
        tl_err gerr = {0};
        tl_cuda_loop_stats l0, ls;
        tl_cuda_get_loop_stats(&d, &l0);
        have_gap[g] = probe_stream_gap(&d, g == 1, &gap[g], &gerr) >= 0;
        tl_cuda_get_loop_stats(&d, &ls);
        if (have_gap[g])
            fprintf(stderr, "tally-run: back-to-back gap of the replay's kernels%s: %.2f us (median of %d; "
                            "kernel %.2f us, period %.2f us; GPU clock offset raised %llu times, by "
                            "%.2f us in all, lowered %llu times, by %.2f us); recorded as meta %s\n",
                    g ? " inside a CUDA graph" : "", gap[g].gap_ns / 1e3, gap[g].launches, gap[g].kernel_ns / 1e3,
                    gap[g].period_ns / 1e3, (unsigned long long)(ls.offset_raises - l0.offset_raises),
                    (ls.offset_raised_ns - l0.offset_raised_ns) / 1e3,
                    (unsigned long long)(ls.offset_lowers - l0.offset_lowers),
                    (ls.offset_lowered_ns - l0.offset_lowered_ns) / 1e3, gap_meta[g]);
        else
            fprintf(stderr, "tally-run: warning: %s; meta %s not recorded\n", gerr.msg, gap_meta[g]);
    }
    tl_dev_close(&d);
    if (r < 0) {
        tl_experiment_close(&e);
        return fail(&err, r);
    }
    char clocks[200];
    snprintf(clocks, sizeof clocks, "%s", info.clocks);
    c->so.kind = "hw";
    c->so.workers = 1; /* one GPU: runs one after the other, in this process */
    c->so.open_device = cuda_factory;
    c->so.device_arg = &c->co;
    c->so.driver = info.driver;
    c->so.clocks = clocks;
    r = tl_sweep_run(&e, &c->so, stdout, &err);
    tl_experiment_close(&e);
    /* With the runs, for tally-validate (the latest measurement wins): the
     * gaps measured, and how the graph jobs' kernels were calibrated (session
     * 12 changed it). */
    if (r >= 0) {
        tl_results db;
        if ((r = tl_results_open(&db, c->so.db_path, &err)) >= 0) {
            if (graphs)
                r = tl_results_set_meta(&db, "hw_graph_calibration", c->co.plain_node_calib ? "launch" : "node",
                                        &err);
            /* where it ran (the latest run wins, as for the gaps) */
            const char *where[3][2] = {{"hw_gpu_uuid", info.uuid}, {"hw_pci_bus", info.pci_bus},
                                       {"hw_host", info.host}};
            for (int k = 0; k < 3 && r >= 0; k++)
                if (where[k][1][0]) r = tl_results_set_meta(&db, where[k][0], where[k][1], &err);
            const char *cv = getenv("TALLY_SYNTH_CARVEOUT");
            if (r >= 0 && cv && *cv) /* a diagnostic replay (synth.cu) */
                r = tl_results_set_meta(&db, "hw_synth_carveout", cv, &err);
            for (int g = 0; g < 2 && r >= 0; g++) {
                if (!have_gap[g])
                    continue;
                char v[32];
                snprintf(v, sizeof v, "%lld", (long long)gap[g].gap_ns);
                r = tl_results_set_meta(&db, gap_meta[g], v, &err);
            }
            tl_results_close(&db);
        }
    }
    return r < 0 ? fail(&err, r) : 0;
}

/* mps-check: start a private MPS daemon, run `tally-run info` as two MPS
 * clients (50% and 100% of the SMs, priorities 1 and 0), stop the daemon and
 * count what is left of it. */
static int cmd_mps_check(cli *c, const char *self)
{
    tl_cuda_info info;
    int r = need_gpu(c, &info);
    if (r) return r;
    tl_err err = {0};
    char ctl[512];
    if ((r = tl_mps_find_control(ctl, sizeof ctl, &err)) < 0) return fail(&err, r);
    char root[] = "/tmp/tally-mps-XXXXXX";
    if (!mkdtemp(root)) {
        perror("tally-run: mkdtemp");
        return EX_CANTCREAT;
    }
    static tl_mps m;
    tl_mps_layout(&m, ctl, root);
    tl_procs_set_mps(&m);
    tl_ns t0 = tl_mono_ns();
    if ((r = tl_mps_start(&m, &err)) < 0) return fail(&err, r);
    printf("mps-check: daemon %s started in %.3f s (pipe %s), %d process(es)\n", ctl,
           (double)(tl_mono_ns() - t0) / 1e9, m.pipe_dir, tl_mps_count_processes(&m));
    int ok = 0;
    for (int k = 0; k < 2; k++) {
        char env[4][320];
        int n = tl_mps_client_env(&m, k ? 0 : 50, k ? 0 : 1, env, 4);
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < n; i++) putenv(env[i]);
            execl(self, self, "info", (char *)NULL);
            _exit(127);
        }
        tl_procs_add(pid);
        int st = 0;
        waitpid(pid, &st, 0);
        tl_procs_remove(pid);
        printf("mps-check: client %d (%s%s) exit %d\n", k, env[n - 2], n > 3 ? "" : "", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf("mps-check: %d process(es) of the daemon while running\n", tl_mps_count_processes(&m));
    t0 = tl_mono_ns();
    tl_mps_stop(&m);
    int left = tl_mps_count_processes(&m);
    printf("mps-check: stopped in %.3f s; %d process(es) left; %s\n", (double)(tl_mono_ns() - t0) / 1e9, left,
           ok == 2 && left == 0 ? "PASS" : "FAIL");
    return ok == 2 && left == 0 ? 0 : 1;
}

static int cmd_selftest(cli *c)
{
    tl_cuda_info info;
    int r = need_gpu(c, &info);
    if (r) return r;
    tl_err err = {0};
    r = tl_hw_selftest(stdout, &c->co, &err);
    return r < 0 ? fail(&err, r) : r;
}

/* contention: measure on the GPU (CSV with --csv), or fit a CSV again. */
static int cmd_contention(cli *c, int argc, char **argv)
{
    if (extra_args("contention", argc, argv))
        return EX_USAGE;
    tl_err err = {0};
    tl_contention_result fit;
    if (c->fit) {
        if (c->csv) {
            fprintf(stderr, "tally-run contention: --fit reads a CSV; --csv writes one: not both\n");
            return EX_USAGE;
        }
        tl_contention_point *p;
        int n, r = tl_contention_read_csv(c->fit, &p, &n, &err);
        if (r == 0) {
            r = tl_contention_report(stdout, p, n, &fit, &err);
            free(p); /* read succeeded: ours, whether the fit does or not */
        }
        return r < 0 ? fail(&err, r) : 0;
    }
    tl_cuda_info info;
    int r = need_gpu(c, &info);
    if (r) return r;
    FILE *csv;
    if ((r = open_csv(c, &csv)))
        return r;
    r = tl_hw_contention(stdout, csv, c->co.device, &fit, &err);
    return close_csv(c, csv, r < 0 ? fail(&err, r) : 0);
}

/* crowding: measure on the GPU (CSV with --csv) and fit. */
static int cmd_crowding(cli *c, int argc, char **argv)
{
    if (extra_args("crowding", argc, argv))
        return EX_USAGE;
    if (c->fit) {
        fprintf(stderr, "tally-run crowding: --fit is not supported (the fit is printed with the "
                        "measurement)\n");
        return EX_USAGE;
    }
    tl_cuda_info info;
    int r = need_gpu(c, &info);
    if (r) return r;
    FILE *csv;
    if ((r = open_csv(c, &csv)))
        return r;
    tl_err err = {0};
    tl_crowding_result fit;
    r = tl_hw_crowding(stdout, csv, c->co.device, &fit, &err);
    return close_csv(c, csv, r < 0 ? fail(&err, r) : 0);
}

/* jitter: the host's stalls, measured on the calling thread (no GPU). */
static int cmd_jitter(cli *c, int argc, char **argv)
{
    if (extra_args("jitter", argc, argv))
        return EX_USAGE;
    double secs = c->duration_s > 0 ? c->duration_s : 10;
    double sleep_us = isnan(c->sleep_us) ? 0 : c->sleep_us, thr_us = isnan(c->threshold_us) ? 10 : c->threshold_us;
    if (!(secs <= (double)(TL_JITTER_MAX_DURATION_NS / TL_NS_PER_S))) {
        fprintf(stderr, "tally-run jitter: --duration %g: at most %d s\n", secs,
                (int)(TL_JITTER_MAX_DURATION_NS / TL_NS_PER_S));
        return EX_USAGE;
    }
    if (!(sleep_us >= 0 && sleep_us <= 1e6) || !(thr_us >= 0.001)) {
        fprintf(stderr, "tally-run jitter: --sleep-us wants 0 (spin) to 1000000, --threshold-us at least 0.001\n");
        return EX_USAGE;
    }
    if (!isnan(c->timer_slack_ns) &&
        (!(c->timer_slack_ns >= 1 && c->timer_slack_ns <= 1e6) ||
         prctl(PR_SET_TIMERSLACK, (unsigned long)c->timer_slack_ns, 0, 0, 0) != 0)) {
        fprintf(stderr, "tally-run jitter: --timer-slack-ns %g: want 1 to 1000000 (on Linux)\n", c->timer_slack_ns);
        return EX_USAGE;
    }
    FILE *csv;
    int r = open_csv(c, &csv);
    if (r) return r;
    if (csv) setvbuf(csv, NULL, _IOLBF, 0); /* a probe ended by a signal keeps its stalls */
    if (!c->so.quiet)
        fprintf(stderr, "tally-run jitter: %s for %.1f s...\n", sleep_us > 0 ? "sleeping" : "spinning", secs);
    tl_err err = {0};
    tl_jitter_result j;
    r = tl_host_jitter((tl_ns)(secs * 1e9), (tl_ns)(sleep_us * 1e3), (tl_ns)(thr_us * 1e3), csv, &j, &err);
    if (r < 0) return close_csv(c, csv, fail(&err, r));
    printf("host jitter: %s, %.3f s on CPU %d, %llu %s\n", sleep_us > 0 ? "sleep" : "spin",
           (double)j.duration_ns / 1e9, j.cpu, (unsigned long long)j.reads, sleep_us > 0 ? "sleeps" : "clock reads");
    printf("stalls of %.1f us or more: %llu (%llu over 100 us, %llu over 1 ms, %llu over 10 ms), %.3f ms in all "
           "(%.4f%% of the time)\n", thr_us, (unsigned long long)j.stalls, (unsigned long long)j.over_100us,
           (unsigned long long)j.over_1ms, (unsigned long long)j.over_10ms, (double)j.stalled_ns / 1e6,
           100.0 * (double)j.stalled_ns / (double)(j.duration_ns ? j.duration_ns : 1));
    printf("longest: %.1f us, %.3f s into the probe\n", (double)j.max_ns / 1e3,
           (double)(j.max_at_ns - j.start_ns) / 1e9);
    if (sleep_us > 0)
        printf("oversleep: p50 %.1f us, p99 %.1f us (timer slack %d ns)\n", (double)j.sleep_p50_ns / 1e3,
               (double)j.sleep_p99_ns / 1e3, prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    printf("context switches: %ld involuntary, %ld voluntary; machine steal: ", j.nivcsw, j.nvcsw);
    if (j.steal_s >= 0) printf("%.3f CPU-s\n", j.steal_s);
    else printf("unknown\n");
    return close_csv(c, csv, 0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "__worker")) /* a context worker (worker.h) */
        return tl_worker_main(atoi(argv[2]), atoi(argv[3]));
    tl_procs_install(); /* children and MPS daemons never outlive us */
    cli c;
    memset(&c, 0, sizeof c);
    tl_spec_overrides_init(&c.ov);
    c.so.db_path = "results.db";
    c.sleep_us = c.threshold_us = c.timer_slack_ns = NAN;
    c.duration_s = c.warmup_s = -1; /* not given */
    const char *sub = "run";
    static char prog[64]; /* getopt names argv[0] in its messages: "tally-run fidelity" */
    if (argc > 1 && argv[1][0] != '-') {
        sub = argv[1];
        snprintf(prog, sizeof prog, "tally-run %s", sub);
        argv[1] = prog;
        argc--;
        argv++;
    }
    int r = parse(&c, argc, argv);
    if (r) return r;
    /* the synthetic kernels read it (synth.cu); say what is wrong before any GPU work */
    if (tl_synth_carveout_env() == -2) {
        fprintf(stderr, "tally-run: TALLY_SYNTH_CARVEOUT='%s': want a whole percentage 0-100\n",
                getenv("TALLY_SYNTH_CARVEOUT"));
        return EX_USAGE;
    }
    tl_btrace_conf bc;
    char bmsg[256];
    if (tl_btrace_env(&bc, bmsg, sizeof bmsg) < 0) {
        fprintf(stderr, "tally-run: %s\n", bmsg);
        return EX_USAGE;
    }
    /* its folder now: a run must not end before it is found unwritable */
    tl_err mk = {0};
    if (bc.dir && tl_mkdirs(bc.dir, &mk) < 0) {
        fprintf(stderr, "tally-run: TALLY_BLOCK_TRACE: %s\n", mk.msg);
        return EX_CANTCREAT;
    }
    if (!strcmp(sub, "run")) return cmd_run(&c, argc, argv);
    if (!strcmp(sub, "info")) return cmd_info(&c);
    if (!strcmp(sub, "calibrate")) return cmd_calibrate(&c, argc, argv);
    if (!strcmp(sub, "fidelity")) return cmd_fidelity(&c, argc, argv);
    if (!strcmp(sub, "selftest")) return cmd_selftest(&c);
    if (!strcmp(sub, "contention")) return cmd_contention(&c, argc, argv);
    if (!strcmp(sub, "crowding")) return cmd_crowding(&c, argc, argv);
    if (!strcmp(sub, "jitter")) return cmd_jitter(&c, argc, argv);
    if (!strcmp(sub, "mps-check")) return cmd_mps_check(&c, "/proc/self/exe");
    fprintf(stderr, "tally-run: unknown command '%s' (try --help)\n", sub);
    return EX_USAGE;
}
