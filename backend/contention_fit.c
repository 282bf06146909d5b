/* Fitting the simulator's contention formula (sim/contention.c)
 *
 *     slowdown = min(max_slowdown, 1 + alpha * f)
 *
 * to co-run measurements (tally-run contention): least squares over every
 * point (f = the other kernel's share of the SM's thread slots, slowdown =
 * co-run / solo time of the kernel measured). The sum of squares is not smooth
 * in the cap, so the search is a grid, coarse then fine, deterministic:
 * alpha in [0, 20] by 0.05 and the cap in [1, 1 + alpha] by 0.05, then both
 * by 0.001 within 0.1 of the best. A cap of 1 + alpha never binds for f <= 1:
 * "no cap". On equal sums the larger cap wins (clip only what the data ask
 * to clip). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tally/metrics.h"

double tl_contention_threads_slowdown(double alpha, double max_slowdown, double f)
{
    if (f <= 0)
        return 1.0;
    double sd = 1.0 + alpha * f;
    return sd > max_slowdown ? max_slowdown : sd;
}

static double sse(const tl_contention_point *p, int n, double alpha, double cap)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double r = p[i].slowdown - tl_contention_threads_slowdown(alpha, cap, p[i].f);
        s += r * r;
    }
    return s;
}

/* Best (alpha, cap) on a grid; *best_s holds the sum of squares to beat. */
static void search(const tl_contention_point *p, int n, double a_lo, double a_hi, double c_lo,
                   double c_hi, double step, double *alpha, double *cap, double *best_s)
{
    int na = (int)floor((a_hi - a_lo) / step + 0.5);
    for (int i = 0; i <= na; i++) {
        double a = a_lo + step * i;
        if (a < 0)
            continue;
        double top = c_hi < 1 + a ? c_hi : 1 + a, bottom = c_lo < 1 ? 1 : c_lo;
        if (top < bottom)
            continue;
        /* the cap from the top down, so that ties keep the larger one */
        int nc = (int)floor((top - bottom) / step + 0.5);
        for (int k = 0; k <= nc + 1; k++) {
            double c = k <= nc ? top - step * k : bottom;
            if (c < bottom)
                c = bottom;
            double s = sse(p, n, a, c);
            if (s < *best_s - 1e-15) {
                *best_s = s;
                *alpha = a;
                *cap = c;
            }
        }
    }
}

int tl_contention_fit(const tl_contention_point *p, int n, tl_contention_result *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return tl_errf(err, TL_EMISSING, "contention fit: %d point(s); at least 2 needed", n);
    for (int i = 0; i < n; i++)
        if (!(p[i].f >= 0 && p[i].f <= 1) || !(p[i].slowdown > 0 && p[i].slowdown < 1e3))
            return tl_errf(err, TL_ERANGE,
                           "contention fit: point %d: f %g must be in [0, 1] and slowdown %g in "
                           "(0, 1000)",
                           i, p[i].f, p[i].slowdown);
    double alpha = 0, cap = 1, best = INFINITY;
    search(p, n, 0, 20, 1, 21, 0.05, &alpha, &cap, &best);
    double a0 = alpha, c0 = cap;
    search(p, n, a0 - 0.1, a0 + 0.1, c0 - 0.1, c0 + 0.1, 0.001, &alpha, &cap, &best);
    out->alpha = alpha;
    out->max_slowdown = cap;
    out->capped = cap < 1 + alpha - 1e-9;
    out->n = n;
    out->rmse = sqrt(best / n);
    double mean = 0, tot = 0;
    for (int i = 0; i < n; i++)
        mean += p[i].slowdown / n;
    for (int i = 0; i < n; i++)
        tot += (p[i].slowdown - mean) * (p[i].slowdown - mean);
    out->r2 = tot > 0 ? 1 - best / tot : NAN;
    return 0;
}

bool tl_contention_serialized(double corun_ns, double other_solo_ns)
{
    return corun_ns >= 0.9 * other_solo_ns;
}

/* ---------- the measurements' CSV ---------- */

static int kind_from(const char *s)
{
    if (!strcmp(s, "compute"))
        return TL_KIND_COMPUTE;
    if (!strcmp(s, "memory"))
        return TL_KIND_MEMORY;
    return -1;
}

/* Split a CSV line (no quoting: our own file) in place. */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

enum { C_VK, C_FS, C_OK, C_FO, C_SD, C_CO, C_OS, C_ORDER, C_SOLO, C_OCO, C_N };
static const char *const col_names[C_N] = {"victim_kind", "f_self", "other_kind", "f_other",
                                           "slowdown", "corun_ns", "other_solo_ns", "victim_order",
                                           "solo_ns", "other_corun_ns"};
