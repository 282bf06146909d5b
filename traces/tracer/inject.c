/* tally-trace: the CUPTI injection library (libtally_trace.so).
 *
 * The CUDA driver loads this library when the process initializes CUDA and
 * CUDA_INJECTION64_PATH names it, and calls InitializeInjection once. From
 * there on CUPTI's activity API records kernels (CONCURRENT_KERNEL: the plain
 * KERNEL kind serializes them), copies, memsets, synchronizations, CUDA event
 * records, streams and NVTX ranges, and the host side as --host-timeline
 * says: lite (default) records no API call but kernels' queued/submitted
 * latency timestamps (or, with --launch-times callback, the launch calls'
 * host entry and exit from callbacks on those calls only: hostcalls.c), and
 * lite.c rebuilds the calls when writing; full
 * records every runtime and driver API call (host start/end, thread); none
 * records GPU work only. A few callbacks, enabled only where an option needs
 * them, find iteration boundaries as they happen (NVTX ranges, synchronize
 * calls; an iteration kernel is found in the kernel records instead), time
 * the synchronize and event calls (lite with --sync-records callback) and
 * see cudaDeviceReset and context creation (device properties).
 *
 * The trace is written (tracer write.c) at exit, on SIGINT/SIGTERM and crash
 * signals, after cudaDeviceReset and when a stop condition is met. The heavy
 * work (flush, write) runs on a thread of ours: a signal handler only asks for
 * it through a pipe and waits, bounded, for the answer.
 */
#include <cuda.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

/* The lite host timeline is compiled into this translation unit: cuda.mk
 * (outside this folder) lists the library's sources, and lite.c is newer.
 * Once cuda.mk lists lite.c in TRACER_LIB_SRC, drop this include. */
#include "lite.c"
/* The same for the launch-time log of --launch-times callback. */
#include "hostcalls.c"
#include "lite_sample.c"

/* tracer.h mirrors these CUPTI values so that write.c and lite.c build
 * without CUPTI's headers. */
_Static_assert((int)TT_COPY_HTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOD &&
                   (int)TT_COPY_DTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                   (int)TT_COPY_HTOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOA &&
                   (int)TT_COPY_ATOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOH &&
                   (int)TT_COPY_ATOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOA &&
                   (int)TT_COPY_ATOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOD &&
                   (int)TT_COPY_DTOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOA &&
                   (int)TT_COPY_DTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOD &&
                   (int)TT_COPY_HTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOH &&
                   (int)TT_COPY_PTOP == (int)CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
               "copy kinds");
_Static_assert((int)TT_MEM_PAGEABLE == (int)CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE &&
                   (int)TT_MEM_PINNED == (int)CUPTI_ACTIVITY_MEMORY_KIND_PINNED &&
                   (int)TT_MEM_DEVICE == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
                   (int)TT_MEM_ARRAY == (int)CUPTI_ACTIVITY_MEMORY_KIND_ARRAY &&
                   (int)TT_MEM_MANAGED == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED &&
                   (int)TT_MEM_DEVICE_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC &&
                   (int)TT_MEM_MANAGED_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC,
               "memory kinds");
_Static_assert((int)TT_SYNCT_EVENT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
                   (int)TT_SYNCT_STREAM_WAIT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT &&
                   (int)TT_SYNCT_STREAM == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE &&
                   (int)TT_SYNCT_CONTEXT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
               "synchronization types");
_Static_assert((int)TT_NO_ID == (int)CUPTI_INVALID_STREAM_ID, "invalid id");

#define TT_MAX_DEVICES 64
#define TT_MAX_CONTEXTS 64
#define TT_SIGNAL_WAIT_MS 10000

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Requests to the writer thread, one byte each through the pipe. */
enum { REQ_STOP = 'S', REQ_RESET = 'R', REQ_TIMER = 'T', REQ_SIGNAL = 0x80 /* | signo */ };

static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
                                      SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_HANDLED (sizeof handled_signals / sizeof handled_signals[0])

static struct {
    tt_options opts;
    pthread_mutex_t mu;        /* store, window, devices, contexts */
    tt_store store;
    uint32_t *demangled;       /* demangled[mangled string id] = string id, 0 = not yet */
    uint32_t n_demangled;
    uint32_t api_names[2][1024]; /* string id per (runtime/driver, cbid), 0 = not yet */
    tt_device devices[TT_MAX_DEVICES];
    int n_devices;
    CUcontext contexts[TT_MAX_CONTEXTS];
    int n_contexts;
    CUpti_SubscriberHandle subscriber;

    /* recording window (CUPTI clock and correlation ids) */
    bool started;
    uint64_t start_ts, stop_ts;
    uint32_t start_corr, stop_corr;
    uint64_t stop_deadline;    /* CUPTI clock; 0 = none */
    uint64_t iters_seen;       /* boundaries found */
    int64_t first_iter;        /* index of the first iteration in the window */
    bool stopping;             /* stop condition met: no more boundaries matter */
    bool final_written;        /* the trace is on disk for good */
    const char *end_reason;
    char trunc_reason[256];
    bool truncated;
    uint64_t dropped, incomplete;
    int64_t cupti_to_unix;
    bool latency_ts;           /* LITE: CUPTI collects kernels' queued/submitted */
    bool latency_on;           /* --latency-sample: ... in the current iteration */
    bool latency_toggle_failed;/* CUPTI refused to turn them on or off: said once */
    uint64_t latency_toggles;
    atomic_bool recording;     /* --record-every: GPU activity kinds and our
                                  callbacks' records on (the iteration is kept) */
    bool record_toggle_failed;
    tt_hc_log hc;              /* LITE, --launch-times callback: timed calls */
    char path[8448];
    int pid;

    int req_pipe[2], done_pipe[2];
    pthread_t writer;
    bool writer_running;
    atomic_int signal_busy;    /* a signal's write is under way */
    atomic_bool inert;         /* forked child, or setup failed: do nothing */
    struct sigaction old_act[65];
    bool have_old[65];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .stop_ts = UINT64_MAX, .stop_corr = UINT32_MAX,
       .recording = true};

static void wake_writer(char req);
static bool query_cbid[2][1024];
static void boundary_locked(uint64_t ts, uint32_t corr);
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (g.opts.quiet)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "tally-trace[%d]: ", (int)getpid());
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    if (len + 1 < sizeof line)
        line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }

static uint64_t now_cupti(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

/* ---- device properties (driver entry points found at run time: the driver
 * is the one that loaded us, so it is always there) ---- */

static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDeviceTotalMem)(size_t *, CUdevice);
static CUresult (*p_cuDeviceGetUuid)(CUuuid *, CUdevice);
static CUresult (*p_cuCtxPushCurrent)(CUcontext);
static CUresult (*p_cuCtxPopCurrent)(CUcontext *);
static CUresult (*p_cuCtxGetStreamPriorityRange)(int *, int *);
static CUresult (*p_cuCtxSynchronize)(void);

static void *driver_sym(void *h, const char *name)
{
    void *p = h ? dlsym(h, name) : NULL;
    return p ? p : dlsym(RTLD_DEFAULT, name);
}

/* The runtime loads libcuda privately (RTLD_LOCAL): look in that very copy. */
static void load_driver_symbols(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    *(void **)&p_cuDeviceGet = driver_sym(h, "cuDeviceGet");
    *(void **)&p_cuDeviceGetAttribute = driver_sym(h, "cuDeviceGetAttribute");
    *(void **)&p_cuDeviceGetName = driver_sym(h, "cuDeviceGetName");
    *(void **)&p_cuDeviceTotalMem = driver_sym(h, "cuDeviceTotalMem_v2");
    *(void **)&p_cuDeviceGetUuid = driver_sym(h, "cuDeviceGetUuid");
    *(void **)&p_cuCtxPushCurrent = driver_sym(h, "cuCtxPushCurrent_v2");
    *(void **)&p_cuCtxPopCurrent = driver_sym(h, "cuCtxPopCurrent_v2");
    *(void **)&p_cuCtxGetStreamPriorityRange = driver_sym(h, "cuCtxGetStreamPriorityRange");
    *(void **)&p_cuCtxSynchronize = driver_sym(h, "cuCtxSynchronize");
}

