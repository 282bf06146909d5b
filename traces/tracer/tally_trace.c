/* tally-trace: run a program under the CUPTI injection tracer.
 *
 *   tally-trace [options] -- PROGRAM [ARGS...]
 *
 * Sets CUDA_INJECTION64_PATH to libtally_trace.so (found next to this
 * executable, or in ../lib when installed), NVTX_INJECTION64_PATH to the CUPTI
 * library (so that NVTX ranges reach CUPTI), passes the options in TALLY_TRACE_*
 * environment variables and runs the program. Every process of the program
 * that initializes CUDA writes its own trace (pid in the file name).
 *
 * The program runs as a child rather than through a plain exec so that
 * tally-trace can say, after it ends, when no trace was written (a program
 * that never initialized CUDA never loads the library, so nobody else can).
 * Signals sent to tally-trace are passed on; its exit status is the
 * program's (killed by a signal: tally-trace kills itself with the same one).
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "tally/common.h" /* tl_parse_int64, tl_mkdirs: core/common.c is linked in (cuda.mk) */
#include "tracer.h"

static const char usage_text[] =
    "Usage: tally-trace [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "Trace the CUDA work of PROGRAM with CUPTI, without changing it, into the\n"
    "project's JSON trace format (one file per process that uses CUDA).\n"
    "\n"
    "Output:\n"
    "  -o, --output PATH              file name pattern; %p = process id, %% = '%'\n"
    "                                 (default tally-trace-%p.json; folders made)\n"
    "      --gzip                     compress (adds .gz to PATH if missing)\n"
    "  -q, --quiet                    no messages from the tracer on stderr\n"
    "What to record:\n"
    "      --host-timeline MODE       how the host side (API calls) is obtained:\n"
    "                                 lite (default): no API calls recorded; launches,\n"
    "                                 copies, waits are rebuilt from GPU records\n"
    "                                 (kernel queued timestamps), synchronization and\n"
    "                                 event records; host times are estimates, the\n"
    "                                 file says so. Costs the program little.\n"
    "                                 full: every runtime/driver API call recorded\n"
    "                                 (exact; PyTorch steps run ~30% slower).\n"
    "                                 none: GPU records only, no host calls.\n"
    "                                 An --activities set that holds runtime or\n"
    "                                 driver (all, default, -NAME) implies full\n"
    "      --sync-records HOW         lite: where synchronize/event calls come from:\n"
    "                                 callback (default): callbacks on those runtime\n"
    "                                 calls only; activity: CUPTI's synchronization\n"
    "                                 and CUDA-event records (exact too, but ~17%\n"
    "                                 slower on PyTorch); completion: no API callback\n"
    "                                 at all, only CUPTI's 'synchronize completed'\n"
    "                                 callbacks: stream/device syncs with their end\n"
    "                                 exact and start inferred; event syncs, stream\n"
    "                                 waits and event records are not seen, nor is\n"
    "                                 cudaDeviceReset (the trace is written at exit)\n"
    "      --launch-times HOW         lite: where launch host times come from:\n"
    "                                 queued (default): CUPTI's kernel queued\n"
    "                                 timestamps (they widen the GPU's gap between\n"
    "                                 back-to-back kernels: ~+4% on ResNet-50\n"
    "                                 training); callback: callbacks on the launch,\n"
    "                                 copy and memset calls only (exact host start\n"
    "                                 and end; the cost is on the launching thread);\n"
    "                                 off: placed between their neighbours (cheapest,\n"
    "                                 but launches lose the host's lead over the GPU)\n"
    "      --record-every N           record one iteration of every N only (the\n"
    "                                 window's first, then every N-th; needs\n"
    "                                 --iteration-sync or -marker): CUPTI's GPU\n"
    "                                 records cost\n"
    "                                 ~2 us a launch; turning them back on leaves\n"
    "                                 launches a little slower (host-bound ResNet-50,\n"
    "                                 N = 10: +4% against +13% for the default);\n"
    "                                 the trace holds the recorded iterations, whole\n"
    "                                 and exact (default 1: every iteration;\n"
    "                                 --start/--stop-after-iterations count them all)\n"
    "      --latency-sample N         queued: collect the queued timestamps in one\n"
    "                                 iteration of every N only (needs --iteration-\n"
    "                                 sync); the other iterations' launches take the\n"
    "                                 host times of the nearest sampled iteration that\n"
    "                                 made the same calls (default 1: every iteration)\n"
    "      --queued-times on|off      the same as --launch-times queued|off\n"
    "      --activities LIST          comma list of kernel,memcpy,memset,runtime,\n"
    "                                 driver,sync,nvtx,event,stream,queries; default\n"
    "                                 (all but queries) or all; '-NAME' removes one\n"
    "                                 from the default (e.g. -driver). queries: API\n"
    "                                 calls that neither launch nor wait\n"
    "                                 (cudaGetDevice...), left out by default\n"
    "      --buffer-size BYTES        CUPTI activity buffer size (K/M/G suffixes;\n"
    "                                 default 8M)\n"
    "Iterations (how the tracer finds where one step ends; pick one):\n"
    "      --iteration-marker NAME    an NVTX range whose name starts with NAME\n"
    "      --iteration-kernel NAME    a launch of the kernel whose symbol contains NAME\n"
    "      --iteration-sync [device:|stream:]N\n"
    "                                 every N-th cudaDeviceSynchronize or\n"
    "                                 cudaStreamSynchronize (or only the kind named)\n"
    "                                 ends one\n"
    "When to record (iterations need one of the options above):\n"
    "      --start-after-iterations N skip the first N iterations (warm-up)\n"
    "      --start-after-seconds S    skip the first S seconds after tally-trace starts\n"
    "      --stop-after-iterations N  record N iterations, then write the trace\n"
    "      --stop-after-seconds S     record S seconds, then write the trace\n"
    "  -h, --help                     this text\n"
    "  -V, --version                  version\n"
    "\n"
    "The trace is written at exit, on SIGINT/SIGTERM/SIGHUP/SIGQUIT and crash\n"
    "signals (marked \"truncated\"), after cudaDeviceReset, and when a stop\n"
    "condition is met. Files appear atomically: never half-written.\n"
    "Exit status: the program's; 64 bad usage; 69 tracer library not found;\n"
    "71 cannot start the program; 126/127 program not executable/not found.\n";

