/* plant_query_point() (what `govctl plant` prints) against the closed-loop
 * plant it summarises: the decode step time against the LLM server's own
 * token times, the steady-state rails and junction against device_advance()
 * run to equilibrium under the same load, and the clock a power limit
 * settles at against the firmware loop with a saturated dynamic batcher.
 * Plus the error paths. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plant_models/device.h"
#include "plant_models/plant.h"
#include "plant_models/plant_query.h"
#include "plant_models/server.h"

static struct plant_query llama_decode(uint32_t batch, uint32_t context)
{
	struct plant_query q;
	memset(&q, 0, sizeof(q));
	q.preset = plant_preset_find("h200-sxm");
	q.model = model_spec_find("llama-3.1-8b");
	q.batch = batch;
	q.context = context;
	q.inlet_c = 30;
	return q;
}

struct last_done {
	double t;
};

static void on_done(void *ctx, const struct request *r, double t)
{
	(void)r;
	((struct last_done *)ctx)->t = t;
}

/* Completion time of `batch` requests of ctx prompt tokens and gen outputs,
 * all submitted at 0, on an LLM server at a fixed clock. */
static double finish_s(uint32_t batch, uint32_t ctx, uint32_t gen, uint32_t clk)
{
	struct server_cfg sc;
	memset(&sc, 0, sizeof(sc));
	sc.model = model_spec_find("llama-3.1-8b");
	sc.max_batch = batch;
	sc.max_prefill_tokens = batch * ctx; /* one prefill pass */
	sc.n_slices = 1;
	struct server *s;
	assert_int_equal(server_create(&sc, plant_preset_find("h200-sxm"), &s), 0);
	for (uint32_t i = 0; i < batch; i++) {
		struct request r = { .arrival_s = 0, .ctx_tokens = ctx, .gen_tokens = gen };
		server_submit(s, &r);
	}
	struct last_done ld = { 0 };
	struct device_load l;
	for (double t = 0; t < 30 && server_get_stats(s)->completed < batch; t += PLANT_TICK_S)
		server_advance(s, t, PLANT_TICK_S, clk, &l, on_done, &ld);
	assert_int_equal(server_get_stats(s)->completed, batch);
	server_destroy(s);
	return ld.t;
}

static void test_decode_step_matches_server(void **state)
{
	(void)state;
	/* gen 3 - gen 1 = two decode steps, at contexts 1024 and 1025. */
	for (uint32_t clk = 990; clk <= 1980; clk += 495) {
		double two = finish_s(32, 1024, 3, clk) - finish_s(32, 1024, 1, clk);
		struct plant_query q = llama_decode(32, 1024);
		struct plant_point p;
		assert_int_equal(plant_query_point(&q, clk, 0, &p), 0);
		print_message("%u MHz: server two steps %.4f ms, query 2 x %.4f ms\n", clk,
			      two * 1e3, p.step_ms);
		assert_true(fabs(two * 1e3 / (2 * p.step_ms) - 1) < 2e-3);
		assert_int_equal(p.clock_mhz, clk);
		assert_true(fabs(p.tokens_per_s - 32 / (p.step_ms * 1e-3)) < 1e-6 * p.tokens_per_s);
	}
}

static void test_rails_match_device_steady_state(void **state)
{
	(void)state;
	struct plant_query q = llama_decode(64, 2048);
	struct plant_point p;
	assert_int_equal(plant_query_point(&q, 1500, 0, &p), 0);
	struct device d;
	device_init(&d, q.preset, q.inlet_c);
	assert_int_equal(device_set_clock_range(&d, q.preset->dvfs.min_mhz, 1500), 0);
	for (int i = 0; i < 100 * 1200; i++) /* 20 min: ~15 heatsink time constants */
		device_advance(&d, PLANT_TICK_S, &p.load);
	print_message("query: accel %.2f W mem %.2f W host %.2f W Tj %.2f C; device: %.2f %.2f "
		      "%.2f W %.2f C at %u MHz\n",
		      p.power_accel_w, p.power_memory_w, p.power_host_w, p.tj_c, d.power_w,
		      d.mem_power_w, d.host_power_w, d.tj_c, d.clk_mhz);
	assert_int_equal(d.clk_mhz, 1500);
	assert_true(fabs(d.power_w - p.power_accel_w) < 1e-3 * p.power_accel_w);
	assert_true(fabs(d.mem_power_w - p.power_memory_w) < 1e-6 * p.power_memory_w);
	assert_true(fabs(d.host_power_w - p.power_host_w) < 1e-6 * p.power_host_w);
	assert_true(fabs(d.tj_c - p.tj_c) < 0.05);
	assert_true(fabs(p.power_w - (p.power_accel_w + p.power_memory_w + p.power_host_w)) < 1e-9);
	assert_true(fabs(p.j_per_token - p.power_w / p.tokens_per_s) < 1e-12);
}

