/* Calibration of the LLM serving model (plant_models/llm_server.c) on the
 * device model (plant_models/device.c) against published measurements.
 * Every check prints the model value, the published value and the
 * tolerance. docs/serving-model.md has the table and the discussion.
 *
 * 1. ML.ENERGY Benchmark v3 (ml-energy/leaderboard @ 0cd52dab, data in
 *    $GOVD_SHARED_DATA/mlenergy_v3_llm_configs.csv): Llama-3.1-8B-Instruct,
 *    task lm-arena-chat, one H100 (SXM), vLLM, bfloat16, max_num_seqs 8..512:
 *    average GPU power and output tokens/s, each within 15%; and (issue 31)
 *    the inter-token latency p50 / p95 / p99 of the same rows, with vLLM V1's
 *    mixed prefill/decode steps: p50 within 15 % and p99 within 35 % up to
 *    batch 64, p50 within 25 % up to 512 (p95 and the larger p99s printed).
 * 2. MLPerf Inference v4.1 (mlcommons/inference_results_v4.1 @ 198fc467,
 *    closed/NVIDIA; $GOVD_SHARED_DATA/mlperf_inf_v4.1_nvidia_h100_h200_maxp_maxq.csv):
 *    llama2-70b Offline on 8x H200-SXM-141GB, FP8: 107.477 samples/s at the
 *    default 700 W vs 86.7369 at a 500 W per-GPU limit (MaxQ), ratio 0.807;
 *    the model's ratio within 10%. NVIDIA ran this system with tensor
 *    parallelism 1 (closed/NVIDIA/configs/llama2-70b/Offline/__init__.py,
 *    H200_SXM_141GBx8: tensor_parallelism 1, gpu_batch_size 806, use_fp8), so
 *    the asserted comparison uses the llama2-70b (TP1) spec; the TP8 shard
 *    (llama2-70b-tp8) is run too and reported, see docs/serving-model.md. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "common/hist.h"
#include "common/rng.h"
#include "plant_models/device.h"
#include "plant_models/plant.h"
#include "plant_models/server.h"

/* ---- Closed-loop harness --------------------------------------------------- */

struct loop_cfg {
	const char *preset, *model;
	uint32_t max_batch;
	bool chunked_prefill;   /* vLLM V1: chunks share the decode step */
	uint64_t kv_capacity_tokens;
	uint32_t concurrency;   /* requests in the system at all times */
	bool int8;
	double power_limit_w;
	double inlet_c;
	double prompt_tokens, output_tokens; /* means; uniform on [0.25, 1.75] x mean */
	double warm_s, measure_s;
	uint64_t seed;
};

struct loop_result {
	double power_w;     /* board (accelerator + HBM rails), mean over the window */
	double accel_w;     /* accelerator rail alone: what the power cap holds */
	double tokens_s;    /* output tokens / s */
	double requests_s;  /* completed requests / s */
	double clk_mhz;     /* mean effective clock */
	double busy, activity, mem_tbps, running;
	double tj_c;
	double itl_ms[3];   /* inter-token latency p50 / p95 / p99 over the window */
};

struct loop_ctx {
	struct server *srv;
	struct rng g;
	const struct loop_cfg *c;
};

static uint32_t draw_len(struct rng *g, double mean)
{
	double v = mean * (0.25 + 1.5 * rng_uniform(g));
	return v < 1 ? 1 : (uint32_t)lround(v);
}

static void submit_one(struct loop_ctx *x, double t_s)
{
	struct request r;
	memset(&r, 0, sizeof(r));
	r.arrival_s = t_s;
	r.ctx_tokens = draw_len(&x->g, x->c->prompt_tokens);
	r.gen_tokens = draw_len(&x->g, x->c->output_tokens);
	r.int8 = x->c->int8;
	server_submit(x->srv, &r);
}

/* Closed loop: each completion brings the next request at once. */
static void on_done(void *ctx, const struct request *r, double t_done_s)
{
	(void)r;
	submit_one(ctx, t_done_s);
}

