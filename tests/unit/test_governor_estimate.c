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

#include "common/rng.h"
#include "governor/telemetry/estimate.h"

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
	assert_true(fabs(o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] - 20.0) < 0.5);
	assert_true(fabs(o->tokens_per_s - 1000) < 1e-9);
	assert_int_equal(o->window_requests, 500);
	/* 3 s of slow ones: in a 5 s window 300 of 500 are slow -> p99 slow, p95 slow */
	for (int i = 0; i < 3; i++) {
		hist_add(&w->ttft, 400.0, 100);
		w->sv.requests_completed += 100;
		t += 1000;
		o = estimate_step(&e, t, w->rd, w->f, 0, 0, &w->sv, NULL);
	}
	assert_true(fabs(o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] - 400.0) < 8);
	/* the window equals a histogram built from its own observations */
	struct hist ref;
	hist_reset(&ref);
	hist_add(&ref, 20.0, 200);
	hist_add(&ref, 400.0, 300);
	assert_true(fabs(o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P95)] - hist_quantile(&ref, 0.95)) < 1e-9);
	assert_true(fabs(hist_quantile(&ref, 0.30) - 20.0) < 0.5);
	/* 5 more fast seconds: the slow ones left the window */
	for (int i = 0; i < 5; i++) {
		hist_add(&w->ttft, 20.0, 100);
		w->sv.requests_completed += 100;
		t += 1000;
		o = estimate_step(&e, t, w->rd, w->f, 0, 0, &w->sv, NULL);
	}
	assert_true(fabs(o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] - 20.0) < 0.5);
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

/* Brute force: the quantile rule of sparse_quantile (upper edge of the
 * bucket where the cumulative count reaches q * n), on a full histogram. */
static double ref_period_quantile(const struct hist *h, double q)
{
	if (!h->n)
		return NAN;
	double acc = 0, want = q * (double)h->n;
	int last = -1;
	for (int i = 0; i < HIST_NBUCKETS; i++) {
		if (!h->count[i])
			continue;
		last = i;
		acc += (double)h->count[i];
		if (acc >= want)
			return hist_bucket_upper_ms(i);
	}
	return last >= 0 ? hist_bucket_upper_ms(last) : NAN;
}

static void hist_sum_last(struct hist *out, struct hist *const *per, size_t n_done, size_t k)
{
	hist_reset(out);
	for (size_t j = 0; j < k && j < n_done; j++) {
		const struct hist *h = per[n_done - 1 - j];
		out->n += h->n;
		for (int i = 0; i < HIST_NBUCKETS; i++)
			out->count[i] += h->count[i];
	}
}

static void same_quantiles(const struct hist *est_view_ref, double p95, double p99)
{
	double r95 = hist_quantile(est_view_ref, 0.95), r99 = hist_quantile(est_view_ref, 0.99);
	assert_true((isnan(r95) && isnan(p95)) || r95 == p95);
	assert_true((isnan(r99) && isnan(p99)) || r99 == p99);
}

/* A period's samples in buckets that may hold a value over thr_ms (thr 0:
 * none), counted bucket by bucket: the estimate's period_over. */
static uint64_t ref_period_over(const struct hist *h, double thr_ms)
{
	uint64_t n = 0;
	for (int b = 0; thr_ms > 0 && b < HIST_NBUCKETS; b++)
		n += hist_bucket_upper_ms(b) > thr_ms ? h->count[b] : 0;
	return n;
}

/* The ring and the short window against a recomputation from the per-period
 * inputs: random loads, serving dropouts (the next valid read carries them)
 * and server counter resets (what was counted since the reset is the delta),
 * for several window / short-window lengths, including short == window. */
