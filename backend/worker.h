/* Context workers: a process per CUDA context that must not share the parent's
 * (MPS clients, and time-sliced contexts beyond the first).
 *
 * Why processes: kernels of different contexts are time-sliced by the driver,
 * and MPS clients are sub-contexts of the MPS server, one per client process
 * (FACTS.md). So the parent keeps the policy, the runner and the event loop,
 * and each such context is a child 'tally-run __worker FD DEVICE' that only
 * executes: it receives stream creations, synthetic launches (already
 * planned: kind, variant, units per block, block range, PTB workers), copies
 * and retreats over a SOCK_SEQPACKET socket pair (a graph job's launches come
 * as a batch closed by FLUSH and run as one CUDA graph), and reports each completion
 * with the kernel's %globaltimer stamps (one clock for every process on the
 * GPU, so the parent maps them with its own offset). The parent's event loop
 * polls the sockets with the CUDA events; callbacks still run on its thread.
 *
 * A worker dies with its parent (PR_SET_PDEATHSIG), is registered for the
 * exit/signal cleanup, and MPS clients get the private daemon's pipe folder,
 * their active-thread percentage and client priority in their environment.
 */
#ifndef TALLY_BACKEND_WORKER_H
#define TALLY_BACKEND_WORKER_H

#include <stdint.h>
#include <sys/types.h>

#include "synth.h"
#include "tally/common.h"

enum {
    TL_W_READY = 1,   /* worker -> parent: up; text = GPU name as the worker sees it */
    TL_W_STREAM,      /* parent -> worker: create stream (prio); reply with stream index */
    TL_W_LAUNCH,      /* parent -> worker: synthetic launch 'launch' on 'stream', id */
    TL_W_COPY,        /* parent -> worker: copy/memset (op_kind, copy_kind, bytes) */
    TL_W_RETREAT,     /* parent -> worker: retreat launch id */
    TL_W_QUIT,        /* parent -> worker: finish and exit */
    TL_W_DONE,        /* worker -> parent: id completed (stamps, claimed, dur_ns) */
    TL_W_ERROR,       /* worker -> parent: text */
    TL_W_FLUSH,       /* parent -> worker: launch 'stream''s batch (LAUNCHes with batch set) as one graph */
};

typedef struct tl_wmsg {
    uint32_t type;
    int32_t stream;
    int32_t prio;
    int32_t status;
    uint64_t id;
    tl_synth_launch launch;
    uint32_t op_kind, copy_kind;
    uint64_t bytes;
    uint64_t start_gt, end_gt;
    uint32_t claimed;
    int64_t dur_ns;
    int32_t sms;           /* READY: SMs the worker's context reports */
    int32_t batch;         /* LAUNCH: 1 = hold it for the stream's next FLUSH (graph_cache.h) */
    char text[160];
} tl_wmsg;

typedef struct tl_worker {
    pid_t pid;
    int fd;
    int sms;
    tl_wmsg *inbox;        /* messages read while a send had to wait */
    size_t in_head, in_n, in_cap;
} tl_worker;

/* Start a worker: env entries (NAME=value) are added to its environment.
 * Waits for READY (up to 60 s). */
int tl_worker_spawn(tl_worker *w, int device, char env[][320], int n_env, tl_err *err);
/* Ask it to quit, wait a little, then kill. */
void tl_worker_stop(tl_worker *w);
/* Never blocks for long: while the worker's socket is full, what the worker
 * sends is read into the inbox (otherwise both sides could block in send, the
 * parent on a burst of launches, the worker on their completions). */
int tl_worker_send(tl_worker *w, const tl_wmsg *m);
/* Non-blocking receive: 1 got one, 0 none, <0 worker gone. */
int tl_worker_recv(tl_worker *w, tl_wmsg *m);
/* Blocking receive with a timeout in ms. */
int tl_worker_recv_wait(tl_worker *w, tl_wmsg *m, int timeout_ms);

/* The worker's main (tally-run __worker FD DEVICE). */
int tl_worker_main(int fd, int device);

#endif
