/* xoshiro256** (Blackman & Vigna), seeded through splitmix64. Only integer
 * arithmetic on fixed-width types, so sequences are identical everywhere. */
#include "tally/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void tl_rng_init(tl_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

uint64_t tl_rng_next(tl_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tl_rng_uniform(tl_rng *rng)
{
    /* Top 53 bits: exact doubles in [0, 1). */
    return (double)(tl_rng_next(rng) >> 11) * 0x1.0p-53;
}

double tl_rng_exponential(tl_rng *rng, double mean)
{
    /* 1 - u is in (0, 1], so log never sees 0. */
    return -mean * log(1.0 - tl_rng_uniform(rng));
}

uint64_t tl_rng_derive_seed(uint64_t seed, uint64_t a, uint64_t b)
{
    /* Mix the three words through splitmix64 so nearby (a, b) give unrelated seeds. */
    uint64_t x = seed;
    uint64_t h = splitmix64(&x);
    x = h ^ (a * 0xd1342543de82ef95ULL);
    h = splitmix64(&x);
    x = h ^ (b * 0xaf251af3b0f025b5ULL + 0x632be59bd9b4e019ULL);
    return splitmix64(&x);
}
