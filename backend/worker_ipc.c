/* Context workers, the parent's side: spawning, stopping, and the messages'
 * framing (design in worker.h). No CUDA here: tests/test_backend runs it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "block_trace.h"
#include "worker.h"

/* The bytes of m that travel: the header, and n payload entries for the
 * message types that have them. */
size_t tl_wmsg_len(const tl_wmsg *m)
{
    size_t head = offsetof(tl_wmsg, u);
    if (m->n > TL_W_BULK) return 0;
    if (m->type == TL_W_GRAPH) return head + m->n * sizeof m->u.node[0];
    if (m->type == TL_W_DONES) return head + m->n * sizeof m->u.done[0];
    return head;
}

bool tl_wmsg_whole(const tl_wmsg *m, ssize_t n)
{
    return n >= (ssize_t)offsetof(tl_wmsg, u) && (size_t)n == tl_wmsg_len(m);
}

static void inbox_push(tl_worker *w, const tl_wmsg *m)
{
    void *q = w->inbox;
    tl_ring_reserve(&q, sizeof *w->inbox, &w->in_head, w->in_n, &w->in_cap, 256);
    w->inbox = q;
    w->inbox[(w->in_head + w->in_n) % w->in_cap] = *m;
    w->in_n++;
}

/* One message, or 0 when none is there (a malformed one is dropped). */
static int raw_recv(tl_worker *w, tl_wmsg *m)
{
    for (;;) {
        ssize_t n = recv(w->fd, m, sizeof *m, MSG_DONTWAIT);
        if (tl_wmsg_whole(m, n)) return 1;
        if (n > 0) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
        return TL_EIO; /* 0 bytes: the worker is gone */
    }
}

int tl_worker_send(tl_worker *w, const tl_wmsg *m)
{
    size_t len = tl_wmsg_len(m);
    if (!len) return TL_EINVAL;
    for (;;) {
        ssize_t n = send(w->fd, m, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == (ssize_t)len) return 0;
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
    /* 3 s to finish; 60 s with TALLY_BLOCK_TRACE, whose records the worker
     * writes out as it closes (block_trace.h: millions of CSV lines) */
    int waits = tl_btrace_enabled() ? 6000 : 300;
    for (int i = 0; i < waits; i++) {
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

