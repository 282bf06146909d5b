/* Backend internals that need no GPU: the kernel-kind rule, register-variant
 * choice, calibration arithmetic and its SQLite cache, the MPS daemon's
 * command lines, child-process cleanup and the watchdog. Everything here
 * builds and is unit-tested on machines without CUDA (tests/test_backend.c).
 */
#ifndef TALLY_BACKEND_H
#define TALLY_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tally/common.h"

/* ---- Kernel kind (kind_rule.c) ------------------------------------------
 * Which synthetic work stands in for a traced kernel:
 *   compute (FMA loop)  if the name contains, case-insensitively, one of
 *       gemm, conv, mma, fmha, attention, attn, flash, xmma, cutlass, cublas,
 *       sgemm, hgemm, dgrad, wgrad, fprop, implicit, winograd, matmul, dot
 *   memory (streaming) otherwise: elementwise, reduce, copy, norm, pool,
 *       softmax, transpose, nchwToNhwc, index, cat, fill, ... and unknowns,
 *       since most small framework kernels are bandwidth-bound.
 * A compute word wins over a memory word ("gemv reduce" stays memory only if
 * no compute word is present); "gemv" and "splitk reduce" count as memory. */
#define TL_KIND_COMPUTE 0
#define TL_KIND_MEMORY 1
int tl_kernel_kind_for_name(const char *name);
const char *tl_kernel_kind_name(int kind);

/* ---- Register variant (kind_rule.c) -------------------------------------
 * regs[i]: registers per thread of compiled variant i; max_threads[i]: its
 * largest block. Picks the variant whose register count is closest to the
 * traced one among those that can launch a block of 'threads' threads
 * (registers rounded up per warp to reg_alloc_unit must fit regs_per_block);
 * ties go to the lower count. -1 if none fits. */
int tl_pick_variant(const int *regs, const int *max_threads, int n, int traced_regs,
                    int threads, int regs_per_block, int reg_alloc_unit);

/* ---- Calibration arithmetic (calib_math.c) ------------------------------
 * A curve is what a kernel shape has shown so far: kernel time at some
 * numbers of work units per block. Time grows about linearly with units
 * (waves of equal blocks), so the next guess interpolates between the
 * measured points that bracket the target, or extrapolates along the last
 * slope (at most 8x further) when all lie below it. */
typedef struct tl_calib_point {
    uint32_t iters;
    tl_ns ns;
} tl_calib_point;

#define TL_CALIB_MAX_POINTS 32
typedef struct tl_calib_curve {
    tl_calib_point p[TL_CALIB_MAX_POINTS]; /* sorted by iters, unique iters */
    int n;
} tl_calib_curve;

#define TL_CALIB_PROBE_ITERS 64u     /* second probe after the floor (iters 0) */
#define TL_CALIB_MAX_ITERS (1u << 24)

/* Insert or replace (same iters) a measured point; keeps the curve sorted.
 * When full, the point farthest from 'keep_near_ns' is dropped. */
void tl_calib_curve_add(tl_calib_curve *c, uint32_t iters, tl_ns ns, tl_ns keep_near_ns);
/* Point whose time is closest to target; NULL when empty. */
const tl_calib_point *tl_calib_closest(const tl_calib_curve *c, tl_ns target);
/* Is 'ns' within tol (fraction) of target? */
bool tl_calib_within(tl_ns ns, tl_ns target, double tol);
/* The next number of units to measure for target, or the final answer:
 * *done is set when no measurement can do better (already within tol, target
 * below the floor, or the guess was measured before). */
uint32_t tl_calib_next(const tl_calib_curve *c, tl_ns target, double tol, bool *done);
/* Median of n values (sorts a copy; n <= 64). 0 if n == 0. */
tl_ns tl_median_ns(const tl_ns *v, int n);
/* A probe's kernel timed at 'iters' work units: *ns its time; < 0 on error. */
typedef int (*tl_calib_time_fn)(void *arg, uint32_t iters, double *ns, tl_err *err);
/* Proportional calibration for the measurement commands (tally-run contention,
 * crowding): from 64 units, scale by target / measured until within 3% or 8
 * steps (or the guess repeats); *iters and *got are the last measured pair. */
int tl_calib_proportional(tl_calib_time_fn time_fn, void *arg, tl_ns target, uint32_t *iters,
                          double *got, tl_err *err);

/* ---- Back-to-back gap of a queue of kernels (gap_stats.c) ---------------
 * From the start and end times of n >= 3 kernels run one after the other on
 * one stream: medians of the gap (a kernel's end to the next one's start)
 * and of the duration, and the period. Fails (naming the count) when more
 * than a tenth of the kernels start before the one before them ended: such
 * times are not the GPU's (a clock conversion clamped them) and no figure is
 * better than a wrong one. issue_ns is left to the caller. */