/* resnet50 INT8 kept saturated under a 350 W limit: the firmware loop's mean
 * clock against the query's settled clock. */
static void test_power_limit_clock_matches_firmware(void **state)
{
	(void)state;
	const struct plant_preset *pr = plant_preset_find("h200-sxm");
	struct server_cfg sc;
	memset(&sc, 0, sizeof(sc));
	sc.model = model_spec_find("resnet50");
	sc.max_batch = 2048;
	sc.max_queue = 1 << 20;
	sc.n_slices = 1;
	struct server *s;
	assert_int_equal(server_create(&sc, pr, &s), 0);
	struct device d;
	device_init(&d, pr, 30);
	assert_int_equal(device_set_power_limit(&d, 350), 0);
	uint64_t fed = 0;
	double clk = 0, pw = 0;
	long n = 0;
	for (double t = 0; t < 600; t += PLANT_TICK_S) {
		const struct server_stats *st = server_get_stats(s);
		while (fed - st->completed < 2 * 2048) {
			struct request r = { .arrival_s = t, .int8 = true, .gen_tokens = 1 };
			server_submit(s, &r);
			fed++;
		}
		struct device_load l;
		uint32_t f = d.clk_mhz;
		server_advance(s, t, PLANT_TICK_S, f, &l, NULL, NULL);
		device_advance(&d, PLANT_TICK_S, &l);
		if (t >= 540) {
			clk += f;
			pw += d.power_w;
			n++;
		}
	}
	server_destroy(s);
	struct plant_query q;
	memset(&q, 0, sizeof(q));
	q.preset = pr;
	q.model = model_spec_find("resnet50");
	q.int8 = true;
	q.batch = 2048;
	q.inlet_c = 30;
	struct plant_point p;
	assert_int_equal(plant_query_point(&q, 0, 350, &p), 0);
	print_message("350 W: firmware mean %.1f MHz %.1f W; query %u MHz %.1f W\n", clk / n,
		      pw / n, p.clock_mhz, p.power_accel_w);
	assert_true(p.throttle & DEV_THR_POWER_CAP);
	assert_true(p.power_accel_w <= 350);
	/* The firmware dithers around the limit; the query sits at the step under it. */
	assert_true(fabs(clk / n - p.clock_mhz) <= 2.0 * pr->dvfs.step_mhz);
}

static void test_errors(void **state)
{
	(void)state;
	struct plant_point p;
	struct plant_query q = llama_decode(8, 1024);
	assert_int_equal(plant_query_point(&q, 100, 0, &p), -EINVAL);  /* under the table */
	assert_int_equal(plant_query_point(&q, 2500, 0, &p), -EINVAL); /* over it */
	assert_int_equal(plant_query_point(&q, 0, 900, &p), -EINVAL);  /* limit out of range */
	assert_int_equal(plant_query_point(&q, 0, 100, &p), -EINVAL);
	q.batch = 0;
	assert_int_equal(plant_query_point(&q, 0, 0, &p), -EINVAL);
	q = llama_decode(512, 100000);
	assert_int_equal(plant_query_point(&q, 0, 0, &p), -ENOSPC);
	q = llama_decode(8, 1024);
	q.prefill = true; /* prompt 0 */
	assert_int_equal(plant_query_point(&q, 0, 0, &p), -EINVAL);
	q.prompt = 2048;
	assert_int_equal(plant_query_point(&q, 0, 0, &p), 0);
	assert_true(p.tokens_per_s > 0 && p.step_ms > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_step_matches_server),
		cmocka_unit_test(test_rails_match_device_steady_state),
		cmocka_unit_test(test_power_limit_clock_matches_firmware),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