/* columns that may be missing (older files) */
static bool optional_col(int c) { return c == C_ORDER || c == C_SOLO || c == C_OCO; }

static bool num_field(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out);
}

int tl_contention_read_csv(const char *path, tl_contention_point **out, int *n, tl_err *err)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return tl_errf(err, TL_EIO, "%s: cannot read: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, cap = 0, r = 0, col[C_N], ncols = 0;
    bool header = false;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n' || line[0] == '\r')
            continue;
        char *fl[32];
        int nf = split(line, fl, 32);
        if (!header) { /* the first other line names the columns */
            for (int c = 0; c < C_N; c++) {
                col[c] = -1;
                for (int i = 0; i < nf; i++)
                    if (!strcmp(fl[i], col_names[c]))
                        col[c] = i;
                if (col[c] < 0 && !optional_col(c)) {
                    r = tl_errf(err, TL_EFORMAT, "%s:%d: header: no column '%s'", path, lineno,
                                col_names[c]);
                    break;
                }
            }
            if (r < 0)
                break;
            header = true;
            ncols = nf;
            continue;
        }
        double v[C_N] = {0};
        bool ok = nf == ncols && kind_from(fl[col[C_VK]]) >= 0 && kind_from(fl[col[C_OK]]) >= 0;
        for (int c = 0; ok && c < C_N; c++)
            if (c != C_VK && c != C_OK && c != C_ORDER && col[c] >= 0)
                ok = num_field(fl[col[c]], &v[c]);
        const char *order = ok && col[C_ORDER] >= 0 ? fl[col[C_ORDER]] : "second";
        ok = ok && (!strcmp(order, "first") || !strcmp(order, "second"));
        if (!ok) {
            r = tl_errf(err, TL_EFORMAT, "%s:%d: expected %d fields: kinds 'compute'/'memory', "
                                         "numbers, victim_order 'first'/'second'",
                        path, lineno, ncols);
            break;
        }
        if (!(v[C_FS] >= 0 && v[C_FS] <= 1 && v[C_FO] >= 0 && v[C_FO] <= 1 && v[C_SD] > 0 &&
              v[C_SD] < 1e3)) {
            r = tl_errf(err, TL_ERANGE, "%s:%d: f_self and f_other must be in [0, 1], slowdown in "
                                        "(0, 1000)", path, lineno);
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = tl_xrealloc(*out, (size_t)cap * sizeof **out);
        }
        bool older = !strcmp(order, "first");
        (*out)[(*n)++] = (tl_contention_point){
            kind_from(fl[col[C_VK]]), kind_from(fl[col[C_OK]]), v[C_FS], v[C_FO], v[C_SD], older,
            tl_contention_serialized(v[C_CO], v[C_OS]), v[C_SOLO], v[C_CO], v[C_OCO]};
    }
    fclose(f);
    if (r == 0 && *n == 0)
        r = tl_errf(err, TL_EMISSING, "%s: no measurements", path);
    if (r < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return r;
}

/* ---------- the KINDS model ---------- */

int tl_contention_fit_kinds(const tl_contention_point *p, int n, tl_contention_kinds_result *out,
                            tl_err *err)
{
    memset(out, 0, sizeof *out);
    double *rates = tl_xcalloc((size_t)n + 1, sizeof *rates);
    int nr = 0, nm = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].serialized && p[i].solo_ns > 0 && p[i].other_corun_ns > 0 && p[i].corun_ns > 0) {
            double r = (p[i].solo_ns - (p[i].corun_ns - p[i].other_corun_ns)) / p[i].other_corun_ns;
            rates[nr++] = r < 1e-4 ? 1e-4 : r > 1 ? 1 : r;
        }
        nm += p[i].kind == TL_KIND_MEMORY && p[i].other_kind == TL_KIND_MEMORY && p[i].f > 0 &&
              p[i].f_self > 0;
    }
    if (nr == 0 || nm < 3) {
        free(rates);
        return tl_errf(err, TL_EMISSING,
                       "contention fit (kinds): %d starved point(s) with solo_ns/other_corun_ns and "
                       "%d memory-memory point(s); at least 1 and 3 needed", nr, nm);
    }
    out->starved_rate = tl_median(rates, (size_t)nr);
    out->n_starved = nr;
    free(rates);
    double best = INFINITY;
    for (int pi = 5; pi <= 30; pi++)
        for (int qi = 0; qi <= 20; qi++) {
            double pe = pi / 10.0, qe = qi / 10.0, sxy = 0, sxx = 0;
            for (int i = 0; i < n; i++) {
                if (p[i].kind != TL_KIND_MEMORY || p[i].other_kind != TL_KIND_MEMORY ||
                    !(p[i].f > 0 && p[i].f_self > 0))
                    continue;
                double x = pow(p[i].f, pe) / pow(p[i].f_self, qe);
                sxy += x * (p[i].slowdown - 1);
                sxx += x * x;
            }
            double a = sxx > 0 ? sxy / sxx : 0, sse = 0;
            if (a < 0)
                a = 0;
            for (int i = 0; i < n; i++) {
                if (p[i].kind != TL_KIND_MEMORY || p[i].other_kind != TL_KIND_MEMORY ||
                    !(p[i].f > 0 && p[i].f_self > 0))
                    continue;
                double d = 1 + a * pow(p[i].f, pe) / pow(p[i].f_self, qe) - p[i].slowdown;
                sse += d * d;
            }
            if (sse < best - 1e-12) {
                best = sse;
                out->mem_alpha = a;
                out->mem_p = pe;
                out->mem_q = qe;
            }
        }
    out->n_mem = nm;
    out->rmse = sqrt(best / nm);
    return 0;
}

