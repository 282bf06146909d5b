/* The tl_device on CUDA: its ops table, open and close, contexts, streams,
 * timers and the event loop (overview in cuda_device.h; launches and graph
 * batches: cuda_launch.c; completions: cuda_complete.c; run metrics:
 * cuda_metrics.c; kernel plans: cuda_plan.c). */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

/* ---- timers (min-heap on (at, seq)) ----------------------------------------------- */

static bool t_less(const tl_timer_ent *a, const tl_timer_ent *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void t_push(tl_cuda *c, tl_timer_ent e)
{
    if (c->n_timers == c->cap_timers) {
        c->cap_timers = c->cap_timers ? c->cap_timers * 2 : 64;
        c->timers = tl_xrealloc(c->timers, c->cap_timers * sizeof *c->timers);
    }
    size_t i = c->n_timers++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!t_less(&e, &c->timers[p])) break;
        c->timers[i] = c->timers[p];
        i = p;
    }
    c->timers[i] = e;
}

static tl_timer_ent t_pop(tl_cuda *c)
{
    tl_timer_ent top = c->timers[0], last = c->timers[--c->n_timers];
    size_t i = 0, n = c->n_timers;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const tl_timer_ent *mv = &last;
        if (l < n && t_less(&c->timers[l], mv)) { m = l; mv = &c->timers[l]; }
        if (r < n && t_less(&c->timers[r], mv)) { m = r; }
        if (m == i) break;
        c->timers[i] = c->timers[m];
        i = m;
    }
    if (n) c->timers[i] = last;
    return top;
}

/* ---- copy buffers ------------------------------------------------------------- */

int tl_cuda_ensure_buffers(tl_cuda *c, size_t bytes, tl_err *err)
{
    if (bytes <= c->buf_bytes) return 0;
    size_t nb = c->buf_bytes ? c->buf_bytes : (size_t)1 << 20;
    while (nb < bytes) nb *= 2;
    cudaDeviceSynchronize();
    if (c->host_buf) cudaFreeHost(c->host_buf);
    if (c->dev_buf) cudaFree(c->dev_buf);
    c->host_buf = c->dev_buf = NULL;
    c->buf_bytes = 0;
    int e;
    if ((e = cudaHostAlloc(&c->host_buf, nb, 0))) return tl_cuda_errf(err, e, "pinned copy buffer");
    if ((e = cudaMalloc(&c->dev_buf, 2 * nb))) return tl_cuda_errf(err, e, "device copy buffer");
    c->buf_bytes = nb;
    return 0;
}

/* ---- ops ---------------------------------------------------------------------- */

/* A worker process for a context (MPS client, or a further time-sliced one). */
static int start_worker(tl_cuda *c, const tl_ctx_config *cfg, tl_dctx *x, tl_err *err)
{
    char env[6][320];
    int n_env = 0;
    if (cfg->kind == TL_CTX_MPS) {
        if (!c->mps) {
            char ctl[512];
            int r = tl_mps_find_control(ctl, sizeof ctl, err);
            if (r) return r;
            char root[] = "/tmp/tally-mps-XXXXXX";
            if (!mkdtemp(root)) return tl_errf(err, TL_EIO, "/tmp: cannot create the MPS folder");
            static tl_mps the_mps; /* static: the exit/signal cleanup reaches it */
            tl_mps_layout(&the_mps, ctl, root);
            tl_procs_set_mps(&the_mps);
            if ((r = tl_mps_start(&the_mps, err))) return r;
            c->mps = &the_mps;
        }
        n_env = tl_mps_client_env(c->mps, cfg->sm_percent, cfg->mps_priority, env, 6);
    } else if (c->mps) {
        /* a time-sliced context next to a running MPS daemon: not its client */
        snprintf(env[n_env++], 320, "CUDA_MPS_PIPE_DIRECTORY=/nonexistent-tally-no-mps");
    }
    c->workers = tl_xrealloc(c->workers, (size_t)(c->n_workers + 1) * sizeof *c->workers);
    int r = tl_worker_spawn(&c->workers[c->n_workers], c->device, env, n_env, err);
    if (r) return r;
    x->worker = c->n_workers++;
    if (c->workers[x->worker].sms > 0) x->sms = c->workers[x->worker].sms;
    return 0;
}

