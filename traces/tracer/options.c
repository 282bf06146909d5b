/* tally-trace: options, shared by the command (which checks them and puts
 * them in the environment) and the injection library (which reads them back).
 * The environment is the only channel that reaches every traced process,
 * children spawned by the program included.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/common.h" /* tl_parse_int64, tl_env_int64: core/common.c is linked in (cuda.mk) */
#include "tracer.h"

static const struct {
    const char *name;
    unsigned bit;
} activity_names[] = {
    {"kernel", TT_ACT_KERNEL},   {"memcpy", TT_ACT_MEMCPY}, {"memset", TT_ACT_MEMSET},
    {"runtime", TT_ACT_RUNTIME}, {"driver", TT_ACT_DRIVER}, {"sync", TT_ACT_SYNC},
    {"nvtx", TT_ACT_NVTX},       {"event", TT_ACT_EVENT},   {"stream", TT_ACT_STREAM},
    {"queries", TT_ACT_QUERIES}, {"default", TT_ACT_DEFAULT}, {"all", TT_ACT_ALL},
};

int tt_parse_activities(const char *list, unsigned *bits, char *bad, size_t bad_len)
{
    unsigned b = 0;
    bool first = true;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool minus = len > 0 && *p == '-';
        const char *w = minus ? p + 1 : p;
        size_t wl = minus ? len - 1 : len;
        if (minus && first)
            b = TT_ACT_DEFAULT; /* "-driver" alone means "the default but driver" */
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof activity_names / sizeof activity_names[0]; i++)
            if (strlen(activity_names[i].name) == wl && strncmp(activity_names[i].name, w, wl) == 0)
                bit = activity_names[i].bit;
        if (!bit) {
            snprintf(bad, bad_len, "%.*s", (int)len, p);
            return -1;
        }
        b = minus ? b & ~bit : b | bit;
        first = false;
        p = e ? e + 1 : p + len;
    }
    *bits = b;
    return 0;
}

static int env_int(const char *name, int64_t min, int64_t *out, char *msg, size_t msg_len)
{
    long long x;
    int r = tl_env_int64(name, min, INT64_MAX, &x);
    if (r < 0) {
        snprintf(msg, msg_len, "%s='%s' is %s (expected an integer >= %lld)", name, getenv(name),
                 tl_parse_int64_what(r), (long long)min);
        return -1;
    }
    if (r)
        *out = x;
    return 0;
}

static int env_double(const char *name, double *out, char *msg, size_t msg_len)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    double x;
    if (tl_parse_decimal(v, &x) < 0 || !(x >= 0)) {
        snprintf(msg, msg_len, "%s='%s': expected a number of seconds >= 0", name, v);
        return -1;
    }
    *out = x;
    return 0;
}

static void env_str(const char *name, char *out, size_t len)
{
    const char *v = getenv(name);
    if (v)
        snprintf(out, len, "%s", v);
}