/* ---------- report ---------- */

static void print_fit(FILE *f, const char *what, const tl_contention_result *r)
{
    fprintf(f, "contention fit %-36s n %2d  alpha %6.3f  max_slowdown %6.3f%s  rmse %.3f  r2 %6.3f\n",
            what, r->n, r->alpha, r->max_slowdown, r->capped ? "" : " (no cap)", r->rmse, r->r2);
}

/* Fit the points that pass keep(); print it under 'what' if there are two. */
static void fit_subset(FILE *f, const char *what, const tl_contention_point *p, int n,
                       tl_contention_point *buf, int vk, int ok, int older, bool with_serialized)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if ((vk < 0 || p[i].kind == vk) && (ok < 0 || p[i].other_kind == ok) &&
            (older < 0 || p[i].older == (older == 1)) && (with_serialized || !p[i].serialized))
            buf[m++] = p[i];
    tl_contention_result r;
    tl_err e = {0};
    if (m >= 2 && tl_contention_fit(buf, m, &r, &e) == 0)
        print_fit(f, what, &r);
}

int tl_contention_report(FILE *f, const tl_contention_point *p, int n, tl_contention_result *fit,
                         tl_err *err)
{
    tl_contention_point *sub = tl_xcalloc((size_t)n + 1, sizeof *sub);
    int m = 0, ser = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].serialized)
            ser++;
        else
            sub[m++] = p[i];
    }
    int r = tl_contention_fit(sub, m, fit, err);
    if (r < 0) {
        free(sub);
        return r;
    }
    fprintf(f, "contention: %d points, %d serialized (left out of the fit: made no progress beside "
               "the other kernel)\n", n, ser);
    print_fit(f, "THREADS (not serialized)", fit);
    fit_subset(f, "all points", p, n, sub, -1, -1, -1, true);
    for (int older = 0; older < 2; older++)
        for (int vk = 0; vk < 2; vk++)
            for (int ok = 0; ok < 2; ok++) {
                char what[64];
                snprintf(what, sizeof what, "%s beside %s, %s", tl_kernel_kind_name(vk),
                         tl_kernel_kind_name(ok), older ? "first" : "second");
                fit_subset(f, what, p, n, sub, vk, ok, older, false);
            }
    free(sub);
    tl_contention_kinds_result kr;
    tl_err ke = {0};
    if (tl_contention_fit_kinds(p, n, &kr, &ke) == 0)
        fprintf(f, "contention fit KINDS (the simulator's H100 model): starved_rate %.4f (median of "
                   "%d starved co-runs); memory beside memory: mem_alpha %.3f mem_p %.1f mem_q %.1f "
                   "rmse %.3f (n %d)\n",
                kr.starved_rate, kr.n_starved, kr.mem_alpha, kr.mem_p, kr.mem_q, kr.rmse, kr.n_mem);
    else
        fprintf(f, "contention fit KINDS: %s\n", ke.msg);
    fprintf(f, "%-8s %6s %-8s %6s %-6s %9s %9s %7s\n", "kind", "f_self", "other", "f", "order",
            "measured", "fitted", "error");
    for (int i = 0; i < n; i++) {
        double mo = tl_contention_threads_slowdown(fit->alpha, fit->max_slowdown, p[i].f);
        fprintf(f, "%-8s %6.3f %-8s %6.3f %-6s %9.3f %9.3f %+6.1f%%%s\n",
                tl_kernel_kind_name(p[i].kind), p[i].f_self, tl_kernel_kind_name(p[i].other_kind),
                p[i].f, p[i].older ? "first" : "second", p[i].slowdown, mo,
                100 * (mo / p[i].slowdown - 1), p[i].serialized ? "  serialized" : "");
    }
    return 0;
}
