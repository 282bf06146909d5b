// Which shared-memory capacity (the L1/shared carveout) the driver configures
// for a kernel launch by default, by block size, dynamic shared memory and
// registers: run under Nsight Compute,
//   ncu --metrics launch__shared_mem_config_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_registers,launch__occupancy_limit_blocks --csv ./carveout_rule
// (placement.cu's victim and backgrounds wait for each other's SMs to drain
// when their carveouts differ: README.md).
//   nvcc -O2 -arch=sm_90 -o carveout_rule carveout_rule.cu
#include <cstdio>
#include <cuda_runtime.h>

// (s is touched only when the launch gives it room: with 0 bytes of dynamic
// shared memory a write there fails the launch.)
__global__ void k_small(float *out, int has_smem)
{
    extern __shared__ float s[];
    if (has_smem && threadIdx.x == 0) s[0] = 1.0f;
    __syncthreads();
    if (out && threadIdx.x == 0) out[blockIdx.x] = has_smem ? s[0] : 1.0f;
}

// 8 bytes of static shared memory, as placement.cu's kernels.
__global__ void k_static(float *out)
{
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0) t0 = clock64();
    __syncthreads();
    if (out && threadIdx.x == 0) out[blockIdx.x] = (float)(t0 & 1);
}

// Many live registers (the compiler keeps the accumulators in registers).
__global__ void __launch_bounds__(256) k_regs(float *out, int n)
{
    extern __shared__ float s[];
    __shared__ float st[1];
    float a[48];
    for (int i = 0; i < 48; i++) a[i] = threadIdx.x * (i + 1);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < 48; i++) a[i] = a[i] * 0.999f + a[(i + 1) % 48];
    float t = 0;
    for (int i = 0; i < 48; i++) t += a[i];
    if (threadIdx.x == 0) st[0] = t;
    __syncthreads();
    if (out && threadIdx.x == 0) out[blockIdx.x] = st[0] + (n < 0 ? s[0] : 0);
}

int main()
{
    float *out;
    cudaMalloc(&out, 4096 * sizeof(float));
    const int threads[] = {64, 128, 256, 512, 1024};
    const int smem_kb[] = {0, 2, 8, 24, 40};
    for (int t : threads)
        for (int kb : smem_kb) {
            k_small<<<132, t, kb * 1024>>>(out, kb > 0);
            cudaError_t e = cudaDeviceSynchronize();
            printf("k_small threads %d dynamic smem %d KB: %s\n", t, kb, cudaGetErrorString(e));
        }
    for (int t : threads) {
        k_static<<<132, t>>>(out);
        cudaError_t e = cudaDeviceSynchronize();
        printf("k_static threads %d: %s\n", t, cudaGetErrorString(e));
    }
    for (int kb : smem_kb) {
        k_regs<<<132, 256, kb * 1024>>>(out, 4);
        cudaError_t e = cudaDeviceSynchronize();
        printf("k_regs threads 256 dynamic smem %d KB: %s\n", kb, cudaGetErrorString(e));
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
