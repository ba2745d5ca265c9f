/* Unit tests for plant_models/workload: trace loading (fixtures and, when
 * GOVD_SHARED_DATA is set, the real Azure code trace), replay with time
 * scaling, offset, looping and bursts, and the fitted generator's statistics. */
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

#include "common/diag.h"
#include "common/rng.h"
#include "plant_models/workload.h"

#define FIX "tests/data/traces/"

static char fmt_buf[2048];

static const char *diag_str(const struct diag_list *l, size_t i)
{
	assert_true(i < l->n);
	diag_format(&l->v[i], fmt_buf, sizeof(fmt_buf));
	return fmt_buf;
}

static struct trace *load_ok(const char *path, struct diag_list *dl)
{
	struct trace *t = NULL;
	int rc = trace_load(path, &t, dl);
	if (rc)
		diag_print(dl, stdout);
	assert_int_equal(rc, 0);
	assert_non_null(t);
	return t;
}

/* Path of the real trace, or NULL (with a message) when the data is absent. */
static const char *real_trace(char *buf, size_t len)
{
	const char *dir = getenv("GOVD_SHARED_DATA");
	if (!dir || !dir[0]) {
		test_skip_note("GOVD_SHARED_DATA not set: real-trace checks");
		return NULL;
	}
	snprintf(buf, len, "%s/AzureLLMInferenceTrace2023_code.csv", dir);
	FILE *f = fopen(buf, "r");
	if (!f) {
		test_skip_note("%s absent (tools/fetch-traces downloads it): real-trace checks", buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static void test_trace_crlf_no_final_newline_dates(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t = load_ok(FIX "crlf-no-final-newline.csv", &dl);
	assert_int_equal(t->n, 4);
	/* Across a year end and a leap day, to 100 ns. */
	assert_true(t->rows[0].t_s == 0);
	assert_true(fabs(t->rows[1].t_s - 0.2) < 1e-12);
	assert_true(fabs(t->rows[2].t_s - 0.2000001) < 1e-12);
	assert_true(fabs(t->rows[3].t_s - (59 * 86400.0 + 0.2000001)) < 1e-8);
	assert_true(t->span_s == t->rows[3].t_s);
	assert_int_equal(t->rows[3].ctx_tokens, 7437);
	assert_int_equal(t->rows[3].gen_tokens, 1899);
	/* GeneratedTokens 0 is served as 1, with one warning. */
	assert_int_equal(t->rows[1].gen_tokens, 1);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0),
			    FIX "crlf-no-final-newline.csv:3: warning: 1 row(s) with GeneratedTokens 0 "
				"(first here); replayed as 1 token");
	assert_string_equal(t->path, FIX "crlf-no-final-newline.csv");
	trace_free(t);
	diag_clear(&dl);
}

static void test_trace_bad_rows_all_reported(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t = (struct trace *)1;
	assert_int_equal(trace_load(FIX "bad-rows.csv", &t, &dl), -EINVAL);
	assert_null(t);
	const char *p = FIX "bad-rows.csv";
	char want[12][256];
	snprintf(want[0], 256, "%s:3: error: expected TIMESTAMP like 2023-11-16 18:17:03.9799600, got '2023/11/16 18:17:04.0319600'", p);
	snprintf(want[1], 256, "%s:4: error: expected TIMESTAMP like 2023-11-16 18:17:03.9799600, got '2023-13-16 18:17:04.0781490'", p);
	snprintf(want[2], 256, "%s:5: error: expected TIMESTAMP like 2023-11-16 18:17:03.9799600, got '2023-02-29 18:17:04.0781490'", p);
	snprintf(want[3], 256, "%s:6: error: expected 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, got 2", p);
	snprintf(want[4], 256, "%s:7: error: expected 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, got 4", p);
	snprintf(want[5], 256, "%s:8: error: expected ContextTokens as a whole number 0..4294967295, got 'abc'", p);
	snprintf(want[6], 256, "%s:9: error: expected GeneratedTokens as a whole number 0..4294967295, got '-1'", p);
	snprintf(want[7], 256, "%s:10: error: expected TIMESTAMP,ContextTokens,GeneratedTokens, got an empty line", p);
	snprintf(want[8], 256, "%s:12: error: expected a timestamp not before the previous row's (line 11); got 2023-11-16 18:17:02.0000000, 2.4000000 s earlier", p);
	snprintf(want[9], 256, "%s:13: error: expected TIMESTAMP like 2023-11-16 18:17:03.9799600, got '2023-11-16 18:17:05.'", p);
	snprintf(want[10], 256, "%s:14: error: expected ContextTokens as a whole number 0..4294967295, got '99999999999'", p);
	assert_int_equal(dl.n, 11);
	for (size_t i = 0; i < dl.n; i++)
		assert_string_equal(diag_str(&dl, i), want[i]);
	diag_clear(&dl);
}

static void test_trace_header_and_empty_errors(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t;
	assert_int_equal(trace_load(FIX "bad-header.csv", &t, &dl), -EINVAL);
	assert_string_equal(diag_str(&dl, 0),
			    FIX "bad-header.csv:1: error: expected the header "
				"'TIMESTAMP,ContextTokens,GeneratedTokens', got 'ts,ctx,gen'");
	diag_clear(&dl);
	assert_int_equal(trace_load(FIX "header-only.csv", &t, &dl), -EINVAL);
	assert_string_equal(diag_str(&dl, 0),
			    FIX "header-only.csv:1: error: expected at least one row after the header");
	diag_clear(&dl);
	assert_int_equal(trace_load(FIX "missing.csv", &t, &dl), -ENOENT);
	assert_string_equal(diag_str(&dl, 0),
			    FIX "missing.csv: error: cannot open: No such file or directory");
	assert_null(t);
	diag_clear(&dl);
}

static void test_trace_error_cap(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t;
	assert_int_equal(trace_load(FIX "many-bad.csv", &t, &dl), -EINVAL);
	assert_int_equal(dl.n, 21); /* 20 rows, then "stopped" */
	assert_string_equal(diag_str(&dl, 0),
			    FIX "many-bad.csv:2: error: expected 3 fields "
				"TIMESTAMP,ContextTokens,GeneratedTokens, got 1");
	assert_string_equal(diag_str(&dl, 20),
			    FIX "many-bad.csv:21: error: too many errors (20); stopped reading");
	diag_clear(&dl);
}

static void test_real_trace_loads_exactly(void **state)
{
	(void)state;
	char buf[4096];
	const char *path = real_trace(buf, sizeof(buf));
	if (!path)
		return;
	struct diag_list dl = {0};
	struct trace *t = load_ok(path, &dl);
	assert_int_equal(dl.n, 0);
	assert_int_equal(t->n, 8819);
	/* 19:14:19.9280160 - 18:17:03.9799600, exactly in 100 ns units. */
	assert_true(fabs(t->span_s - 3435.948056) < 1e-9);
	assert_true(fabs(t->rows[1].t_s - 0.052) < 1e-12);
	assert_int_equal(t->rows[0].ctx_tokens, 4808);
	assert_int_equal(t->rows[0].gen_tokens, 10);
	assert_int_equal(t->rows[8818].ctx_tokens, 549);
	assert_int_equal(t->rows[8818].gen_tokens, 173); /* last line, no newline */
	double max_gap = 0;
	for (size_t i = 1; i < t->n; i++)
		max_gap = fmax(max_gap, t->rows[i].t_s - t->rows[i - 1].t_s);
	assert_true(fabs(max_gap - 217.169) < 0.01);
	trace_free(t);
}

static struct workload_cfg trace_cfg(double scale, bool loop, double offset)
{
	struct workload_cfg c = {.kind = WORKLOAD_TRACE, .time_scale = scale, .loop = loop,
				 .start_offset_s = offset, .n_slices = 1,
				 .slice_fraction = {1.0}};
	return c;
}

static void expect_arrivals(struct workload *w, const double *t, const uint32_t *ctx, size_t n)
{
	struct request r;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(workload_next(w, &r), 0);
		if (fabs(r.arrival_s - t[i]) > 1e-9)
			fail_msg("arrival %zu at %.9f, expected %.9f", i, r.arrival_s, t[i]);
		if (ctx)
			assert_int_equal(r.ctx_tokens, ctx[i]);
		assert_true(r.gen_tokens >= 1);
		assert_int_equal(r.slice, 0);
		assert_false(r.int8);
	}
}

