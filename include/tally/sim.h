/* The simulated GPU: a tl_device backed by the discrete-event engine.
 * The model (block scheduler rules, time slices, MPS, copy engines, contention)
 * is documented in sim/README.md; its tunable parameters all live here, with
 * their defaults set in one place (sim/contention.c, tl_sim_params_default). */
#ifndef TALLY_SIM_H
#define TALLY_SIM_H

#include "tally/device.h"
#include "tally/transform.h"

/* Contention between co-resident blocks of different launches on one SM.
 * Two models (sim/README.md, "Contention"; re-evaluated whenever a block
 * group starts or ends on any SM of the group):
 *
 * TL_CONTENTION_THREADS: slowdown = min(max_slowdown, 1 + alpha * f), f the
 *   fraction of the SM's thread slots held by blocks of OTHER launches,
 *   averaged over the SMs a block group occupies.
 *
 * TL_CONTENTION_KINDS: by kernel kind (tl_op.work) and age, as measured on
 *   the H100 with the backend's synthetic kernels: the warp schedulers favour
 *   the oldest warps, so a block beside arithmetic-bound (compute) blocks of
 *   another launch makes almost no progress ("starved": rate starved_rate)
 *   when it is memory-bound, or compute-bound and younger; compute blocks
 *   beside memory blocks run at full speed; memory blocks beside memory
 *   blocks share the bandwidth:
 *       slowdown = min(mem_max_slowdown, 1 + mem_alpha * fo^mem_p / fs^mem_q)
 *   fo = the other launches' memory threads' share of the SM's thread
 *   slots, fs = the group's own share. A group starved on any of its SMs is
 *   starved (its blocks there hold the launch's completion). */
typedef enum tl_contention_model {
    TL_CONTENTION_THREADS = 0,
    TL_CONTENTION_KINDS = 1,
} tl_contention_model;

typedef struct tl_contention_params {
    double alpha;          /* THREADS: slowdown per unit of foreign occupancy (>= 0) */
    double max_slowdown;   /* THREADS: cap on the slowdown factor (>= 1) */
    int model;             /* tl_contention_model */
    double starved_rate;   /* KINDS: progress rate of a starved group, (0, 1] */
    double mem_alpha;      /* KINDS: memory beside memory (>= 0) */
    double mem_p, mem_q;   /* KINDS: exponents of fo and fs (>= 0) */
    double mem_max_slowdown; /* KINDS: cap, >= 1 (the measured range ends there) */
    int partial_starve;    /* KINDS (1 on, the default since model revision 11; 0 off):
                              a group starved on some of its SMs progresses at full
                              rate on the others (sim/README.md, "Partly starved") */
    tl_ns churn_block_ns;  /* KINDS (H100 4 us since model revision 17, else 0: off): a
                              memory-bound launch whose blocks take less than this
                              churns ... */
    double churn_slowdown; /* ... and slows other launches' compute blocks on its
                              SMs by this factor (>= 1; sim/README.md, "Churn") */
    double mem_share;      /* KINDS (experimental, 0 by default): 0: a memory-bound group
                              beside another launch's compute blocks is starved (the
                              one-wave co-runs); > 1: it runs this many times slower on
                              those SMs instead (sim/README.md, "The sharing grid") */
    double mem_share_short; /* the same for memory launches that churn (blocks under
                              churn_block_ns); 0: mem_share */
    tl_ns mem_share_tau_ns; /* with mem_share: the slowdown grows by the compute
                              co-residents' block time over this, times their warps
                              past crowding_warps (over it, up to 1 more), up to 1 /
                              starved_rate: long blocks of many compute warps starve
                              memory blocks, short ones do not (sim/README.md, "The
                              sharing grid"); 0: no growth */
    double compute_share;  /* KINDS (experimental, 0 by default): > 1: a compute-bound
                              group runs this many times slower on the SMs it shares
                              with another launch's memory blocks that do not churn
                              (those that do: churn_slowdown); 0: not slowed */
    tl_ns compute_share_tau_ns; /* with compute_share: it falls to 1 + (compute_share - 1)
                              x tau / (tau + the group's block time); 0: constant */
    double cc_share;       /* KINDS (experimental, 0 by default): > 1: a compute group
                              beside OLDER compute blocks runs cc_share x (their block
                              time / 50 us)^cc_share_exp times slower there instead of
                              starving, and the older ones are slowed as beside memory
                              blocks (compute_share); 0: starved (sim/README.md, "The
                              sharing grid") */
    double cc_share_exp;   /* 0.24 (the H100's 2.0 / 3.5 / 5.8x at 50 us / 0.5 / 5 ms) */
    int starved_tail;      /* KINDS with partial_starve (experimental, 0 by default): 1: a
                              partly starved group's blocks on its free SMs run at the
                              free rate and leave when done; its starved blocks lag
                              behind and hold their SMs, and the launch, until they
                              finish (sim/README.md, "The starved tail"); 0: the
                              group progresses at the averaged rate and leaves whole */
    int mem_age;           /* KINDS (experimental, 0 by default): 1: a memory-bound block
                              is starved only beside OLDER compute blocks, as a compute
                              block is (the H100's block records: memory blocks placed
                              before the compute blocks beside them ran 1.0-1.5x their
                              alone time; sim/README.md, "Contention") */
} tl_contention_params;

