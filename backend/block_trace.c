/* TALLY_BLOCK_TRACE's host side: configuration, window rule and file
 * (block_trace.h says what the records are for). */
#include "block_trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/common.h"

/* One variable: 1 set (*v), 0 unset or empty, -1 bad (msg says why). */
static int env_int(const char *name, long long lo, long long hi, long long *v, char *msg, size_t len)
{
    int r = tl_env_int64(name, lo, hi, v);
    if (r < 0) snprintf(msg, len, "%s='%s': want a whole number %lld-%lld", name, getenv(name), lo, hi);
    return r < 0 ? -1 : r;
}

bool tl_btrace_enabled(void)
{
    const char *dir = getenv("TALLY_BLOCK_TRACE");
    return dir && *dir;
}

int tl_btrace_env(tl_btrace_conf *c, char *msg, size_t msg_len)
{
    memset(c, 0, sizeof *c);
    if (!tl_btrace_enabled()) return 0;
    c->dir = getenv("TALLY_BLOCK_TRACE");
    long long max = 4194304, win_us = 5000, per_ms = 250;
    /* 2^28 records are 4 GiB of GPU memory per process: more is a typo */
    if (env_int("TALLY_BLOCK_TRACE_MAX", 1, 1ll << 28, &max, msg, msg_len) < 0 ||
        env_int("TALLY_BLOCK_TRACE_WINDOW_US", 1, 60000000, &win_us, msg, msg_len) < 0 ||
        env_int("TALLY_BLOCK_TRACE_PERIOD_MS", 1, 3600000, &per_ms, msg, msg_len) < 0)
        return -1;
    if (win_us * 1000 > per_ms * 1000000) {
        snprintf(msg, msg_len, "TALLY_BLOCK_TRACE_WINDOW_US=%lld is longer than TALLY_BLOCK_TRACE_PERIOD_MS=%lld",
                 win_us, per_ms);
        return -1;
    }
    c->max_records = max;
    c->window_ns = win_us * 1000;
    c->period_ns = per_ms * 1000000;
    return 1;
}

void tl_btrace_init(tl_btrace *b, const tl_btrace_conf *c)
{
    memset(b, 0, sizeof *b);
    b->conf = *c;
}

long long tl_btrace_claim(tl_btrace *b, tl_btrace_launch *l, long long now_ns)
{
    if (now_ns < 0 || now_ns % b->conf.period_ns >= b->conf.window_ns || !l->grid) return -1;
    if ((uint64_t)b->conf.max_records - b->used < l->grid) {
        b->skipped++;
        return -1;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->launches = tl_xrealloc(b->launches, b->cap * sizeof *b->launches);
    }
    l->first = b->used;
    l->enqueue_ns = now_ns;
    b->launches[b->n++] = *l;
    b->used += l->grid;
    return (long long)l->first;
}

int tl_btrace_write_csv(const tl_btrace *b, const tl_block_rec *recs, FILE *f)
{
    fprintf(f, "launch,kind,variant,threads,smem,iters,grid,begin,workers,enqueue_ns,block,sm,start_gt,dur_ns\n");
    for (size_t i = 0; i < b->n; i++) {
        const tl_btrace_launch *l = &b->launches[i];
        for (unsigned k = 0; k < l->grid; k++) {
            const tl_block_rec *r = &recs[l->first + k];
            if (!r->start_gt) continue;
            fprintf(f, "%zu,%d,%d,%u,%u,%u,%u,%llu,%u,%lld,%u,%" PRIu32 ",%" PRIu64 ",%" PRIu32 "\n", i, l->kind,
                    l->variant, l->threads, l->smem, l->iters, l->grid, l->begin, l->workers, l->enqueue_ns, k,
                    r->sm, r->start_gt, r->dur_ns);
        }
    }
    return ferror(f) ? -1 : 0;
}

void tl_btrace_path(const tl_btrace *b, char *buf, size_t len)
{
    static unsigned instance; /* per process */
    const char *run = getenv("TALLY_BLOCK_TRACE_RUN");
    snprintf(buf, len, "%s/blocks-run%s-pid%ld-%u.csv", b->conf.dir, run && *run ? run : "0", (long)getpid(),
             ++instance);
}

int tl_btrace_save(const tl_btrace *b, const tl_block_rec *recs)
{
    if (!b->n) return 0;
    char path[4096];
    tl_btrace_path(b, path, sizeof path);
    tl_err err = {0};
    if (tl_mkdirs(b->conf.dir, &err)) {
        fprintf(stderr, "tally-run: TALLY_BLOCK_TRACE: %s\n", err.msg);
        return -1;
    }
    FILE *f = fopen(path, "w");
    int bad = !f || tl_btrace_write_csv(b, recs, f);
    if (f && fclose(f)) bad = 1;
    if (bad) {
        fprintf(stderr, "tally-run: TALLY_BLOCK_TRACE: cannot write %s\n", path);
        return -1;
    }
    fprintf(stderr, "tally-run: block trace: %zu launches, %llu blocks in %s", b->n, (unsigned long long)b->used, path);
    if (b->skipped) fprintf(stderr, " (%llu launches found no room: TALLY_BLOCK_TRACE_MAX)", b->skipped);
    fputc('\n', stderr);
    return 0;
}

void tl_btrace_close(tl_btrace *b)
{
    free(b->launches);
    memset(b, 0, sizeof *b);
}
