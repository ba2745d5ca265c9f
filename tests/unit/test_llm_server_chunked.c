/* Chunked prefill (vLLM V1 scheduling) in the continuous-batching LLM server:
 * decode stalls bounded by one chunk, TTFT = sum of the chunks' iterations,
 * FLOPs conserved, tick-length invariance. Equations: docs/serving-model.md. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "plant_models/llm_server.h"
#include "plant_models/server.h"

static struct plant_preset dev_h100(void)
{
	struct plant_preset p;
	memset(&p, 0, sizeof(p));
	p.name = "test-h100";
	p.dvfs.min_mhz = 345;
	p.dvfs.max_mhz = 1980;
	p.dvfs.step_mhz = 15;
	p.hbm_tbps = 3.35;
	p.hbm_gb = 80;
	p.peak_bf16_tflops = 989;
	p.peak_int8_tops = 1979;
	return p;
}

static const struct model_spec *llama8b(void)
{
	const struct model_spec *m = model_spec_find("llama-3.1-8b");
	assert_non_null(m);
	return m;
}

static struct server_cfg cfg(bool chunked, uint32_t budget)
{
	struct server_cfg c;
	memset(&c, 0, sizeof(c));
	c.model = llama8b();
	c.max_batch = 64;
	c.max_queue = 1024;
	c.n_slices = 1;
	c.chunked_prefill = chunked;
	c.max_prefill_tokens = budget;
	return c;
}

static struct llm_server *mk(const struct server_cfg *c, const struct plant_preset *p)
{
	struct llm_server *s = NULL;
	assert_int_equal(llm_server_create(c, p, &s), 0);
	return s;
}

static struct request req(double t, uint32_t ctx, uint32_t gen)
{
	struct request r;
	memset(&r, 0, sizeof(r));
	r.arrival_s = t;
	r.ctx_tokens = ctx;
	r.gen_tokens = gen;
	return r;
}

static void run_until(struct llm_server *s, double t0, double t1, double dt)
{
	for (double t = t0; t < t1 - 1e-12; t += dt)
		llm_server_advance(s, t, dt, 1980, NULL, NULL, NULL);
}

/* TTFT (ms) of one prompt alone on an idle server. */
static double lone_ttft_ms(bool chunked, uint32_t budget, uint32_t ctx, double *flops)
{
	struct plant_preset p = dev_h100();
	struct server_cfg c = cfg(chunked, budget);
	struct llm_server *s = mk(&c, &p);
	struct request r = req(0, ctx, 1);
	llm_server_submit(s, &r);
	run_until(s, 0, 5.0, 0.01);
	const struct server_stats *st = llm_server_stats(s);
	assert_int_equal(st->completed, 1);
	double v = st->ttft.sum_ms;
	if (flops)
		*flops = llm_server_prefill_flops(s);
	llm_server_destroy(s);
	return v;
}

/* 7437 tokens in 2048-token chunks = 4 iterations. Every chunk's linear
 * layers are compute-bound (>= 1293 tokens), so each roofline is compute +
 * gpu_overlap * memory: the chunks' iterations sum to the whole prefill plus,
 * per extra iteration, the fixed host time and gpu_overlap times one more
 * read of the weights; the FLOPs (linear and attention) are the same. */
static void test_ttft_is_sum_of_chunks_and_flops_conserved(void **state)
{
	(void)state;
	double f_whole, f_chunk;
	double whole = lone_ttft_ms(false, 8192, 7437, &f_whole);
	double chunked = lone_ttft_ms(true, 2048, 7437, &f_chunk);
	const struct model_spec *m = llama8b();
	struct plant_preset p = dev_h100();
	double extra_ms = 3 * (serving_stack_find(m->stack)->step_ms +
			       m->gpu_overlap * m->params_b * 1e9 * 2.0 /
				       (p.hbm_tbps * 1e12 * 0.80) * 1e3);
	print_message("7437-token prompt: whole %.3f ms, 4 chunks %.3f ms (+%.3f expected)\n",
		      whole, chunked, extra_ms);
	assert_true(fabs(chunked - (whole + extra_ms)) < 1e-6 * whole);
	assert_true(fabs(f_chunk - f_whole) < 0.01 * f_whole);
	/* The attention term telescopes exactly: sum c (2o + c) = ctx^2. */
	assert_true(fabs(f_chunk - f_whole) < 1e-9 * f_whole);
	/* A prompt within the budget is one iteration either way. */
	assert_true(fabs(lone_ttft_ms(true, 2048, 2000, NULL) -
			 lone_ttft_ms(false, 2048, 2000, NULL)) < 1e-9);
}

