// Where and when an inference-like kernel's blocks are placed beside other
// kernels' blocks (H100). ../contention_shapes found a 504-block compute kernel
// placed over 16-62 us beside training-like sequences, at a greater stream
// priority too, and even beside one-wave compute kernels that leave three
// quarters of each SM's threads free, where the published rules (FACTS.md:
// a greater-priority block is dispatched first each time a block ends;
// placement needs only free resources) say it starts at once. Here every block
// of both kernels records its SM, start and end, so each victim block's start
// can be set against the other kernels' block ends on its own SM.
//
// Scenarios (NAME victim-shape background priority):
//   the victim: FMA chains, B blocks of T threads, ~32 us alone (one wave)
//   backgrounds, launched first on their own stream (least priority unless
//   said), the victim 350 us later on a stream of greatest priority ("greater"),
//   of least priority ("same"), or the background on greatest and the victim
//   on least ("lesser"):
//     cmp-seq     20 compute kernels of 264 x 256 (one wave, 2 blocks an SM), ~100 us
//     cmp-one     one such kernel, longer (~600 us): nothing queued behind it
//     memlong-seq 20 streaming kernels of 6272 x 256, ~92 us (blocks ~15 us)
//     mem-seq     100 streaming kernels of 6272 x 256, ~20 us (blocks ~1-2 us)
//     tiny-one    one spin kernel of 132 x 64 (one block an SM), 600 us
//     half-one    one spin kernel of 132 x 1024 (half of every SM's threads), 600 us
//     spin264-one one spin kernel of 264 x 256 (cmp-one's shape), 600 us
// An optional second argument runs only the scenarios whose names contain it;
// a third, "carveout", sets every kernel's preferred shared-memory carveout to
// the same value first (cudaFuncAttributePreferredSharedMemoryCarveout 50).
// Output: OUT/summary.txt (medians over reps) and OUT/blocks.csv (every victim
// block; background blocks from 30 us before the victim's first block to
// 30 us after its last end): scenario,rep,kernel,block,sm,start_ns,end_ns
// (kernel -1: the victim; start/end relative to the victim's first block).
//   nvcc -O2 -arch=sm_90 -o placement placement.cu && ./placement OUTDIR
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#include "../spin.cuh"

__device__ float g_sink;

__device__ __forceinline__ unsigned int smid()
{
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// rec: three words a block (SM, start, end)
__device__ __forceinline__ void rec_start(unsigned long long *rec, unsigned long long *t0)
{
    if (threadIdx.x == 0) *t0 = gt();
}

__device__ __forceinline__ void rec_end(unsigned long long *rec, unsigned long long t0)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long *r = rec + 3 * blockIdx.x;
        r[0] = smid();
        r[1] = t0;
        r[2] = gt();
    }
}

__global__ void fma_rec(unsigned int iters, unsigned long long *rec)
{
    __shared__ unsigned long long t0;
    rec_start(rec, &t0);
    float a = threadIdx.x * 1e-3f, b = blockIdx.x * 1e-3f, c = 0.5f, d = 0.25f;
    for (unsigned int i = 0; i < iters; i++) {
        a = fmaf(a, 0.9999f, 0.5f);
        b = fmaf(b, 0.9999f, 0.5f);
        c = fmaf(c, 0.9999f, 0.5f);
        d = fmaf(d, 0.9999f, 0.5f);
    }
    if (a + b + c + d == 12345.0f) g_sink = a;
    rec_end(rec, t0);
}

// Streaming loads through a buffer larger than L2 (mask: n4 a power of two, so
// the index costs one AND, not a 64-bit modulo).
__global__ void mem_rec(unsigned int iters, const float4 *buf, unsigned int mask, unsigned long long *rec)
{
    __shared__ unsigned long long t0;
    rec_start(rec, &t0);
    unsigned int idx = (blockIdx.x * blockDim.x * iters + threadIdx.x) & mask;
    float s = 0;
    for (unsigned int i = 0; i < iters; i++) {
        float4 v = __ldg(&buf[idx]);
        s += v.x + v.y + v.z + v.w;
        idx = (idx + blockDim.x) & mask;
    }
    if (s == 12345.0f) g_sink = s;
    rec_end(rec, t0);
}

__global__ void spin_rec(unsigned long long ns, unsigned long long *rec)
{
    __shared__ unsigned long long t0;
    rec_start(rec, &t0);
    __syncthreads();
    while (gt() - t0 < ns) {}
    rec_end(rec, t0);
}

enum kind { CMP, MEM, SPIN };
struct shape {
    const char *name;
    kind k;
    unsigned int blocks, threads;
    double target_us; // one kernel alone
    int count;        // kernels in the sequence
    unsigned int iters;
};

static float4 *g_buf;
static const unsigned int N4 = (256u << 20) / sizeof(float4);

