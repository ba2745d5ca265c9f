#include "common/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

struct rng rng_fork(const struct rng *r, uint64_t stream)
{
	struct rng out;
	uint64_t x = r->s[0] ^ (r->s[3] * 0x9e3779b97f4a7c15ULL) ^ (stream * 0xd1b54a32d192ed03ULL);
	for (int i = 0; i < 4; i++)
		out.s[i] = splitmix64(&x);
	return out;
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_u64(struct rng *r)
{
	uint64_t *s = r->s;
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

double rng_uniform(struct rng *r)
{
	return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

double rng_normal(struct rng *r)
{
	/* Box-Muller; one value per call keeps the stream position simple. */
	double u1 = rng_uniform(r), u2 = rng_uniform(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_exp(struct rng *r, double mean)
{
	return -mean * log1p(-rng_uniform(r));
}

double rng_lognormal(struct rng *r, double mu, double sigma)
{
	return exp(mu + sigma * rng_normal(r));
}

double rng_gamma(struct rng *r, double shape, double scale)
{
	/* Marsaglia-Tsang; shape < 1 boosted with U^(1/shape). */
	if (shape < 1.0) {
		double u = rng_uniform(r);
		return rng_gamma(r, shape + 1.0, scale) * pow(u > 0 ? u : 1e-300, 1.0 / shape);
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, v;
		do {
			x = rng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0.0);
		v = v * v * v;
		double u = rng_uniform(r);
		if (u < 1.0 - 0.0331 * x * x * x * x)
			return d * v * scale;
		if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v * scale;
	}
}

int rng_bernoulli(struct rng *r, double p)
{
	return rng_uniform(r) < p;
}
