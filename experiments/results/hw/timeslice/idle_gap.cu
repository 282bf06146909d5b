// Time slicing with one busy process and one that idles G us between its
// kernels (H100): does a context that goes idle for a short while lose the GPU
// to a busy one? Process A queues 30 us kernels back to back; process B
// launches a 10 us kernel, waits for it, spins G us on the host, and again,
// 150 times per G. B's latency per kernel, alone and beside A.
//   nvcc -O2 -arch=sm_90 -o ig idle_gap.cu && ./ig
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>
#include <signal.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

static std::vector<double> sporadic(int m, double idle_us)
{
    std::vector<double> lat;
    spin<<<132, 128>>>(1000);
    cudaDeviceSynchronize();
    for (int i = 0; i < m; i++) {
        double w = now_us();
        while (now_us() - w < idle_us) {}
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
    const double gaps[] = {5, 20, 50, 100, 200, 500, 1000, 3000};
    pid_t b = fork();
    if (b == 0) {
        for (double g : gaps) {
            char what[64];
            snprintf(what, sizeof what, "B alone, idle %.0f us", g);
            report(what, sporadic(150, g));
        }
        fflush(stdout);
        usleep(1500000); // A starts at ~1.2 s
        for (double g : gaps) {
            char what[64];
            snprintf(what, sizeof what, "B beside A, idle %.0f us", g);
            report(what, sporadic(150, g));
        }
        fflush(stdout);
        _exit(0);
    }
    usleep(1200000);
    pid_t a = busy_neighbour(150000); // ~4.5 s of GPU work
    int st;
    waitpid(b, &st, 0);
    kill(a, SIGKILL);
    waitpid(a, &st, 0);
    return 0;
}