typedef struct tl_hw_gap {
    int launches;
    tl_ns gap_ns;     /* one kernel's end to the next one's start (median) */
    tl_ns kernel_ns;  /* kernel duration (median) */
    tl_ns period_ns;  /* mean end-to-end period per launch */
    tl_ns issue_ns;   /* host time per tl_dev_launch while queueing them */
} tl_hw_gap;
int tl_gap_summarize(const tl_ns *start, const tl_ns *end, int n, tl_hw_gap *out, tl_err *err);

/* ---- GPU clock offset correction (clock_fix.c) ----------------------------
 * The CUDA device converts a kernel's %globaltimer stamps to host time as
 * stamp - offset. The offset is estimated once from below, and the two clocks
 * drift apart (~9 us a second on the H100), so a batch of completions can show
 * kernels ending after the host saw them end (the offset is too low) or
 * starting before they were handed to the GPU (too high). The move that
 * corrects the offset for one batch: + the largest excess of an end over seen;
 * else - the largest shortfall of a start under its submission; 0 if neither.
 * Samples with no end stamp (0) are skipped, a start stamp of 0 or a
 * submission of 0 bounds nothing, and a discrepancy beyond 1 ms is not clock
 * error and is ignored. */
typedef struct tl_clock_sample {
    uint64_t start_gt, end_gt; /* the kernel's stamps (0: none) */
    tl_ns submitted_ns;        /* host time just before its launch call (0: unknown) */
} tl_clock_sample;
tl_ns tl_clock_offset_move(const tl_clock_sample *k, int n, tl_ns offset, tl_ns seen);

/* ---- Calibration cache (calib_db.c) --------------------------------------
 * SQLite, one row per measured point of a shape:
 *   calib_point(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant,
 *               iters, ns, PRIMARY KEY(gpu..iters))
 * and one row per answered target (the brief's key):
 *   calib(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant,
 *         target_ns, iters, measured_ns, PRIMARY KEY(gpu..target_ns)).
 * calib_node_point and calib_node: the same for kernels timed as CUDA-graph
 * nodes (the key's node field). */
typedef struct tl_calib_key {
    const char *gpu;
    int kind, variant;
    uint64_t blocks;
    uint32_t block[3];
    uint32_t smem;
    int node;   /* 1: timed as a CUDA-graph node (tables calib_node*), 0: a launch */
} tl_calib_key;

typedef struct tl_calib_db {
    void *db; /* sqlite3 * */
    char *path;
} tl_calib_db;

/* Default path: $TALLY_CALIB_DB, else $XDG_CACHE_HOME/tally/calib.sqlite, else
 * $HOME/.cache/tally/calib.sqlite, else ./tally-calib.sqlite. Caller frees. */
char *tl_calib_default_path(void);
int tl_calib_db_open(tl_calib_db *c, const char *path, tl_err *err);
void tl_calib_db_close(tl_calib_db *c);
int tl_calib_db_load_curve(tl_calib_db *c, const tl_calib_key *k, tl_calib_curve *out, tl_err *err);
int tl_calib_db_add_point(tl_calib_db *c, const tl_calib_key *k, uint32_t iters, tl_ns ns, tl_err *err);
/* found = false if no row for target. */
int tl_calib_db_get(tl_calib_db *c, const tl_calib_key *k, tl_ns target, uint32_t *iters,
                    tl_ns *measured, bool *found, tl_err *err);
int tl_calib_db_put(tl_calib_db *c, const tl_calib_key *k, tl_ns target, uint32_t iters,
                    tl_ns measured, tl_err *err);
/* Every answered target of a GPU (current synth version), for bulk loading. */
typedef void (*tl_calib_row_cb)(void *arg, const tl_calib_key *k, tl_ns target, uint32_t iters, tl_ns measured);
int tl_calib_db_each(tl_calib_db *c, const char *gpu, tl_calib_row_cb cb, void *arg, tl_err *err);
/* Timed launch configurations (tl_dev_measure), keyed by a text key that
 * names the synthetic launch (plan, shape, block range, PTB workers). */
typedef void (*tl_measure_row_cb)(void *arg, const char *key, tl_ns ns);
int tl_calib_db_measure_each(tl_calib_db *c, const char *gpu, tl_measure_row_cb cb, void *arg, tl_err *err);
int tl_calib_db_measure_put(tl_calib_db *c, const char *gpu, const char *key, tl_ns ns, tl_err *err);
int tl_calib_db_begin(tl_calib_db *c);
int tl_calib_db_commit(tl_calib_db *c);