static void run_loop(const struct loop_cfg *c, struct loop_result *out)
{
	const struct plant_preset *p = plant_preset_find(c->preset);
	assert_non_null(p);
	struct server_cfg sc;
	memset(&sc, 0, sizeof(sc));
	sc.model = model_spec_find(c->model);
	assert_non_null(sc.model);
	sc.max_batch = c->max_batch;
	sc.chunked_prefill = c->chunked_prefill;
	sc.kv_capacity_tokens = c->kv_capacity_tokens;
	sc.max_queue = c->concurrency + 16;
	sc.n_slices = 1;
	struct loop_ctx x = { .c = c };
	rng_seed(&x.g, c->seed);
	assert_int_equal(server_create(&sc, p, &x.srv), 0);
	struct device d;
	device_init(&d, p, c->inlet_c);
	assert_int_equal(device_set_power_limit(&d, c->power_limit_w), 0);
	for (uint32_t i = 0; i < c->concurrency; i++)
		submit_one(&x, 0.0);

	const double dt = PLANT_TICK_S;
	double t = 0, e0 = 0, ea0 = 0, clk = 0, busy = 0, act = 0, mem = 0, run_n = 0;
	uint64_t tok0 = 0, done0 = 0;
	long n = 0;
	bool measuring = false;
	struct hist *tbt0 = calloc(2, sizeof(*tbt0));
	assert_non_null(tbt0);
	while (t < c->warm_s + c->measure_s - 1e-9) {
		if (!measuring && t >= c->warm_s - 1e-9) {
			measuring = true;
			e0 = d.energy_j + d.mem_energy_j;
			ea0 = d.energy_j;
			tok0 = server_get_stats(x.srv)->tokens_generated;
			done0 = server_get_stats(x.srv)->completed;
			tbt0[0] = server_get_stats(x.srv)->tbt;
		}
		struct device_load l;
		uint32_t f = d.clk_mhz;
		server_advance(x.srv, t, dt, f, &l, on_done, &x);
		device_advance(&d, dt, &l);
		if (measuring) {
			clk += f;
			busy += l.busy;
			act += l.activity * l.busy;
			mem += l.mem_tbps;
			run_n += (double)server_get_stats(x.srv)->running;
			n++;
		}
		t += dt;
	}
	const struct server_stats *st = server_get_stats(x.srv);
	/* Board power (accelerator + HBM rails): what NVML and ML.ENERGY report. */
	out->power_w = (d.energy_j + d.mem_energy_j - e0) / c->measure_s;
	out->accel_w = (d.energy_j - ea0) / c->measure_s;
	out->tokens_s = (double)(st->tokens_generated - tok0) / c->measure_s;
	out->requests_s = (double)(st->completed - done0) / c->measure_s;
	out->clk_mhz = clk / (double)n;
	out->busy = busy / (double)n;
	out->activity = act / busy;
	out->mem_tbps = mem / (double)n;
	out->running = run_n / (double)n;
	out->tj_c = d.tj_c;
	hist_delta(&tbt0[1], &st->tbt, &tbt0[0]);
	static const double q[3] = { 0.50, 0.95, 0.99 };
	hist_quantiles(&tbt0[1], q, out->itl_ms, 3);
	free(tbt0);
	assert_false(d.shut_down);
	server_destroy(x.srv);
}

/* ---- 1. ML.ENERGY v3: Llama-3.1-8B on one H100 ------------------------------ */

struct mle_row {
	uint32_t batch;
	double power_w, tokens_s, avg_output_len;
	double itl_ms[3]; /* inter-token latency p50 / p95 / p99 */
};

