/* Per-block records of sampled launches (TALLY_BLOCK_TRACE, a diagnostic of
 * tally-run; backend-private).
 *
 * Why: a launch's record (synth.h) has its first block's start and its last
 * block's end, and TALLY_SM_TRACE counts its SMs. Neither tells whether a
 * kernel beside another is slow because some of its blocks wait or lag on the
 * SMs the other holds (a tail) or because every block runs a little slower
 * (a shared resource); the simulator models both (sim/README.md, contention).
 * With TALLY_BLOCK_TRACE=DIR, thread 0 of every block of a sampled launch
 * writes its SM and its %globaltimer start and end to a slot the host gave
 * the launch: no atomics, so the blocks run as they would untraced but for
 * one 16-byte store. Graph nodes are not traced (their arguments are fixed
 * when the graph is made).
 *
 * Sampling: launches enqueued inside a window of window_us every period_ms
 * of the host's CLOCK_MONOTONIC, which every process of a run shares, so
 * that the launches of jobs in other processes (MPS) are traced over the
 * same moments; up to max_records blocks per synthetic-kernel instance (one
 * per device open and process). At close, the records go to
 *   DIR/blocks-run<R>-pid<P>-<K>.csv
 * R: TALLY_BLOCK_TRACE_RUN (tally-run run sets it to the run's place in its
 * sweep, 1 first), P: the process, K: the instance within the process.
 * Columns: launch (its sequence number in the instance), kind (0 compute,
 * 1 memory), variant, threads, smem, iters, grid (blocks launched), begin
 * (first logical block), workers (PTB: > 0), enqueue_ns (host monotonic),
 * block, sm, start_gt, dur_ns (%globaltimer, ns). A block whose record is
 * missing (the launch failed) is left out. tally-run makes DIR before any
 * GPU work (exit 73 when it cannot).
 *
 * The window rule, the configuration and the file are plain C (tested in
 * tests/test_backend.c); the device buffer lives in synth.cu. */
#ifndef TALLY_BACKEND_BLOCK_TRACE_H
#define TALLY_BACKEND_BLOCK_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One block's record, as the GPU writes it. start_gt 0: never written. */
typedef struct tl_block_rec {
    uint64_t start_gt; /* %globaltimer when thread 0 began */
    uint32_t dur_ns;   /* to its end (saturates at 2^32-1) */
    uint32_t sm;       /* %smid */
} tl_block_rec;

/* TALLY_BLOCK_TRACE* as read from the environment. */
typedef struct tl_btrace_conf {
    const char *dir;        /* TALLY_BLOCK_TRACE: where the files go */
    long long max_records;  /* TALLY_BLOCK_TRACE_MAX (default 4194304 = 64 MiB of GPU memory) */
    long long window_ns;    /* TALLY_BLOCK_TRACE_WINDOW_US (default 5000) */
    long long period_ns;    /* TALLY_BLOCK_TRACE_PERIOD_MS (default 250) */
} tl_btrace_conf;

/* Whether TALLY_BLOCK_TRACE is set (not empty): the trace is on. */
bool tl_btrace_enabled(void);
/* 0: TALLY_BLOCK_TRACE unset or empty (off); 1: on, *c filled; -1: a bad
 * value, why in msg (naming the variable). */
int tl_btrace_env(tl_btrace_conf *c, char *msg, size_t msg_len);

/* One traced launch, as the host knows it. */
typedef struct tl_btrace_launch {
    uint64_t first;         /* its first record's index */
    int kind, variant;
    unsigned threads, smem, iters, grid, workers;
    unsigned long long begin;
    long long enqueue_ns;
} tl_btrace_launch;

typedef struct tl_btrace {
    tl_btrace_conf conf;
    uint64_t used;          /* records handed out */
    tl_btrace_launch *launches;
    size_t n, cap;
    unsigned long long skipped; /* launches in a window that found no room */
} tl_btrace;

void tl_btrace_init(tl_btrace *b, const tl_btrace_conf *c);
/* The index of the first of l->grid records for a launch enqueued at now_ns,
 * or -1: outside the windows, or no room (counted in skipped). l->first is
 * set and the launch kept. */
long long tl_btrace_claim(tl_btrace *b, tl_btrace_launch *l, long long now_ns);
/* The records (b->used of them, copied from the GPU) as CSV on f. */
int tl_btrace_write_csv(const tl_btrace *b, const tl_block_rec *recs, FILE *f);
/* DIR/blocks-run<R>-pid<P>-<K>.csv into buf; K counts calls in the process. */
void tl_btrace_path(const tl_btrace *b, char *buf, size_t len);
/* Makes DIR and writes the records to the next path; says on stderr where
 * they went (and how many launches found no room), or why they could not be
 * written. 0 or -1. Nothing is written when no launch was traced. */
int tl_btrace_save(const tl_btrace *b, const tl_block_rec *recs);
void tl_btrace_close(tl_btrace *b);

#ifdef __cplusplus
}
#endif

#endif