/* ---- MPS daemon (mps.c) --------------------------------------------------
 * A private nvidia-cuda-mps-control daemon: its own pipe and log folders (made
 * under a fresh temporary folder), started with -d, stopped with "quit" on
 * its control pipe, then SIGKILL for any of its processes left (found by
 * their environment naming our pipe folder). Clients get
 * CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY,
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_CLIENT_PRIORITY. */
typedef struct tl_mps {
    char control[512];   /* path of nvidia-cuda-mps-control */
    char root[200];      /* private temporary folder */
    char pipe_dir[256];
    char log_dir[256];
    bool running;
    pid_t pids[16];      /* its processes seen so far (an exiting process's
                            environment can no longer be read: keep the pids) */
    int n_pids;
} tl_mps;

/* Finds nvidia-cuda-mps-control on PATH (or $TALLY_MPS_CONTROL). TL_ENODEV
 * with a message saying so if absent. */
int tl_mps_find_control(char *out, size_t cap, tl_err *err);
/* Fill pipe/log dirs under root (no file-system action). */
void tl_mps_layout(tl_mps *m, const char *control, const char *root);
/* Environment entries for the daemon ("NAME=value"); n written, max cap. */
int tl_mps_daemon_env(const tl_mps *m, char out[][320], int cap);
/* Environment entries for a client with its SM percentage (0: unset) and
 * priority (0 normal, 1 below normal). */
int tl_mps_client_env(const tl_mps *m, double sm_percent, int priority, char out[][320], int cap);
/* Argument vectors (NULL-terminated, pointing into m or static strings). */
void tl_mps_start_argv(const tl_mps *m, const char *argv[3]);
int tl_mps_start(tl_mps *m, tl_err *err);
/* Safe to call twice and from the exit path. */
void tl_mps_stop(tl_mps *m);
/* Processes (control daemon, servers) running for this pipe folder. */
int tl_mps_count_processes(tl_mps *m);

/* ---- Children and cleanup (procs.c) -----------------------------------------
 * Every child (context workers) is registered; on exit, SIGINT, SIGTERM,
 * SIGHUP and on the watchdog, all are killed and the MPS daemon (if any) is
 * stopped. Children also get PR_SET_PDEATHSIG so a kill -9 of tally-run does
 * not leave them running. */
void tl_procs_install(void);          /* handlers + atexit; idempotent */
void tl_procs_add(pid_t pid);
void tl_procs_remove(pid_t pid);
void tl_procs_set_mps(tl_mps *m);     /* stopped by the cleanup */
void tl_procs_cleanup(void);          /* kill children, stop MPS; idempotent */
int tl_procs_count(void);

/* ---- Watchdog (watchdog.c) -------------------------------------------------
 * The event loop kicks it whenever GPU work completes or none is in flight; a
 * thread checks every 50 ms and, if work has been in flight without any
 * completion for longer than the limit, prints a message, runs the cleanup
 * and ends the process (exit status 70). tl_watchdog_expired is the pure
 * check the thread uses. */
typedef struct tl_watchdog tl_watchdog;
bool tl_watchdog_expired(tl_ns now, tl_ns last_progress, bool busy, tl_ns limit);
int tl_watchdog_start(tl_watchdog **out, tl_ns limit, tl_err *err);
void tl_watchdog_kick(tl_watchdog *w, bool busy);
void tl_watchdog_stop(tl_watchdog *w);
/* Called from the watchdog's thread before it ends the process. */
void tl_watchdog_set_report(tl_watchdog *w, void (*report)(void *arg), void *arg);

/* ---- Contention fit (contention_fit.c) -------------------------------------
 * The simulator's contention formula (sim/contention.c),
 *     slowdown = min(max_slowdown, 1 + alpha * f),
 * f = the other launch's share of the SM's thread slots, fitted by least
 * squares to co-run measurements (tally-run contention). One point per
 * measured kernel: its kind, its own share, the other's kind and share,
 * whether it was launched before the other (older) or after, and its
 * slowdown (co-run / solo time). A point is 'serialized' when the kernel
 * made next to no progress while the other ran (the victim, 1/10 of the
 * other's length alone, ended only after 90% of the other's solo time had
 * passed): the warp schedulers gave the other kernel's warps the issue slots.
 * No rate of slowdown describes that; the default fit leaves such points out
 * and the report lists them. */
