// Shared by the standalone H100 probes under experiments/results/hw
// (timeslice/*.cu, graph_gap/, graph_prio/, contention_shapes/; each still
// builds with one nvcc command): the GPU's global timer, spin kernels that
// hold every block for a given time, the host's clock, and a busy neighbour
// process.
#pragma once
#include <chrono>
#include <unistd.h>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned long long gt()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Every block spins ns from its own start.
__global__ void spin(unsigned long long ns)
{
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0) t0 = gt();
    __syncthreads();
    while (gt() - t0 < ns) {}
}

// The body of a stamped spin kernel: every block spins ns from its own start,
// and the earliest block start goes to *start (set to ~0 before the launch).
__device__ __forceinline__ void spin_from_start(unsigned long long ns, unsigned long long *start)
{
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0) {
        t0 = gt();
        atomicMin(start, t0);
    }
    __syncthreads();
    while (gt() - t0 < ns) {}
}

// The same, recording the earliest block start and the latest block end
// (*start and *end set to ~0 and 0 before the launch).
__global__ void spin_span(unsigned long long ns, unsigned long long *start, unsigned long long *end)
{
    spin_from_start(ns, start);
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(end, gt());
}

static inline double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A child process with its own context that queues `kernels` 30 us spin
// kernels on all 132 SMs, waits for them and exits; the caller reaps it.
static inline pid_t busy_neighbour(int kernels)
{
    pid_t a = fork();
    if (a == 0) {
        for (int i = 0; i < kernels; i++) spin<<<132, 128>>>(30000);
        cudaDeviceSynchronize();
        _exit(0);
    }
    return a;
}
