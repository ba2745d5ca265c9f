/* Latency histogram with fixed log-spaced buckets (2% wide, 1 us .. ~3 h).
 * Cumulative like a Prometheus histogram: windows are deltas of two
 * snapshots, so the plant, the estimator and a scraped server share one
 * quantile rule (linear interpolation inside the bucket, as
 * histogram_quantile does). */
#ifndef GOVD_COMMON_HIST_H
#define GOVD_COMMON_HIST_H
#include <stddef.h>
#include <stdint.h>

#define HIST_MIN_MS 0.001
#define HIST_RATIO 1.02
#define HIST_NBUCKETS 1140 /* HIST_MIN_MS * 1.02^1140 ~ 6.4e6 ms */

struct hist {
	uint64_t n;      /* observations */
	double sum_ms;   /* sum of observed values */
	double max_ms;   /* largest value observed (not meaningful for deltas) */
	uint64_t count[HIST_NBUCKETS]; /* count[i]: values in bucket i (not cumulative) */
};

void hist_reset(struct hist *h);
void hist_add(struct hist *h, double value_ms, uint64_t weight);
/* q in [0,1]; returns 0 for an empty histogram. */
double hist_quantile(const struct hist *h, double q);
/* hist_quantile for n quantiles q[0] <= q[1] <= ... in one scan. */
void hist_quantiles(const struct hist *h, const double *q, double *out, size_t n);
/* out = now - prev (prev must be an earlier snapshot of now). */
void hist_delta(struct hist *out, const struct hist *now, const struct hist *prev);
double hist_bucket_upper_ms(int i);
/* Share of observations at or below value_ms (bucket resolution). */
double hist_fraction_le(const struct hist *h, double value_ms);

#endif