int tt_options_from_env(tt_options *o, char *msg, size_t msg_len)
{
    memset(o, 0, sizeof *o);
    snprintf(o->output, sizeof o->output, "tally-trace-%%p.json");
    o->start_iters = -1;
    o->stop_iters = -1;
    o->start_seconds = -1;
    o->stop_seconds = -1;
    o->buffer_size = 8u << 20;
    o->activities = TT_ACT_DEFAULT;
    /* Synchronize and event calls from callbacks on those calls: CUPTI's
     * SYNCHRONIZATION activity made ResNet-50 training steps ~17% slower
     * than the callbacks (experiments/results/tracer/README.md). */
    o->sync_records = TT_SYNCREC_CALLBACK;
    o->launch_times = TT_LAUNCH_QUEUED;
    o->latency_sample = 1;
    o->record_every = 1;
    o->max_records = 200u * 1000 * 1000; /* ~20 GB of records: a guard, not a plan */

    env_str("TALLY_TRACE_OUTPUT", o->output, sizeof o->output);
    env_str("TALLY_TRACE_ITERATION_MARKER", o->iter_marker, sizeof o->iter_marker);
    env_str("TALLY_TRACE_ITERATION_KERNEL", o->iter_kernel, sizeof o->iter_kernel);
    env_str("TALLY_TRACE_COMMAND", o->command, sizeof o->command);
    int64_t buf = 0, gz = 0, quiet = 0, t0 = 0, maxrec = 0;
    if (env_int("TALLY_TRACE_START_ITERATIONS", 0, &o->start_iters, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_STOP_ITERATIONS", 1, &o->stop_iters, msg, msg_len) < 0 ||
        env_double("TALLY_TRACE_START_SECONDS", &o->start_seconds, msg, msg_len) < 0 ||
        env_double("TALLY_TRACE_STOP_SECONDS", &o->stop_seconds, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_BUFFER_SIZE", 4096, &buf, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_GZIP", 0, &gz, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_QUIET", 0, &quiet, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_T0_NS", 0, &t0, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_MAX_RECORDS", 1, &maxrec, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_LATENCY_SAMPLE", 1, &o->latency_sample, msg, msg_len) < 0 ||
        env_int("TALLY_TRACE_RECORD_EVERY", 1, &o->record_every, msg, msg_len) < 0)
        return -1;
    if (buf)
        o->buffer_size = (size_t)buf;
    if (maxrec)
        o->max_records = (size_t)maxrec;
    o->gzip = gz != 0;
    o->quiet = quiet != 0;
    if (t0) {
        o->t0_unix_ns = t0;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        o->t0_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    const char *sync = getenv("TALLY_TRACE_ITERATION_SYNC");
    if (sync && *sync && strcmp(sync, "0") != 0 &&
        tt_parse_iter_sync(sync, &o->iter_sync, &o->iter_sync_kind) < 0) {
        snprintf(msg, msg_len, "TALLY_TRACE_ITERATION_SYNC='%s': expected [device:|stream:]N, N >= 1",
                 sync);
        return -1;
    }
    const char *acts = getenv("TALLY_TRACE_ACTIVITIES");
    if (acts && *acts) {
        char bad[64];
        if (tt_parse_activities(acts, &o->activities, bad, sizeof bad) < 0) {
            snprintf(msg, msg_len, "TALLY_TRACE_ACTIVITIES: unknown activity '%s'", bad);
            return -1;
        }
    }
    const char *host = getenv("TALLY_TRACE_HOST_TIMELINE");
    if (host && *host && tt_parse_host_timeline(host, &o->host_timeline) < 0) {
        snprintf(msg, msg_len, "TALLY_TRACE_HOST_TIMELINE='%s': expected lite, full or none", host);
        return -1;
    }
    const char *how = getenv("TALLY_TRACE_SYNC_RECORDS");
    if (how && *how && tt_parse_sync_records(how, &o->sync_records) < 0) {
        snprintf(msg, msg_len,
                 "TALLY_TRACE_SYNC_RECORDS='%s': expected activity, callback or completion", how);
        return -1;
    }
    /* TALLY_TRACE_QUEUED_TIMES=on|off: the old spelling of LAUNCH_TIMES
     * queued|off; LAUNCH_TIMES wins when both are set. */
    const char *queued = getenv("TALLY_TRACE_QUEUED_TIMES");
    bool on = true;
    if (queued && *queued) {
        if (tt_parse_on_off(queued, &on) < 0) {
            snprintf(msg, msg_len, "TALLY_TRACE_QUEUED_TIMES='%s': expected on or off", queued);
            return -1;
        }
        o->launch_times = on ? TT_LAUNCH_QUEUED : TT_LAUNCH_OFF;
    }
    const char *launch = getenv("TALLY_TRACE_LAUNCH_TIMES");
    if (launch && *launch && tt_parse_launch_times(launch, &o->launch_times) < 0) {
        snprintf(msg, msg_len, "TALLY_TRACE_LAUNCH_TIMES='%s': expected queued, callback or off",
                 launch);
        return -1;
    }
    /* Only FULL records API calls; NONE has no use for waits and event
     * records either (they only say something joined to their calls). */
    if (o->host_timeline != TT_HOST_FULL)
        o->activities &= ~(unsigned)TT_ACT_API;
    if (o->host_timeline == TT_HOST_NONE)
        o->activities &= ~(unsigned)(TT_ACT_SYNC | TT_ACT_EVENT);
    if (!*o->output) {
        snprintf(msg, msg_len, "TALLY_TRACE_OUTPUT is empty");
        return -1;
    }
    return 0;
}

/* The option words of a mode, in the order of its TT_* values. */
static int word_index(const char *const *words, int n, const char *s, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

static const char *word_of(const char *const *words, int n, int i)
{
    return i >= 0 && i < n ? words[i] : "?";
}

/* TT_HOST_LITE, TT_HOST_FULL, TT_HOST_NONE */
static const char *const host_timeline_names[] = {"lite", "full", "none"};
/* TT_SYNCREC_ACTIVITY, _CALLBACK, _COMPLETION */
static const char *const sync_records_names[] = {"activity", "callback", "completion"};
/* TT_LAUNCH_QUEUED, _CALLBACK, _OFF */
static const char *const launch_times_names[] = {"queued", "callback", "off"};

int tt_parse_host_timeline(const char *s, int *mode) { return word_index(host_timeline_names, 3, s, mode); }
const char *tt_host_timeline_name(int mode) { return word_of(host_timeline_names, 3, mode); }
int tt_parse_sync_records(const char *s, int *how) { return word_index(sync_records_names, 3, s, how); }
const char *tt_sync_records_name(int how) { return word_of(sync_records_names, 3, how); }
int tt_parse_launch_times(const char *s, int *how) { return word_index(launch_times_names, 3, s, how); }
const char *tt_launch_times_name(int how) { return word_of(launch_times_names, 3, how); }

int tt_parse_on_off(const char *s, bool *on)
{
    if (strcmp(s, "on") == 0 || strcmp(s, "1") == 0)
        *on = true;
    else if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0)
        *on = false;
    else
        return -1;
    return 0;
}

int tt_parse_iter_sync(const char *s, int64_t *n, int *kind)
{
    *kind = TT_SYNC_ANY;
    if (strncmp(s, "device:", 7) == 0)
        *kind = TT_SYNC_DEVICE, s += 7;
    else if (strncmp(s, "stream:", 7) == 0)
        *kind = TT_SYNC_STREAM, s += 7;
    long long v;
    if (tl_parse_int64(s, 1, INT64_MAX, &v) < 0)
        return -1;
    *n = v;
    return 0;
}

int tt_expand_output(const char *pattern, int pid, bool gzip, char *out, size_t out_len)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[32];
        const char *add = piece;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(piece, sizeof piece, "%d", pid);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            piece[0] = '%', piece[1] = 0;
            p++;
        } else {
            piece[0] = *p, piece[1] = 0;
        }
        size_t l = strlen(add);
        if (n + l + 1 > out_len)
            return -1;
        memcpy(out + n, add, l + 1);
        n += l;
    }
    if (gzip && (n < 3 || strcmp(out + n - 3, ".gz") != 0)) {
        if (n + 4 > out_len)
            return -1;
        memcpy(out + n, ".gz", 4);
    }
    return 0;
}

void tt_api_base_name(const char *name, char *out, size_t out_len)
{
    snprintf(out, out_len, "%s", name ? name : "");
    char *v = strrchr(out, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9') {
        char *q = v + 2;
        while (*q >= '0' && *q <= '9')
            q++;
        if (!*q)
            *v = 0;
    }
}
