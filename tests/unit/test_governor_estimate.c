/* Estimator: EWMA rails, windowed quantiles from cumulative-histogram deltas,
 * throughput, thermal headroom and trend, quality counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/estimate.h"

struct world {
	struct hist ttft, tbt, e2e;
	struct hal_serving sv;
	struct hal_quality q;
	struct gov_reading rd[GOV_SIG_N];
	enum gov_fault f[GOV_SIG_N];
};

static struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));
	hist_reset(&w->ttft);
	hist_reset(&w->tbt);
	hist_reset(&w->e2e);
	w->sv.valid = true;
	w->sv.ttft = &w->ttft;
	w->sv.tbt = &w->tbt;
	w->sv.e2e = &w->e2e;
	w->sv.n_slices = 2;
	w->q.valid = true;
	w->q.n_slices = 2;
	for (int s = 0; s < GOV_SIG_N; s++)
		w->rd[s] = (struct gov_reading){ .v = 0, .valid = true, .offered = true };
	return w;
}

static void test_ewma_power(void **state)
{
	(void)state;
	struct estimator e;
	struct estimate_cfg c = { .period_s = 0.5, .ewma_tau_s = 2.0, .trend_tau_s = 5,
				  .window_s = 10, .ceiling_c = 83 };
	struct world *w = world_new();
	assert_int_equal(estimate_init(&e, &c), 0);
	double alpha = 1 - exp(-0.25);
	w->rd[GOV_SIG_POWER_ACCEL].v = 100;
	const struct gov_estimates *o = estimate_step(&e, 0, w->rd, w->f, 0, 0, &w->sv, NULL);
	assert_true(o->power_w[HAL_RAIL_ACCEL] == 100); /* first value initialises */
	w->rd[GOV_SIG_POWER_ACCEL].v = 500;
	o = estimate_step(&e, 500, w->rd, w->f, 0, 0, &w->sv, NULL);
	assert_true(fabs(o->power_w[HAL_RAIL_ACCEL] - (100 + alpha * 400)) < 1e-9);
	/* a faulted reading is not used: the estimate holds */
	double held = o->power_w[HAL_RAIL_ACCEL];
	w->rd[GOV_SIG_POWER_ACCEL].v = 5000;
	w->f[GOV_SIG_POWER_ACCEL] = GOV_FAULT_RANGE;
	o = estimate_step(&e, 1000, w->rd, w->f, 1, 0, &w->sv, NULL);
	assert_true(o->power_w[HAL_RAIL_ACCEL] == held);
	assert_true(o->critical_fault);
	assert_int_equal(o->n_faults, 1);
	/* after ~5 tau the step response is within 1 % */
	w->f[GOV_SIG_POWER_ACCEL] = GOV_FAULT_NONE;
	w->rd[GOV_SIG_POWER_ACCEL].v = 500;
	for (int i = 0; i < 40; i++)
		o = estimate_step(&e, 1500 + (uint64_t)i * 500, w->rd, w->f, 0, 0, &w->sv, NULL);
	assert_true(fabs(o->power_w[HAL_RAIL_ACCEL] - 500) < 5);
	estimate_fini(&e);
	free(w);
}

static void test_window_quantiles(void **state)
{
	(void)state;
	struct estimator e;
	struct estimate_cfg c = { .period_s = 1.0, .ewma_tau_s = 1, .trend_tau_s = 5,
				  .window_s = 5, .ceiling_c = 83 };
	struct world *w = world_new();
	assert_int_equal(estimate_init(&e, &c), 0);
	const struct gov_estimates *o = estimate_step(&e, 0, w->rd, w->f, 0, 0, &w->sv, NULL);
	/* 10 s of fast requests (20 ms TTFT), 100 per second */
	uint64_t t = 0;
	for (int i = 0; i < 10; i++) {
		hist_add(&w->ttft, 20.0, 100);
		w->sv.requests_completed += 100;
		w->sv.tokens_generated += 1000;
		t += 1000;
		o = estimate_step(&e, t, w->rd, w->f, 0, 0, &w->sv, NULL);
	}
	assert_true(fabs(o->ttft_p99_ms - 20.0) < 0.5);
	assert_true(fabs(o->tokens_per_s - 1000) < 1e-9);
	assert_int_equal(o->window_requests, 500);
	/* 3 s of slow ones: in a 5 s window 300 of 500 are slow -> p99 slow, p95 slow */
	for (int i = 0; i < 3; i++) {
		hist_add(&w->ttft, 400.0, 100);
		w->sv.requests_completed += 100;
		t += 1000;
		o = estimate_step(&e, t, w->rd, w->f, 0, 0, &w->sv, NULL);
	}
	assert_true(fabs(o->ttft_p99_ms - 400.0) < 8);
	/* the window equals a histogram built from its own observations */
	struct hist ref;
	hist_reset(&ref);
	hist_add(&ref, 20.0, 200);
	hist_add(&ref, 400.0, 300);
	assert_true(fabs(o->ttft_p95_ms - hist_quantile(&ref, 0.95)) < 1e-9);
	assert_true(fabs(hist_quantile(&ref, 0.30) - 20.0) < 0.5);
	/* 5 more fast seconds: the slow ones left the window */
	for (int i = 0; i < 5; i++) {
		hist_add(&w->ttft, 20.0, 100);
		w->sv.requests_completed += 100;
		t += 1000;
		o = estimate_step(&e, t, w->rd, w->f, 0, 0, &w->sv, NULL);
	}
	assert_true(fabs(o->ttft_p99_ms - 20.0) < 0.5);
	assert_true(o->window_s == 5.0);
	assert_true(o->tokens_per_s == 0); /* no tokens in the last 5 s */
	estimate_fini(&e);
	free(w);
}

static void test_headroom_trend_quality(void **state)
{
	(void)state;
	struct estimator e;
	struct estimate_cfg c = { .period_s = 0.5, .ewma_tau_s = 1, .trend_tau_s = 1,
				  .window_s = 60, .ceiling_c = 83 };
	struct world *w = world_new();
	assert_int_equal(estimate_init(&e, &c), 0);
	const struct gov_estimates *o = NULL;
	/* heating at 1 C/s */
	for (int i = 0; i < 40; i++) {
		w->rd[GOV_SIG_TEMP_JUNCTION].v = 60 + 0.5 * i;
		w->q.samples[1] += 10;
		w->q.mismatches[1] += (i % 5 == 0);
		o = estimate_step(&e, (uint64_t)i * 500, w->rd, w->f, 0, 0, &w->sv, &w->q);
	}
	assert_true(fabs(o->headroom_c - (83 - 79.5)) < 1e-9);
	assert_true(fabs(o->headroom_trend_c_per_s + 1.0) < 0.01);
	/* first period only sets the baseline: 39 deltas of 10 samples */
	assert_int_equal(o->q_samples[1], 390);
	assert_int_equal(o->q_mismatches[1], 7);
	assert_true(fabs(o->q_drop_est[1] - 7.0 / 390) < 1e-12);
	assert_true(o->q_drop_upper[1] > o->q_drop_est[1]);
	assert_true(isnan(o->q_drop_est[0]) && o->q_drop_upper[0] == 1.0);
	assert_true(wilson_upper(0, 1000) < 0.004 && wilson_upper(0, 1000) > 0.003);
	estimate_fini(&e);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ewma_power),
		cmocka_unit_test(test_window_quantiles),
		cmocka_unit_test(test_headroom_trend_quality),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
