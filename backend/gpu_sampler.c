/* The GPU's clocks through a hardware run (see backend.h): a thread reads
 * NVML every period. NVML is opened with dlopen, so tally-run needs neither
 * its header nor its library to build or start; without a driver the sampler
 * says so and the run goes on without it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "backend.h"

typedef void *nvml_dev; /* nvmlDevice_t */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *bus_id, nvml_dev *dev);
typedef int (*nvml_by_index_fn)(unsigned index, nvml_dev *dev);
typedef int (*nvml_clock_fn)(nvml_dev dev, int type, unsigned *mhz);
typedef int (*nvml_reasons_fn)(nvml_dev dev, unsigned long long *reasons);
typedef int (*nvml_uint_fn)(nvml_dev dev, unsigned *v);
typedef int (*nvml_temp_fn)(nvml_dev dev, int sensor, unsigned *v);

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

struct tl_gpu_sampler {
    void *lib;
    nvml_dev dev;
    nvml_clock_fn clock;
    nvml_reasons_fn reasons;   /* NULL: this driver has neither name */
    nvml_uint_fn power;
    nvml_temp_fn temp;
    int (*shutdown)(void);
    tl_ns period;
    pthread_t thread;
    atomic_bool stop;
    tl_gpu_sample *s;          /* written by the thread only until it is joined */
    size_t n, cap;
};

static void take(tl_gpu_sampler *g)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->s = tl_xrealloc(g->s, g->cap * sizeof *g->s);
    }
    tl_gpu_sample *x = &g->s[g->n];
    memset(x, 0, sizeof *x);
    x->t_ns = tl_mono_ns();
    if (g->clock(g->dev, NVML_CLOCK_SM, &x->sm_mhz) != 0) return; /* a failed read is not a sample */
    g->clock(g->dev, NVML_CLOCK_MEM, &x->mem_mhz);
    if (g->reasons) g->reasons(g->dev, &x->reasons);
    if (g->power) g->power(g->dev, &x->power_mw);
    if (g->temp) g->temp(g->dev, NVML_TEMPERATURE_GPU, &x->temp_c);
    g->n++;
}

