/* Context workers: a process per CUDA context that must not share the parent's
 * (MPS clients, and time-sliced contexts beyond the first).
 *
 * Why processes: kernels of different contexts are time-sliced by the driver,
 * and MPS clients are sub-contexts of the MPS server, one per client process
 * (FACTS.md). So the parent keeps the policy, the runner and the event loop,
 * and each such context is a child 'tally-run __worker FD DEVICE' that only
 * executes: it receives stream creations, synthetic launches (already
 * planned: kind, variant, units per block, block range, PTB workers), copies
 * and retreats over a SOCK_SEQPACKET socket pair (a graph job's batch comes
 * as GRAPH messages of up to TL_W_BULK launches each and runs as one CUDA
 * graph), and reports completions, as many as it found at once in each DONES
 * message, with the kernels' %globaltimer stamps (one clock for every process
 * on the GPU, so the parent maps them with its own offset). The parent's event
 * loop polls the sockets with the CUDA events; callbacks still run on its
 * thread. One message per launch and per completion cost the parent a send or
 * a receive per op: beside a graph job of ~150,000 ops a second its loop fell
 * milliseconds behind the GPU (session 10, experiments/results/hw/session10).
 *
 * A worker dies with its parent (PR_SET_PDEATHSIG), is registered for the
 * exit/signal cleanup, and MPS clients get the private daemon's pipe folder,
 * their active-thread percentage and client priority in their environment.
 */
#ifndef TALLY_BACKEND_WORKER_H
#define TALLY_BACKEND_WORKER_H

#include <stdbool.h>
#include <stddef.h>
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
    TL_W_DONES,       /* worker -> parent: u.done[0..n) completed, in order per stream */
    TL_W_ERROR,       /* worker -> parent: text */
    TL_W_GRAPH,       /* parent -> worker: u.node[0..n) join 'stream''s batch; last: launch
                         the batch as one graph (graph_cache.h) */
};

/* Entries of a GRAPH or DONES message's payload. */
#define TL_W_BULK 128

typedef struct tl_wnode {
    uint64_t id;
    tl_synth_launch launch;
} tl_wnode;

typedef struct tl_wdone {
    uint64_t id;
    uint64_t start_gt, end_gt; /* kernels: the record's stamps (0: no valid record) */
    int64_t dur_ns;            /* copies: event time */
    int32_t stream;            /* the worker's stream index */
    int32_t status;            /* cudaError_t of the completion query */
    uint32_t claimed;          /* PTB: logical blocks claimed */
    uint32_t sms;              /* TALLY_SM_TRACE: the SMs its blocks ran on (0: not traced) */
} tl_wdone;

/* Only the first n entries of u travel (tl_worker_send sends the used length). */
typedef struct tl_wmsg {
    uint32_t type;
    int32_t stream;
    int32_t prio;
    int32_t status;
    uint64_t id;
    tl_synth_launch launch;
    uint32_t op_kind, copy_kind;
    uint64_t bytes;
    int32_t sms;           /* READY: SMs the worker's context reports */
    int32_t last;          /* GRAPH: the batch is complete */
    uint32_t n;            /* GRAPH, DONES: entries of u used */
    char text[160];
    union {
        tl_wnode node[TL_W_BULK];
        tl_wdone done[TL_W_BULK];
    } u;
} tl_wmsg;

typedef struct tl_worker {
    pid_t pid;
    int fd;
    int sms;
    tl_wmsg *inbox;        /* messages read while a send had to wait */
    size_t in_head, in_n, in_cap;
} tl_worker;

/* The bytes of m that travel: its header, and n payload entries for GRAPH and
 * DONES; 0 when n is over TL_W_BULK. */
size_t tl_wmsg_len(const tl_wmsg *m);
/* n bytes received into m make a whole message: its header, and exactly the
 * length its type and n call for. */
bool tl_wmsg_whole(const tl_wmsg *m, ssize_t n);

/* Start a worker: env entries (NAME=value) are added to its environment.
 * Waits for READY (up to 60 s). */
int tl_worker_spawn(tl_worker *w, int device, char env[][320], int n_env, tl_err *err);
/* Ask it to quit, wait a little, then kill. */
void tl_worker_stop(tl_worker *w);
/* Never blocks for long: while the worker's socket is full, what the worker
 * sends is read into the inbox (otherwise both sides could block in send, the
 * parent on a burst of launches, the worker on their completions). */
int tl_worker_send(tl_worker *w, const tl_wmsg *m);
/* Non-blocking receive: 1 got one, 0 none, <0 worker gone. A message whose
 * length does not match its type and n is dropped. */
int tl_worker_recv(tl_worker *w, tl_wmsg *m);
/* Blocking receive with a timeout in ms. */
int tl_worker_recv_wait(tl_worker *w, tl_wmsg *m, int timeout_ms);

/* The worker's main (tally-run __worker FD DEVICE). */
int tl_worker_main(int fd, int device);

#endif