static int cu_ctx_create(tl_device *d, const tl_ctx_config *cfg, tl_ctx_id *out, tl_err *err)
{
    tl_cuda *c = C(d);
    tl_dctx x;
    memset(&x, 0, sizeof x);
    x.cfg = *cfg;
    x.sms = d->gpu.sms;
    x.worker = -1;
    switch (cfg->kind) {
    case TL_CTX_TIMESLICED:
        if (c->have_primary) { /* a context of its own: another process */
            int r = start_worker(c, cfg, &x, err);
            if (r) return r;
            break;
        }
        c->have_primary = true;
        break;
    case TL_CTX_PARTITION: {
        if (cfg->sm_count <= 0 || cfg->sm_count > d->gpu.sms)
            return tl_errf(err, TL_ERANGE, "context %d: sm_count %d outside 1..%d", c->n_ctxs, cfg->sm_count,
                           d->gpu.sms);
        int got = 0;
        int r = tl_cuda_green_create(c, cfg->sm_count, &x.green, &got, err);
        if (r) return r;
        x.sms = got;
        break;
    }
    case TL_CTX_MPS: {
        if (cfg->sm_percent < 0 || cfg->sm_percent > 100)
            return tl_errf(err, TL_ERANGE, "context %d: sm_percent %g outside (0, 100]", c->n_ctxs, cfg->sm_percent);
        int r = start_worker(c, cfg, &x, err);
        if (r) return r;
        break;
    }
    default:
        return tl_errf(err, TL_EINVAL, "context %d: unknown kind %d", c->n_ctxs, (int)cfg->kind);
    }
    if (c->n_ctxs == c->cap_ctxs) {
        c->cap_ctxs = c->cap_ctxs ? c->cap_ctxs * 2 : 8;
        c->ctxs = tl_xrealloc(c->ctxs, (size_t)c->cap_ctxs * sizeof *c->ctxs);
    }
    c->ctxs[c->n_ctxs] = x;
    *out = c->n_ctxs++;
    if (cfg->job >= c->n_jstats) {
        c->jstats = tl_xrealloc(c->jstats, (size_t)(cfg->job + 1) * sizeof *c->jstats);
        memset(c->jstats + c->n_jstats, 0, (size_t)(cfg->job + 1 - c->n_jstats) * sizeof *c->jstats);
        c->n_jstats = cfg->job + 1;
    }
    return 0;
}

static int cu_stream_create(tl_device *d, tl_ctx_id ctx, int prio, tl_stream_id *out, tl_err *err)
{
    tl_cuda *c = C(d);
    if (ctx < 0 || ctx >= c->n_ctxs) return tl_errf(err, TL_EINVAL, "stream: unknown context %d", ctx);
    if (prio > 0 || prio < d->gpu.stream_prio_greatest)
        return tl_errf(err, TL_ERANGE, "stream: priority %d outside %d..0", prio, d->gpu.stream_prio_greatest);
    cudaStream_t s = NULL;
    int r, remote = -1;
    if (c->ctxs[ctx].worker >= 0) {
        tl_worker *w = &c->workers[c->ctxs[ctx].worker];
        tl_wmsg m;
        memset(&m, 0, offsetof(tl_wmsg, u));
        m.type = TL_W_STREAM;
        m.prio = prio;
        if (tl_worker_send(w, &m)) return tl_errf(err, TL_EIO, "context %d: its worker is gone", ctx);
        for (;;) {
            int g = tl_worker_recv_wait(w, &m, 30000);
            if (g <= 0) return tl_errf(err, TL_EIO, "context %d: its worker did not create a stream", ctx);
            if (m.type == TL_W_STREAM) break;
            if (m.type == TL_W_DONES) tl_cuda_remote_dones(c, c->ctxs[ctx].worker, &m);
        }
        if (m.stream < 0) return tl_errf(err, TL_EIO, "context %d: stream in worker: CUDA error %d", ctx, m.status);
        remote = m.stream;
    } else if (c->ctxs[ctx].green) {
        if ((r = tl_cuda_green_stream(c, c->ctxs[ctx].green, prio, &s, err))) return r;
    } else if ((r = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio))) {
        return tl_cuda_errf(err, r, "cudaStreamCreateWithPriority");
    }
    if (c->n_streams == c->cap_streams) {
        c->cap_streams = c->cap_streams ? c->cap_streams * 2 : 16;
        c->streams = tl_xrealloc(c->streams, (size_t)c->cap_streams * sizeof *c->streams);
    }
    tl_dstream *ds = &c->streams[c->n_streams];
    memset(ds, 0, sizeof *ds);
    ds->s = s;
    ds->ctx = ctx;
    ds->prio = prio;
    ds->worker = c->ctxs[ctx].worker;
    ds->remote = remote;
    *out = c->n_streams++;
    return 0;
}

