// What a traced launch costs the launching thread (H100): a host-bound loop of
// launches of an empty kernel (1 block of 32 threads), a stream synchronize
// after every 500 (the "iterations"), 200 iterations after 20 of warm-up.
// Prints the host time per launch call (median over iterations of the
// launch loop's time / 500) and per iteration including the synchronize.
// Run untraced and under tally-trace configurations (run.sh).
// LAUNCH_COST_QUERIES=Q: each launch also makes Q cudaGetDevice and Q
// cudaGetLastError calls, as a PyTorch op does around its launch (what a
// tracer's runtime-API callbacks may cost on calls that launch nothing).
//   nvcc -O2 -arch=sm_90 -o launch_cost launch_cost.cu
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty() {}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
    const int per_iter = 500, warm = 20, iters = 200;
    const char *qs = getenv("LAUNCH_COST_QUERIES");
    const int queries = qs ? atoi(qs) : 0;
    int dev;
    cudaStream_t s;
    cudaStreamCreate(&s);
    std::vector<double> launch_us, iter_us;
    for (int it = 0; it < warm + iters; it++) {
        double t0 = now_us();
        for (int k = 0; k < per_iter; k++) {
            for (int q = 0; q < queries; q++) {
                cudaGetDevice(&dev);
                (void)cudaGetLastError();
            }
            empty<<<1, 32, 0, s>>>();
        }
        double t1 = now_us();
        cudaStreamSynchronize(s);
        double t2 = now_us();
        if (it >= warm) {
            launch_us.push_back((t1 - t0) / per_iter);
            iter_us.push_back(t2 - t0);
        }
    }
    std::sort(launch_us.begin(), launch_us.end());
    std::sort(iter_us.begin(), iter_us.end());
    printf("%s launch_call_us median %.3f p10 %.3f p90 %.3f iteration_us median %.1f\n",
           argc > 1 ? argv[1] : "run", launch_us[iters / 2], launch_us[iters / 10],
           launch_us[iters * 9 / 10], iter_us[iters / 2]);
    return 0;
}
