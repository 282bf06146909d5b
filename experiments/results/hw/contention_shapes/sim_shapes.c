/* The simulator's answer for contention_shapes.cu's scenarios (H100 defaults,
 * model KINDS): a 504 x 64-thread compute kernel of 32 us launched 350 us
 * into a sequence of training-like kernels on a least-priority stream, on a
 * greatest-priority stream or one of the same priority. Prints the victim's
 * span and how late its first block started. Build from the top folder after
 * `make`:
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude -o /tmp/sim_shapes \
 *      experiments/results/hw/contention_shapes/sim_shapes.c build/libtally.a \
 *      $(pkg-config --libs jansson sqlite3 zlib) -lm -lpthread && /tmp/sim_shapes */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/device.h"
#include "tally/gpu.h"
#include "tally/sim.h"

#define US 1000LL

typedef struct probe {
    tl_device d;
    tl_stream_id victim_stream;
    tl_op victim;
    tl_ns v_start, v_end;
} probe;

static tl_op mk(uint32_t grid, uint32_t threads, uint32_t regs, uint32_t smem, tl_ns dur, int work)
{
    tl_op op;
    memset(&op, 0, sizeof op);
    op.kind = TL_OP_KERNEL;
    op.grid[0] = grid, op.grid[1] = 1, op.grid[2] = 1;
    op.block[0] = threads, op.block[1] = 1, op.block[2] = 1;
    op.regs = regs;
    op.dynamic_smem = smem;
    op.dur_ns = dur;
    op.event = -1;
    op.work = work;
    return op;
}

static void on_rec(void *arg, const tl_kernel_record *r)
{
    probe *p = arg;
    if (r->tag == 1) {
        p->v_start = r->start_ns;
        p->v_end = r->end_ns;
    }
}

static void launch_victim(void *arg, tl_ns now)
{
    (void)now;
    probe *p = arg;
    tl_kernel_desc k = { .op = &p->victim, .job = 0, .tag = 1 };
    tl_launch_id id;
    if (tl_dev_launch(&p->d, p->victim_stream, &k, NULL, NULL, &id))
        exit(70);
}

static int scenario(const char *name, const tl_op *other, int count, int same_prio)
{
    tl_gpu_props g;
    tl_sim_params sp;
    tl_err err;
    if (tl_gpu_lookup("H100", &g, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    tl_sim_params_default(&sp, &g);
    probe *p = calloc(1, sizeof *p);
    if (!p || tl_sim_open(&p->d, &g, &sp, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    p->d.observer = on_rec;
    p->d.observer_arg = p;
    tl_ctx_config c = { .kind = TL_CTX_TIMESLICED, .job = 0 };
    tl_ctx_id ctx;
    tl_stream_id lo;
    if (tl_dev_ctx_create(&p->d, &c, &ctx, &err) || tl_dev_stream_create(&p->d, ctx, 0, &lo, &err) ||
        tl_dev_stream_create(&p->d, ctx, same_prio ? 0 : g.stream_prio_greatest, &p->victim_stream, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    p->victim = mk(504, 64, 80, 6912, 32 * US, TL_WORK_COMPUTE);
    for (int i = 0; other && i < count; i++) {
        tl_kernel_desc k = { .op = other, .job = 1, .tag = 2 };
        tl_launch_id id;
        if (tl_dev_launch(&p->d, lo, &k, NULL, NULL, &id))
            return 1;
    }
    tl_dev_timer(&p->d, 350 * US, launch_victim, p);
    if (tl_dev_run(&p->d, -1, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    printf("%-6s victim %s priority: victim %.1f us, first block %.1f us after its launch\n", name,
           same_prio ? "the same" : "greater", (p->v_end - p->v_start) / 1e3, (p->v_start - 350 * US) / 1e3);
    tl_dev_close(&p->d);
    free(p);
    return 0;
}

int main(void)
{
    tl_op mem = mk(6272, 256, 32, 0, 20 * US, TL_WORK_MEMORY);
    tl_op cmp = mk(264, 256, 32, 0, 100 * US, TL_WORK_COMPUTE);
    int r = scenario("alone", NULL, 0, 0);
    for (int same = 0; same < 2; same++) {
        r |= scenario("mem", &mem, 100, same);
        r |= scenario("cmp", &cmp, 20, same);
    }
    return r;
}
