// tracer_testprog: a CUDA program whose every launch is known in advance, to
// check the tracer field by field (tests/test_tracer.c, run_device.sh).
//
//   tracer_testprog [MODE] [STEPS]
//     steps   (default) STEPS iterations, then exit normally
//     crash   2 iterations, then a NULL write on the host (SIGSEGV)
//     abort   2 iterations, then abort() (SIGABRT)
//     sigterm 2 iterations, then SIGTERM to itself while a kernel runs
//     reset   2 iterations, cudaDeviceReset, 2 more, exit
//     fork    1 iteration, fork a child that exits without CUDA, 2 more
//     hang    iterations until killed (for an outside SIGTERM/SIGKILL)
//     nocuda  never touches CUDA
//
// For each launch it prints one manifest line on stdout:
//   launch STEP NAME gx,gy,gz bx,by,bz REGS STATIC_SMEM DYNAMIC_SMEM STREAM_ID SPIN_NS
// where REGS and STATIC_SMEM come from cudaFuncGetAttributes and STREAM_ID
// from cudaStreamGetId (the id CUPTI reports). Other work it does:
//   copy STEP KIND BYTES BLOCKING   memset STEP BYTES   sync STEP KIND
// Each iteration is an NVTX range "step#N" and ends with cudaDeviceSynchronize.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x)                                                                    \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,              \
                    cudaGetErrorString(e_));                                        \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

// Spin on the global nanosecond timer: the duration does not depend on the
// SM clock. clock64 is read too so that the loop cannot be optimized away.
__device__ __forceinline__ unsigned long long gtime()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ void spin(long long ns, float *sink)
{
    unsigned long long t0 = gtime();
    long long c = 0;
    while ((long long)(gtime() - t0) < ns)
        c += clock64() & 1;
    if (c == -1)
        sink[threadIdx.x] = (float)c;
}

// 1. plain: no shared memory, few registers
__global__ void __launch_bounds__(128) tt_spin_plain(long long ns, float *sink)
{
    spin(ns, sink);
}

// 2. static + dynamic shared memory, a 3-D grid and block
__global__ void tt_spin_smem(long long ns, float *sink)
{
    __shared__ float tile[1024]; // 4096 bytes static
    extern __shared__ float dyn[];
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    tile[t % 1024] = (float)t;
    dyn[t] = (float)t;
    __syncthreads();
    spin(ns, sink);
    if (tile[(t + 1) % 1024] < -1.0f || dyn[t] < -1.0f)
        sink[t] = 0;
}

// 3. many live registers, capped by __maxnreg__
__global__ void __maxnreg__(72) tt_spin_regs(long long ns, float *sink, int n)
{
    float v[48];
#pragma unroll
    for (int i = 0; i < 48; i++)
        v[i] = sink[(threadIdx.x + i) % 256] * (float)(i + 1);
    spin(ns, sink);
    float acc = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int i = 0; i < 48; i++)
            acc += v[i] * v[(i + k + n) % 48];
    if (acc == 12345.0f)
        sink[threadIdx.x] = acc;
}

// 4. large opt-in dynamic shared memory (over the 48 KiB default)
__global__ void tt_spin_bigsmem(long long ns, float *sink)
{
    extern __shared__ float big[];
    big[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    spin(ns, sink);
    if (big[(threadIdx.x + 1) % blockDim.x] < -1.0f)
        sink[threadIdx.x] = 0;
}

static float *d_sink, *d_buf, *h_pinned, *h_pageable;
static const size_t COPY_BYTES = 4u << 20, SET_BYTES = 1u << 20;
static const int BIG_SMEM = 100 * 1024;
static cudaStream_t s_low, s_high;
static cudaEvent_t ev;

static unsigned long long stream_id(cudaStream_t s)
{
    unsigned long long id = 0;
    CHECK(cudaStreamGetId(s, &id));
    return id;
}

template <typename K>
static void manifest(int step, const char *name, K kernel, dim3 g, dim3 b, int dyn,
                     cudaStream_t s, long long ns)
{
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, kernel));
    printf("launch %d %s %u,%u,%u %u,%u,%u %d %zu %d %llu %lld\n", step, name, g.x, g.y, g.z, b.x,
           b.y, b.z, a.numRegs, a.sharedSizeBytes, dyn, stream_id(s), ns);
}