static int cu_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{
    tl_cuda *c = C(d);
    if (!cb) return TL_EINVAL;
    tl_timer_ent e = {at, c->timer_seq++, cb, arg, c->timer_log ? host_now(c) : 0};
    t_push(c, e);
    return 0;
}

/* Inside a callback, now() is the time of the event being handled (a timer's
 * due time, a completion's GPU end), kept monotonic, as in the simulator:
 * otherwise the loop's few microseconds of lateness per event would add up
 * along a replayed host timeline (every host gap would restart from the late
 * firing). Outside callbacks it is the wall clock. Both are <= the wall clock. */
static tl_ns cu_now(tl_device *d)
{
    tl_cuda *c = C(d);
    return event_time(c, host_now(c));
}

/* Time 0 of the run (tl_device_ops.begin): the clock's origin moves to now,
 * so the setup's time (contexts in worker processes, MPS clients: 0.13-0.44 s
 * on the H100, session 18) does not become a backlog of late arrivals. Timers
 * the setup set keep their times, now on the run's clock, as in the
 * simulator, where the setup happens at time 0. Work still on the GPU from
 * the setup would have its times on the old origin: then nothing moves. */
static void cu_begin(tl_device *d)
{
    tl_cuda *c = C(d);
    if (c->inflight) return;
    tl_ns setup = host_now(c);
    if (setup <= 0) return;
    c->t0 += setup;
    c->logical = 0;
    c->loop.setup_ns = setup;
    c->loop.nivcsw_begin = thread_nivcsw();
    if (c->timer_log) fprintf(c->timer_log, "# origin_mono_ns=%lld\n", (long long)c->t0);
}

static int cu_run(tl_device *d, tl_ns until, tl_err *err)
{
    tl_cuda *c = C(d);
    for (;;) {
        if (tl_cuda_flush_all(c, false)) return tl_cuda_flush_error(c, err);
        int r = tl_cuda_poll_completions(d, err);
        if (r < 0) return r;
        tl_ns now = host_now(c);
        /* Fire due timers, earliest first; callbacks may add more. */
        int fired = 0;
        while (c->n_timers && c->timers[0].at <= now && fired < 64) {
            tl_timer_ent t = t_pop(c);
            c->loop.timers++;
            ns_stat_add(now - t.at, &c->loop.late_sum_ns, &c->loop.late_max_ns, &c->loop.late_over_10us,
                        10 * TL_NS_PER_US);
            c->loop.late_over_1ms += now - t.at > TL_NS_PER_MS;
            if (c->timer_log)
                fprintf(c->timer_log, "%lld,%lld,%lld,%lld,%lld\n", (long long)t.at, (long long)t.set_wall,
                        (long long)now, (long long)c->logical,
                        (long long)((uintptr_t)t.cb - (uintptr_t)cu_timer));
            enter_cb(c, t.at < now ? t.at : now);
            t.cb(t.arg, c->logical);
            c->in_cb--;
            if (tl_cuda_flush_all(c, false)) return tl_cuda_flush_error(c, err);
            fired++;
            now = host_now(c);
        }
        if (!c->inflight && !c->n_timers) {
            tl_watchdog_kick(c->watchdog, false);
            return 0;
        }
        if (until > 0 && now >= until) return 0;
        if (!c->inflight) {
            tl_watchdog_kick(c->watchdog, false);
            /* Nothing on the GPU: sleep until shortly before the next timer. */
            tl_ns m = c->sleep_margin;
            tl_ns wait = c->timers[0].at - now - m;
            if (until > 0 && until - now - m < wait) wait = until - now - m;
            if (m >= 0 && wait > 0) {
                struct timespec ts = {wait / TL_NS_PER_S, wait % TL_NS_PER_S};
                nanosleep(&ts, NULL);
            }
        }
        /* else spin: completions and short host gaps need microsecond timing. */
    }
}

