/* Is there a GPU, and what is it: name, driver, clocks, properties. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

static void read_driver_version(char *out, size_t cap)
{
    /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ...":
     * the first token made of digits and dots (with at least one dot). */
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        char line[512];
        if (fgets(line, sizeof line, f)) {
            for (char *save = NULL, *tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                if (tok[strspn(tok, "0123456789.")] == 0 && strchr(tok, '.') && tok[0] != '.' && strlen(tok) < cap) {
                    snprintf(out, cap, "%s", tok);
                    fclose(f);
                    return;
                }
            }
        }
        fclose(f);
    }
    int v = 0;
    cudaDriverGetVersion(&v);
    snprintf(out, cap, "cuda-driver-api %d.%d", v / 1000, (v % 1000) / 10);
}

static void read_clocks(int device, char *out, size_t cap)
{
    /* Clocks are not in the CUDA 13 runtime's properties: ask nvidia-smi. */
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "nvidia-smi -i %d --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem "
             "--format=csv,noheader 2>/dev/null", device);
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (p) {
        char line[256] = "";
        if (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, cap, "sm,mem,max_sm,max_mem: %.120s", line);
        }
        pclose(p);
    }
    if (!out[0]) snprintf(out, cap, "unknown (nvidia-smi not available)");
}

int tl_cuda_probe(int device, tl_cuda_info *info, tl_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        bool no_driver = access("/proc/driver/nvidia/version", F_OK) != 0;
        return tl_errf(err, TL_ENODEV, "no usable GPU: cudaGetDeviceCount failed: %s (%d)%s", cudaGetErrorString(e),
                       (int)e, no_driver ? "; no NVIDIA kernel driver is loaded on this machine" : "");
    }
    if (n == 0) return tl_errf(err, TL_ENODEV, "no usable GPU: cudaGetDeviceCount found none");
    if (device < 0 || device >= n)
        return tl_errf(err, TL_ERANGE, "--device %d: this machine has %d GPU(s)", device, n);
    if (!info) return 0;
    memset(info, 0, sizeof *info);
    struct cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, device)))
        return tl_errf(err, TL_ENODEV, "GPU %d: cudaGetDeviceProperties: %s", device, cudaGetErrorString(e));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sms = p.multiProcessorCount;
    /* Which machine: some H100 machines slow the GPU work for tens of ms at a
     * time (experiments/results/hw/session19/), so runs say where they ran. */
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(info->uuid, sizeof info->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    if (cudaDeviceGetPCIBusId(info->pci_bus, (int)sizeof info->pci_bus, device) != cudaSuccess)
        info->pci_bus[0] = '\0';
    if (gethostname(info->host, sizeof info->host - 1) != 0) info->host[0] = '\0';
    read_driver_version(info->driver, sizeof info->driver);
    int rv = 0;
    cudaRuntimeGetVersion(&rv);
    snprintf(info->runtime, sizeof info->runtime, "%d.%d", rv / 1000, (rv % 1000) / 10);
    read_clocks(device, info->clocks, sizeof info->clocks);
    return 0;
}

void tl_cuda_props(int device, tl_gpu_props *g)
{
    struct cudaDeviceProp p;
    memset(g, 0, sizeof *g);
    if (cudaGetDeviceProperties(&p, device)) return;
    snprintf(g->name, sizeof g->name, "%.63s", p.name);
    g->sms = p.multiProcessorCount;
    g->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    g->max_threads_per_block = p.maxThreadsPerBlock;
    g->max_warps_per_sm = p.maxThreadsPerMultiProcessor / p.warpSize;
    g->max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    g->regs_per_sm = p.regsPerMultiprocessor;
    g->regs_per_block = p.regsPerBlock;
    g->max_regs_per_thread = 255;
    g->reg_alloc_unit = 256;
    g->smem_per_sm = (int)p.sharedMemPerMultiprocessor;
    g->smem_per_block = (int)p.sharedMemPerBlock;
    g->smem_per_block_optin = (int)p.sharedMemPerBlockOptin;
    g->smem_alloc_unit = 128;
    g->smem_reserved_per_block = (int)p.reservedSharedMemPerBlock;
    g->warp_size = p.warpSize;
    g->cc_major = p.major;
    g->cc_minor = p.minor;
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    g->stream_prio_greatest = greatest;
    g->pcie_gbps = 25.0;
    g->reg_sub_partitions = 4;
    /* Time slices between contexts: FACTS.md measured 2.09 ms slices and
     * 0.30 ms switches on the H100; the same defaults elsewhere. */
    g->timeslice_ns = 2090000;
    g->ctx_switch_ns = 300000;
}