static void test_window_bruteforce(void **state)
{
	(void)state;
	static const double cfgs[][3] = { /* period_s, window_s, short_window_s */
		{ 1, 7, 3 }, { 0.5, 3, 3 }, { 1, 1, 1 }, { 0.25, 5, 0.25 }, { 1, 4, 9 },
	};
	enum { N = 160 };
	struct rng root;
	rng_seed(&root, 20240611);
	for (size_t ci = 0; ci < sizeof(cfgs) / sizeof(cfgs[0]); ci++) {
		struct rng r = rng_fork(&root, ci);
		struct estimate_cfg c = { .period_s = cfgs[ci][0], .ewma_tau_s = 1, .trend_tau_s = 5,
					  .window_s = cfgs[ci][1], .ceiling_c = 83,
					  .short_window_s = cfgs[ci][2], .over_ms = { 50, 60, 0 } };
		size_t ring_len = (size_t)ceil(c.window_s / c.period_s - 1e-9);
		size_t short_len = (size_t)ceil(c.short_window_s / c.period_s - 1e-9);
		if (short_len > ring_len)
			short_len = ring_len;
		struct estimator e;
		struct world *w = world_new();
		assert_int_equal(estimate_init(&e, &c), 0);
		struct hist *per[3][N], pend[3], ref;
		uint64_t per_req[N], per_q[N][2], pend_req = 0, pend_q[2] = { 0, 0 }, q_total[2] = { 0, 0 };
		bool have_prev = false, have_prev_q = false;
		uint64_t snap_n = 0, snap_q = 0; /* at the last valid read */
		for (int h = 0; h < 3; h++)
			hist_reset(&pend[h]);
		struct hist *cum[3] = { &w->ttft, &w->tbt, &w->e2e };
		for (size_t i = 0; i < N; i++) {
			/* Server restart: only where it is sure to show (read at
			 * once, fewer observations after it than the last read). */
			bool reset = snap_n > 40 && rng_uniform(&r) < 0.05;
			if (reset) {
				for (int h = 0; h < 3; h++) {
					hist_reset(cum[h]);
					hist_reset(&pend[h]);
				}
				w->sv.requests_completed = w->sv.tokens_generated = w->sv.tokens_int8 = 0;
				pend_req = 0;
			}
			uint64_t k = rng_uniform(&r) < 0.2 ? 0 : 1 + rng_u64(&r) % 30;
			for (uint64_t j = 0; j < k; j++)
				for (int h = 0; h < 3; h++) {
					double v = rng_lognormal(&r, 3.0 + h, 0.8);
					hist_add(cum[h], v, 1);
					hist_add(&pend[h], v, 1);
				}
			w->sv.requests_completed += k;
			w->sv.tokens_generated += 10 * k;
			pend_req += k;
			bool qreset = snap_q > 20 && rng_uniform(&r) < 0.05;
			if (qreset) {
				memset(w->q.samples, 0, sizeof(w->q.samples));
				memset(w->q.mismatches, 0, sizeof(w->q.mismatches));
				pend_q[0] = pend_q[1] = 0;
			}
			for (int s = 0; s < 2; s++) {
				uint64_t dn = rng_u64(&r) % 20;
				w->q.samples[s] += dn;
				w->q.mismatches[s] += dn ? rng_u64(&r) % (dn + 1) / 4 : 0;
				pend_q[s] += dn;
			}
			/* Serving dropouts: invalid, or not offered at all. */
			double u = rng_uniform(&r);
			const struct hal_serving *sv = &w->sv;
			w->sv.valid = reset || u >= 0.1;
			if (!reset && u < 0.05)
				sv = NULL;
			bool qvalid = qreset || rng_uniform(&r) >= 0.1;
			if (sv && w->sv.valid)
				snap_n = w->sv.requests_completed;
			if (qvalid)
				snap_q = w->q.samples[0] < w->q.samples[1] ? w->q.samples[0] : w->q.samples[1];
			w->q.valid = qvalid;

			for (int h = 0; h < 3; h++) {
				per[h][i] = calloc(1, sizeof(struct hist));
				if (sv && w->sv.valid) {
					if (have_prev)
						*per[h][i] = pend[h];
					hist_reset(&pend[h]);
				}
			}
			per_req[i] = 0;
			if (sv && w->sv.valid) {
				per_req[i] = have_prev ? pend_req : 0;
				pend_req = 0;
				have_prev = true;
			}
			for (int s = 0; s < 2; s++) {
				per_q[i][s] = 0;
				if (qvalid) {
					per_q[i][s] = have_prev_q ? pend_q[s] : 0;
					pend_q[s] = 0;
				}
				q_total[s] += per_q[i][s];
			}
			have_prev_q |= qvalid;

			const struct gov_estimates *o = estimate_step(&e, (uint64_t)(i * c.period_s * 1000),
								      w->rd, w->f, 0, 0, sv, &w->q);
			size_t done = i + 1;
			double ests[3][4] = {
				{ o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P95)], o->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)], o->short_quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P95)], o->short_quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] },
				{ o->quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)], o->quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)], o->short_quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)], o->short_quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)] },
				{ o->quantile_ms[SLA_INDEX(SLA_E2E, SLA_P95)], o->quantile_ms[SLA_INDEX(SLA_E2E, SLA_P99)], o->short_quantile_ms[SLA_INDEX(SLA_E2E, SLA_P95)], o->short_quantile_ms[SLA_INDEX(SLA_E2E, SLA_P99)] },
			};
			for (int h = 0; h < 3; h++) {
				hist_sum_last(&ref, per[h], done, ring_len);
				assert_int_equal(ref.n, e.win[h].n);
				same_quantiles(&ref, ests[h][0], ests[h][1]);
				hist_sum_last(&ref, per[h], done, short_len);
				assert_int_equal(ref.n, e.win_short[h].n);
				same_quantiles(&ref, ests[h][2], ests[h][3]);
			}
			double pq0 = ref_period_quantile(per[0][i], 0.99), pq1 = ref_period_quantile(per[1][i], 0.99);
			assert_true((isnan(pq0) && isnan(o->period_p99_ms[SLA_TTFT])) || pq0 == o->period_p99_ms[SLA_TTFT]);
			assert_true((isnan(pq1) && isnan(o->period_p99_ms[SLA_TBT])) || pq1 == o->period_p99_ms[SLA_TBT]);
			for (int h = 0; h < 3; h++) {
				assert_int_equal(o->period_n[h], per[h][i]->n);
				assert_int_equal(o->period_over[h], ref_period_over(per[h][i], c.over_ms[h]));
			}
			uint64_t wr = 0, sr = 0, wq[2] = { 0, 0 };
			for (size_t j = 0; j < ring_len && j < done; j++) {
				wr += per_req[done - 1 - j];
				sr += j < short_len ? per_req[done - 1 - j] : 0;
				wq[0] += per_q[done - 1 - j][0];
				wq[1] += per_q[done - 1 - j][1];
			}
			assert_int_equal(o->window_requests, wr);
			assert_int_equal(o->short_requests, sr);
			assert_int_equal(o->window_tokens, 10 * wr);
			assert_int_equal(o->period_requests, per_req[i]);
			for (int s = 0; s < 2; s++) {
				assert_int_equal(o->q_samples[s], wq[s]);
				assert_true(o->q_mismatches[s] <= o->q_samples[s]);
				assert_int_equal(o->q_total_samples[s], q_total[s]);
				assert_true(o->q_total_mismatches[s] <= o->q_total_samples[s]);
			}
		}
		for (size_t i = 0; i < N; i++)
			for (int h = 0; h < 3; h++)
				free(per[h][i]);
		estimate_fini(&e);
		free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ewma_power),
		cmocka_unit_test(test_window_quantiles),
		cmocka_unit_test(test_headroom_trend_quality),
		cmocka_unit_test(test_window_bruteforce),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
