/* tally-trace: CUPTI's callbacks, enabled only where an option needs them
 * (tt_setup_callbacks: each costs time on the program's own thread), and
 * what each does: time the launch, copy and memset calls (--launch-times
 * callback, hostcalls.c) and the synchronize, stream-wait and event-record
 * calls (--sync-records callback), note completed synchronizes
 * (--sync-records completion), find iteration boundaries in NVTX ranges and
 * synchronize calls, note contexts (devices.c) and wake the writer after
 * cudaDeviceReset.
 */
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

/* Iterations are counted in synchronize calls (--iteration-sync). */
static bool sync_method(void)
{
    return tt_state.opts.iter_sync > 0 && !*tt_state.opts.iter_marker && !*tt_state.opts.iter_kernel;
}

/* LITE with --sync-records callback: synchronize, stream-wait and
 * event-record calls come from callbacks on those runtime calls only,
 * instead of CUPTI's SYNCHRONIZATION and CUDA_EVENT activity kinds. */
bool tt_lite_callbacks(void)
{
    return tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.opts.sync_records == TT_SYNCREC_CALLBACK &&
           (tt_state.opts.activities & (TT_ACT_SYNC | TT_ACT_EVENT));
}

/* LITE with --sync-records completion: no API callbacks; stream and device
 * synchronizes from the synchronize domain when they complete. */
bool tt_lite_completions(void)
{
    return tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.opts.sync_records == TT_SYNCREC_COMPLETION &&
           (tt_state.opts.activities & TT_ACT_SYNC);
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
 * a wait matches the latest earlier record of its id. Called with tt_state.mu held. */
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
    if (!atomic_load(&tt_state.recording)) /* --record-every: an iteration left out */
        return;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        if (cd->correlationData)
            *cd->correlationData = tt_now_cupti();
        return;
    }
    uint64_t end = tt_now_cupti();
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
    pthread_mutex_lock(&tt_state.mu);
    tt_rec *r = tt_keep_corr(cd->correlationId) ? tt_add_record(record ? TT_R_EVENT : TT_R_SYNC)
                                                : NULL;
    if (r) {
        r->sub = (uint8_t)type;
        r->start = start, r->end = end, r->corr = cd->correlationId;
        r->context = ctx_id, r->stream = stream_id;
        r->id = event ? event_id_locked(event) : TT_NO_ID;
        r->flags = record ? TT_RF_HOST_TIME : 0;
    }
    pthread_mutex_unlock(&tt_state.mu);
}

/* COMPLETION: a stream or device synchronize has completed (called on the
 * synchronizing thread as it returns). A wait whose end only is known (lite.c
 * places it); with --iteration-sync, an iteration boundary, known by time
 * only (its correlation id is found among the calls when writing, as for
 * NVTX boundaries). */
static void completed_sync(CUpti_CallbackId cbid, const void *data)
{
    const CUpti_SynchronizeData *sd = data;
    uint64_t t = tt_now_cupti();
    bool device = cbid == CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED;
    if (!device && cbid != CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED)
        return;
    uint32_t stream_id = TT_NO_ID, ctx_id = 0;
    if (!device && (!sd || cuptiGetStreamIdEx(sd->context, sd->stream, 0, &stream_id) !=
                               CUPTI_SUCCESS))
        stream_id = TT_NO_ID;
    if (sd && sd->context)
        cuptiGetContextId(sd->context, &ctx_id);
    pthread_mutex_lock(&tt_state.mu);
    tt_rec *r = tt_state.stopping ? NULL : tt_add_record(TT_R_SYNC);
    if (r) {
        r->sub = (uint8_t)(device ? TT_SYNCT_CONTEXT : TT_SYNCT_STREAM);
        r->end = t;
        r->context = ctx_id, r->stream = stream_id, r->id = TT_NO_ID;
        r->flags = TT_RF_END_ONLY;
    }
    if (sync_method() && tt_state.opts.iter_sync_kind != (device ? TT_SYNC_STREAM : TT_SYNC_DEVICE)) {
        static uint64_t n_syncs; /* under tt_state.mu */
        if (++n_syncs % (uint64_t)tt_state.opts.iter_sync == 0)
            tt_boundary_locked(t, 0);
    }
    pthread_mutex_unlock(&tt_state.mu);
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
    return tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.opts.launch_times == TT_LAUNCH_CALLBACK;
}

static __thread tt_hc_thread hc_self;

/* The handler of every timed call, on the program's thread: two CUPTI
 * timestamps and, at the exit of the outermost call, one entry appended to
 * this thread's buffer (hostcalls.c says why nothing more). */
static void time_call(int driver, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    if (cd->callbackSite == CUPTI_API_ENTER) {
        if (tt_hc_enter(&hc_self, cd->correlationId) && cd->correlationData)
            *cd->correlationData = tt_now_cupti();
        return;
    }
    if (!tt_hc_exit(&hc_self))
        return; /* inside another timed call: it gets that one's times */
    uint64_t end = tt_now_cupti();
    uint64_t start = cd->correlationData && *cd->correlationData ? *cd->correlationData : end;
    tt_hc_add(&tt_state.hc, &hc_self, driver, cbid, cd->correlationId, start, end);
}