static void meas_put(void *arg, const char *key, tl_ns ns)
{
    tl_cuda *c = arg;
    if (c->n_meas == c->cap_meas) {
        c->cap_meas = c->cap_meas ? c->cap_meas * 2 : 256;
        c->meas = tl_xrealloc(c->meas, c->cap_meas * sizeof *c->meas);
    }
    snprintf(c->meas[c->n_meas].key, sizeof c->meas[c->n_meas].key, "%s", key);
    c->meas[c->n_meas++].ns = ns;
}

static int cu_measure(tl_device *d, const tl_kernel_desc *k, tl_ns *out, tl_err *err)
{
    tl_cuda *c = C(d);
    if (!k || !k->op || k->op->kind != TL_OP_KERNEL) return tl_errf(err, TL_EINVAL, "measure: not a kernel");
    tl_kernel_plan pl;
    int r = tl_cuda_plan(d, NULL, k->op, &pl, err);
    if (r) return r;
    uint64_t total = tl_op_blocks(k->op);
    tl_synth_launch l;
    tl_cuda_synth_from_plan(&l, &pl, k->op, k->block_begin, k->block_end ? k->block_end : total);
    if (l.end > total || l.begin >= l.end) return tl_errf(err, TL_ERANGE, "measure: block range outside the grid");
    l.workers = k->ptb_workers_per_sm * (unsigned)d->gpu.sms;
    /* Cached per launch configuration: policies measure lazily, during runs,
     * and a timed run blocks the event loop (the simulator's are free). */
    char key[200];
    snprintf(key, sizeof key, "%d/%d/%u/%llu/%u,%u,%u/%u/%llu-%llu/%u", l.kind, l.variant, l.iters,
             (unsigned long long)total, l.block[0], l.block[1], l.block[2], l.smem, (unsigned long long)l.begin,
             (unsigned long long)l.end, l.workers);
    for (size_t i = 0; i < c->n_meas; i++)
        if (!strcmp(c->meas[i].key, key)) {
            *out = c->meas[i].ns;
            return 0;
        }
    if (tl_cuda_flush_all(c, true)) return tl_cuda_flush_error(c, err); /* what is queued goes before the timed run */
    c->measuring = true;
    r = tl_cuda_time_launch(c, &l, 5, c->calib_stream, out, err);
    c->measuring = false;
    if (r) return r;
    meas_put(c, key, *out);
    tl_err e2;
    tl_calib_db_measure_put(&c->calib, c->info.name, key, *out, &e2);
    return 0;
}

