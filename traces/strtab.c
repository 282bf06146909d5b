/* String interning: kernel and API names are repeated thousands of times in a
 * trace; each distinct string is stored once and named by its index. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void tl_strtab_init(tl_strtab *st)
{
    memset(st, 0, sizeof *st);
    st->cap = 64;
    st->strs = tl_xmalloc(st->cap * sizeof *st->strs);
    st->strs[0] = tl_xstrdup("");
    st->n = 1;
    st->n_slots = 128;
    st->slots = tl_xcalloc(st->n_slots, sizeof *st->slots);
}

void tl_strtab_close(tl_strtab *st)
{
    if (st->strs)
        for (uint32_t i = 0; i < st->n; i++)
            free(st->strs[i]);
    free(st->strs);
    free(st->slots);
    memset(st, 0, sizeof *st);
}

static void rehash(tl_strtab *st)
{
    uint32_t n = st->n_slots * 2;
    uint32_t *slots = tl_xcalloc(n, sizeof *slots);
    for (uint32_t i = 1; i < st->n; i++) {
        uint64_t h = hash_bytes(st->strs[i], strlen(st->strs[i]));
        uint32_t k = (uint32_t)h & (n - 1);
        while (slots[k])
            k = (k + 1) & (n - 1);
        slots[k] = i + 1;
    }
    free(st->slots);
    st->slots = slots;
    st->n_slots = n;
}

uint32_t tl_strtab_intern(tl_strtab *st, const char *s, size_t len)
{
    if (len == 0)
        return 0;
    uint64_t h = hash_bytes(s, len);
    uint32_t k = (uint32_t)h & (st->n_slots - 1);
    while (st->slots[k]) {
        const char *c = st->strs[st->slots[k] - 1];
        if (strncmp(c, s, len) == 0 && c[len] == '\0')
            return st->slots[k] - 1;
        k = (k + 1) & (st->n_slots - 1);
    }
    if (st->n == st->cap) {
        st->cap *= 2;
        st->strs = tl_xrealloc(st->strs, st->cap * sizeof *st->strs);
    }
    char *c = tl_xmalloc(len + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    st->strs[st->n] = c;
    st->slots[k] = st->n + 1;
    uint32_t id = st->n++;
    if (st->n * 2 > st->n_slots)
        rehash(st);
    return id;
}

char **tl_strtab_take(tl_strtab *st, uint32_t *n)
{
    char **s = st->strs;
    *n = st->n;
    free(st->slots);
    memset(st, 0, sizeof *st);
    return s;
}