typedef struct tl_contention_point {
    int kind, other_kind;        /* TL_KIND_COMPUTE / TL_KIND_MEMORY */
    double f_self, f;            /* thread-slot shares of the SM */
    double slowdown;
    bool older;                  /* launched first, the other right after */
    bool serialized;
    double solo_ns, corun_ns, other_corun_ns; /* 0 when the CSV lacks them */
} tl_contention_point;

/* The simulator's KINDS model (sim/contention.c) fitted to the same points:
 * starved_rate = the median, over the serialized points that carry solo,
 * co-run and the other's co-run times, of the work done beside the other per
 * unit of its co-run time, (solo - (corun - other_corun)) / other_corun;
 * memory beside memory: slowdown = 1 + mem_alpha f^mem_p / f_self^mem_q by
 * least squares (mem_p in [0.5, 3], mem_q in [0, 2], both by 0.1, mem_alpha
 * in closed form for each; ties keep the first). */
typedef struct tl_contention_kinds_result {
    double starved_rate;
    int n_starved;
    double mem_alpha, mem_p, mem_q, rmse;
    int n_mem;
} tl_contention_kinds_result;
int tl_contention_fit_kinds(const tl_contention_point *p, int n, tl_contention_kinds_result *out,
                            tl_err *err);

typedef struct tl_contention_result {
    double alpha, max_slowdown;
    bool capped;                 /* the cap binds for some f <= 1 */
    double rmse, r2;             /* of the slowdowns */
    int n;
} tl_contention_result;

double tl_contention_threads_slowdown(double alpha, double max_slowdown, double f);
/* Grid search, coarse then fine (0.001); deterministic. */
int tl_contention_fit(const tl_contention_point *p, int n, tl_contention_result *out, tl_err *err);
/* The serialized rule above: the co-run time reached 90% of the other's solo
 * time. */
bool tl_contention_serialized(double corun_ns, double other_solo_ns);
/* Read the CSV tally-run contention writes: a header naming the columns
 * (victim_kind, f_self, other_kind, f_other, slowdown, corun_ns,
 * other_solo_ns required; victim_order 'first'/'second' optional, default
 * 'second'), '#' lines are comments. *out is malloc'ed. */
int tl_contention_read_csv(const char *path, tl_contention_point **out, int *n, tl_err *err);
/* Print the fits (without the serialized points: 'all' of them too), per
 * kind pair and launch order, then every point with the fitted value;
 * *fit is the fit without serialized points. */
int tl_contention_report(FILE *f, const tl_contention_point *p, int n, tl_contention_result *fit,
                         tl_err *err);

/* ---- crowding fit (a kernel's blocks packed more densely than alone) ---- */

/* One measurement of tally-run crowding: a one-wave synthetic kernel of
 * 'kind' (TL_KIND_*), blocks of 'warps' warps, k blocks on every SM, whose
 * blocks took 'ratio' times as long as with k_ref on every SM (the same work
 * per block); 'occupancy' is the most blocks of it an SM holds. */
typedef struct tl_crowding_point {
    int kind, warps, occupancy, k_ref, k;
    double ratio;
} tl_crowding_point;

typedef struct tl_crowding_result {
    double ws[2];                /* per TL_KIND_*: the fitted saturation warps */
    double rmse[2];              /* of the ratios */
    int n[2];                    /* points of that kind */
} tl_crowding_result;

/* Least squares of tl_sim_crowding (include/tally/sim.h) over ws in
 * [0.1, 64] by 0.01, per kind (ties keep the smaller); a kind without points
 * gets ws 0, n 0. */
int tl_crowding_fit(const tl_crowding_point *p, int n, tl_crowding_result *out, tl_err *err);

/* Monotonic clock in ns. */
tl_ns tl_mono_ns(void);

/* ---- Host stalls (host_jitter.c) -------------------------------------------
 * How long this host holds a runnable thread off its CPU: tally-run's event
 * loop times arrivals and launches on the host, and a stall of the loop is a
 * late request on the hardware that the simulator has no cause for. The probe
 * reads the monotonic clock back to back (sleep_ns 0: a spinning loop, as the
 * event loop while the GPU has work) or sleeps sleep_ns and reads how much
 * later than asked it woke (as the loop between requests), for duration_ns.
 * A stall is a gap between two reads (or an oversleep) of threshold_ns or
 * more; with csv non-NULL each is one line "start_mono_ns,gap_ns" (the
 * clock of tl_mono_ns, to line up with tally-run's TALLY_TIMER_LOG).
 * Context switches are the thread's own (getrusage); steal is the machine's,
 * all CPUs together, from /proc/stat (-1 where it cannot be read). */
