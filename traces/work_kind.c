/* The kernel-kind rule (include/tally/trace.h, tl_work_for_name): which
 * traced kernels count as arithmetic-bound and which as bandwidth-bound. The
 * simulator's contention model and the backend's synthetic kernels read the
 * same answer, so that the two worlds stay comparable. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Bandwidth-bound helpers that live inside GEMM libraries: their names carry
 * "gemm" but they only move or reduce data. Checked first. */
static const char *const memory_first[] = {
    "splitkreduce", "reducesplitk", "split_k_reduce", "gemv", "epilogue::impl::globalkernel",
    "init_device_workspace", NULL,
};
static const char *const compute_words[] = {
    "gemm", "conv", "mma", "fmha", "attention", "attn", "flash", "xmma", "cutlass", "cublas",
    "dgrad", "wgrad", "fprop", "implicit", "winograd", "matmul", NULL,
};

tl_work_kind tl_work_for_name(const char *name)
{
    if (!name)
        return TL_WORK_MEMORY;
    for (int i = 0; memory_first[i]; i++)
        if (tl_contains_ci(name, memory_first[i]))
            return TL_WORK_MEMORY;
    for (int i = 0; compute_words[i]; i++)
        if (tl_contains_ci(name, compute_words[i]))
            return TL_WORK_COMPUTE;
    return TL_WORK_MEMORY;
}

const char *tl_work_name(int work)
{
    return work == TL_WORK_COMPUTE ? "compute" : "memory";
}

void tl_trace_classify(tl_trace *t)
{
    /* once per distinct name: traces repeat a few hundred names many times */
    uint8_t *by_name = NULL;
    if (t->n_strings) {
        by_name = tl_xmalloc(t->n_strings);
        for (uint32_t i = 0; i < t->n_strings; i++)
            by_name[i] = (uint8_t)tl_work_for_name(t->strings[i]);
    }
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++) {
            tl_op *op = &t->iters[i].ops[k];
            uint8_t w = TL_WORK_MEMORY;
            if (op->kind == TL_OP_KERNEL)
                w = op->name < t->n_strings ? by_name[op->name]
                                            : (uint8_t)tl_work_for_name(NULL);
            op->work = w;
        }
    free(by_name);
}