static int attr(CUdevice dev, CUdevice_attribute a)
{
    int v = 0;
    if (p_cuDeviceGetAttribute && p_cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
        v = 0;
    return v;
}

/* Called with g.mu held, on context creation (the context is current then). */
static void note_device(CUcontext ctx, uint32_t ordinal)
{
    if (g.n_contexts < TT_MAX_CONTEXTS)
        g.contexts[g.n_contexts++] = ctx;
    for (int i = 0; i < g.n_devices; i++)
        if (g.devices[i].ordinal == (int)ordinal)
            return;
    if (g.n_devices == TT_MAX_DEVICES || !p_cuDeviceGet)
        return;
    CUdevice dev;
    if (p_cuDeviceGet(&dev, (int)ordinal) != CUDA_SUCCESS)
        return;
    tt_device *d = &g.devices[g.n_devices++];
    memset(d, 0, sizeof *d);
    d->ordinal = (int)ordinal;
    if (p_cuDeviceGetName)
        p_cuDeviceGetName(d->name, sizeof d->name, dev);
    CUuuid u;
    if (p_cuDeviceGetUuid && p_cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
        char *q = d->uuid;
        for (int i = 0; i < 16; i++)
            q += sprintf(q, "%02x", (unsigned char)u.bytes[i]);
    }
    d->cc_major = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d->cc_minor = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d->sms = attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d->max_threads_per_sm = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d->max_threads_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d->max_blocks_per_sm = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    d->regs_per_sm = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    d->regs_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d->smem_per_sm = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    d->smem_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    d->smem_per_block_optin = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    d->smem_reserved_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    d->warp_size = attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d->l2_bytes = attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    d->clock_khz = attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    d->mem_clock_khz = attr(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    d->mem_bus_bits = attr(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    d->async_engines = attr(dev, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
    size_t mem = 0;
    if (p_cuDeviceTotalMem && p_cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS)
        d->total_mem = mem;
    int least = 0, greatest = 0;
    CUcontext popped;
    if (p_cuCtxGetStreamPriorityRange && p_cuCtxPushCurrent && p_cuCtxPopCurrent &&
        p_cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
        if (p_cuCtxGetStreamPriorityRange(&least, &greatest) == CUDA_SUCCESS) {
            d->stream_prio_least = least;
            d->stream_prio_greatest = greatest;
        }
        p_cuCtxPopCurrent(&popped);
    }
}

/* ---- records from CUPTI buffers ---- */

static uint32_t kernel_name(const char *mangled)
{
    uint32_t m = tt_intern(&g.store, mangled);
    if (m == 0)
        return 0;
    if (m >= g.n_demangled) {
        uint32_t n = g.n_demangled ? g.n_demangled : 256;
        while (n <= m)
            n *= 2;
        uint32_t *p = realloc(g.demangled, n * sizeof *p);
        if (!p)
            return m;
        memset(p + g.n_demangled, 0, (n - g.n_demangled) * sizeof *p);
        g.demangled = p;
        g.n_demangled = n;
    }
    if (!g.demangled[m]) {
        int status = -1;
        char *d = mangled[0] == '_' && mangled[1] == 'Z' ? __cxa_demangle(mangled, NULL, NULL, &status)
                                                         : NULL;
        g.demangled[m] = status == 0 && d ? tt_intern(&g.store, d) : m;
        free(d);
        if (!g.demangled[m])
            g.demangled[m] = m;
    }
    return g.demangled[m];
}

/* Is this (demangled) kernel name the one that starts each iteration? The
 * name is looked for in the demangled and the mangled form, once per name. */
static uint8_t *kmatch; /* by string id: 0 unknown, 1 no, 2 yes */
static uint32_t n_kmatch;

static bool iteration_kernel(uint32_t name)
{
    if (name >= n_kmatch) {
        uint32_t n = n_kmatch ? n_kmatch : 256;
        while (n <= name)
            n *= 2;
        uint8_t *p = realloc(kmatch, n);
        if (!p)
            return false;
        memset(p + n_kmatch, 0, n - n_kmatch);
        kmatch = p, n_kmatch = n;
    }
    if (!kmatch[name]) {
        bool m = strstr(g.store.strings[name], g.opts.iter_kernel) != NULL;
        for (uint32_t i = 0; !m && i < g.n_demangled && i < g.store.n_strings; i++)
            m = g.demangled[i] == name && strstr(g.store.strings[i], g.opts.iter_kernel);
        kmatch[name] = m ? 2 : 1;
    }
    return kmatch[name] == 2;
}

static uint32_t api_name(int driver, uint32_t cbid)
{
    if (cbid >= 1024)
        return 0;
    if (!g.api_names[driver][cbid]) {
        const char *name = NULL;
        cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                             &name);
        char base[256];
        tt_api_base_name(name, base, sizeof base);
        g.api_names[driver][cbid] = tt_intern(&g.store, base);
    }
    return g.api_names[driver][cbid];
}

/* Records outside the window are dropped as they arrive once the window is
 * known, so memory stays proportional to what will be written. */
static bool keep_corr(uint32_t corr)
{
    if (g.started && g.start_corr && corr < g.start_corr)
        return false;
    return corr < g.stop_corr;
}

static tt_rec *add(uint8_t type)
{
    if (g.store.n >= g.opts.max_records) {
        if (!g.truncated) {
            g.truncated = true;
            snprintf(g.trunc_reason, sizeof g.trunc_reason,
                     "record limit (%zu, TALLY_TRACE_MAX_RECORDS) reached", g.opts.max_records);
        }
        return NULL;
    }
    tt_rec *r = tt_store_add(&g.store);
    if (!r && !g.truncated) {
        g.truncated = true;
        snprintf(g.trunc_reason, sizeof g.trunc_reason, "out of memory for records");
    }
    if (r)
        r->type = type;
    return r;
}

/* Open NVTX ranges, by CUPTI marker id, so that an END finds its START. */
static struct {
    uint32_t id;
    size_t rec;
} *open_ranges;
static size_t n_open, cap_open;

static void marker_record(const CUpti_ActivityMarker2 *m)
{
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        for (size_t i = n_open; i-- > 0;) {
            if (open_ranges[i].id == m->id) {
                tt_store_at(&g.store, open_ranges[i].rec)->end = m->timestamp;
                open_ranges[i] = open_ranges[--n_open];
                break;
            }
        }
        return;
    }
    if (m->timestamp < g.start_ts || m->timestamp >= g.stop_ts)
        return;
    tt_rec *r = add(TT_R_MARKER);
    if (!r)
        return;
    r->start = m->timestamp;
    r->name = tt_intern(&g.store, m->name);
    r->domain = tt_intern(&g.store, m->domain);
    r->id = m->id;
    if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
        r->tid = m->objectId.pt.threadId;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        r->sub = 1;
        r->end = m->timestamp;
        return;
    }
    if (n_open == cap_open) {
        size_t cap = cap_open ? 2 * cap_open : 64;
        void *p = realloc(open_ranges, cap * sizeof *open_ranges);
        if (!p)
            return;
        open_ranges = p;
        cap_open = cap;
    }
    open_ranges[n_open].id = m->id;
    open_ranges[n_open++].rec = g.store.n - 1;
}

static void parse_record(const CUpti_Activity *a)
{
    tt_rec *r;
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        if (!keep_corr(k->correlationId))
            return;
        if (k->start == 0 || k->end == 0) {
            g.incomplete++;
            return;
        }
        if (!(r = add(TT_R_KERNEL)))
            return;
        r->start = k->start, r->end = k->end, r->corr = k->correlationId;
        r->device = k->deviceId, r->context = k->contextId, r->stream = k->streamId;
        r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
        r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
        r->regs = k->registersPerThread;
        r->static_smem = k->staticSharedMemory, r->dynamic_smem = k->dynamicSharedMemory;
        r->local_mem = k->localMemoryPerThread;
        r->cluster[0] = k->clusterX, r->cluster[1] = k->clusterY, r->cluster[2] = k->clusterZ;
        r->graph = k->graphId;
        r->queued = k->queued, r->submitted = k->submitted; /* 0 unless latency timestamps */
        r->name = kernel_name(k->name);
        if (*g.opts.iter_kernel && iteration_kernel(r->name))
            boundary_locked(0, k->correlationId);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)a;
        if (!keep_corr(c->correlationId))
            return;
        if (c->start == 0 || c->end == 0) {
            g.incomplete++;
            return;
        }
        if (!(r = add(TT_R_MEMCPY)))
            return;
        r->start = c->start, r->end = c->end, r->corr = c->correlationId;
        r->device = c->deviceId, r->context = c->contextId, r->stream = c->streamId;
        r->sub = c->copyKind;
        r->id = (uint32_t)c->srcKind | (uint32_t)c->dstKind << 8;
        r->flags = c->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC ? TT_RF_ASYNC : 0;
        r->bytes = c->bytes;
        r->graph = c->graphId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)a;
        if (!keep_corr(s->correlationId))
            return;
        if (s->start == 0 || s->end == 0) {
            g.incomplete++;
            return;
        }
        if (!(r = add(TT_R_MEMSET)))
            return;
        r->start = s->start, r->end = s->end, r->corr = s->correlationId;
        r->device = s->deviceId, r->context = s->contextId, r->stream = s->streamId;
        r->flags = s->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC ? TT_RF_ASYNC : 0;
        r->bytes = s->bytes;
        r->graph = s->graphId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *p = (const CUpti_ActivityAPI *)a;
        int driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        if (!keep_corr(p->correlationId) ||
            (p->cbid < 1024 && query_cbid[driver][p->cbid] &&
             !(g.opts.activities & TT_ACT_QUERIES)))
            return;
        if (!(r = add(TT_R_API)))
            return;
        r->sub = (uint8_t)driver;
        r->start = p->start, r->end = p->end, r->corr = p->correlationId;
        r->tid = p->threadId;
        r->id = p->cbid;
        r->name = api_name(r->sub, p->cbid);
        return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)a;
        if (!keep_corr(s->correlationId))
            return;
        /* Without API records, only the calls the loader knows are of use
         * (not the event/stream queries CUPTI reports here too). */
        if (g.opts.host_timeline != TT_HOST_FULL &&
            !((int)s->type >= TT_SYNCT_EVENT && (int)s->type <= TT_SYNCT_CONTEXT))
            return;
        if (!(r = add(TT_R_SYNC)))
            return;
        r->sub = (uint8_t)s->type;
        r->start = s->start, r->end = s->end, r->corr = s->correlationId;
        r->context = s->contextId, r->stream = s->streamId, r->id = s->cudaEventId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
        const CUpti_ActivityCudaEvent2 *e = (const CUpti_ActivityCudaEvent2 *)a;
        if (!keep_corr(e->correlationId))
            return;
        if (!(r = add(TT_R_EVENT)))
            return;
        r->corr = e->correlationId, r->id = e->eventId;
        r->device = e->deviceId, r->context = e->contextId, r->stream = e->streamId;
        r->start = e->deviceTimestamp;
        return;
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
        const CUpti_ActivityStream *s = (const CUpti_ActivityStream *)a;
        if (!(r = add(TT_R_STREAM)))
            return;
        r->context = s->contextId, r->stream = s->streamId;
        r->static_smem = (int32_t)s->priority, r->id = s->flag;
        r->corr = s->correlationId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
        marker_record((const CUpti_ActivityMarker2 *)a);
        return;
    default:
        return; /* MARKER_DATA, NAME, OVERHEAD...: nothing the trace needs */
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI wants 8-byte alignment; malloc gives 16. */
    *size = g.opts.buffer_size;
    *buffer = malloc(*size);
    if (!*buffer)
        *size = 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    /* TALLY_TRACE_DISCARD_RECORDS=1 (experimental, for overhead measurements
     * only: the trace has no GPU records): CUPTI records as usual, we do not
     * parse; tells CUPTI's own cost from ours (run_device.sh gpu_only_discard). */
    static int discard = -1;
    if (discard < 0) {
        const char *d = getenv("TALLY_TRACE_DISCARD_RECORDS");
        discard = d && strcmp(d, "1") == 0;
    }
    if (!atomic_load(&g.inert) && !discard) {
        pthread_mutex_lock(&g.mu);
        CUpti_Activity *rec = NULL;
        while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
            parse_record(rec);
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
            g.dropped += dropped;
        pthread_mutex_unlock(&g.mu);
    }
    free(buffer);
}