static void setup()
{
    CHECK(cudaSetDevice(0));
    int least, greatest;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(cudaStreamCreateWithPriority(&s_low, cudaStreamNonBlocking, least));
    CHECK(cudaStreamCreateWithPriority(&s_high, cudaStreamNonBlocking, greatest));
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK(cudaMalloc(&d_sink, 1 << 16));
    CHECK(cudaMemset(d_sink, 0, 1 << 16));
    CHECK(cudaMalloc(&d_buf, COPY_BYTES));
    CHECK(cudaMallocHost(&h_pinned, COPY_BYTES));
    h_pageable = (float *)calloc(1, COPY_BYTES);
    CHECK(cudaFuncSetAttribute(tt_spin_bigsmem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               BIG_SMEM));
    CHECK(cudaDeviceSynchronize());
    printf("streams low=%llu high=%llu least=%d greatest=%d\n", stream_id(s_low), stream_id(s_high),
           least, greatest);
}

// One iteration: every kind of operation the tracer records.
static void step(int i)
{
    char name[32];
    snprintf(name, sizeof name, "step#%d", i);
    nvtxRangePushA(name);

    CHECK(cudaMemcpy(d_buf, h_pageable, COPY_BYTES, cudaMemcpyHostToDevice));
    printf("copy %d HtoD %zu 1\n", i, COPY_BYTES);

    dim3 g1(132), b1(128);
    manifest(i, "tt_spin_plain", tt_spin_plain, g1, b1, 0, s_low, 50000);
    tt_spin_plain<<<g1, b1, 0, s_low>>>(50000, d_sink);

    dim3 g2(4, 3, 2), b2(32, 4, 2);
    int dyn2 = 256 * sizeof(float);
    manifest(i, "tt_spin_smem", tt_spin_smem, g2, b2, dyn2, s_low, 30000);
    tt_spin_smem<<<g2, b2, dyn2, s_low>>>(30000, d_sink);

    CHECK(cudaEventRecord(ev, s_low));
    CHECK(cudaStreamWaitEvent(s_high, ev, 0));
    printf("sync %d stream_wait_event\n", i);

    dim3 g3(264), b3(256);
    manifest(i, "tt_spin_regs", tt_spin_regs, g3, b3, 0, s_high, 80000);
    tt_spin_regs<<<g3, b3, 0, s_high>>>(80000, d_sink, i);

    dim3 g4(66), b4(512);
    manifest(i, "tt_spin_bigsmem", tt_spin_bigsmem, g4, b4, BIG_SMEM, s_high, 20000);
    tt_spin_bigsmem<<<g4, b4, BIG_SMEM, s_high>>>(20000, d_sink);

    CHECK(cudaMemsetAsync(d_buf, 0, SET_BYTES, s_low));
    printf("memset %d %zu\n", i, SET_BYTES);
    CHECK(cudaMemcpyAsync(h_pinned, d_buf, COPY_BYTES, cudaMemcpyDeviceToHost, s_low));
    printf("copy %d DtoH %zu 0\n", i, COPY_BYTES);
    CHECK(cudaEventSynchronize(ev));
    printf("sync %d event\n", i);
    CHECK(cudaStreamSynchronize(s_low));
    printf("sync %d stream\n", i);

    // Host work between GPU calls, like a framework's: 200 us.
    usleep(200);
    nvtxRangePop();
    CHECK(cudaDeviceSynchronize());
    printf("sync %d device\n", i);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "steps";
    int steps = argc > 2 ? atoi(argv[2]) : 5;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "nocuda") == 0) {
        printf("no CUDA here\n");
        return 0;
    }
    setup();
    if (strcmp(mode, "steps") == 0) {
        for (int i = 0; i < steps; i++)
            step(i);
    } else if (strcmp(mode, "crash") == 0 || strcmp(mode, "abort") == 0) {
        step(0);
        step(1);
        if (mode[0] == 'a')
            abort();
        volatile int *p = NULL;
        *p = 1;
    } else if (strcmp(mode, "sigterm") == 0) {
        step(0);
        step(1);
        tt_spin_plain<<<132, 128, 0, s_low>>>(200000000, d_sink); // 200 ms, still running
        kill(getpid(), SIGTERM);
        CHECK(cudaDeviceSynchronize());
        printf("not reached\n");
    } else if (strcmp(mode, "reset") == 0) {
        step(0);
        step(1);
        CHECK(cudaDeviceReset());
        printf("reset\n");
        setup();
        step(2);
        step(3);
    } else if (strcmp(mode, "fork") == 0) {
        step(0);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            exit(0); // a worker that never uses CUDA: must write nothing
        int st;
        waitpid(pid, &st, 0);
        printf("child %d\n", (int)pid);
        step(1);
        step(2);
    } else if (strcmp(mode, "hang") == 0) {
        for (int i = 0;; i++)
            step(i);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 64;
    }
    return 0;
}
