/* Context workers: the worker's own loop (design in worker.h; the parent's
 * side and the framing: worker_ipc.c). */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "graph_cache.h"
#include "worker.h"


typedef struct wpend {
    uint64_t id;
    bool kernel;
    int slot;
    int graph;               /* >= 0: a node of that cached graph (done when its record says so) */
    cudaEvent_t e0, e1;
} wpend;

typedef struct wstream {
    cudaStream_t s;
    wpend *q;
    size_t head, n, cap;
    tl_synth_launch *batch;  /* GRAPH nodes, until the last GRAPH message */
    uint64_t *batch_ids;
    size_t n_batch, cap_batch;
} wstream;

static void wq_push(wstream *s, const wpend *w)
{
    void *q = s->q;
    tl_ring_reserve(&q, sizeof *s->q, &s->head, s->n, &s->cap, 64);
    s->q = q;
    s->q[(s->head + s->n) % s->cap] = *w;
    s->n++;
}

/* An ordinary launch: its own slot, an event after it. */
static int launch_one(tl_synth *syn, wstream *s, tl_synth_launch *l, wpend *w)
{
    w->kernel = true;
    w->graph = -1;
    w->slot = tl_synth_slot_acquire(syn);
    l->slot = (unsigned)w->slot;
    int e = w->slot < 0 ? (int)cudaErrorMemoryAllocation : tl_synth_enqueue(syn, l, s->s);
    if (!e) e = (int)cudaEventCreateWithFlags(&w->e1, cudaEventDisableTiming);
    if (!e) e = (int)cudaEventRecord(w->e1, s->s);
    return e;
}

/* The stream's batch as one graph (graph_cache.h), or one by one when
 * the cached graphs hold too many slots. Returns a cudaError_t. */
static int launch_batch(tl_synth *syn, tl_gcache *gc, wstream *s, size_t *inflight)
{
    size_t n = s->n_batch;
    s->n_batch = 0;
    if (!n) return 0;
    const unsigned int *slots = NULL;
    int graph = -1;
    int e = tl_gcache_launch(gc, s->batch, n, s->s, &slots, &graph);
    for (size_t i = 0; i < n && e <= 0; i++) {
        wpend w;
        memset(&w, 0, sizeof w);
        w.id = s->batch_ids[i];
        if (e == TL_ENOMEM) {
            int le = launch_one(syn, s, &s->batch[i], &w);
            if (le) {
                e = le;
                break;
            }
        } else {
            w.kernel = true;
            w.slot = (int)slots[i];
            w.graph = graph;
        }
        wq_push(s, &w);
        (*inflight)++;
    }
    return e > 0 ? e : 0;
}

/* The worker's sends block: the parent reads its socket in every loop turn. */
static void wsend(int fd, const tl_wmsg *m)
{
    send(fd, m, tl_wmsg_len(m), MSG_NOSIGNAL);
}

static void reply_error(int fd, const char *fmt, const char *what)
{
    tl_wmsg m;
    memset(&m, 0, offsetof(tl_wmsg, u));
    m.type = TL_W_ERROR;
    snprintf(m.text, sizeof m.text, fmt, what);
    wsend(fd, &m);
}

/* GRAPH: the nodes join the stream's batch; the last message launches it. */
static int graph_nodes(tl_synth *syn, tl_gcache *gc, wstream *s, const tl_wmsg *m, size_t *inflight)
{
    if (s->n_batch + m->n > s->cap_batch) {
        while (s->n_batch + m->n > s->cap_batch) s->cap_batch = s->cap_batch ? 2 * s->cap_batch : 256;
        s->batch = tl_xrealloc(s->batch, s->cap_batch * sizeof *s->batch);
        s->batch_ids = tl_xrealloc(s->batch_ids, s->cap_batch * sizeof *s->batch_ids);
    }
    for (uint32_t i = 0; i < m->n; i++) {
        s->batch[s->n_batch] = m->u.node[i].launch;
        s->batch_ids[s->n_batch++] = m->u.node[i].id;
    }
    return m->last ? launch_batch(syn, gc, s, inflight) : 0;
}