/* ---- iteration boundaries, start and stop ---- */

static void wake_writer(char req)
{
    if (g.writer_running) {
        ssize_t w = write(g.req_pipe[1], &req, 1);
        (void)w;
    }
}

/* The activity groups of --activities and the CUPTI kinds they turn on. */
static const struct act_kind {
    unsigned bit;
    CUpti_ActivityKind kind;
} act_kinds[] = {
    {TT_ACT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
    {TT_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY},
    {TT_ACT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET},
    {TT_ACT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME},
    {TT_ACT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER},
    {TT_ACT_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
    {TT_ACT_NVTX, CUPTI_ACTIVITY_KIND_MARKER},
    {TT_ACT_EVENT, CUPTI_ACTIVITY_KIND_CUDA_EVENT},
    {TT_ACT_STREAM, CUPTI_ACTIVITY_KIND_STREAM},
};
#define N_ACT_KINDS (sizeof act_kinds / sizeof act_kinds[0])
/* The GPU's records: what --record-every turns off between its iterations. */
#define TT_ACT_GPU_RECORDS (TT_ACT_KERNEL | TT_ACT_MEMCPY | TT_ACT_MEMSET)

/* Iteration it is sampled (--latency-sample, --record-every N): the window's
 * first, then every N-th; none before the window. Called with g.mu held. */
static bool sampled_iteration(uint64_t it, int64_t every)
{
    return g.started && ((int64_t)it - g.first_iter) % every == 0;
}

/* --latency-sample N: CUPTI's latency timestamps (what gives launches their
 * host time, and widens the GPU's gap between back-to-back kernels) on in
 * the first iteration of the window and every N-th after it, off in the
 * others and before the window (lite_sample.c fills those in). CUPTI's
 * documentation asks for the setting to be made before CUDA starts; turning
 * it on and off at run time works on the H100 with CUDA 13 (the GPU test
 * test_gpu_latency_sample checks that both kinds of iteration are there).
 * Called with g.mu held. */
static void sample_latency_locked(uint64_t it)
{
    if (g.opts.latency_sample <= 1 || !g.latency_ts || g.latency_toggle_failed)
        return;
    bool on = sampled_iteration(it, g.opts.latency_sample);
    if (on == g.latency_on)
        return;
    CUptiResult r = cuptiActivityEnableLatencyTimestamps(on);
    if (r != CUPTI_SUCCESS) {
        const char *err = "";
        cuptiGetResultString(r, &err);
        say("cannot turn kernel queued timestamps %s (%s): --latency-sample ignored from here",
            on ? "on" : "off", err);
        g.latency_toggle_failed = true;
        return;
    }
    g.latency_on = on;
    g.latency_toggles++;
}

/* --record-every N: record the window's first iteration and every N-th
 * after it, nothing in the others (and before the window): the GPU activity
 * kinds are turned off there (CUPTI's kernel records cost the launching
 * thread ~2 us a launch: experiments/results/tracer/launch_cost), and our
 * callbacks keep no calls. The iterations left out are marked
 * TT_ITER_SKIPPED; the writer gives them no iteration range, so the trace
 * holds whole recorded iterations only. Returns whether the iteration that
 * starts here is left out. Called with g.mu held. */
static bool sample_records_locked(uint64_t it)
{
    if (g.opts.record_every <= 1 || g.record_toggle_failed)
        return false;
    bool on = sampled_iteration(it, g.opts.record_every);
    if (on != atomic_load(&g.recording)) {
        unsigned gpu = g.opts.activities & TT_ACT_GPU_RECORDS;
        for (size_t i = 0; i < N_ACT_KINDS; i++) {
            if (!(gpu & act_kinds[i].bit))
                continue;
            CUpti_ActivityKind kind = act_kinds[i].kind;
            CUptiResult r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
            if (r != CUPTI_SUCCESS) {
                const char *err = "";
                cuptiGetResultString(r, &err);
                say("cannot turn CUPTI activity kind %d %s (%s): --record-every ignored from here",
                    (int)kind, on ? "on" : "off", err);
                g.record_toggle_failed = true;
                for (size_t k = 0; k < N_ACT_KINDS; k++)
                    if (gpu & act_kinds[k].bit) /* everything on again */
                        cuptiActivityEnable(act_kinds[k].kind);
                atomic_store(&g.recording, true);
                return false;
            }
        }
        atomic_store(&g.recording, on);
    }
    return g.started && !on;
}

/* A boundary: the iteration with this index starts at ts; its first API call
 * has correlation id corr. Either may be unknown (0): an NVTX range has no
 * correlation id, a kernel record no host time; they are resolved from the
 * API records when writing. Called with g.mu held. */
static void boundary_locked(uint64_t ts, uint32_t corr)
{
    if (g.stopping)
        return;
    uint64_t it = g.opts.iter_sync > 0 && !*g.opts.iter_marker && !*g.opts.iter_kernel
                      ? g.iters_seen + 1 /* sync: iteration 0 starts with the program */
                      : g.iters_seen;
    g.iters_seen++;
    if (!g.started && g.opts.start_iters >= 0 && (int64_t)it >= g.opts.start_iters) {
        g.started = true;
        g.start_ts = ts;
        g.start_corr = corr;
        g.first_iter = (int64_t)it;
        if (g.opts.stop_seconds >= 0) {
            g.stop_deadline = (ts ? ts : now_cupti()) + (uint64_t)(g.opts.stop_seconds * 1e9);
            wake_writer(REQ_TIMER); /* the writer re-reads its timer */
        }
    } else if (!g.started && g.opts.start_seconds >= 0 && ts >= g.start_ts) {
        g.started = true; /* start by time: iterations count from the first whole one */
        g.first_iter = (int64_t)it;
    }
    sample_latency_locked(it);
    bool skipped = sample_records_locked(it);
    if (!g.started)
        return;
    if (g.opts.stop_iters > 0 && (int64_t)it >= g.first_iter + g.opts.stop_iters) {
        g.stopping = true; /* this boundary starts the first iteration not wanted */
        g.stop_ts = ts ? ts : UINT64_MAX;
        g.stop_corr = corr ? corr : UINT32_MAX;
        g.end_reason = "stop-after-iterations";
        wake_writer(REQ_STOP);
        return;
    }
    tt_rec *r = add(TT_R_ITER);
    if (r) {
        r->start = ts, r->corr = corr, r->id = (uint32_t)it, r->tid = ts ? gettid_() : 0;
        r->sub = skipped ? TT_ITER_SKIPPED : TT_ITER_RECORDED;
    }
}

static void boundary(uint64_t ts, uint32_t corr)
{
    pthread_mutex_lock(&g.mu);
    boundary_locked(ts, corr);
    pthread_mutex_unlock(&g.mu);
}

/* Iterations are counted in synchronize calls (--iteration-sync). */
static bool sync_method(void)
{
    return g.opts.iter_sync > 0 && !*g.opts.iter_marker && !*g.opts.iter_kernel;
}

/* LITE with --sync-records callback: synchronize, stream-wait and
 * event-record calls come from callbacks on those runtime calls only,
 * instead of CUPTI's SYNCHRONIZATION and CUDA_EVENT activity kinds. */
static bool lite_callbacks(void)
{
    return g.opts.host_timeline == TT_HOST_LITE && g.opts.sync_records == TT_SYNCREC_CALLBACK &&
           (g.opts.activities & (TT_ACT_SYNC | TT_ACT_EVENT));
}

/* LITE with --sync-records completion: no API callbacks; stream and device
 * synchronizes from the synchronize domain when they complete. */
static bool lite_completions(void)
{
    return g.opts.host_timeline == TT_HOST_LITE && g.opts.sync_records == TT_SYNCREC_COMPLETION &&
           (g.opts.activities & TT_ACT_SYNC);
}

static const CUpti_CallbackId lite_call_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010,
};

/* CUDA events by handle -> ids of ours (callbacks see handles, not CUPTI's
 * event ids). A handle reused after cudaEventDestroy keeps its id: harmless,
 * a wait matches the latest earlier record of its id. Called with g.mu held. */
static struct {
    uintptr_t *keys;
    uint32_t *vals;
    size_t cap, n;
} events;

static uint32_t event_id_locked(const void *ev)
{
    uintptr_t key = (uintptr_t)ev;
    if (!key)
        return TT_NO_ID;
    if (2 * (events.n + 1) > events.cap) {
        size_t cap = events.cap ? 2 * events.cap : 256;
        uintptr_t *k = calloc(cap, sizeof *k);
        uint32_t *v = malloc(cap * sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return TT_NO_ID;
        }
        for (size_t i = 0; i < events.cap; i++) {
            if (!events.keys[i])
                continue;
            size_t h = (events.keys[i] >> 4) * 2654435761u & (cap - 1);
            while (k[h])
                h = (h + 1) & (cap - 1);
            k[h] = events.keys[i], v[h] = events.vals[i];
        }
        free(events.keys);
        free(events.vals);
        events.keys = k, events.vals = v, events.cap = cap;
    }
    size_t h = (key >> 4) * 2654435761u & (events.cap - 1);
    while (events.keys[h] && events.keys[h] != key)
        h = (h + 1) & (events.cap - 1);
    if (!events.keys[h]) {
        events.keys[h] = key;
        events.vals[h] = (uint32_t)++events.n;
    }
    return events.vals[h];
}

/* One synchronize, stream-wait or event-record call, timed from its entry
 * callback to its exit callback. The parameter structs of the plain, _ptsz
 * and WithFlags variants begin alike, so one of each shape is read. */
static void record_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    if (!atomic_load(&g.recording)) /* --record-every: an iteration left out */
        return;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        if (cd->correlationData)
            *cd->correlationData = now_cupti();
        return;
    }
    uint64_t end = now_cupti();
    uint64_t start = cd->correlationData && *cd->correlationData ? *cd->correlationData : end;
    const void *p = cd->functionParams;
    if (!p && cbid != CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020)
        return;
    int type = 0;
    bool ptsz = false, has_stream = false, record = false;
    cudaStream_t stream = NULL;
    cudaEvent_t event = NULL;
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
        type = TT_SYNCT_CONTEXT;
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
        ptsz = true; /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        type = TT_SYNCT_STREAM;
        stream = ((const cudaStreamSynchronize_v3020_params *)p)->stream;
        has_stream = true;
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        type = TT_SYNCT_EVENT;
        event = ((const cudaEventSynchronize_v3020_params *)p)->event;
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
        ptsz = true; /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
        type = TT_SYNCT_STREAM_WAIT;
        stream = ((const cudaStreamWaitEvent_v3020_params *)p)->stream;
        event = ((const cudaStreamWaitEvent_v3020_params *)p)->event;
        has_stream = true;
        break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010:
        ptsz = true; /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
        record = true;
        event = ((const cudaEventRecord_v3020_params *)p)->event;
        stream = ((const cudaEventRecord_v3020_params *)p)->stream;
        has_stream = true;
        break;
    default:
        return;
    }
    uint32_t stream_id = TT_NO_ID, ctx_id = 0;
    if (has_stream && cuptiGetStreamIdEx(cd->context, (CUstream)stream, ptsz, &stream_id) !=
                          CUPTI_SUCCESS)
        stream_id = TT_NO_ID;
    if (cd->context)
        cuptiGetContextId(cd->context, &ctx_id);
    pthread_mutex_lock(&g.mu);
    tt_rec *r = keep_corr(cd->correlationId) ? add(record ? TT_R_EVENT : TT_R_SYNC) : NULL;
    if (r) {
        r->sub = (uint8_t)type;
        r->start = start, r->end = end, r->corr = cd->correlationId;
        r->context = ctx_id, r->stream = stream_id;
        r->id = event ? event_id_locked(event) : TT_NO_ID;
        r->flags = record ? TT_RF_HOST_TIME : 0;
    }
    pthread_mutex_unlock(&g.mu);
}