typedef struct tl_sim_params {
    tl_contention_params contention;
    tl_ns launch_latency_ns;   /* API call to earliest GPU start of a launch or copy */
    tl_ns callback_launch_latency_ns; /* added to launch_latency_ns for a launch or copy
                                  made from a completion callback: work a policy held
                                  back and releases when other work ends pays the host
                                  round trip (completion seen, launch call, GPU start);
                                  the traced host timeline already holds its own */
    tl_ns stream_gap_ns;       /* GPU time between one op's end and the start of the next
                                  op on the same stream when that one was already
                                  waiting (the back-to-back dispatch gap) */
    tl_ns graph_gap_ns;        /* the same for an op launched inside a CUDA graph
                                  (tl_op.graph) */
    tl_ns gap_beside_stream_ns; /* added to the gap of a kernel that waited behind
                                  another on its stream while another stream of its
                                  context has a kernel queued or resident (sim/README.md,
                                  "Gaps beside other work"; H100 60, else 0: none) */
    tl_ns gap_beside_ctx_ns;   /* the same while another context of its unit does
                                  (MPS clients; H100 300, else 0) */
    tl_ns graph_tail_ns;       /* added to the gap of a graph kernel behind a kernel
                                  whose last wave filled every SM with blocks of 64
                                  threads or fewer (sim/README.md, "The tail after
                                  full SMs"; H100 1600, else 0: none) */
    tl_ns graph_launch_ns;     /* host time launching a CUDA graph (a graph job's
                                  iteration, tl_trace_as_graph) before its first op
                                  is issued ... */
    tl_ns graph_node_ns;       /* ... plus this per op in the graph */
    tl_ns ptb_block_overhead_ns; /* extra time per logical block under PTB */
    tl_ns slice_launch_ns;     /* extra latency of a slice launch beyond the first
                                  (block_begin > 0) */
    int copy_engines;          /* 2: one H2D and one D2H engine; 1: both share one */
    double device_copy_gbps;   /* D2D copies and memsets with no traced duration */
    /* Bounding the cost of fragmented dispatch (see sim/README.md, "Coalescing"):
     * a launch with at least coalesce_groups live block groups places new
     * blocks at most once per coalesce_fraction x its block time; freed room
     * waits (the launch keeps its place at the head of its queue). 0 turns it
     * off (exact per-instant dispatch, cost can grow with blocks). */
    int coalesce_groups;
    double coalesce_fraction;
    tl_ns idle_handover_ns;    /* time slicing: how long the active context must stay
                                  without kernel work before another context with work
                                  gets the GPU (0: at once) */
    tl_ns idle_switch_ns;      /* time slicing: nothing runs for this long when the GPU
                                  passes from an idle context to another one (no state
                                  to save; 0: the next context starts at once) */
    int slice_overtime;        /* time slicing: 1 (the H100's default): a slice that runs out while no other
                                  context has work renews at the context's next launch
                                  of its own (a kernel, or a graph's first node) and,
                                  until then, gives way as soon as another has work; 0:
                                  slices run back to back (sim/README.md, "Time
                                  slicing") */
    int slice_restart;         /* time slicing: 1 (the H100's default): the active context
                                  that had no kernel work for idle_handover_ns or more,
                                  while no other context had any, starts a new slice
                                  with its next work; 0: its slices run back to back
                                  from its switch-in, idle or not (sim/README.md, "Time
                                  slicing") */
    int mps_client_priority;   /* 1: an MPS client of priority 1 dispatches nothing while
                                  a priority-0 client of its unit waits for room (a strict
                                  lower priority); 0: client priority is ignored, as
                                  measured on the H100 (sim/README.md) */
    double residency_speedup;  /* in [0, 1): a slice or PTB launch with fewer blocks per
                                  SM than its traced kernel runs each block faster, block
                                  time x (1 - r (1 - k / occupancy)) relative to the
                                  kernel's own k (0: block time does not depend on it) */
    double crowding_warps;     /* >= 0: a compute-bound kernel's block group holding more of
                                  its warps on an SM than the traced kernel did (placed into
                                  the room other kernels left on a few SMs) runs slower:
                                  tl_sim_crowding(crowding_warps, ...), its most crowded
                                  SM's blocks against the kernel's own (0: block time does
                                  not depend on it; sim/README.md, "Crowding") */
    int carveout;              /* 2 (the H100's default): an SM keeps the carveout its first
                                  blocks configured and takes a kernel's blocks only when
                                  the kernel's occupancy's shared memory fits it (the
                                  H100's measured co-residency rule); 1: an SM holds
                                  blocks of one carveout at a time, the smallest that
                                  holds the occupancy (experimental); a kernel that does
                                  not fit waits for the SM to drain (sim/README.md,
                                  "Carveout"); 0: off */
    int dram_share;            /* 1: memory-bound groups share the GPU's DRAM bandwidth
                                  across SMs: each demands what a streaming kernel on its
                                  SMs draws (the H100's measured curve), and all run
                                  slower by the unit's demand over the capacity when it is
                                  above (experimental, H100 only; sim/README.md, "DRAM
                                  shared across SMs"); 0: off */
    int mps_order;             /* how MPS clients of a unit whose head kernels wait take
                                  turns when room frees: 0: in arrival order of their
                                  head kernels; 1 (the H100's default): the client that
                                  has placed blocks in the fewest dispatch rounds first,
                                  then arrival (the H100 does not serve clients in
                                  arrival order; sim/README.md, "MPS clients' turns").
                                  Client priority
                                  (mps_client_priority 1) still comes first */
    int stream_order;          /* how kernels of different streams at one priority level
                                  of one context share room: 0: one FIFO per level, the
                                  kernel behind the head gets only leftovers once the
                                  head has placed all its blocks; 1 (the H100's
                                  default): each stream's kernel places blocks, the
                                  stream that has placed in the fewest dispatch rounds
                                  first, then arrival, as MPS clients do with mps_order
                                  1 (sim/README.md, "Streams of one priority") */
    int pack_foreign;          /* 1: a kernel that waited for room, placed beside another
                                  job's blocks, fills the SMs with the most room first,
                                  each to its capacity (the H100 places into room as it
                                  frees, SM by SM); 2: every kernel placed beside another
                                  job's blocks, waited or not; 0: spread breadth-first
                                  over every SM with room */
} tl_sim_params;

