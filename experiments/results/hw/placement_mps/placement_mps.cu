// Does an inference-like kernel wait for whole SMs to drain when the training-like
// background is another process, both clients of one MPS server? ../placement/
// found, in ONE process (two streams), that the victim (504 x 64 FMA blocks,
// ~31 us alone) launched among background blocks waits until SMs drain (an SM
// holds blocks of one shared-memory carveout at a time) and then packs 32 an SM
// on the first SMs to drain (~247 us). Here the background and the victim are
// roles of one program, run as two processes (MPS clients, run.sh starts the
// daemon) or as two threads of one process (mode same, the reference).
//
//   placement_mps bg BG OUTDIR [opts]       background role (paired with victim)
//   placement_mps victim OUTDIR [opts]      victim role (paired with bg)
//   placement_mps alone OUTDIR [opts]       the victim with no background
//   placement_mps same BG OUTDIR [opts]     both roles, two threads, one context
// BG: cmp-seq     compute kernels of 264 x 256 (one wave, 2 an SM), ~100 us each
//     memlong-seq streaming kernels of 6272 x 256 (blocks ~14 us), ~90 us each
//     back to back on one stream for ms= milliseconds in all.
// opts: carveout  every kernel's cudaFuncAttributePreferredSharedMemoryCarveout = 50
//       n=N       victim launches (default 20, at most 200)
//       ms=M      the background's length (default 80, at most 400)
//
// The two roles meet through files in OUTDIR (use a fresh one per run):
// bg makes .bg_init after its allocations; the victim calibrates alone, then
// makes .victim_ready; bg calibrates alone, launches its first kernels, makes
// .bg_ready, launches the rest (at most 64 queued) and makes .bg_done when they
// have all ended; the victim waits 1 ms after .bg_ready, then launches its
// kernel n times, 1.0-2.0 ms apart (host sleep, varied so the launches fall at
// different phases of the background's kernels), each waited for, stops early
// at .bg_done, and makes .victim_done after writing its files; bg then writes
// its blocks near each victim launch.
//
// Every block records its SM (%smid), start and end (%globaltimer: one clock
// for the whole GPU, so the two processes' records merge by time).
// The launch stamp: the host's CLOCK_MONOTONIC just before cudaLaunchKernel,
// put into the globaltimer's time by an offset measured in the victim's process
// (clock_sync): a 1-thread kernel writes %globaltimer into mapped pinned host
// memory while the host polls it; host_seen - gt bounds the offset from above
// (host_before_launch - gt from below); the least upper bound of 40 samples
// before the launches and 20 after is used, so the stamp is early by at most
// the device-to-host write latency (~1 us; meta_victim.txt gives the bounds'
// gap). A GPU-side stamp kernel was not used: it would itself need an SM and,
// with a carveout of its own, could wait for one to drain like the victim.
// If mapped memory fails, the bounds come from launch .. cudaStreamSynchronize
// (wider; clock_method in meta_victim.txt says which).
//
// Files (times in ns; *_ns absolute globaltimer; rel = relative to the launch stamp):
//   launches.csv       launch,stamp_ns,after_ns,synced_ns,first_ns,last_end_ns,blocks
//                      (after: host after cudaLaunchKernel returned; synced:
//                      after cudaStreamSynchronize; first/last_end: the
//                      victim's first block start and last block end)
//   victim_blocks.csv  launch,block,sm,start,end                (rel)
//   bg_kernels.csv     kernel,start_ns,end_ns,blocks,med_block_ns (every background kernel)
//   bg_blocks.csv      launch,kernel,sm,start,end (rel; background blocks with
//                      end >= stamp - 50 us and start <= the victim's last end + 20 us;
//                      of a wait over 1.2 ms only the first 1 ms and the last 200 us;
//                      at most 4M rows)
//   meta_victim.txt, meta_bg.txt   key=value: shapes, iterations, alone times, clock
//   nvcc -O2 -arch=sm_90 -o placement_mps placement_mps.cu
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

static thread_local const char *g_role = "main";

static std::string g_out;

// A failing role leaves OUTDIR/.failed, so the other role stops waiting for it.
[[noreturn]] static void fail(int rc)
{
    if (!g_out.empty()) {
        FILE *f = fopen((g_out + "/.failed").c_str(), "w");
        if (f) fclose(f);
    }
    exit(rc);
}

