// Time slicing (H100): what does it cost a context to start work on a GPU that
// another context left idle? Two processes take turns by a fixed pseudo-random
// schedule: every 2 ms one of them launches a 10 us kernel (the GPU is idle in
// between). Each kernel stamps its start with the GPU's globaltimer; each
// process compares its own launch-to-start latency (globaltimer start minus the
// host's CLOCK_REALTIME at the launch: an unknown but fixed offset, which
// cancels in the difference) when the previous kernel on the GPU was the other
// process's against when it was its own. The simulator's idle_switch_ns is
// that difference (experiments/results/hw/diag_tgs measured ~75 us in the
// replay under TGS).
//   nvcc -O2 -arch=sm_90 -o si switch_in.cu && ./si
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

__global__ void stamped(unsigned long long ns, unsigned long long *start)
{
    spin_from_start(ns, start);
}

static long long now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); // the same clock in both processes
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const int ROUNDS = 600;
static const long long PERIOD_NS = 2000000;

static int owner(int r) // a fixed pseudo-random schedule both processes know
{
    unsigned x = (unsigned)r * 2654435761u;
    return (x >> 13) & 1;
}

static void median_report(int me, const char *what, std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    if (v.empty()) return;
    printf("process %d, previous kernel %-6s n %3zu  launch-to-start (offset included) us: p10 %.1f median %.1f p90 %.1f\n",
           me, what, v.size(), v[v.size() / 10], v[v.size() / 2], v[v.size() * 9 / 10]);
}

static void run(int me, long long t0)
{
    unsigned long long *d;
    cudaMalloc(&d, ROUNDS * sizeof *d);
    cudaMemset(d, 0xff, ROUNDS * sizeof *d);
    stamped<<<132, 128>>>(1000, d); // warm-up (round 0's slot is reset below)
    cudaDeviceSynchronize();
    cudaMemset(d, 0xff, ROUNDS * sizeof *d);
    cudaDeviceSynchronize();
    std::vector<long long> launch(ROUNDS, 0);
    for (int r = 0; r < ROUNDS; r++) {
        if (owner(r) != me) continue;
        long long at = t0 + r * PERIOD_NS;
        while (now_ns() < at) {}
        launch[r] = now_ns();
        stamped<<<132, 128>>>(10000, d + r);
        cudaDeviceSynchronize();
    }
    std::vector<unsigned long long> s(ROUNDS);
    cudaMemcpy(s.data(), d, ROUNDS * sizeof *d, cudaMemcpyDeviceToHost);
    std::vector<double> after_own, after_other;
    for (int r = 1; r < ROUNDS; r++) {
        if (owner(r) != me) continue;
        double lat = (double)((long long)s[r] - launch[r]) / 1e3;
        (owner(r - 1) == me ? after_own : after_other).push_back(lat);
    }
    median_report(me, "own", after_own);
    median_report(me, "other", after_other);
    fflush(stdout);
}

int main()
{
    long long t0 = now_ns() + 3000000000LL; // both processes set up by then
    pid_t p = fork();
    if (p == 0) {
        run(1, t0);
        _exit(0);
    }
    run(0, t0);
    int st;
    waitpid(p, &st, 0);
    return 0;
}
