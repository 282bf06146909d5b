/* Iteration splitting: the user's start kernel, else markers, else the period
 * of the kernel-name sequence, else the whole trace (FORMAT.md, "Splitting"). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

void tl_split_close(tl_split *s)
{
    free(s->begin);
    free(s->end);
    free(s->mark_start);
    free(s->mark_end);
    memset(s, 0, sizeof *s);
}

static void split_alloc(tl_split *s, size_t n)
{
    size_t m = n ? n : 1;
    s->begin = tl_xcalloc(m, sizeof *s->begin);
    s->end = tl_xcalloc(m, sizeof *s->end);
    s->mark_start = tl_xcalloc(m, sizeof *s->mark_start);
    s->mark_end = tl_xcalloc(m, sizeof *s->mark_end);
    s->n = 0;
}

static void split_push(tl_split *s, size_t begin, size_t end, tl_ns ms, tl_ns me)
{
    s->begin[s->n] = begin;
    s->end[s->n] = end;
    s->mark_start[s->n] = ms;
    s->mark_end[s->n] = me;
    s->n++;
}

/* ---- markers --------------------------------------------------------------- */

typedef struct mark {
    tl_ns start, end;
} mark;

static int cmp_mark(const void *a, const void *b)
{
    const mark *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : (x->end < y->end); /* outer range first */
}

static bool prefix_match(const char *name, const char *prefix, bool nocase)
{
    size_t n = strlen(prefix);
    return nocase ? strncasecmp(name, prefix, n) == 0 : strncmp(name, prefix, n) == 0;
}

/* Markers whose name starts with prefix (NVTX ones only if nvtx_only). */
static size_t collect_marks(const tl_raw *r, const char *prefix, bool nocase, bool nvtx_only,
                            mark *out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_markers; i++) {
        const tl_raw_marker *m = &r->markers[i];
        if (nvtx_only && !m->nvtx)
            continue;
        if (prefix_match(r->strings.strs[m->name], prefix, nocase))
            out[n++] = (mark){m->start, m->end};
    }
    return n;
}

/* First flat op whose API start is >= t (ops are in API-start order). */
static size_t lower_bound(const tl_flat_op *ops, size_t n, tl_ns t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ops[mid].api_start < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t live_between(const tl_flat_op *ops, size_t a, size_t b)
{
    size_t n = 0;
    for (size_t i = a; i < b; i++)
        n += !ops[i].removed;
    return n;
}

static bool split_markers(const tl_raw *r, const tl_flat_op *ops, size_t n_ops,
                          const tl_trace_options *opts, tl_split *out)
{
    if (r->n_markers == 0)
        return false;
    mark *m = tl_xmalloc(r->n_markers * sizeof *m);
    const char *user = opts && opts->marker_prefix && *opts->marker_prefix ? opts->marker_prefix
                                                                           : NULL;
    size_t n = collect_marks(r, user ? user : "ProfilerStep#", false, false, m);
    /* NVTX ranges: without a user prefix, "iteration..." or "step..." do too. */
    if (n == 0 && !user)
        n = collect_marks(r, "iteration", true, true, m);
    if (n == 0 && !user)
        n = collect_marks(r, "step", true, true, m);
    qsort(m, n, sizeof *m, cmp_mark);
    split_alloc(out, n);
    tl_ns last_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (m[i].start < last_end) /* nested or overlapping: keep the outer one */
            continue;
        last_end = m[i].end;
        size_t a = lower_bound(ops, n_ops, m[i].start);
        size_t b = lower_bound(ops, n_ops, m[i].end);
        if (live_between(ops, a, b) == 0)
            continue; /* a step with no GPU work is no iteration */
        split_push(out, a, b, m[i].start, m[i].end);
    }
    free(m);
    if (out->n == 0) {
        tl_split_close(out);
        return false;
    }
    out->method = TL_SPLIT_MARKERS;
    return true;
}

/* ---- boundaries between kernels --------------------------------------------- */

static bool waits_on_host(const tl_op *op)
{
    return op->kind == TL_OP_SYNC ||
           ((op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET) && op->blocking);
}

/* Iteration boundary between two kernels at flat indices a < b: the ops in
 * between up to the last host wait (a sync, the D2H result copy) end the
 * earlier iteration; the rest (input copies, memsets) start the next one. */
static size_t boundary(const tl_flat_op *ops, size_t a, size_t b)
{
    size_t cut = a + 1;
    for (size_t i = a + 1; i < b; i++)
        if (!ops[i].removed && waits_on_host(&ops[i].op))
            cut = i + 1;
    return cut;
}

/* Iteration j starts at kernel first[j] (an index into kpos, the flat
 * positions of the nk kernels) -> flat ranges. The last iteration ends after
 * kernel last_kernel; later ops are outside unless tail_to_last. */
