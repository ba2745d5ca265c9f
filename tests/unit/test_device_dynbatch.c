/* Unit tests for plant_models/dynbatch: batch formation (full, timeout,
 * arrivals inside an interval), run time against the analytic formula,
 * clock scaling and clock changes mid-batch, batches spanning intervals,
 * the reported device load, rejection and statistics. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plant_models/dynbatch.h"

/* A model with round numbers: 1 TFLOP per request. */
static const struct model_spec toy = {
	.name = "toy",
	.kind = SERVER_DYNBATCH,
	.flops_per_request = 1e12,
	.bytes_per_request = 48e6,
	.mfu_bf16 = 0.5,
	.mfu_int8 = 0.5,
	.activity_bf16 = 0.8,
	.activity_int8 = 0.6,
	.host_ms_per_step = 0.5,
	.host_ms_per_request = 0.25,
};

static const struct plant_preset *dev(void)
{
	return plant_preset_find("h200-sxm");
}

/* T(f) = Tc f_max / f + Tm + Th, written out independently of dynbatch.c. */
static double batch_time(int n_int8, int n_bf16, double clk_mhz)
{
	const struct plant_preset *p = dev();
	double tc = n_int8 * toy.flops_per_request / (p->peak_int8_tops * 1e12 * toy.mfu_int8) +
		    n_bf16 * toy.flops_per_request / (p->peak_bf16_tflops * 1e12 * toy.mfu_bf16);
	double tm = (n_int8 + n_bf16) * toy.bytes_per_request / (p->hbm_tbps * 1e12);
	double th = (toy.host_ms_per_step + toy.host_ms_per_request * (n_int8 + n_bf16)) * 1e-3;
	double r = clk_mhz / p->dvfs.max_mhz;
	return tc / r + tm / plant_bw_clock_factor(p, r) + th;
}

struct done_log {
	int n;
	double t[64];
	struct request r[64];
};

static void on_done(void *ctx, const struct request *r, double t)
{
	struct done_log *l = ctx;
	if (l->n < 64) {
		l->t[l->n] = t;
		l->r[l->n] = *r;
	}
	l->n++;
}

static struct dynbatch *make(uint32_t max_batch, double timeout_ms, uint32_t max_queue)
{
	struct server_cfg cfg = { .model = &toy, .max_batch = max_batch, .max_queue = max_queue,
				  .batch_timeout_ms = timeout_ms, .n_slices = 2 };
	struct dynbatch *b = NULL;
	assert_int_equal(dynbatch_create(&cfg, dev(), &b), 0);
	return b;
}

static void submit(struct dynbatch *b, double t, bool int8, uint8_t slice)
{
	struct request r = { .arrival_s = t, .ctx_tokens = 10, .gen_tokens = 1, .slice = slice,
			     .int8 = int8 };
	dynbatch_submit(b, &r);
}

static void advance_to(struct dynbatch *b, double *t, double until, double dt, uint32_t clk,
		       struct done_log *log, double *busy_s)
{
	while (*t < until - 1e-12) {
		struct device_load l;
		dynbatch_advance(b, *t, dt, clk, &l, on_done, log);
		if (busy_s)
			*busy_s += l.busy * dt;
		*t += dt;
	}
}

static void test_create_errors(void **state)
{
	(void)state;
	struct dynbatch *b = NULL;
	struct server_cfg cfg = { .model = &toy, .max_batch = 0, .batch_timeout_ms = 0 };
	/* Zero max_batch / max_queue take the server.h defaults (256, 65536). */
	assert_int_equal(dynbatch_create(&cfg, dev(), &b), 0);
	for (int i = 0; i < 300; i++)
		submit(b, 0, true, 0);
	struct device_load l;
	dynbatch_advance(b, 0, 1e-6, 1980, &l, NULL, NULL);
	assert_int_equal(dynbatch_stats(b)->running, 256);
	assert_int_equal(dynbatch_stats(b)->queue_len, 44);
	dynbatch_destroy(b);
	b = NULL;
	struct model_spec llm = toy;
	llm.kind = SERVER_LLM;
	cfg.max_batch = 4;
	cfg.model = &llm;
	assert_int_equal(dynbatch_create(&cfg, dev(), &b), -EINVAL);
	cfg.model = &toy;
	cfg.batch_timeout_ms = -1;
	assert_int_equal(dynbatch_create(&cfg, dev(), &b), -EINVAL);
	assert_null(b);
	/* The published table is well formed. */
	int n = 0;
	for (const struct model_spec *m = dynbatch_models; m->name; m++, n++) {
		assert_int_equal(m->kind, SERVER_DYNBATCH);
		assert_true(m->flops_per_request > 0 && m->mfu_int8 > 0 && m->mfu_int8 <= 1);
		assert_true(m->mfu_bf16 > 0 && m->mfu_bf16 <= 1);
		assert_true(m->activity_int8 > 0 && m->activity_int8 <= 1);
		assert_true(m->activity_bf16 > 0 && m->activity_bf16 <= 1);
		assert_non_null(m->sources);
	}
	assert_int_equal(n, 2);
}

