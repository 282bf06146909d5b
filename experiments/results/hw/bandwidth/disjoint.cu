// Do kernels on disjoint SMs slow each other through DRAM bandwidth (H100)?
// The simulator's contention is per SM only (sim/README.md, "Contention");
// session 13 found training's memory-bound kernels slowed 1.9-5.7x beside
// ViT-B/16 on the H100 when the two kernels' blocks were kept on different SMs
// (../session13/README.md, "A lead"). Here each block takes a whole SM (it asks
// for 200 KB of dynamic shared memory, so one fits an SM), so a kernel of n
// blocks holds exactly n SMs and two kernels launched together hold disjoint
// ones. The victim, a streaming kernel (float4 loads through 1 GiB, 1024
// threads a block) on 66 SMs, runs alone and beside a second kernel on the other
// 66, 33 or 16 SMs: streaming (memory), FMA chains (compute), or streaming
// through 8 MiB (L2-resident). Printed: the victim's time and its slowdown,
// medians of 5. The victim also runs on 16, 33 and 132 SMs alone (its
// bandwidth by SM count).
//   nvcc -O2 -arch=sm_90 -o disjoint disjoint.cu && ./disjoint
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#include "../spin.cuh"

__device__ float g_sink;
static const size_t SMEM = 200 * 1024;

__global__ void k_stream(const float4 *buf, unsigned long long mask, unsigned iters, unsigned long long *t)
{
    extern __shared__ float s[];
    unsigned long long t0 = gt();
    unsigned long long idx = ((unsigned long long)blockIdx.x * blockDim.x * 64 + threadIdx.x) & mask;
    float acc = 0;
    for (unsigned i = 0; i < iters; i++) {
        float4 v = __ldcs(&buf[idx]);
        acc += v.x + v.y + v.z + v.w;
        idx = (idx + (unsigned long long)gridDim.x * blockDim.x) & mask;
    }
    if (threadIdx.x == 0) s[0] = acc;
    __syncthreads();
    if (s[0] == 12345.0f) g_sink = acc;
    if (threadIdx.x == 0) {
        atomicMin(&t[0], t0);
        atomicMax(&t[1], gt());
    }
}

__global__ void k_fma(unsigned iters, unsigned long long *t)
{
    extern __shared__ float s[];
    unsigned long long t0 = gt();
    float a = threadIdx.x * 1e-3f, b = 0.5f, c = 0.25f, d = 0.125f;
    for (unsigned i = 0; i < iters; i++) {
        a = fmaf(a, 0.9999f, 0.5f);
        b = fmaf(b, 0.9999f, 0.5f);
        c = fmaf(c, 0.9999f, 0.5f);
        d = fmaf(d, 0.9999f, 0.5f);
    }
    if (threadIdx.x == 0) s[0] = a + b + c + d;
    __syncthreads();
    if (s[0] == 12345.0f) g_sink = a;
    if (threadIdx.x == 0) {
        atomicMin(&t[0], t0);
        atomicMax(&t[1], gt());
    }
}

static float4 *g_big, *g_small;
static const unsigned long long BIG4 = (1ull << 30) / 16, SMALL4 = (8ull << 20) / 16;
static unsigned long long *g_t; // [0..1] victim, [32..33] other

enum { OTHER_NONE, OTHER_MEM, OTHER_CMP, OTHER_L2 };

static void reset()
{
    unsigned long long h[64];
    for (int i = 0; i < 64; i++) h[i] = (i % 32 == 0) ? ~0ull : 0;
    cudaMemcpy(g_t, h, sizeof h, cudaMemcpyHostToDevice);
}

static double span(int which)
{
    unsigned long long h[64];
    cudaMemcpy(h, g_t, sizeof h, cudaMemcpyDeviceToHost);
    return (h[which * 32 + 1] - h[which * 32]) / 1e3;
}

// The victim on vsms SMs (iters loads a thread), the other on osms SMs.
static double run(int vsms, unsigned viters, int other, int osms, unsigned oiters, cudaStream_t a, cudaStream_t b)
{
    std::vector<double> v;
    for (int r = 0; r < 6; r++) {
        reset();
        if (other == OTHER_MEM)
            k_stream<<<osms, 1024, SMEM, b>>>(g_big + BIG4 / 2, BIG4 / 2 - 1, oiters, g_t + 32);
        else if (other == OTHER_CMP)
            k_fma<<<osms, 1024, SMEM, b>>>(oiters, g_t + 32);
        else if (other == OTHER_L2)
            k_stream<<<osms, 1024, SMEM, b>>>(g_small, SMALL4 - 1, oiters, g_t + 32);
        k_stream<<<vsms, 1024, SMEM, a>>>(g_big, BIG4 / 2 - 1, viters, g_t);
        cudaDeviceSynchronize();
        if (r) v.push_back(span(0));
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    cudaFuncSetAttribute(k_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM);
    cudaFuncSetAttribute(k_fma, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM);
    cudaMalloc(&g_big, BIG4 * 16);
    cudaMalloc(&g_small, SMALL4 * 16);
    cudaMemset(g_big, 0, BIG4 * 16);
    cudaMemset(g_small, 0, SMALL4 * 16);
    cudaMalloc(&g_t, 64 * sizeof *g_t);
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    const unsigned VIT = 400, OIT = 4000; // the other runs ~10x longer
    printf("victim alone (streaming, 1024 threads an SM, %u loads a thread):\n", VIT);
    for (int n : {16, 33, 66, 132}) {
        double t = run(n, VIT, OTHER_NONE, 0, 0, a, b);
        double gbs = (double)n * 1024 * VIT * 16 / (t * 1e3);
        printf("  on %3d SMs: %8.1f us, %6.0f GB/s\n", n, t, gbs);
    }
    double alone = run(66, VIT, OTHER_NONE, 0, 0, a, b);
    const char *names[] = {"", "streaming (DRAM)", "FMA (compute)", "streaming 8 MiB (L2)"};
    for (int o = OTHER_MEM; o <= OTHER_L2; o++)
        for (int n : {16, 33, 66}) {
            double t = run(66, VIT, o, n, o == OTHER_CMP ? 200000 : OIT, a, b);
            reset();
            printf("victim on 66 SMs beside %-22s on %2d other SMs: %8.1f us (x%.2f of alone %.1f)\n", names[o], n, t,
                   t / alone, alone);
        }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
