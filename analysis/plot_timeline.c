/* Timeline of one run: SMs occupied by each job over a window (from the kernels
 * table: each kernel holds avg_sms SMs over [start, end]), stacked, with request
 * arrivals and completions marked above. Answers "what was the GPU doing when
 * this request was late". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "tally/gpu.h"

typedef struct occ_event {
    int64_t t;
    int job;      /* index into the run's jobs */
    double delta; /* +avg_sms at start, -avg_sms at end */
} occ_event;

static int cmp_event(const void *pa, const void *pb)
{
    const occ_event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

int tl_an_job_index(const tl_an_run *ri, int job_id)
{
    for (int i = 0; i < ri->n_jobs; i++)
        if (ri->job_ids[i] == job_id)
            return i;
    return -1;
}

void tl_an_run_info_free(tl_an_run *ri)
{
    for (int i = 0; i < ri->n_jobs; i++)
        free(ri->names[i]);
    free(ri->names);
    free(ri->job_ids);
    free(ri->inference);
    free(ri->experiment);
    free(ri->policy);
    free(ri->kind);
    free(ri->gpu);
    memset(ri, 0, sizeof *ri);
}

int tl_an_run_info(tl_analysis *a, long long run_id, tl_an_run *ri, tl_err *err)
{
    memset(ri, 0, sizeof *ri);
    sqlite3_stmt *st;
    int r = tl_an_prepare(a, "SELECT COALESCE(experiment,''), policy, kind, gpu FROM runs WHERE "
                             "run_id=?1 AND COALESCE(status,'done')='done'",
                          &st, err);
    if (r < 0)
        return r;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return tl_errf(err, TL_EMISSING, "%s: no finished run with --run-id %lld", a->path,
                       run_id);
    }
    ri->experiment = tl_an_clean_label((const char *)sqlite3_column_text(st, 0));
    ri->policy = tl_an_clean_label((const char *)sqlite3_column_text(st, 1));
    ri->kind = tl_an_clean_label((const char *)sqlite3_column_text(st, 2));
    ri->gpu = tl_an_clean_label((const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    if ((r = tl_an_prepare(a, "SELECT job_id, name, role FROM jobs WHERE run_id=?1 ORDER BY job_id",
                           &st, err)) < 0) {
        tl_an_run_info_free(ri);
        return r;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (ri->n_jobs == cap) {
            cap = cap ? cap * 2 : 4;
            ri->job_ids = tl_xrealloc(ri->job_ids, (size_t)cap * sizeof *ri->job_ids);
            ri->names = tl_xrealloc(ri->names, (size_t)cap * sizeof *ri->names);
            ri->inference = tl_xrealloc(ri->inference, (size_t)cap * sizeof *ri->inference);
        }
        ri->job_ids[ri->n_jobs] = sqlite3_column_int(st, 0);
        ri->names[ri->n_jobs] = tl_an_clean_label((const char *)sqlite3_column_text(st, 1));
        const unsigned char *t = sqlite3_column_text(st, 2);
        ri->inference[ri->n_jobs] = t && !strcmp((const char *)t, "inference");
        ri->n_jobs++;
    }
    sqlite3_finalize(st);
    if (ri->n_jobs == 0) { /* every run writes its jobs: the database is damaged */
        tl_an_run_info_free(ri);
        return tl_errf(err, TL_EFORMAT, "%s: run %lld has no rows in table jobs", a->path,
                       run_id);
    }
    return 0;
}

/* No kernel record of the run overlaps what is plotted. With a window, the
 * run may well have kernels elsewhere: say where, rather than to rerun it
 * with --kernels, which it was. */
static int no_kernels(tl_analysis *a, long long run_id, const tl_plot_opts *o, bool window,
                      tl_err *err)
{
    sqlite3_stmt *st;
    if (window && tl_an_prepare(a, "SELECT MIN(start_ns), MAX(end_ns) FROM kernels WHERE "
                                   "run_id=?1", &st, NULL) == 0) {
        sqlite3_bind_int64(st, 1, run_id);
        bool some = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
        double lo = some ? (double)sqlite3_column_int64(st, 0) : 0;
        double hi = some ? (double)sqlite3_column_int64(st, 1) : 0;
        sqlite3_finalize(st);
        if (some)
            return tl_errf(err, TL_EMISSING, "%s: run %lld has no kernel records from %g to %g ms "
                           "(--from-ms, --to-ms); they run from %g to %g ms", a->path, run_id,
                           (double)o->from_ns / 1e6, (double)o->to_ns / 1e6, lo / 1e6, hi / 1e6);
    }
    return tl_errf(err, TL_EMISSING, "%s: run %lld has no kernel records (run tally-sim with "
                   "--kernels)", a->path, run_id);
}

int tl_plot_timeline(tl_analysis *a, long long run_id, const tl_plot_opts *o, tl_err *err)
{
    int r = tl_mkdirs(o->out_dir, err);
    if (r < 0)
        return r;
    tl_an_run ri;
    if ((r = tl_an_run_info(a, run_id, &ri, err)) < 0)
        return r;
    if (!a->has_kernels) {
        tl_an_run_info_free(&ri);
        return tl_errf(err, TL_EMISSING, "%s: no kernels table (run tally-sim with --kernels)",
                       a->path);
    }
    bool window = o->to_ns > o->from_ns;
    int64_t t0 = window ? o->from_ns : INT64_MAX, t1 = window ? o->to_ns : INT64_MIN;

    /* Kernels overlapping the window become +/- events. */
    sqlite3_stmt *st;
    if ((r = tl_an_prepare(a, "SELECT job_id, start_ns, end_ns, avg_sms FROM kernels WHERE "
                              "run_id=?1 AND (?2=0 OR (end_ns>?3 AND start_ns<?4)) ORDER BY "
                              "start_ns, job_id, seq",
                           &st, err)) < 0) {
        tl_an_run_info_free(&ri);
        return r;
    }
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, window);
    sqlite3_bind_int64(st, 3, o->from_ns);
    sqlite3_bind_int64(st, 4, o->to_ns);
    occ_event *ev = NULL;
    size_t nev = 0, cap = 0, nkernels = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int j = tl_an_job_index(&ri, sqlite3_column_int(st, 0));
        int64_t s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
        double sms = sqlite3_column_double(st, 3);
        nkernels++;
        if (j < 0 || e <= s || !(sms > 0))
            continue;
        if (window) {
            s = s < t0 ? t0 : s;
            e = e > t1 ? t1 : e;
            if (e <= s)
                continue;
        } else {
            t0 = s < t0 ? s : t0;
            t1 = e > t1 ? e : t1;
        }
        if (nev + 2 > cap) {
            cap = cap ? cap * 2 : 1024;
            ev = tl_xrealloc(ev, cap * sizeof *ev);
        }
        ev[nev++] = (occ_event){s, j, sms};
        ev[nev++] = (occ_event){e, j, -sms};
    }
    sqlite3_finalize(st);
    if (!window && (r = tl_an_prepare(a, "SELECT MIN(arrival_ns), MAX(end_ns) FROM requests "
                                         "WHERE run_id=?1",
                                      &st, err)) == 0) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
            t0 = lo < t0 ? lo : t0;
            t1 = hi > t1 ? hi : t1;
        }
        sqlite3_finalize(st);
    }
    if (r < 0) {
        free(ev);
        tl_an_run_info_free(&ri);
        return r;
    }
    if (nkernels == 0) {
        free(ev);
        tl_an_run_info_free(&ri);
        return no_kernels(a, run_id, o, window, err);
    }
    if (t1 <= t0) {
        free(ev);
        tl_an_run_info_free(&ri);
        return tl_errf(err, TL_ERANGE, "run %lld: empty time window", run_id);
    }
    if (nev) /* kernels all of unknown jobs or of no SMs leave none */
        qsort(ev, nev, sizeof *ev, cmp_event);

    char base[64], name[80];
    snprintf(base, sizeof base, "run%lld_timeline", run_id);
    snprintf(name, sizeof name, "%s.dat", base);
    FILE *f = tl_an_create(a, o, name, err);
    if (!f) {
        free(ev);
        tl_an_run_info_free(&ri);
        return err ? err->code : TL_EIO;
    }
    fprintf(f, "# tally-plot timeline, run %lld (%s, policy %s, %s), window [%.9g, %.9g] ms\n",
            run_id, *ri.experiment ? ri.experiment : "(no experiment)", ri.policy, ri.kind,
            t0 / 1e6, t1 / 1e6);
    fprintf(f, "# block 0: SMs occupied per job (sum of avg_sms of its running kernels), as a\n"
               "# step function: each change is written twice (value before, value after).\n"
               "# time_ms");
    for (int j = 0; j < ri.n_jobs; j++)
        fprintf(f, " %s_sms", ri.names[j]);
    fputc('\n', f);
    double *occ = tl_xcalloc((size_t)ri.n_jobs + 1, sizeof *occ);
    double peak = 0; /* the largest single job's occupancy */
    /* One row of the current state. */
