/* Synthetic kernels: stand-ins for traced kernels on a real GPU (backend-private).
 *
 * A synthetic kernel has the traced kernel's block shape and shared memory, the
 * closest register count among a few compiled variants, and runs the traced
 * number of logical blocks. Each block does real work, 'iters' units of it:
 *   compute: a chain of fused multiply-adds over NACC register accumulators;
 *   memory:  one 16-byte load per thread per unit, streaming through a buffer
 *            much larger than L2 (256 MiB against the H100's 50 MiB).
 * Calibration (calib.c) picks 'iters' so that the kernel alone lasts as long as
 * the traced one.
 *
 * Every launch owns a slot: device-side counters for timing (first block start,
 * last block end, read from %globaltimer like CUPTI's kernel records), for PTB
 * logical-block claims and for retreat; when its last block exits, the kernel
 * copies them to a host-mapped record and resets the slot, so slots need no
 * host-side reset and can be reused as soon as the launch is complete.
 *
 * This header is plain C: the CUDA device (cuda_internal.h) and the tests
 * include it; synth.cu implements it.
 */
#ifndef TALLY_BACKEND_SYNTH_H
#define TALLY_BACKEND_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "synth_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TL_SYNTH_NVARIANTS 6   /* register variants */
#define TL_SYNTH_COMPUTE 0
#define TL_SYNTH_MEMORY 1
#define TL_SYNTH_BUF_BYTES (256ull << 20)

/* Host-visible record of one finished launch (host-mapped, written by the last
 * block to exit). */
typedef struct tl_synth_rec {
    unsigned long long start_gt;  /* %globaltimer at the first block start */
    unsigned long long end_gt;    /* %globaltimer at the last block end */
    unsigned int claimed;         /* PTB: logical blocks claimed (>= done) */
    unsigned int gen;             /* the launch's generation, written last */
    unsigned int sms;             /* TALLY_SM_TRACE=1 (a diagnostic): the SMs its blocks ran
                                     on, counted; 0 without it */
    unsigned int pad;
} tl_synth_rec;

typedef struct tl_synth_variant_info {
    int regs;                     /* registers per thread the compiler gave it */
    int max_threads;              /* largest block it can be launched with */
    int static_smem;              /* bytes (PTB variant: a few bytes) */
} tl_synth_variant_info;

typedef struct tl_synth tl_synth;

/* One launch. grid is 1D: the logical blocks [begin, end) (ordinary) or
 * 'workers' persistent blocks pulling from that range (PTB). */
typedef struct tl_synth_launch {
    int kind;                     /* TL_SYNTH_COMPUTE / TL_SYNTH_MEMORY */
    int variant;                  /* 0..TL_SYNTH_NVARIANTS-1 */
    unsigned int block[3];
    unsigned int smem;            /* total shared memory per block wanted */
    unsigned long long begin, end;/* logical block range */
    unsigned int workers;         /* 0: ordinary; >0: PTB worker blocks */
    unsigned int iters;           /* work units per logical block */
    unsigned int slot;            /* from tl_synth_slot_acquire */
    unsigned long long salt;      /* varies the memory region streamed */
} tl_synth_launch;

/* Opens the kernels on the current device: allocates the stream buffer and
 * nslots slots, queries the variants. Returns 0 or a cudaError_t (>0). */
int tl_synth_open(tl_synth **out, unsigned int nslots);
void tl_synth_close(tl_synth *s);
const tl_synth_variant_info *tl_synth_variant(const tl_synth *s, int variant);
/* Nominal register count of a variant (the cap it was compiled under). */
int tl_synth_variant_cap(int variant);
/* TALLY_SYNTH_CARVEOUT=P (0-100, a diagnostic): every synthetic kernel prefers
 * the carveout P, so that all share one and SMs hold any of them together
 * (called by tl_synth_open). 0 or a cudaError_t. */
int tl_synth_apply_carveout_env(void);
/* TALLY_SYNTH_CARVEOUT's value: 0-100, -1 unset, -2 not a whole percentage. */
int tl_synth_carveout_env(void);

/* Slots: each launch takes one; free it once the launch is complete and its
 * record was read. Returns -1 when all are in flight. */
int tl_synth_slot_acquire(tl_synth *s);
void tl_synth_slot_release(tl_synth *s, unsigned int slot);
/* Slots not in use (graph_cache.c keeps some for ordinary launches). */
unsigned int tl_synth_slots_free(const tl_synth *s);
/* Host record of a slot (valid after the launch completed). */
const volatile tl_synth_rec *tl_synth_record(const tl_synth *s, unsigned int slot);
/* Generation stamped into the slot's next launch (for retreat and checks). */
unsigned int tl_synth_slot_gen(const tl_synth *s, unsigned int slot);

/* Enqueue the launch on 'stream' (a cudaStream_t passed as void*). Returns 0 or
 * a cudaError_t. */
int tl_synth_enqueue(tl_synth *s, const tl_synth_launch *l, void *stream);
/* CUDA graphs (graph_cache.h) of "node" launches. A node does the same work
 * as a launch, but its blocks only stamp the slot's start and their group's
 * end: no exit counting, reset or record, so that nodes follow each other as
 * closely as a graph's kernels do. Publish kernels at the graph's end (one per
 * 128 nodes) fold the stamps into the nodes' host records (generation last:
 * the one each slot has now, so the slots must stay with the graph) and reset
 * the slots. The launches need their slot and salt set; workers must be 0.
 * Only a node's work units can change once the graph exists (set_iters).
 * Launch re-arms the nodes' host records; a graph must not be launched again
 * before every record of its previous launch was read. */
typedef struct tl_synth_graph tl_synth_graph;
int tl_synth_graph_new(tl_synth *s, const tl_synth_launch *ls, size_t n, tl_synth_graph **out);
int tl_synth_graph_set_iters(tl_synth_graph *g, size_t i, unsigned int iters);
int tl_synth_graph_launch(tl_synth *s, tl_synth_graph *g, const unsigned int *slots, void *stream);
void tl_synth_graph_free(tl_synth_graph *g);
/* Tell a PTB launch's workers to stop after their current logical block: an
 * asynchronous 4-byte copy into the slot on 'ctl_stream'. */
int tl_synth_retreat(tl_synth *s, unsigned int slot, void *ctl_stream);

/* Sample (host CLOCK_MONOTONIC ns, %globaltimer ns) pairs with a spinning
 * kernel that publishes the timer through host-mapped memory; returns the
 * offset such that host_ns ~= gt - offset, with error under ~1 us. */
int tl_synth_clock_offset(tl_synth *s, long long *offset_ns);

/* Smallest %globaltimer step seen in a spin (resolution of kernel timing). */
int tl_synth_timer_resolution(tl_synth *s, long long *ns);

const char *tl_synth_error_string(int cuda_err);

/* Diagnostics: the last events of a slot, newest first ('A'cquire, 'L'aunch,
 * 'E' failed launch, 'T' retreat, 'R'elease, 'D' double release), and the
 * slot's device-side counters (start, end, exited, claimed, retreat_gen,
 * sum of group exits). */
#define TL_SYNTH_HIST 8
typedef struct tl_synth_hist {
    char what;
    int kind, variant;
    unsigned int gen, workers, iters;
    unsigned long long begin, end;
    long long t_ns;
} tl_synth_hist;
const tl_synth_hist *tl_synth_history(const tl_synth *s, unsigned int slot);
int tl_synth_slot_dump(tl_synth *s, unsigned int slot, unsigned long long out[6]);

#ifdef __cplusplus
}
#endif

#endif
