/* The govd controller's online model (governor/controllers/govd_predict.c): RLS
 * recovers a known law from noisy samples (seeded, seed printed), the
 * chooser takes the lowest clock meeting the tails while power is unknown
 * and the least-power one once it is, and respects the busy-share ceiling. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "governor/controllers/govd_predict.h"

static uint64_t seed_from_env(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t v = s ? strtoull(s, NULL, 10) : 20261201;
	printf("test_govd_predict: seed %llu (TEST_SEED)\n", (unsigned long long)v);
	return v;
}

static void test_rls_recovers(void **st)
{
	(void)st;
	struct rng r;
	rng_seed(&r, seed_from_env());
	struct gp_rls m;
	const double th0[3] = { 0, 0, 0 }, v0[3] = { 100, 100, 100 };
	gp_rls_init(&m, 3, th0, v0, 0.999, 1);
	for (int i = 0; i < 5000; i++) {
		double x[3] = { 1, -rng_uniform(&r), log1p(10 * rng_uniform(&r)) };
		double y = 3.0 - 0.8 * x[1] + 0.4 * x[2] + 0.05 * rng_normal(&r);
		gp_rls_update(&m, x, y);
	}
	assert_true(fabs(m.theta[0] - 3.0) < 0.05);
	assert_true(fabs(m.theta[1] + 0.8) < 0.05);
	assert_true(fabs(m.theta[2] - 0.4) < 0.05);
	assert_true(fabs(sqrt(m.resid_var) - 0.05) < 0.02);
	/* No excitation for a long time: the covariance stays bounded. */
	for (int i = 0; i < 100000; i++) {
		double x[3] = { 1, -0.5, 1 };
		gp_rls_update(&m, x, 3.0 + 0.4 + 0.4);
	}
	double tr = m.p[0][0] + m.p[1][1] + m.p[2][2];
	assert_true(isfinite(tr) && tr <= m.p0_trace * 1.001);
}

/* A plant with TBT = 20 ms (f/fmax)^-0.8 (1 + running)^0.3, TTFT =
 * 200 ms (f/fmax)^-0.7 (far below target), and power with a minimum at 0.6 fmax. */
static void feed(struct gp_model *m, struct rng *r, int n)
{
	for (int i = 0; i < n; i++) {
		double f = 400 + 1580 * rng_uniform(r), run = 1 + 30 * rng_uniform(r);
		double phi = f / 1980, u = fmin(1, 0.3 * pow(phi, -0.8));
		struct gp_obs o = {
			.mode = 0, .clk_mhz = f, .running = run, .queue = 0, .util = u,
			.power_w = 80 + 100 * phi + u * (300 * (phi - 0.6) * (phi - 0.6) * 4 + 150),
			.tbt_p99_ms = 20 * pow(phi, -0.8) * pow(1 + run, 0.3) * exp(0.02 * rng_normal(r)),
			.ttft_p99_ms = 200 * pow(phi, -0.7) * exp(0.02 * rng_normal(r)),
		};
		gp_observe(m, &o);
	}
}