static bool marker_matches(const char *msg)
{
    return msg && strncmp(msg, tt_state.opts.iter_marker, strlen(tt_state.opts.iter_marker)) == 0;
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
    if (atomic_load(&tt_state.inert))
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
            pthread_mutex_lock(&tt_state.mu);
            tt_note_device(rd->context, dev);
            pthread_mutex_unlock(&tt_state.mu);
        } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
            pthread_mutex_lock(&tt_state.mu);
            for (int i = 0; i < tt_state.n_contexts; i++)
                if (tt_state.contexts[i] == rd->context)
                    tt_state.contexts[i] = tt_state.contexts[--tt_state.n_contexts];
            pthread_mutex_unlock(&tt_state.mu);
        }
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        const CUpti_NvtxData *nd = data;
        /* CUPTI stamps the range itself a little before this callback runs:
         * the boundary goes 5 us earlier, so that the range starting the
         * window is in it and the one ending it is not. */
        if (marker_matches(nvtx_message(cbid, nd->functionParams)))
            tt_boundary(tt_now_cupti() - 5000, 0);
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
                tt_wake_writer(TT_REQ_RESET);
            return;
        }
        if (tt_lite_callbacks())
            record_call(cbid, cd);
        bool is_device = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
        bool is_stream = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000;
        /* a synchronize: the next iteration starts when it returns */
        if (!sync_method() || !(is_device || is_stream) ||
            tt_state.opts.iter_sync_kind == (is_device ? TT_SYNC_STREAM : TT_SYNC_DEVICE))
            return;
        if (cd->callbackSite == CUPTI_API_EXIT && tt_state.opts.iter_sync > 0) {
            static _Atomic uint64_t n_syncs;
            uint64_t n = atomic_fetch_add(&n_syncs, 1) + 1;
            if (n % (uint64_t)tt_state.opts.iter_sync == 0)
                tt_boundary(tt_now_cupti(), cd->correlationId + 1);
        }
        return;
    }
}

int tt_setup_callbacks(void)
{
    CUptiResult r = cuptiSubscribe(&tt_state.subscriber, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        const char *err = "";
        cuptiGetResultString(r, &err);
        tt_say("cuptiSubscribe failed (%s): is another CUPTI client (a profiler) active?", err);
        return -1;
    }
    cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    /* --launch-times callback: the launch, copy and memset calls (in any
     * --sync-records mode: asked for by name). */
    if (launch_callbacks()) {
        if (tt_hc_init(&tt_state.hc, tt_state.opts.max_records) < 0) {
            tt_say("cannot set up the launch-time log; launch times will be estimated from "
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
                if (cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                        timed_runtime_ids[i]) != CUPTI_SUCCESS)
                    timed_cbid[0][timed_runtime_ids[i]] = false; /* unknown to this CUDA */
            }
            for (size_t i = 0; i < sizeof timed_driver_ids / sizeof timed_driver_ids[0]; i++) {
                timed_cbid[1][timed_driver_ids[i]] = true;
                if (cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                        timed_driver_ids[i]) != CUPTI_SUCCESS)
                    timed_cbid[1][timed_driver_ids[i]] = false;
            }
        }
    }
    /* COMPLETION: no runtime or driver API callback at all (whether CUPTI
     * then intercepts every API call is what that mode is there to find
     * out): synchronizes, iteration syncs included, are seen when they
     * complete (synchronize domain); cudaDeviceReset is not seen. */
    if (tt_lite_completions()) {
        cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                            CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED);
        cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                            CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED);
        if (*tt_state.opts.iter_marker)
            cuptiEnableDomain(1, tt_state.subscriber, CUPTI_CB_DOMAIN_NVTX);
        return 0;
    }
    cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
    /* Only what the chosen iteration method needs: each callback costs time
     * on the program's own thread. (Iteration kernels are found in the kernel
     * records, which have the name. The "~10 us per launch" said here until
     * the launch-time callbacks came has no measurement behind it in the
     * repository: the first build's launch callback matched cd->symbolName
     * against the kernel under a mutex, and the BERT run traced with it
     * (log_signals_gpu_only.txt) was not slower. The launch-time callback
     * does no name lookup.) */
    if (*tt_state.opts.iter_marker) {
        cuptiEnableDomain(1, tt_state.subscriber, CUPTI_CB_DOMAIN_NVTX);
    } else if (tt_state.opts.iter_sync > 0 && !*tt_state.opts.iter_kernel) {
        for (size_t i = 0; i < sizeof runtime_syncs / sizeof runtime_syncs[0]; i++)
            cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_syncs[i]);
    }
    if (tt_lite_callbacks())
        for (size_t i = 0; i < sizeof lite_call_ids / sizeof lite_call_ids[0]; i++)
            cuptiEnableCallback(1, tt_state.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, lite_call_ids[i]);
    return 0;
}
