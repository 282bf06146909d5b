// disjoint2: a second look at kernels on disjoint SMs (H100); see README.md.
// ../bandwidth/disjoint.cu found a streaming victim on 66 SMs faster beside an
// FMA kernel (x0.84) or an L2-resident one (x0.90) than "alone", so its alone
// baseline is suspect: alone, the victim may sit on other SMs (another spread
// over the GPCs) than beside a kernel that holds half the GPU, or the clocks
// may differ. Here:
//  - every block records its %smid, its start and end (%globaltimer) and its
//    SM clock (clock64) at both, so each run gives the victim's span, the SMs
//    it used and its SMs' clock rate;
//  - the baseline is a neighbour that holds the same SMs and does nothing
//    (`idle`: its blocks __nanosleep until a deadline), so the victim lands on
//    the same SM set as beside a working neighbour;
//  - the victim is either streaming (`stream`) or compute (`fma`), to see
//    whether compute kernels on disjoint SMs slow each other (power, clocks);
//  - a 300 ms FMA warm-up on all SMs comes first, and the configurations are
//    run interleaved in a seeded shuffled order.
// Each block asks for 200 KB of dynamic shared memory, so one block fits an SM
// and a kernel of n blocks holds exactly n SMs. Neighbours are launched first
// on another stream and run for a fixed time from each block's start (10x the
// victim's target); the victim runs a fixed amount of work, calibrated at the
// start to take ~150 us alone on 66 SMs.
//   nvcc -O2 -arch=sm_90 -o disjoint2 disjoint2.cu && ./disjoint2 OUTDIR [reps=7] [seed=N] [target_us=150] [lead_us=0]
// lead_us > 0 puts a one-block spin of that length on the victim's stream
// between the neighbour's launch and the victim's, so the victim starts that
// much into the neighbour (the neighbour then lasts lead + 10x target).
// Writes OUTDIR/summary.txt and OUTDIR/runs.csv (one row per repetition).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/time.h>
#include <time.h>
#include <vector>
#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "disjoint2: %s failed at line %d: %s\n", #call, __LINE__,               \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
// after a kernel launch: the launch error, naming the kernel
#define CKL(what)                                                                                  \
    do {                                                                                           \
        cudaError_t e_ = cudaGetLastError();                                                       \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "disjoint2: launch of %s failed at line %d: %s\n", what, __LINE__,      \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef unsigned long long u64;

static const size_t SMEM = 200 * 1024;
static const int THREADS = 1024;
static const u64 BIG4 = (1ull << 30) / 16;   // float4s in the 1 GiB buffer
static const u64 HALF4 = BIG4 / 2;           // victim: first half; stream neighbour: second half
static const u64 SMALL4 = (8ull << 20) / 16; // 8 MiB, L2-resident
static const int MAXB = 1024;                // record slots per kernel

struct Rec {
    u64 t0, t1; // globaltimer at block start / end (ns)
    long long c0, c1; // clock64 at block start / end
    unsigned smid, done;
};

__device__ float g_sink;

__device__ __forceinline__ u64 gt()
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned smid()
{
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// Thread 0 stamps the block's start into shared memory (before any thread
// works), and its end after every thread has finished (the barrier follows a
// store that depends on each thread's result).
__device__ __forceinline__ void stamp_start(u64 *sh)
{
    if (threadIdx.x == 0) {
        sh[0] = gt();
        sh[1] = (u64)clock64();
    }
    __syncthreads();
}

__device__ __forceinline__ void stamp_end(const u64 *sh, Rec *rec)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        Rec r;
        r.c1 = clock64();
        r.t1 = gt();
        r.t0 = sh[0];
        r.c0 = (long long)sh[1];
        r.smid = smid();
        r.done = 1;
        rec[blockIdx.x] = r;
    }
}

// ------------------------------------------------------------------ victims
// Fixed work: iters float4 loads a thread (like ../bandwidth/disjoint.cu's k_stream).
__global__ void __launch_bounds__(1024) v_stream(const float4 *buf, u64 mask, unsigned iters, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    u64 idx = ((u64)blockIdx.x * blockDim.x * 64 + threadIdx.x) & mask;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    float acc = 0;
    for (unsigned i = 0; i < iters; i++) {
        float4 v = __ldcs(&buf[idx]);
        acc += v.x + v.y + v.z + v.w;
        idx = (idx + stride) & mask;
    }
    if (acc == 12345.0f) g_sink = acc;
    stamp_end(sh, rec);
}

