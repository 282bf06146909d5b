/* tally-trace: compact in-memory record store and string interning.
 *
 * Records live in fixed-size chunks so that appending never moves earlier
 * records (pointers into the store stay valid while CUPTI buffers are parsed).
 * Kernel and marker names are interned by content: CUPTI's name pointers are
 * only valid while the module is loaded, and one copy per distinct name keeps
 * the memory proportional to the program's kernels, not to its launches.
 */
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

#define TT_CHUNK 65536

void tt_store_init(tt_store *s)
{
    memset(s, 0, sizeof *s);
}

void tt_store_free(tt_store *s)
{
    for (size_t i = 0; i < s->n_chunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    for (uint32_t i = 0; i < s->n_strings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* Drop the records, keep the strings (used after fork: the child must not
 * write its parent's records). */
void tt_store_clear(tt_store *s)
{
    for (size_t i = 0; i < s->n_chunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    s->chunks = NULL;
    s->n_chunks = s->cap_chunks = 0;
    s->n = 0;
}

/* Chunks stay allocated: the next additions reuse them. */
void tt_store_truncate(tt_store *s, size_t n)
{
    if (n < s->n)
        s->n = n;
}

tt_rec *tt_store_add(tt_store *s)
{
    size_t c = s->n / TT_CHUNK, i = s->n % TT_CHUNK;
    if (c == s->n_chunks) {
        if (s->n_chunks == s->cap_chunks) {
            size_t cap = s->cap_chunks ? 2 * s->cap_chunks : 16;
            tt_rec **p = realloc(s->chunks, cap * sizeof *p);
            if (!p)
                return NULL;
            s->chunks = p;
            s->cap_chunks = cap;
        }
        tt_rec *chunk = malloc(TT_CHUNK * sizeof *chunk);
        if (!chunk)
            return NULL;
        s->chunks[s->n_chunks++] = chunk;
    }
    tt_rec *r = &s->chunks[c][i];
    memset(r, 0, sizeof *r);
    s->n++;
    return r;
}

tt_rec *tt_store_at(const tt_store *s, size_t i)
{
    return &s->chunks[i / TT_CHUNK][i % TT_CHUNK];
}

static uint32_t hash_str(const char *str)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static int grow_slots(tt_store *s)
{
    uint32_t n = s->n_slots ? 2 * s->n_slots : 1024;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 1; id < s->n_strings; id++) {
        uint32_t h = hash_str(s->strings[id]) & (n - 1);
        while (slots[h])
            h = (h + 1) & (n - 1);
        slots[h] = id;
    }
    free(s->slots);
    s->slots = slots;
    s->n_slots = n;
    return 0;
}

uint32_t tt_intern(tt_store *s, const char *str)
{
    if (!str || !*str)
        return 0;
    if (s->n_strings == 0) { /* id 0 is the empty string */
        s->strings = malloc(64 * sizeof *s->strings);
        if (!s->strings)
            return 0;
        s->cap_strings = 64;
        s->strings[0] = strdup("");
        if (!s->strings[0])
            return 0;
        s->n_strings = 1;
    }
    if (2 * (s->n_strings + 1) > s->n_slots && grow_slots(s) < 0)
        return 0;
    uint32_t h = hash_str(str) & (s->n_slots - 1);
    while (s->slots[h]) {
        if (strcmp(s->strings[s->slots[h]], str) == 0)
            return s->slots[h];
        h = (h + 1) & (s->n_slots - 1);
    }
    if (s->n_strings == s->cap_strings) {
        char **p = realloc(s->strings, 2 * s->cap_strings * sizeof *p);
        if (!p)
            return 0;
        s->strings = p;
        s->cap_strings *= 2;
    }
    char *copy = strdup(str);
    if (!copy)
        return 0;
    uint32_t id = s->n_strings++;
    s->strings[id] = copy;
    s->slots[h] = id;
    return id;
}
