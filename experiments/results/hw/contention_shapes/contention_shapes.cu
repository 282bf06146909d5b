// An inference-like compute kernel beside training-like kernels of realistic
// shapes (H100). The replay of ViT-B/16 beside ResNet-50 training under
// priority streams slowed ViT's GEMMs 1.7-3.6x, the simulator not at all
// (../tally_gap/README.md); the co-runs the simulator's contention model is
// fitted to (../contention.csv) are one wave of 256-thread blocks each. Here:
//   victim   compute (FMA chains), 504 blocks of 64 threads, one wave, ~32 us
//            alone (the shape of ViT's xmma_gemm 32x32)
//   mem      100 memory kernels (streaming float4 loads through 256 MiB) of
//            6272 blocks of 256 threads, ~20 us each alone (a ResNet-50
//            elementwise kernel; 2 loads a thread: blocks of under 1 us),
//            back to back
//   mem-long 20 of the same shape, ~92 us each (blocks of ~15 us)
//   cmp      20 compute kernels of 264 blocks of 256 threads (one wave, two
//            blocks an SM), ~100 us each (a training GEMM's long blocks)
// The other sequence starts first on a least-priority stream; 350 us later
// the victim is launched on a greatest-priority stream (or on one of the same
// priority). Printed: the victim's span (first block start to last block
// end), how late its first block started, and the sequence's span, medians
// of 5 runs; then how long after its first block its last one started and
// its blocks' median duration (each victim block records its own times). The simulator's answer for the same shapes: sim.txt.
//   nvcc -O2 -arch=sm_90 -o cs contention_shapes.cu && ./cs
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#include "../spin.cuh"

__device__ float g_sink;

__device__ __forceinline__ void stamp_start(unsigned long long *start)
{
    if (threadIdx.x == 0) atomicMin(start, gt());
}

__device__ __forceinline__ void stamp_end(unsigned long long *end)
{
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(end, gt());
}

// blk (the victim only): each block's own start and end, two words a block.
__global__ void fma_span(unsigned int iters, unsigned long long *start, unsigned long long *end,
                         unsigned long long *blk)
{
    stamp_start(start);
    unsigned long long b0 = gt();
    float a = threadIdx.x * 1e-3f, b = blockIdx.x * 1e-3f, c = 0.5f, d = 0.25f;
    for (unsigned int i = 0; i < iters; i++) {
        a = fmaf(a, 0.9999f, 0.5f);
        b = fmaf(b, 0.9999f, 0.5f);
        c = fmaf(c, 0.9999f, 0.5f);
        d = fmaf(d, 0.9999f, 0.5f);
    }
    if (a + b + c + d == 12345.0f) g_sink = a;
    stamp_end(end);
    if (blk && threadIdx.x == 0) {
        blk[2 * blockIdx.x] = b0;
        blk[2 * blockIdx.x + 1] = gt();
    }
}

__global__ void stream_span(unsigned int iters, const float4 *buf, unsigned long long n4,
                            unsigned long long *start, unsigned long long *end)
{
    stamp_start(start);
    unsigned long long idx = ((unsigned long long)blockIdx.x * blockDim.x * iters + threadIdx.x) % n4;
    float s = 0;
    for (unsigned int i = 0; i < iters; i++) {
        float4 v = __ldg(&buf[idx]);
        s += v.x + v.y + v.z + v.w;
        idx = (idx + blockDim.x) % n4;
    }
    if (s == 12345.0f) g_sink = s;
    stamp_end(end);
}

struct shape {
    const char *name;
    bool memory;
    unsigned int blocks, threads;
    double target_us;           // one kernel alone
    int count;                  // kernels in the sequence
    unsigned int iters;
};

static float4 *g_buf;
static const unsigned long long N4 = (256ull << 20) / sizeof(float4);
// [2 * PAD]: the victim's at 0, the other's at PAD (a line apart, so that the
// two kernels' stamp atomics never meet on one line)
static const int PAD = 32;
static unsigned long long *g_st, *g_en, *g_blk; // g_blk: the victim's blocks

static void launch(const shape &k, int which, cudaStream_t s, int count = 1)
{
    for (int i = 0; i < count; i++) {
        if (k.memory)
            stream_span<<<k.blocks, k.threads, 0, s>>>(k.iters, g_buf, N4, g_st + which * PAD, g_en + which * PAD);
        else
            fma_span<<<k.blocks, k.threads, 0, s>>>(k.iters, g_st + which * PAD, g_en + which * PAD,
                                                    which == 0 ? g_blk : nullptr);
    }
}

static unsigned long long start_of(int which)
{
    unsigned long long st[2 * PAD];
    cudaMemcpy(st, g_st, sizeof st, cudaMemcpyDeviceToHost);
    return st[which * PAD];
}