/* COMPLETION: a stream or device synchronize has completed (called on the
 * synchronizing thread as it returns). A wait whose end only is known (lite.c
 * places it); with --iteration-sync, an iteration boundary, known by time
 * only (its correlation id is found among the calls when writing, as for
 * NVTX boundaries). */
static void completed_sync(CUpti_CallbackId cbid, const void *data)
{
    const CUpti_SynchronizeData *sd = data;
    uint64_t t = now_cupti();
    bool device = cbid == CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED;
    if (!device && cbid != CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED)
        return;
    uint32_t stream_id = TT_NO_ID, ctx_id = 0;
    if (!device && (!sd || cuptiGetStreamIdEx(sd->context, sd->stream, 0, &stream_id) !=
                               CUPTI_SUCCESS))
        stream_id = TT_NO_ID;
    if (sd && sd->context)
        cuptiGetContextId(sd->context, &ctx_id);
    pthread_mutex_lock(&g.mu);
    tt_rec *r = g.stopping ? NULL : add(TT_R_SYNC);
    if (r) {
        r->sub = (uint8_t)(device ? TT_SYNCT_CONTEXT : TT_SYNCT_STREAM);
        r->end = t;
        r->context = ctx_id, r->stream = stream_id, r->id = TT_NO_ID;
        r->flags = TT_RF_END_ONLY;
    }
    if (sync_method() && g.opts.iter_sync_kind != (device ? TT_SYNC_STREAM : TT_SYNC_DEVICE)) {
        static uint64_t n_syncs; /* under g.mu */
        if (++n_syncs % (uint64_t)g.opts.iter_sync == 0)
            boundary_locked(t, 0);
    }
    pthread_mutex_unlock(&g.mu);
}