#define CK(x)                                                                                              \
    do {                                                                                                   \
        cudaError_t e_ = (x);                                                                              \
        if (e_ != cudaSuccess) {                                                                           \
            fprintf(stderr, "placement_mps %s: %s (line %d) failed: %s\n", g_role, #x, __LINE__,           \
                    cudaGetErrorString(e_));                                                               \
            fail(2);                                                                                       \
        }                                                                                                  \
    } while (0)

[[noreturn]] static void die(const char *what)
{
    fprintf(stderr, "placement_mps %s: %s\n", g_role, what);
    fail(3);
}

// ---------------------------------------------------------------- device side

__device__ float g_sink;

__device__ __forceinline__ unsigned long long gt()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int smid()
{
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// rec: three words a block (SM, start, end), as ../placement/placement.cu
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
    if (threadIdx.x == 0) t0 = gt();
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

// Streaming loads through a buffer larger than L2 (mask: n4 a power of two).
__global__ void mem_rec(unsigned int iters, const float4 *buf, unsigned int mask, unsigned long long *rec)
{
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0) t0 = gt();
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

// One thread: the globaltimer into host memory (mapped) or device memory.
__global__ void clock_probe(volatile unsigned long long *out)
{
    unsigned long long t = gt();
    *out = t;
    __threadfence_system();
}

// ---------------------------------------------------------------- host side

static long long host_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static std::string path(const char *name) { return g_out + "/" + name; }

static void signal_file(const char *name)
{
    std::string p = path(name), tmp = p + ".tmp";
    FILE *f = fopen(tmp.c_str(), "w");
    if (!f || fclose(f) != 0 || rename(tmp.c_str(), p.c_str()) != 0) {
        perror(p.c_str());
        die("cannot make a signal file");
    }
}

static bool exists(const char *name) { return access(path(name).c_str(), F_OK) == 0; }

static void wait_file(const char *name, double timeout_s)
{
    long long t0 = host_ns();
    while (!exists(name)) {
        if (exists(".failed")) {
            fprintf(stderr, "placement_mps %s: the other role failed (%s)\n", g_role, path(".failed").c_str());
            exit(4);
        }
        if (host_ns() - t0 > (long long)(timeout_s * 1e9)) {
            fprintf(stderr, "placement_mps %s: no %s after %.0f s\n", g_role, path(name).c_str(), timeout_s);
            fail(4);
        }
        sleep_us(20);
    }
}

static FILE *open_out(const char *name)
{
    FILE *f = fopen(path(name).c_str(), "w");
    if (!f) {
        perror(path(name).c_str());
        die("cannot write an output file");
    }
    return f;
}

static void close_out(FILE *f, const char *name)
{
    if (ferror(f) | fclose(f)) {
        perror(path(name).c_str());
        die("error writing an output file");
    }
}

enum kind { CMP, MEM };
struct shape {
    const char *name;
    kind k;
    unsigned int blocks, threads;
    double target_us; // one kernel alone
    unsigned int iters;
};

static const unsigned int N4 = (256u << 20) / sizeof(float4);

struct gpu {
    cudaStream_t st;
    float4 *buf = nullptr; // MEM only
};

static void launch1(const shape &s, const gpu &g, unsigned long long *rec)
{
    if (s.k == MEM)
        mem_rec<<<s.blocks, s.threads, 0, g.st>>>(s.iters, g.buf, N4 - 1, rec);
    else
        fma_rec<<<s.blocks, s.threads, 0, g.st>>>(s.iters, rec);
    CK(cudaGetLastError());
}

static std::vector<unsigned long long> fetch(const unsigned long long *rec, size_t blocks)
{
    std::vector<unsigned long long> h(3 * blocks);
    CK(cudaMemcpy(h.data(), rec, h.size() * sizeof h[0], cudaMemcpyDeviceToHost));
    return h;
}

static double kernel_us(const std::vector<unsigned long long> &h, size_t blocks)
{
    unsigned long long lo = ~0ull, hi = 0;
    for (size_t b = 0; b < blocks; b++) lo = std::min(lo, h[3 * b + 1]), hi = std::max(hi, h[3 * b + 2]);
    return hi > lo ? (hi - lo) / 1e3 : 0;
}

static double alone_us(const shape &s, const gpu &g, unsigned long long *rec)
{
    std::vector<double> v;
    for (int r = 0; r < 5; r++) {
        launch1(s, g, rec);
        CK(cudaStreamSynchronize(g.st));
        v.push_back(kernel_us(fetch(rec, s.blocks), s.blocks));
    }
    std::sort(v.begin(), v.end());
    return v[2];
}

// As placement.cu: iterations scaled until one kernel alone takes its target (+-3%).
static double calibrate(shape &s, const gpu &g, unsigned long long *rec)
{
    s.iters = s.k == MEM ? 2 : 64;
    double t = 0;
    for (int step = 0; step < 12; step++) {
        t = alone_us(s, g, rec);
        if (t > 0.97 * s.target_us && t < 1.03 * s.target_us) break;
        double next = s.iters * s.target_us / (t > 0.1 ? t : 0.1);
        s.iters = (unsigned int)std::max(1.0, std::min(next, 1e8));
    }
    return alone_us(s, g, rec);
}

static void set_carveout(bool on)
{
    if (!on) return;
    CK(cudaFuncSetAttribute(fma_rec, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
    CK(cudaFuncSetAttribute(mem_rec, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
    CK(cudaFuncSetAttribute(clock_probe, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
}

struct opts {
    bool carveout = false;
    int n = 20;
    int ms = 80;
    std::string bg;
};

static bool bg_shape(const std::string &name, shape &s)
{
    if (name == "cmp-seq") s = {"cmp-seq", CMP, 264, 256, 100, 0};
    else if (name == "memlong-seq") s = {"memlong-seq", MEM, 6272, 256, 90, 0};
    else return false;
    return true;
}

// ---------------------------------------------------------------- clock

struct clock_sync {
    bool mapped = false;
    volatile unsigned long long *host = nullptr; // mapped pinned word
    unsigned long long *dev = nullptr;           // its device pointer, or a device word
    long long hi = (1LL << 62), lo = -(1LL << 62); // host = gt + off, lo < off <= hi
    long long hi_pre = 0, lo_pre = 0, hi_post = 0, lo_post = 0;
    int samples = 0, calls = 0;

    void init()
    {
        void *p = nullptr;
        if (cudaHostAlloc(&p, 64, cudaHostAllocMapped) == cudaSuccess) {
            void *d = nullptr;
            if (cudaHostGetDevicePointer(&d, p, 0) == cudaSuccess) {
                mapped = true;
                host = (volatile unsigned long long *)p;
                dev = (unsigned long long *)d;
                return;
            }
            cudaFreeHost(p);
        }
        cudaGetLastError(); // clear the failure; fall back to a device word
        CK(cudaMalloc(&dev, 64));
    }

    // k samples; the bounds of this call go to *_pre (first call) or *_post,
    // and the overall bounds (hi, lo) take the tightest of all calls.
    void sample(cudaStream_t st, int k)
    {
        long long h = (1LL << 62), l = -(1LL << 62);
        for (int i = 0; i < k; i++) {
            unsigned long long g = 0;
            long long before, seen;
            if (mapped) {
                *host = 0;
                before = host_ns();
                clock_probe<<<1, 1, 0, st>>>(dev);
                CK(cudaGetLastError());
                while ((g = *host) == 0) {
                    if (host_ns() - before > 2000000000LL) die("clock_probe: no value in mapped memory after 2 s");
                }
                seen = host_ns();
                CK(cudaStreamSynchronize(st));
            } else {
                CK(cudaMemsetAsync(dev, 0, 8, st));
                CK(cudaStreamSynchronize(st));
                before = host_ns();
                clock_probe<<<1, 1, 0, st>>>(dev);
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(st));
                seen = host_ns();
                CK(cudaMemcpy(&g, dev, 8, cudaMemcpyDeviceToHost));
            }
            h = std::min(h, seen - (long long)g);
            l = std::max(l, before - (long long)g);
            samples++;
        }
        if (calls++ == 0) hi_pre = h, lo_pre = l;
        else hi_post = h, lo_post = l;
        hi = std::min(hi, h), lo = std::max(lo, l);
    }

    long long to_gt(long long host) const { return host - hi; }
};

// ---------------------------------------------------------------- victim role

static void victim_role(const opts &o, bool paired)
{
    g_role = paired ? "victim" : "alone";
    CK(cudaSetDevice(0));
    set_carveout(o.carveout);
    gpu g;
    CK(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
    const int n = o.n;
    const size_t vb = 504;
    unsigned long long *rec = nullptr, *cal = nullptr;
    CK(cudaMalloc(&rec, 3 * vb * n * sizeof *rec));
    CK(cudaMalloc(&cal, 3 * vb * sizeof *cal));
    CK(cudaMemset(rec, 0, 3 * vb * n * sizeof *rec));
    clock_sync cs;
    cs.init();
    CK(cudaDeviceSynchronize());
    if (paired) wait_file(".bg_init", 60);

    shape v = {"v64x504", CMP, (unsigned int)vb, 64, 32, 0};
    double v_alone = calibrate(v, g, cal);
    cs.sample(g.st, 40);
    if (paired) {
        signal_file(".victim_ready");
        wait_file(".bg_ready", 60);
        sleep_us(1000);
    }
    std::vector<long long> h0(n), h1(n), h2(n);
    int done = 0;
    for (int i = 0; i < n; i++) {
        if (paired && (exists(".bg_done") || exists(".failed"))) break;
        h0[i] = host_ns();
        launch1(v, g, rec + 3 * vb * i);
        h1[i] = host_ns();
        CK(cudaStreamSynchronize(g.st));
        h2[i] = host_ns();
        done++;
        sleep_us(1000 + (i * 389) % 1000);
    }
    cs.sample(g.st, 20);
    std::vector<unsigned long long> h = fetch(rec, vb * n);

    FILE *lf = open_out("launches.csv"), *bf = open_out("victim_blocks.csv");
    fprintf(lf, "launch,stamp_ns,after_ns,synced_ns,first_ns,last_end_ns,blocks\n");
    fprintf(bf, "launch,block,sm,start,end\n");
    for (int i = 0; i < done; i++) {
        const unsigned long long *r = &h[3 * vb * i];
        long long stamp = cs.to_gt(h0[i]);
        unsigned long long first = ~0ull, last = 0;
        int got = 0;
        for (size_t b = 0; b < vb; b++) {
            if (!r[3 * b + 1]) continue;
            got++;
            first = std::min(first, r[3 * b + 1]);
            last = std::max(last, r[3 * b + 2]);
            fprintf(bf, "%d,%zu,%llu,%lld,%lld\n", i, b, r[3 * b], (long long)r[3 * b + 1] - stamp,
                    (long long)r[3 * b + 2] - stamp);
        }
        if (!got) first = last = 0;
        fprintf(lf, "%d,%lld,%lld,%lld,%llu,%llu,%d\n", i, stamp, cs.to_gt(h1[i]), cs.to_gt(h2[i]), first, last, got);
    }
    close_out(bf, "victim_blocks.csv");
    close_out(lf, "launches.csv");

    FILE *mf = open_out("meta_victim.txt");
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    fprintf(mf, "role=%s\ndevice=%s\nsms=%d\ncarveout=%d\nvictim=%s %ux%u\nvictim_iters=%u\nvictim_alone_us=%.1f\n"
                "launches=%d\nlaunches_asked=%d\nclock_method=%s\nclock_samples=%d\n"
                "clock_offset_ns=%lld\nclock_bound_gap_ns=%lld\nclock_pre_hi_ns=%lld\nclock_pre_lo_ns=%lld\n"
                "clock_post_hi_ns=%lld\nclock_post_lo_ns=%lld\n",
            g_role, p.name, p.multiProcessorCount, o.carveout ? 50 : -1, v.name, v.blocks, v.threads, v.iters,
            v_alone, done, n, cs.mapped ? "mapped" : "sync", cs.samples, cs.hi, cs.hi - cs.lo, cs.hi_pre,
            cs.lo_pre, cs.hi_post, cs.lo_post);
    close_out(mf, "meta_victim.txt");
    if (paired) signal_file(".victim_done");
    fprintf(stderr, "placement_mps %s: %d launches, alone %.1f us (%u iters), clock %s gap %lld ns\n", g_role, done,
            v_alone, v.iters, cs.mapped ? "mapped" : "sync", cs.hi - cs.lo);
    CK(cudaFree(rec));
    CK(cudaFree(cal));
}

// ---------------------------------------------------------------- background role

struct vlaunch {
    long long stamp, first, last_end;
};

static std::vector<vlaunch> read_launches()
{
    std::vector<vlaunch> v;
    FILE *f = fopen(path("launches.csv").c_str(), "r");
    if (!f) return v;
    char line[512];
    if (!fgets(line, sizeof line, f)) { fclose(f); return v; }
    while (fgets(line, sizeof line, f) && v.size() < 10000) {
        int i, got;
        long long stamp, after, synced;
        unsigned long long first, last;
        if (sscanf(line, "%d,%lld,%lld,%lld,%llu,%llu,%d", &i, &stamp, &after, &synced, &first, &last, &got) != 7)
            continue;
        v.push_back({stamp, got ? (long long)first : (long long)synced, got ? (long long)last : (long long)synced});
    }
    fclose(f);
    return v;
}

static void bg_role(const opts &o)
{
    g_role = "bg";
    CK(cudaSetDevice(0));
    set_carveout(o.carveout);
    shape s;
    if (!bg_shape(o.bg, s)) die("unknown background (cmp-seq, memlong-seq)");
    gpu g;
    CK(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
    if (s.k == MEM) {
        CK(cudaMalloc(&g.buf, (size_t)N4 * sizeof(float4)));
        CK(cudaMemset(g.buf, 0, (size_t)N4 * sizeof(float4)));
    }
    // the most kernels the record buffer is sized for (bounds memory: 8M blocks, 192 MB)
    const size_t max_blocks = 8u << 20;
    int cap = (int)std::min<size_t>(4000, max_blocks / s.blocks);
    unsigned long long *rec = nullptr;
    CK(cudaMalloc(&rec, 3 * (size_t)s.blocks * cap * sizeof *rec));
    CK(cudaDeviceSynchronize());
    signal_file(".bg_init");
    wait_file(".victim_ready", 60);

    double alone = calibrate(s, g, rec);
    int count = (int)std::min<double>(cap, std::max(1.0, o.ms * 1000.0 / std::max(alone, 1.0)));
    CK(cudaMemset(rec, 0, 3 * (size_t)s.blocks * count * sizeof *rec));
    CK(cudaDeviceSynchronize());

    // at most 64 kernels queued: chunks of 16, each ended by an event; before
    // chunk c, chunk c-4 must have ended (keeps the host out of a full queue)
    const int chunk = 16, ahead = 4, ring = 8;
    cudaEvent_t ev[ring];
    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    long long t_launch0 = host_ns();
    for (int c = 0; c * chunk < count; c++) {
        if (c >= ahead) CK(cudaEventSynchronize(ev[(c - ahead) % ring]));
        for (int k = c * chunk; k < std::min(count, (c + 1) * chunk); k++)
            launch1(s, g, rec + 3 * (size_t)k * s.blocks);
        CK(cudaEventRecord(ev[c % ring], g.st));
        if (c == 0) signal_file(".bg_ready");
    }
    CK(cudaStreamSynchronize(g.st));
    long long t_end = host_ns();
    signal_file(".bg_done");
    for (auto &e : ev) CK(cudaEventDestroy(e));

    std::vector<unsigned long long> h = fetch(rec, (size_t)s.blocks * count);
    struct kinfo { unsigned long long start, end; };
    std::vector<kinfo> ks(count);
    FILE *kf = open_out("bg_kernels.csv");
    fprintf(kf, "kernel,start_ns,end_ns,blocks,med_block_ns\n");
    std::vector<unsigned long long> d;
    for (int k = 0; k < count; k++) {
        const unsigned long long *r = &h[3 * (size_t)k * s.blocks];
        unsigned long long lo = ~0ull, hi = 0;
        d.clear();
        for (unsigned int b = 0; b < s.blocks; b++) {
            if (!r[3 * b + 1]) continue;
            lo = std::min(lo, r[3 * b + 1]);
            hi = std::max(hi, r[3 * b + 2]);
            d.push_back(r[3 * b + 2] - r[3 * b + 1]);
        }
        if (d.empty()) lo = hi = 0;
        ks[k] = {lo, hi};
        unsigned long long med = 0;
        if (!d.empty()) {
            std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
            med = d[d.size() / 2];
        }
        fprintf(kf, "%d,%llu,%llu,%zu,%llu\n", k, lo, hi, d.size(), med);
    }
    close_out(kf, "bg_kernels.csv");

    FILE *mf = open_out("meta_bg.txt");
    fprintf(mf, "role=bg\nbg=%s %ux%u\ncarveout=%d\nbg_iters=%u\nbg_alone_us=%.1f\nkernels=%d\nms_asked=%d\n"
                "host_launch_to_done_ms=%.2f\n",
            s.name, s.blocks, s.threads, o.carveout ? 50 : -1, s.iters, alone, count, o.ms, (t_end - t_launch0) / 1e6);
    close_out(mf, "meta_bg.txt");
    fprintf(stderr, "placement_mps bg: %s %d kernels, alone %.1f us (%u iters), %.1f ms launch to done\n", s.name,
            count, alone, s.iters, (t_end - t_launch0) / 1e6);

    // the background's blocks near each victim launch: from 50 us before the
    // stamp to 20 us after the victim's last block end; if its first block came
    // over 1.2 ms after the stamp, only the first 1 ms of the wait and from
    // 200 us before that block on. At most 4M rows in all.
    wait_file(".victim_done", 60);
    std::vector<vlaunch> vl = read_launches();
    FILE *bf = open_out("bg_blocks.csv");
    fprintf(bf, "launch,kernel,sm,start,end\n");
    const long long pre = 50000, post = 20000, head = 1000000, lead = 200000;
    const size_t max_rows = 4u << 20;
    size_t rows = 0;
    bool cut = false;
    for (size_t i = 0; i < vl.size() && rows < max_rows; i++) {
        long long lo = vl[i].stamp - pre, hi = std::max(vl[i].last_end, vl[i].stamp) + post;
        long long hole_lo = hi, hole_hi = hi; // blocks wholly inside (hole_lo, hole_hi) are left out
        if (hi - lo > head + pre + lead && vl[i].first > vl[i].stamp + head + lead) {
            hole_lo = vl[i].stamp + head;
            hole_hi = vl[i].first - lead;
            cut = true;
        }
        for (int k = 0; k < count && rows < max_rows; k++) {
            if (!ks[k].end || (long long)ks[k].end < lo || (long long)ks[k].start > hi) continue;
            if ((long long)ks[k].start > hole_lo && (long long)ks[k].end < hole_hi) continue;
            const unsigned long long *r = &h[3 * (size_t)k * s.blocks];
            for (unsigned int b = 0; b < s.blocks && rows < max_rows; b++) {
                if (!r[3 * b + 1]) continue;
                long long st = (long long)r[3 * b + 1], en = (long long)r[3 * b + 2];
                if (en < lo || st > hi || (st > hole_lo && en < hole_hi)) continue;
                fprintf(bf, "%zu,%d,%llu,%lld,%lld\n", i, k, r[3 * b], st - vl[i].stamp, en - vl[i].stamp);
                rows++;
            }
        }
    }
    if (cut || rows >= max_rows)
        fprintf(stderr, "placement_mps bg: bg_blocks.csv%s%s\n",
                cut ? ": a victim waited over 1.2 ms, blocks in its wait's middle left out" : "",
                rows >= max_rows ? ": cut at 4M rows" : "");
    close_out(bf, "bg_blocks.csv");
    fprintf(stderr, "placement_mps bg: %zu background blocks near %zu victim launches\n", rows, vl.size());
    CK(cudaFree(rec));
    if (g.buf) CK(cudaFree(g.buf));
}

// ---------------------------------------------------------------- main

static void usage()
{
    fprintf(stderr, "usage: placement_mps bg BG OUTDIR [opts] | victim OUTDIR [opts] | alone OUTDIR [opts] |\n"
                    "       same BG OUTDIR [opts]\n"
                    "  BG: cmp-seq | memlong-seq; opts: carveout n=N (1-200) ms=M (1-400)\n");
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) usage();
    std::string mode = argv[1];
    opts o;
    int a = 2;
    if (mode == "bg" || mode == "same") {
        if (argc < 4) usage();
        o.bg = argv[a++];
        shape s;
        if (!bg_shape(o.bg, s)) usage();
    } else if (mode != "victim" && mode != "alone")
        usage();
    g_out = argv[a++];
    for (; a < argc; a++) {
        if (!strcmp(argv[a], "carveout")) o.carveout = true;
        else if (!strncmp(argv[a], "n=", 2)) o.n = atoi(argv[a] + 2);
        else if (!strncmp(argv[a], "ms=", 3)) o.ms = atoi(argv[a] + 3);
        else usage();
    }
    if (o.n < 1 || o.n > 200 || o.ms < 1 || o.ms > 400) usage();
    if (access(g_out.c_str(), W_OK) != 0) {
        perror(g_out.c_str());
        return 1;
    }
    if (mode == "bg") bg_role(o);
    else if (mode == "victim") victim_role(o, true);
    else if (mode == "alone") victim_role(o, false);
    else {
        std::thread t(bg_role, o);
        victim_role(o, true);
        t.join();
    }
    g_role = mode.c_str();
    CK(cudaDeviceSynchronize());
    return 0;
}
