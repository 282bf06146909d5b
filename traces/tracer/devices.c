/* tally-trace: the devices and contexts the program uses, through the
 * driver: each device's properties, written into the trace, noted when a
 * context is created; the contexts, synchronized before the final writes so
 * that the GPU records are complete.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "inject.h"

/* Driver entry points, found at run time: the driver is the one that loaded
 * us, so it is always there. */
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
void tt_load_driver_symbols(void)
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

/* Called with tt_state.mu held, on context creation (the context is current then). */
void tt_note_device(CUcontext ctx, uint32_t ordinal)
{
    if (tt_state.n_contexts < TT_MAX_CONTEXTS)
        tt_state.contexts[tt_state.n_contexts++] = ctx;
    for (int i = 0; i < tt_state.n_devices; i++)
        if (tt_state.devices[i].ordinal == (int)ordinal)
            return;
    if (tt_state.n_devices == TT_MAX_DEVICES || !p_cuDeviceGet)
        return;
    CUdevice dev;
    if (p_cuDeviceGet(&dev, (int)ordinal) != CUDA_SUCCESS)
        return;
    tt_device *d = &tt_state.devices[tt_state.n_devices++];
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

/* Wait for the GPU work issued so far (so that its records are complete), on
 * this thread only: the contexts are pushed here, not made current elsewhere. */
void tt_sync_contexts(void)
{
    CUcontext ctx[TT_MAX_CONTEXTS];
    pthread_mutex_lock(&tt_state.mu);
    int n = tt_state.n_contexts;
    memcpy(ctx, tt_state.contexts, (size_t)n * sizeof ctx[0]);
    pthread_mutex_unlock(&tt_state.mu);
    for (int i = 0; i < n; i++) {
        if (!p_cuCtxPushCurrent || p_cuCtxPushCurrent(ctx[i]) != CUDA_SUCCESS)
            continue;
        if (p_cuCtxSynchronize)
            p_cuCtxSynchronize();
        CUcontext popped;
        p_cuCtxPopCurrent(&popped);
    }
}
