/* Shadow-evaluation quality monitor: docs/serving-model.md ("Precision quality"). */
#include "plant_models/quality.h"

#include <assert.h>
#include <string.h>

static double clamp01(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

void quality_init(struct quality_model *q, uint32_t n_slices, const double *true_drop,
		  const double *shadow_rate, const struct rng *stream)
{
	assert(n_slices <= PLANT_MAX_SLICES);
	memset(q, 0, sizeof(*q));
	q->n_slices = n_slices;
	for (uint32_t i = 0; i < n_slices; i++) {
		q->true_drop[i] = true_drop ? clamp01(true_drop[i]) : 0.0;
		q->shadow_rate[i] = shadow_rate ? clamp01(shadow_rate[i]) : 0.0;
		q->default_rate[i] = q->shadow_rate[i];
	}
	q->rng = *stream;
}

void quality_set_drop(struct quality_model *q, uint32_t slice, double true_drop)
{
	if (slice < q->n_slices)
		q->true_drop[slice] = clamp01(true_drop);
}

void quality_init_fp8(struct quality_model *q, const double *true_drop_fp8)
{
	q->fp8 = true;
	for (uint32_t i = 0; i < q->n_slices; i++)
		q->true_drop_fp8[i] = clamp01(true_drop_fp8[i]);
}

void quality_set_drop_fp8(struct quality_model *q, uint32_t slice, double true_drop)
{
	if (slice < q->n_slices)
		q->true_drop_fp8[slice] = clamp01(true_drop);
}

void quality_set_rate(struct quality_model *q, uint32_t slice, double rate)
{
	if (slice < q->n_slices)
		q->shadow_rate[slice] = rate > q->default_rate[slice] ? clamp01(rate)
								     : q->default_rate[slice];
}

enum quality_sample quality_on_complete(struct quality_model *q, uint32_t slice,
					unsigned asked_rows)
{
	if (slice >= q->n_slices || q->shadow_rate[slice] <= 0)
		return QUALITY_NOT_SAMPLED;
	/* Two draws per completion whatever the outcome, so the stream position
	 * (and thus later samples) does not depend on the drop being tracked. */
	double u_sample = rng_uniform(&q->rng), u_match = rng_uniform(&q->rng);
	if (u_sample >= q->shadow_rate[slice])
		return QUALITY_NOT_SAMPLED;
	/* The same draw decides whether the server's own rate would have
	 * sampled it: only what a governor added beyond that is "asked". */
	enum quality_sample kind =
		u_sample < q->default_rate[slice] ? QUALITY_SAMPLED_OWN : QUALITY_SAMPLED_ASKED;
	unsigned rows = kind == QUALITY_SAMPLED_OWN ? QUALITY_ROW_INT8 | QUALITY_ROW_FP8 : asked_rows;
	q->asked[slice] += kind == QUALITY_SAMPLED_ASKED;
	if (rows & QUALITY_ROW_INT8) {
		q->samples[slice]++;
		q->mismatches[slice] += u_match < q->true_drop[slice];
	}
	if (q->fp8 && (rows & QUALITY_ROW_FP8)) {
		q->samples_fp8[slice]++;
		q->mismatches_fp8[slice] += u_match < q->true_drop_fp8[slice];
	}
	return kind;
}

double quality_observed_drop(const struct quality_model *q, uint32_t slice)
{
	if (slice >= q->n_slices || q->samples[slice] == 0)
		return 0.0;
	return (double)q->mismatches[slice] / (double)q->samples[slice];
}

uint64_t quality_qualify(double true_drop, uint64_t n, struct rng *r)
{
	uint64_t k = 0;
	double p = clamp01(true_drop);
	for (uint64_t i = 0; i < n; i++)
		k += rng_uniform(r) < p;
	return k;
}