enum {
    OPT_START_ITERS = 256,
    OPT_START_SECONDS,
    OPT_STOP_ITERS,
    OPT_STOP_SECONDS,
    OPT_BUFFER,
    OPT_ACTIVITIES,
    OPT_MARKER,
    OPT_KERNEL,
    OPT_SYNC,
    OPT_GZIP,
    OPT_HOST_TIMELINE,
    OPT_SYNC_RECORDS,
    OPT_QUEUED_TIMES,
    OPT_LAUNCH_TIMES,
    OPT_LATENCY_SAMPLE,
    OPT_RECORD_EVERY,
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"start-after-iterations", required_argument, NULL, OPT_START_ITERS},
    {"start-after-seconds", required_argument, NULL, OPT_START_SECONDS},
    {"stop-after-iterations", required_argument, NULL, OPT_STOP_ITERS},
    {"stop-after-seconds", required_argument, NULL, OPT_STOP_SECONDS},
    {"buffer-size", required_argument, NULL, OPT_BUFFER},
    {"activities", required_argument, NULL, OPT_ACTIVITIES},
    {"iteration-marker", required_argument, NULL, OPT_MARKER},
    {"iteration-kernel", required_argument, NULL, OPT_KERNEL},
    {"iteration-sync", required_argument, NULL, OPT_SYNC},
    {"gzip", no_argument, NULL, OPT_GZIP},
    {"host-timeline", required_argument, NULL, OPT_HOST_TIMELINE},
    {"sync-records", required_argument, NULL, OPT_SYNC_RECORDS},
    {"queued-times", required_argument, NULL, OPT_QUEUED_TIMES},
    {"launch-times", required_argument, NULL, OPT_LAUNCH_TIMES},
    {"latency-sample", required_argument, NULL, OPT_LATENCY_SAMPLE},
    {"record-every", required_argument, NULL, OPT_RECORD_EVERY},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tally-trace: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'tally-trace --help'.\n");
    return EX_USAGE;
}

