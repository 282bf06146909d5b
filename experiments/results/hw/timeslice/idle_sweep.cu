// Time slicing (H100): how long may a context leave the GPU idle before a
// busy context gets it? Process A queues 30 us kernels back to back; process B
// runs a 10 us kernel, sees it end (its last block sets a flag in mapped host
// memory), spins D us on the host, launches the next one; 150 tries per D.
// Both kernels stamp the GPU's globaltimer, so B's real GPU idle between two
// of its kernels (end of one to start of the next) is measured, not assumed:
// either small (B kept the GPU) or ~2.4 ms (it lost it to A's slice).
// For each D: the median real idle of the tries that kept the GPU, and how
// many lost it. The simulator's idle_handover_ns is the threshold.
//   nvcc -O2 -arch=sm_90 -o is idle_sweep.cu && ./is
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

// B's kernel: every block spins ns; the first block to start stamps the
// start, the last block to finish stamps the end and raises the host flag.
__global__ void stamped(unsigned long long ns, unsigned long long *start, unsigned long long *end,
                        unsigned int *done_blocks, volatile int *flag)
{
    spin_from_start(ns, start);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(done_blocks, 1) == gridDim.x - 1) {
            *end = gt();
            __threadfence_system();
            *flag = 1;
        }
    }
}

struct run_result {
    std::vector<double> kept_idle_us; // real GPU idle of the tries that kept the GPU
    int lost = 0;
};

static run_result sweep_one(double d_us, int tries)
{
    int n = tries + 1;
    unsigned long long *start, *end;
    unsigned int *done;
    int *flag_h, *flag_d;
    cudaMalloc(&start, n * sizeof *start);
    cudaMalloc(&end, n * sizeof *end);
    cudaMalloc(&done, n * sizeof *done);
    cudaMemset(start, 0xff, n * sizeof *start);
    cudaMemset(done, 0, n * sizeof *done);
    cudaHostAlloc(&flag_h, n * sizeof *flag_h, cudaHostAllocMapped);
    for (int i = 0; i < n; i++) flag_h[i] = 0;
    cudaHostGetDevicePointer(&flag_d, flag_h, 0);
    cudaDeviceSynchronize();
    for (int i = 0; i < n; i++) {
        stamped<<<132, 128>>>(10000, start + i, end + i, done + i, flag_d + i);
        while (!((volatile int *)flag_h)[i]) {}
        double w = now_us();
        while (now_us() - w < d_us) {}
    }
    cudaDeviceSynchronize();
    std::vector<unsigned long long> s(n), e(n);
    cudaMemcpy(s.data(), start, n * sizeof *start, cudaMemcpyDeviceToHost);
    cudaMemcpy(e.data(), end, n * sizeof *end, cudaMemcpyDeviceToHost);
    run_result r;
    for (int i = 1; i < n; i++) {
        double idle = (double)(long long)(s[i] - e[i - 1]) / 1e3;
        if (idle > 500)
            r.lost++;
        else
            r.kept_idle_us.push_back(idle);
    }
    cudaFree(start), cudaFree(end), cudaFree(done), cudaFreeHost(flag_h);
    return r;
}

static void report(const char *who, double d, run_result r)
{
    std::sort(r.kept_idle_us.begin(), r.kept_idle_us.end());
    auto q = [&](double p) {
        return r.kept_idle_us.empty() ? -1.0 : r.kept_idle_us[(size_t)(p * (r.kept_idle_us.size() - 1))];
    };
    printf("%-7s D %5.1f us: lost the GPU %3d of %3zu; real idle when kept us: p10 %.1f median %.1f p90 %.1f max %.1f\n",
           who, d, r.lost, r.lost + r.kept_idle_us.size(), q(0.1), q(0.5), q(0.9), q(1.0));
}

int main()
{
    const double ds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 30, 50};
    pid_t b = fork();
    if (b == 0) {
        sweep_one(0, 20); // warm-up
        for (double d : ds) report("alone", d, sweep_one(d, 150));
        fflush(stdout);
        usleep(3500000); // A (started at 2.5 s) is surely queueing by now
        for (double d : ds) report("beside", d, sweep_one(d, 150));
        fflush(stdout);
        _exit(0);
    }
    usleep(2500000);
    pid_t a = busy_neighbour(400000); // ~12 s of GPU work
    int st;
    waitpid(b, &st, 0);
    kill(a, SIGKILL);
    waitpid(a, &st, 0);
    return 0;
}