static const CUpti_CallbackId runtime_syncs[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
};

/* LITE with --launch-times callback: the launch, graph-launch, copy and
 * memset calls whose host entry and exit are recorded (hostcalls.c), by
 * domain (runtime 0, driver 1) and callback id. Copies and memsets of the
 * runtime only: the few the PyTorch jobs make (ResNet-50: 17 memsets a step
 * against 725 launches; BERT: 60 memsets and 4 copies against 275 launches)
 * then get exact times too, a blocking one its real return. */
static bool timed_cbid[2][1024];

static const CUpti_CallbackId timed_runtime_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
};

/* Programs that launch through the driver (cuBLAS/cuDNN kernels in
 * PyTorch: 1,260 of ResNet-50's 14,500 launches; Triton). */
static const CUpti_CallbackId timed_driver_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static bool launch_callbacks(void)
{
    return g.opts.host_timeline == TT_HOST_LITE && g.opts.launch_times == TT_LAUNCH_CALLBACK;
}

static __thread tt_hc_thread hc_self;

/* The handler of every timed call, on the program's thread: two CUPTI
 * timestamps and, at the exit of the outermost call, one entry appended to
 * this thread's buffer (hostcalls.c says why nothing more). */
static void time_call(int driver, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    if (cd->callbackSite == CUPTI_API_ENTER) {
        if (tt_hc_enter(&hc_self, cd->correlationId) && cd->correlationData)
            *cd->correlationData = now_cupti();
        return;
    }
    if (!tt_hc_exit(&hc_self))
        return; /* inside another timed call: it gets that one's times */
    uint64_t end = now_cupti();
    uint64_t start = cd->correlationData && *cd->correlationData ? *cd->correlationData : end;
    tt_hc_add(&g.hc, &hc_self, driver, cbid, cd->correlationId, start, end);
}

static bool marker_matches(const char *msg)
{
    return msg && strncmp(msg, g.opts.iter_marker, strlen(g.opts.iter_marker)) == 0;
}

static const char *nvtx_message(CUpti_CallbackId cbid, const void *params)
{
    const nvtxEventAttributes_t *at = NULL;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        return ((const nvtxRangePushA_params *)params)->message;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        return ((const nvtxRangeStartA_params *)params)->message;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        at = ((const nvtxRangePushEx_params *)params)->eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        at = ((const nvtxRangeStartEx_params *)params)->eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        at = ((const nvtxDomainRangePushEx_params *)params)->core.eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        at = ((const nvtxDomainRangeStartEx_params *)params)->core.eventAttrib;
        break;
    default:
        return NULL;
    }
    return at && at->messageType == NVTX_MESSAGE_TYPE_ASCII ? at->message.ascii : NULL;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)ud;
    if (atomic_load(&g.inert))
        return;
    /* the timed calls first: they are the frequent ones (every launch) */
    if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
        cbid < 1024 && timed_cbid[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid]) {
        time_call(domain == CUPTI_CB_DOMAIN_DRIVER_API, cbid, data);
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *rd = data;
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
            uint32_t dev = 0;
            cuptiGetDeviceId(rd->context, &dev);
            pthread_mutex_lock(&g.mu);
            note_device(rd->context, dev);
            pthread_mutex_unlock(&g.mu);
        } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
            pthread_mutex_lock(&g.mu);
            for (int i = 0; i < g.n_contexts; i++)
                if (g.contexts[i] == rd->context)
                    g.contexts[i] = g.contexts[--g.n_contexts];
            pthread_mutex_unlock(&g.mu);
        }
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        const CUpti_NvtxData *nd = data;
        /* CUPTI stamps the range itself a little before this callback runs:
         * the boundary goes 5 us earlier, so that the range starting the
         * window is in it and the one ending it is not. */
        if (marker_matches(nvtx_message(cbid, nd->functionParams)))
            boundary(now_cupti() - 5000, 0);
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_SYNCHRONIZE) {
        completed_sync(cbid, data);
        return;
    }
    const CUpti_CallbackData *cd = data;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) {
            if (cd->callbackSite == CUPTI_API_EXIT)
                wake_writer(REQ_RESET);
            return;
        }
        if (lite_callbacks())
            record_call(cbid, cd);
        bool is_device = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
        bool is_stream = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000;
        /* a synchronize: the next iteration starts when it returns */
        if (!sync_method() || !(is_device || is_stream) ||
            g.opts.iter_sync_kind == (is_device ? TT_SYNC_STREAM : TT_SYNC_DEVICE))
            return;
        if (cd->callbackSite == CUPTI_API_EXIT && g.opts.iter_sync > 0) {
            static _Atomic uint64_t n_syncs;
            uint64_t n = atomic_fetch_add(&n_syncs, 1) + 1;
            if (n % (uint64_t)g.opts.iter_sync == 0)
                boundary(now_cupti(), cd->correlationId + 1);
        }
        return;
    }
}

/* ---- writing the trace ---- */

/* Correlation ids are handed out in order as API calls begin, so a boundary
 * known only by its time (NVTX, seconds) becomes one the GPU records can use:
 * the window starts at the first call that began at or after its start and
 * ends after the last call that began before its stop. */
static uint32_t first_corr_from(uint64_t ts)
{
    uint32_t best = UINT32_MAX;
    for (size_t i = 0; i < g.store.n; i++) {
        const tt_rec *r = tt_store_at(&g.store, i);
        if (r->type == TT_R_API && r->start >= ts && r->corr < best)
            best = r->corr;
    }
    return best;
}

static uint32_t corr_after_last_before(uint64_t ts)
{
    uint32_t last = 0;
    for (size_t i = 0; i < g.store.n; i++) {
        const tt_rec *r = tt_store_at(&g.store, i);
        if (r->type == TT_R_API && r->start < ts && r->corr > last)
            last = r->corr;
    }
    return last + 1;
}

/* Boundaries found in kernel records know the launch's correlation id, not
 * its host time: take the time (and thread) of the launch's API call. */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* start_corr, stop_corr: g's, as the lite reconstruction moved them. */
static void resolve_boundary_times(uint32_t start_corr, uint32_t stop_corr)
{
    size_t n = 0;
    for (size_t i = 0; i < g.store.n; i++) {
        const tt_rec *r = tt_store_at(&g.store, i);
        n += r->type == TT_R_ITER && r->start == 0;
    }
    bool need_start = start_corr && !g.start_ts;
    bool need_stop = stop_corr != UINT32_MAX && g.stop_ts == UINT64_MAX;
    if (!n && !need_start && !need_stop)
        return;
    uint32_t *corrs = malloc((n + 2) * sizeof *corrs);
    if (!corrs)
        return;
    size_t k = 0;
    for (size_t i = 0; i < g.store.n; i++) {
        const tt_rec *r = tt_store_at(&g.store, i);
        if (r->type == TT_R_ITER && r->start == 0)
            corrs[k++] = r->corr;
    }
    qsort(corrs, k, sizeof *corrs, cmp_u32);
    /* API records with those correlation ids: time and thread, by position */
    uint64_t *ts = calloc(k + 1, sizeof *ts);
    uint32_t *tid = calloc(k + 1, sizeof *tid);
    for (size_t i = 0; ts && tid && i < g.store.n; i++) {
        const tt_rec *r = tt_store_at(&g.store, i);
        if (r->type != TT_R_API)
            continue;
        if (need_start && r->corr == start_corr)
            g.start_ts = r->start, need_start = false;
        if (need_stop && r->corr == stop_corr)
            g.stop_ts = r->start, need_stop = false;
        uint32_t *hit = k ? bsearch(&r->corr, corrs, k, sizeof *corrs, cmp_u32) : NULL;
        if (hit)
            ts[hit - corrs] = r->start, tid[hit - corrs] = r->tid;
    }
    for (size_t i = 0; ts && tid && i < g.store.n; i++) {
        tt_rec *r = tt_store_at(&g.store, i);
        if (r->type != TT_R_ITER || r->start != 0)
            continue;
        uint32_t *hit = bsearch(&r->corr, corrs, k, sizeof *corrs, cmp_u32);
        if (hit && ts[hit - corrs])
            r->start = ts[hit - corrs], r->tid = tid[hit - corrs];
        else
            r->type = TT_R_DEAD; /* its launch was not recorded: no boundary */
    }
    free(ts);
    free(tid);
    free(corrs);
}

/* --launch-times callback: the timed calls of every thread so far, as
 * HOSTCALL records for lite.c, appended for this write only (write_now
 * truncates them with the calls it rebuilds). Names are looked up here, not
 * in the handler. Called with g.mu held. */
