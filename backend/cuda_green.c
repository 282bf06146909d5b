/* Driver entry points and green contexts (SM partitions). FACTS.md: on this
 * H100 (CUDA 13.0) green contexts work through the driver API only. Each
 * partition is split off the SMs that no earlier partition took, so that
 * partitions never overlap. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

int tl_cuda_errf(tl_err *err, int cuda_err, const char *what)
{
    return tl_errf(err, cuda_err == cudaErrorNoDevice || cuda_err == cudaErrorInsufficientDriver ? TL_ENODEV : TL_EIO,
                   "CUDA: %s: %s (%d)", what, cudaGetErrorString((cudaError_t)cuda_err), cuda_err);
}

static int get(const char *sym, void **fn)
{
    enum cudaDriverEntryPointQueryResult q;
    *fn = NULL;
    cudaError_t e = cudaGetDriverEntryPointByVersion(sym, fn, CUDA_VERSION, cudaEnableDefault, &q);
    return e == cudaSuccess && q == cudaDriverEntryPointSuccess && *fn ? 0 : -1;
}

int tl_drv_load(tl_drv *d)
{
    memset(d, 0, sizeof *d);
    int bad = 0;
    bad |= get("cuDeviceGet", (void **)&d->DeviceGet);
    bad |= get("cuGetErrorString", (void **)&d->GetErrorString);
    bad |= get("cuDeviceGetDevResource", (void **)&d->DeviceGetDevResource);
    bad |= get("cuDevSmResourceSplitByCount", (void **)&d->DevSmResourceSplitByCount);
    bad |= get("cuDevResourceGenerateDesc", (void **)&d->DevResourceGenerateDesc);
    bad |= get("cuGreenCtxCreate", (void **)&d->GreenCtxCreate);
    bad |= get("cuGreenCtxDestroy", (void **)&d->GreenCtxDestroy);
    bad |= get("cuGreenCtxStreamCreate", (void **)&d->GreenCtxStreamCreate);
    d->ok = !bad;
    return bad ? -1 : 0;
}

static int drv_errf(tl_cuda *c, tl_err *err, CUresult r, const char *what)
{
    const char *s = NULL;
    if (c->drv.GetErrorString) c->drv.GetErrorString(r, &s);
    return tl_errf(err, TL_EIO, "CUDA driver: %s: %s (%d)", what, s ? s : "?", (int)r);
}

int tl_cuda_green_create(tl_cuda *c, int sm_count, CUgreenCtx *out, int *got_sms, tl_err *err)
{
    if (!c->drv.ok)
        return tl_errf(err, TL_ENODEV, "SM partitions: this driver has no green-context API (needs CUDA 12.4+)");
    CUdevice dev;
    CUresult r = c->drv.DeviceGet(&dev, c->device);
    if (r) return drv_errf(c, err, r, "cuDeviceGet");
    if (!c->sm_left_valid) {
        if ((r = c->drv.DeviceGetDevResource(dev, &c->sm_left, CU_DEV_RESOURCE_TYPE_SM)))
            return drv_errf(c, err, r, "cuDeviceGetDevResource(SM)");
        c->sm_left_valid = true;
    }
    if ((int)c->sm_left.sm.smCount < sm_count)
        return tl_errf(err, TL_ERANGE, "SM partition of %d SMs: only %u SMs are left unpartitioned", sm_count,
                       c->sm_left.sm.smCount);
    CUdevResource part, rest;
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    unsigned int groups = 1;
    if ((r = c->drv.DevSmResourceSplitByCount(&part, &groups, &c->sm_left, &rest, 0, (unsigned)sm_count)) || groups < 1)
        return drv_errf(c, err, r, "cuDevSmResourceSplitByCount");
    CUdevResourceDesc desc;
    if ((r = c->drv.DevResourceGenerateDesc(&desc, &part, 1))) return drv_errf(c, err, r, "cuDevResourceGenerateDesc");
    if ((r = c->drv.GreenCtxCreate(out, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)))
        return drv_errf(c, err, r, "cuGreenCtxCreate");
    c->sm_left = rest;
    *got_sms = (int)part.sm.smCount;
    return 0;
}

int tl_cuda_green_stream(tl_cuda *c, CUgreenCtx g, int prio, cudaStream_t *out, tl_err *err)
{
    CUstream s;
    CUresult r = c->drv.GreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, prio);
    if (r) return drv_errf(c, err, r, "cuGreenCtxStreamCreate");
    *out = (cudaStream_t)s;
    return 0;
}
