// How the H100 time-slices two processes that each queue many short kernels
// back to back: does a context keep the GPU for a whole slice (~2 ms, FACTS.md,
// measured with long kernels) or hand over at kernel boundaries?
// Two child processes (two contexts, no MPS) each queue N kernels of 132 blocks
// that spin K us, recording every kernel's start/end (%globaltimer) into
// device memory; the parent merges both lists and reports the runs: stretches
// of consecutive kernels of one process, and the gaps at hand-overs.
//   nvcc -O2 -arch=sm_90 -o ts timeslice.cu && ./ts [K_us] [N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

struct rec { unsigned long long s, e; int who; };

int main(int argc, char **argv)
{
    unsigned long long us = argc > 1 ? strtoull(argv[1], 0, 10) : 30;
    int n = argc > 2 ? atoi(argv[2]) : 3000;
    rec *shared = (rec *)mmap(NULL, 2 * n * sizeof(rec), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int *go = (int *)mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    go[0] = go[1] = 0;
    for (int p = 0; p < 2; p++) {
        if (fork() == 0) {
            unsigned long long *st, *en;
            cudaMalloc(&st, n * sizeof *st);
            cudaMalloc(&en, n * sizeof *en);
            cudaMemset(st, 0xff, n * sizeof *st);
            cudaMemset(en, 0, n * sizeof *en);
            spin_span<<<132, 128>>>(1000, st, en); // warm up the context
            cudaDeviceSynchronize();
            cudaMemset(st, 0xff, n * sizeof *st);
            cudaMemset(en, 0, n * sizeof *en);
            cudaDeviceSynchronize();
            __atomic_add_fetch(&go[0], 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&go[0], __ATOMIC_SEQ_CST) < 2) {}
            for (int i = 0; i < n; i++) spin_span<<<132, 128>>>(us * 1000, st + i, en + i);
            cudaDeviceSynchronize();
            std::vector<unsigned long long> hs(n), he(n);
            cudaMemcpy(hs.data(), st, n * sizeof *st, cudaMemcpyDeviceToHost);
            cudaMemcpy(he.data(), en, n * sizeof *en, cudaMemcpyDeviceToHost);
            for (int i = 0; i < n; i++) shared[p * n + i] = {hs[i], he[i], p};
            _exit(0);
        }
    }
    int st;
    while (wait(&st) > 0) {}
    std::vector<rec> all(shared, shared + 2 * n);
    std::sort(all.begin(), all.end(), [](const rec &a, const rec &b) { return a.s < b.s; });
    // runs of one process's kernels, and the idle time at each hand-over
    std::vector<double> run_ms, handover_us, gap_us;
    unsigned long long run_start = all[0].s;
    int overlaps = 0;
    for (size_t i = 1; i < all.size(); i++) {
        if (all[i].s < all[i - 1].e) overlaps++;
        if (all[i].who != all[i - 1].who) {
            run_ms.push_back((all[i - 1].e - run_start) / 1e6);
            handover_us.push_back(((long long)all[i].s - (long long)all[i - 1].e) / 1e3);
            run_start = all[i].s;
        } else {
            gap_us.push_back(((long long)all[i].s - (long long)all[i - 1].e) / 1e3);
        }
    }
    auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[v.size() / 2]; };
    auto pct = [](std::vector<double> v, double q) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[(size_t)(q * (v.size() - 1))]; };
    double total_ms = (all.back().e - all.front().s) / 1e6;
    printf("kernels %d x 2 of %llu us: total %.2f ms (%.2f ms of kernel time), %zu hand-overs, %d overlapping starts\n",
           n, us, total_ms, 2.0 * n * us / 1e3, handover_us.size(), overlaps);
    printf("  run length (ms): median %.3f p10 %.3f p90 %.3f max %.3f\n", med(run_ms), pct(run_ms, 0.1),
           pct(run_ms, 0.9), pct(run_ms, 1.0));
    printf("  hand-over idle (us): median %.1f p10 %.1f p90 %.1f\n", med(handover_us), pct(handover_us, 0.1),
           pct(handover_us, 0.9));
    printf("  gap within a run (us): median %.2f p90 %.2f\n", med(gap_us), pct(gap_us, 0.9));
    return 0;
}
