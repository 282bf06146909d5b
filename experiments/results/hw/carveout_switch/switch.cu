// What an SM's change of shared-memory carveout costs on the H100.
// Two spin kernels without shared memory and without a carveout preference,
// whose block sizes make the driver configure different carveouts (Nsight
// Compute, ../session13/carveouts.csv: 32 KB for 256-thread blocks, 8 KB for
// 1024-thread ones): A has 256-thread blocks, B 1024-thread ones. On one
// stream, N launches of A A A..., B B B... and A B A B...: an alternating
// sequence makes every SM drain and change carveout at every launch; the
// difference per launch against the mean of the two uniform sequences is the
// cost of a switch. Also two streams at once (A on one, B on the other) against
// A on both: how much longer the pair takes when the two kernels cannot share
// SMs. Each launch: 132 blocks (A: 256 threads, B: 1024) spinning SPIN_NS on %globaltimer.
// Medians of 5 repetitions; CUDA events around each sequence.
//   nvcc -O2 -arch=sm_90 -o switch switch.cu && ./switch [PREF]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gt()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <int TAG>
__global__ void spin(unsigned long long ns, int *sink)
{
    extern __shared__ int sm[];
    unsigned long long t0 = gt();
    while (gt() - t0 < ns) {}
    if (threadIdx.x == 0 && ns == 1) { sm[0] = TAG; sink[blockIdx.x] = sm[0]; }
}

static const int N = 2000, BLOCKS = 132, THREADS = 256, THREADS_B = 1024;

static float seq(const char *pat, unsigned long long ns, cudaStream_t s1, cudaStream_t s2, int *sink)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> v;
    for (int r = 0; r < 6; r++) {
        CK(cudaDeviceSynchronize());
        CK(cudaEventRecord(a, s1));
        CK(cudaStreamWaitEvent(s2, a, 0));
        for (int i = 0; i < N; i++) {
            char k = pat[i % 2];          // "AA", "BB", "AB": one stream; "A|B", "A|A": two
            if (pat[1] == '|') {
                spin<0><<<BLOCKS, THREADS, 0, s1>>>(ns, sink);
                if (pat[2] == 'B') spin<1><<<BLOCKS, THREADS_B, 0, s2>>>(ns, sink);
                else spin<2><<<BLOCKS, THREADS, 0, s2>>>(ns, sink);
            } else if (k == 'A') {
                spin<0><<<BLOCKS, THREADS, 0, s1>>>(ns, sink);
            } else {
                spin<1><<<BLOCKS, THREADS_B, 0, s1>>>(ns, sink);
            }
        }
        CK(cudaGetLastError());
        cudaEvent_t c;
        CK(cudaEventCreate(&c));
        CK(cudaEventRecord(c, s2));
        CK(cudaStreamWaitEvent(s1, c, 0));
        CK(cudaEventRecord(b, s1));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        CK(cudaEventDestroy(c));
        if (r) v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    int *sink;
    CK(cudaMalloc(&sink, 4096 * sizeof(int)));
    if (argc > 1) { // "pref P": every kernel prefers carveout P (the control: one carveout for all)
        int p = atoi(argv[1]);
        CK(cudaFuncSetAttribute(spin<0>, cudaFuncAttributePreferredSharedMemoryCarveout, p));
        CK(cudaFuncSetAttribute(spin<1>, cudaFuncAttributePreferredSharedMemoryCarveout, p));
        CK(cudaFuncSetAttribute(spin<2>, cudaFuncAttributePreferredSharedMemoryCarveout, p));
        printf("every kernel prefers carveout %d%%\n", p);
    }
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    seq("AA", 2000, s1, s2, sink); // warm-up
    printf("%d launches of %d spin blocks (A %d threads, B %d); medians of 5; us per launch (per pair for two streams)\n",
           N, BLOCKS, THREADS, THREADS_B);
    printf("%8s %9s %9s %9s %9s %12s %9s %9s %9s\n", "spin_ns", "A A", "B B", "A B", "switch", "A|A (2 str)",
           "A|B", "extra", "alone A");
    for (unsigned long long ns : {1000ull, 5000ull, 20000ull}) {
        float aa = seq("AA", ns, s1, s2, sink), bb = seq("BB", ns, s1, s2, sink), ab = seq("AB", ns, s1, s2, sink);
        float paa = seq("A|A", ns, s1, s2, sink), pab = seq("A|B", ns, s1, s2, sink);
        double u = 1000.0 / N;
        printf("%8llu %9.2f %9.2f %9.2f %9.2f %12.2f %9.2f %9.2f %9.2f\n", ns, aa * u, bb * u, ab * u,
               (ab - (aa + bb) / 2) * u, paa * u, pab * u, (pab - paa) * u, ns / 1000.0);
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