static void test_full_batch_runs_at_once(void **state)
{
	(void)state;
	struct dynbatch *b = make(4, 100, 0);
	for (int i = 0; i < 4; i++)
		submit(b, 0, true, 0);
	struct done_log log = { 0 };
	double t = 0;
	advance_to(b, &t, 0.1, 0.01, 1980, &log, NULL);
	assert_int_equal(log.n, 4);
	double want = batch_time(4, 0, 1980);
	for (int i = 0; i < 4; i++)
		assert_true(fabs(log.t[i] - want) < 1e-9);
	const struct server_stats *st = dynbatch_stats(b);
	assert_int_equal(st->completed, 4);
	assert_int_equal(st->e2e.n, 4);
	assert_int_equal(st->ttft.n, 4);
	assert_true(fabs(st->e2e.sum_ms - 4 * want * 1e3) < 1e-6);
	assert_int_equal(st->tokens_int8, 4);
	assert_int_equal(st->slice_int8_completed[0], 4);
	dynbatch_destroy(b);
}

static void test_timeout_forms_partial_batch(void **state)
{
	(void)state;
	struct dynbatch *b = make(8, 5, 0);
	submit(b, 0.0, false, 1);
	submit(b, 0.002, false, 1);
	struct done_log log = { 0 };
	double t = 0;
	advance_to(b, &t, 0.2, 0.01, 1980, &log, NULL);
	assert_int_equal(log.n, 2);
	double want = 0.005 + batch_time(0, 2, 1980);
	assert_true(fabs(log.t[0] - want) < 1e-9);
	assert_true(fabs(log.t[1] - want) < 1e-9);
	const struct server_stats *st = dynbatch_stats(b);
	assert_int_equal(st->slice_completed[1], 2);
	assert_int_equal(st->tokens_int8, 0);
	/* e2e of the second request is shorter by its later arrival. */
	assert_true(fabs(st->e2e.sum_ms - (2 * want - 0.002) * 1e3) < 1e-6);
	dynbatch_destroy(b);
}

/* A request arriving inside an interval cannot start before it arrives. */
static void test_arrival_inside_interval(void **state)
{
	(void)state;
	struct dynbatch *b = make(1, 0, 0);
	submit(b, 0.0043, true, 0);
	struct done_log log = { 0 };
	double t = 0;
	advance_to(b, &t, 0.1, 0.01, 1980, &log, NULL);
	assert_int_equal(log.n, 1);
	assert_true(fabs(log.t[0] - (0.0043 + batch_time(1, 0, 1980))) < 1e-9);
	dynbatch_destroy(b);
}

/* Long batches span intervals; the finishing time and the busy time do not
 * depend on the interval length; half the clock doubles the compute part. */
static void test_spanning_and_dt_invariance(void **state)
{
	(void)state;
	const double dts[] = { 0.01, 0.001, 0.25 };
	const uint32_t clks[] = { 1980, 990 };
	for (int c = 0; c < 2; c++) {
		double want = batch_time(0, 32, clks[c]);
		assert_true(want > 0.03); /* spans several 10 ms ticks */
		for (int k = 0; k < 3; k++) {
			struct dynbatch *b = make(32, 1, 0);
			for (int i = 0; i < 32; i++)
				submit(b, 0, false, 0);
			struct done_log log = { 0 };
			double t = 0, busy = 0;
			advance_to(b, &t, 0.5, dts[k], clks[c], &log, &busy);
			assert_int_equal(log.n, 32);
			assert_true(fabs(log.t[31] - want) < 1e-9);
			double th = (toy.host_ms_per_step + 32 * toy.host_ms_per_request) * 1e-3;
			assert_true(fabs(busy - (want - th)) < 1e-9);
			dynbatch_destroy(b);
		}
	}
	assert_true(batch_time(0, 32, 990) > 1.8 * batch_time(0, 32, 1980));
}

/* A clock change mid-batch changes only the remaining part. */
static void test_clock_change_mid_batch(void **state)
{
	(void)state;
	struct dynbatch *b = make(32, 1, 0);
	for (int i = 0; i < 32; i++)
		submit(b, 0, true, 0);
	struct done_log log = { 0 };
	double t = 0;
	advance_to(b, &t, 0.01, 0.01, 1980, &log, NULL);
	assert_int_equal(log.n, 0);
	double rem = 1.0 - 0.01 / batch_time(32, 0, 1980);
	advance_to(b, &t, 0.5, 0.01, 1200, &log, NULL);
	assert_int_equal(log.n, 32);
	assert_true(fabs(log.t[0] - (0.01 + rem * batch_time(32, 0, 1200))) < 1e-9);
	dynbatch_destroy(b);
}