typedef struct tl_jitter_result {
    tl_ns start_ns;             /* the first read (tl_mono_ns) */
    tl_ns duration_ns;          /* measured, from the first read to the last */
    uint64_t reads;             /* clock reads (spin) or sleeps (sleep) */
    uint64_t stalls;            /* gaps or oversleeps of threshold_ns or more */
    uint64_t over_100us, over_1ms, over_10ms;
    tl_ns stalled_ns;           /* the stalls' total */
    tl_ns max_ns;               /* the longest gap or oversleep */
    tl_ns max_at_ns;            /* when it began (tl_mono_ns) */
    tl_ns sleep_p50_ns, sleep_p99_ns; /* sleep mode: oversleep percentiles (0 in spin) */
    long nivcsw, nvcsw;         /* involuntary (preempted) / voluntary switches */
    double steal_s;             /* the machine's steal time over the run, CPU-seconds */
    int cpu;                    /* the CPU the probe began on */
} tl_jitter_result;
#define TL_JITTER_MAX_DURATION_NS (3600 * TL_NS_PER_S)
int tl_host_jitter(tl_ns duration_ns, tl_ns sleep_ns, tl_ns threshold_ns, FILE *csv,
                   tl_jitter_result *out, tl_err *err);

/* ---- The GPU's clocks through a run (gpu_sampler.c) ------------------------
 * A thread reads NVML (dlopen'ed libnvidia-ml.so.1) every period: SM and
 * memory clocks, the clock event ("throttle") reasons, power and temperature.
 * Why: some H100 runs had their requests served at 2.2x for tens of ms at a
 * time (session 18's seeds 7 and 8, tally-validate's "slow phases"); the
 * samples tell a clock dip from other interference. start: TL_ENODEV with a
 * reason where there is no NVML or it does not know the GPU (found by PCI bus
 * id, else by index). stop joins the thread and hands over the samples
 * (caller frees; NULL/0 when g is NULL). */
typedef struct tl_gpu_sample {
    tl_ns t_ns;                 /* tl_mono_ns when read */
    unsigned sm_mhz, mem_mhz;
    unsigned long long reasons; /* NVML clocks event reasons (bits below) */
    unsigned power_mw, temp_c;
} tl_gpu_sample;
#define TL_GPU_REASON_IDLE 0x1ULL /* the GPU is idle: not a slowdown */
/* the others: 0x2 applications clocks setting, 0x4 software power cap, 0x8
 * hardware slowdown, 0x10 sync boost, 0x20 software thermal, 0x40 hardware
 * thermal, 0x80 hardware power brake, 0x100 display clock setting */
typedef struct tl_gpu_sampler tl_gpu_sampler;
int tl_gpu_sampler_start(tl_gpu_sampler **out, const char *pci_bus_id, int index, tl_ns period_ns, tl_err *err);
void tl_gpu_sampler_stop(tl_gpu_sampler *g, tl_gpu_sample **samples, size_t *n);

/* The samples with from <= t_ns <= to: their count, SM clock min / mean /
 * max, memory clock min, the reasons seen (OR, the idle bit left out), the
 * highest power and temperature, and the dips: samples under TL_GPU_DIP of
 * the window's highest SM clock, and the longest run of them (its first
 * sample to the first one back, or to the window's last sample). */
#define TL_GPU_DIP 0.9
typedef struct tl_gpu_clock_summary {
    size_t samples;
    unsigned sm_min_mhz, sm_max_mhz, mem_min_mhz;
    double sm_mean_mhz;
    unsigned long long reasons;
    unsigned power_max_mw, temp_max_c;
    size_t dip_samples;
    tl_ns dip_longest_ns;
} tl_gpu_clock_summary;
void tl_gpu_clock_summarize(const tl_gpu_sample *s, size_t n, tl_ns from, tl_ns to, tl_gpu_clock_summary *out);

/* ---- Growing a ring queue (header only) -----------------------------------
 * The device's stream queues and the worker's inbox and stream queues are
 * rings (head, n, cap) of elements of 'size' bytes in *q. When full, the ring
 * moves into a new array twice as large (first_cap when empty), unwrapped so
 * that the head is at index 0; otherwise nothing changes. New slots are
 * zeroed. */
static inline void tl_ring_reserve(void **q, size_t size, size_t *head, size_t n, size_t *cap,
                                   size_t first_cap)
{
    if (n != *cap) return;
    size_t ncap = *cap ? *cap * 2 : first_cap;
    char *nq = tl_xcalloc(ncap, size);
    for (size_t i = 0; i < n; i++) memcpy(nq + i * size, (char *)*q + ((*head + i) % *cap) * size, size);
    free(*q);
    *q = nq;
    *head = 0;
    *cap = ncap;
}

#endif