static uint64_t add_host_calls(void)
{
    /* Bounded: a signal may have stopped a launching thread inside the
     * lock (once per 1024 calls); the trace is then written with those
     * launches estimated rather than not at all. */
    if (tt_hc_lock(&g.hc, 1000) < 0) {
        say("the launch-time log is busy; launch times are estimated in this write");
        return 0;
    }
    tt_hc_collect_locked(&g.hc, g.started && g.start_corr ? g.start_corr : 0);
    for (size_t i = 0; i < g.hc.n; i++) {
        const tt_hc_entry *e = &g.hc.all[i];
        if (!keep_corr(e->corr))
            continue;
        tt_rec *r = tt_store_add(&g.store);
        if (!r)
            break; /* their calls are estimated instead */
        r->type = TT_R_HOSTCALL;
        r->corr = e->corr;
        r->start = e->start, r->end = e->end;
        r->sub = e->driver;
        r->id = e->cbid;
        r->flags = e->flags;
        r->name = api_name(e->driver, e->cbid);
    }
    uint64_t lost = g.hc.lost;
    tt_hc_unlock(&g.hc);
    return lost;
}

/* Called with g.mu held. */
static int write_now(const char *end_reason, bool truncated, const char *why)
{
    /* LITE: the host calls are rebuilt for this write and forgotten after
     * it (a later write, at exit after a cudaDeviceReset, rebuilds them
     * from all the records). Boundaries and windows known by time or by
     * launch find their calls among them, as with recorded ones. */
    size_t n_recorded = g.store.n;
    tt_lite_stats lite = {0};
    uint64_t hc_lost = g.opts.host_timeline == TT_HOST_LITE && g.hc.ready ? add_host_calls() : 0;
    bool copy_leads = g.opts.host_timeline == TT_HOST_LITE && g.latency_ts &&
                      g.opts.latency_sample > 1;
    if (copy_leads && tt_lite_copy_leads(&g.store) < 0)
        say("out of memory while copying launch times from the sampled iterations: the "
            "others' launches are placed between their neighbours");
    if (g.opts.host_timeline == TT_HOST_LITE &&
        tt_lite_reconstruct(&g.store, (uint32_t)g.pid, &lite) < 0 && !g.truncated) {
        g.truncated = true;
        snprintf(g.trunc_reason, sizeof g.trunc_reason,
                 "out of memory while rebuilding the host calls");
    }
    lite.host_calls_lost = hc_lost;
    /* the window's ids as the reconstruction moved them (completions) */
    uint32_t start_corr = tt_lite_corr(&lite, g.start_corr);
    uint32_t stop_corr = g.stop_corr != UINT32_MAX ? tt_lite_corr(&lite, g.stop_corr) : UINT32_MAX;
    resolve_boundary_times(start_corr, stop_corr);
    tt_trace_meta m = {0};
    m.pid = g.pid;
    m.opts = &g.opts;
    m.devices = g.devices;
    m.n_devices = g.n_devices;
    bool any_window = g.opts.start_iters >= 0 || g.opts.start_seconds >= 0;
    bool started = g.started || (g.opts.start_seconds >= 0 && now_cupti() >= g.start_ts);
    if (any_window && !started) {
        truncated = true;
        why = "the program ended before the start condition was met";
        m.window_start_ts = UINT64_MAX; /* nothing in the window */
        m.window_start_corr = UINT32_MAX;
    } else {
        m.window_start_ts = g.start_ts;
        m.window_start_corr = start_corr             ? start_corr
                              : g.start_ts           ? first_corr_from(g.start_ts)
                                                     : 0;
    }
    m.window_stop_ts = g.stop_ts;
    m.window_stop_corr = stop_corr != UINT32_MAX   ? stop_corr
                         : g.stop_ts != UINT64_MAX ? corr_after_last_before(g.stop_ts)
                                                   : UINT32_MAX;
    if (g.truncated) { /* a limit hit while recording wins */
        truncated = true;
        why = g.trunc_reason;
    }
    m.truncated = truncated;
    m.truncation_reason = why;
    m.end_reason = end_reason;
    m.dropped_records = g.dropped;
    m.incomplete_records = g.incomplete;
    m.iterations_seen = g.iters_seen;
    m.cupti_to_unix_ns = g.cupti_to_unix;
    m.lite = g.opts.host_timeline == TT_HOST_LITE ? &lite : NULL;
    m.latency_timestamps = g.latency_ts;
    char msg[9000];
    int rc = tt_write_trace(&g.store, &m, g.path, msg, sizeof msg);
    say("%s%s", rc < 0 ? "cannot write the trace: " : "wrote ", msg);
    tt_lite_restore(&g.store, &lite); /* CUPTI's ids again, for a later write */
    if (copy_leads)
        tt_lite_uncopy_leads(&g.store);
    tt_store_truncate(&g.store, n_recorded);
    return rc;
}

/* Wait for the GPU work issued so far (so that its records are complete), on
 * this thread only: the contexts are pushed here, not made current elsewhere. */
static void sync_contexts(void)
{
    CUcontext ctx[TT_MAX_CONTEXTS];
    pthread_mutex_lock(&g.mu);
    int n = g.n_contexts;
    memcpy(ctx, g.contexts, (size_t)n * sizeof ctx[0]);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; i < n; i++) {
        if (!p_cuCtxPushCurrent || p_cuCtxPushCurrent(ctx[i]) != CUDA_SUCCESS)
            continue;
        if (p_cuCtxSynchronize)
            p_cuCtxSynchronize();
        CUcontext popped;
        p_cuCtxPopCurrent(&popped);
    }
}

static const unsigned api_kinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
                                     CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                     CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_CUDA_EVENT};
static const unsigned gpu_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                     CUPTI_ACTIVITY_KIND_STREAM};

static void disable_kinds(const unsigned *kinds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cuptiActivityDisable((CUpti_ActivityKind)kinds[i]);
}

/* The stop condition was met: the window is closed. Stop the host-side
 * records at once (they are the overhead), let the GPU finish the window's
 * work, write, then turn everything off. */
static void finish_stop(void)
{
    disable_kinds(api_kinds, sizeof api_kinds / sizeof api_kinds[0]);
    cuptiEnableAllDomains(0, g.subscriber);
    sync_contexts();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g.mu);
    if (!g.final_written) {
        write_now(g.end_reason ? g.end_reason : "stop", false, NULL);
        g.final_written = true;
    }
    pthread_mutex_unlock(&g.mu);
    disable_kinds(gpu_kinds, sizeof gpu_kinds / sizeof gpu_kinds[0]);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

/* Held by the writer while it works and, for good, by the exit handler: a
 * stop found only while the exit handler flushes (an iteration kernel's
 * record) must not have the writer call CUPTI while the process unloads it. */
static pthread_mutex_t work_mu = PTHREAD_MUTEX_INITIALIZER;

static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the program's threads */
    for (;;) {
        int timeout = -1;
        pthread_mutex_lock(&g.mu);
        uint64_t deadline = g.final_written ? 0 : g.stop_deadline;
        pthread_mutex_unlock(&g.mu);
        if (deadline) {
            uint64_t now = now_cupti();
            timeout = now >= deadline ? 0 : (int)((deadline - now) / 1000000 + 1);
        }
        /* Iteration kernels are seen in delivered records: deliver them
         * often while a start or stop condition waits on them. */
        bool poll_kernels = *g.opts.iter_kernel && !g.final_written && !g.stopping &&
                            (g.opts.start_iters >= 0 || g.opts.stop_iters > 0);
        if (poll_kernels && (timeout < 0 || timeout > 200))
            timeout = 200;
        struct pollfd pfd = {.fd = g.req_pipe[0], .events = POLLIN};
        int pr = poll(&pfd, 1, timeout);
        if (pr < 0 && errno == EINTR)
            continue;
        unsigned char req = 0;
        if (pr == 0 && poll_kernels) {
            pthread_mutex_lock(&work_mu);
            cuptiActivityFlushAll(0);
            pthread_mutex_unlock(&work_mu);
        }
        if (pr == 0) {
            pthread_mutex_lock(&g.mu);
            bool fire = !g.stopping && g.stop_deadline && now_cupti() >= g.stop_deadline;
            if (fire) {
                g.stopping = true;
                g.stop_ts = g.stop_deadline;
                g.end_reason = "stop-after-seconds";
            }
            g.stop_deadline = 0;
            pthread_mutex_unlock(&g.mu);
            if (fire) {
                pthread_mutex_lock(&work_mu);
                finish_stop();
                pthread_mutex_unlock(&work_mu);
            }
            continue;
        }
        if (read(g.req_pipe[0], &req, 1) != 1 || req == REQ_TIMER)
            continue; /* REQ_TIMER: the stop deadline changed; loop to re-read it */
        pthread_mutex_lock(&work_mu);
        if (req == REQ_STOP) {
            finish_stop();
        } else if (req == REQ_RESET) {
            /* cudaDeviceReset returned: the context's records were delivered
             * when it was destroyed. The program may go on: what is written
             * now says so, and the exit rewrites it whole. */
            cuptiActivityFlushAll(0);
            pthread_mutex_lock(&g.mu);
            if (!g.final_written)
                write_now("cudaDeviceReset", true,
                          "written at cudaDeviceReset; the process had not exited yet");
            pthread_mutex_unlock(&g.mu);
        } else if (req & REQ_SIGNAL) {
            int sig = req & 0x7f;
            /* Forced: GPU work still running when the signal came has no end
             * time; those records are counted as incomplete. */
            cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            pthread_mutex_lock(&g.mu);
            if (!g.final_written) {
                char why[128], end[64];
                snprintf(end, sizeof end, "signal %s", signal_name(sig));
                snprintf(why, sizeof why, "the process received %s", signal_name(sig));
                write_now(end, true, why);
            }
            pthread_mutex_unlock(&g.mu);
            char done = 1;
            ssize_t w = write(g.done_pipe[1], &done, 1);
            (void)w;
        }
        pthread_mutex_unlock(&work_mu);
    }
    return NULL; /* not reached: the thread ends with the process */
}