static void launch1(const shape &s, cudaStream_t st, unsigned long long *rec)
{
    if (s.k == MEM)
        mem_rec<<<s.blocks, s.threads, 0, st>>>(s.iters, g_buf, N4 - 1, rec);
    else if (s.k == CMP)
        fma_rec<<<s.blocks, s.threads, 0, st>>>(s.iters, rec);
    else
        spin_rec<<<s.blocks, s.threads, 0, st>>>((unsigned long long)(s.target_us * 1e3), rec);
}

static std::vector<unsigned long long> fetch(unsigned long long *rec, size_t blocks)
{
    std::vector<unsigned long long> h(3 * blocks);
    cudaMemcpy(h.data(), rec, h.size() * sizeof h[0], cudaMemcpyDeviceToHost);
    return h;
}

static double kernel_us(const std::vector<unsigned long long> &h, size_t blocks)
{
    unsigned long long lo = ~0ull, hi = 0;
    for (size_t b = 0; b < blocks; b++) lo = std::min(lo, h[3 * b + 1]), hi = std::max(hi, h[3 * b + 2]);
    return (hi - lo) / 1e3;
}

static double alone_us(const shape &s, cudaStream_t st, unsigned long long *rec)
{
    std::vector<double> v;
    for (int r = 0; r < 5; r++) {
        launch1(s, st, rec);
        cudaStreamSynchronize(st);
        v.push_back(kernel_us(fetch(rec, s.blocks), s.blocks));
    }
    std::sort(v.begin(), v.end());
    return v[2];
}

