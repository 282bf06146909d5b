/* Context workers: spawning, messages, and the worker's own loop (design in
 * worker.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "graph_cache.h"
#include "worker.h"

static void inbox_push(tl_worker *w, const tl_wmsg *m)
{
    void *q = w->inbox;
    tl_ring_reserve(&q, sizeof *w->inbox, &w->in_head, w->in_n, &w->in_cap, 256);
    w->inbox = q;
    w->inbox[(w->in_head + w->in_n) % w->in_cap] = *m;
    w->in_n++;
}

static int raw_recv(tl_worker *w, tl_wmsg *m)
{
    ssize_t n = recv(w->fd, m, sizeof *m, MSG_DONTWAIT);
    if (n == (ssize_t)sizeof *m) return 1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    return TL_EIO; /* 0 bytes: the worker is gone */
}

int tl_worker_send(tl_worker *w, const tl_wmsg *m)
{
    for (;;) {
        ssize_t n = send(w->fd, m, sizeof *m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == (ssize_t)sizeof *m) return 0;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            tl_wmsg in;
            int r;
            while ((r = raw_recv(w, &in)) > 0) inbox_push(w, &in);
            if (r < 0) return TL_EIO;
            struct pollfd p = {w->fd, POLLOUT | POLLIN, 0};
            poll(&p, 1, 1);
            continue;
        }
        return TL_EIO;
    }
}

int tl_worker_recv(tl_worker *w, tl_wmsg *m)
{
    if (w->in_n) {
        *m = w->inbox[w->in_head];
        w->in_head = (w->in_head + 1) % w->in_cap;
        w->in_n--;
        return 1;
    }
    return raw_recv(w, m);
}

int tl_worker_recv_wait(tl_worker *w, tl_wmsg *m, int timeout_ms)
{
    if (w->in_n) return tl_worker_recv(w, m);
    struct pollfd p = {w->fd, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r <= 0) return r == 0 ? 0 : TL_EIO;
    return tl_worker_recv(w, m);
}

int tl_worker_spawn(tl_worker *w, int device, char env[][320], int n_env, tl_err *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return tl_errf(err, TL_EIO, "context worker: socketpair: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return tl_errf(err, TL_EIO, "context worker: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1); /* the parent died before prctl */
        close(sv[0]);
        for (int i = 0; i < n_env; i++) putenv(env[i]);
        char fdarg[16], devarg[16];
        snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
        snprintf(devarg, sizeof devarg, "%d", device);
        int fd2 = dup(sv[1]); /* the copy has no FD_CLOEXEC: it survives exec */
        snprintf(fdarg, sizeof fdarg, "%d", fd2);
        execl("/proc/self/exe", "tally-run", "__worker", fdarg, devarg, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    w->pid = pid;
    w->fd = sv[0];
    int big = 8 << 20; /* room for long bursts of launches and completions */
    setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    tl_procs_add(pid);
    tl_wmsg m;
    int r = tl_worker_recv_wait(w, &m, 60000);
    if (r <= 0 || m.type != TL_W_READY) {
        const char *why = r == 0 ? "no answer within 60 s" : r < 0 ? "it exited" : m.text;
        int code = tl_errf(err, TL_ENODEV, "context worker (pid %d): did not start: %s", (int)pid, why);
        tl_worker_stop(w);
        return code;
    }
    w->sms = m.sms;
    return 0;
}

void tl_worker_stop(tl_worker *w)
{
    if (!w || w->pid <= 0) return;
    tl_wmsg m;
    memset(&m, 0, sizeof m);
    m.type = TL_W_QUIT;
    tl_worker_send(w, &m);
    int st;
    for (int i = 0; i < 300; i++) {
        if (waitpid(w->pid, &st, WNOHANG) == w->pid) goto gone;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    kill(w->pid, SIGKILL);
    waitpid(w->pid, &st, 0);
gone:
    tl_procs_remove(w->pid);
    close(w->fd);
    free(w->inbox);
    w->inbox = NULL;
    w->in_n = w->in_cap = w->in_head = 0;
    w->pid = 0;
    w->fd = -1;
}

/* ---- the worker ---- */

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
    tl_synth_launch *batch;  /* LAUNCHes with batch set, until FLUSH */
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

/* FLUSH: the stream's batch as one graph (graph_cache.h), or one by one when
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

static void reply_error(int fd, const char *fmt, const char *what)
{
    tl_wmsg m;
    memset(&m, 0, sizeof m);
    m.type = TL_W_ERROR;
    snprintf(m.text, sizeof m.text, fmt, what);
    send(fd, &m, sizeof m, MSG_NOSIGNAL);
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
    send(fd, &m, sizeof m, MSG_NOSIGNAL);

    bool quit = false;
    while (!quit || inflight) {
        /* Commands: wait for one when idle, else just look. */
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, inflight ? 0 : 1000);
        if (pr > 0) {
            ssize_t n = recv(fd, &m, sizeof m, 0);
            if (n <= 0) break; /* parent gone */
            if (n != (ssize_t)sizeof m) continue;
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
                send(fd, &r, sizeof r, MSG_NOSIGNAL);
                break;
            }
            case TL_W_LAUNCH:
            case TL_W_COPY: {
                if (m.stream < 0 || m.stream >= n_ss) {
                    reply_error(fd, "worker: unknown stream%s", "");
                    break;
                }
                wstream *s = &ss[m.stream];
                if (m.type == TL_W_LAUNCH && m.batch) {
                    if (s->n_batch == s->cap_batch) {
                        s->cap_batch = s->cap_batch ? 2 * s->cap_batch : 256;
                        s->batch = tl_xrealloc(s->batch, s->cap_batch * sizeof *s->batch);
                        s->batch_ids = tl_xrealloc(s->batch_ids, s->cap_batch * sizeof *s->batch_ids);
                    }
                    s->batch[s->n_batch] = m.launch;
                    s->batch_ids[s->n_batch++] = m.id;
                    break;
                }
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
            case TL_W_FLUSH:
                if (m.stream < 0 || m.stream >= n_ss) {
                    reply_error(fd, "worker: unknown stream%s", "");
                    break;
                }
                if ((e = launch_batch(syn, gc, &ss[m.stream], &inflight)))
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
        /* Completions, in order per stream. */
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
                tl_wmsg r;
                memset(&r, 0, sizeof r);
                r.type = TL_W_DONE;
                r.id = w->id;
                r.stream = i;
                r.status = (int)q;
                if (w->kernel) {
                    const volatile tl_synth_rec *rec = tl_synth_record(syn, (unsigned)w->slot);
                    r.start_gt = rec->start_gt;
                    r.end_gt = rec->end_gt;
                    r.claimed = rec->claimed;
                    if (rec->gen != tl_synth_slot_gen(syn, (unsigned)w->slot)) r.end_gt = r.start_gt = 0;
                    if (w->graph >= 0) tl_gcache_done(gc, w->graph);
                    else tl_synth_slot_release(syn, (unsigned)w->slot);
                } else {
                    float ms = 0;
                    cudaEventElapsedTime(&ms, w->e0, w->e1);
                    r.dur_ns = (int64_t)((double)ms * 1e6);
                    cudaEventDestroy(w->e0);
                }
                if (w->e1) cudaEventDestroy(w->e1);
                send(fd, &r, sizeof r, MSG_NOSIGNAL);
                s->head = (s->head + 1) % s->cap;
                s->n--;
                inflight--;
            }
        }
    }
    cudaDeviceSynchronize();
    tl_gcache_free(gc);
    tl_synth_close(syn);
    return 0;
}