int tl_worker_main(int fd, int device)
{
    int big = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    tl_synth *syn = NULL;
    tl_gcache *gc = NULL;
    int e = (int)cudaSetDevice(device);
    if (!e) e = tl_synth_open(&syn, TL_GCACHE_PROCESS_SLOTS);
    if (e) {
        reply_error(fd, "CUDA: %s", cudaGetErrorString((cudaError_t)e));
        return 1;
    }
    gc = tl_gcache_new(syn);
    cudaStream_t ctl;
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    cudaStreamCreateWithPriority(&ctl, cudaStreamNonBlocking, greatest);
    void *hbuf = NULL;
    char *dbuf = NULL;
    size_t buf_bytes = 0;
    wstream *ss = NULL;
    int n_ss = 0;
    size_t inflight = 0;
    unsigned long long salt = (unsigned long long)getpid() << 20;

    tl_wmsg m;
    memset(&m, 0, sizeof m);
    m.type = TL_W_READY;
    struct cudaDeviceProp p;
    if (!cudaGetDeviceProperties(&p, device)) {
        snprintf(m.text, sizeof m.text, "%.150s", p.name);
        m.sms = p.multiProcessorCount; /* under MPS: the client's share */
    }
    wsend(fd, &m);

    static tl_wmsg done_msg = {.type = TL_W_DONES};
    bool quit = false;
    while (!quit || inflight) {
        /* Commands: wait for one when idle, else just look. */
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, inflight ? 0 : 1000);
        if (pr > 0) {
            ssize_t n = recv(fd, &m, sizeof m, 0);
            if (n <= 0) break; /* parent gone */
            if (!tl_wmsg_whole(&m, n)) continue;
            switch (m.type) {
            case TL_W_QUIT:
                quit = true;
                break;
            case TL_W_STREAM: {
                ss = realloc(ss, (size_t)(n_ss + 1) * sizeof *ss);
                memset(&ss[n_ss], 0, sizeof ss[n_ss]);
                e = (int)cudaStreamCreateWithPriority(&ss[n_ss].s, cudaStreamNonBlocking, m.prio);
                tl_wmsg r;
                memset(&r, 0, sizeof r);
                r.type = TL_W_STREAM;
                r.stream = e ? -1 : n_ss;
                r.status = e;
                if (!e) n_ss++;
                wsend(fd, &r);
                break;
            }
            case TL_W_LAUNCH:
            case TL_W_COPY: {
                if (m.stream < 0 || m.stream >= n_ss) {
                    reply_error(fd, "worker: unknown stream%s", "");
                    break;
                }
                wstream *s = &ss[m.stream];
                wpend w;
                memset(&w, 0, sizeof w);
                w.id = m.id;
                w.slot = -1;
                w.graph = -1;
                if (m.type == TL_W_LAUNCH) {
                    m.launch.salt = salt;
                    salt += 0x9e3779b97f4a7c15ull >> 20;
                    e = launch_one(syn, s, &m.launch, &w);
                } else {
                    size_t bytes = m.bytes ? m.bytes : 1;
                    if (bytes > buf_bytes) {
                        cudaDeviceSynchronize();
                        if (hbuf) cudaFreeHost(hbuf);
                        if (dbuf) cudaFree(dbuf);
                        buf_bytes = bytes;
                        cudaHostAlloc(&hbuf, buf_bytes, 0);
                        cudaMalloc((void **)&dbuf, 2 * buf_bytes);
                    }
                    cudaEventCreate(&w.e0);
                    cudaEventCreate(&w.e1);
                    cudaEventRecord(w.e0, s->s);
                    if (m.op_kind == 2 /* TL_OP_MEMSET */) e = (int)cudaMemsetAsync(dbuf, 0, bytes, s->s);
                    else if (m.copy_kind == 0) e = (int)cudaMemcpyAsync(dbuf, hbuf, bytes, cudaMemcpyHostToDevice, s->s);
                    else if (m.copy_kind == 1) e = (int)cudaMemcpyAsync(hbuf, dbuf, bytes, cudaMemcpyDeviceToHost, s->s);
                    else e = (int)cudaMemcpyAsync(dbuf + buf_bytes, dbuf, bytes, cudaMemcpyDeviceToDevice, s->s);
                    if (!e) e = (int)cudaEventRecord(w.e1, s->s);
                }
                if (e) {
                    reply_error(fd, "worker: %s", cudaGetErrorString((cudaError_t)e));
                    break;
                }
                wq_push(s, &w);
                inflight++;
                break;
            }
            case TL_W_GRAPH:
                if (m.stream < 0 || m.stream >= n_ss) {
                    reply_error(fd, "worker: unknown stream%s", "");
                    break;
                }
                if ((e = graph_nodes(syn, gc, &ss[m.stream], &m, &inflight)))
                    reply_error(fd, "worker: graph launch: %s", cudaGetErrorString((cudaError_t)e));
                break;
            case TL_W_RETREAT:
                for (int i = 0; i < n_ss; i++)
                    for (size_t j = 0; j < ss[i].n; j++) {
                        wpend *w = &ss[i].q[(ss[i].head + j) % ss[i].cap];
                        if (w->id == m.id && w->kernel) tl_synth_retreat(syn, (unsigned)w->slot, ctl);
                    }
                break;
            default:
                break;
            }
        } else if (pr < 0 && errno != EINTR) {
            break;
        }
        /* Completions, in order per stream, reported together. */
        tl_wmsg *r = &done_msg;
        r->n = 0;
        for (int i = 0; i < n_ss; i++) {
            wstream *s = &ss[i];
            while (s->n) {
                wpend *w = &s->q[s->head];
                cudaError_t q = cudaSuccess;
                if (w->graph >= 0) {
                    if (tl_synth_record(syn, (unsigned)w->slot)->gen != tl_synth_slot_gen(syn, (unsigned)w->slot)) break;
                } else {
                    q = cudaEventQuery(w->e1);
                    if (q == cudaErrorNotReady) break;
                }
                tl_wdone *d = &r->u.done[r->n++];
                memset(d, 0, sizeof *d);
                d->id = w->id;
                d->stream = i;
                d->status = (int)q;
                if (w->kernel) {
                    const volatile tl_synth_rec *rec = tl_synth_record(syn, (unsigned)w->slot);
                    d->start_gt = rec->start_gt;
                    d->end_gt = rec->end_gt;
                    d->claimed = rec->claimed;
                    d->sms = rec->sms;
                    if (rec->gen != tl_synth_slot_gen(syn, (unsigned)w->slot)) d->end_gt = d->start_gt = 0;
                    if (w->graph >= 0) tl_gcache_done(gc, w->graph);
                    else tl_synth_slot_release(syn, (unsigned)w->slot);
                } else {
                    float ms = 0;
                    cudaEventElapsedTime(&ms, w->e0, w->e1);
                    d->dur_ns = (int64_t)((double)ms * 1e6);
                    cudaEventDestroy(w->e0);
                }
                if (w->e1) cudaEventDestroy(w->e1);
                if (r->n == TL_W_BULK) {
                    wsend(fd, r);
                    r->n = 0;
                }
                s->head = (s->head + 1) % s->cap;
                s->n--;
                inflight--;
            }
        }
        if (r->n) wsend(fd, r);
    }
    cudaDeviceSynchronize();
    tl_gcache_free(gc);
    tl_synth_close(syn);
    return 0;
}
