/* Children and cleanup: nothing tally-run starts may outlive it (see backend.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

#define MAX_CHILDREN 64

static volatile pid_t children[MAX_CHILDREN];
static tl_mps *volatile the_mps;
static volatile sig_atomic_t cleaning;
static int installed;

void tl_procs_add(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == 0) { children[i] = pid; return; }
}

void tl_procs_remove(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid) children[i] = 0;
}

int tl_procs_count(void)
{
    int n = 0;
    for (int i = 0; i < MAX_CHILDREN; i++) n += children[i] != 0;
    return n;
}

void tl_procs_set_mps(tl_mps *m) { the_mps = m; }

void tl_procs_cleanup(void)
{
    if (cleaning) return;
    cleaning = 1;
    /* Children first (they are the daemon's clients), politely then not. */
    int any = 0;
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) { kill(children[i], SIGTERM); any = 1; }
    for (int t = 0; any && t < 50; t++) {
        any = 0;
        for (int i = 0; i < MAX_CHILDREN; i++) {
            if (children[i] <= 0) continue;
            if (waitpid(children[i], NULL, WNOHANG) == children[i] || (kill(children[i], 0) != 0 && errno == ESRCH))
                children[i] = 0;
            else
                any = 1;
        }
        if (any) {
            struct timespec ts = {0, 10000000L};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    }
    if (the_mps) tl_mps_stop(the_mps);
    the_mps = NULL;
    cleaning = 0;
}

static void on_signal(int sig)
{
    static volatile sig_atomic_t again;
    if (again) _exit(128 + sig); /* second signal: leave now */
    again = 1;
    tl_procs_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void at_exit(void) { tl_procs_cleanup(); }

void tl_procs_install(void)
{
    if (installed) return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    atexit(at_exit);
}
