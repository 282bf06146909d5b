/* Kernel plans of the CUDA device: for each traced kernel, the synthetic kernel
 * that replays it (variant, work units, calibration), found once per op and kept in
 * a table keyed by the op's address; a trace is planned whole before a run
 * (tl_cuda_prepare_trace) so that no calibration happens inside one. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static tl_plan_ent *plan_find(tl_cuda *c, const tl_op *op)
{
    if (!c->plan_cap) return NULL;
    for (size_t i = ptr_hash(op) & (c->plan_cap - 1);; i = (i + 1) & (c->plan_cap - 1)) {
        if (c->plans[i].op == op) return &c->plans[i];
        if (!c->plans[i].op) return NULL;
    }
}

static void plan_put(tl_cuda *c, const tl_op *op, int node, const tl_kernel_plan *pl);

static void plan_copy(tl_cuda *c, const tl_plan_ent *e)
{
    for (int n = 0; n < 2; n++)
        if (e->have[n]) plan_put(c, e->op, n, &e->plan[n]);
}

static void plan_put(tl_cuda *c, const tl_op *op, int node, const tl_kernel_plan *pl)
{
    if ((c->plan_n + 1) * 2 > c->plan_cap) {
        size_t ncap = c->plan_cap ? c->plan_cap * 2 : 1024;
        tl_plan_ent *old = c->plans;
        size_t ocap = c->plan_cap;
        c->plans = tl_xcalloc(ncap, sizeof *c->plans);
        c->plan_cap = ncap;
        c->plan_n = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].op) plan_copy(c, &old[i]);
        free(old);
    }
    size_t i = ptr_hash(op) & (c->plan_cap - 1);
    while (c->plans[i].op && c->plans[i].op != op) i = (i + 1) & (c->plan_cap - 1);
    if (!c->plans[i].op) c->plan_n++;
    c->plans[i].op = op;
    c->plans[i].plan[node] = *pl;
    c->plans[i].have[node] = true;
}

/* Name of an op from the traces we were given (kernel-kind rule needs it);
 * NULL when the op belongs to none of them. */
static const char *op_name(tl_cuda *c, const tl_trace *t, const tl_op *op)
{
    for (int k = -1; k < c->n_traces; k++) {
        const tl_trace *tr = k < 0 ? t : c->traces[k];
        if (!tr) continue;
        for (uint32_t i = 0; i < tr->n_iters; i++) {
            const tl_iteration *it = &tr->iters[i];
            if (op >= it->ops && op < it->ops + it->n_ops)
                return op->name < tr->n_strings && tr->strings ? tr->strings[op->name] : "";
        }
    }
    return NULL;
}

static int plan_get(tl_cuda *c, const tl_trace *t, const tl_op *op, int node, tl_kernel_plan *out, tl_err *err)
{
    tl_plan_ent *e = plan_find(c, op);
    if (e && e->have[node]) {
        *out = e->plan[node];
        return 0;
    }
    int r = tl_cuda_calibrate(c, op_name(c, t, op), op, node, out, err);
    if (r) return r;
    plan_put(c, op, node, out);
    return 0;
}

int tl_cuda_plan(tl_device *d, const tl_trace *t, const tl_op *op, tl_kernel_plan *out, tl_err *err)
{
    return plan_get(C(d), t, op, 0, out, err);
}

int tl_cuda_node_plan(tl_device *d, const tl_trace *t, const tl_op *op, tl_kernel_plan *out, tl_err *err)
{
    tl_cuda *c = C(d);
    return plan_get(c, t, op, c->opt.plain_node_calib ? 0 : 1, out, err);
}

static bool op_in_trace(const tl_trace *t, const tl_op *op)
{
    for (uint32_t i = 0; i < t->n_iters; i++)
        if (op >= t->iters[i].ops && op < t->iters[i].ops + t->iters[i].n_ops) return true;
    return false;
}

void tl_cuda_forget_trace(tl_device *d, const tl_trace *t)
{
    tl_cuda *c = C(d);
    /* Plans are keyed by op address: a later trace may reuse these addresses. */
    tl_plan_ent *old = c->plans;
    size_t ocap = c->plan_cap;
    c->plans = NULL;
    c->plan_cap = c->plan_n = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].op && !op_in_trace(t, old[i].op)) plan_copy(c, &old[i]);
    free(old);
    for (int k = 0; k < c->n_traces; k++)
        if (c->traces[k] == t) c->traces[k--] = c->traces[--c->n_traces];
}

int tl_cuda_prepare_trace(tl_device *d, const tl_trace *t, tl_err *err)
{
    tl_cuda *c = C(d);
    tl_cuda_forget_trace(d, t); /* in case a closed trace lived at these addresses */
    if (c->n_traces == c->cap_traces) {
        c->cap_traces = c->cap_traces ? c->cap_traces * 2 : 8;
        c->traces = tl_xrealloc(c->traces, (size_t)c->cap_traces * sizeof *c->traces);
    }
    c->traces[c->n_traces++] = t;
    size_t maxbytes = 0;
    tl_calib_db_begin(&c->calib);
    int r = 0;
    for (uint32_t i = 0; i < t->n_iters && !r; i++) {
        for (uint32_t j = 0; j < t->iters[i].n_ops && !r; j++) {
            const tl_op *op = &t->iters[i].ops[j];
            if (op->kind == TL_OP_KERNEL) {
                tl_kernel_plan pl;
                r = tl_cuda_plan(d, t, op, &pl, err);
                /* A graph job's whole launches go out as nodes (tl_cuda_launch). */
                if (!r && op->graph) r = tl_cuda_node_plan(d, t, op, &pl, err);
            } else if ((op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET) && op->bytes > maxbytes) {
                maxbytes = op->bytes;
            }
        }
    }
    tl_calib_db_commit(&c->calib);
    if (r) return r;
    return tl_cuda_ensure_buffers(c, maxbytes, err);
}