/* ---- exit, signals, fork ---- */

static void at_exit(void)
{
    if (atomic_load(&g.inert))
        return;
    pthread_mutex_lock(&work_mu); /* never released: the writer is done */
    pthread_mutex_lock(&g.mu);
    bool done = g.final_written;
    pthread_mutex_unlock(&g.mu);
    if (done)
        return;
    /* The program is done calling CUDA: what follows is ours (the context
     * synchronize that completes the GPU records) and must not be recorded,
     * nor seen as a wait or an iteration by the synchronize domain. */
    disable_kinds(api_kinds, sizeof api_kinds / sizeof api_kinds[0]);
    if (lite_completions())
        cuptiEnableDomain(0, g.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE);
    sync_contexts();
    cuptiActivityFlushAll(0);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g.mu);
    if (!g.final_written) {
        bool trunc = g.incomplete > 0;
        char why[128];
        snprintf(why, sizeof why, "%llu GPU records had not completed at exit",
                 (unsigned long long)g.incomplete);
        write_now(g.end_reason ? g.end_reason : "exit", trunc, why);
        g.final_written = true;
    }
    pthread_mutex_unlock(&g.mu);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    /* (a crash on the writer thread itself must not wait for the writer) */
    if (!atomic_load(&g.inert) && g.writer_running && !pthread_equal(pthread_self(), g.writer) &&
        atomic_exchange(&g.signal_busy, 1) == 0) {
        char req = (char)(REQ_SIGNAL | sig);
        if (write(g.req_pipe[1], &req, 1) == 1) {
            struct pollfd pfd = {.fd = g.done_pipe[0], .events = POLLIN};
            while (poll(&pfd, 1, TT_SIGNAL_WAIT_MS) < 0 && errno == EINTR)
                ;
        }
    }
    /* Chain: the program's own handler, or the default action. */
    struct sigaction *old = &g.old_act[sig];
    if (g.have_old[sig] && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, uc);
    } else if (g.have_old[sig] && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else if (!g.have_old[sig] || old->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig); /* blocked while we run: delivered, with the default action, on return */
    }
    errno = saved;
}

static void install_signals(void)
{
    for (size_t i = 0; i < N_HANDLED; i++) {
        int sig = handled_signals[i];
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, NULL, &g.old_act[sig]) == 0) {
            g.have_old[sig] = true;
            if (g.old_act[sig].sa_handler == SIG_IGN)
                continue; /* the program asked to ignore it (nohup): leave it so */
        }
        sigaction(sig, &sa, NULL);
    }
}

/* A forked child shares nothing of ours that works (no CUPTI thread, no
 * writer thread) and must not write its parent's records: it goes inert. If
 * it execs and uses CUDA, the new image loads us afresh and writes its own
 * file. */
static void after_fork_child(void)
{
    atomic_store(&g.inert, true);
}

/* ---- entry point ---- */

/* API calls that only ask or set something on the host: they launch no work
 * and wait for none, so the trace needs them only as host time (which it
 * keeps as the gap between the calls around them). PyTorch makes ~12000 of
 * them per ResNet-50 training step (cudaGetDevice alone ~6700), which made
 * the trace 8 times larger. --activities queries keeps them. */
static const char *const query_names[] = {
    "cudaGetDevice", "cudaSetDevice", "cudaGetDeviceCount", "cudaGetDeviceProperties",
    "cudaDeviceGetAttribute", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString",
    "cudaGetErrorName", "cudaFuncGetAttributes", "cudaFuncSetAttribute", "cudaFuncGetName",
    "cudaFuncSetCacheConfig", "cudaPointerGetAttributes", "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo", "cudaStreamGetPriority", "cudaStreamGetFlags", "cudaStreamGetId",
    "cudaStreamGetDevice", "cudaDeviceGetStreamPriorityRange", "cudaDriverGetVersion",
    "cudaRuntimeGetVersion", "cudaOccupancy*", "cudaGetDriverEntryPoint*", "cudaGetSymbolAddress",
    "cudaGetSymbolSize", "cudaGetFuncBySymbol", "cudaThreadExchangeStreamCaptureMode",
    "cudaDeviceGetLimit", "cudaDeviceGetCacheConfig", "cudaGetKernel", "cudaEventQuery",
    "cudaStreamQuery", "cudaDeviceCanAccessPeer", "cudaEventElapsedTime",
    "cuDevicePrimaryCtxGetState", "cuKernelGetName", "cuKernelGetFunction", "cuKernelGetAttribute",
    "cuKernelSetAttribute", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuCtxGetId",
    "cuCtxGetFlags", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxGetStreamPriorityRange",
    "cuCtxGetLimit", "cuCtxGetApiVersion", "cuOccupancy*", "cuFuncGetAttribute",
    "cuFuncSetAttribute", "cuFuncGetName", "cuFuncGetModule", "cuGetProcAddress*", "cuDeviceGet",
    "cuDeviceGetAttribute", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetUuid",
    "cuDeviceTotalMem", "cuDeviceComputeCapability", "cuDeviceGetProperties",
    "cuDriverGetVersion", "cuPointerGetAttribute", "cuPointerGetAttributes", "cuGetErrorString",
    "cuGetErrorName", "cuStreamGetPriority", "cuStreamGetFlags", "cuStreamGetId", "cuStreamGetCtx",
    "cuStreamIsCapturing", "cuStreamGetCaptureInfo*", "cuEventQuery", "cuStreamQuery",
    "cuModuleGetLoadingMode", "cuLibraryGetKernel", "cuLibraryGetModule", "cuModuleGetFunction",
    "cuDeviceCanAccessPeer", "cuMemGetAddressRange", "cuEventElapsedTime",
    "cuThreadExchangeStreamCaptureMode",
};

/* "cuCtxPushCurrent_v2", "cudaStreamQuery_ptsz_v7000" -> the base name. */
static void api_family(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s", name);
    for (;;) {
        char base[256];
        tt_api_base_name(out, base, sizeof base);
        char *p = strrchr(base, '_');
        if (p && (strcmp(p, "_ptsz") == 0 || strcmp(p, "_ptds") == 0))
            *p = 0;
        if (strcmp(base, out) == 0)
            return;
        snprintf(out, len, "%s", base);
    }
}

static bool is_query(const char *name)
{
    char base[256];
    api_family(name, base, sizeof base);
    for (size_t i = 0; i < sizeof query_names / sizeof query_names[0]; i++) {
        const char *q = query_names[i];
        size_t n = strlen(q);
        if (q[n - 1] == '*' ? strncmp(base, q, n - 1) == 0 : strcmp(base, q) == 0)
            return true;
    }
    return false;
}

/* Which call ids are queries, by domain (runtime 0, driver 1). Their records
 * are dropped as they arrive: CUPTI's per-call-id switches
 * (cuptiActivityEnableRuntimeApi) made no program faster on the H100 (CUPTI
 * intercepts every call either way) and BERT requests ran slower with them. */

