// Synthetic kernels (see synth.h for what they are and why).
//
// Register variants: each is compiled under a __maxnreg__ cap and keeps NACC
// float accumulators live across its work loop, so that the compiler really
// allocates about as many registers as the cap (occupancy then matches the
// traced kernel's register pressure). The accumulators start from values loaded
// from memory so that nothing can be folded away.

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block_trace.h"
#include "synth.h"

namespace {

// Exits are counted in TL_GROUPS groups (block b counts in group b % TL_GROUPS)
// and then once per group at the top: a single counter hit by every block
// serializes at L2 (16384 empty blocks took 52 us instead of ~10 on the H100).
#define TL_GROUPS 64

struct slot_dev {
    unsigned long long start, end; // %globaltimer: min over block starts, max over block ends
    unsigned int exited;           // groups whose blocks all finished
    unsigned int claimed;          // PTB: logical blocks claimed
    unsigned int retreat_gen;      // == launch gen: workers stop claiming
    unsigned int pad;
    unsigned int g_exited[TL_GROUPS];
    unsigned long long g_end[TL_GROUPS];
    unsigned long long sm_mask[4]; // TALLY_SM_TRACE: the SMs its blocks ran on (up to 256)
};

struct kargs {
    const float4 *buf;
    unsigned long long n4;         // float4 elements in buf
    slot_dev *slot;
    tl_synth_rec *rec;             // host-mapped record of this slot
    unsigned long long begin;      // first logical block
    unsigned long long count;      // logical blocks in the launch
    unsigned long long salt;
    unsigned int iters;
    unsigned int gen;
    unsigned int node;             // 1: a CUDA-graph node: stamps only (node_exit)
    unsigned int sm_trace;         // 1: every block marks its SM in slot->sm_mask
    tl_block_rec *bt;              // TALLY_BLOCK_TRACE: this launch's block records; NULL: untraced
    float *sink;                   // written only if the impossible happens
};

__device__ __forceinline__ unsigned long long gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long stamp_start(slot_dev *s)
{
    unsigned long long t = gtimer();
    // Read first: only the earliest blocks pay for an atomic.
    if (t < *(volatile unsigned long long *)&s->start) atomicMin(&s->start, t);
    return t;
}

// TALLY_BLOCK_TRACE (a diagnostic, block_trace.h): the block's SM, start and
// end, at its own place in the launch's records (no atomics).
__device__ __forceinline__ void block_record(const kargs &a, unsigned long long t0)
{
    if (!a.bt) return;
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    unsigned long long d = gtimer() - t0;
    tl_block_rec r;
    r.start_gt = t0;
    r.dur_ns = d < 0xffffffffull ? (unsigned int)d : 0xffffffffu;
    r.sm = id;
    a.bt[blockIdx.x] = r;
}

// TALLY_SM_TRACE (a diagnostic): the block's SM in the launch's mask; read
// first, so that only a launch's first block on an SM pays for an atomic.
__device__ __forceinline__ void mark_sm(const kargs &a)
{
    if (!a.sm_trace) return;
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    unsigned long long *w = &a.slot->sm_mask[(id >> 6) & 3], bit = 1ull << (id & 63);
    if (!(*(volatile unsigned long long *)w & bit)) atomicOr(w, bit);
}

// The SMs a mask holds, and the mask cleared for the slot's next launch.
__device__ __forceinline__ unsigned int take_sms(volatile slot_dev *s)
{
    unsigned int n = 0;
    for (int i = 0; i < 4; i++) {
        n += __popcll(s->sm_mask[i]);
        s->sm_mask[i] = 0;
    }
    return n;
}

// Called by thread 0 of every block at its very end.
__device__ __forceinline__ void block_exit(const kargs &a)
{
    slot_dev *s = a.slot;
    const unsigned int g = blockIdx.x % TL_GROUPS;
    const unsigned int ngroups = gridDim.x < TL_GROUPS ? gridDim.x : TL_GROUPS;
    const unsigned int in_group = gridDim.x / TL_GROUPS + (g < gridDim.x % TL_GROUPS ? 1u : 0u);
    unsigned long long t = gtimer();
    if (t > *(volatile unsigned long long *)&s->g_end[g]) atomicMax(&s->g_end[g], t);
    __threadfence();
    if (atomicAdd(&s->g_exited[g], 1u) != in_group - 1) return;
    // Last block of its group: fold the group into the top.
    __threadfence();
    unsigned long long ge = *(volatile unsigned long long *)&s->g_end[g];
    if (ge > *(volatile unsigned long long *)&s->end) atomicMax(&s->end, ge);
    __threadfence();
    if (atomicAdd(&s->exited, 1u) != ngroups - 1) return;
    // Last block of all: reset the slot, then publish to the host record. The
    // generation is written last: once the host sees it, it may reuse the
    // slot at once, so nothing may touch the slot after that.
    __threadfence();
    volatile slot_dev *vs = s;
    const unsigned long long st = vs->start, en = vs->end;
    const unsigned int cl = vs->claimed, sms = take_sms(vs);
    vs->start = ~0ull;
    vs->end = 0;
    vs->claimed = 0;
    vs->exited = 0;
    for (unsigned int i = 0; i < ngroups; i++) {
        vs->g_exited[i] = 0;
        vs->g_end[i] = 0;
    }
    __threadfence();
    a.rec->start_gt = st;
    a.rec->end_gt = en;
    a.rec->claimed = cl;
    a.rec->sms = sms;
    __threadfence_system();
    *(volatile unsigned int *)&a.rec->gen = a.gen;
}

// A graph node's block end (tl_synth_enqueue_node): only its group's latest
// end, with an atomic whose result nobody waits for. No exit counting, reset or
// record: the graph's publish kernel (k_publish) does that for all its nodes
// at once, so the next node starts as soon as the hardware lets it.
__device__ __forceinline__ void node_exit(const kargs &a)
{
    unsigned long long t = gtimer();
    unsigned long long *ge = &a.slot->g_end[blockIdx.x % TL_GROUPS];
    if (t > *(volatile unsigned long long *)ge) atomicMax(ge, t);
}

template <int KIND, int NACC>
__device__ __forceinline__ void do_block(const kargs &a, unsigned long long lb)
{
    const unsigned int nthr = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned long long idx = (a.salt + lb * (unsigned long long)a.iters * nthr + tid) % a.n4;
    float acc[NACC];
    // Seed the accumulators from memory: values unknown to the compiler.
    float4 seed = __ldg(&a.buf[idx]);
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = seed.x + (float)i * seed.y;

    if (KIND == TL_SYNTH_COMPUTE) {
        const float m = 0.99991f + seed.z * 1e-9f, c = 0.5f + seed.w * 1e-9f;
        for (unsigned int it = 0; it < a.iters; it++) {
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[i] = fmaf(acc[i], m, c);
        }
    } else {
        // Unrolled by hand so that accumulator indices stay compile-time
        // constants (a dynamic index would put acc[] in local memory).
        const unsigned long long n4 = a.n4;
        unsigned int it = 0;
        for (; it + 4 <= a.iters; it += 4) {
#pragma unroll
            for (int u = 0; u < 4; u++) {
                idx += nthr;
                if (idx >= n4) idx -= n4;
                float4 v = __ldcs(&a.buf[idx]);
                acc[u] += v.x + v.y;
                acc[(u + 2) & 3] += v.z * v.w;
            }
        }
        for (; it < a.iters; it++) {
            idx += nthr;
            if (idx >= n4) idx -= n4;
            float4 v = __ldcs(&a.buf[idx]);
            acc[0] += v.x + v.y + v.z * v.w;
        }
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < NACC; i++) sum += acc[i];
    if (sum == 1234.5678f) a.sink[tid] = sum; // never true in practice; keeps the work
}

template <int KIND, int NACC>
__device__ __forceinline__ void plain_body(const kargs &a)
{
    const bool t0 = threadIdx.x + threadIdx.y + threadIdx.z == 0;
    unsigned long long t_start = 0;
    if (t0) {
        t_start = stamp_start(a.slot);
        mark_sm(a);
    }
    do_block<KIND, NACC>(a, a.begin + blockIdx.x);
    __syncthreads();
    if (t0) {
        block_record(a, t_start);
        if (a.node) node_exit(a);
        else block_exit(a);
    }
}

// Persistent thread blocks: pull logical blocks from the slot's counter until
// the range is done or the launch's generation appears in retreat_gen.
template <int KIND, int NACC>
__device__ __forceinline__ void ptb_body(const kargs &a)
{
    __shared__ unsigned long long s_lb;
    const bool t0 = threadIdx.x + threadIdx.y + threadIdx.z == 0;
    unsigned long long t_start = 0;
    if (t0) {
        t_start = stamp_start(a.slot);
        mark_sm(a);
    }
    for (;;) {
        if (t0) {
            unsigned long long lb = ~0ull;
            if (*(volatile unsigned int *)&a.slot->retreat_gen != a.gen) {
                unsigned int c = atomicAdd(&a.slot->claimed, 1u);
                if (c < a.count) lb = a.begin + c;
            }
            s_lb = lb;
        }
        __syncthreads();
        unsigned long long lb = s_lb;
        __syncthreads();
        if (lb == ~0ull) break;
        do_block<KIND, NACC>(a, lb);
    }
    if (t0) {
        block_record(a, t_start);
        block_exit(a);
    }
}

// (variant, register cap, accumulators). The memory kind keeps 8 fewer
// accumulators: its unrolled loads need registers of their own.
#define TL_VARIANTS(X) X(0, 32, 12) X(1, 48, 34) X(2, 64, 52) X(3, 96, 74) X(4, 128, 116) X(5, 255, 238)

#define TL_DEFINE(V, CAP, NACC)                                                          \
    __global__ void __maxnreg__(CAP) k_c_##V(kargs a) { plain_body<TL_SYNTH_COMPUTE, NACC>(a); } \
    __global__ void __maxnreg__(CAP) k_m_##V(kargs a) { plain_body<TL_SYNTH_MEMORY, NACC - 8>(a); } \
    __global__ void __maxnreg__(CAP) p_c_##V(kargs a) { ptb_body<TL_SYNTH_COMPUTE, NACC>(a); }   \
    __global__ void __maxnreg__(CAP) p_m_##V(kargs a) { ptb_body<TL_SYNTH_MEMORY, NACC - 8>(a); }
TL_VARIANTS(TL_DEFINE)

typedef void (*kfn)(kargs);
#define TL_ROW(V, CAP, NACC) {k_c_##V, k_m_##V, p_c_##V, p_m_##V},
const kfn kernels[TL_SYNTH_NVARIANTS][4] = {TL_VARIANTS(TL_ROW)};
#define TL_CAP(V, CAP, NACC) CAP,
const int caps[TL_SYNTH_NVARIANTS] = {TL_VARIANTS(TL_CAP)};

// After a graph's nodes: fold each node's group ends, reset its slot, and
// publish its record, the generation last. The list travels by value in the
// kernel's parameters (no device allocation to make or free mid-run).
#define TL_PUBLISH_CHUNK 128
struct publish_list {
    unsigned int n;
    unsigned int slot[TL_PUBLISH_CHUNK];
    unsigned int gen[TL_PUBLISH_CHUNK];
};

__global__ void k_publish(publish_list l, slot_dev *slots, tl_synth_rec *recs)
{
    unsigned int i = threadIdx.x;
    if (i >= l.n) return;
    const unsigned int sl = l.slot[i];
    volatile slot_dev *s = &slots[sl];
    unsigned long long en = 0;
    for (int g = 0; g < TL_GROUPS; g++) {
        unsigned long long v = s->g_end[g];
        if (v > en) en = v;
        s->g_end[g] = 0;
    }
    const unsigned long long st = s->start;
    const unsigned int sms = take_sms(s);
    s->start = ~0ull;
    __threadfence();
    recs[sl].start_gt = st;
    recs[sl].end_gt = en;
    recs[sl].claimed = 0;
    recs[sl].sms = sms;
    __threadfence_system();
    *(volatile unsigned int *)&recs[sl].gen = l.gen[i];
}

__global__ void k_clock(volatile unsigned long long *pub, volatile int *stop, unsigned long long limit_ns)
{
    unsigned long long t0 = gtimer(), t = t0;
    while (!*stop && t - t0 < limit_ns) {
        t = gtimer();
        *pub = t;
        __threadfence_system();
    }
}

__global__ void k_resolution(unsigned long long *out)
{
    unsigned long long prev = gtimer(), best = ~0ull, t0 = prev;
    while (prev - t0 < 200000ull) {
        unsigned long long t = gtimer();
        if (t != prev && t - prev < best) best = t - prev;
        prev = t;
    }
    *out = best;
}

} // namespace