/* Embedded copy of the rows the test checks (model_id
 * meta-llama/Llama-3.1-8B-Instruct, task lm-arena-chat, gpu_model H100,
 * num_gpus 1; columns max_num_seqs, avg_power_watts,
 * output_throughput_tokens_per_sec, avg_output_len, median_itl_ms,
 * p95_itl_ms, p99_itl_ms: the per-token gaps vLLM's benchmark client
 * records), ML.ENERGY Benchmark v3, ml-energy/leaderboard @ 0cd52dab :
 * public/data/models/ (one JSON per model). */
static const struct mle_row mle_expected[] = {
	{ 8, 486.438, 1069.57, 388.68, { 7.31611, 7.99650, 10.8668 } },
	{ 16, 513.281, 1953.57, 404.23, { 7.91237, 9.24301, 13.2907 } },
	{ 32, 559.713, 3391.07, 390.33, { 8.90660, 11.4034, 18.4161 } },
	{ 64, 610.348, 5147.15, 395.54, { 11.5002, 14.7544, 25.6834 } },
	{ 96, 643.953, 6260.15, 392.83, { 14.0779, 20.1205, 35.3980 } },
	{ 128, 669.244, 7036.53, 404.59, { 16.4820, 24.7400, 46.4333 } },
	{ 192, 688.255, 8223.35, 396.77, { 20.9081, 33.5431, 59.0162 } },
	{ 256, 690.508, 9009.61, 404.18, { 26.1262, 38.7503, 59.6643 } },
	{ 384, 686.519, 9248.01, 394.34, { 37.7015, 54.3118, 96.1521 } },
	{ 512, 688.298, 9805.59, 396.67, { 47.4076, 65.0180, 106.789 } },
};
#define MLE_N (sizeof(mle_expected) / sizeof(mle_expected[0]))
#define MLE_TOL 0.15

/* Prompt length for lm-arena-chat: not in the data file. LMSYS-Chat-1M
 * (Zheng et al., ICLR 2024) reports 69.5 prompt tokens per user turn and
 * ~2 turns per conversation; with the earlier turns' answers and the Llama 3.1
 * chat template in the context a request carries a few hundred tokens. We
 * take 200; at these batch sizes prefill is under 10% of GPU time, so the
 * fit is insensitive to it (docs/serving-model.md). */
#define MLE_PROMPT_TOKENS 200.0

/* Reads the rows from the CSV; returns the number found, or -1 if the file
 * is absent. Columns located by header name. */