/* The load reported for one interval: busy share, activity, HBM traffic, host. */
static void test_reported_load(void **state)
{
	(void)state;
	struct dynbatch *b = make(4, 0, 0);
	for (int i = 0; i < 4; i++)
		submit(b, 0, true, 0);
	struct device_load l;
	dynbatch_advance(b, 0, 0.1, 1980, &l, NULL, NULL);
	const struct plant_preset *p = dev();
	double tc = 4 * toy.flops_per_request / (p->peak_int8_tops * 1e12 * toy.mfu_int8);
	double tm = 4 * toy.bytes_per_request / (p->hbm_tbps * 1e12);
	double th = (toy.host_ms_per_step + 4 * toy.host_ms_per_request) * 1e-3;
	assert_true(fabs(l.busy - (tc + tm) / 0.1) < 1e-9);
	assert_true(l.activity > 0.3 && l.activity < toy.activity_int8);
	assert_true(fabs(l.mem_tbps - 4 * toy.bytes_per_request / 0.1 * 1e-12) < 1e-9);
	assert_true(fabs(l.host_busy - th / 0.1) < 1e-9);
	/* Idle interval: nothing reported. */
	dynbatch_advance(b, 0.1, 0.1, 1980, &l, NULL, NULL);
	assert_true(l.busy == 0 && l.activity == 0 && l.mem_tbps == 0 && l.host_busy == 0);
	/* Device off (shut down): no progress. */
	submit(b, 0.2, true, 0);
	struct done_log log = { 0 };
	dynbatch_advance(b, 0.2, 1.0, 0, &l, on_done, &log);
	assert_int_equal(log.n, 0);
	assert_true(l.busy == 0);
	dynbatch_destroy(b);
}

static void test_rejects_beyond_max_queue(void **state)
{
	(void)state;
	struct dynbatch *b = make(4, 10, 6);
	for (int i = 0; i < 10; i++)
		submit(b, 0, true, 0);
	const struct server_stats *st = dynbatch_stats(b);
	assert_int_equal(st->arrived, 10);
	assert_int_equal(st->rejected, 4);
	assert_int_equal(st->queue_len, 6);
	/* The queue grows past its first allocation. */
	struct dynbatch *u = make(4, 10, 0);
	for (int i = 0; i < 1000; i++)
		submit(u, i * 1e-4, i % 2, 0);
	assert_int_equal(dynbatch_stats(u)->queue_len, 1000);
	struct done_log log = { 0 };
	double t = 0;
	advance_to(u, &t, 30, 0.01, 1980, &log, NULL);
	assert_int_equal(log.n, 1000);
	assert_int_equal(dynbatch_stats(u)->completed, 1000);
	assert_int_equal(dynbatch_stats(u)->tokens_int8, 500);
	for (int i = 1; i < 64; i++)
		assert_true(log.t[i] >= log.t[i - 1]);
	dynbatch_destroy(u);
	dynbatch_destroy(b);
}

static void test_int8_faster_for_bert(void **state)
{
	(void)state;
	const struct model_spec *bert = NULL;
	for (const struct model_spec *m = dynbatch_models; m->name; m++)
		if (strcmp(m->name, "bert-large") == 0)
			bert = m;
	assert_non_null(bert);
	double t_done[2];
	for (int k = 0; k < 2; k++) {
		struct server_cfg cfg = { .model = bert, .max_batch = 64, .batch_timeout_ms = 1 };
		struct dynbatch *b = NULL;
		assert_int_equal(dynbatch_create(&cfg, dev(), &b), 0);
		for (int i = 0; i < 64; i++)
			submit(b, 0, k == 1, 0);
		struct done_log log = { 0 };
		double t = 0;
		advance_to(b, &t, 1, 0.01, 1980, &log, NULL);
		assert_int_equal(log.n, 64);
		t_done[k] = log.t[0];
		dynbatch_destroy(b);
	}
	assert_true(t_done[1] < t_done[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_full_batch_runs_at_once),
		cmocka_unit_test(test_timeout_forms_partial_batch),
		cmocka_unit_test(test_arrival_inside_interval),
		cmocka_unit_test(test_spanning_and_dt_invariance),
		cmocka_unit_test(test_clock_change_mid_batch),
		cmocka_unit_test(test_reported_load),
		cmocka_unit_test(test_rejects_beyond_max_queue),
		cmocka_unit_test(test_int8_faster_for_bert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