struct tl_synth {
    float4 *buf;
    unsigned long long n4;
    float *sink;
    slot_dev *slots;
    tl_synth_rec *recs_h;      // host-mapped
    tl_synth_rec *recs_d;      // device view of recs_h
    unsigned int *retreat_src; // pinned sources of retreat copies, one per slot
    unsigned int *gen;         // next generation per slot (host)
    unsigned int *free_list;
    unsigned char *in_use;     // guards against releasing a slot twice
    tl_synth_hist *hist;       // last TL_SYNTH_HIST events per slot (diagnostics)
    unsigned int n_free, nslots;
    tl_synth_variant_info info[TL_SYNTH_NVARIANTS];
    int smem_optin;
    int smem_attr_set[TL_SYNTH_NVARIANTS][4]; // largest dynamic smem allowed so far
    unsigned int sm_trace;     // TALLY_SM_TRACE=1: records count the SMs each launch ran on
    tl_btrace bt;              // TALLY_BLOCK_TRACE: the traced launches (host side)
    tl_block_rec *bt_dev;      // their block records; NULL: not tracing
};

static long long mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__global__ void k_fill(float4 *buf, unsigned long long n4)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float f = (float)(i % 977) * 1e-3f;
        buf[i] = make_float4(f, f + 1.f, f * 0.5f, 1.f - f);
    }
}

