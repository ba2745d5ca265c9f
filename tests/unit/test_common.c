/* Unit tests for common/: rng determinism, histogram quantiles, diagnostics. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/diag.h"
#include "common/hist.h"
#include "common/rng.h"
#include "common/sla.h"

static void test_rng_same_seed_same_stream(void **state)
{
	(void)state;
	struct rng a, b;
	rng_seed(&a, 42);
	rng_seed(&b, 42);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(rng_u64(&a), rng_u64(&b));
	rng_seed(&b, 43);
	assert_true(rng_u64(&a) != rng_u64(&b));
}

static void test_rng_fork_independent(void **state)
{
	(void)state;
	struct rng a;
	rng_seed(&a, 7);
	struct rng f1 = rng_fork(&a, 1), f1b = rng_fork(&a, 1), f2 = rng_fork(&a, 2);
	uint64_t x = rng_u64(&f1);
	assert_int_equal(x, rng_u64(&f1b));
	assert_true(x != rng_u64(&f2));
}

static void test_rng_moments(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 1);
	double s = 0, s2 = 0, se = 0, sg = 0;
	const int n = 200000;
	for (int i = 0; i < n; i++) {
		double x = rng_normal(&r);
		s += x;
		s2 += x * x;
		se += rng_exp(&r, 3.0);
		sg += rng_gamma(&r, 0.5, 2.0);
	}
	assert_true(fabs(s / n) < 0.01);
	assert_true(fabs(s2 / n - 1.0) < 0.02);
	assert_true(fabs(se / n - 3.0) < 0.05);
	assert_true(fabs(sg / n - 1.0) < 0.03);
}

static void test_hist_quantiles(void **state)
{
	(void)state;
	static struct hist h;
	hist_reset(&h);
	for (int i = 1; i <= 1000; i++)
		hist_add(&h, (double)i, 1);
	assert_int_equal(h.n, 1000);
	double p50 = hist_quantile(&h, 0.5), p99 = hist_quantile(&h, 0.99);
	assert_true(fabs(p50 - 500) / 500 < 0.02);
	assert_true(fabs(p99 - 990) / 990 < 0.02);
	assert_true(hist_fraction_le(&h, 100.0) > 0.09 && hist_fraction_le(&h, 100.0) < 0.11);
}

/* The one-scan form gives hist_quantile's values exactly (seeded). */
static void test_hist_quantiles_one_scan(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 20261129);
	printf("seed 20261129\n");
	static const double q[] = { 0, 0.01, 0.5, 0.5, 0.95, 0.99, 0.999, 1 };
	double out[8];
	for (int run = 0; run < 200; run++) {
		struct hist h;
		hist_reset(&h);
		hist_quantiles(&h, q, out, 8); /* empty: all 0 as hist_quantile */
		for (int j = 0; j < 8; j++)
			assert_true(out[j] == hist_quantile(&h, q[j]));
		int n = 1 + (int)(rng_uniform(&r) * 400);
		for (int i = 0; i < n; i++)
			hist_add(&h, rng_lognormal(&r, 3, 2), 1 + (uint64_t)(rng_uniform(&r) * 3));
		hist_quantiles(&h, q, out, 8);
		for (int j = 0; j < 8; j++)
			assert_true(out[j] == hist_quantile(&h, q[j]));
	}
}

static void test_hist_delta_is_window(void **state)
{
	(void)state;
	static struct hist a, b, d;
	hist_reset(&a);
	for (int i = 0; i < 100; i++)
		hist_add(&a, 10.0, 1);
	b = a;
	for (int i = 0; i < 100; i++)
		hist_add(&b, 1000.0, 1);
	hist_delta(&d, &b, &a);
	assert_int_equal(d.n, 100);
	assert_true(fabs(hist_quantile(&d, 0.5) - 1000.0) / 1000.0 < 0.02);
}

static void test_diag_format(void **state)
{
	(void)state;
	struct diag_list l = { 0 };
	diag_add(&l, DIAG_ERROR, "p.yaml", 3, 5, "thermal.ceiling_c", "range",
		 "95 is out of range; allowed %d..%d", 40, 88);
	diag_add(&l, DIAG_WARNING, "p.yaml", 0, 0, "", "", "no hysteresis");
	char buf[256];
	diag_format(&l.v[0], buf, sizeof(buf));
	assert_string_equal(buf, "p.yaml:3:5: error: thermal.ceiling_c: 95 is out of range; allowed 40..88");
	diag_format(&l.v[1], buf, sizeof(buf));
	assert_string_equal(buf, "p.yaml: warning: no hysteresis");
	assert_int_equal(diag_count(&l, DIAG_ERROR), 1);
	diag_clear(&l);
	assert_int_equal(l.n, 0);
}

/* Overload: a missed window that held at least half of its waiting
 * (requests waiting summed over periods) at the most clock; a met or idle
 * window never is. */
static void test_sla_window_overload(void **state)
{
	(void)state;
	struct sla_window_load l = { .waited = 10, .waited_at_max = 5 };
	assert_true(sla_window_overload(SLA_MISSED, &l));
	assert_false(sla_window_overload(SLA_MET, &l));
	assert_false(sla_window_overload(SLA_IDLE, &l));
	l.waited_at_max = 4;
	assert_false(sla_window_overload(SLA_MISSED, &l));
	l = (struct sla_window_load){ 0 }; /* nothing waited: a miss at any clock is the clock's */
	assert_false(sla_window_overload(SLA_MISSED, &l));
	l = (struct sla_window_load){ .waited = UINT64_MAX, .waited_at_max = UINT64_MAX / 2 + 1 };
	assert_true(sla_window_overload(SLA_MISSED, &l)); /* no overflow in the share */
	l.waited_at_max = UINT64_MAX / 2;
	assert_false(sla_window_overload(SLA_MISSED, &l));
	/* weighted by the queue: 5 burst periods at the max with 20 waiting
	 * each outweigh 15 periods under it with 2 waiting each (most of the
	 * waiting periods ran under the max, most of the waiting at it) */
	struct sla_window_load burst = { 0 };
	for (int i = 0; i < 20; i++) {
		bool at_max = i < 5;
		uint64_t q = at_max ? 20 : 2;
		burst.waited += q;
		burst.waited_at_max += at_max ? q : 0;
	}
	assert_true(sla_window_overload(SLA_MISSED, &burst));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_same_seed_same_stream),
		cmocka_unit_test(test_rng_fork_independent),
		cmocka_unit_test(test_rng_moments),
		cmocka_unit_test(test_hist_quantiles),
		cmocka_unit_test(test_hist_quantiles_one_scan),
		cmocka_unit_test(test_hist_delta_is_window),
		cmocka_unit_test(test_diag_format),
		cmocka_unit_test(test_sla_window_overload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