/* Eight sequences decode for 0.5 s; then one prompt of ctx tokens arrives
 * and the server runs to until_s. The largest TBT seen (ms); *decode_ms: the
 * largest before the arrival; *ttft_ms: the arrival's TTFT. */
static double max_tbt_with_arrival(bool chunked, uint32_t budget, uint32_t ctx, double until_s,
				   double *decode_ms, double *ttft_ms)
{
	struct plant_preset p = dev_h100();
	struct server_cfg c = cfg(chunked, budget);
	struct llm_server *s = mk(&c, &p);
	for (int i = 0; i < 8; i++) {
		struct request r = req(0, 100, 400);
		llm_server_submit(s, &r);
	}
	run_until(s, 0, 0.5, 0.01);
	struct server_stats before = *llm_server_stats(s);
	struct request r = req(0.5, ctx, 1);
	llm_server_submit(s, &r);
	run_until(s, 0.5, until_s, 0.01);
	const struct server_stats *st = llm_server_stats(s);
	assert_int_equal(st->ttft.n, before.ttft.n + 1);
	if (decode_ms)
		*decode_ms = before.tbt.max_ms;
	if (ttft_ms)
		*ttft_ms = st->ttft.sum_ms - before.ttft.sum_ms;
	double v = st->tbt.max_ms;
	llm_server_destroy(s);
	return v;
}

/* A 7437-token prompt: whole prefill stalls the decodes' next token for the
 * whole prompt; chunked, for at most one chunk. */
static void test_long_prompt_does_not_stall_decode(void **state)
{
	(void)state;
	double ttft_w, ttft_c;
	double whole = max_tbt_with_arrival(false, 8192, 7437, 6.0, NULL, &ttft_w);
	double chunked = max_tbt_with_arrival(true, 2048, 7437, 6.0, NULL, &ttft_c);
	double chunk_ms = lone_ttft_ms(true, 2048, 2048, NULL);
	double prompt_ms = lone_ttft_ms(false, 8192, 7437, NULL);
	print_message("max TBT: whole %.2f ms, chunked %.2f ms (one 2048 chunk %.2f ms, "
		      "whole prompt %.2f ms); long TTFT %.1f -> %.1f ms\n",
		      whole, chunked, chunk_ms, prompt_ms, ttft_w, ttft_c);
	assert_true(whole > prompt_ms);
	/* One chunk (the last ones attend to more context: < 2x the first) plus a
	 * batch-8 decode step (~7 ms). */
	assert_true(chunked < 2.0 * chunk_ms + 10.0);
	assert_true(chunked < 0.5 * whole);
	/* The long prompt waits for the decode steps interleaved with its chunks. */
	assert_true(ttft_c > ttft_w);
}

/* A one-token prompt into eight decodes. Chunked (vLLM V1) it joins the
 * running decodes' step: the weights are read once, so the step that carries
 * it is at most a decode step plus the prompt's host and compute (< 1 ms
 * here). With separate phases it costs a whole iteration of its own (host
 * time plus another weight read, >= 6.9 ms on an H100). */
static void test_prompt_chunk_shares_the_decode_step(void **state)
{
	(void)state;
	double dec_m, dec_s;
	double mixed = max_tbt_with_arrival(true, 2048, 1, 1.0, &dec_m, NULL);
	double separate = max_tbt_with_arrival(false, 2048, 1, 1.0, &dec_s, NULL);
	print_message("1-token prompt into 8 decodes: max TBT mixed %.3f ms, separate phases %.3f "
		      "ms (decode alone %.3f ms)\n", mixed, separate, dec_m);
	assert_true(mixed < dec_m + 1.0);
	assert_true(separate > dec_s + 6.0);
}