static void reset(cudaStream_t s)
{
    unsigned long long init_st[2 * PAD], init_en[2 * PAD];
    for (int i = 0; i < 2 * PAD; i++) init_st[i] = ~0ull, init_en[i] = 0;
    cudaMemcpyAsync(g_st, init_st, sizeof init_st, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(g_en, init_en, sizeof init_en, cudaMemcpyHostToDevice, s);
    cudaStreamSynchronize(s);
}

static double span_us(int which)
{
    unsigned long long st[2 * PAD], en[2 * PAD];
    cudaMemcpy(st, g_st, sizeof st, cudaMemcpyDeviceToHost);
    cudaMemcpy(en, g_en, sizeof en, cudaMemcpyDeviceToHost);
    return (double)(en[which * PAD] - st[which * PAD]) / 1e3;
}

// The victim's blocks (after a run): how long after its first block its last
// one started, and its blocks' median duration, us.
static void victim_blocks(unsigned int n, double *spread_us, double *block_us)
{
    std::vector<unsigned long long> b(2 * n);
    cudaMemcpy(b.data(), g_blk, b.size() * sizeof b[0], cudaMemcpyDeviceToHost);
    unsigned long long lo = ~0ull, hi = 0;
    std::vector<double> d;
    for (unsigned int i = 0; i < n; i++) {
        lo = std::min(lo, b[2 * i]);
        hi = std::max(hi, b[2 * i]);
        d.push_back((double)(b[2 * i + 1] - b[2 * i]) / 1e3);
    }
    std::sort(d.begin(), d.end());
    *spread_us = (double)(hi - lo) / 1e3;
    *block_us = d[n / 2];
}

static double alone_us(const shape &k, cudaStream_t s)
{
    std::vector<double> v;
    for (int r = 0; r < 6; r++) {
        reset(s);
        launch(k, 0, s);
        cudaStreamSynchronize(s);
        if (r) v.push_back(span_us(0));
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static void calibrate(shape &k, cudaStream_t s)
{
    k.iters = 64;
    for (int step = 0; step < 10; step++) {
        double t = alone_us(k, s);
        if (t > 0.97 * k.target_us && t < 1.03 * k.target_us) break;
        double next = k.iters * k.target_us / (t > 0.1 ? t : 0.1);
        k.iters = (unsigned int)std::max(1.0, std::min(next, 1e8));
    }
}

int main()
{
    int least, greatest;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    cudaMalloc(&g_buf, N4 * sizeof(float4));
    cudaMemset(g_buf, 0, N4 * sizeof(float4));
    cudaMalloc(&g_st, 2 * PAD * sizeof *g_st);
    cudaMalloc(&g_en, 2 * PAD * sizeof *g_en);
    cudaStream_t lo, hi, mid;
    cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least);
    cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest);
    cudaStreamCreateWithPriority(&mid, cudaStreamNonBlocking, least);
    shape victim = {"victim", false, 504, 64, 32, 1, 0};
    cudaMalloc(&g_blk, 2 * victim.blocks * sizeof *g_blk);
    shape others[3] = {{"mem", true, 6272, 256, 20, 100, 0},
                       {"mem-long", true, 6272, 256, 100, 20, 0},
                       {"cmp", false, 264, 256, 100, 20, 0}};
    calibrate(victim, hi);
    for (auto &o : others) calibrate(o, lo);
    double v_alone = alone_us(victim, hi), spread, blk;
    victim_blocks(victim.blocks, &spread, &blk);
    printf("victim alone %.1f us (%u iters; last block started %.1f us after the first; blocks %.1f us)\n",
           v_alone, victim.iters, spread, blk);
    for (auto &o : others)
        printf("%s alone %.1f us a kernel (%u iters), %d of them\n", o.name, alone_us(o, lo), o.iters, o.count);
    for (auto &o : others)
        for (int same_prio = 0; same_prio < 2; same_prio++) {
            std::vector<double> vs, os, late, spreads, blks;
            for (int r = 0; r < 6; r++) {
                reset(lo);
                launch(o, 1, lo, o.count);
                cudaStreamQuery(lo); // hand the launches to the GPU now
                double t0 = now_us();
                while (now_us() - t0 < 350) {}
                launch(victim, 0, same_prio ? mid : hi);
                cudaDeviceSynchronize();
                if (!r) continue;
                vs.push_back(span_us(0));
                os.push_back(span_us(1));
                late.push_back((double)(start_of(0) - start_of(1)) / 1e3 - 350);
                victim_blocks(victim.blocks, &spread, &blk);
                spreads.push_back(spread);
                blks.push_back(blk);
            }
            std::sort(vs.begin(), vs.end());
            std::sort(os.begin(), os.end());
            std::sort(late.begin(), late.end());
            std::sort(spreads.begin(), spreads.end());
            std::sort(blks.begin(), blks.end());
            double v = vs[vs.size() / 2];
            printf("beside %s, victim %s priority: victim %.1f us (x%.2f; min-max of 5: %.1f-%.1f), first block "
                   "%.1f us after 350 us into the sequence (approx.), sequence %.1f us\n",
                   o.name, same_prio ? "the same" : "greater", v, v / v_alone, vs.front(), vs.back(),
                   late[late.size() / 2], os[os.size() / 2]);
            printf("    its last block started %.1f us after its first; its blocks took %.1f us (medians)\n",
                   spreads[spreads.size() / 2], blks[blks.size() / 2]);
        }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
