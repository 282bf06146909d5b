/* Content digests of a run's input files and their record (see
 * include/tally/digest.h). */
#include "tally/digest.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "tally/common.h"

#define SCHEME "crc32:"

void tl_digest_init(tl_digest *d)
{
    d->crc = (uint32_t)crc32_z(0, Z_NULL, 0);
    d->bytes = 0;
}

void tl_digest_add(tl_digest *d, const void *p, size_t n)
{
    d->crc = (uint32_t)crc32_z(d->crc, p, n);
    d->bytes += n;
}

void tl_digest_text(const tl_digest *d, char out[TL_DIGEST_TEXT])
{
    snprintf(out, TL_DIGEST_TEXT, SCHEME "%08x:%llu", (unsigned)d->crc,
             (unsigned long long)d->bytes);
}

static void put(json_t *o, const char *key, const tl_digest *d)
{
    char t[TL_DIGEST_TEXT];
    tl_digest_text(d, t);
    json_object_set_new(o, key, json_string(t));
}

char *tl_inputs_record(const tl_job_inputs *jobs, int n)
{
    json_t *a = json_array();
    for (int j = 0; j < n; j++) {
        json_t *o = json_object();
        if (jobs[j].trace)
            put(o, "trace", jobs[j].trace);
        if (jobs[j].arrivals)
            put(o, "arrivals", jobs[j].arrivals);
        json_array_append_new(a, o);
    }
    char *s = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(a);
    return s ? s : tl_xstrdup("[]");
}

/* One file's recorded digest against its digest now: -1 nothing to compare
 * (not recorded, or of another kind: a later digest must not read as a
 * change), 0 the same, 1 changed (its recorded text in was). */
static int compare_one(json_t *o, const char *key, const tl_digest *now, char was[TL_DIGEST_TEXT])
{
    const char *rec = json_string_value(json_object_get(o, key));
    if (!now || !rec || strncmp(rec, SCHEME, strlen(SCHEME)))
        return -1;
    char t[TL_DIGEST_TEXT];
    tl_digest_text(now, t);
    if (!strcmp(rec, t))
        return 0;
    snprintf(was, TL_DIGEST_TEXT, "%s", rec);
    return 1;
}

int tl_inputs_compare(const char *recorded, const tl_job_inputs *jobs, int n, int *job,
                      bool *arrivals, char was[TL_DIGEST_TEXT])
{
    json_t *a = recorded ? json_loads(recorded, 0, NULL) : NULL;
    int result = TL_INPUTS_UNRECORDED;
    for (int j = 0; json_is_array(a) && j < n && j < (int)json_array_size(a); j++) {
        json_t *o = json_array_get(a, (size_t)j);
        for (int f = 0; f < 2; f++) {
            int c = compare_one(o, f ? "arrivals" : "trace", f ? jobs[j].arrivals : jobs[j].trace,
                                was);
            if (c == 0)
                result = TL_INPUTS_SAME;
            if (c == 1) {
                *job = j;
                *arrivals = f == 1;
                json_decref(a);
                return TL_INPUTS_CHANGED;
            }
        }
    }
    json_decref(a);
    return result;
}