// Fixed work: iters x 4 independent FMA chains a thread (like k_fma).
__global__ void __launch_bounds__(1024) v_fma(unsigned iters, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    float a = threadIdx.x * 1e-3f, b = 0.5f, c = 0.25f, d = 0.125f;
    for (unsigned i = 0; i < iters; i++) {
        a = fmaf(a, 0.9999f, 0.5f);
        b = fmaf(b, 0.9999f, 0.5f);
        c = fmaf(c, 0.9999f, 0.5f);
        d = fmaf(d, 0.9999f, 0.5f);
    }
    float r = a + b + c + d;
    if (r == 12345.0f) g_sink = r;
    stamp_end(sh, rec);
}

// ---------------------------------------------------------------- neighbours
// Each block works until ns after its own start (checking the timer every chunk).
enum { NB_NONE, NB_IDLE, NB_STREAM, NB_FMA, NB_L2, NB_N };
static const char *NB_NAME[NB_N] = {"none", "idle", "stream", "fma", "l2"};

__global__ void __launch_bounds__(1024) n_idle(u64 ns, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    const u64 t0 = sh[0];
    while (gt() - t0 < ns) __nanosleep(2000);
    stamp_end(sh, rec);
}

__global__ void __launch_bounds__(1024) n_stream(const float4 *buf, u64 mask, u64 ns, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    const u64 t0 = sh[0];
    u64 idx = ((u64)blockIdx.x * blockDim.x * 64 + threadIdx.x) & mask;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    float acc = 0;
    do {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float4 v = __ldcs(&buf[idx]);
            acc += v.x + v.y + v.z + v.w;
            idx = (idx + stride) & mask;
        }
    } while (gt() - t0 < ns);
    if (acc == 12345.0f) g_sink = acc;
    stamp_end(sh, rec);
}

// The L2 neighbour: ordinary (cached) loads through the 8 MiB buffer.
__global__ void __launch_bounds__(1024) n_l2(const float4 *buf, u64 mask, u64 ns, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    const u64 t0 = sh[0];
    u64 idx = ((u64)blockIdx.x * blockDim.x * 64 + threadIdx.x) & mask;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    float acc = 0;
    do {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float4 v = __ldcg(&buf[idx]);
            acc += v.x + v.y + v.z + v.w;
            idx = (idx + stride) & mask;
        }
    } while (gt() - t0 < ns);
    if (acc == 12345.0f) g_sink = acc;
    stamp_end(sh, rec);
}

__global__ void __launch_bounds__(1024) n_fma(u64 ns, Rec *rec)
{
    extern __shared__ u64 sh[];
    stamp_start(sh);
    const u64 t0 = sh[0];
    float a = threadIdx.x * 1e-3f, b = 0.5f, c = 0.25f, d = 0.125f;
    do {
#pragma unroll 16
        for (int j = 0; j < 256; j++) {
            a = fmaf(a, 0.9999f, 0.5f);
            b = fmaf(b, 0.9999f, 0.5f);
            c = fmaf(c, 0.9999f, 0.5f);
            d = fmaf(d, 0.9999f, 0.5f);
        }
    } while (gt() - t0 < ns);
    float r = a + b + c + d;
    if (r == 12345.0f) g_sink = r;
    stamp_end(sh, rec);
}

// One small block that only waits (the optional lead before the victim).
__global__ void k_delay(u64 ns)
{
    u64 t0 = gt();
    while (gt() - t0 < ns) __nanosleep(1000);
}

// --------------------------------------------------------------------- host
enum { V_STREAM, V_FMA, V_N };
static const char *V_NAME[V_N] = {"stream", "fma"};

static float4 *g_big, *g_small;
static Rec *d_vrec, *d_nrec;
static cudaStream_t sa, sb;
static int g_nsm;