static int parse_count(const char *s, long long min, long long *out)
{
    return tl_parse_int64(s, min, LLONG_MAX, out);
}

static int parse_seconds(const char *s, double *out)
{
    double v;
    if (tl_parse_decimal(s, &v) < 0 || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

/* Digits and an optional K, M or G (binary), up to 1 TiB. */
static int parse_bytes(const char *s, long long *out)
{
    size_t n = strlen(s);
    char unit = n ? s[n - 1] : 0;
    long long mul = unit == 'K' || unit == 'k'   ? 1LL << 10
                    : unit == 'M' || unit == 'm' ? 1LL << 20
                    : unit == 'G' || unit == 'g' ? 1LL << 30
                                                 : 1;
    n -= mul > 1;
    char digits[32]; /* 2^40 has 13 digits: a longer number is no size here */
    if (n >= sizeof digits)
        return -1;
    memcpy(digits, s, n);
    digits[n] = 0;
    long long v;
    if (tl_parse_int64(digits, 1, (1LL << 40) / mul, &v) < 0)
        return -1;
    *out = v * mul;
    return 0;
}

/* The output's folder as far as it does not depend on the pid: up to the
 * last '/' before the names of two pids part (-o runs/%p/t.json: "runs"; no
 * '/' there: "."). The library makes the rest when it writes. */
static void fixed_folder(const char *output, int gzip, char *dir, size_t len)
{
    char a[8192], b[8192];
    tt_expand_output(output, 1, gzip, a, sizeof a); /* main checked the length */
    tt_expand_output(output, 2, gzip, b, sizeof b);
    size_t n = 0;
    while (a[n] && a[n] == b[n])
        n++;
    a[n] = 0;
    char *slash = strrchr(a, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == a)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - a), a);
}

/* The library: $TALLY_TRACE_LIB, else next to this executable (build dir),
 * else ../lib (installed). */
static int find_library(char *out, size_t len)
{
    const char *env = getenv("TALLY_TRACE_LIB");
    if (env && *env) {
        if (access(env, R_OK) != 0)
            return -1;
        snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    const char *dir = dirname(exe);
    const char *tries[] = {"%s/libtally_trace.so", "%s/../lib/libtally_trace.so"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, tries[i], dir);
        char real[PATH_MAX];
        if (realpath(p, real) && access(real, R_OK) == 0) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    return -1;
}

/* The CUPTI library the tracer links to: NVTX must inject that very one. */
static int find_cupti(const char *lib, char *out, size_t len, char *err, size_t err_len)
{
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        snprintf(err, err_len, "%s", dlerror());
        return -1;
    }
    void *sym = dlsym(h, "cuptiGetVersion");
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname) {
        snprintf(err, err_len, "%s: cuptiGetVersion not found", lib);
        return -1;
    }
    char real[PATH_MAX];
    snprintf(out, len, "%s", realpath(info.dli_fname, real) ? real : info.dli_fname);
    return 0; /* the handle stays open: the wrapper exits soon, harmless */
}

static void set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) < 0) {
        perror("tally-trace: setenv");
        exit(EX_OSERR);
    }
}

static void set_env_ll(const char *name, long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    set_env(name, b);
}

static volatile sig_atomic_t child_pid;

/* Pass signals on. A terminal's ^C already reaches the whole foreground
 * process group, the program included: passing it on too would deliver it
 * twice, so only signals sent to tally-trace itself are forwarded. */
static void forward(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (child_pid > 0 && !(si && si->si_code == SI_KERNEL))
        kill(child_pid, sig);
}

static const char *sig_name(int sig)
{
    const char *s = sigabbrev_np(sig);
    return s ? s : "?";
}

