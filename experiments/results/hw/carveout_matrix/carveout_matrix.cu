// Which kernel shapes can share an SM on the H100: a co-residency matrix.
//
// ../placement/README.md adopted "an SM holds blocks of ONE shared-memory
// carveout at a time; a kernel whose launch configures another waits until an
// SM drains". ../carveout_switch/switch.cu then saw two spin kernels whose
// carveouts should differ (256 threads, no smem, preferred carveout 0; 256
// threads, 100 KB dynamic smem, preferred carveout 100) co-run fully. Here,
// for every ordered pair of shapes (F first, S second):
//   F: nsm x k spin blocks (~60 us each from their own start) on stream 1,
//      k chosen so that every SM keeps room (threads, blocks, registers,
//      shared memory incl. the 1 KB reserved per block) for one block of S;
//   the host waits until every F block has started (the last F block to
//      start writes a token into mapped pinned memory, the host polls it);
//   S: nsm spin blocks (~20 us) on stream 2.
// Every block records %smid, start and end (%globaltimer). Per pair and rep:
// how many S blocks started while an F block was resident on their SM ("co"
// blocks), S's first start, span, and its start after the trigger (F's last
// block start; the host's poll and S's launch lie between). Two variants of k:
//   half: F takes up to half of an SM's threads (k = min(occupancy,
//         1024 / threads, 16)), reduced until S fits;
//   one:  k = 1.
// Pairs that cannot fit together (by threads, blocks, registers or shared
// memory with even k = 1) are skipped and listed.
//
//   nvcc -O2 -arch=sm_90 -o cm carveout_matrix.cu && ./cm OUTDIR
//        [matrix|ncu] [reps N] [pref P]
//   matrix (default): writes OUTDIR/matrix.txt and OUTDIR/pairs.csv
//   ncu:    launches each shape once, alone, synchronously (for Nsight
//           Compute's launch__shared_mem_config_size); writes no files
//   pref P: every shape prefers carveout P (cudaFuncAttributePreferred-
//           SharedMemoryCarveout), overriding the shapes' own preferences:
//           the control in which all shapes should configure one carveout.
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <time.h>
#include <cuda_runtime.h>

static char g_ctx[256] = "setup";

#define CK(x)                                                                                         \
    do {                                                                                              \
        cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "CUDA error: %s failed: %s (%s) [%s] at %s:%d\n", #x,                     \
                    cudaGetErrorString(e_), cudaGetErrorName(e_), g_ctx, __FILE__, __LINE__);         \
            exit(2);                                                                                  \
        }                                                                                             \
    } while (0)

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " [%s]\n", g_ctx);
    va_end(ap);
    exit(3);
}

// ---------------------------------------------------------------- shapes
struct Shape {
    const char *name;
    int threads;
    int smem;          // dynamic shared memory, bytes
    int pref;          // preferred carveout attribute (percent), -1: not set
    const char *expect; // the carveout (KB) expected from ../session13/carveouts.csv or ../placement/ncu
};

static const Shape SH[] = {
    {"t1024", 1024, 0, -1, "8"},
    {"t512", 512, 0, -1, "16"},
    {"t256", 256, 0, -1, "32"},
    {"t64", 64, 0, -1, "32"},
    {"t256s4k", 256, 4224, -1, "100"},
    {"t1024s64k", 1024, 65536, -1, "132?"},
    {"t128s64k", 128, 65536, -1, "132-196"},
    {"t128s96k", 128, 98304, -1, "196"},
    {"t384s226k", 384, 231424, -1, "228"},
    {"t256p0", 256, 0, 0, "switch A"},
    {"t256s100kp100", 256, 102400, 100, "switch B"},
};
static const int NSH = sizeof(SH) / sizeof(SH[0]);

// ---------------------------------------------------------------- kernel
struct Args {
    unsigned long long *start, *end;
    unsigned *sm;
    unsigned *counter;    // F only: blocks started so far (device memory)
    volatile int *flag;   // F only: mapped pinned host memory, set to token by the last block to start
    int total;
    int token;
    unsigned long long ns; // spin time from the block's start
};