struct Stats { // one run, derived from the block records
    double span_ns, vmhz, nb_span_ns, nmhz, lead_ns;
    int vsms, smin, smax, slo, overlap, covered;
    unsigned char used[MAXB];
};

static void launch_nb(int kind, int n, u64 ns)
{
    switch (kind) {
    case NB_IDLE: n_idle<<<n, THREADS, SMEM, sb>>>(ns, d_nrec); CKL("n_idle"); break;
    case NB_STREAM: n_stream<<<n, THREADS, SMEM, sb>>>(g_big + HALF4, HALF4 - 1, ns, d_nrec); CKL("n_stream"); break;
    case NB_FMA: n_fma<<<n, THREADS, SMEM, sb>>>(ns, d_nrec); CKL("n_fma"); break;
    case NB_L2: n_l2<<<n, THREADS, SMEM, sb>>>(g_small, SMALL4 - 1, ns, d_nrec); CKL("n_l2"); break;
    default: break;
    }
}

static void launch_victim(int kind, int n, unsigned iters)
{
    if (kind == V_STREAM) {
        v_stream<<<n, THREADS, SMEM, sa>>>(g_big, HALF4 - 1, iters, d_vrec);
        CKL("v_stream");
    } else {
        v_fma<<<n, THREADS, SMEM, sa>>>(iters, d_vrec);
        CKL("v_fma");
    }
}

static double block_mhz(const Rec &r)
{
    double dt = (double)(r.t1 - r.t0);
    return dt > 0 ? (double)(r.c1 - r.c0) / dt * 1e3 : 0;
}

// One run: the neighbour (if any) on nn SMs, then the victim on vn SMs.
static Stats run_once(int vk, int vn, unsigned iters, int nk, int nn, u64 nb_ns, u64 lead_ns)
{
    static Rec hv[MAXB], hn[MAXB];
    CK(cudaMemset(d_vrec, 0, vn * sizeof(Rec)));
    if (nk != NB_NONE) CK(cudaMemset(d_nrec, 0, nn * sizeof(Rec)));
    CK(cudaDeviceSynchronize());
    if (nk != NB_NONE) launch_nb(nk, nn, nb_ns + lead_ns);
    if (lead_ns) {
        k_delay<<<1, 32, 0, sa>>>(lead_ns);
        CKL("k_delay");
    }
    launch_victim(vk, vn, iters);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hv, d_vrec, vn * sizeof(Rec), cudaMemcpyDeviceToHost));
    if (nk != NB_NONE) CK(cudaMemcpy(hn, d_nrec, nn * sizeof(Rec), cudaMemcpyDeviceToHost));

    Stats s;
    memset(&s, 0, sizeof s);
    u64 v0 = ~0ull, v1 = 0;
    double mhz = 0;
    s.smin = 1 << 30;
    s.smax = -1;
    for (int i = 0; i < vn; i++) {
        if (!hv[i].done || hv[i].smid >= MAXB) {
            fprintf(stderr, "disjoint2: victim block %d left no record (smid %u)\n", i, hv[i].smid);
            exit(1);
        }
        v0 = std::min(v0, hv[i].t0);
        v1 = std::max(v1, hv[i].t1);
        mhz += block_mhz(hv[i]);
        s.used[hv[i].smid] = 1;
    }
    for (int m = 0; m < MAXB; m++)
        if (s.used[m]) {
            s.vsms++;
            s.smin = std::min(s.smin, m);
            s.smax = std::max(s.smax, m);
            if (m < g_nsm / 2) s.slo++;
        }
    s.span_ns = (double)(v1 - v0);
    s.vmhz = mhz / vn;
    s.covered = 1;
    if (nk != NB_NONE) {
        u64 n0 = ~0ull, n1 = 0;
        double nm = 0;
        unsigned char nused[MAXB] = {0};
        for (int i = 0; i < nn; i++) {
            if (!hn[i].done || hn[i].smid >= MAXB) {
                fprintf(stderr, "disjoint2: neighbour block %d left no record (smid %u)\n", i, hn[i].smid);
                exit(1);
            }
            n0 = std::min(n0, hn[i].t0);
            n1 = std::max(n1, hn[i].t1);
            nm += block_mhz(hn[i]);
            nused[hn[i].smid] = 1;
        }
        for (int m = 0; m < MAXB; m++) s.overlap += s.used[m] && nused[m];
        s.nb_span_ns = (double)(n1 - n0);
        s.nmhz = nm / nn;
        s.lead_ns = (double)v0 - (double)n0;
        // every neighbour block running for the whole victim span
        u64 nlast0 = 0, nfirst1 = ~0ull;
        for (int i = 0; i < nn; i++) {
            nlast0 = std::max(nlast0, hn[i].t0);
            nfirst1 = std::min(nfirst1, hn[i].t1);
        }
        s.covered = nlast0 <= v0 && nfirst1 >= v1;
    }
    return s;
}