__global__ void k_init_slots(slot_dev *s, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        s[i].start = ~0ull; s[i].end = 0; s[i].exited = 0; s[i].claimed = 0; s[i].retreat_gen = 0; s[i].pad = 0;
        for (int g = 0; g < TL_GROUPS; g++) { s[i].g_exited[g] = 0; s[i].g_end[g] = 0; }
        for (int w = 0; w < 4; w++) s[i].sm_mask[w] = 0;
    }
}

/* TALLY_SYNTH_CARVEOUT=P (0-100; a diagnostic, unset normally): every
 * synthetic kernel prefers the same shared-memory carveout, P percent, so that
 * the driver configures one carveout for all of them and an SM can hold blocks
 * of any two together. On the H100 an SM holds blocks of one carveout at a
 * time and the driver picks it per launch (experiments/results/hw/placement/);
 * with this set, the replay shows what the sharing policies do without that
 * rule. Returns 0 or a cudaError_t (cudaErrorInvalidValue for a bad value). */
extern "C" int tl_synth_carveout_env(void)
{
    const char *v = getenv("TALLY_SYNTH_CARVEOUT");
    if (!v || !*v) return -1;
    char *end;
    long p = strtol(v, &end, 10);
    return *end || p < 0 || p > 100 ? -2 : (int)p;
}

