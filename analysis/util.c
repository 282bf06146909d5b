/* Small helpers of the analysis files: strings, paths, data-file numbers. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "an_internal.h"

void tl_sbuf_printf(tl_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        b->s = tl_xrealloc(b->s, cap);
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tl_sbuf_free(tl_sbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

char *tl_an_path(const char *dir, const char *name)
{
    if (!dir || !*dir)
        dir = ".";
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = tl_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *tl_an_safe_name(const char *s)
{
    if (!s || !*s)
        return tl_xstrdup("unnamed");
    char *r = tl_xstrdup(s);
    for (char *p = r; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            *p = '_';
    if (r[0] == '.')
        r[0] = '_';
    return r;
}

char *tl_an_clean_label(const char *s)
{
    if (!s)
        s = "";
    char *r = tl_xmalloc(strlen(s) + 1);
    char *o = r;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = tl_utf8_len(p);
        if (n == 0) { /* not UTF-8: SVG and JSON would reject it */
            *o++ = '?';
            p++;
        } else if (n > 1) {
            memcpy(o, p, (size_t)n);
            o += n;
            p += n;
        } else {
            if (*p != '"' && *p != '\\' && *p != '\'')
                *o++ = *p < 0x20 || *p == 0x7f ? ' ' : (char)*p;
            p++;
        }
    }
    *o = '\0';
    return r;
}

void tl_an_put_num(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("NaN", f);
    else
        fprintf(f, "%.9g", v);
}

FILE *tl_an_create(tl_analysis *a, const tl_plot_opts *o, const char *name, tl_err *err)
{
    char *path = tl_an_path(o->out_dir, name);
    const char *inputs[] = { a ? a->path : NULL, NULL };
    FILE *f = tl_out_open(path, inputs, err);
    free(path);
    return f;
}

int tl_an_finish(FILE *f, const tl_plot_opts *o, const char *name, tl_err *err)
{
    int r = tl_out_commit(f, err);
    if (r == 0 && o->log) {
        char *path = tl_an_path(o->out_dir, name);
        fprintf(o->log, "wrote %s\n", path);
        free(path);
    }
    return r;
}

size_t tl_an_experiments(const tl_groups *g, const char ***out)
{
    const char **v = tl_xcalloc(g->n ? g->n : 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            if (!strcmp(v[k], g->v[i].experiment))
                seen = true;
        if (!seen)
            v[n++] = g->v[i].experiment;
    }
    *out = v;
    return n;
}

void tl_an_reps_phrase(tl_group *const *sel, size_t n, char *buf, size_t cap)
{
    size_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = sel[i]->n_runs;
        if (i == 0 || r < lo)
            lo = r;
        if (i == 0 || r > hi)
            hi = r;
    }
    if (hi <= 1)
        snprintf(buf, cap, "1 run per policy");
    else if (lo == hi)
        snprintf(buf, cap, "mean of %zu runs per policy", hi);
    else
        snprintf(buf, cap, "mean of %zu-%zu runs per policy", lo, hi);
}

char *tl_an_gp_string(const char *s)
{
    /* Labels are cleaned of quotes and backslashes; gnuplot strings need no more. */
    return tl_an_clean_label(s);
}

/* Two experiments whose names differ only where tl_an_safe_name blanks
 * characters ("x y" and "x_y", "" and "unnamed") name the same files: the
 * second's plots replaced the first's, exit 0. Experiment i is refused
 * (TL_EIO: its outputs cannot be written) when one that made its files
 * (exps[made_by[0..n_made)]) has its safe name; nothing of it is written. */
static int check_name_free(tl_analysis *a, const char **exps, const size_t *made_by,
                           size_t n_made, size_t i, tl_err *err)
{
    char *safe = tl_an_safe_name(exps[i]);
    int r = 0;
    for (size_t k = 0; k < n_made && r == 0; k++) {
        char *other = tl_an_safe_name(exps[made_by[k]]);
        if (!strcmp(safe, other))
            r = tl_errf(err, TL_EIO, "%s: experiments '%s' and '%s' would both write the plots "
                        "named %s_*, the second over the first: plot each with --experiment "
                        "(into its own --out-dir)", a->path, exps[made_by[k]], exps[i], safe);
        free(other);
    }
    free(safe);
    return r;
}

int tl_an_per_experiment(tl_analysis *a, const tl_filter *flt, const tl_plot_opts *o,
                         tl_an_plot_fn fn, tl_err *err)
{
    tl_groups g;
    int r = tl_mkdirs(o->out_dir, err);
    if (r < 0 || (r = tl_groups_load(a, flt, &g, err)) < 0)
        return r;
    const char **exps;
    size_t ne = tl_an_experiments(&g, &exps);
    int made = 0, missing = 0;
    tl_err first = {0};
    /* each experiment's files are named by its safe name: the experiments
     * that wrote theirs, by index (made_by[k]) */
    size_t *made_by = tl_xcalloc(ne ? ne : 1, sizeof *made_by);
    for (size_t i = 0; i < ne; i++) {
        tl_err e = {0};
        if ((r = check_name_free(a, exps, made_by, (size_t)made, i, &e)) < 0) {
            if (err)
                *err = e;
            break;
        }
        r = fn(a, &g, exps[i], o, &e);
        if (r == TL_EMISSING) {
            if (!missing++)
                first = e;
            continue;
        }
        if (r < 0) {
            if (err)
                *err = e;
            break;
        }
        made_by[made++] = i;
    }
    free(made_by);
    free(exps);
    tl_groups_close(&g);
    if (r < 0 && r != TL_EMISSING)
        return r;
    if (!made) {
        if (err)
            *err = first;
        return first.code ? first.code : TL_EMISSING;
    }
    return 0;
}

int tl_plot_make_out_dir(const tl_plot_opts *o, tl_err *err)
{
    return tl_mkdirs(o->out_dir, err);
}

const char *tl_an_colour(size_t i)
{
    static const char *const tab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    return tab10[i % 10];
}
