// When does a context whose time slice has run out give the GPU to another that
// gets work later? (H100.) Process A idles 20 ms (alone on the GPU), then runs one
// kernel of LEN ms (132 blocks of 128 threads spinning). Process B launches a 10 us
// kernel D ms after A launched, for D from 0.5 to 3.5 ms. From the GPU's global
// timer: B's kernel start and A's kernel end, both after A's kernel start. If A's
// slices run back to back from the start of its kernel (2.09 ms each), B arriving
// after the first slice ran out waits to the second's end (4.18 + 0.30 ms); if an
// expired slice gives way as soon as another context has work, B starts about
// 0.30 ms after D. Variants run A's LEN ms as 30 us kernels queued back to back, and
// as the same kernels in one CUDA graph (session 16, call 8: do a graph's kernels
// renew a slice that ran out, as queued kernels do?).
//   nvcc -O2 -arch=sm_90 -o sai slice_after_idle.cu && ./sai
#include <algorithm>
#include <cstdio>
#include <vector>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "../spin.cuh"

struct shared_state {
    volatile double t_launch;          // A's host time at its launch (0: not yet)
    volatile int round, b_done;
    unsigned long long a_start[64], a_end[64], b_start[64];
};

static const double delays_ms[] = {0.5, 1.5, 2.0, 2.5, 3.0, 3.5};
static const int n_delays = 6, reps = 8;

static void run_a(shared_state *s, double len_ms, bool many, bool graph)
{
    unsigned long long *st, *en;
    cudaMallocManaged(&st, 8 * 2048);
    cudaMallocManaged(&en, 8 * 2048);
    spin<<<132, 128>>>(1000);
    cudaDeviceSynchronize();
    cudaStream_t gs;
    cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking);
    cudaGraphExec_t ge = NULL;
    if (graph) { // the same 30 us kernels, captured once
        cudaGraph_t g;
        cudaStreamBeginCapture(gs, cudaStreamCaptureModeGlobal);
        for (int i = 0; i < (int)(len_ms * 1000 / 30); i++)
            spin_span<<<132, 128, 0, gs>>>(30000ull, &st[i], &en[i]);
        cudaStreamEndCapture(gs, &g);
        cudaGraphInstantiate(&ge, g, 0);
    }
    for (int r = 0; r < n_delays * reps; r++) {
        usleep(20000);
        int k = many || graph ? (int)(len_ms * 1000 / 30) : 1;
        for (int i = 0; i < k; i++) { st[i] = ~0ull; en[i] = 0; }
        s->b_done = 0;
        s->round = r;
        __sync_synchronize();
        s->t_launch = now_us();
        if (graph)
            cudaGraphLaunch(ge, gs);
        else
            for (int i = 0; i < k; i++)
                spin_span<<<132, 128>>>(many ? 30000ull : (unsigned long long)(len_ms * 1e6), &st[i], &en[i]);
        cudaDeviceSynchronize();
        s->a_start[r % 64] = st[0];
        s->a_end[r % 64] = en[k - 1];
        while (!s->b_done) usleep(100);
        s->t_launch = 0;
    }
}

static void run_b(shared_state *s)
{
    unsigned long long *st, *en;
    cudaMallocManaged(&st, 8);
    cudaMallocManaged(&en, 8);
    spin<<<132, 128>>>(1000);
    cudaDeviceSynchronize();
    for (int r = 0; r < n_delays * reps; r++) {
        while (s->round != r || s->t_launch == 0) {}
        double at = s->t_launch + delays_ms[r % n_delays] * 1000;
        while (now_us() < at) {}
        *st = ~0ull; *en = 0;
        spin_span<<<132, 128>>>(10000, st, en);
        cudaDeviceSynchronize();
        s->b_start[r % 64] = *st;
        __sync_synchronize();
        s->b_done = 1;
        while (s->round == r && r + 1 < n_delays * reps) usleep(50);
    }
}

static void experiment(const char *what, double len_ms, bool many, bool graph)
{
    shared_state *s = (shared_state *)mmap(NULL, sizeof(shared_state), PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    s->t_launch = 0; s->round = -1; s->b_done = 0;
    pid_t a = fork();
    if (a == 0) { run_a(s, len_ms, many, graph); _exit(0); }
    pid_t b = fork();
    if (b == 0) { run_b(s); _exit(0); }
    int st;
    waitpid(a, &st, 0);
    waitpid(b, &st, 0);
    printf("%s (A: %.1f ms %s)\n", what, len_ms,
           graph ? "as 30 us kernels in one CUDA graph" : many ? "as 30 us kernels" : "one kernel");
    for (int d = 0; d < n_delays; d++) {
        std::vector<double> bs, ae;
        for (int r = d; r < n_delays * reps; r += n_delays) {
            bs.push_back((double)(long long)(s->b_start[r % 64] - s->a_start[r % 64]) / 1e3);
            ae.push_back((double)(long long)(s->a_end[r % 64] - s->a_start[r % 64]) / 1e3);
        }
        std::sort(bs.begin(), bs.end());
        std::sort(ae.begin(), ae.end());
        printf("  B launched %.1f ms after A: B starts %.0f / %.0f / %.0f us after A's start (min/median/max);"
               " A ends at %.0f us (median)\n", delays_ms[d], bs.front(), bs[bs.size() / 2], bs.back(),
               ae[ae.size() / 2]);
    }
    fflush(stdout);
    munmap(s, sizeof *s);
}

int main()
{
    experiment("one long kernel", 6.0, false, false);
    experiment("many short kernels", 6.0, true, false);
    experiment("a graph of short kernels", 6.0, false, true);
    return 0;
}