extern "C" int tl_synth_apply_carveout_env(void)
{
    int p = tl_synth_carveout_env();
    if (p == -1) return 0;
    if (p < 0) return (int)cudaErrorInvalidValue;
    for (int i = 0; i < TL_SYNTH_NVARIANTS; i++)
        for (int k = 0; k < 4; k++) {
            cudaError_t e = cudaFuncSetAttribute((const void *)kernels[i][k],
                                                 cudaFuncAttributePreferredSharedMemoryCarveout, p);
            if (e) return (int)e;
        }
    return 0;
}

extern "C" int tl_synth_variant_cap(int v) { return v >= 0 && v < TL_SYNTH_NVARIANTS ? caps[v] : 0; }

extern "C" int tl_synth_open(tl_synth **out, unsigned int nslots)
{
    *out = NULL;
    tl_synth *s = (tl_synth *)calloc(1, sizeof *s);
    if (!s) return (int)cudaErrorMemoryAllocation;
    cudaError_t e;
    int dev = 0;
    s->nslots = nslots;
    s->n4 = TL_SYNTH_BUF_BYTES / sizeof(float4);
    s->sm_trace = getenv("TALLY_SM_TRACE") && !strcmp(getenv("TALLY_SM_TRACE"), "1");
    if ((e = cudaGetDevice(&dev))) goto fail;
    if ((e = cudaDeviceGetAttribute(&s->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev))) goto fail;
    if ((e = cudaMalloc(&s->buf, TL_SYNTH_BUF_BYTES))) goto fail;
    if ((e = cudaMalloc(&s->sink, 1024 * sizeof(float)))) goto fail;
    if ((e = cudaMalloc(&s->slots, nslots * sizeof(slot_dev)))) goto fail;
    if ((e = cudaHostAlloc(&s->recs_h, nslots * sizeof(tl_synth_rec), cudaHostAllocMapped))) goto fail;
    if ((e = cudaHostGetDevicePointer(&s->recs_d, s->recs_h, 0))) goto fail;
    if ((e = cudaHostAlloc(&s->retreat_src, nslots * sizeof(unsigned int), 0))) goto fail;
    memset(s->recs_h, 0, nslots * sizeof(tl_synth_rec));
    s->gen = (unsigned int *)calloc(nslots, sizeof(unsigned int));
    s->free_list = (unsigned int *)calloc(nslots, sizeof(unsigned int));
    s->in_use = (unsigned char *)calloc(nslots, 1);
    s->hist = (tl_synth_hist *)calloc((size_t)nslots * TL_SYNTH_HIST, sizeof(tl_synth_hist));
    if (!s->gen || !s->free_list || !s->in_use) { e = cudaErrorMemoryAllocation; goto fail; }
    for (unsigned int i = 0; i < nslots; i++) {
        s->free_list[i] = nslots - 1 - i;
        s->gen[i] = 1;
    }
    s->n_free = nslots;
    k_fill<<<1024, 256>>>(s->buf, s->n4);
    k_init_slots<<<(nslots + 255) / 256, 256>>>(s->slots, nslots);
    if ((e = cudaGetLastError())) goto fail;
    if ((e = cudaDeviceSynchronize())) goto fail;
    for (int v = 0; v < TL_SYNTH_NVARIANTS; v++) {
        cudaFuncAttributes fa;
        if ((e = cudaFuncGetAttributes(&fa, (const void *)kernels[v][0]))) goto fail;
        s->info[v].regs = fa.numRegs;
        s->info[v].max_threads = fa.maxThreadsPerBlock;
        int maxthr = fa.maxThreadsPerBlock;
        for (int k = 1; k < 4; k++) {
            if ((e = cudaFuncGetAttributes(&fa, (const void *)kernels[v][k]))) goto fail;
            if (fa.numRegs > s->info[v].regs) s->info[v].regs = fa.numRegs;
            if (fa.maxThreadsPerBlock < maxthr) maxthr = fa.maxThreadsPerBlock;
            if ((int)fa.sharedSizeBytes > s->info[v].static_smem) s->info[v].static_smem = (int)fa.sharedSizeBytes;
        }
        s->info[v].max_threads = maxthr;
    }
    if ((e = (cudaError_t)tl_synth_apply_carveout_env())) goto fail;
    {
        tl_btrace_conf bc;
        char msg[256];
        if (tl_btrace_env(&bc, msg, sizeof msg) < 0) { e = cudaErrorInvalidValue; goto fail; } // tally-run said why
        if (bc.dir) {
            tl_btrace_init(&s->bt, &bc);
            size_t bytes = (size_t)bc.max_records * sizeof(tl_block_rec);
            if ((e = cudaMalloc(&s->bt_dev, bytes))) goto fail;
            if ((e = cudaMemset(s->bt_dev, 0, bytes))) goto fail;
        }
    }
    *out = s;
    return 0;
fail:
    tl_synth_close(s);
    return (int)e;
}