int main(int argc, char **argv)
{
    char output[4096] = "tally-trace-%p.json";
    long long start_iters = -1, stop_iters = -1, buffer = 0, latency_sample = 1, record_every = 1;
    const char *iter_sync = NULL;
    double start_s = -1, stop_s = -1;
    const char *activities = NULL, *marker = NULL, *kernel = NULL;
    int gzip = 0, quiet = 0, methods = 0, c;
    int host_timeline = -1, sync_records = TT_SYNCREC_CALLBACK;
    int launch_times = TT_LAUNCH_QUEUED;
    unsigned activity_bits = TT_ACT_DEFAULT;

    while ((c = getopt_long(argc, argv, "+o:qhV", long_opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!*optarg)
                return usage_error("--output: empty path%s", "");
            snprintf(output, sizeof output, "%s", optarg);
            break;
        case OPT_START_ITERS:
            if (parse_count(optarg, 0, &start_iters) < 0)
                return usage_error("--start-after-iterations: '%s' is not an integer >= 0", optarg);
            break;
        case OPT_STOP_ITERS:
            if (parse_count(optarg, 1, &stop_iters) < 0)
                return usage_error("--stop-after-iterations: '%s' is not an integer >= 1", optarg);
            break;
        case OPT_START_SECONDS:
            if (parse_seconds(optarg, &start_s) < 0)
                return usage_error("--start-after-seconds: '%s' is not a number of seconds >= 0",
                                   optarg);
            break;
        case OPT_STOP_SECONDS:
            if (parse_seconds(optarg, &stop_s) < 0 || stop_s <= 0)
                return usage_error("--stop-after-seconds: '%s' is not a number of seconds > 0",
                                   optarg);
            break;
        case OPT_BUFFER:
            if (parse_bytes(optarg, &buffer) < 0 || buffer < 4096)
                return usage_error("--buffer-size: '%s' is not a size >= 4096 bytes", optarg);
            break;
        case OPT_ACTIVITIES: {
            unsigned bits;
            char bad[64];
            if (tt_parse_activities(optarg, &bits, bad, sizeof bad) < 0)
                return usage_error("--activities: unknown activity '%s'", bad);
            if (!(bits & TT_ACT_KERNEL))
                return usage_error("--activities: '%s' leaves out kernel: nothing to trace", optarg);
            activities = optarg;
            activity_bits = bits;
            break;
        }
        case OPT_HOST_TIMELINE:
            if (tt_parse_host_timeline(optarg, &host_timeline) < 0)
                return usage_error("--host-timeline: '%s' is not lite, full or none", optarg);
            break;
        case OPT_SYNC_RECORDS:
            if (tt_parse_sync_records(optarg, &sync_records) < 0)
                return usage_error("--sync-records: '%s' is not callback, activity or completion",
                                   optarg);
            break;
        case OPT_QUEUED_TIMES: { /* the old spelling; the last of the two wins */
            bool on;
            if (tt_parse_on_off(optarg, &on) < 0)
                return usage_error("--queued-times: '%s' is not on or off", optarg);
            launch_times = on ? TT_LAUNCH_QUEUED : TT_LAUNCH_OFF;
            break;
        }
        case OPT_LAUNCH_TIMES:
            if (tt_parse_launch_times(optarg, &launch_times) < 0)
                return usage_error("--launch-times: '%s' is not queued, callback or off", optarg);
            break;
        case OPT_RECORD_EVERY:
            if (parse_count(optarg, 1, &record_every) < 0)
                return usage_error("--record-every: '%s' is not an integer >= 1", optarg);
            break;
        case OPT_LATENCY_SAMPLE:
            if (parse_count(optarg, 1, &latency_sample) < 0)
                return usage_error("--latency-sample: '%s' is not an integer >= 1", optarg);
            break;
        case OPT_MARKER:
            if (!*optarg)
                return usage_error("--iteration-marker: empty name%s", "");
            marker = optarg, methods++;
            break;
        case OPT_KERNEL:
            if (!*optarg)
                return usage_error("--iteration-kernel: empty name%s", "");
            kernel = optarg, methods++;
            break;
        case OPT_SYNC: {
            int64_t n;
            int kind;
            if (tt_parse_iter_sync(optarg, &n, &kind) < 0)
                return usage_error("--iteration-sync: '%s' is not [device:|stream:]N with N >= 1",
                                   optarg);
            iter_sync = optarg, methods++;
            break;
        }
        case OPT_GZIP:
            gzip = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return EX_OK;
        case 'V':
            printf("tally-trace %s (CUPTI injection tracer)\n", TT_VERSION);
            return EX_OK;
        default:
            fprintf(stderr, "Try 'tally-trace --help'.\n");
            return EX_USAGE;
        }
    }
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return usage_error("no program given%s", "");
    if (methods > 1)
        return usage_error("give at most one of --iteration-marker, --iteration-kernel, "
                           "--iteration-sync%s", "");
    if (start_iters >= 0 && start_s >= 0)
        return usage_error("--start-after-iterations and --start-after-seconds exclude "
                           "each other%s", "");
    if ((start_iters >= 0 || stop_iters > 0) && methods == 0)
        return usage_error("--start/--stop-after-iterations need --iteration-marker, "
                           "--iteration-kernel or --iteration-sync%s", "");
    /* An explicit API activity asks for recorded calls (as before lite). */
    if (host_timeline < 0)
        host_timeline = activities && (activity_bits & (TT_ACT_RUNTIME | TT_ACT_DRIVER))
                            ? TT_HOST_FULL
                            : TT_HOST_LITE;
    /* Sampled iterations are found by the boundaries' correlation ids:
     * synchronize calls seen by callbacks (lite_sample.c). */
    if (latency_sample > 1 && (host_timeline != TT_HOST_LITE || launch_times != TT_LAUNCH_QUEUED))
        return usage_error("--latency-sample: needs the lite host timeline with --launch-times "
                           "queued%s", "");
    /* Records are turned on and off at boundaries seen as they happen:
     * synchronize calls and NVTX ranges are, iteration kernels are found in
     * the records being turned off. (With markers, the ranges of the
     * iterations left out stay in the file, holding nothing: a loader drops
     * an iteration without GPU work.) */
    if (record_every > 1 && !iter_sync && !marker)
        return usage_error("--record-every: needs --iteration-sync or --iteration-marker%s", "");
    if (record_every > 1 && latency_sample > 1)
        return usage_error("--record-every and --latency-sample exclude each other%s", "");
    if (latency_sample > 1 && (!iter_sync || sync_records == TT_SYNCREC_COMPLETION))
        return usage_error("--latency-sample: needs --iteration-sync (and --sync-records "
                           "callback or activity)%s", "");
    char probe[8192];
    if (tt_expand_output(output, 1, gzip, probe, sizeof probe) < 0)
        return usage_error("--output: path too long%s", "");

    char lib[PATH_MAX], cupti[PATH_MAX], err[PATH_MAX + 512];
    if (find_library(lib, sizeof lib) < 0) {
        fprintf(stderr, "tally-trace: cannot find libtally_trace.so next to this program or in "
                        "../lib (set TALLY_TRACE_LIB)\n");
        return EX_UNAVAILABLE;
    }
    if (find_cupti(lib, cupti, sizeof cupti, err, sizeof err) < 0) {
        fprintf(stderr, "tally-trace: cannot load the tracer library: %s\n", err);
        return EX_UNAVAILABLE;
    }

    /* The trace is written when the program ends, maybe hours from now: a
     * folder that cannot be made or written in must be said now (made here,
     * once the run can start, not before). */
    char dir[8192];
    fixed_folder(output, gzip, dir, sizeof dir);
    tl_err merr = {0};
    if (tl_mkdirs(dir, &merr) < 0) {
        fprintf(stderr, "tally-trace: --output %s: %s\n", output, merr.msg);
        return EX_CANTCREAT;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "tally-trace: --output %s: cannot write in the folder %s: %s\n", output, dir,
                strerror(errno));
        return EX_CANTCREAT;
    }

    set_env("CUDA_INJECTION64_PATH", lib);
    if (!getenv("NVTX_INJECTION64_PATH"))
        set_env("NVTX_INJECTION64_PATH", cupti);
    set_env("TALLY_TRACE_OUTPUT", output);
    set_env_ll("TALLY_TRACE_START_ITERATIONS", start_iters);
    set_env_ll("TALLY_TRACE_STOP_ITERATIONS", stop_iters > 0 ? stop_iters : 0);
    unsetenv("TALLY_TRACE_START_SECONDS");
    unsetenv("TALLY_TRACE_STOP_SECONDS");
    if (start_s >= 0) {
        char b[64];
        snprintf(b, sizeof b, "%.9g", start_s);
        set_env("TALLY_TRACE_START_SECONDS", b);
    }
    if (stop_s >= 0) {
        char b[64];
        snprintf(b, sizeof b, "%.9g", stop_s);
        set_env("TALLY_TRACE_STOP_SECONDS", b);
    }
    if (start_iters < 0)
        unsetenv("TALLY_TRACE_START_ITERATIONS");
    if (stop_iters <= 0)
        unsetenv("TALLY_TRACE_STOP_ITERATIONS");
    if (buffer)
        set_env_ll("TALLY_TRACE_BUFFER_SIZE", buffer);
    else
        unsetenv("TALLY_TRACE_BUFFER_SIZE");
    if (activities)
        set_env("TALLY_TRACE_ACTIVITIES", activities);
    else
        unsetenv("TALLY_TRACE_ACTIVITIES");
    set_env("TALLY_TRACE_ITERATION_MARKER", marker ? marker : "");
    set_env("TALLY_TRACE_ITERATION_KERNEL", kernel ? kernel : "");
    set_env("TALLY_TRACE_ITERATION_SYNC", iter_sync ? iter_sync : "0");
    set_env("TALLY_TRACE_HOST_TIMELINE", tt_host_timeline_name(host_timeline));
    set_env("TALLY_TRACE_SYNC_RECORDS", tt_sync_records_name(sync_records));
    set_env("TALLY_TRACE_LAUNCH_TIMES", tt_launch_times_name(launch_times));
    set_env_ll("TALLY_TRACE_LATENCY_SAMPLE", latency_sample);
    set_env_ll("TALLY_TRACE_RECORD_EVERY", record_every);
    unsetenv("TALLY_TRACE_QUEUED_TIMES"); /* (an old spelling in our own environment) */
    set_env_ll("TALLY_TRACE_GZIP", gzip);
    set_env_ll("TALLY_TRACE_QUIET", quiet);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    set_env_ll("TALLY_TRACE_T0_NS", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    char cmd[4096] = "";
    for (int i = optind; i < argc; i++) {
        size_t l = strlen(cmd);
        snprintf(cmd + l, sizeof cmd - l, "%s%s", i > optind ? " " : "", argv[i]);
    }
    set_env("TALLY_TRACE_COMMAND", cmd);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
        sigaction(fwd[i], &sa, NULL);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("tally-trace: fork");
        return EX_OSERR;
    }
    if (pid == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
            sigaction(fwd[i], &dfl, NULL);
        set_env_ll("TALLY_TRACE_ROOT_PID", (long long)getpid());
        execvp(argv[optind], argv + optind);
        int e = errno;
        fprintf(stderr, "tally-trace: %s: %s\n", argv[optind], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("tally-trace: waitpid");
            return EX_OSERR;
        }
    }
    child_pid = 0;

    bool exec_failed = WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126);
    char path[8192];
    tt_expand_output(output, (int)pid, gzip, path, sizeof path);
    struct stat st;
    if (!exec_failed && stat(path, &st) != 0) {
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            fprintf(stderr, "tally-trace: %s (pid %d) was killed by SIGKILL: no trace written\n",
                    argv[optind], (int)pid);
        else
            fprintf(stderr,
                    "tally-trace: no trace written for %s (pid %d): it never initialized CUDA "
                    "(its child processes may have written their own: %s)\n",
                    argv[optind], (int)pid, output);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (!quiet)
            fprintf(stderr, "tally-trace: %s ended by SIG%s\n", argv[optind], sig_name(sig));
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        if (sig != SIGSEGV && sig != SIGABRT && sig != SIGQUIT && sig != SIGBUS &&
            sig != SIGFPE && sig != SIGILL)
            raise(sig); /* the same status for whoever waits on us */
        return 128 + sig; /* no second core dump */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : EX_SOFTWARE;
}
