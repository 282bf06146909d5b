// The GPU's gap between back-to-back kernels on one stream, launched one by one
// or as one CUDA graph (H100). 2000 kernels of 132 blocks x 128 threads that
// spin 5 us (or 30 us) on %globaltimer; each records its first block's start and
// last block's end (max/min over blocks with atomics); gap = next start - end.
//   nvcc -O2 -arch=sm_90 -o graph_gap graph_gap.cu && ./graph_gap
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "../spin.cuh"

static double median(std::vector<long long> v)
{
    std::sort(v.begin(), v.end());
    return (double)v[v.size() / 2];
}

int main()
{
    const int n = 2000;
    unsigned long long *st, *en;
    cudaMalloc(&st, n * sizeof *st);
    cudaMalloc(&en, n * sizeof *en);
    std::vector<unsigned long long> hs(n), he(n);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int rep = 0; rep < 3; rep++)
        for (unsigned long long ns : {5000ull, 30000ull})
            for (int graph = 0; graph < 2; graph++) {
                cudaMemsetAsync(st, 0xff, n * sizeof *st, s);
                cudaMemsetAsync(en, 0, n * sizeof *en, s);
                cudaGraphExec_t ge = nullptr;
                if (graph) {
                    cudaGraph_t g;
                    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
                    for (int i = 0; i < n; i++) spin_span<<<132, 128, 0, s>>>(ns, st + i, en + i);
                    cudaStreamEndCapture(s, &g);
                    cudaGraphInstantiate(&ge, g, 0);
                    cudaGraphDestroy(g);
                    cudaGraphUpload(ge, s);
                    cudaStreamSynchronize(s);
                }
                cudaEventRecord(a, s);
                if (graph)
                    cudaGraphLaunch(ge, s);
                else
                    for (int i = 0; i < n; i++) spin_span<<<132, 128, 0, s>>>(ns, st + i, en + i);
                cudaEventRecord(b, s);
                cudaEventSynchronize(b);
                float ms;
                cudaEventElapsedTime(&ms, a, b);
                cudaMemcpy(hs.data(), st, n * sizeof *st, cudaMemcpyDeviceToHost);
                cudaMemcpy(he.data(), en, n * sizeof *en, cudaMemcpyDeviceToHost);
                std::vector<long long> gap, dur;
                for (int i = 0; i < n; i++) {
                    dur.push_back((long long)(he[i] - hs[i]));
                    if (i) gap.push_back((long long)hs[i] - (long long)he[i - 1]);
                }
                printf("spin %5llu ns  %-7s period %.3f us  kernel median %.3f us  gap median %.3f us\n", ns,
                       graph ? "graph" : "stream", ms * 1000.0 / n, median(dur) / 1e3, median(gap) / 1e3);
                if (ge) cudaGraphExecDestroy(ge);
            }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