// The traced blocks to their file, after the GPU is done with them.
static void btrace_save(tl_synth *s)
{
    tl_block_rec *h = s->bt.used ? (tl_block_rec *)malloc(s->bt.used * sizeof *h) : NULL;
    cudaError_t e = cudaDeviceSynchronize();
    if (!e && h) e = cudaMemcpy(h, s->bt_dev, s->bt.used * sizeof *h, cudaMemcpyDeviceToHost);
    if (e || (s->bt.used && !h))
        fprintf(stderr, "tally-run: TALLY_BLOCK_TRACE: the records could not be read back: %s\n",
                e ? cudaGetErrorString(e) : "out of memory");
    else
        tl_btrace_save(&s->bt, h);
    free(h);
}

extern "C" void tl_synth_close(tl_synth *s)
{
    if (!s) return;
    if (s->bt_dev) {
        btrace_save(s);
        cudaFree(s->bt_dev);
    }
    tl_btrace_close(&s->bt);
    cudaFree(s->buf);
    cudaFree(s->sink);
    cudaFree(s->slots);
    if (s->recs_h) cudaFreeHost(s->recs_h);
    if (s->retreat_src) cudaFreeHost(s->retreat_src);
    free(s->gen);
    free(s->free_list);
    free(s->in_use);
    free(s->hist);
    free(s);
}

extern "C" const tl_synth_variant_info *tl_synth_variant(const tl_synth *s, int v)
{
    return v >= 0 && v < TL_SYNTH_NVARIANTS ? &s->info[v] : NULL;
}

static void hist(tl_synth *s, unsigned int slot, char what, const tl_synth_launch *l)
{
    if (!s->hist || slot >= s->nslots) return;
    tl_synth_hist *h = &s->hist[(size_t)slot * TL_SYNTH_HIST];
    memmove(h + 1, h, (TL_SYNTH_HIST - 1) * sizeof *h);
    memset(h, 0, sizeof *h);
    h->what = what;
    h->gen = s->gen[slot];
    h->t_ns = mono_ns();
    if (l) {
        h->begin = l->begin;
        h->end = l->end;
        h->workers = l->workers;
        h->iters = l->iters;
        h->kind = l->kind;
        h->variant = l->variant;
    }
}