static void test_choose(void **st)
{
	(void)st;
	struct rng r;
	rng_seed(&r, seed_from_env() + 1);
	struct gp_model m;
	gp_model_init(&m, 345, 1980, 0.8);
	struct gp_query q = { .mode = 0, .clk_now_mhz = 1980, .running = 15, .queue = 0, .util = 0.3,
			      .tbt_target_ms = 100, .ttft_target_ms = 2000, .margin = 0.8,
			      .sigmas = 0, .util_max = 0.9, .step_mhz = 15, .floor_mhz = 345,
			      .power_spread_mhz = 1e9 /* power never decides */ };
	feed(&m, &r, 3000);
	struct gp_choice c;
	gp_choose(&m, &q, &c);
	/* 20 (f/fmax)^-0.8 16^0.3 <= 80  <=>  f/fmax >= (80 / (20 * 2.297))^(-1/0.8) */
	double want = 1980 * pow(80.0 / (20 * pow(16, 0.3)), -1 / 0.8);
	printf("chose %.0f MHz, want %.0f; theta %.3f %.3f %.3f\n", c.clk_mhz, want, m.tbt[0].theta[0], m.tbt[0].theta[1], m.tbt[0].theta[2]);
	assert_true(c.feasible && !c.by_power);
	assert_true(c.clk_mhz >= want - 1 && c.clk_mhz <= want + 30);
	/* The explanation: one step lower the predicted TBT is over 80 ms, so
	 * the TBT term is what stopped the clock, and the chosen one is under. */
	assert_true(fabs(c.lower_mhz - (c.clk_mhz - 15)) < 1e-9);
	assert_int_equal(c.lower_limit, GOV_WHY_L_TBT);
	assert_true(c.tbt_lower_ms > 80 && c.tbt_pred_ms <= 80);
	assert_true(c.tbt_lower_ms > c.tbt_pred_ms);
	/* A light load earns a lower clock, and the busy-share ceiling binds. */
	q.running = 1;
	gp_choose(&m, &q, &c);
	double lowest = c.clk_mhz;
	assert_true(lowest < want);
	q.util = 0.8;
	gp_choose(&m, &q, &c);
	assert_true(c.clk_mhz >= 1980 * 0.8 / 0.9 * 0.9 && c.clk_mhz > lowest);
	/* Power known: the least-power feasible clock, near 0.6 fmax, not the lowest. */
	q.util = 0.3;
	q.power_spread_mhz = 300;
	gp_choose(&m, &q, &c);
	assert_true(c.by_power);
	assert_true(c.clk_mhz > lowest);
	assert_true(fabs(c.clk_mhz / 1980 - 0.6) < 0.15);
	/* There the lower clock meets the tails and loses on power. */
	assert_int_equal(c.lower_limit, GOV_WHY_L_POWER);
	/* A floor at the choice: nothing lower was a candidate. */
	double at = c.clk_mhz;
	q.floor_mhz = at;
	gp_choose(&m, &q, &c);
	assert_true(c.clk_mhz == at);
	assert_int_equal(c.lower_limit, GOV_WHY_L_FLOOR);
	assert_true(isnan(c.lower_mhz));
	q.floor_mhz = 345;
	/* Nothing meets an impossible target: the max clock, said so. */
	q.tbt_target_ms = 1;
	gp_choose(&m, &q, &c);
	assert_false(c.feasible);
	assert_true(c.clk_mhz == 1980);
	assert_true(c.tbt_pred_ms > 1); /* what it predicts at the max, to say why */
}

/* The clock exponents the window search's advice scales tails by: the
 * priors before any period tail (TBT 0.5 as asked here, TTFT 1), feed()'s
 * plant's after it (TBT 0.8, TTFT 0.7: both away from their priors), and
 * the plausible range a wild fit is kept to. */
static void test_clock_exponents(void **st)
{
	(void)st;
	struct rng r;
	rng_seed(&r, seed_from_env() + 2);
	struct gp_model m;
	gp_model_init(&m, 345, 1980, 0.5);
	double a, b;
	gp_clock_exponents(&m, 0, &a, &b);
	assert_float_equal(a, 0.5, 1e-9);
	assert_float_equal(b, 1.0, 1e-9);
	feed(&m, &r, 3000);
	gp_clock_exponents(&m, 0, &a, &b);
	assert_true(fabs(a - 0.8) < 0.05);
	assert_true(fabs(b - 0.7) < 0.05);
	m.tbt[0].theta[1] = -3;
	m.ttft[0].theta[1] = 0.5;
	gp_clock_exponents(&m, 0, &a, &b);
	assert_float_equal(a, 1.2, 1e-12);
	assert_float_equal(b, 0.3, 1e-12);
	gp_clock_exponents(&m, 1, &a, &b); /* the mix's own model, untouched */
	assert_float_equal(a, 0.5, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rls_recovers),
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_clock_exponents),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
