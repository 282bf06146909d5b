/* A private MPS control daemon (see backend.h). Private pipe and log folders
 * let tally-run start and stop its own daemon without touching a system-wide
 * one and without changing the GPU's compute mode (FACTS.md: works as root). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

static bool is_exec(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

int tl_mps_find_control(char *out, size_t cap, tl_err *err)
{
    const char *e = getenv("TALLY_MPS_CONTROL");
    if (e && *e) {
        if (is_exec(e)) { snprintf(out, cap, "%s", e); return 0; }
        return tl_errf(err, TL_ENODEV, "TALLY_MPS_CONTROL=%s: not an executable file", e);
    }
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char cand[1024];
        snprintf(cand, sizeof cand, "%s/nvidia-cuda-mps-control", *d ? d : ".");
        if (is_exec(cand)) { snprintf(out, cap, "%s", cand); return 0; }
    }
    return tl_errf(err, TL_ENODEV,
                   "nvidia-cuda-mps-control not found on PATH (needed by MPS policies; "
                   "install the NVIDIA driver utilities or set TALLY_MPS_CONTROL)");
}

void tl_mps_layout(tl_mps *m, const char *control, const char *root)
{
    memset(m, 0, sizeof *m);
    snprintf(m->control, sizeof m->control, "%s", control);
    snprintf(m->root, sizeof m->root, "%s", root);
    snprintf(m->pipe_dir, sizeof m->pipe_dir, "%s/pipe", root);
    snprintf(m->log_dir, sizeof m->log_dir, "%s/log", root);
}

int tl_mps_daemon_env(const tl_mps *m, char out[][320], int cap)
{
    if (cap < 2) return 0;
    snprintf(out[0], 320, "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir);
    snprintf(out[1], 320, "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir);
    return 2;
}

int tl_mps_client_env(const tl_mps *m, double sm_percent, int priority, char out[][320], int cap)
{
    int n = tl_mps_daemon_env(m, out, cap);
    if (sm_percent > 0 && sm_percent < 100 && n < cap) {
        /* The driver takes an integer percentage; round up so a cap never
         * drops below what was asked. */
        int pct = (int)sm_percent;
        if (pct < sm_percent) pct++;
        if (pct < 1) pct = 1;
        snprintf(out[n++], 320, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct);
    }
    if (n < cap) snprintf(out[n++], 320, "CUDA_MPS_CLIENT_PRIORITY=%d", priority > 0 ? 1 : 0);
    return n;
}

void tl_mps_start_argv(const tl_mps *m, const char *argv[3])
{
    argv[0] = m->control;
    argv[1] = "-d";
    argv[2] = NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Run the control binary with our environment; optionally feed it 'input'.
 * Waits at most timeout_ms; returns its exit status or -1. */
static int run_control(const tl_mps *m, const char *const *argv, const char *input, int timeout_ms)
{
    int fds[2] = {-1, -1};
    if (input && pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        char env[2][320];
        tl_mps_daemon_env(m, env, 2);
        putenv(env[0]);
        putenv(env[1]);
        if (input) {
            dup2(fds[0], 0);
            close(fds[0]);
            close(fds[1]);
        }
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) { dup2(devnull, 1); close(devnull); }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (input) {
        close(fds[0]);
        ssize_t w = write(fds[1], input, strlen(input));
        (void)w;
        close(fds[1]);
    }
    int status = 0;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 && errno != EINTR) return -1;
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_ms(10);
    }
}

static int kill_ours(tl_mps *m, int sig);