extern "C" const tl_synth_hist *tl_synth_history(const tl_synth *s, unsigned int slot)
{
    return s->hist && slot < s->nslots ? &s->hist[(size_t)slot * TL_SYNTH_HIST] : NULL;
}

extern "C" int tl_synth_slot_dump(tl_synth *s, unsigned int slot, unsigned long long out[6])
{
    if (slot >= s->nslots) return (int)cudaErrorInvalidValue;
    slot_dev d;
    cudaError_t e = cudaMemcpy(&d, &s->slots[slot], sizeof d, cudaMemcpyDeviceToHost);
    out[0] = d.start;
    out[1] = d.end;
    out[2] = d.exited;
    out[3] = d.claimed;
    out[4] = d.retreat_gen;
    unsigned long long ge = 0;
    for (int g = 0; g < TL_GROUPS; g++) ge += d.g_exited[g];
    out[5] = ge;
    return (int)e;
}

extern "C" int tl_synth_slot_acquire(tl_synth *s)
{
    if (s->n_free == 0) return -1;
    unsigned int slot = s->free_list[--s->n_free];
    s->in_use[slot] = 1;
    hist(s, slot, 'A', NULL);
    return (int)slot;
}

extern "C" void tl_synth_slot_release(tl_synth *s, unsigned int slot)
{
    if (slot >= s->nslots || s->n_free >= s->nslots || !s->in_use[slot]) {
        if (slot < s->nslots) hist(s, slot, 'D', NULL); /* double release, ignored */
        return;
    }
    hist(s, slot, 'R', NULL);
    s->in_use[slot] = 0;
    s->gen[slot]++;
    if (s->gen[slot] == 0) s->gen[slot] = 1; // 0 is what a fresh slot's retreat_gen holds
    s->free_list[s->n_free++] = slot;
}

extern "C" unsigned int tl_synth_slots_free(const tl_synth *s) { return s->n_free; }

extern "C" const volatile tl_synth_rec *tl_synth_record(const tl_synth *s, unsigned int slot)
{
    return &s->recs_h[slot];
}

extern "C" unsigned int tl_synth_slot_gen(const tl_synth *s, unsigned int slot) { return s->gen[slot]; }

/* A launch made ready: kernel, shape and arguments (shared by stream
 * launches and graph nodes). Returns 0 or a cudaError_t. */
typedef struct ready_launch {
    kfn f;
    unsigned int grid;
    dim3 block;
    int dyn;
    kargs a;
} ready_launch;

static int prepare(tl_synth *s, const tl_synth_launch *l, bool node, ready_launch *out)
{
    if (l->variant < 0 || l->variant >= TL_SYNTH_NVARIANTS || l->kind < 0 || l->kind > 1 ||
        l->slot >= s->nslots || l->end <= l->begin)
        return (int)cudaErrorInvalidValue;
    int ptb = l->workers > 0;
    kfn f = kernels[l->variant][(ptb ? 2 : 0) + l->kind];
    /* Static shared memory: the PTB kernels' few bytes, none in the others. */
    int st = ptb ? s->info[l->variant].static_smem : 0;
    int dyn = (int)l->smem - st;
    if (dyn < 0) dyn = 0;
    int col = (ptb ? 2 : 0) + l->kind;
    if (dyn + st > s->smem_optin) return (int)cudaErrorInvalidValue;
    if (dyn > 48 * 1024 && dyn > s->smem_attr_set[l->variant][col]) {
        /* The opt-in limit covers static + dynamic shared memory. */
        cudaError_t e = cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             s->smem_optin - st);
        if (e) {
            cudaGetLastError(); /* do not leave it for the next launch's check */
            return (int)e;
        }
        s->smem_attr_set[l->variant][col] = s->smem_optin - st;
    }
    kargs &a = out->a;
    memset(&a, 0, sizeof a);
    a.buf = s->buf;
    a.n4 = s->n4;
    a.slot = &s->slots[l->slot];
    a.rec = &s->recs_d[l->slot];
    a.begin = l->begin;
    a.count = l->end - l->begin;
    a.salt = l->salt % s->n4;
    a.iters = l->iters;
    a.gen = s->gen[l->slot];
    a.node = node;
    a.sm_trace = s->sm_trace;
    a.sink = s->sink;
    unsigned long long grid = ptb ? l->workers : a.count;
    if (ptb && grid > a.count) grid = a.count;
    if (grid > 0x7fffffffull) return (int)cudaErrorInvalidConfiguration;
    out->f = f;
    out->grid = (unsigned int)grid;
    out->block = dim3(l->block[0], l->block[1], l->block[2]);
    out->dyn = dyn;
    return 0;
}