typedef struct tl_sim_stats {
    uint64_t events;           /* events processed by the engine */
    uint64_t kernels;          /* kernel launches completed */
    uint64_t block_groups;     /* block groups started (one event per group; a wave train
                                  of identical waves is one group) */
    uint64_t train_breaks;     /* wave trains cut short (arrival, rate change) */
    uint64_t coalesced;        /* placements deferred by coalescing */
    uint64_t recycled;         /* block groups restarted in place (a wave of the same
                                  launch on the same SMs) */
    uint64_t copies;           /* copies and memsets completed */
    uint64_t ctx_switches;     /* time-slice preemptions */
    uint64_t unfit_kernels;    /* launches whose block does not fit the simulated GPU
                                  (run one block per SM, holding the whole SM) */
    size_t peak_queue;         /* largest event-queue length */
} tl_sim_stats;

/* The simulator's model revision, bumped by every change that alters what it
 * computes from the same inputs (a rule or a default). Each run's config, hence
 * its resume key, carries it ("sim_model"): a sweep resumed into a database
 * written by another revision runs again instead of keeping stale results.
 * 2: stream_gap_ns (4f721f2); 3: a kernel waiting out the gap is its
 * context's work for the time slicer; 4: graph_gap_ns, graph jobs' load counts
 * their gaps; 5: time slices run back to back from a context's switch-in
 * (work that arrives meets the end of the slice in progress); 6: idle_handover_ns
 * (an idle context hands over after 10 us on the H100) and the H100's
 * callback_launch_latency_ns measured in place (13.6 us, was 12.4); 7: the
 * H100's idle_handover_ns 7.5 us (measured below 8.1 us: idle_sweep); 8:
 * the H100's idle_switch_ns 75 us (an idle hand-over's switch-in, diag_tgs);
 * 9: a graph job's host blocks on a full launch queue only before an
 * iteration, never inside one (runner.c: a graph launch is one call); 10:
 * graph_launch_ns and graph_node_ns, the host's graph launch call before a
 * graph's ops are issued (2.5 us + 30 ns an op on the H100); 11:
 * contention.partial_starve on; 12: mps_client_priority 0 on the H100 (client
 * priority ignored); 13: pack_foreign and crowding_warps on the H100 (a kernel
 * that waited for room beside another job's blocks fills the freed SMs one by
 * one, and its crowded blocks share their SM's throughput); 14: carveout 2 and
 * mps_order 1 on the H100 (an SM takes another kernel's blocks only when its
 * occupancy's shared memory fits the carveout the SM holds; MPS clients whose
 * head kernels wait are served fewest placing rounds first); 15: slice_restart
 * on the H100 (a time-sliced context that idled alone for idle_handover_ns or
 * more starts a new slice with its next work); 16: slice_overtime on the H100
 * (a slice that ran out while nobody waited renews at the context's next launch
 * of its own, not a graph's later node, and gives way at once until then); 17:
 * contention churn on the H100 (a compute group beside another launch's memory
 * kernel of blocks under 4 us runs 1.6x slower on those SMs); 18: stream_order
 * 1 on the H100 (streams of one priority level take turns for room as MPS
 * clients do, instead of waiting behind the level's head kernel); 19:
 * gap_beside_ctx_ns 300 and gap_beside_stream_ns 60 on the H100 (a kernel's
 * back-to-back gap grows while another MPS client, or another stream of its
 * context, has work on the GPU: session 21's gap probe); 20: the runner (both
 * devices) gives a graph job's launch-queue room back by whole graphs, as the
 * host learns of a graph's kernels at its end (core/runner.c); 21:
 * graph_tail_ns 1600 on the H100 (a graph kernel behind one whose last wave
 * filled every SM with blocks of <= 64 threads starts 1.6 us later: session
 * 24's probes); 22: the metrics (both devices): an inference job's
 * throughput counts the requests served inside the window, not every one that
 * arrived in it (a growing queue reported its offered rate; core/metrics.c). */