static void cu_close(tl_device *d)
{
    tl_cuda *c = C(d);
    if (!c) return;
    cudaDeviceSynchronize();
    tl_gcache_stats gs = {0};
    if (c->gcache) tl_gcache_get_stats(c->gcache, &gs);
    if (gs.launches || gs.no_room)
        fprintf(stderr, "tally-run: CUDA graphs: %llu launches of %llu kernels; %llu instantiated (%.1f ms in all, "
                        "longest %.2f ms); %llu relaunched for work within %.0f%%; %llu updated (%llu nodes, %.1f ms in all); %llu dropped for slots; "
                        "%llu batches launched one by one (no slots); %llu of %llu batches cut before the loop turn ended; "
                        "per graph launch: %.1f us from its first "
                        "kernel's issue to its flush, %.1f us in cudaGraphLaunch; timers fired %.1f us late on average\n",
                (unsigned long long)gs.launches, (unsigned long long)gs.nodes, (unsigned long long)gs.instantiations,
                gs.instantiate_ns / 1e6, gs.instantiate_max_ns / 1e6, (unsigned long long)gs.reuses,
                TL_GCACHE_REUSE_PCT, (unsigned long long)gs.updates,
                (unsigned long long)gs.node_updates, gs.update_ns / 1e6, (unsigned long long)gs.evictions,
                (unsigned long long)gs.no_room, (unsigned long long)c->loop.batch_cuts,
                (unsigned long long)c->loop.batches,
                c->loop.batches ? c->loop.batch_open_sum_ns / 1e3 / (double)c->loop.batches : 0.0,
                gs.launches ? gs.launch_call_ns / 1e3 / (double)gs.launches : 0.0,
                c->loop.timers ? c->loop.late_sum_ns / 1e3 / (double)c->loop.timers : 0.0);
    if (c->loop.lag_batches)
        fprintf(stderr, "tally-run: graph batches: %llu of %.1f ops on average, each sent to the GPU %.1f us "
                        "after the event that issued its first op (%.0f ns an op)\n",
                (unsigned long long)c->loop.lag_batches, (double)c->loop.lag_ops / (double)c->loop.lag_batches,
                c->loop.lag_sum_ns / 1e3 / (double)c->loop.lag_batches,
                (double)c->loop.lag_sum_ns / (double)c->loop.lag_ops);
    if (c->timer_log) fclose(c->timer_log);
    tl_gpu_sampler_stop(c->sampler, NULL, NULL);
    free(c->samples);
    tl_watchdog_stop(c->watchdog);
    for (int i = 0; i < c->n_workers; i++) tl_worker_stop(&c->workers[i]);
    free(c->workers);
    if (c->mps) {
        tl_mps_stop(c->mps);
        tl_procs_set_mps(NULL);
    }
    for (int i = 0; i < c->n_streams; i++) {
        if (c->streams[i].worker < 0) cudaStreamDestroy(c->streams[i].s);
        free(c->streams[i].q);
        free(c->streams[i].batch);
    }
    for (int i = 0; i < c->n_ctxs; i++)
        if (c->ctxs[i].green && c->drv.GreenCtxDestroy) c->drv.GreenCtxDestroy(c->ctxs[i].green);
    for (size_t i = 0; i < c->n_ev_pool; i++) cudaEventDestroy(c->ev_pool[i]);
    for (size_t i = 0; i < c->n_evt_pool; i++) cudaEventDestroy(c->evt_pool[i]);
    if (c->ctl_stream) cudaStreamDestroy(c->ctl_stream);
    if (c->calib_stream) cudaStreamDestroy(c->calib_stream);
    if (c->host_buf) cudaFreeHost(c->host_buf);
    if (c->dev_buf) cudaFree(c->dev_buf);
    tl_gcache_free(c->gcache);
    tl_synth_close(c->synth);
    tl_calib_db_close(&c->calib);
    free(c->streams);
    free(c->ctxs);
    free(c->timers);
    free(c->ev_pool);
    free(c->evt_pool);
    free(c->plans);
    free(c->traces);
    free(c->jstats);
    free(c->mem);
    free(c->meas);
    bool reset = !c->opt.keep_context;
    free(c);
    d->impl = NULL;
    /* Every CUDA object of this device is gone: start the next one from a
     * fresh primary context (tl_cuda_options.keep_context says why). */
    if (reset) cudaDeviceReset();
    d->ops = NULL;
}

static const tl_device_ops cuda_ops = {
    .name = "cuda",
    .ctx_create = cu_ctx_create,
    .stream_create = cu_stream_create,
    .launch = tl_cuda_launch,
    .copy = tl_cuda_copy,
    .retreat = tl_cuda_retreat,
    .timer = cu_timer,
    .now = cu_now,
    .run = cu_run,
    .measure = cu_measure,
    .job_stats = tl_cuda_job_stats,
    .close = cu_close,
    .run_metrics = tl_cuda_run_metrics,
    .begin = cu_begin,
};

/* The watchdog's last words: what each stream was waiting for. Racy reads
 * from another thread, only on the way out. */
