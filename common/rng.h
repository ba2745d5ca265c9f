/* Deterministic pseudo-random numbers (xoshiro256**, seeded by splitmix64).
 * Every stochastic model takes its own stream from rng_fork() so adding a
 * consumer never perturbs the draws of another: same seed, same outputs. */
#ifndef GOVD_COMMON_RNG_H
#define GOVD_COMMON_RNG_H
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
/* An independent stream derived from (seed of r, stream id); r is not advanced. */
struct rng rng_fork(const struct rng *r, uint64_t stream);
uint64_t rng_u64(struct rng *r);
double rng_uniform(struct rng *r);                       /* [0, 1) */
double rng_normal(struct rng *r);                        /* N(0, 1) */
double rng_exp(struct rng *r, double mean);
double rng_lognormal(struct rng *r, double mu, double sigma);
double rng_gamma(struct rng *r, double shape, double scale);
int rng_bernoulli(struct rng *r, double p);

#endif