static int enqueue(tl_synth *s, const tl_synth_launch *l, void *stream)
{
    ready_launch r;
    int e = prepare(s, l, false, &r);
    if (e) return e;
    if (s->bt_dev) {
        tl_btrace_launch bl;
        memset(&bl, 0, sizeof bl);
        bl.kind = l->kind;
        bl.variant = l->variant;
        bl.threads = l->block[0] * l->block[1] * l->block[2];
        bl.smem = l->smem;
        bl.iters = l->iters;
        bl.grid = r.grid;
        bl.begin = l->begin;
        bl.workers = l->workers;
        long long at = tl_btrace_claim(&s->bt, &bl, mono_ns());
        if (at >= 0) r.a.bt = s->bt_dev + at;
    }
    s->recs_h[l->slot].gen = 0;
    /* cudaGetLastError also returns errors of earlier calls: clear them
     * first, or a launch that went ahead would be taken for a failed one
     * (and its slot reused while it runs). */
    cudaGetLastError();
    r.f<<<r.grid, r.block, r.dyn, (cudaStream_t)stream>>>(r.a);
    cudaError_t le = cudaGetLastError();
    hist(s, l->slot, le ? 'E' : 'L', l);
    return (int)le;
}

extern "C" int tl_synth_enqueue(tl_synth *s, const tl_synth_launch *l, void *stream)
{
    return enqueue(s, l, stream);
}

/* ---- CUDA graphs of node launches (synth.h) ---- */

struct tl_synth_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    size_t n;
    cudaGraphNode_t *nodes;   // the launches' nodes, in order (publish nodes not kept)
    kargs *args;              // their arguments as set now
    ready_launch *shape;      // their kernel and shape (for updates)
};

extern "C" void tl_synth_graph_free(tl_synth_graph *g)
{
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    free(g->nodes);
    free(g->args);
    free(g->shape);
    free(g);
}

static cudaKernelNodeParams node_params(ready_launch *r, void **argp)
{
    cudaKernelNodeParams p;
    memset(&p, 0, sizeof p);
    p.func = (void *)r->f;
    p.gridDim = dim3(r->grid, 1, 1);
    p.blockDim = r->block;
    p.sharedMemBytes = (unsigned int)r->dyn;
    argp[0] = &r->a;
    p.kernelParams = argp;
    return p;
}

extern "C" int tl_synth_graph_new(tl_synth *s, const tl_synth_launch *ls, size_t n, tl_synth_graph **out)
{
    *out = NULL;
    if (!n) return (int)cudaErrorInvalidValue;
    tl_synth_graph *g = (tl_synth_graph *)calloc(1, sizeof *g);
    if (!g) return (int)cudaErrorMemoryAllocation;
    g->n = n;
    g->nodes = (cudaGraphNode_t *)calloc(n, sizeof *g->nodes);
    g->args = (kargs *)calloc(n, sizeof *g->args);
    g->shape = (ready_launch *)calloc(n, sizeof *g->shape);
    int e = g->nodes && g->args && g->shape ? 0 : (int)cudaErrorMemoryAllocation;
    if (!e) e = (int)cudaGraphCreate(&g->graph, 0);
    cudaGraphNode_t prev = NULL;
    for (size_t i = 0; i < n && !e; i++) {
        if (ls[i].workers) e = (int)cudaErrorInvalidValue; /* PTB launches are not nodes */
        if (e || (e = prepare(s, &ls[i], true, &g->shape[i]))) break;
        g->args[i] = g->shape[i].a;
        void *argp[1];
        cudaKernelNodeParams p = node_params(&g->shape[i], argp);
        e = (int)cudaGraphAddKernelNode(&g->nodes[i], g->graph, prev ? &prev : NULL, prev ? 1 : 0, &p);
        prev = g->nodes[i];
        hist(s, ls[i].slot, e ? 'E' : 'L', &ls[i]);
    }
    /* Publish nodes after the last launch, one per TL_PUBLISH_CHUNK slots. */
    for (size_t at = 0; at < n && !e; at += TL_PUBLISH_CHUNK) {
        publish_list l;
        memset(&l, 0, sizeof l);
        l.n = (unsigned int)(n - at < TL_PUBLISH_CHUNK ? n - at : TL_PUBLISH_CHUNK);
        for (unsigned int i = 0; i < l.n; i++) {
            l.slot[i] = ls[at + i].slot;
            l.gen[i] = s->gen[ls[at + i].slot];
        }
        slot_dev *sl = s->slots;
        tl_synth_rec *rc = s->recs_d;
        void *argp[3] = {&l, &sl, &rc};
        cudaKernelNodeParams p;
        memset(&p, 0, sizeof p);
        p.func = (void *)k_publish;
        p.gridDim = dim3(1, 1, 1);
        p.blockDim = dim3(TL_PUBLISH_CHUNK, 1, 1);
        p.kernelParams = argp;
        cudaGraphNode_t node;
        e = (int)cudaGraphAddKernelNode(&node, g->graph, &prev, 1, &p);
        prev = node;
    }
    if (!e) e = (int)cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (e) {
        cudaGetLastError();
        tl_synth_graph_free(g);
        return e;
    }
    *out = g;
    return 0;
}

