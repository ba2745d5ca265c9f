#include "common/hist.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

static int bucket_of(double v)
{
	if (!(v > HIST_MIN_MS))
		return 0;
	int i = (int)ceil(log(v / HIST_MIN_MS) / log(HIST_RATIO));
	if (i >= HIST_NBUCKETS)
		i = HIST_NBUCKETS - 1;
	return i;
}

double hist_bucket_upper_ms(int i)
{
	return HIST_MIN_MS * pow(HIST_RATIO, i);
}

void hist_add(struct hist *h, double value_ms, uint64_t weight)
{
	if (weight == 0 || isnan(value_ms))
		return;
	h->count[bucket_of(value_ms)] += weight;
	h->n += weight;
	h->sum_ms += value_ms * (double)weight;
	if (value_ms > h->max_ms)
		h->max_ms = value_ms;
}

double hist_quantile(const struct hist *h, double q)
{
	if (h->n == 0)
		return 0.0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	double rank = q * (double)h->n;
	uint64_t cum = 0;
	for (int i = 0; i < HIST_NBUCKETS; i++) {
		if (h->count[i] == 0)
			continue;
		if ((double)(cum + h->count[i]) >= rank) {
			double lo = i ? hist_bucket_upper_ms(i - 1) : 0.0;
			double hi = hist_bucket_upper_ms(i);
			double frac = (rank - (double)cum) / (double)h->count[i];
			return lo + (hi - lo) * frac;
		}
		cum += h->count[i];
	}
	return hist_bucket_upper_ms(HIST_NBUCKETS - 1);
}

void hist_quantiles(const struct hist *h, const double *q, double *out, size_t n)
{
	size_t k = 0;
	uint64_t cum = 0;

	for (size_t j = 0; j < n; j++)
		assert(q[j] >= 0 && q[j] <= 1 && (j == 0 || q[j] >= q[j - 1]));
	if (h->n == 0) {
		for (size_t j = 0; j < n; j++)
			out[j] = 0.0;
		return;
	}
	/* One scan for every q, with hist_quantile's arithmetic exactly. */
	for (int i = 0; i < HIST_NBUCKETS && k < n; i++) {
		if (h->count[i] == 0)
			continue;
		while (k < n && (double)(cum + h->count[i]) >= q[k] * (double)h->n) {
			double lo = i ? hist_bucket_upper_ms(i - 1) : 0.0;
			double hi = hist_bucket_upper_ms(i);
			double frac = (q[k] * (double)h->n - (double)cum) / (double)h->count[i];
			out[k++] = lo + (hi - lo) * frac;
		}
		cum += h->count[i];
	}
	for (; k < n; k++)
		out[k] = hist_bucket_upper_ms(HIST_NBUCKETS - 1);
}

void hist_delta(struct hist *out, const struct hist *now, const struct hist *prev)
{
	out->n = now->n - prev->n;
	out->sum_ms = now->sum_ms - prev->sum_ms;
	out->max_ms = now->max_ms;
	for (int i = 0; i < HIST_NBUCKETS; i++)
		out->count[i] = now->count[i] - prev->count[i];
}

double hist_fraction_le(const struct hist *h, double value_ms)
{
	if (h->n == 0)
		return 1.0;
	int b = bucket_of(value_ms);
	uint64_t cum = 0;
	for (int i = 0; i <= b; i++)
		cum += h->count[i];
	return (double)cum / (double)h->n;
}