static void calibrate(shape &s, cudaStream_t st, unsigned long long *rec)
{
    if (s.k == SPIN) return;
    s.iters = s.k == MEM ? 2 : 64;
    for (int step = 0; step < 12; step++) {
        double t = alone_us(s, st, rec);
        if (t > 0.97 * s.target_us && t < 1.03 * s.target_us) break;
        double next = s.iters * s.target_us / (t > 0.1 ? t : 0.1);
        s.iters = (unsigned int)std::max(1.0, std::min(next, 1e8));
    }
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : ".";
    int least, greatest;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    cudaMalloc(&g_buf, (size_t)N4 * sizeof(float4));
    cudaMemset(g_buf, 0, (size_t)N4 * sizeof(float4));
    if (argc > 3 && !strcmp(argv[3], "carveout")) {
        cudaFuncSetAttribute(fma_rec, cudaFuncAttributePreferredSharedMemoryCarveout, 50);
        cudaFuncSetAttribute(mem_rec, cudaFuncAttributePreferredSharedMemoryCarveout, 50);
        cudaFuncSetAttribute(spin_rec, cudaFuncAttributePreferredSharedMemoryCarveout, 50);
    }
    cudaStream_t lo, hi, lo2;
    cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least);
    cudaStreamCreateWithPriority(&lo2, cudaStreamNonBlocking, least);
    cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest);
    shape v64 = {"v64x504", CMP, 504, 64, 32, 1, 0}, v256 = {"v256x132", CMP, 132, 256, 32, 1, 0};
    shape bgs[] = {{"cmp-seq", CMP, 264, 256, 100, 20, 0},
                   {"cmp-one", CMP, 264, 256, 600, 1, 0},
                   {"memlong-seq", MEM, 6272, 256, 92, 20, 0},
                   {"mem-seq", MEM, 6272, 256, 20, 100, 0},
                   {"tiny-one", SPIN, 132, 64, 600, 1, 0},
                   {"half-one", SPIN, 132, 1024, 600, 1, 0},
                   {"spin264-one", SPIN, 264, 256, 600, 1, 0}};
    size_t maxrec = 0;
    for (auto &b : bgs) maxrec = std::max(maxrec, (size_t)b.blocks * b.count);
    unsigned long long *vrec, *brec;
    cudaMalloc(&vrec, 3 * 504 * sizeof *vrec);
    cudaMalloc(&brec, 3 * maxrec * sizeof *brec);
    calibrate(v64, hi, vrec);
    calibrate(v256, hi, vrec);
    for (auto &b : bgs) calibrate(b, lo, brec);
    std::string sp = std::string(out) + "/summary.txt", bp = std::string(out) + "/blocks.csv";
    FILE *sf = fopen(sp.c_str(), "w"), *bf = fopen(bp.c_str(), "w");
    if (!sf || !bf) { perror(out); return 1; }
    fprintf(bf, "scenario,rep,kernel,block,sm,start_ns,end_ns\n");
    for (shape *v : {&v64, &v256}) {
        auto h = (launch1(*v, hi, vrec), cudaDeviceSynchronize(), fetch(vrec, v->blocks));
        fprintf(sf, "%s alone %.1f us (%u iters)\n", v->name, alone_us(*v, hi, vrec), v->iters);
    }
    for (auto &b : bgs)
        fprintf(sf, "%s alone %.1f us a kernel (%u iters), %d of them\n", b.name, alone_us(b, lo, brec), b.iters, b.count);
    struct scen { const char *name; shape *v; int bg; const char *prio; } sc[] = {
        {"cmp-seq/v64/greater", &v64, 0, "greater"}, {"cmp-seq/v64/same", &v64, 0, "same"},
        {"cmp-seq/v64/lesser", &v64, 0, "lesser"},   {"cmp-seq/v256/greater", &v256, 0, "greater"},
        {"cmp-one/v64/greater", &v64, 1, "greater"}, {"memlong-seq/v64/greater", &v64, 2, "greater"},
        {"memlong-seq/v256/greater", &v256, 2, "greater"}, {"mem-seq/v64/greater", &v64, 3, "greater"},
        {"mem-seq/v64/same", &v64, 3, "same"},       {"tiny-one/v64/greater", &v64, 4, "greater"},
        {"half-one/v64/greater", &v64, 5, "greater"}, {"spin264-one/v64/greater", &v64, 6, "greater"}};
    const char *only = argc > 2 ? argv[2] : "";
    for (auto &s : sc) {
        if (!strstr(s.name, only))
            continue;
        shape &b = bgs[s.bg];
        bool lesser = !strcmp(s.prio, "lesser"), same = !strcmp(s.prio, "same");
        cudaStream_t bst = lesser ? hi : lo, vst = lesser ? lo2 : same ? lo2 : hi;
        std::vector<double> span, spread, blk, delay;
        for (int r = 0; r < 4; r++) {
            cudaMemset(brec, 0, 3 * (size_t)b.blocks * b.count * sizeof *brec);
            cudaMemset(vrec, 0, 3 * 504 * sizeof *vrec);
            cudaDeviceSynchronize();
            for (int i = 0; i < b.count; i++) launch1(b, bst, brec + 3 * (size_t)i * b.blocks);
            cudaStreamQuery(bst);
            double t0 = now_us();
            while (now_us() - t0 < 350) {}
            launch1(*s.v, vst, vrec);
            cudaError_t e = cudaDeviceSynchronize();
            if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", s.name, cudaGetErrorString(e)); return 1; }
            auto vh = fetch(vrec, s.v->blocks);
            auto bh = fetch(brec, (size_t)b.blocks * b.count);
            unsigned long long first = ~0ull, last_start = 0, last_end = 0;
            std::vector<double> d;
            for (unsigned int i = 0; i < s.v->blocks; i++) {
                first = std::min(first, vh[3 * i + 1]);
                last_start = std::max(last_start, vh[3 * i + 1]);
                last_end = std::max(last_end, vh[3 * i + 2]);
                d.push_back((vh[3 * i + 2] - vh[3 * i + 1]) / 1e3);
            }
            span.push_back((last_end - first) / 1e3);
            spread.push_back((last_start - first) / 1e3);
            blk.push_back(median(d));
            // each victim block's start after the latest background block end
            // on its SM before it (how long it waited past a freed slot)
            std::vector<double> w;
            for (unsigned int i = 0; i < s.v->blocks; i++) {
                unsigned long long sm = vh[3 * i], st = vh[3 * i + 1], best = 0;
                for (size_t j = 0; j < (size_t)b.blocks * b.count; j++)
                    if (bh[3 * j] == sm && bh[3 * j + 2] <= st && bh[3 * j + 2] > best) best = bh[3 * j + 2];
                if (best && st - best < 1000000) w.push_back((st - best) / 1e3);
            }
            delay.push_back(median(w));
            for (unsigned int i = 0; i < s.v->blocks; i++)
                fprintf(bf, "%s,%d,-1,%u,%llu,%lld,%lld\n", s.name, r, i, vh[3 * i],
                        (long long)(vh[3 * i + 1] - first), (long long)(vh[3 * i + 2] - first));
            for (size_t j = 0; j < (size_t)b.blocks * b.count; j++) {
                if (!bh[3 * j + 1]) continue;
                long long st = (long long)(bh[3 * j + 1] - first), en = (long long)(bh[3 * j + 2] - first);
                if (en < -30000 || st > (long long)(last_end - first) + 30000) continue;
                fprintf(bf, "%s,%d,%zu,%zu,%llu,%lld,%lld\n", s.name, r, j / b.blocks, j % b.blocks, bh[3 * j], st, en);
            }
        }
        fprintf(sf, "%-26s victim span %6.1f us, last block started %5.1f us after the first, blocks %5.1f us, "
                    "median wait after a freed slot on its SM %5.1f us (medians of 4)\n",
                s.name, median(span), median(spread), median(blk), median(delay));
    }
    fclose(bf);
    fclose(sf);
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
