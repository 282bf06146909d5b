/* tally-trace: the records CUPTI's activity API delivers, in buffers of
 * ours (tt_buffer_requested, tt_buffer_completed), turned into the store's
 * compact records under tt_state.mu: kernels (names demangled once, the iteration
 * kernel found here), copies, memsets, API calls, synchronizations, CUDA
 * events, streams and NVTX ranges. Records outside the window are dropped as
 * they arrive, and so are the API calls that only ask something
 * (tt_find_queries).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* ---- queries: API calls dropped as they arrive ---- */

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
static bool query_cbid[2][1024];

void tt_find_queries(void)
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

/* ---- records from CUPTI buffers ---- */

static uint32_t kernel_name(const char *mangled)
{
    uint32_t m = tt_intern(&tt_state.store, mangled);
    if (m == 0)
        return 0;
    if (m >= tt_state.n_demangled) {
        uint32_t n = tt_state.n_demangled ? tt_state.n_demangled : 256;
        while (n <= m)
            n *= 2;
        uint32_t *p = realloc(tt_state.demangled, n * sizeof *p);
        if (!p)
            return m;
        memset(p + tt_state.n_demangled, 0, (n - tt_state.n_demangled) * sizeof *p);
        tt_state.demangled = p;
        tt_state.n_demangled = n;
    }
    if (!tt_state.demangled[m]) {
        int status = -1;
        char *d = mangled[0] == '_' && mangled[1] == 'Z' ? __cxa_demangle(mangled, NULL, NULL, &status)
                                                         : NULL;
        tt_state.demangled[m] = status == 0 && d ? tt_intern(&tt_state.store, d) : m;
        free(d);
        if (!tt_state.demangled[m])
            tt_state.demangled[m] = m;
    }
    return tt_state.demangled[m];
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
        bool m = strstr(tt_state.store.strings[name], tt_state.opts.iter_kernel) != NULL;
        for (uint32_t i = 0; !m && i < tt_state.n_demangled && i < tt_state.store.n_strings; i++)
            m = tt_state.demangled[i] == name && strstr(tt_state.store.strings[i], tt_state.opts.iter_kernel);
        kmatch[name] = m ? 2 : 1;
    }
    return kmatch[name] == 2;
}

uint32_t tt_api_name(int driver, uint32_t cbid)
{
    if (cbid >= 1024)
        return 0;
    if (!tt_state.api_names[driver][cbid]) {
        const char *name = NULL;
        cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                             &name);
        char base[256];
        tt_api_base_name(name, base, sizeof base);
        tt_state.api_names[driver][cbid] = tt_intern(&tt_state.store, base);
    }
    return tt_state.api_names[driver][cbid];
}

/* Records outside the window are dropped as they arrive once the window is
 * known, so memory stays proportional to what will be written. */
bool tt_keep_corr(uint32_t corr)
{
    if (tt_state.started && tt_state.start_corr && corr < tt_state.start_corr)
        return false;
    return corr < tt_state.stop_corr;
}

tt_rec *tt_add_record(uint8_t type)
{
    if (tt_state.store.n >= tt_state.opts.max_records) {
        if (!tt_state.truncated) {
            tt_state.truncated = true;
            snprintf(tt_state.trunc_reason, sizeof tt_state.trunc_reason,
                     "record limit (%zu, TALLY_TRACE_MAX_RECORDS) reached", tt_state.opts.max_records);
        }
        return NULL;
    }
    tt_rec *r = tt_store_add(&tt_state.store);
    if (!r && !tt_state.truncated) {
        tt_state.truncated = true;
        snprintf(tt_state.trunc_reason, sizeof tt_state.trunc_reason, "out of memory for records");
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
                tt_store_at(&tt_state.store, open_ranges[i].rec)->end = m->timestamp;
                open_ranges[i] = open_ranges[--n_open];
                break;
            }
        }
        return;
    }
    if (m->timestamp < tt_state.start_ts || m->timestamp >= tt_state.stop_ts)
        return;
    tt_rec *r = tt_add_record(TT_R_MARKER);
    if (!r)
        return;
    r->start = m->timestamp;
    r->name = tt_intern(&tt_state.store, m->name);
    r->domain = tt_intern(&tt_state.store, m->domain);
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
    open_ranges[n_open++].rec = tt_state.store.n - 1;
}

static void parse_record(const CUpti_Activity *a)
{
    tt_rec *r;
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        if (!tt_keep_corr(k->correlationId))
            return;
        if (k->start == 0 || k->end == 0) {
            tt_state.incomplete++;
            return;
        }
        if (!(r = tt_add_record(TT_R_KERNEL)))
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
        if (*tt_state.opts.iter_kernel && iteration_kernel(r->name))
            tt_boundary_locked(0, k->correlationId);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)a;
        if (!tt_keep_corr(c->correlationId))
            return;
        if (c->start == 0 || c->end == 0) {
            tt_state.incomplete++;
            return;
        }
        if (!(r = tt_add_record(TT_R_MEMCPY)))
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
        if (!tt_keep_corr(s->correlationId))
            return;
        if (s->start == 0 || s->end == 0) {
            tt_state.incomplete++;
            return;
        }
        if (!(r = tt_add_record(TT_R_MEMSET)))
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
        if (!tt_keep_corr(p->correlationId) ||
            (p->cbid < 1024 && query_cbid[driver][p->cbid] &&
             !(tt_state.opts.activities & TT_ACT_QUERIES)))
            return;
        if (!(r = tt_add_record(TT_R_API)))
            return;
        r->sub = (uint8_t)driver;
        r->start = p->start, r->end = p->end, r->corr = p->correlationId;
        r->tid = p->threadId;
        r->id = p->cbid;
        r->name = tt_api_name(r->sub, p->cbid);
        return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)a;
        if (!tt_keep_corr(s->correlationId))
            return;
        /* Without API records, only the calls the loader knows are of use
         * (not the event/stream queries CUPTI reports here too). */
        if (tt_state.opts.host_timeline != TT_HOST_FULL &&
            !((int)s->type >= TT_SYNCT_EVENT && (int)s->type <= TT_SYNCT_CONTEXT))
            return;
        if (!(r = tt_add_record(TT_R_SYNC)))
            return;
        r->sub = (uint8_t)s->type;
        r->start = s->start, r->end = s->end, r->corr = s->correlationId;
        r->context = s->contextId, r->stream = s->streamId, r->id = s->cudaEventId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
        const CUpti_ActivityCudaEvent2 *e = (const CUpti_ActivityCudaEvent2 *)a;
        if (!tt_keep_corr(e->correlationId))
            return;
        if (!(r = tt_add_record(TT_R_EVENT)))
            return;
        r->corr = e->correlationId, r->id = e->eventId;
        r->device = e->deviceId, r->context = e->contextId, r->stream = e->streamId;
        r->start = e->deviceTimestamp;
        return;
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
        const CUpti_ActivityStream *s = (const CUpti_ActivityStream *)a;
        if (!(r = tt_add_record(TT_R_STREAM)))
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

void CUPTIAPI tt_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI wants 8-byte alignment; malloc gives 16. */
    *size = tt_state.opts.buffer_size;
    *buffer = malloc(*size);
    if (!*buffer)
        *size = 0;
    *max_records = 0;
}

void CUPTIAPI tt_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
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
    if (!atomic_load(&tt_state.inert) && !discard) {
        pthread_mutex_lock(&tt_state.mu);
        CUpti_Activity *rec = NULL;
        while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
            parse_record(rec);
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
            tt_state.dropped += dropped;
        pthread_mutex_unlock(&tt_state.mu);
    }
    free(buffer);
}