static int mle_read_csv(struct mle_row *rows, int cap)
{
	const char *dir = getenv("GOVD_SHARED_DATA");
	if (!dir)
		return -1;
	char path[4096];
	snprintf(path, sizeof(path), "%s/mlenergy_v3_llm_configs.csv", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[4096];
	int col_model = -1, col_task = -1, col_gpu = -1, col_ngpu = -1, col_seqs = -1,
	    col_pw = -1, col_tps = -1, col_out = -1, col_itl[3] = { -1, -1, -1 };
	static const char *const itl_cols[3] = { "median_itl_ms", "p95_itl_ms", "p99_itl_ms" };
	int n = 0;
	bool header = true;
	while (fgets(line, sizeof(line), f)) {
		char *fields[32];
		int nf = 0;
		char *save = NULL;
		line[strcspn(line, "\r\n")] = 0;
		for (char *tok = strtok_r(line, ",", &save); tok && nf < 32;
		     tok = strtok_r(NULL, ",", &save))
			fields[nf++] = tok;
		if (header) {
			for (int i = 0; i < nf; i++) {
				const char *h = fields[i];
				if (!strcmp(h, "model_id")) col_model = i;
				else if (!strcmp(h, "task")) col_task = i;
				else if (!strcmp(h, "gpu_model")) col_gpu = i;
				else if (!strcmp(h, "num_gpus")) col_ngpu = i;
				else if (!strcmp(h, "max_num_seqs")) col_seqs = i;
				else if (!strcmp(h, "avg_power_watts")) col_pw = i;
				else if (!strcmp(h, "output_throughput_tokens_per_sec")) col_tps = i;
				else if (!strcmp(h, "avg_output_len")) col_out = i;
				for (int q = 0; q < 3; q++)
					if (!strcmp(h, itl_cols[q]))
						col_itl[q] = i;
			}
			assert_true(col_model >= 0 && col_task >= 0 && col_gpu >= 0 && col_ngpu >= 0 &&
				    col_seqs >= 0 && col_pw >= 0 && col_tps >= 0 && col_out >= 0);
			for (int q = 0; q < 3; q++)
				assert_true(col_itl[q] >= 0);
			header = false;
			continue;
		}
		int need = col_out > col_tps ? col_out : col_tps;
		for (int q = 0; q < 3; q++)
			need = col_itl[q] > need ? col_itl[q] : need;
		if (nf <= need || nf <= col_pw || nf <= col_seqs)
			continue;
		if (strcmp(fields[col_model], "meta-llama/Llama-3.1-8B-Instruct") ||
		    strcmp(fields[col_task], "lm-arena-chat") || strcmp(fields[col_gpu], "H100") ||
		    atoi(fields[col_ngpu]) != 1)
			continue;
		if (n < cap) {
			rows[n].batch = (uint32_t)atoi(fields[col_seqs]);
			rows[n].power_w = atof(fields[col_pw]);
			rows[n].tokens_s = atof(fields[col_tps]);
			rows[n].avg_output_len = atof(fields[col_out]);
			for (int q = 0; q < 3; q++)
				rows[n].itl_ms[q] = atof(fields[col_itl[q]]);
		}
		n++;
	}
	fclose(f);
	return n;
}

static void mle_run(uint32_t batch, double out_len, struct loop_result *r)
{
	struct loop_cfg c = {
		.preset = "h100-sxm",
		.model = "llama-3.1-8b",
		.max_batch = batch,
		.chunked_prefill = true, /* vLLM V1's only mode */
		.concurrency = batch,
		.int8 = false,
		.power_limit_w = 700.0,
		.inlet_c = 30.0,
		.prompt_tokens = MLE_PROMPT_TOKENS,
		.output_tokens = out_len,
		.warm_s = 240.0,
		.measure_s = 120.0,
		.seed = 1000 + batch,
	};
	run_loop(&c, r);
}

static void test_mlenergy_llama8b_h100(void **state)
{
	(void)state;
	struct mle_row csv[64];
	int n_csv = mle_read_csv(csv, 64);
	if (n_csv < 0) {
		test_skip_note("CSV cross-check: $GOVD_SHARED_DATA/mlenergy_v3_llm_configs.csv "
			       "not found; checking against the embedded figures only");
	}
	print_message("ML.ENERGY v3 Llama-3.1-8B lm-arena-chat H100, 700 W, 30 C inlet "
		      "(tolerance %.0f%%), board power (accelerator + HBM)\n", MLE_TOL * 100);
	print_message("  tokens/s: FIT over all rows (mfu, gpu_overlap, attn_bw with the mixed "
		      "prefill/decode steps; the vllm stack's step costs)\n  power: activity_bf16 "
		      "FIT in the first wave; the power terms "
		      "below the max clock\n  (uncore, memory-stalled activity, V/f, bandwidth "
		      "factor) were NOT set on these rows\n");
	print_message("%6s %9s %9s %7s %10s %10s %7s %7s %6s\n", "batch", "P model", "P pub",
		      "err", "tok/s mdl", "tok/s pub", "err", "clk", "Tj");
	int worst_ok = 1;
	for (size_t i = 0; i < MLE_N; i++) {
		const struct mle_row *e = &mle_expected[i];
		if (n_csv >= 0) {
			/* The embedded figures are the CSV's (to 6 digits). */
			bool found = false;
			for (int k = 0; k < n_csv && k < 64; k++) {
				if (csv[k].batch != e->batch)
					continue;
				found = true;
				assert_true(fabs(csv[k].power_w - e->power_w) < 1e-3 * e->power_w);
				assert_true(fabs(csv[k].tokens_s - e->tokens_s) < 1e-3 * e->tokens_s);
				for (int q = 0; q < 3; q++)
					assert_true(fabs(csv[k].itl_ms[q] - e->itl_ms[q]) <
						    1e-3 * e->itl_ms[q]);
			}
			assert_true(found);
		}
		struct loop_result r;
		mle_run(e->batch, e->avg_output_len, &r);
		double ep = r.power_w / e->power_w - 1, et = r.tokens_s / e->tokens_s - 1;
		print_message("%6u %9.1f %9.1f %+6.1f%% %10.0f %10.0f %+6.1f%% %7.0f %6.1f\n",
			      e->batch, r.power_w, e->power_w, ep * 100, r.tokens_s, e->tokens_s,
			      et * 100, r.clk_mhz, r.tj_c);
		if (fabs(ep) > MLE_TOL || fabs(et) > MLE_TOL)
			worst_ok = 0;
	}
	assert_true(worst_ok);
}

/* Targets (issue 31): p50 within 15 % and p99 within 35 % up to batch 64;
 * p50 within 25 % up to 512. p95 and the p99 above 64 are reported. */
#define ITL_SMALL_BATCH 64
#define ITL_P50_TOL_SMALL 0.15
#define ITL_P99_TOL_SMALL 0.35
#define ITL_P50_TOL 0.25

static void test_mlenergy_itl_h100(void **state)
{
	(void)state;
	print_message("ML.ENERGY v3 Llama-3.1-8B lm-arena-chat H100: inter-token latency (ms), "
		      "model vs published\n  the step costs were FIT to tokens/s; among fits within "
		      "6 %% the one with the smallest p99 error at batch 8-64\n  was taken (p99 "
		      "8-64: FIT), p50, p95 and the rows above 64: HELD OUT\n");
	print_message("%6s %7s %7s %7s | %7s %7s %7s | %7s %7s %7s\n", "batch", "p50 mdl", "pub",
		      "err", "p95 mdl", "pub", "err", "p99 mdl", "pub", "err");
	int ok = 1;
	for (size_t i = 0; i < MLE_N; i++) {
		const struct mle_row *e = &mle_expected[i];
		struct loop_result r;
		mle_run(e->batch, e->avg_output_len, &r);
		double e50 = r.itl_ms[0] / e->itl_ms[0] - 1, e95 = r.itl_ms[1] / e->itl_ms[1] - 1,
		       e99 = r.itl_ms[2] / e->itl_ms[2] - 1;
		bool small = e->batch <= ITL_SMALL_BATCH;
		bool row_ok = small ? fabs(e50) <= ITL_P50_TOL_SMALL && fabs(e99) <= ITL_P99_TOL_SMALL
				    : fabs(e50) <= ITL_P50_TOL;
		print_message("%6u %7.2f %7.2f %+6.1f%% | %7.2f %7.2f %+6.1f%% | %7.2f %7.2f %+6.1f%% %s\n",
			      e->batch, r.itl_ms[0], e->itl_ms[0], e50 * 100, r.itl_ms[1], e->itl_ms[1],
			      e95 * 100, r.itl_ms[2], e->itl_ms[2], e99 * 100, row_ok ? "" : "MISS");
		if (!row_ok)
			ok = 0;
	}
	assert_true(ok);
}

/* ---- 2. MLPerf Inference v4.1 llama2-70b Offline, H200, MaxP vs MaxQ -------- */

#define MLPERF_MAXP_SPS 107.477  /* H200-SXM-141GBx8_TRT, default 700 W TGP */
#define MLPERF_MAXQ_SPS 86.7369  /* H200-SXM-141GBx8_TRT_MaxQ, 500 W per GPU */
#define MLPERF_TOL 0.10
/* Output tokens per sample: Server tokens/s over samples/s in the same file
 * (29228.22 / 100.35 = 291). Prompt length: not in the file; see
 * docs/serving-model.md for the assumption and the sensitivity. */
#define MLPERF_OUTPUT_TOKENS 291.0
#define MLPERF_PROMPT_TOKENS 300.0

static double mlperf_run(const char *model, uint32_t max_batch, double limit_w,
			 double prompt_tokens, struct loop_result *r)
{
	struct loop_cfg c = {
		.preset = "h200-sxm",
		.model = model,
		.max_batch = max_batch,
		.concurrency = max_batch + 512, /* offline: the queue never runs dry */
		.int8 = true,              /* FP8 in the submission: modelled as 8-bit INT8 */
		.power_limit_w = limit_w,
		.inlet_c = 30.0,
		.prompt_tokens = prompt_tokens,
		.output_tokens = MLPERF_OUTPUT_TOKENS,
		.warm_s = 240.0,
		.measure_s = 120.0,
		.seed = 7,
	};
	run_loop(&c, r);
	return r->requests_s;
}

static double mlperf_check(const char *model, uint32_t tp, uint32_t max_batch, double prompt_tokens)
{
	/* One simulated replica = tp GPUs of the 8-GPU node. */
	const double per = (double)tp / 8.0;
	const double published = MLPERF_MAXQ_SPS / MLPERF_MAXP_SPS;
	struct loop_result p700, p500;
	mlperf_run(model, max_batch, 700.0, prompt_tokens, &p700);
	mlperf_run(model, max_batch, 500.0, prompt_tokens, &p500);
	double model_ratio = p500.requests_s / p700.requests_s;
	print_message("MLPerf v4.1 llama2-70b Offline H200, %s, batch %u, prompt %.0f, 8-bit:\n",
		      model, max_batch, prompt_tokens);
	print_message("  700 W: %.2f samples/s per replica (published %.2f), %.0f tok/s, %.0f W, %.0f MHz, busy %.2f act %.2f mem %.2f TB/s running %.0f\n",
		      p700.requests_s, MLPERF_MAXP_SPS * per, p700.tokens_s, p700.power_w, p700.clk_mhz, p700.busy, p700.activity, p700.mem_tbps, p700.running);
	print_message("  500 W: %.2f samples/s per replica (published %.2f), %.0f tok/s, %.0f W, %.0f MHz, busy %.2f\n",
		      p500.requests_s, MLPERF_MAXQ_SPS * per, p500.tokens_s, p500.power_w, p500.clk_mhz, p500.busy);
	print_message("  (gpu_overlap was fitted on this ratio in the first wave; the V/f, uncore "
		      "and bandwidth terms were not)\n");
	print_message("  ratio model %.3f, published %.3f, tolerance %.0f%% -> error %+.1f%%\n",
		      model_ratio, published, MLPERF_TOL * 100, (model_ratio / published - 1) * 100);
	assert_true(p500.accel_w < 505.0);
	return model_ratio / published - 1;
}

static void test_mlperf_llama2_70b_h200_maxq_ratio(void **state)
{
	(void)state;
	/* The measured deployment: TP1, batch 806, 8-bit weights and KV. */
	double e1 = mlperf_check("llama2-70b", 1, 806, MLPERF_PROMPT_TOKENS);
	assert_true(fabs(e1) <= MLPERF_TOL);
	/* The TP8 shard: its all-reduce time neither scales with the SM clock
	 * nor draws much power, so a 500 W limit costs it less throughput.
	 * Reported, not held to the TP1 figure (docs/serving-model.md). */
	double e8 = mlperf_check("llama2-70b-tp8", 8, 1024, MLPERF_PROMPT_TOKENS);
	print_message("  llama2-70b-tp8 is not the measured configuration: reported only\n");
	assert_true(e8 >= e1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlenergy_llama8b_h100),
		cmocka_unit_test(test_mlenergy_itl_h100),
		cmocka_unit_test(test_mlperf_llama2_70b_h200_maxq_ratio),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
