// Time slicing with one busy and one sporadic process (H100): process A queues
// kernels of 30 us back to back for ~1 s; process B, every 3 ms, launches one
// 10 us kernel and waits for it. B's wait = launch-to-completion host time
// minus what the same takes with A absent. The simulator's rule: B waits for
// the rest of A's slice (up to 2.09 ms, counted from B's arrival) plus a
// 0.30 ms switch.
//   nvcc -O2 -arch=sm_90 -o sp sporadic.cu && ./sp
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

static std::vector<double> sporadic(int m)
{
    std::vector<double> lat;
    spin<<<132, 128>>>(1000);
    cudaDeviceSynchronize();
    for (int i = 0; i < m; i++) {
        usleep(3000);
        double t0 = now_us();
        spin<<<132, 128>>>(10000);
        cudaDeviceSynchronize();
        lat.push_back(now_us() - t0);
    }
    return lat;
}

static void report(const char *what, std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v[(size_t)(p * (v.size() - 1))]; };
    printf("%-28s n %zu  latency us: p10 %.0f  median %.0f  p90 %.0f  p99 %.0f  max %.0f\n", what, v.size(), q(0.1),
           q(0.5), q(0.9), q(0.99), q(1.0));
}

int main()
{
    // No CUDA in the parent: each process makes its own context.
    pid_t b = fork();
    if (b == 0) {
        report("B alone", sporadic(200));       // ~0.7 s
        usleep(800000);                          // A starts at ~0.9 s and fills its queue
        report("B beside busy A", sporadic(200));
        fflush(stdout);
        _exit(0);
    }
    usleep(900000);
    pid_t a = busy_neighbour(60000); // ~1.8 s of GPU work
    int st;
    waitpid(b, &st, 0);
    waitpid(a, &st, 0);
    return 0;
}