static void hang_report(void *arg)
{
    tl_cuda *c = arg;
    tl_ns now = host_now(c);
    fprintf(stderr, "tally-run: in flight: %zu ops; in a callback: %s; loop logical time %.6f s, wall %.6f s; "
                    "measuring: %s; measurements %llu; timers pending %zu\n",
            c->inflight, c->in_cb ? "yes" : "no", (double)c->logical / 1e9, (double)now / 1e9,
            c->measuring ? "yes" : "no", (unsigned long long)c->n_meas, c->n_timers);
    for (int i = 0; i < c->n_streams; i++) {
        tl_dstream *s = &c->streams[i];
        if (!s->n) continue;
        tl_pending *p = &s->q[s->head];
        const volatile tl_synth_rec *rec = p->is_kernel && !p->remote ? tl_synth_record(c->synth, (unsigned)p->slot) : NULL;
        fprintf(stderr,
                "tally-run:   stream %d (ctx %d, prio %d, worker %d): %zu queued; head id %llu %s%s blocks %llu-%llu "
                "grid %llu block %ux%ux%u issued %.6f s; slot %d gen %u record gen %u cudaStreamQuery %d\n",
                i, s->ctx, s->prio, s->worker, s->n, (unsigned long long)p->id, p->is_kernel ? "kernel" : "copy",
                p->ptb ? " PTB" : "", (unsigned long long)p->begin, (unsigned long long)p->end,
                p->op ? (unsigned long long)tl_op_blocks(p->op) : 0ull, p->op ? p->op->block[0] : 0,
                p->op ? p->op->block[1] : 0, p->op ? p->op->block[2] : 0, (double)p->issued_ns / 1e9, p->slot, p->gen,
                rec ? rec->gen : 0u, s->s ? (int)cudaStreamQuery(s->s) : -1);
        if (rec) {
            const tl_synth_hist *h = tl_synth_history(c->synth, (unsigned)p->slot);
            for (int k = 0; h && k < TL_SYNTH_HIST && h[k].what; k++)
                fprintf(stderr, "tally-run:     slot history: %c gen %u at %.6f s kind %d v%d iters %u blocks %llu-%llu workers %u\n",
                        h[k].what, h[k].gen, (double)(h[k].t_ns - c->t0) / 1e9, h[k].kind, h[k].variant, h[k].iters,
                        (unsigned long long)h[k].begin, (unsigned long long)h[k].end, h[k].workers);
            unsigned long long dv[6] = {0};
            int e = tl_synth_slot_dump(c->synth, (unsigned)p->slot, dv);
            fprintf(stderr, "tally-run:     slot on the device (%d): start %llu end %llu exited %llu claimed %llu "
                            "retreat_gen %llu group exits %llu\n", e, dv[0], dv[1], dv[2], dv[3], dv[4], dv[5]);
        }
    }
}

