/* Seeded pseudo-random numbers (xoshiro256**, seeded through splitmix64).
 * Same seed, same sequence, on every platform: results must be bit-identical. */
#ifndef TALLY_RNG_H
#define TALLY_RNG_H

#include <stdint.h>

typedef struct tl_rng {
    uint64_t s[4];
} tl_rng;

void tl_rng_init(tl_rng *rng, uint64_t seed);
uint64_t tl_rng_next(tl_rng *rng);
double tl_rng_uniform(tl_rng *rng);             /* in [0, 1) */
double tl_rng_exponential(tl_rng *rng, double mean);
/* Derive an independent stream for a sub-component (job i, repetition r). */
uint64_t tl_rng_derive_seed(uint64_t seed, uint64_t a, uint64_t b);

#endif