static void test_replay_time_scale_offset_end(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t = load_ok(FIX "four-rows-1s.csv", &dl);
	struct rng root;
	rng_seed(&root, 1);
	struct workload *w;
	struct workload_cfg c = trace_cfg(2.0, false, 0);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	const double t1[] = {0, 0.5, 1.0, 1.5};
	const uint32_t c1[] = {10, 20, 30, 40};
	expect_arrivals(w, t1, c1, 4);
	struct request r;
	assert_int_equal(workload_next(w, &r), 1);
	assert_int_equal(workload_next(w, &r), 1);
	workload_close(w);

	c = trace_cfg(1.0, false, 1.5);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	const double t2[] = {0.5, 1.5};
	const uint32_t c2[] = {30, 40};
	expect_arrivals(w, t2, c2, 2);
	assert_int_equal(workload_next(w, &r), 1);
	workload_close(w);

	c = trace_cfg(1.0, false, 10);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	assert_int_equal(workload_next(w, &r), 1);
	workload_close(w);
	trace_free(t);
}

static void test_replay_loop_starts_after_mean_gap(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t = load_ok(FIX "four-rows-1s.csv", &dl);
	struct rng root;
	rng_seed(&root, 1);
	struct workload *w;
	/* span 3 s, mean gap 1 s: loop period 4 s. */
	struct workload_cfg c = trace_cfg(1.0, true, 0);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	const double t1[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	const uint32_t c1[] = {10, 20, 30, 40, 10, 20, 30, 40, 10, 20, 30, 40, 10};
	expect_arrivals(w, t1, c1, 13);
	workload_close(w);

	/* Offset only skips into the first pass; 9.5 s = two loops + 1.5 s. */
	c = trace_cfg(2.0, true, 9.5);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	const double t2[] = {0.25, 0.75, 1.25, 1.75, 2.25, 2.75};
	const uint32_t c2[] = {30, 40, 10, 20, 30, 40};
	expect_arrivals(w, t2, c2, 6);
	workload_close(w);
	trace_free(t);
}

static void test_replay_rate_scale_divides_gaps(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct trace *t = load_ok(FIX "four-rows-1s.csv", &dl);
	struct rng root;
	rng_seed(&root, 1);
	struct workload *w;
	struct workload_cfg c = trace_cfg(1.0, true, 0);
	assert_int_equal(workload_open(&c, t, &root, &w), 0);
	const double t1[] = {0, 1};
	expect_arrivals(w, t1, NULL, 2);
	workload_set_rate_scale(w, 1.0, 2.0);
	const double t2[] = {1.5, 2.0, 2.5};
	expect_arrivals(w, t2, NULL, 3);
	workload_set_rate_scale(w, 2.5, 1.0);
	const double t3[] = {3.5, 4.5};
	expect_arrivals(w, t3, NULL, 2);
	/* Arrival 4.5 already handed out (pending in the plant) when a burst
	 * starts at 4.0: the burst applies from 4.5 on, without a pile-up. */
	workload_set_rate_scale(w, 4.0, 100.0);
	const double t4[] = {4.51, 4.52};
	expect_arrivals(w, t4, NULL, 2);
	workload_close(w);
	trace_free(t);
}

static void test_open_rejects_bad_config(void **state)
{
	(void)state;
	struct rng root;
	rng_seed(&root, 1);
	struct workload *w = (struct workload *)1;
	struct workload_cfg c = trace_cfg(1.0, false, 0);
	assert_int_equal(workload_open(&c, NULL, &root, &w), -EINVAL);
	assert_null(w);
	c = (struct workload_cfg){.kind = WORKLOAD_GENERATOR, .time_scale = 1,
				  .gen = generator_azure_code_fit, .n_slices = 1};
	assert_int_equal(workload_open(&c, NULL, &root, &w), 0);
	workload_close(w);
	c.time_scale = 0;
	assert_int_equal(workload_open(&c, NULL, &root, &w), -EINVAL);
	c.time_scale = 1;
	c.gen.burst_on_fraction = 1.0;
	assert_int_equal(workload_open(&c, NULL, &root, &w), -EINVAL);
	c.gen = generator_azure_code_fit;
	c.gen.diurnal_amplitude = 1.5;
	assert_int_equal(workload_open(&c, NULL, &root, &w), -EINVAL);
	c.gen = generator_azure_code_fit;
	c.gen.rate_rps = 0;
	assert_int_equal(workload_open(&c, NULL, &root, &w), -EINVAL);
}

static struct workload_cfg gen_cfg(struct generator_params g)
{
	struct workload_cfg c = {.kind = WORKLOAD_GENERATOR, .time_scale = 1.0, .gen = g,
				 .n_slices = 1, .slice_fraction = {1.0}};
	return c;
}

static void test_generator_deterministic_and_streams_independent(void **state)
{
	(void)state;
	struct rng a, b;
	rng_seed(&a, 42);
	rng_seed(&b, 43);
	struct workload_cfg c = gen_cfg(generator_azure_code_fit);
	struct workload_cfg c3 = c;
	c3.n_slices = 3;
	c3.slice_fraction[0] = 0.5;
	c3.slice_fraction[1] = 0.3;
	c3.slice_fraction[2] = 0.2;
	struct workload *w1, *w2, *w3, *w4;
	assert_int_equal(workload_open(&c, NULL, &a, &w1), 0);
	assert_int_equal(workload_open(&c, NULL, &a, &w2), 0);
	assert_int_equal(workload_open(&c3, NULL, &a, &w3), 0);
	assert_int_equal(workload_open(&c, NULL, &b, &w4), 0);
	int differ = 0;
	for (int i = 0; i < 2000; i++) {
		struct request r1, r2, r3, r4;
		assert_int_equal(workload_next(w1, &r1), 0);
		assert_int_equal(workload_next(w2, &r2), 0);
		assert_int_equal(workload_next(w3, &r3), 0);
		assert_int_equal(workload_next(w4, &r4), 0);
		assert_memory_equal(&r1, &r2, sizeof(r1));
		/* Slices come from their own stream: times and tokens unchanged. */
		assert_true(r1.arrival_s == r3.arrival_s);
		assert_int_equal(r1.ctx_tokens, r3.ctx_tokens);
		assert_int_equal(r1.gen_tokens, r3.gen_tokens);
		differ += r1.arrival_s != r4.arrival_s;
	}
	assert_true(differ > 1900);
	workload_close(w1);
	workload_close(w2);
	workload_close(w3);
	workload_close(w4);
}

static void test_slice_fractions(void **state)
{
	(void)state;
	struct rng root;
	rng_seed(&root, 5);
	struct workload_cfg c = gen_cfg(generator_azure_code_fit);
	c.n_slices = 3;
	c.slice_fraction[0] = 0.5;
	c.slice_fraction[1] = 0.3;
	c.slice_fraction[2] = 0.2;
	struct workload *w;
	assert_int_equal(workload_open(&c, NULL, &root, &w), 0);
	const int n = 100000;
	int cnt[3] = {0};
	for (int i = 0; i < n; i++) {
		struct request r;
		assert_int_equal(workload_next(w, &r), 0);
		assert_true(r.slice < 3);
		cnt[r.slice]++;
	}
	/* binomial sd <= 0.0016; 0.01 is > 6 sd */
	for (int s = 0; s < 3; s++)
		assert_true(fabs((double)cnt[s] / n - c.slice_fraction[s]) < 0.01);
	workload_close(w);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

struct stats {
	double rate_rps, gap_cv, idc60;
	uint32_t ctx_q[3], gen_q[3]; /* p25, p50, p75 */
};

static double idc(const double *t, size_t n, double win_s)
{
	size_t nw = (size_t)(t[n - 1] / win_s) + 1;
	double *cnt = calloc(nw, sizeof(*cnt));
	assert_non_null(cnt);
	for (size_t i = 0; i < n; i++)
		cnt[(size_t)(t[i] / win_s)] += 1;
	double m = (double)n / (double)nw, v = 0;
	for (size_t i = 0; i < nw; i++)
		v += (cnt[i] - m) * (cnt[i] - m);
	free(cnt);
	return v / (double)nw / m;
}

/* Nearest-rank on (n-1), the convention of tools/fit-workload.py. */
static void stats_of(const double *t, uint32_t *ctx, uint32_t *gen, size_t n, struct stats *s)
{
	double sum = 0, sum2 = 0;
	for (size_t i = 1; i < n; i++) {
		double g = t[i] - t[i - 1];
		sum += g;
		sum2 += g * g;
	}
	double m = sum / (double)(n - 1);
	s->rate_rps = (double)(n - 1) / (t[n - 1] - t[0]);
	s->gap_cv = sqrt(sum2 / (double)(n - 1) - m * m) / m;
	s->idc60 = idc(t, n, 60);
	qsort(ctx, n, sizeof(*ctx), cmp_u32);
	qsort(gen, n, sizeof(*gen), cmp_u32);
	const double q[3] = {0.25, 0.5, 0.75};
	for (int i = 0; i < 3; i++) {
		s->ctx_q[i] = ctx[(size_t)(q[i] * (double)(n - 1))];
		s->gen_q[i] = gen[(size_t)(q[i] * (double)(n - 1))];
	}
}

static void generate(const struct workload_cfg *c, uint64_t seed, size_t n, double *t,
		     uint32_t *ctx, uint32_t *gen)
{
	struct rng root;
	rng_seed(&root, seed);
	struct workload *w;
	assert_int_equal(workload_open(c, NULL, &root, &w), 0);
	for (size_t i = 0; i < n; i++) {
		struct request r;
		assert_int_equal(workload_next(w, &r), 0);
		assert_true(i == 0 || r.arrival_s >= t[i - 1]);
		assert_true(r.ctx_tokens >= 1 && r.ctx_tokens <= c->gen.ctx_max);
		assert_true(r.gen_tokens >= 1 && r.gen_tokens <= c->gen.gen_max);
		t[i] = r.arrival_s;
		ctx[i] = r.ctx_tokens;
		gen[i] = r.gen_tokens;
	}
	workload_close(w);
}

static double rel(double got, double want)
{
	return fabs(got - want) / want;
}

/* The fitted generator against its own targets (the numbers in
 * docs/workload-fit.md) and, when present, against the real trace. */
static void test_generator_matches_fit_and_trace(void **state)
{
	(void)state;
	const struct generator_params *g = &generator_azure_code_fit;
	const size_t n = 400000; /* ~43 h of arrivals */
	double *t = malloc(n * sizeof(*t));
	uint32_t *ctx = malloc(n * sizeof(*ctx)), *gen = malloc(n * sizeof(*gen));
	assert_true(t && ctx && gen);
	struct workload_cfg c = gen_cfg(*g);
	generate(&c, 2024, n, t, ctx, gen);
	struct stats s;
	stats_of(t, ctx, gen, n, &s);
	printf("generator: rate %.3f req/s, gap CV %.2f, IDC(60 s) %.1f, ctx p25/50/75 %u/%u/%u, "
	       "gen %u/%u/%u\n",
	       s.rate_rps, s.gap_cv, s.idc60, s.ctx_q[0], s.ctx_q[1], s.ctx_q[2], s.gen_q[0],
	       s.gen_q[1], s.gen_q[2]);
	/* Targets: the fitted parameters themselves. */
	assert_true(rel(s.rate_rps, g->rate_rps) < 0.05);
	assert_true(rel(s.gap_cv, g->burst_cv) < 0.15);
	/* IPP index of dispersion at 60 s (docs/workload-fit.md): 135.5 */
	assert_true(rel(s.idc60, 135.5) < 0.25);
	const double z[3] = {-0.6744898, 0, 0.6744898};
	for (int i = 0; i < 3; i++) {
		double cq = exp(g->ctx_mu + g->ctx_sigma * z[i]);
		double gq = exp(g->gen_mu + g->gen_sigma * z[i]);
		assert_true(rel(s.ctx_q[i], cq) < 0.03);
		assert_true(fabs(s.gen_q[i] - gq) <= 1.0); /* integer tokens */
	}

	char buf[4096];
	const char *path = real_trace(buf, sizeof(buf));
	if (path) {
		struct diag_list dl = {0};
		struct trace *tr = load_ok(path, &dl);
		double *tt = malloc(tr->n * sizeof(*tt));
		uint32_t *tc = malloc(tr->n * sizeof(*tc)), *tg = malloc(tr->n * sizeof(*tg));
		assert_true(tt && tc && tg);
		for (size_t i = 0; i < tr->n; i++) {
			tt[i] = tr->rows[i].t_s;
			tc[i] = tr->rows[i].ctx_tokens;
			tg[i] = tr->rows[i].gen_tokens;
		}
		struct stats ts;
		stats_of(tt, tc, tg, tr->n, &ts);
		printf("trace:     rate %.3f req/s, gap CV %.2f, IDC(60 s) %.1f, ctx p25/50/75 "
		       "%u/%u/%u, gen %u/%u/%u\n",
		       ts.rate_rps, ts.gap_cv, ts.idc60, ts.ctx_q[0], ts.ctx_q[1], ts.ctx_q[2],
		       ts.gen_q[0], ts.gen_q[1], ts.gen_q[2]);
		/* Moments are fitted exactly; the lognormal's quartiles are within 30%
		 * of the trace's (the fit's known shape error, docs/workload-fit.md). */
		assert_true(rel(s.rate_rps, ts.rate_rps) < 0.05);
		assert_true(rel(s.gap_cv, ts.gap_cv) < 0.15);
		assert_true(rel(s.idc60, ts.idc60) < 0.30);
		for (int i = 0; i < 3; i++) {
			assert_true(rel(s.ctx_q[i], ts.ctx_q[i]) < 0.30);
			assert_true(rel(s.gen_q[i], ts.gen_q[i]) < 0.30);
		}
		free(tt);
		free(tc);
		free(tg);
		trace_free(tr);
	}
	free(t);
	free(ctx);
	free(gen);
}

static void test_generator_smooth_arrivals_cv(void **state)
{
	(void)state;
	struct generator_params g = generator_azure_code_fit;
	g.rate_rps = 10;
	g.burst_cv = 0.5;
	struct workload_cfg c = gen_cfg(g);
	const size_t n = 100000;
	double *t = malloc(n * sizeof(*t));
	uint32_t *ctx = malloc(n * sizeof(*ctx)), *gen = malloc(n * sizeof(*gen));
	assert_true(t && ctx && gen);
	generate(&c, 3, n, t, ctx, gen);
	struct stats s;
	stats_of(t, ctx, gen, n, &s);
	assert_true(rel(s.rate_rps, 10) < 0.02);
	assert_true(fabs(s.gap_cv - 0.5) < 0.02);
	free(t);
	free(ctx);
	free(gen);
}

static void test_generator_diurnal_shape(void **state)
{
	(void)state;
	struct generator_params g = generator_azure_code_fit;
	g.rate_rps = 20;
	g.burst_cv = 1;
	g.diurnal_amplitude = 0.8;
	g.diurnal_period_s = 1000;
	struct workload_cfg c = gen_cfg(g);
	struct rng root;
	rng_seed(&root, 9);
	struct workload *w;
	assert_int_equal(workload_open(&c, NULL, &root, &w), 0);
	double first = 0, second = 0, quarter[4] = {0}, prev = 0;
	struct request r;
	do {
		assert_int_equal(workload_next(w, &r), 0);
		assert_true(r.arrival_s >= prev); /* the inverse time change is exact enough */
		prev = r.arrival_s;
		double ph = fmod(r.arrival_s, 1000);
		*(ph < 500 ? &first : &second) += 1;
		quarter[(int)(ph / 250)] += 1;
	} while (r.arrival_s < 100 * 1000);
	/* Expected counts per half: r (P/2 +- a P / pi). */
	double want = (500 + 0.8 * 1000 / M_PI) / (500 - 0.8 * 1000 / M_PI);
	assert_true(rel(first / second, want) < 0.05);
	assert_true(rel((first + second) / 100000, 20) < 0.02);
	/* sin is symmetric about its peak (P/4) and trough (3P/4). */
	assert_true(rel(quarter[0], quarter[1]) < 0.05);
	assert_true(rel(quarter[2], quarter[3]) < 0.05);
	assert_true(quarter[1] > 2 * quarter[2]);
	workload_close(w);
}

static void test_generator_rate_scale_burst(void **state)
{
	(void)state;
	struct generator_params g = generator_azure_code_fit;
	g.rate_rps = 10;
	g.burst_cv = 1;
	struct workload_cfg c = gen_cfg(g);
	c.time_scale = 2; /* time_scale multiplies the generator's rate too */
	struct rng root;
	rng_seed(&root, 11);
	struct workload *w;
	assert_int_equal(workload_open(&c, NULL, &root, &w), 0);
	double cnt[3] = {0};
	struct request r;
	bool burst_on = false, burst_off = false;
	for (;;) {
		assert_int_equal(workload_next(w, &r), 0);
		if (!burst_on && r.arrival_s >= 100) {
			workload_set_rate_scale(w, 100, 3);
			burst_on = true;
		}
		if (!burst_off && r.arrival_s >= 200) {
			workload_set_rate_scale(w, 200, 1);
			burst_off = true;
		}
		if (r.arrival_s >= 300)
			break;
		cnt[(int)(r.arrival_s / 100)] += 1;
	}
	/* Poisson counts: sd <= sqrt(6000) ~ 77, tolerances >= 4 sd. */
	assert_true(fabs(cnt[0] - 2000) < 200);
	assert_true(fabs(cnt[1] - 6000) < 400);
	assert_true(fabs(cnt[2] - 2000) < 200);
	workload_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_crlf_no_final_newline_dates),
		cmocka_unit_test(test_trace_bad_rows_all_reported),
		cmocka_unit_test(test_trace_header_and_empty_errors),
		cmocka_unit_test(test_trace_error_cap),
		cmocka_unit_test(test_real_trace_loads_exactly),
		cmocka_unit_test(test_replay_time_scale_offset_end),
		cmocka_unit_test(test_replay_loop_starts_after_mean_gap),
		cmocka_unit_test(test_replay_rate_scale_divides_gaps),
		cmocka_unit_test(test_open_rejects_bad_config),
		cmocka_unit_test(test_generator_deterministic_and_streams_independent),
		cmocka_unit_test(test_slice_fractions),
		cmocka_unit_test(test_generator_matches_fit_and_trace),
		cmocka_unit_test(test_generator_smooth_arrivals_cv),
		cmocka_unit_test(test_generator_diurnal_shape),
		cmocka_unit_test(test_generator_rate_scale_burst),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