#define ROW(T)                                                                                     \
    do {                                                                                           \
        tl_an_put_num(f, (T) / 1e6);                                                               \
        for (int j_ = 0; j_ < ri.n_jobs; j_++) {                                                   \
            fputc(' ', f);                                                                         \
            tl_an_put_num(f, occ[j_]);                                                             \
        }                                                                                          \
        fputc('\n', f);                                                                            \
    } while (0)
    if (nev == 0 || ev[0].t > t0)
        ROW(t0);
    for (size_t i = 0; i < nev;) {
        int64_t t = ev[i].t;
        if (t > t0)
            ROW(t);
        for (; i < nev && ev[i].t == t; i++) {
            occ[ev[i].job] += ev[i].delta;
            /* sums of doubles drift: a job with nothing running is exactly 0 */
            if (fabs(occ[ev[i].job]) < 1e-9)
                occ[ev[i].job] = 0;
            peak = occ[ev[i].job] > peak ? occ[ev[i].job] : peak;
        }
        ROW(t);
    }
    ROW(t1);
#undef ROW
    free(occ);
    free(ev);

    /* Requests go in a band above the occupancy, each on a lane of its own so
     * that overlapping (queued) requests stay apart; y is written in the data. */
    tl_gpu_props gpu;
    tl_err gerr = {0};
    int sms = ri.gpu && tl_gpu_lookup(ri.gpu, &gpu, &gerr) == 0 ? gpu.sms : 0;
    double top = peak > sms ? peak : sms;
    if (top <= 0)
        top = 1;
    double base_y = top * 1.06, step = top * 0.035;
    int lanes_used = 0;
    enum { MAX_LANES = 12 };
    if ((r = tl_an_prepare(a, "SELECT req_id, arrival_ns, end_ns, latency_ns FROM requests "
                              "WHERE run_id=?1 AND job_id=?2 AND end_ns>=?3 AND arrival_ns<=?4 "
                              "ORDER BY arrival_ns, req_id",
                           &st, err)) < 0) {
        tl_out_discard(f);
        tl_an_run_info_free(&ri);
        return r;
    }
    int *req_block = tl_xcalloc((size_t)ri.n_jobs + 1, sizeof *req_block);
    size_t *req_count = tl_xcalloc((size_t)ri.n_jobs + 1, sizeof *req_count);
    int blocks = 1;
    for (int j = 0; j < ri.n_jobs; j++) {
        req_block[j] = -1;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, ri.job_ids[j]);
        sqlite3_bind_int64(st, 3, t0);
        sqlite3_bind_int64(st, 4, t1);
        size_t n = 0;
        int64_t lane_end[MAX_LANES];
        int lanes = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n++ == 0) {
                fprintf(f, "\n\n# block %d: requests of job \"%s\" (y: plotting height of its "
                           "lane)\n# req_id arrival_ms end_ms latency_ms y\n",
                        blocks, ri.names[j]);
                req_block[j] = blocks++;
            }
            int64_t arr = sqlite3_column_int64(st, 1), end = sqlite3_column_int64(st, 2);
            int lane = 0;
            while (lane < lanes && lane_end[lane] > arr)
                lane++;
            if (lane == MAX_LANES) /* very deep queues share the top lanes */
                lane = (int)(n % MAX_LANES);
            else if (lane == lanes)
                lanes++;
            lane_end[lane] = end;
            fprintf(f, "%lld ", (long long)sqlite3_column_int64(st, 0));
            tl_an_put_num(f, arr / 1e6);
            fputc(' ', f);
            tl_an_put_num(f, end / 1e6);
            fputc(' ', f);
            tl_an_put_num(f, sqlite3_column_int64(st, 3) / 1e6);
            fputc(' ', f);
            tl_an_put_num(f, base_y + (lanes_used + lane) * step);
            fputc('\n', f);
        }
        req_count[j] = n;
        lanes_used += lanes ? lanes + 1 : 0;
    }
    sqlite3_finalize(st);
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        goto out;

    snprintf(name, sizeof name, "%s.gp", base);
    if (!(f = tl_an_create(a, o, name, err))) {
        r = err ? err->code : TL_EIO;
        goto out;
    }
    char *exp = tl_an_gp_string(*ri.experiment ? ri.experiment : "(no experiment)");
    tl_an_gp_preamble(f, base, 1200, 600);
    fprintf(f, "set title \"%s: run %lld, policy %s (%s): SM occupancy per job, %.6g-%.6g ms\"\n",
            exp, run_id, ri.policy, ri.kind, t0 / 1e6, t1 / 1e6);
    free(exp);
    fprintf(f, "set xlabel \"time since run start (ms)\"\n"
               "set ylabel \"SMs holding the job's blocks (sum of avg_sms of its kernels)\"\n"
               "set xrange [%.9g:%.9g]\n"
               "set yrange [0:%.9g]\n"
               "set grid\n"
               "set key outside right top\n"
               "set style fill transparent solid 0.45 noborder\n"
               "# block 0 columns: 1 time ms, then one column per job: SMs it occupies\n"
               "# blocks 1..: requests (2 arrival ms, 3 completion ms, 5 lane height)\n",
            t0 / 1e6, t1 / 1e6, base_y + (lanes_used + 1) * step);
    if (sms > 0) {
        char *g = tl_an_gp_string(ri.gpu);
        fprintf(f, "set arrow from graph 0, first %d to graph 1, first %d nohead dt 2 lc rgb "
                   "\"black\"\n"
                   "set label \"%s: %d SMs\" at graph 0.01, first %g tc rgb \"black\"\n",
                sms, sms, g, sms, sms + top * 0.02);
        free(g);
    }
    if (lanes_used)
        fprintf(f, "set label \"requests (one lane each while they overlap)\" at graph 0.01, "
                   "first %g tc rgb \"gray30\"\n",
                base_y + (lanes_used - 0.4) * step);
    fprintf(f, "plot ");
    for (int j = 0; j < ri.n_jobs; j++)
        fprintf(f, "%s\"%s.dat\" index 0 using 1:(0):%d with filledcurves lc rgb \"%s\" "
                   "title \"%s: SMs occupied\"",
                j ? ", \\\n     " : "", base, j + 2, tl_an_colour((size_t)j), ri.names[j]);
    for (int j = 0; j < ri.n_jobs; j++) {
        if (req_block[j] < 0)
            continue;
        const char *c = tl_an_colour((size_t)j);
        fprintf(f,
                ", \\\n     \"%s.dat\" index %d using 2:5:($3-$2):(0) with vectors nohead "
                "lc rgb \"%s\" lw 1.5 notitle"
                ", \\\n     \"\" index %d using 2:5 with points pt 9 ps 1.1 lc rgb \"%s\" "
                "title \"%s: arrivals (%zu)\""
                ", \\\n     \"\" index %d using 3:5 with points pt 7 ps 0.7 lc rgb \"black\" "
                "title \"%s: completions\"",
                base, req_block[j], c, req_block[j], c, ri.names[j], req_count[j], req_block[j],
                ri.names[j]);
    }
    fprintf(f, "\n");
    if ((r = tl_an_finish(f, o, name, err)) < 0)
        goto out;
    r = tl_an_render(a, o, base, err);
out:
    free(req_block);
    free(req_count);
    tl_an_run_info_free(&ri);
    return r;
}