int tl_mps_start(tl_mps *m, tl_err *err)
{
    if (m->running) return 0;
    if (mkdir(m->root, 0700) != 0 && errno != EEXIST)
        return tl_errf(err, TL_EIO, "%s: cannot create the MPS folder: %s", m->root, strerror(errno));
    if ((mkdir(m->pipe_dir, 0700) != 0 && errno != EEXIST) || (mkdir(m->log_dir, 0700) != 0 && errno != EEXIST))
        return tl_errf(err, TL_EIO, "%s: cannot create MPS pipe/log folders: %s", m->root, strerror(errno));
    const char *argv[3];
    tl_mps_start_argv(m, argv);
    int st = run_control(m, argv, NULL, 10000);
    if (st != 0)
        return tl_errf(err, TL_ENODEV, "%s -d (CUDA_MPS_PIPE_DIRECTORY=%s): exit status %d; see %s/control.log",
                       m->control, m->pipe_dir, st, m->log_dir);
    m->n_pids = 0;
    /* The daemon is up once its control pipe exists. */
    char ctl[400];
    snprintf(ctl, sizeof ctl, "%s/control", m->pipe_dir);
    for (int i = 0; i < 500 && access(ctl, F_OK) != 0; i++) sleep_ms(10);
    m->running = true;
    kill_ours(m, 0); /* remember the daemon */
    if (access(ctl, F_OK) != 0) {
        tl_mps_stop(m);
        return tl_errf(err, TL_ENODEV, "%s: the MPS daemon did not create its control pipe within 5 s", ctl);
    }
    return 0;
}

static bool alive(pid_t pid)
{
    char p[64], buf[256];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *rp = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

static void remember(tl_mps *m, pid_t pid)
{
    for (int i = 0; i < m->n_pids; i++)
        if (m->pids[i] == pid) return;
    if (m->n_pids < (int)(sizeof m->pids / sizeof m->pids[0])) m->pids[m->n_pids++] = pid;
}

/* Processes whose environment names our pipe folder (the control daemon and
 * the servers it started); remembered, and killed with sig if sig != 0.
 * Returns how many matched. */
static int kill_ours(tl_mps *m, int sig)
{
    char want[400];
    int wlen = snprintf(want, sizeof want, "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir);
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == getpid()) continue;
        char p[64], buf[16384];
        snprintf(p, sizeof p, "/proc/%ld/environ", pid);
        int fd = open(p, O_RDONLY);
        if (fd < 0) continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0) continue;
        buf[len] = 0;
        for (ssize_t i = 0; i < len; i += (ssize_t)strlen(buf + i) + 1) {
            if (strncmp(buf + i, want, (size_t)wlen) == 0 && buf[i + wlen] == 0) {
                snprintf(p, sizeof p, "/proc/%ld/comm", pid);
                char comm[64] = "";
                fd = open(p, O_RDONLY);
                if (fd >= 0) {
                    ssize_t c = read(fd, comm, sizeof comm - 1);
                    close(fd);
                    if (c > 0) comm[c] = 0;
                }
                if (strncmp(comm, "nvidia-cuda-mps", 15) == 0) {
                    remember(m, (pid_t)pid);
                    if (sig) kill((pid_t)pid, sig);
                    n++;
                }
                break;
            }
        }
    }
    closedir(d);
    return n;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(p);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* Remembered processes still running (zombies count as gone). */
static int remembered_alive(const tl_mps *m)
{
    int n = 0;
    for (int i = 0; i < m->n_pids; i++) n += alive(m->pids[i]);
    return n;
}

void tl_mps_stop(tl_mps *m)
{
    if (!m || !m->running) return;
    m->running = false;
    kill_ours(m, 0); /* remember the server(s) too */
    const char *argv[2] = {m->control, NULL};
    run_control(m, argv, "quit\n", 5000);
    for (int i = 0; i < 300 && (kill_ours(m, 0) > 0 || remembered_alive(m) > 0); i++) sleep_ms(10);
    kill_ours(m, SIGKILL);
    for (int i = 0; i < m->n_pids; i++)
        if (alive(m->pids[i])) kill(m->pids[i], SIGKILL);
    for (int i = 0; i < 100 && remembered_alive(m) > 0; i++) sleep_ms(10);
    if (!getenv("TALLY_KEEP_MPS_LOG")) rm_tree(m->root);
}

int tl_mps_count_processes(tl_mps *m)
{
    kill_ours(m, 0);
    return remembered_alive(m);
}
