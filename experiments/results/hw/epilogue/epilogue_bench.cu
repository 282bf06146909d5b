// What the synthetic kernels' completion publishing costs between back-to-back
// kernels on the H100: 2000 queued 132-block kernels that each spin 5 us, with
// epilogue variants, period per kernel from CUDA events. Standalone:
//   nvcc -O2 -arch=sm_90 -o epilogue_bench epilogue_bench.cu && ./epilogue_bench
#include <cstdio>
#include <cuda_runtime.h>

#define G 64
struct slot { unsigned long long start, end; unsigned exited, claimed, rg, pad; unsigned g_exited[G]; unsigned long long g_end[G]; };
struct rec { unsigned long long s, e; unsigned claimed, gen; };

__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ void spin(unsigned long long ns) { unsigned long long t0 = gt(); while (gt() - t0 < ns) {} }

// 0: nothing. 1: current epilogue (two-level counters, reset, host-mapped record, fence_system).
// 2: as 1, record in device memory (no system fence). 3: as 1, no slot reset loop.
// 4: one-level: RED max of end, one atomicAdd counter, last block: host-mapped record.
// 5: as 1, but each group's last block resets its own group counters (no serial reset loop).
template <int V> __global__ void k(slot *s, rec *r, unsigned gen, unsigned long long ns)
{
    spin(ns);
    __syncthreads();
    if (threadIdx.x || V == 0) return;
    unsigned long long t = gt();
    if (V == 4) {
        atomicMax(&s->end, t);
        __threadfence();
        if (atomicAdd(&s->exited, 1u) != gridDim.x - 1) return;
        __threadfence();
        volatile slot *vs = s;
        unsigned long long en = vs->end;
        vs->end = 0; vs->exited = 0;
        __threadfence();
        r->e = en;
        __threadfence_system();
        *(volatile unsigned *)&r->gen = gen;
        return;
    }
    const unsigned g = blockIdx.x % G, ng = gridDim.x < G ? gridDim.x : G;
    const unsigned ing = gridDim.x / G + (g < gridDim.x % G ? 1u : 0u);
    if (t > *(volatile unsigned long long *)&s->g_end[g]) atomicMax(&s->g_end[g], t);
    __threadfence();
    if (atomicAdd(&s->g_exited[g], 1u) != ing - 1) return;
    __threadfence();
    unsigned long long ge = *(volatile unsigned long long *)&s->g_end[g];
    if (V == 5) { ((volatile slot *)s)->g_end[g] = 0; ((volatile slot *)s)->g_exited[g] = 0; }
    if (ge > *(volatile unsigned long long *)&s->end) atomicMax(&s->end, ge);
    __threadfence();
    if (atomicAdd(&s->exited, 1u) != ng - 1) return;
    __threadfence();
    volatile slot *vs = s;
    unsigned long long st = vs->start, en = vs->end;
    vs->start = ~0ull; vs->end = 0; vs->claimed = 0; vs->exited = 0;
    if (V == 5)
        ;
    else if (V != 3)
        for (unsigned i = 0; i < ng; i++) { vs->g_exited[i] = 0; vs->g_end[i] = 0; }
    else
        vs->g_exited[g] = 0; /* wrong on purpose past one launch: cost only */
    __threadfence();
    r->s = st; r->e = en;
    if (V == 2) __threadfence(); else __threadfence_system();
    *(volatile unsigned *)&r->gen = gen;
}

template <int V> float run(slot *s, rec *rh, rec *rd, unsigned long long ns, int n)
{
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    rec *r = V == 2 ? rd : rh;
    for (int i = 0; i < 50; i++) k<V><<<132, 128>>>(s, r, i, ns);
    cudaEventRecord(a);
    for (int i = 0; i < n; i++) k<V><<<132, 128>>>(s, r, i, ns);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    return ms * 1000.f / n;
}

#include <unistd.h>
#include <atomic>
#include <thread>
#include <immintrin.h>

/* A host thread reading the record the kernels publish to, as the backend's
 * event loop does while it waits for a completion: mode 1 back to back, mode 2
 * with a pause instruction between reads. */
static std::atomic<int> poll_mode{0};
static std::atomic<bool> poll_quit{false};
static void poller(const volatile rec *r)
{
    unsigned sink = 0;
    while (!poll_quit.load(std::memory_order_relaxed)) {
        int m = poll_mode.load(std::memory_order_relaxed);
        if (!m) { usleep(1000); continue; }
        sink += r->gen;
        if (m == 2) _mm_pause();
    }
    (void)sink;
}

template <int V> void both(const char *name, slot *s, rec *rh, rec *rd, unsigned long long ns, int n)
{
    cudaDeviceSynchronize();
    usleep(300000); /* idle: the clocks come down, as between a policy's bursts */
    float cold = run<V>(s, rh, rd, ns, n);
    float warm = run<V>(s, rh, rd, ns, n);
    printf("spin %5llu ns  %-14s cold %6.2f us  warm %6.2f us per kernel\n", ns, name, cold, warm);
}

int main()
{
    slot *s; rec *rh, *rd, *rdev;
    cudaMalloc(&s, sizeof *s); cudaMemset(s, 0, sizeof *s);
    cudaHostAlloc(&rh, sizeof *rh, cudaHostAllocMapped); cudaHostGetDevicePointer(&rd, rh, 0);
    cudaMalloc(&rdev, sizeof *rdev);
    const int n = 2000;
    std::thread th(poller, (const volatile rec *)rh);
    for (int pm = 0; pm < 3; pm++) {
        poll_mode = pm;
        const char *nm[3] = {"no host poll", "host polls the record", "host polls with pause"};
        printf("-- %s\n", nm[pm]);
        for (unsigned long long ns : {5000ull}) {
            both<0>("none", s, rd, rdev, ns, n);
            both<1>("current", s, rd, rdev, ns, n);
            both<2>("device-record", s, rd, rdev, ns, n);
        }
    }
    poll_mode = 0;
    poll_quit = true;
    th.join();
    for (int rep = 0; rep < 1; rep++)
        for (unsigned long long ns : {5000ull, 30000ull}) {
            both<0>("none", s, rd, rdev, ns, n);
            both<1>("current", s, rd, rdev, ns, n);
            both<2>("device-record", s, rd, rdev, ns, n);
            both<3>("no-reset", s, rd, rdev, ns, n);
            both<4>("one-level", s, rd, rdev, ns, n);
            both<5>("group-reset", s, rd, rdev, ns, n);
        }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