int tl_cuda_open(tl_device *d, const tl_cuda_options *o, tl_err *err)
{
    memset(d, 0, sizeof *d);
    tl_cuda_options opt;
    memset(&opt, 0, sizeof opt);
    if (o) opt = *o;
    tl_cuda_info info;
    int r = tl_cuda_probe(opt.device, &info, err);
    if (r) return r;
    int e = (int)cudaSetDevice(opt.device);
    if (e) return tl_cuda_errf(err, e, "cudaSetDevice");
    tl_cuda *c = tl_xcalloc(1, sizeof *c);
    c->opt = opt;
    c->info = info;
    c->device = opt.device;
    d->impl = c;
    d->ops = &cuda_ops;
    tl_cuda_props(c->device, &d->gpu);
    tl_drv_load(&c->drv); /* optional: only partitions need it */
    char *path = opt.calib_db ? tl_xstrdup(opt.calib_db) : tl_calib_default_path();
    r = tl_calib_db_open(&c->calib, path, err);
    free(path);
    if (r) goto fail;
    if ((r = tl_cuda_calib_load(c, err))) goto fail;
    if ((r = tl_calib_db_measure_each(&c->calib, c->info.name, meas_put, c, err))) goto fail;
    if ((e = tl_synth_open(&c->synth, TL_GCACHE_PROCESS_SLOTS))) { r = tl_cuda_errf(err, e, "synthetic kernels"); goto fail; }
    c->gcache = tl_gcache_new(c->synth);
    if ((e = (int)cudaStreamCreateWithPriority(&c->ctl_stream, cudaStreamNonBlocking, d->gpu.stream_prio_greatest)) ||
        (e = (int)cudaStreamCreateWithFlags(&c->calib_stream, cudaStreamNonBlocking))) {
        r = tl_cuda_errf(err, e, "control streams");
        goto fail;
    }
    long long res = 0;
    if (!tl_synth_timer_resolution(c->synth, &res)) c->info.timer_res_ns = res;
    long long off = 0;
    if ((e = tl_synth_clock_offset(c->synth, &off))) { r = tl_cuda_errf(err, e, "GPU clock offset"); goto fail; }
    c->gt_offset = off;
    c->info.clock_offset_ns = off;
    c->t0 = tl_mono_ns();
    c->loop.nivcsw_begin = thread_nivcsw();
    if (opt.watchdog_ns >= 0 && (r = tl_watchdog_start(&c->watchdog, opt.watchdog_ns ? opt.watchdog_ns : 20 * TL_NS_PER_S, err)))
        goto fail;
    tl_watchdog_set_report(c->watchdog, hang_report, c);
    /* The GPU's clocks every 10 ms (TALLY_GPU_SAMPLE_MS; 0: off). Without NVML
     * the run goes on without them, saying so once. */
    long long sample_ms = 10;
    if (tl_env_int64("TALLY_GPU_SAMPLE_MS", 0, 10000, &sample_ms) < 0) {
        r = tl_errf(err, TL_EINVAL, "TALLY_GPU_SAMPLE_MS=%s: want 0 (off) to 10000 ms", getenv("TALLY_GPU_SAMPLE_MS"));
        goto fail;
    }
    if (sample_ms > 0) {
        char bus[64] = "";
        tl_err serr = {0};
        if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->device) != cudaSuccess) bus[0] = '\0';
        if (tl_gpu_sampler_start(&c->sampler, bus[0] ? bus : NULL, c->device, sample_ms * TL_NS_PER_MS, &serr)) {
            static bool said;
            if (!said) fprintf(stderr, "tally-run: %s; runs go on without the GPU's clocks\n", serr.msg);
            said = true;
        }
    }
    /* Diagnostic: how long before its next timer the idle loop wakes up
     * (session 18: spinning instead served requests at an idle GPU 5-9% sooner
     * at the median; sleeping stays the default every earlier run had). */
    long long margin_us = 60;
    if (tl_env_int64("TALLY_SLEEP_MARGIN_US", LLONG_MIN, 1000000, &margin_us) < 0) {
        r = tl_errf(err, TL_EINVAL, "TALLY_SLEEP_MARGIN_US=%s: not a whole number of us up to 1000000 "
                    "(negative: never sleep)", getenv("TALLY_SLEEP_MARGIN_US"));
        goto fail;
    }
    c->sleep_margin = margin_us < 0 ? -1 : margin_us * TL_NS_PER_US;
    /* Diagnostic: the loop thread's timer slack, how much later than asked
     * the kernel may end its sleeps (Linux's default is 50 us; the loop wakes
     * sleep_margin early and spins the rest, so the slack only matters where
     * an oversleep passes the margin; `tally-run jitter` measures both). */
    long long slack_ns;
    int set = tl_env_int64("TALLY_TIMER_SLACK_NS", 1, 1000000, &slack_ns);
    if (set < 0 || (set > 0 && prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0) != 0)) {
        r = tl_errf(err, TL_EINVAL, "TALLY_TIMER_SLACK_NS=%s: want 1 to 1000000 ns (and a Linux that "
                    "takes it)", getenv("TALLY_TIMER_SLACK_NS"));
        goto fail;
    }
    /* Diagnostic: every timer the loop fires, one CSV line each (times on the
     * run's clock; the callback as its address less cu_timer's, which nm on
     * the same build resolves whether or not the binary is position-independent).
     * It changes nothing the loop does but the line written. */
    const char *tlog = getenv("TALLY_TIMER_LOG");
    if (tlog && *tlog) {
        if (!(c->timer_log = fopen(tlog, "a"))) {
            r = tl_errf(err, TL_EIO, "TALLY_TIMER_LOG=%s: cannot open", tlog);
            goto fail;
        }
        fprintf(c->timer_log, "# due_ns,set_wall_ns,fired_wall_ns,logical_before_ns,callback_minus_cu_timer\n"
                              "# origin_mono_ns=%lld\n", (long long)c->t0);
    }
    return 0;
fail:
    cu_close(d);
    return r;
}

void tl_cuda_get_info(tl_device *d, tl_cuda_info *out) { *out = C(d)->info; }

int tl_cuda_sync(tl_device *d, tl_err *err)
{
    if (tl_cuda_flush_all(C(d), true)) return tl_cuda_flush_error(C(d), err);
    int e = (int)cudaDeviceSynchronize();
    return e ? tl_cuda_errf(err, e, "cudaDeviceSynchronize") : 0;
}