static void *loop(void *arg)
{
    tl_gpu_sampler *g = arg;
    tl_ns next = tl_mono_ns();
    while (!atomic_load(&g->stop)) {
        take(g);
        next += g->period;
        tl_ns wait = next - tl_mono_ns();
        if (wait < 0) next = tl_mono_ns(); /* fell behind: no burst to catch up */
        else {
            struct timespec ts = {wait / TL_NS_PER_S, wait % TL_NS_PER_S};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void *sym(void *lib, const char *a, const char *b)
{
    void *f = dlsym(lib, a);
    return f || !b ? f : dlsym(lib, b);
}

int tl_gpu_sampler_start(tl_gpu_sampler **out, const char *pci_bus_id, int index, tl_ns period_ns, tl_err *err)
{
    *out = NULL;
    if (period_ns <= 0) return tl_errf(err, TL_EINVAL, "GPU sampler: period %lld ns", (long long)period_ns);
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return tl_errf(err, TL_ENODEV, "GPU sampler: no NVML (libnvidia-ml.so.1): %s", dlerror());
    tl_gpu_sampler *g = tl_xcalloc(1, sizeof *g);
    g->lib = lib;
    g->period = period_ns;
    nvml_init_fn init = (nvml_init_fn)sym(lib, "nvmlInit_v2", "nvmlInit");
    nvml_by_bus_fn by_bus = (nvml_by_bus_fn)sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    nvml_by_index_fn by_index = (nvml_by_index_fn)sym(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    g->clock = (nvml_clock_fn)sym(lib, "nvmlDeviceGetClockInfo", NULL);
    g->reasons = (nvml_reasons_fn)sym(lib, "nvmlDeviceGetCurrentClocksEventReasons",
                                      "nvmlDeviceGetCurrentClocksThrottleReasons");
    g->power = (nvml_uint_fn)sym(lib, "nvmlDeviceGetPowerUsage", NULL);
    g->temp = (nvml_temp_fn)sym(lib, "nvmlDeviceGetTemperature", NULL);
    g->shutdown = (int (*)(void))sym(lib, "nvmlShutdown", NULL);
    int e;
    if (!init || !g->clock || (!by_bus && !by_index)) {
        e = tl_errf(err, TL_ENODEV, "GPU sampler: NVML lacks the calls it needs");
        goto fail_lib;
    }
    if ((e = init()) != 0) {
        e = tl_errf(err, TL_ENODEV, "GPU sampler: nvmlInit failed (NVML error %d)", e);
        goto fail_lib;
    }
    /* by PCI bus id: NVML numbers GPUs in PCI order, CUDA fastest first */
    if (!((pci_bus_id && by_bus && by_bus(pci_bus_id, &g->dev) == 0) ||
          (by_index && index >= 0 && by_index((unsigned)index, &g->dev) == 0))) {
        e = tl_errf(err, TL_ENODEV, "GPU sampler: NVML does not know GPU %s", pci_bus_id ? pci_bus_id : "?");
        goto fail_init;
    }
    if (pthread_create(&g->thread, NULL, loop, g) != 0) {
        e = tl_errf(err, TL_ENOMEM, "GPU sampler: cannot start its thread");
        goto fail_init;
    }
    *out = g;
    return 0;
fail_init:
    if (g->shutdown) g->shutdown();
fail_lib:
    dlclose(lib);
    free(g);
    return e;
}

void tl_gpu_sampler_stop(tl_gpu_sampler *g, tl_gpu_sample **samples, size_t *n)
{
    if (samples) *samples = NULL;
    if (n) *n = 0;
    if (!g) return;
    atomic_store(&g->stop, true);
    pthread_join(g->thread, NULL);
    if (g->shutdown) g->shutdown();
    dlclose(g->lib);
    if (samples && n) {
        *samples = g->s;
        *n = g->n;
    } else {
        free(g->s);
    }
    free(g);
}

void tl_gpu_clock_summarize(const tl_gpu_sample *s, size_t n, tl_ns from, tl_ns to, tl_gpu_clock_summary *o)
{
    memset(o, 0, sizeof *o);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].t_ns < from || s[i].t_ns > to) continue;
        if (!o->samples || s[i].sm_mhz < o->sm_min_mhz) o->sm_min_mhz = s[i].sm_mhz;
        if (s[i].sm_mhz > o->sm_max_mhz) o->sm_max_mhz = s[i].sm_mhz;
        if (!o->samples || s[i].mem_mhz < o->mem_min_mhz) o->mem_min_mhz = s[i].mem_mhz;
        if (s[i].power_mw > o->power_max_mw) o->power_max_mw = s[i].power_mw;
        if (s[i].temp_c > o->temp_max_c) o->temp_max_c = s[i].temp_c;
        o->reasons |= s[i].reasons & ~TL_GPU_REASON_IDLE;
        sum += s[i].sm_mhz;
        o->samples++;
    }
    if (!o->samples) return;
    o->sm_mean_mhz = sum / (double)o->samples;
    /* dips: samples under TL_GPU_DIP of the window's highest SM clock, and the
     * longest run of them (first dipped sample to the first one back) */
    double bar = TL_GPU_DIP * o->sm_max_mhz;
    tl_ns dip_start = -1, last = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].t_ns < from || s[i].t_ns > to) continue;
        last = s[i].t_ns;
        if (s[i].sm_mhz < bar) {
            o->dip_samples++;
            if (dip_start < 0) dip_start = s[i].t_ns;
        } else if (dip_start >= 0) {
            if (s[i].t_ns - dip_start > o->dip_longest_ns) o->dip_longest_ns = s[i].t_ns - dip_start;
            dip_start = -1;
        }
    }
    if (dip_start >= 0 && last - dip_start > o->dip_longest_ns) o->dip_longest_ns = last - dip_start;
}