__device__ __forceinline__ unsigned long long gt()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned smid()
{
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// One instantiation per shape, so function attributes (max dynamic shared
// memory, preferred carveout) are per shape. No static shared memory; the
// dynamic shared memory is allocated by the launch and never touched.
template <int I>
__global__ void __launch_bounds__(1024, 1) spin(Args a)
{
    unsigned long long t0 = gt();
    if (threadIdx.x == 0) {
        a.start[blockIdx.x] = t0;
        a.sm[blockIdx.x] = smid();
        if (a.counter) {
            unsigned old = atomicAdd(a.counter, 1u);
            if (old + 1 == (unsigned)a.total) {
                __threadfence_system();
                *a.flag = a.token;
                __threadfence_system();
            }
        }
    }
    while (gt() - t0 < a.ns) {
    }
    __syncthreads();
    if (threadIdx.x == 0) a.end[blockIdx.x] = gt();
}

static const void *KF[] = {
    (const void *)spin<0>, (const void *)spin<1>, (const void *)spin<2>,  (const void *)spin<3>,
    (const void *)spin<4>, (const void *)spin<5>, (const void *)spin<6>,  (const void *)spin<7>,
    (const void *)spin<8>, (const void *)spin<9>, (const void *)spin<10>,
};
static_assert(sizeof(KF) / sizeof(KF[0]) == sizeof(SH) / sizeof(SH[0]), "one kernel instantiation per shape");

// ---------------------------------------------------------------- device limits
struct Dev {
    int nsm, smem_sm, smem_res, thr_sm, regs_sm, blk_sm, smem_optin, map;
    char name[256];
};
static Dev D;
static const int NSMID = 1024; // %smid values are not promised to be contiguous: per-SM arrays are this long

struct ShapeInfo {
    int regs, static_smem, occ; // occ: blocks an SM alone (cudaOccupancy...)
    int reg_block;              // registers a block allocates
};
static ShapeInfo SI[NSH];

static int reg_block(int regs, int threads)
{
    int warps = (threads + 31) / 32;
    int per_warp = ((regs * 32 + 255) / 256) * 256;
    return warps * per_warp;
}

// Room for k blocks of F and one of S on an SM (per the device's limits,
// not the carveout the driver configures: that is what is being probed).
// Returns nullptr when they fit, else the first limit broken.
static const char *no_fit(int f, int k, int s)
{
    if (k * SH[f].threads + SH[s].threads > D.thr_sm) return "threads";
    if (k + 1 > D.blk_sm) return "blocks";
    if (k * SI[f].reg_block + SI[s].reg_block > D.regs_sm) return "registers";
    long long need = (long long)k * (SH[f].smem + SI[f].static_smem + D.smem_res) + SH[s].smem + SI[s].static_smem + D.smem_res;
    if (need > D.smem_sm) return "shared memory";
    return nullptr;
}

static const char *VARIANT[] = {"half", "one"};
static const int NV = 2;

// k for variant v, or 0 (skip)
static int choose_k(int v, int f, int s)
{
    int k;
    if (v == 0) {
        k = std::min(SI[f].occ, std::min(D.thr_sm / 2 / SH[f].threads, 16));
        if (k < 1) k = 1;
    } else {
        k = 1;
    }
    while (k >= 1 && no_fit(f, k, s)) k--;
    return k;
}

// ---------------------------------------------------------------- buffers and launch
struct Buf {
    unsigned long long *start, *end;
    unsigned *sm;
    int n;
    std::vector<unsigned long long> hs, he;
    std::vector<unsigned> hm;
    void alloc(int cap)
    {
        n = cap;
        CK(cudaMalloc(&start, cap * sizeof(unsigned long long)));
        CK(cudaMalloc(&end, cap * sizeof(unsigned long long)));
        CK(cudaMalloc(&sm, cap * sizeof(unsigned)));
        hs.resize(cap);
        he.resize(cap);
        hm.resize(cap);
    }
    void clear(int cnt, cudaStream_t st)
    {
        CK(cudaMemsetAsync(start, 0, cnt * sizeof(unsigned long long), st));
        CK(cudaMemsetAsync(end, 0, cnt * sizeof(unsigned long long), st));
        CK(cudaMemsetAsync(sm, 0xff, cnt * sizeof(unsigned), st));
    }
    void fetch(int cnt)
    {
        CK(cudaMemcpy(hs.data(), start, cnt * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(he.data(), end, cnt * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hm.data(), sm, cnt * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int i = 0; i < cnt; i++)
            if (hs[i] == 0 || he[i] == 0 || hm[i] >= (unsigned)NSMID) die("block %d of %d left no record", i, cnt);
    }
};

static void launch(int i, int blocks, Args a, cudaStream_t st)
{
    void *args[] = {&a};
    CK(cudaLaunchKernel(KF[i], dim3(blocks), dim3(SH[i].threads), args, (size_t)SH[i].smem, st));
}

static double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double median(std::vector<double> v)
{
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const unsigned long long F_NS = 60000, S_NS = 20000;

// ---------------------------------------------------------------- one pair
struct Row {
    int v, rep, f, s, k, f_blocks;
    int f_sms, f_minper, f_maxper;
    double f_spread, f_first_end, f_last_end; // us from F's first start
    double s_first, s_last_start, s_last_end, s_after_trigger, s_span;
    int s_co, s_sms, s_maxper, s_before_fend;
    double s_drain_gap; // median over S blocks not beside F, on SMs F used: start - last F end on that SM (us)
    double poll_us;
};

struct Ctx {
    cudaStream_t s1, s2;
    Buf bf, bs;
    unsigned *d_counter;
    volatile int *h_flag;
    int *d_flag;
    int token;
};

static Row run_pair(Ctx &c, int v, int rep, int f, int s, int k)
{
    snprintf(g_ctx, sizeof g_ctx, "variant %s rep %d F %s k %d S %s", VARIANT[v], rep, SH[f].name, k, SH[s].name);
    int nF = D.nsm * k, nS = D.nsm;
    int token = ++c.token;
    c.bf.clear(nF, c.s1);
    c.bs.clear(nS, c.s1);
    CK(cudaMemsetAsync(c.d_counter, 0, sizeof(unsigned), c.s1));
    Args fa = {c.bf.start, c.bf.end, c.bf.sm, c.d_counter, (volatile int *)c.d_flag, nF, token, F_NS};
    double t0 = now_s();
    launch(f, nF, fa, c.s1);
    while (*c.h_flag != token) {
        if (now_s() - t0 > 2.0) die("F's blocks had not all started after 2 s");
    }
    double poll = now_s() - t0;
    Args sa = {c.bs.start, c.bs.end, c.bs.sm, nullptr, nullptr, 0, 0, S_NS};
    launch(s, nS, sa, c.s2);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(c.s2));
    CK(cudaStreamSynchronize(c.s1));
    c.bf.fetch(nF);
    c.bs.fetch(nS);

    Row r = {};
    r.v = v; r.rep = rep; r.f = f; r.s = s; r.k = k; r.f_blocks = nF;
    r.poll_us = poll * 1e6;
    unsigned long long ff = ~0ull, fls = 0, ffe = ~0ull, fle = 0;
    std::vector<int> fper(NSMID, 0), sper(NSMID, 0);
    std::vector<unsigned long long> fend_sm(NSMID, 0);
    std::vector<std::vector<int>> fon(NSMID);
    for (int i = 0; i < nF; i++) {
        ff = std::min(ff, c.bf.hs[i]);
        fls = std::max(fls, c.bf.hs[i]);
        ffe = std::min(ffe, c.bf.he[i]);
        fle = std::max(fle, c.bf.he[i]);
        int m = c.bf.hm[i];
        fper[m]++;
        fend_sm[m] = std::max(fend_sm[m], c.bf.he[i]);
        fon[m].push_back(i);
    }
    r.f_minper = 1 << 30;
    for (int m = 0; m < NSMID; m++) {
        if (fper[m]) r.f_sms++;
        if (m < D.nsm || fper[m]) r.f_minper = std::min(r.f_minper, fper[m]); // over ids 0..nsm-1 (and any used)
        r.f_maxper = std::max(r.f_maxper, fper[m]);
    }
    auto us = [&](unsigned long long t) { return ((double)t - (double)ff) / 1000.0; };
    r.f_spread = us(fls);
    r.f_first_end = us(ffe);
    r.f_last_end = us(fle);
    unsigned long long sf = ~0ull, sls = 0, sle = 0;
    std::vector<double> gaps;
    for (int i = 0; i < nS; i++) {
        unsigned long long st = c.bs.hs[i];
        sf = std::min(sf, st);
        sls = std::max(sls, st);
        sle = std::max(sle, c.bs.he[i]);
        int m = c.bs.hm[i];
        sper[m]++;
        bool co = false;
        for (int j : fon[m])
            if (c.bf.hs[j] <= st && st < c.bf.he[j]) { co = true; break; }
        if (co) r.s_co++;
        else if (fper[m]) gaps.push_back(((double)st - (double)fend_sm[m]) / 1000.0);
    }
    for (int m = 0; m < NSMID; m++) {
        if (sper[m]) r.s_sms++;
        r.s_maxper = std::max(r.s_maxper, sper[m]);
    }
    r.s_first = us(sf);
    r.s_last_start = us(sls);
    r.s_last_end = us(sle);
    r.s_after_trigger = ((double)sf - (double)fls) / 1000.0;
    r.s_span = ((double)sle - (double)sf) / 1000.0;
    r.s_before_fend = sf < fle;
    r.s_drain_gap = gaps.empty() ? -1 : median(gaps);
    return r;
}

// ---------------------------------------------------------------- main
static void setup(int pref_all)
{
    int dev = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    snprintf(D.name, sizeof D.name, "%s", p.name);
    CK(cudaDeviceGetAttribute(&D.nsm, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&D.smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    CK(cudaDeviceGetAttribute(&D.smem_res, cudaDevAttrReservedSharedMemoryPerBlock, dev));
    CK(cudaDeviceGetAttribute(&D.thr_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    CK(cudaDeviceGetAttribute(&D.regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev));
    CK(cudaDeviceGetAttribute(&D.blk_sm, cudaDevAttrMaxBlocksPerMultiprocessor, dev));
    CK(cudaDeviceGetAttribute(&D.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    CK(cudaDeviceGetAttribute(&D.map, cudaDevAttrCanMapHostMemory, dev));
    for (int i = 0; i < NSH; i++) {
        snprintf(g_ctx, sizeof g_ctx, "setup of shape %s", SH[i].name);
        if (SH[i].smem > D.smem_optin) die("shape %s: %d B of shared memory > opt-in limit %d", SH[i].name, SH[i].smem, D.smem_optin);
        if (SH[i].smem > 48 * 1024)
            CK(cudaFuncSetAttribute(KF[i], cudaFuncAttributeMaxDynamicSharedMemorySize, SH[i].smem));
        int pref = pref_all >= 0 ? pref_all : SH[i].pref;
        if (pref >= 0) CK(cudaFuncSetAttribute(KF[i], cudaFuncAttributePreferredSharedMemoryCarveout, pref));
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, KF[i]));
        SI[i].regs = fa.numRegs;
        SI[i].static_smem = (int)fa.sharedSizeBytes;
        SI[i].reg_block = reg_block(fa.numRegs, SH[i].threads);
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&SI[i].occ, KF[i], SH[i].threads, (size_t)SH[i].smem));
        if (SI[i].occ < 1) die("shape %s cannot run (occupancy 0)", SH[i].name);
    }
    snprintf(g_ctx, sizeof g_ctx, "setup");
}

static void print_shapes(FILE *o, int pref_all)
{
    fprintf(o, "shapes (regs: per thread; occ: blocks an SM alone by cudaOccupancyMaxActiveBlocksPerMultiprocessor;\n"
               "smem/block: dynamic + static + %d B reserved; expect: carveout KB expected, ncu.txt has the driver's):\n",
            D.smem_res);
    fprintf(o, "%3s %-14s %7s %8s %5s %5s %7s %4s %5s %11s %s\n", "idx", "shape", "threads", "dyn_smem", "pref",
            "regs", "static", "occ", "warps", "smem/block", "expect");
    for (int i = 0; i < NSH; i++) {
        int pref = pref_all >= 0 ? pref_all : SH[i].pref;
        char pb[16];
        if (pref >= 0) snprintf(pb, sizeof pb, "%d", pref);
        else snprintf(pb, sizeof pb, "none");
        fprintf(o, "%3d %-14s %7d %8d %5s %5d %7d %4d %5d %11d %s\n", i, SH[i].name, SH[i].threads, SH[i].smem, pb,
                SI[i].regs, SI[i].static_smem, SI[i].occ, SI[i].occ * ((SH[i].threads + 31) / 32),
                SH[i].smem + SI[i].static_smem + D.smem_res, SH[i].expect);
    }
}

static int ncu_mode(int pref_all)
{
    Buf b;
    b.alloc(D.nsm);
    print_shapes(stdout, pref_all);
    for (int i = 0; i < NSH; i++) {
        snprintf(g_ctx, sizeof g_ctx, "ncu launch of shape %s", SH[i].name);
        printf("ncu launch %d: shape %s threads %d dynamic smem %d\n", i, SH[i].name, SH[i].threads, SH[i].smem);
        fflush(stdout);
        Args a = {b.start, b.end, b.sm, nullptr, nullptr, 0, 0, 2000};
        launch(i, D.nsm, a, 0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    }
    printf("ncu mode: %d launches, status ok\n", NSH);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [matrix|ncu] [reps N] [pref P]\n", argv[0]);
        return 1;
    }
    std::string out = argv[1], mode = "matrix";
    int reps = 5, pref_all = -1;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "ncu") || !strcmp(argv[i], "matrix")) mode = argv[i];
        else if (!strcmp(argv[i], "reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "pref") && i + 1 < argc) pref_all = atoi(argv[++i]);
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    if (reps < 1) reps = 1;
    setup(pref_all);
    if (mode == "ncu") return ncu_mode(pref_all);

    if (mkdir(out.c_str(), 0755) && errno != EEXIST) {
        perror(out.c_str());
        return 1;
    }
    if (!D.map) die("device cannot map host memory");
    Ctx c;
    c.token = 0;
    CK(cudaStreamCreateWithFlags(&c.s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&c.s2, cudaStreamNonBlocking));
    int kmax = 1;
    for (int i = 0; i < NSH; i++) kmax = std::max(kmax, std::min(SI[i].occ, 32));
    c.bf.alloc(D.nsm * kmax);
    c.bs.alloc(D.nsm);
    CK(cudaMalloc(&c.d_counter, sizeof(unsigned)));
    int *hf;
    CK(cudaHostAlloc(&hf, sizeof(int), cudaHostAllocMapped));
    *hf = 0;
    c.h_flag = hf;
    CK(cudaHostGetDevicePointer(&c.d_flag, hf, 0));

    // k per variant and pair
    std::vector<int> K(NV * NSH * NSH);
    auto kk = [&](int v, int f, int s) -> int & { return K[(v * NSH + f) * NSH + s]; };
    for (int v = 0; v < NV; v++)
        for (int f = 0; f < NSH; f++)
            for (int s = 0; s < NSH; s++) kk(v, f, s) = choose_k(v, f, s);

    // each shape alone (also loads every kernel: lazy loading would otherwise
    // load S's module during the first pair)
    std::vector<double> alone_span(NSH), alone_sms(NSH), alone_max(NSH);
    for (int i = 0; i < NSH; i++) {
        snprintf(g_ctx, sizeof g_ctx, "alone run of shape %s", SH[i].name);
        std::vector<double> sp, sm, mx;
        for (int r = 0; r < 4; r++) {
            Args a = {c.bs.start, c.bs.end, c.bs.sm, nullptr, nullptr, 0, 0, S_NS};
            c.bs.clear(D.nsm, c.s2);
            launch(i, D.nsm, a, c.s2);
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(c.s2));
            c.bs.fetch(D.nsm);
            if (!r) continue;
            unsigned long long a0 = ~0ull, a1 = 0;
            std::vector<int> per(NSMID, 0);
            for (int b = 0; b < D.nsm; b++) {
                a0 = std::min(a0, c.bs.hs[b]);
                a1 = std::max(a1, c.bs.he[b]);
                per[c.bs.hm[b]]++;
            }
            int used = 0, most = 0;
            for (int m = 0; m < NSMID; m++) used += per[m] > 0, most = std::max(most, per[m]);
            sp.push_back((a1 - a0) / 1000.0);
            sm.push_back(used);
            mx.push_back(most);
        }
        alone_span[i] = median(sp);
        alone_sms[i] = median(sm);
        alone_max[i] = median(mx);
    }

    // warm-up pass over every pair (not recorded), then reps
    std::vector<Row> rows;
    for (int rep = -1; rep < reps; rep++)
        for (int v = 0; v < NV; v++)
            for (int f = 0; f < NSH; f++)
                for (int s = 0; s < NSH; s++) {
                    int k = kk(v, f, s);
                    if (!k) continue;
                    Row r = run_pair(c, v, rep, f, s, k);
                    if (rep >= 0) rows.push_back(r);
                }
    snprintf(g_ctx, sizeof g_ctx, "after the matrix");
    CK(cudaDeviceSynchronize());

    // pairs.csv
    std::string pcsv = out + "/pairs.csv";
    FILE *pc = fopen(pcsv.c_str(), "w");
    if (!pc) die("cannot write %s", pcsv.c_str());
    fprintf(pc, "variant,rep,f,s,k,f_blocks,f_sms,f_minper,f_maxper,f_start_spread_us,f_first_end_us,f_last_end_us,"
                "s_first_us,s_last_start_us,s_last_end_us,s_after_trigger_us,s_span_us,s_co_blocks,s_sms,s_maxper,"
                "s_before_f_end,s_drain_gap_us,poll_us\n");
    for (auto &r : rows)
        fprintf(pc, "%s,%d,%s,%s,%d,%d,%d,%d,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%d,%d,%d,%d,%.2f,%.1f\n",
                VARIANT[r.v], r.rep, SH[r.f].name, SH[r.s].name, r.k, r.f_blocks, r.f_sms, r.f_minper, r.f_maxper,
                r.f_spread, r.f_first_end, r.f_last_end, r.s_first, r.s_last_start, r.s_last_end, r.s_after_trigger,
                r.s_span, r.s_co, r.s_sms, r.s_maxper, r.s_before_fend, r.s_drain_gap, r.poll_us);
    if (fclose(pc)) die("cannot write %s", pcsv.c_str());

    // analysis
    int nS = D.nsm;
    int co_min = (int)(0.9 * nS), wait_max = (int)(0.05 * nS);
    std::vector<double> trig_co[NV];
    for (auto &r : rows)
        if (r.s_co >= co_min) trig_co[r.v].push_back(r.s_after_trigger);
    double delay[NV];
    for (int v = 0; v < NV; v++) delay[v] = trig_co[v].empty() ? 0 : median(trig_co[v]);

    struct Agg {
        int n = 0, co_reps = 0, zero_reps = 0, before = 0, fwave = 0;
        double co, s_first, trig, wait, span, f_last_end, gap, s_max, f_max;
        const char *cls = "skip";
    };
    std::vector<Agg> A(NV * NSH * NSH);
    auto ag = [&](int v, int f, int s) -> Agg & { return A[(v * NSH + f) * NSH + s]; };
    for (int v = 0; v < NV; v++)
        for (int f = 0; f < NSH; f++)
            for (int s = 0; s < NSH; s++) {
                Agg &g = ag(v, f, s);
                std::vector<double> co, sf, tr, sp, fe, gp, sx, fx;
                for (auto &r : rows) {
                    if (r.v != v || r.f != f || r.s != s) continue;
                    g.n++;
                    co.push_back(r.s_co);
                    sf.push_back(r.s_first);
                    tr.push_back(r.s_after_trigger);
                    sp.push_back(r.s_span);
                    fe.push_back(r.f_last_end);
                    if (r.s_drain_gap > -1) gp.push_back(r.s_drain_gap);
                    sx.push_back(r.s_maxper);
                    fx.push_back(r.f_maxper);
                    g.co_reps += r.s_co >= co_min;
                    g.zero_reps += r.s_co <= wait_max;
                    g.before += r.s_before_fend;
                    g.fwave += r.f_spread > F_NS / 2000.0 || r.f_sms < D.nsm; // F not one full wave over every SM
                }
                if (!g.n) continue;
                g.co = median(co);
                g.s_first = median(sf);
                g.trig = median(tr);
                g.wait = g.trig - delay[v];
                g.span = median(sp);
                g.f_last_end = median(fe);
                g.gap = gp.empty() ? -1 : median(gp);
                g.s_max = median(sx);
                g.f_max = median(fx);
                g.cls = g.co >= co_min ? "co" : g.co <= wait_max ? "wait" : "part";
            }

    std::string mtxt = out + "/matrix.txt";
    FILE *o = fopen(mtxt.c_str(), "w");
    if (!o) die("cannot write %s", mtxt.c_str());
    fprintf(o, "carveout co-residency matrix: %s, %d SMs, %d B shared memory an SM, %d B reserved a block, "
               "opt-in max %d B a block, %d threads, %d blocks, %d registers an SM\n",
            D.name, D.nsm, D.smem_sm, D.smem_res, D.smem_optin, D.thr_sm, D.blk_sm, D.regs_sm);
    fprintf(o, "F: %d x k blocks spinning %.0f us on stream 1; S launched on stream 2 once every F block has started; "
               "S: %d blocks spinning %.0f us. %d reps (medians), after one warm-up pass.%s\n",
            D.nsm, F_NS / 1000.0, D.nsm, S_NS / 1000.0, reps, pref_all >= 0 ? " EVERY SHAPE PREFERS ONE CARVEOUT (pref)" : "");
    if (pref_all >= 0) fprintf(o, "pref %d: every shape's preferred carveout set to %d%%\n", pref_all, pref_all);
    fprintf(o, "\n");
    print_shapes(o, pref_all);
    fprintf(o, "\neach shape alone (%d blocks, medians of 3): span us, SMs used, most blocks on one SM\n", D.nsm);
    for (int i = 0; i < NSH; i++)
        fprintf(o, "  %-14s span %6.1f  SMs %4.0f  max/SM %3.0f\n", SH[i].name, alone_span[i], alone_sms[i], alone_max[i]);
    fprintf(o, "\nco: S block started while an F block was resident on its SM. class per pair from the median over reps:\n"
               "  co   >= %d of S's %d blocks beside F;  wait  <= %d;  part  between;  skip: cannot fit together (reason below).\n"
               "known delay (trigger -> S start when S runs at once) = median of s_after_trigger over every rep with >= %d co blocks;\n"
               "wait = S's first start - F's last block start (the trigger) - known delay.\n",
            co_min, nS, wait_max, co_min);
    for (int v = 0; v < NV; v++) {
        fprintf(o, "\n==== variant %s (k: %s): known delay %.2f us over %zu reps\n", VARIANT[v],
                v == 0 ? "F takes up to half an SM's threads, min(occ, 1024/threads, 16), reduced until S fits" : "1 F block an SM",
                delay[v], trig_co[v].size());
        fprintf(o, "\nclass (rows F first, columns S second; column numbers are shape idx)\n%-14s", "F \\ S");
        for (int s = 0; s < NSH; s++) fprintf(o, " %5d", s);
        fprintf(o, "\n");
        for (int f = 0; f < NSH; f++) {
            fprintf(o, "%-14s", SH[f].name);
            for (int s = 0; s < NSH; s++) fprintf(o, " %5s", ag(v, f, s).cls);
            fprintf(o, "\n");
        }
        fprintf(o, "\nS blocks beside F (median of %d)\n%-14s", nS, "F \\ S");
        for (int s = 0; s < NSH; s++) fprintf(o, " %5d", s);
        fprintf(o, "\n");
        for (int f = 0; f < NSH; f++) {
            fprintf(o, "%-14s", SH[f].name);
            for (int s = 0; s < NSH; s++) {
                Agg &g = ag(v, f, s);
                if (g.n) fprintf(o, " %5.0f", g.co);
                else fprintf(o, " %5s", "-");
            }
            fprintf(o, "\n");
        }
        fprintf(o, "\nwait us (median)\n%-14s", "F \\ S");
        for (int s = 0; s < NSH; s++) fprintf(o, " %5d", s);
        fprintf(o, "\n");
        for (int f = 0; f < NSH; f++) {
            fprintf(o, "%-14s", SH[f].name);
            for (int s = 0; s < NSH; s++) {
                Agg &g = ag(v, f, s);
                if (g.n) fprintf(o, " %5.1f", g.wait);
                else fprintf(o, " %5s", "-");
            }
            fprintf(o, "\n");
        }
        fprintf(o, "\n%-14s %-14s %3s %5s %5s %6s %6s %7s %7s %7s %7s %7s %5s %5s %s\n", "F", "S", "k", "class",
                "co", "coReps", "before", "s_first", "trig", "wait", "s_span", "f_end", "gap", "s_max", "notes");
        for (int f = 0; f < NSH; f++)
            for (int s = 0; s < NSH; s++) {
                Agg &g = ag(v, f, s);
                if (!g.n) {
                    const char *why = no_fit(f, 1, s);
                    fprintf(o, "%-14s %-14s %3d %5s  cannot fit with k = 1: %s\n", SH[f].name, SH[s].name, 0, "skip",
                            why ? why : "?");
                    continue;
                }
                char notes[128] = "";
                if (g.fwave) snprintf(notes, sizeof notes, "F not one wave over every SM in %d/%d reps", g.fwave, g.n);
                fprintf(o, "%-14s %-14s %3d %5s %5.0f %4d/%d %4d/%d %7.1f %7.1f %7.1f %7.1f %7.1f %5.1f %5.0f %s\n",
                        SH[f].name, SH[s].name, kk(v, f, s), g.cls, g.co, g.co_reps, g.n, g.before, g.n, g.s_first,
                        g.trig, g.wait, g.span, g.f_last_end, g.gap, g.s_max, notes);
            }
    }
    fprintf(o, "\ncolumns: co = S blocks beside F; coReps = reps with >= %d; before = reps where S's first block started "
               "before F's last block ended;\ns_first = S's first start after F's first start (us); trig = S's first start "
               "after F's last block start; wait = trig - known delay;\ns_span = S's first start to last end; f_end = F's "
               "last end after its first start; gap = median over S blocks not beside F of (start - last F end on its "
               "SM), -1 none;\ns_max = most S blocks on one SM.\n", co_min);
    if (fclose(o)) die("cannot write %s", mtxt.c_str());

    // short summary on stdout
    printf("wrote %s and %s (%zu rows)\n", mtxt.c_str(), pcsv.c_str(), rows.size());
    for (int v = 0; v < NV; v++) {
        printf("variant %s (known delay %.2f us):\n%-14s", VARIANT[v], delay[v], "F \\ S");
        for (int s = 0; s < NSH; s++) printf(" %5d", s);
        printf("\n");
        for (int f = 0; f < NSH; f++) {
            printf("%-14s", SH[f].name);
            for (int s = 0; s < NSH; s++) printf(" %5s", ag(v, f, s).cls);
            printf("\n");
        }
    }
    CK(cudaFreeHost(hf));
    return 0;
}
