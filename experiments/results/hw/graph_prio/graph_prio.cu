// Does the gap between back-to-back kernels inside a CUDA graph depend on the
// stream's priority, or on other streams of the same context (H100)? Tally's
// high-priority inference graphs showed 0.3 us longer gaps than the same job
// alone although nothing else ran on the GPU (README.md). 2000 kernels of 132
// blocks x 128 threads spinning 5 us, captured into one graph and launched on:
//   least     a stream of the least priority, the only stream
//   greatest  a stream of the greatest priority, the only stream
//   +idle     greatest, with an idle least-priority stream in the context
//   +used     greatest, after a kernel ran on that least-priority stream
//   +graph    greatest, after a one-kernel graph ran on the least-priority stream
// Each line: the median gap (next kernel's first block start - this kernel's
// last block end) and the period.
//   nvcc -O2 -arch=sm_90 -o graph_prio graph_prio.cu && ./graph_prio
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "../spin.cuh"

static const int n = 2000;
static unsigned long long *st, *en;

static double median(std::vector<long long> v)
{
    std::sort(v.begin(), v.end());
    return (double)v[v.size() / 2];
}

static void measure(const char *what, cudaStream_t s)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < n; i++) spin_span<<<132, 128, 0, s>>>(5000, st + i, en + i);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaGraphDestroy(g);
    cudaGraphUpload(ge, s);
    for (int rep = 0; rep < 3; rep++) {
        cudaMemsetAsync(st, 0xff, n * sizeof *st, s);
        cudaMemsetAsync(en, 0, n * sizeof *en, s);
        cudaStreamSynchronize(s);
        cudaGraphLaunch(ge, s);
        cudaStreamSynchronize(s);
        std::vector<unsigned long long> hs(n), he(n);
        cudaMemcpy(hs.data(), st, n * sizeof *st, cudaMemcpyDeviceToHost);
        cudaMemcpy(he.data(), en, n * sizeof *en, cudaMemcpyDeviceToHost);
        std::vector<long long> gap;
        for (int i = 1; i < n; i++) gap.push_back((long long)hs[i] - (long long)he[i - 1]);
        printf("%-9s gap median %.3f us  period %.3f us\n", what, median(gap) / 1e3,
               (double)(he[n - 1] - hs[0]) / n / 1e3);
    }
    cudaGraphExecDestroy(ge);
}

int main()
{
    int least, greatest;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    printf("stream priorities: least %d greatest %d\n", least, greatest);
    cudaMalloc(&st, n * sizeof *st);
    cudaMalloc(&en, n * sizeof *en);
    cudaStream_t lo, hi;
    cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least);
    measure("least", lo);
    cudaStreamDestroy(lo);
    cudaDeviceSynchronize();
    cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest);
    measure("greatest", hi);
    cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least);
    measure("+idle", hi);
    spin<<<132, 128, 0, lo>>>(5000);
    cudaStreamSynchronize(lo);
    measure("+used", hi);
    {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        cudaStreamBeginCapture(lo, cudaStreamCaptureModeThreadLocal);
        spin<<<132, 128, 0, lo>>>(5000);
        cudaStreamEndCapture(lo, &g);
        cudaGraphInstantiate(&ge, g, 0);
        cudaGraphLaunch(ge, lo);
        cudaStreamSynchronize(lo);
        measure("+graph", hi);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
