/* Unit tests for the shadow-evaluation quality monitor (plant_models/quality.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "plant_models/quality.h"

static void init2(struct quality_model *q, double d0, double d1, double r0, double r1,
		  uint64_t seed)
{
	struct rng parent;
	rng_seed(&parent, seed);
	double drop[2] = { d0, d1 }, rate[2] = { r0, r1 };
	quality_init(q, 2, drop, rate, &parent);
}

/* Binomial: the estimate is within 4 standard errors of the true drop, and
 * the sampled share within 4 standard errors of the shadow rate. */
static void test_estimate_converges(void **state)
{
	(void)state;
	struct quality_model q;
	init2(&q, 0.03, 0.20, 0.05, 0.5, 1);
	const int n = 400000;
	for (int i = 0; i < n; i++) {
		quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		quality_on_complete(&q, 1, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	}
	for (uint32_t s = 0; s < 2; s++) {
		double rate = q.shadow_rate[s], drop = q.true_drop[s];
		double se_rate = sqrt(rate * (1 - rate) / n);
		assert_true(fabs((double)q.samples[s] / n - rate) < 4 * se_rate);
		double est = quality_observed_drop(&q, s);
		double se = sqrt(drop * (1 - drop) / (double)q.samples[s]);
		print_message("slice %u: %llu samples, estimate %.4f, true %.4f (se %.4f)\n", s,
			      (unsigned long long)q.samples[s], est, drop, se);
		assert_true(fabs(est - drop) < 4 * se);
	}
	/* More samples, tighter: slice 1 (rate 0.5) has ~10x slice 0's samples. */
	assert_true(q.samples[1] > 8 * q.samples[0]);
}

/* With few samples the estimate is noisy: over many short windows its spread
 * matches the binomial standard error (not zero, not much larger). */
static void test_estimate_noise_is_binomial(void **state)
{
	(void)state;
	struct quality_model q;
	init2(&q, 0.1, 0.0, 1.0, 0.0, 2);
	const int windows = 2000, per = 100;
	double s1 = 0, s2 = 0;
	for (int w = 0; w < windows; w++) {
		uint64_t m0 = q.mismatches[0], n0 = q.samples[0];
		for (int i = 0; i < per; i++)
			quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		double est = (double)(q.mismatches[0] - m0) / (double)(q.samples[0] - n0);
		s1 += est;
		s2 += est * est;
	}
	double mean = s1 / windows, sd = sqrt(s2 / windows - mean * mean);
	double se = sqrt(0.1 * 0.9 / per);
	print_message("window estimate mean %.4f sd %.4f (binomial %.4f)\n", mean, sd, se);
	assert_true(fabs(mean - 0.1) < 0.005);
	assert_true(sd > 0.85 * se && sd < 1.15 * se);
}

static void test_drift_visible(void **state)
{
	(void)state;
	struct quality_model q;
	init2(&q, 0.02, 0.02, 0.2, 0.2, 3);
	for (int i = 0; i < 50000; i++)
		quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	uint64_t m0 = q.mismatches[0], n0 = q.samples[0];
	double before = quality_observed_drop(&q, 0);
	quality_set_drop(&q, 0, 0.15);
	assert_true(q.true_drop[0] == 0.15);
	assert_true(q.true_drop[1] == 0.02); /* other slice untouched */
	for (int i = 0; i < 50000; i++)
		quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	double after = (double)(q.mismatches[0] - m0) / (double)(q.samples[0] - n0);
	print_message("drift: window estimate %.4f before, %.4f after\n", before, after);
	assert_true(fabs(before - 0.02) < 0.006);
	assert_true(fabs(after - 0.15) < 0.015);
	/* The cumulative estimate moves towards the new drop too. */
	assert_true(quality_observed_drop(&q, 0) > before + 0.04);
	/* Out-of-range input is clamped, unknown slices ignored. */
	quality_set_drop(&q, 0, 1.7);
	assert_true(q.true_drop[0] == 1.0);
	quality_set_drop(&q, 5, 0.5);
	quality_on_complete(&q, 7, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
}

/* A governor's ask is a floor on the server's own rate; the samples it adds
 * (and only those) are "asked", which the plant charges to the run; the
 * same draws decide both, so an ask never moves the server's own samples. */
static void test_asked_rate_is_a_floor(void **state)
{
	(void)state;
	struct quality_model q, own;
	init2(&q, 0.01, 0.01, 0.1, 0.5, 5);
	init2(&own, 0.01, 0.01, 0.1, 0.5, 5);
	quality_set_rate(&q, 0, 0.4);
	quality_set_rate(&q, 1, 0.2); /* under the server's 0.5: no change */
	assert_true(q.shadow_rate[0] == 0.4 && q.shadow_rate[1] == 0.5);
	uint64_t asked = 0, own_n = 0;
	for (int i = 0; i < 20000; i++) {
		enum quality_sample a = quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		enum quality_sample b = quality_on_complete(&own, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		asked += a == QUALITY_SAMPLED_ASKED;
		own_n += a == QUALITY_SAMPLED_OWN;
		assert_true((a == QUALITY_SAMPLED_OWN) == (b == QUALITY_SAMPLED_OWN));
		assert_int_equal(quality_on_complete(&q, 1, QUALITY_ROW_INT8 | QUALITY_ROW_FP8), quality_on_complete(&own, 1, QUALITY_ROW_INT8 | QUALITY_ROW_FP8));
	}
	/* 0.1 own + 0.3 asked of 20000, within 5 standard errors */
	assert_true(fabs((double)own_n - 2000) < 5 * sqrt(2000 * 0.9));
	assert_true(fabs((double)asked - 6000) < 5 * sqrt(20000 * 0.3 * 0.7));
	/* 0 or NaN: back to the server's own */
	quality_set_rate(&q, 0, 0);
	assert_true(q.shadow_rate[0] == 0.1);
	quality_set_rate(&q, 0, NAN);
	assert_true(q.shadow_rate[0] == 0.1);
	quality_set_rate(&q, 9, 0.5); /* unknown slice: ignored */
}

/* Where FP8 is evaluated too, the server's own samples score both 8-bit
 * rows and an asked one only the rows asked: a slice served in BF16 whose
 * rung is FP8 gets FP8 evidence for its re-runs, and nothing in INT8's. */
static void test_asked_rows(void **state)
{
	(void)state;
	struct quality_model q;
	init2(&q, 0.01, 0.01, 0.1, 0.1, 3);
	double fp8[2] = { 0.005, 0.005 };
	quality_init_fp8(&q, fp8);
	quality_set_rate(&q, 0, 1.0);
	uint64_t own = 0, asked = 0;
	for (int i = 0; i < 20000; i++) {
		enum quality_sample k = quality_on_complete(&q, 0, QUALITY_ROW_FP8);
		own += k == QUALITY_SAMPLED_OWN;
		asked += k == QUALITY_SAMPLED_ASKED;
	}
	assert_true(own > 0 && asked > own);
	assert_int_equal(q.samples[0], own);          /* INT8's row: own samples only */
	assert_int_equal(q.samples_fp8[0], own + asked); /* FP8's: both */
}

static void test_deterministic_and_own_stream(void **state)
{
	(void)state;
	struct quality_model a, b, c;
	init2(&a, 0.05, 0.1, 0.3, 0.3, 42);
	init2(&b, 0.05, 0.1, 0.3, 0.3, 42);
	init2(&c, 0.05, 0.1, 0.3, 0.3, 43);
	for (int i = 0; i < 10000; i++) {
		quality_on_complete(&a, (uint32_t)(i % 2), QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		quality_on_complete(&b, (uint32_t)(i % 2), QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		quality_on_complete(&c, (uint32_t)(i % 2), QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	}
	assert_memory_equal(a.samples, b.samples, sizeof(a.samples));
	assert_memory_equal(a.mismatches, b.mismatches, sizeof(a.mismatches));
	assert_true(a.samples[0] != c.samples[0] || a.mismatches[0] != c.mismatches[0]);
	/* The monitor copies the stream it is given: the caller's is not advanced. */
	struct rng p1, p2;
	rng_seed(&p1, 42);
	rng_seed(&p2, 42);
	struct quality_model d;
	double drop[1] = { 0.1 }, rate[1] = { 1.0 };
	quality_init(&d, 1, drop, rate, &p1);
	assert_int_equal(rng_u64(&p1), rng_u64(&p2));
	/* Changing the drop does not shift which completions get sampled. */
	struct quality_model e, f;
	init2(&e, 0.05, 0.0, 0.3, 0.0, 9);
	init2(&f, 0.05, 0.0, 0.3, 0.0, 9);
	quality_set_drop(&f, 0, 0.5);
	for (int i = 0; i < 5000; i++) {
		quality_on_complete(&e, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
		quality_on_complete(&f, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	}
	assert_int_equal(e.samples[0], f.samples[0]);
	assert_true(f.mismatches[0] > e.mismatches[0]);
}

static void test_zero_rate_and_empty(void **state)
{
	(void)state;
	struct quality_model q;
	init2(&q, 0.3, 0.3, 0.0, 1.0, 5);
	assert_true(quality_observed_drop(&q, 0) == 0.0);
	for (int i = 0; i < 1000; i++)
		quality_on_complete(&q, 0, QUALITY_ROW_INT8 | QUALITY_ROW_FP8);
	assert_int_equal(q.samples[0], 0);
	assert_int_equal(q.mismatches[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate_converges),
		cmocka_unit_test(test_estimate_noise_is_binomial),
		cmocka_unit_test(test_drift_visible),
		cmocka_unit_test(test_deterministic_and_own_stream),
		cmocka_unit_test(test_asked_rate_is_a_floor),
		cmocka_unit_test(test_asked_rows),
		cmocka_unit_test(test_zero_rate_and_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