extern "C" int tl_synth_graph_set_iters(tl_synth_graph *g, size_t i, unsigned int iters)
{
    if (i >= g->n) return (int)cudaErrorInvalidValue;
    if (g->args[i].iters == iters) return 0;
    ready_launch r = g->shape[i];
    r.a = g->args[i];
    r.a.iters = iters;
    void *argp[1];
    cudaKernelNodeParams p = node_params(&r, argp);
    int e = (int)cudaGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &p);
    if (e) {
        cudaGetLastError();
        return e;
    }
    g->args[i].iters = iters;
    return 0;
}

extern "C" int tl_synth_graph_launch(tl_synth *s, tl_synth_graph *g, const unsigned int *slots, void *stream)
{
    for (size_t i = 0; i < g->n; i++) s->recs_h[slots[i]].gen = 0;
    cudaGetLastError();
    int e = (int)cudaGraphLaunch(g->exec, (cudaStream_t)stream);
    if (e) cudaGetLastError();
    return e;
}

extern "C" int tl_synth_retreat(tl_synth *s, unsigned int slot, void *ctl_stream)
{
    if (slot >= s->nslots) return (int)cudaErrorInvalidValue;
    s->retreat_src[slot] = s->gen[slot];
    hist(s, slot, 'T', NULL);
    return (int)cudaMemcpyAsync(&s->slots[slot].retreat_gen, &s->retreat_src[slot], sizeof(unsigned int),
                                cudaMemcpyHostToDevice, (cudaStream_t)ctl_stream);
}

extern "C" int tl_synth_clock_offset(tl_synth *s, long long *offset_ns)
{
    (void)s;
    volatile unsigned long long *pub = NULL;
    volatile int *stop = NULL;
    cudaError_t e;
    if ((e = cudaHostAlloc((void **)&pub, sizeof *pub, cudaHostAllocMapped))) return (int)e;
    if ((e = cudaHostAlloc((void **)&stop, sizeof *stop, cudaHostAllocMapped))) { cudaFreeHost((void *)pub); return (int)e; }
    *pub = 0;
    *stop = 0;
    unsigned long long *dpub;
    int *dstop;
    cudaHostGetDevicePointer((void **)&dpub, (void *)pub, 0);
    cudaHostGetDevicePointer((void **)&dstop, (void *)stop, 0);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    k_clock<<<1, 1, 0, st>>>(dpub, dstop, 50000000ull);
    e = cudaGetLastError();
    long long best = 0;
    int have = 0;
    long long t_begin = mono_ns();
    if (!e) {
        // Wait for the kernel to start publishing (at most 1 s).
        while (*pub == 0 && mono_ns() - t_begin < 1000000000LL) {}
        for (int i = 0; i < 20000 && *pub; i++) {
            unsigned long long g = *pub;
            long long h = mono_ns();
            long long off = (long long)g - h; // g was written no later than h
            if (!have || off > best) { best = off; have = 1; }
        }
    }
    *stop = 1;
    cudaError_t e2 = cudaStreamSynchronize(st);
    cudaStreamDestroy(st);
    cudaFreeHost((void *)pub);
    cudaFreeHost((void *)stop);
    if (e) return (int)e;
    if (e2) return (int)e2;
    if (!have) return (int)cudaErrorLaunchTimeout;
    *offset_ns = best;
    return 0;
}

extern "C" int tl_synth_timer_resolution(tl_synth *s, long long *ns)
{
    unsigned long long *d, h = 0;
    cudaError_t e = cudaMalloc(&d, sizeof *d);
    if (e) return (int)e;
    k_resolution<<<1, 1>>>(d);
    e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e) return (int)e;
    *ns = (long long)h;
    (void)s;
    return 0;
}

extern "C" const char *tl_synth_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