static void find_queries(void)
{
    for (int driver = 0; driver < 2; driver++) {
        uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        for (uint32_t cbid = 1; cbid < size && cbid < 1024; cbid++) {
            const char *name = NULL;
            query_cbid[driver][cbid] =
                cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API
                                            : CUPTI_CB_DOMAIN_RUNTIME_API,
                                     cbid, &name) == CUPTI_SUCCESS &&
                name && is_query(name);
        }
    }
}

static int enable_activities(unsigned acts)
{
    /* LITE: kernels' host launch times come from CUPTI's latency timestamps
     * (queued, submitted), collected only when asked for before enabling. */
    if (g.opts.host_timeline == TT_HOST_LITE && g.opts.launch_times == TT_LAUNCH_QUEUED) {
        CUptiResult r = cuptiActivityEnableLatencyTimestamps(1);
        g.latency_ts = g.latency_on = r == CUPTI_SUCCESS;
        if (!g.latency_ts) {
            const char *err = "";
            cuptiGetResultString(r, &err);
            say("cannot collect kernel queued timestamps (%s): launch times will be estimated "
                "from their neighbours", err);
        }
    }
    for (size_t i = 0; i < N_ACT_KINDS; i++) {
        if (!(acts & act_kinds[i].bit))
            continue;
        if ((lite_callbacks() || lite_completions()) &&
            (act_kinds[i].bit == TT_ACT_SYNC || act_kinds[i].bit == TT_ACT_EVENT))
            continue; /* from callbacks instead (setup_callbacks) */
        CUptiResult r = cuptiActivityEnable(act_kinds[i].kind);
        if (r != CUPTI_SUCCESS) {
            const char *err = "";
            cuptiGetResultString(r, &err);
            say("cannot enable CUPTI activity kind %d: %s", (int)act_kinds[i].kind, err);
            if (act_kinds[i].bit == TT_ACT_KERNEL)
                return -1;
        }
    }
    return 0;
}

static int setup_callbacks(void)
{
    CUptiResult r = cuptiSubscribe(&g.subscriber, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        const char *err = "";
        cuptiGetResultString(r, &err);
        say("cuptiSubscribe failed (%s): is another CUPTI client (a profiler) active?", err);
        return -1;
    }
    cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    /* --launch-times callback: the launch, copy and memset calls (in any
     * --sync-records mode: asked for by name). */
    if (launch_callbacks()) {
        if (tt_hc_init(&g.hc, g.opts.max_records) < 0) {
            say("cannot set up the launch-time log; launch times will be estimated from "
                "their neighbours");
        } else {
            /* (marked before enabling: no exit without its entry)
             * TALLY_TRACE_LAUNCH_DOMAINS=driver (experimental, for the
             * overhead hunt): the driver's launch calls only; a runtime
             * launch is then timed by the driver call nested in it (same
             * correlation id), runtime copies and memsets are not timed. */
            const char *dom = getenv("TALLY_TRACE_LAUNCH_DOMAINS");
            bool runtime_too = !dom || strcmp(dom, "driver") != 0;
            for (size_t i = 0; runtime_too && i < sizeof timed_runtime_ids / sizeof timed_runtime_ids[0]; i++) {
                timed_cbid[0][timed_runtime_ids[i]] = true;
                if (cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                        timed_runtime_ids[i]) != CUPTI_SUCCESS)
                    timed_cbid[0][timed_runtime_ids[i]] = false; /* unknown to this CUDA */
            }
            for (size_t i = 0; i < sizeof timed_driver_ids / sizeof timed_driver_ids[0]; i++) {
                timed_cbid[1][timed_driver_ids[i]] = true;
                if (cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                        timed_driver_ids[i]) != CUPTI_SUCCESS)
                    timed_cbid[1][timed_driver_ids[i]] = false;
            }
        }
    }
    /* COMPLETION: no runtime or driver API callback at all (whether CUPTI
     * then intercepts every API call is what that mode is there to find
     * out): synchronizes, iteration syncs included, are seen when they
     * complete (synchronize domain); cudaDeviceReset is not seen. */
    if (lite_completions()) {
        cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                            CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED);
        cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                            CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED);
        if (*g.opts.iter_marker)
            cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_NVTX);
        return 0;
    }
    cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
    /* Only what the chosen iteration method needs: each callback costs time
     * on the program's own thread. (Iteration kernels are found in the kernel
     * records, which have the name. The "~10 us per launch" said here until
     * the launch-time callbacks came has no measurement behind it in the
     * repository: the first build's launch callback matched cd->symbolName
     * against the kernel under a mutex, and the BERT run traced with it
     * (log_signals_gpu_only.txt) was not slower. The launch-time callback
     * does no name lookup.) */
    if (*g.opts.iter_marker) {
        cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_NVTX);
    } else if (g.opts.iter_sync > 0 && !*g.opts.iter_kernel) {
        for (size_t i = 0; i < sizeof runtime_syncs / sizeof runtime_syncs[0]; i++)
            cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_syncs[i]);
    }
    if (lite_callbacks())
        for (size_t i = 0; i < sizeof lite_call_ids / sizeof lite_call_ids[0]; i++)
            cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, lite_call_ids[i]);
    return 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    static atomic_bool once;
    if (atomic_exchange(&once, true))
        return 1;
    char msg[512];
    if (tt_options_from_env(&g.opts, msg, sizeof msg) < 0) {
        say("%s; not tracing", msg);
        atomic_store(&g.inert, true);
        return 1;
    }
    g.pid = (int)getpid();
    /* A fixed name (no %p) belongs to the process tally-trace started; its
     * children get the pid inserted, so that nobody overwrites anybody. */
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s", g.opts.output);
    const char *root = getenv("TALLY_TRACE_ROOT_PID");
    if (!strstr(pattern, "%p") && root && atoi(root) != g.pid) {
        char *dot = strstr(pattern, ".json");
        char tail[4200];
        snprintf(tail, sizeof tail, "%s", dot ? dot : "");
        snprintf(dot ? dot : pattern + strlen(pattern),
                 sizeof pattern - (size_t)((dot ? dot : pattern + strlen(pattern)) - pattern),
                 ".%%p%s", tail);
    }
    char rel[4200];
    if (tt_expand_output(pattern, g.pid, g.opts.gzip, rel, sizeof rel) < 0) {
        say("output path too long; not tracing");
        atomic_store(&g.inert, true);
        return 1;
    }
    /* Absolute now: the program may chdir before it exits. */
    char cwd[PATH_MAX];
    if (rel[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(g.path, sizeof g.path, "%s/%s", cwd, rel);
    else
        snprintf(g.path, sizeof g.path, "%s", rel);
    load_driver_symbols();
    tt_store_init(&g.store);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t cupti_now = now_cupti();
    g.cupti_to_unix = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - (int64_t)cupti_now;
    if (g.opts.start_seconds >= 0) {
        int64_t t = g.opts.t0_unix_ns + (int64_t)(g.opts.start_seconds * 1e9) - g.cupti_to_unix;
        g.start_ts = t > 0 ? (uint64_t)t : 1;
        if (g.start_ts <= cupti_now)
            g.started = true;
    } else if (g.opts.start_iters < 0 || (g.opts.start_iters == 0 && g.opts.iter_sync > 0 &&
                                          !*g.opts.iter_marker && !*g.opts.iter_kernel)) {
        g.started = true; /* record from the beginning */
    }
    if (g.opts.stop_seconds >= 0 && (g.started || g.opts.start_seconds >= 0)) {
        uint64_t from = g.opts.start_seconds >= 0 ? g.start_ts : cupti_now;
        g.stop_deadline = from + (uint64_t)(g.opts.stop_seconds * 1e9);
    }
    bool counting = *g.opts.iter_marker || *g.opts.iter_kernel || g.opts.iter_sync > 0;
    if ((g.opts.start_iters >= 0 || g.opts.stop_iters > 0) && !counting)
        say("--start/stop-after-iterations need an iteration method (--iteration-marker, "
            "--iteration-kernel or --iteration-sync); they are ignored");

    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    find_queries();
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        setup_callbacks() < 0 || enable_activities(g.opts.activities) < 0) {
        say("CUPTI setup failed; not tracing");
        atomic_store(&g.inert, true);
        return 1;
    }

    if (pipe2(g.req_pipe, O_CLOEXEC) == 0 && pipe2(g.done_pipe, O_CLOEXEC) == 0 &&
        pthread_create(&g.writer, NULL, writer_main, NULL) == 0) {
        g.writer_running = true;
        pthread_detach(g.writer);
    } else {
        say("cannot start the writer thread: stop conditions and signals will not write");
    }
    install_signals();
    pthread_atfork(NULL, NULL, after_fork_child);
    atexit(at_exit);
    return 1;
}