static void ranges_from_starts(const tl_flat_op *ops, size_t n_ops, const size_t *kpos, size_t nk,
                               const size_t *first, size_t n_starts, size_t last_kernel,
                               bool tail_to_last, tl_split *out)
{
    split_alloc(out, n_starts);
    for (size_t j = 0; j < n_starts; j++) {
        size_t k = first[j];
        size_t begin = k == 0 ? 0 : boundary(ops, kpos[k - 1], kpos[k]);
        size_t end;
        if (j + 1 < n_starts)
            end = boundary(ops, kpos[first[j + 1] - 1], kpos[first[j + 1]]);
        else if (tail_to_last || last_kernel + 1 >= nk)
            end = n_ops;
        else
            end = boundary(ops, kpos[last_kernel], kpos[last_kernel + 1]);
        split_push(out, begin, end, -1, -1);
    }
}

/* ---- user-given start kernel ----------------------------------------------- */

static int split_user(const tl_raw *r, const tl_flat_op *ops, size_t n_ops, const size_t *kpos,
                      size_t nk, const char *needle, const char *path, tl_split *out,
                      tl_err *err)
{
    size_t *first = tl_xmalloc((nk ? nk : 1) * sizeof *first);
    size_t n = 0;
    for (size_t k = 0; k < nk; k++)
        if (strstr(r->strings.strs[ops[kpos[k]].op.name], needle))
            first[n++] = k;
    if (n == 0) {
        free(first);
        return tl_errf(err, TL_EUNKNOWN, "%s: no kernel name contains '%s' (iteration start kernel)",
                       path, needle);
    }
    ranges_from_starts(ops, n_ops, kpos, nk, first, n, nk - 1, true, out);
    out->method = TL_SPLIT_USER;
    free(first);
    return 0;
}

/* ---- period of the kernel-name sequence ------------------------------------ */

/* Z-function: z[i] = length of the longest common prefix of s and s[i..]. */
static void z_function(const uint32_t *s, size_t n, size_t *z)
{
    if (n == 0)
        return;
    z[0] = n;
    size_t l = 0, r = 0;
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        if (i < r)
            k = r - i < z[i - l] ? r - i : z[i - l];
        while (i + k < n && s[k] == s[i + k])
            k++;
        z[i] = k;
        if (i + k > r) {
            l = i;
            r = i + k;
        }
    }
}

/* Best period of s anchored at one end: the period p >= 2 that covers the
 * most kernels with whole repetitions (at least 2), the smallest on ties. */
static void best_period(const uint32_t *s, size_t n, size_t *z, size_t *p_out, size_t *reps_out)
{
    z_function(s, n, z);
    size_t best_p = 0, best_cov = 0, best_reps = 0;
    for (size_t p = 2; p <= n / 2; p++) {
        size_t reps = (p + z[p]) / p;
        if (reps < 2)
            continue;
        if (reps * p > best_cov) {
            best_cov = reps * p;
            best_p = p;
            best_reps = reps;
        }
    }
    *p_out = best_p;
    *reps_out = best_reps;
}

static bool split_period(const tl_flat_op *ops, size_t n_ops, const size_t *kpos, size_t nk,
                         tl_split *out)
{
    if (nk < 4)
        return false;
    uint32_t *fwd = tl_xmalloc(nk * sizeof *fwd);
    uint32_t *rev = tl_xmalloc(nk * sizeof *rev);
    size_t *z = tl_xmalloc(nk * sizeof *z);
    for (size_t k = 0; k < nk; k++) {
        fwd[k] = ops[kpos[k]].op.name;
        rev[nk - 1 - k] = fwd[k];
    }
    size_t pb, rb, pf, rf;
    best_period(rev, nk, z, &pb, &rb); /* anchored at the end: tolerates a warm-up prefix */
    best_period(fwd, nk, z, &pf, &rf); /* anchored at the start: tolerates a cut-off tail */
    free(fwd);
    free(rev);
    free(z);
    bool back = pb && pb * rb >= pf * rf;
    size_t p = back ? pb : pf, reps = back ? rb : rf;
    /* Only call it structure if the periodic part is most of the trace. */
    if (!p || p * reps * 2 < nk)
        return false;
    size_t first_k = back ? nk - p * reps : 0;
    size_t *first = tl_xmalloc(reps * sizeof *first);
    for (size_t j = 0; j < reps; j++)
        first[j] = first_k + j * p;
    ranges_from_starts(ops, n_ops, kpos, nk, first, reps, first_k + p * reps - 1, back, out);
    free(first);
    out->method = TL_SPLIT_PERIOD;
    return true;
}

int tl_split_flat(const tl_raw *r, const tl_flat_op *ops, size_t n_ops,
                  const tl_trace_options *opts, const char *path, tl_split *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    const char *needle = opts ? opts->iteration_start_kernel : NULL;
    /* An explicit request beats the markers and the heuristic. */
    if (!(needle && *needle) && split_markers(r, ops, n_ops, opts, out))
        return 0;

    size_t *kpos = tl_xmalloc((n_ops ? n_ops : 1) * sizeof *kpos);
    size_t nk = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (!ops[i].removed && ops[i].op.kind == TL_OP_KERNEL)
            kpos[nk++] = i;
    int rc = 0;
    if (needle && *needle) {
        rc = split_user(r, ops, n_ops, kpos, nk, needle, path, out, err);
    } else if (!split_period(ops, n_ops, kpos, nk, out)) {
        split_alloc(out, 1);
        split_push(out, 0, n_ops, -1, -1);
        out->method = TL_SPLIT_WHOLE;
    }
    free(kpos);
    return rc;
}