#define TL_SIM_MODEL_REVISION 22

/* Defaults for a GPU (fitted values where we have them, documented guesses else). */
/* Crowding: the time of a compute-bound block with k blocks of its kernel (w
 * warps each) on its SM, relative to k_ref of them:
 * max(k w, ws) / max(k_ref w, ws). An SM's arithmetic throughput is reached
 * with ws warps; past that its blocks share it evenly. ws 0: no effect.
 * Fitted by tally-run crowding. */
double tl_sim_crowding(double ws, int warps_per_block, int k_ref, int k);

void tl_sim_params_default(tl_sim_params *p, const tl_gpu_props *gpu);
/* Set one parameter by name: "contention.model" (threads | kinds),
 * "contention.alpha", ..., "launch_latency_ns", "callback_launch_latency_ns", ...
 * (tl_sim_param_name(i) lists them, NULL past the end). Does not validate. */
int tl_sim_params_set(tl_sim_params *p, const char *key, const char *value, tl_err *err);
const char *tl_sim_param_name(int i);
/* Apply "KEY=VALUE;KEY=VALUE..." (NULL or "" leaves p alone), then validate. */
int tl_sim_params_apply(tl_sim_params *p, const char *list, tl_err *err);
/* The graph launch parameters of p, for tl_trace_as_graph. */
tl_graph_launch tl_sim_params_graph_launch(const tl_sim_params *p);
/* Check a parameter set; the message names the parameter. */
int tl_sim_params_validate(const tl_sim_params *p, tl_err *err);
/* Open a simulated device. gpu is validated (tl_gpu_validate); p may be NULL
 * (defaults). Close with tl_dev_close. */
int tl_sim_open(tl_device *d, const tl_gpu_props *gpu, const tl_sim_params *p, tl_err *err);
void tl_sim_get_stats(tl_device *d, tl_sim_stats *out);

/* Optional activity hook (timelines, tests): called whenever blocks of a
 * launch start or stop running on SMs (start, end, time-slice pause and
 * resume). Not called for copies. */
typedef enum tl_sim_activity_kind {
    TL_SIM_RUN_START = 0,      /* a block group starts (or resumes) running */
    TL_SIM_RUN_STOP = 1,       /* a block group ends (or is paused by a time slice) */
} tl_sim_activity_kind;

typedef struct tl_sim_activity {
    tl_sim_activity_kind kind;
    tl_ns time;
    tl_ctx_id ctx;
    int job;
    tl_launch_id launch;
    uint64_t tag;
    uint64_t blocks;           /* blocks (PTB: worker blocks) of the group, per wave */
    uint32_t waves;            /* a wave train: identical back-to-back waves on the same
                                  SMs, one interval (1: an ordinary group) */
    int sms;                   /* SMs the group occupies */
    int ctx_sms;               /* SMs with a block of ctx resident, after the change */
    bool paused;               /* RUN_STOP by a time slice / RUN_START by a resume */
} tl_sim_activity;
typedef void (*tl_sim_activity_fn)(void *arg, const tl_sim_activity *a);
void tl_sim_set_activity_hook(tl_device *d, tl_sim_activity_fn fn, void *arg);

#endif