static double median(std::vector<double> v)
{
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Config {
    int vk, vn, nk, nn;
    std::vector<Stats> runs; // in execution order; runs[0] is dropped
    std::vector<int> seq;
};

// the host's local time as nvidia-smi's timestamp column writes it (to line up OUTDIR/smi.csv)
static std::string stamp()
{
    struct timeval tv;
    gettimeofday(&tv, 0);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char b[64];
    snprintf(b, sizeof b, "%04d/%02d/%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    return b;
}

static double wall_ms()
{
    struct timeval tv;
    gettimeofday(&tv, 0);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

static u64 rng_state;
static unsigned rnd(unsigned n) // xorshift64*, uniform enough for a shuffle
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ull) >> 33) % n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [reps=7] [seed=N] [target_us=150] [lead_us=0]\n", argv[0]);
        return 2;
    }
    std::string out = argv[1];
    int reps = 7;
    u64 seed = 20240611;
    double target_us = 150, lead_us = 0;
    for (int i = 2; i < argc; i++) {
        if (!strncmp(argv[i], "reps=", 5)) reps = atoi(argv[i] + 5);
        else if (!strncmp(argv[i], "seed=", 5)) seed = strtoull(argv[i] + 5, 0, 10);
        else if (!strncmp(argv[i], "target_us=", 10)) target_us = atof(argv[i] + 10);
        else if (!strncmp(argv[i], "lead_us=", 8)) lead_us = atof(argv[i] + 8);
        else {
            fprintf(stderr, "disjoint2: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (reps < 2 || target_us <= 0 || lead_us < 0) {
        fprintf(stderr, "disjoint2: need reps >= 2, target_us > 0, lead_us >= 0\n");
        return 2;
    }
    FILE *fs = fopen((out + "/summary.txt").c_str(), "w");
    FILE *fc = fopen((out + "/runs.csv").c_str(), "w");
    if (!fs || !fc) {
        fprintf(stderr, "disjoint2: cannot write %s/summary.txt or runs.csv\n", out.c_str());
        return 1;
    }

    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    g_nsm = prop.multiProcessorCount;
    if (g_nsm > MAXB) {
        fprintf(stderr, "disjoint2: %d SMs, more than %d record slots\n", g_nsm, MAXB);
        return 1;
    }
    int smclk = 0, memclk = 0;
    CK(cudaDeviceGetAttribute(&smclk, cudaDevAttrClockRate, dev));
    CK(cudaDeviceGetAttribute(&memclk, cudaDevAttrMemoryClockRate, dev));
    fprintf(fs, "disjoint2 on %s: %d SMs, max SM clock %d MHz, memory clock %d MHz, %zu KB smem opt-in a block\n",
            prop.name, g_nsm, smclk / 1000, memclk / 1000, prop.sharedMemPerBlockOptin / 1024);
    if (prop.sharedMemPerBlockOptin < SMEM) {
        fprintf(stderr, "disjoint2: the device allows only %zu B of shared memory a block, need %zu\n",
                prop.sharedMemPerBlockOptin, SMEM);
        return 1;
    }

    // one block per SM: opt in to 200 KB of dynamic shared memory and check the occupancy
    struct { const void *f; const char *name; } ks[] = {
        {(const void *)v_stream, "v_stream"}, {(const void *)v_fma, "v_fma"}, {(const void *)n_idle, "n_idle"},
        {(const void *)n_stream, "n_stream"}, {(const void *)n_fma, "n_fma"},  {(const void *)n_l2, "n_l2"}};
    for (auto &k : ks) {
        cudaError_t e = cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM);
        if (e != cudaSuccess) {
            fprintf(stderr, "disjoint2: cudaFuncSetAttribute(%s, MaxDynamicSharedMemorySize, %zu) failed: %s\n",
                    k.name, SMEM, cudaGetErrorString(e));
            return 1;
        }
        int per = -1;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k.f, THREADS, SMEM);
        if (e != cudaSuccess || per != 1) {
            fprintf(stderr, "disjoint2: cudaOccupancyMaxActiveBlocksPerMultiprocessor(%s) gives %d blocks an SM (%s), need 1\n",
                    k.name, per, cudaGetErrorString(e));
            return 1;
        }
    }

    CK(cudaMalloc(&g_big, BIG4 * 16));
    CK(cudaMalloc(&g_small, SMALL4 * 16));
    CK(cudaMemset(g_big, 0, BIG4 * 16));
    CK(cudaMemset(g_small, 0, SMALL4 * 16));
    CK(cudaMalloc(&d_vrec, MAXB * sizeof(Rec)));
    CK(cudaMalloc(&d_nrec, MAXB * sizeof(Rec)));
    CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());

    // warm-up: FMA on all SMs for 300 ms (recorded as a neighbour)
    {
        static Rec hn[MAXB];
        CK(cudaMemset(d_nrec, 0, g_nsm * sizeof(Rec)));
        fprintf(fs, "warm-up starts %s (host local time)\n", stamp().c_str());
        n_fma<<<g_nsm, THREADS, SMEM, sb>>>(300000000ull, d_nrec);
        CKL("n_fma (warm-up)");
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hn, d_nrec, g_nsm * sizeof(Rec), cudaMemcpyDeviceToHost));
        double m = 0;
        for (int i = 0; i < g_nsm; i++) m += block_mhz(hn[i]);
        fprintf(fs, "warm-up: FMA on all %d SMs for 300 ms, SM clock %.0f MHz (clock64 / globaltimer, mean over blocks)\n",
                g_nsm, m / g_nsm);
    }

    // calibrate each victim to ~target_us alone on 66 SMs: measure, scale
    const int VN = std::min(66, g_nsm);
    unsigned iters[V_N];
    const unsigned iters0[V_N] = {400, 8192};
    for (int vk = 0; vk < V_N; vk++) {
        std::vector<double> t;
        for (int r = 0; r < 4; r++) {
            Stats s = run_once(vk, VN, iters0[vk], NB_NONE, 0, 0, 0);
            if (r) t.push_back(s.span_ns);
        }
        double m = median(t);
        double it = iters0[vk] * (target_us * 1e3) / m;
        iters[vk] = (unsigned)std::max(1.0, std::min(4e9, std::round(it)));
        fprintf(fs, "calibration: victim %-6s on %d SMs, %u iterations %.1f us (median of 3) -> %u iterations for %.0f us\n",
                V_NAME[vk], VN, iters0[vk], m / 1e3, iters[vk], target_us);
    }
    const u64 nb_ns = (u64)(10 * target_us * 1e3), lead_ns = (u64)(lead_us * 1e3);
    fprintf(fs, "neighbours run %.0f us from each block's start (10x the target)", nb_ns / 1e3);
    if (lead_ns) fprintf(fs, " plus the %.0f us lead; the victim waits %.0f us on its stream (k_delay) before it launches",
                         lead_us, lead_us);
    fprintf(fs, "\n");

    // configurations: alone on 16/33/66/all SMs; beside idle/stream/fma/l2 on 16/33/66 other SMs
    std::vector<Config> cfg;
    std::vector<std::string> notes;
    for (int vk = 0; vk < V_N; vk++) {
        for (int n : {16, 33, 66, g_nsm})
            if (n <= g_nsm && (cfg.empty() || !(cfg.back().vk == vk && cfg.back().vn == n && cfg.back().nk == NB_NONE)))
                cfg.push_back({vk, n, NB_NONE, 0, {}, {}});
        for (int nk = NB_IDLE; nk < NB_N; nk++)
            for (int n : {16, 33, 66}) {
                int nn = std::min(n, g_nsm - VN);
                if (nn <= 0) continue;
                if (nn != n && vk == 0 && nk == NB_IDLE)
                    notes.push_back("neighbour size " + std::to_string(n) + " cut to " + std::to_string(nn) +
                                    " (only " + std::to_string(g_nsm) + " SMs)");
                bool dup = false;
                for (auto &c : cfg) dup |= c.vk == vk && c.vn == VN && c.nk == nk && c.nn == nn;
                if (!dup) cfg.push_back({vk, VN, nk, nn, {}, {}});
            }
    }
    for (auto &s : notes) fprintf(fs, "note: %s\n", s.c_str());
    fprintf(fs, "configurations (id victim/SMs neighbour/SMs):");
    for (size_t c = 0; c < cfg.size(); c++)
        fprintf(fs, "%s %zu %s/%d %s/%d", c % 8 ? "," : "\n ", c, V_NAME[cfg[c].vk], cfg[c].vn, NB_NAME[cfg[c].nk],
                cfg[c].nn);
    fprintf(fs, "\n");

    // every (configuration, repetition) in one seeded shuffled order
    std::vector<int> order;
    for (size_t c = 0; c < cfg.size(); c++)
        for (int r = 0; r < reps; r++) order.push_back((int)c);
    rng_state = seed ? seed : 1;
    for (size_t i = order.size() - 1; i > 0; i--) std::swap(order[i], order[rnd((unsigned)i + 1)]);
    fprintf(fs, "order: seed %llu, %zu runs (%zu configurations x %d repetitions), configuration ids in run order:\n",
            (unsigned long long)seed, order.size(), cfg.size(), reps);
    for (size_t i = 0; i < order.size(); i++) fprintf(fs, "%d%s", order[i], (i % 32 == 31 || i + 1 == order.size()) ? "\n" : " ");

    fprintf(fc, "seq,t_ms,config,victim,victim_sms_asked,neighbour,neighbour_sms,rep,kept,iters,span_ns,gbs,victim_sms,"
                "smid_min,smid_max,smid_lo,overlap,victim_mhz,nb_span_ns,nb_mhz,lead_ns,covered\n");
    fprintf(fs, "measurements start %s\n", stamp().c_str());
    const double m0 = wall_ms();
    for (size_t i = 0; i < order.size(); i++) {
        Config &c = cfg[order[i]];
        double t_ms = wall_ms() - m0;
        Stats s = run_once(c.vk, c.vn, iters[c.vk], c.nk, c.nn, nb_ns, lead_ns);
        int rep = (int)c.runs.size();
        c.runs.push_back(s);
        c.seq.push_back((int)i);
        double gbs = c.vk == V_STREAM ? (double)c.vn * THREADS * iters[c.vk] * 16 / s.span_ns : 0;
        fprintf(fc, "%zu,%.1f,%d,%s,%d,%s,%d,%d,%d,%u,%.0f,%.1f,%d,%d,%d,%d,%d,%.1f,%.0f,%.1f,%.0f,%d\n", i, t_ms, order[i],
                V_NAME[c.vk], c.vn, NB_NAME[c.nk], c.nn, rep, rep > 0, iters[c.vk], s.span_ns, gbs, s.vsms, s.smin,
                s.smax, s.slo, s.overlap, s.vmhz, s.nb_span_ns, s.nmhz, s.lead_ns, s.covered);
    }

    fprintf(fs, "measurements end %s (%.0f ms; runs.csv's t_ms is each run's start from the measurements' start)\n",
            stamp().c_str(), wall_ms() - m0);

    // summary: medians of the kept repetitions
    fprintf(fs, "\nMedians of %d repetitions a configuration (the first run of each dropped). span: victim's max block end -\n"
                "min block start. x idle: over the victim beside the idle neighbour of the same size (same SM set, no work);\n"
                "x none: over the victim alone on the same number of SMs. SMs: distinct SMs a run (median) / union over the\n"
                "kept runs; smid: lowest-highest id over the kept runs; lo: the victim's SMs with id < %d (median);\n"
                "MHz: SM clock (clock64 / globaltimer, mean over blocks, median over runs), victim / neighbour;\n"
                "lead: victim start - neighbour start; cover: runs where every neighbour block spanned the victim;\n"
                "ovl: runs where victim and neighbour shared an SM (should be 0).\n",
            reps - 1, g_nsm / 2);
    for (int vk = 0; vk < V_N; vk++) {
        fprintf(fs, "\nvictim %s (%u %s a thread, %d threads a block)\n", V_NAME[vk], iters[vk],
                vk == V_STREAM ? "float4 loads" : "x 4 FMA", THREADS);
        fprintf(fs, "%-8s %4s %4s %9s %17s %7s %7s %8s %15s %4s %6s %6s %7s %5s %3s%s\n", "nb", "vSM", "nSM", "span_us",
                "min..max_us", "x idle", "x none", "SMs", "smid", "lo", "MHz_v", "MHz_n", "lead_us", "cover", "ovl",
                vk == V_STREAM ? "    GB/s" : "");
        std::vector<double> none_med(MAXB + 1, NAN), idle_med(MAXB + 1, NAN);
        for (auto &c : cfg) {
            if (c.vk != vk) continue;
            std::vector<double> sp;
            for (size_t r = 1; r < c.runs.size(); r++) sp.push_back(c.runs[r].span_ns);
            if (c.nk == NB_NONE) none_med[c.vn] = median(sp);
            if (c.nk == NB_IDLE) idle_med[c.nn] = median(sp);
        }
        for (auto &c : cfg) {
            if (c.vk != vk) continue;
            std::vector<double> sp, vs, lo, vm, nm, ld;
            unsigned char uni[MAXB] = {0};
            int smin = 1 << 30, smax = -1, cover = 0, ovl = 0, nuni = 0;
            for (size_t r = 1; r < c.runs.size(); r++) {
                const Stats &s = c.runs[r];
                sp.push_back(s.span_ns);
                vs.push_back(s.vsms);
                lo.push_back(s.slo);
                vm.push_back(s.vmhz);
                nm.push_back(s.nmhz);
                ld.push_back(s.lead_ns);
                smin = std::min(smin, s.smin);
                smax = std::max(smax, s.smax);
                cover += s.covered;
                ovl += s.overlap > 0;
                for (int m = 0; m < MAXB; m++) uni[m] |= s.used[m];
            }
            for (int m = 0; m < MAXB; m++) nuni += uni[m];
            double med = median(sp);
            double xi = c.nk == NB_NONE ? NAN : med / idle_med[c.nn];
            double xn = med / none_med[c.vn];
            char smsbuf[32], rng[32], idbuf[32];
            snprintf(smsbuf, sizeof smsbuf, "%.0f/%d", median(vs), nuni);
            snprintf(rng, sizeof rng, "%.1f..%.1f", *std::min_element(sp.begin(), sp.end()) / 1e3,
                     *std::max_element(sp.begin(), sp.end()) / 1e3);
            snprintf(idbuf, sizeof idbuf, "%d-%d", smin, smax);
            fprintf(fs, "%-8s %4d %4d %9.1f %17s ", NB_NAME[c.nk], c.vn, c.nn, med / 1e3, rng);
            if (std::isnan(xi)) fprintf(fs, "%7s ", "-");
            else fprintf(fs, "%7.3f ", xi);
            if (std::isnan(xn)) fprintf(fs, "%7s ", "-");
            else fprintf(fs, "%7.3f ", xn);
            fprintf(fs, "%8s %15s %4.0f %6.0f ", smsbuf, idbuf, median(lo), median(vm));
            if (c.nk == NB_NONE) fprintf(fs, "%6s %7s %5s %3s", "-", "-", "-", "-");
            else fprintf(fs, "%6.0f %7.1f %3d/%d %3d", median(nm), median(ld) / 1e3, cover, (int)sp.size(), ovl);
            if (vk == V_STREAM) fprintf(fs, " %7.0f", (double)c.vn * THREADS * iters[vk] * 16 / med);
            fprintf(fs, "\n");
        }
    }
    cudaError_t e = cudaDeviceSynchronize();
    fprintf(fs, "\nstatus: %s\n", cudaGetErrorString(e));
    fclose(fs);
    fclose(fc);
    if (e != cudaSuccess) {
        fprintf(stderr, "disjoint2: final cudaDeviceSynchronize failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