struct done_log {
	uint64_t n;
	double sum_done_s;
};

static void on_done(void *ctx, const struct request *r, double t_done_s)
{
	(void)r;
	struct done_log *d = ctx;
	d->n++;
	d->sum_done_s += t_done_s;
}

static void run_workload(double dt, struct server_stats *out, struct done_log *dl, double *busy)
{
	struct plant_preset p = dev_h100();
	struct server_cfg c = cfg(true, 1024);
	c.max_batch = 16;
	struct llm_server *s = mk(&c, &p);
	struct rng g;
	rng_seed(&g, 7);
	double t = 0, next = 0;
	memset(dl, 0, sizeof(*dl));
	*busy = 0;
	int step = 0;
	while (t < 30.0 - 1e-9) {
		while (next < t + dt && next < 25.0) {
			struct request r = req(next, 100 + (uint32_t)(rng_uniform(&g) * 6000),
					       1 + (uint32_t)(rng_uniform(&g) * 60));
			r.int8 = rng_uniform(&g) < 0.4;
			llm_server_submit(s, &r);
			next += rng_exp(&g, 0.15);
		}
		uint32_t mhz = ((int)floor(t / 0.05 + 1e-9) % 3 == 0) ? 1980 : 1200;
		struct device_load l;
		llm_server_advance(s, t, dt, mhz, &l, on_done, dl);
		*busy += l.busy * l.activity * dt;
		step++;
		t = step * dt;
	}
	*out = *llm_server_stats(s);
	llm_server_destroy(s);
}

static void test_chunked_tick_length_invariance(void **state)
{
	(void)state;
	static struct server_stats a, b;
	struct done_log da, db;
	double ea, eb;
	run_workload(0.01, &a, &da, &ea);
	run_workload(0.001, &b, &db, &eb);
	assert_true(a.completed > 100);
	assert_int_equal(a.completed, b.completed);
	assert_int_equal(a.tokens_generated, b.tokens_generated);
	assert_true(fabs(a.ttft.sum_ms - b.ttft.sum_ms) < 1e-6 * a.ttft.sum_ms);
	assert_true(fabs(a.tbt.sum_ms - b.tbt.sum_ms) < 1e-6 * a.tbt.sum_ms);
	assert_true(fabs(a.e2e.sum_ms - b.e2e.sum_ms) < 1e-6 * a.e2e.sum_ms);
	assert_true(fabs(da.sum_done_s - db.sum_done_s) < 1e-6 * da.sum_done_s);
	assert_true(fabs(ea - eb) < 1e-6 * ea);
}

/* max_prefill_tokens 0 with chunking: vLLM V1's online default by GPU. */
static void test_default_budget_by_gpu(void **state)
{
	(void)state;
	struct plant_preset big = dev_h100(), small = dev_h100();
	small.name = "a100-sxm";
	/* 6000 tokens: one iteration under an 8192 budget, three under 2048. */
	double t[2];
	for (int i = 0; i < 2; i++) {
		struct server_cfg c = cfg(true, 0);
		struct llm_server *s = mk(&c, i ? &small : &big);
		struct request r = req(0, 6000, 1);
		llm_server_submit(s, &r);
		run_until(s, 0, 5.0, 0.01);
		t[i] = llm_server_stats(s)->ttft.sum_ms;
		llm_server_destroy(s);
	}
	assert_true(fabs(t[0] - lone_ttft_ms(true, 8192, 6000, NULL)) < 1e-9);
	assert_true(fabs(t[1] - lone_ttft_ms(true, 2048, 6000, NULL)) < 1e-9);
	assert_true(t[1] > t[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ttft_is_sum_of_chunks_and_flops_conserved),
		cmocka_unit_test(test_long_prompt_does_not_stall_decode),
		cmocka_unit_test(test_prompt_chunk_shares_the_decode_step),
		cmocka_unit_test(test_chunked_tick_length_invariance),
		cmocka_unit_test(test_default_budget_by_gpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
