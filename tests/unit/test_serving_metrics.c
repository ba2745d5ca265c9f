/* The serving backend on each server's exposition text (tests/data/serving/,
 * sources and versions in its README.md): the current and the older vLLM
 * names, SGLang's documented example and its current names, Triton's
 * counters, histogram and summary; a replica pair merged bucket by bucket,
 * with differing bounds, with one replica restarted and with one failing.
 * No network: hal_serving_replay() feeds the texts through the same parse,
 * merge and commit as a scrape. The expected window quantiles are PromQL's
 * histogram_quantile of the window's bucket increases, worked out in the
 * README; the governor's path (hist_delta + hist_quantile) holds them
 * within one 2 % log bucket. */
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

#include "common/diag.h"
#include "common/hist.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"

#define DATA "tests/data/serving/"
#define MAXKV 16

struct dev {
	struct hal_dev dev;
	struct diag_list diags;
};

/* kv: NULL-terminated key, value pairs */
static int dev_open(struct dev *d, const char *const *kv)
{
	memset(d, 0, sizeof(*d));
	const char *keys[MAXKV], *vals[MAXKV];
	size_t n = 0;
	for (; kv[2 * n]; n++) {
		assert_true(n < MAXKV);
		keys[n] = kv[2 * n];
		vals[n] = kv[2 * n + 1];
	}
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving", .n_opts = n, .keys = keys,
				   .values = vals };
	d->dev.ops = &hal_serving_ops;
	return hal_serving_ops.open(&d->dev, &cfg, &d->diags);
}

static void dev_close(struct dev *d)
{
	if (d->dev.priv)
		d->dev.ops->close(&d->dev);
	diag_clear(&d->diags);
}

static char *slurp(const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), DATA "%s", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		print_error("cannot open %s\n", path);
	assert_non_null(f);
	char *buf = malloc(1 << 20);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* One read over fixtures (one per endpoint, NULL-terminated) */
static void replay(struct dev *d, struct hal_serving *sv, const char *const *files)
{
	char *bodies[4] = { NULL };
	size_t lens[4] = { 0 }, n = 0;
	for (; files[n]; n++) {
		assert_true(n < 4);
		bodies[n] = slurp(files[n], &lens[n]);
	}
	assert_int_equal(hal_serving_replay(&d->dev, (const char *const *)bodies, lens, n, sv), 0);
	for (size_t i = 0; i < n; i++)
		free(bodies[i]);
}

static void replay_ok(struct dev *d, struct hal_serving *sv, const char *const *files)
{
	replay(d, sv, files);
	if (!sv->valid || (sv->fault_bits & ~HAL_SVF_RESET))
		print_error("faults 0x%x: %s\n", sv->fault_bits, sv->fault_msg ? sv->fault_msg : "");
	assert_true(sv->valid);
	assert_int_equal(sv->fault_bits & ~HAL_SVF_RESET, 0);
}

/* Snapshots of the cumulative histograms (read_serving's stay valid only
 * until the next call); a missing one is an empty histogram. */
struct snap {
	struct hist h[4];
};

static struct snap *snap_take(const struct hal_serving *sv)
{
	struct snap *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	const struct hist *src[4] = { sv->ttft, sv->tbt, sv->e2e, sv->queue_time };
	for (int i = 0; i < 4; i++)
		if (src[i])
			p->h[i] = *src[i];
	return p;
}

static void assert_window_q(const struct hist *now, const struct hist *prev, double q, double want_ms)
{
	assert_non_null(now);
	struct hist *w = malloc(sizeof(*w));
	assert_non_null(w);
	hist_delta(w, now, prev);
	double got = hist_quantile(w, q);
	free(w);
	if (!(fabs(got - want_ms) <= 0.02 * want_ms))
		print_error("q%.2f: %.3f ms, want %.3f ms\n", q, got, want_ms);
	assert_true(fabs(got - want_ms) <= 0.02 * want_ms);
}

/* p95 and p99 of the window since s of ttft, tbt, e2e, queue time */
static void assert_windows(const struct hal_serving *sv, const struct snap *s, const double want[4][2])
{
	const struct hist *now[4] = { sv->ttft, sv->tbt, sv->e2e, sv->queue_time };
	for (int i = 0; i < 4; i++) {
		if (isnan(want[i][0]))
			continue;
		assert_window_q(now[i], &s->h[i], 0.95, want[i][0]);
		assert_window_q(now[i], &s->h[i], 0.99, want[i][1]);
	}
}

static void test_vllm_current_names(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "labels", "model_name=llama-8b", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-a.txt", NULL });
	assert_int_equal(sv.requests_completed, 140);
	assert_int_equal(sv.running, 2);
	assert_true(sv.kv_usage_valid);
	assert_float_equal(sv.kv_usage_frac, 0.10, 1e-12);
	assert_non_null(sv.queue_time);
	assert_int_equal(sv.n_replicas, 1);
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-b.txt", NULL });
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 240); /* stop + length + abort */
	assert_int_equal(sv.tokens_generated, 30000);
	assert_int_equal(sv.running, 8);
	assert_int_equal(sv.queue_len, 3);
	assert_float_equal(sv.kv_usage_frac, 0.42, 1e-12);
	const double want[4][2] = { { 250, 450 }, { 150, 200 + 100 * 10.0 / 15 }, { 5000, 9000 }, { 800, 1250 } };
	assert_windows(&sv, s, want);
	assert_int_equal(sv.queue_time->n - s->h[3].n, 100);
	/* _sum carried over: the window's mean queue time */
	assert_float_equal((sv.queue_time->sum_ms - s->h[3].sum_ms) / 100, 300.0, 1e-6);
	free(s);
	dev_close(&d);
}

/* vLLM before the renames: time_per_output_token_seconds and
 * gpu_cache_usage_perc, V0's shorter bucket lists */
static void test_vllm_old_names(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "labels", "model_name=llama-8b", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.8-a.txt", NULL });
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.8-b.txt", NULL });
	assert_int_equal(sv.requests_completed, 160);
	assert_int_equal(sv.tokens_generated, 15000);
	assert_int_equal(sv.running, 7);
	assert_int_equal(sv.queue_len, 5);
	assert_true(sv.kv_usage_valid);
	assert_float_equal(sv.kv_usage_frac, 0.83, 1e-12);
	const double want[4][2] = { { 937.5, 987.5 }, { 87.5, 97.5 }, { 7500, 9500 }, { 2250, 2450 } };
	assert_windows(&sv, s, want);
	free(s);
	dev_close(&d);
}

/* SGLang's documented example (one scrape: everything so far is the
 * window): the older time_per_output_token name, no request counter (the
 * e2e histogram counts the requests), no queue-time histogram */
static void test_sglang_documented(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "format", "sglang", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	struct snap *zero = calloc(1, sizeof(*zero));
	assert_non_null(zero);
	replay_ok(&d, &sv, (const char *const[]){ "sglang-doc.txt", NULL });
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 11228);
	assert_int_equal(sv.tokens_generated, 7557572);
	assert_int_equal(sv.running, 162);
	assert_int_equal(sv.queue_len, 2826);
	assert_true(sv.kv_usage_valid);
	assert_float_equal(sv.kv_usage_frac, 0.28, 1e-12);
	assert_null(sv.queue_time);
	/* TTFT and e2e: p95 past the last finite bound, which PromQL answers */
	const double want[4][2] = { { 30000, 30000 }, { 149.7914, 632.2765 }, { 60000, 60000 }, { NAN, NAN } };
	assert_windows(&sv, zero, want);
	free(zero);
	dev_close(&d);
}

static void test_sglang_current_names(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "format", "sglang", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "sglang-current-a.txt", NULL });
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "sglang-current-b.txt", NULL });
	assert_int_equal(sv.requests_completed, 500); /* sglang:num_requests_total */
	assert_int_equal(sv.tokens_generated, 60000);
	assert_int_equal(sv.running, 162);
	assert_int_equal(sv.queue_len, 17);
	assert_float_equal(sv.kv_usage_frac, 0.28, 1e-12);
	const double want[4][2] = { { 925, 1500 }, { 20, 40 }, { 7250, 9000 }, { 500, 900 } };
	assert_windows(&sv, s, want);
	free(s);
	dev_close(&d);
}

/* Triton: request and queue time from the microsecond counters (each
 * request of the window at the window's mean), first response from the
 * histogram (ms); the summary block parses and is not read */
static void test_triton(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "format", "triton", "labels",
				   "model=llama", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "triton-a.txt", NULL });
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "triton-b.txt", NULL });
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 200);
	assert_int_equal(sv.queue_len, 2);
	assert_false(sv.kv_usage_valid);
	assert_non_null(sv.queue_time);
	/* first response: 10 more in (0,100], 30 in (100,500], 50 in (500,2000], 10 in (2000,5000] */
	const double want[4][2] = { { 3500, 4700 }, { NAN, NAN }, { 80, 80 }, { 25, 25 } };
	assert_windows(&sv, s, want);
	assert_int_equal(sv.e2e->n - s->h[2].n, 100);
	assert_int_equal(sv.queue_time->n - s->h[3].n, 100);
	free(s);
	dev_close(&d);
}

/* Two replicas of one slice (BF16 and FP8) with the same bounds: summed
 * bucket by bucket; gauges added, the KV use the fuller one; then the FP8
 * replica restarts while the BF16 one carries on */
static void test_replica_pair(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://bf16:8000/metrics", "replica_urls", "http://fp8:8000/metrics",
				   "labels", "model_name=llama-8b", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-a.txt", "vllm-fp8-v0.12-a.txt", NULL });
	assert_int_equal(sv.n_replicas, 2);
	assert_int_equal(sv.requests_completed, 140 + 50);
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-b.txt", "vllm-fp8-v0.12-b.txt", NULL });
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 240 + 150);
	assert_int_equal(sv.tokens_generated, 30000 + 12000);
	assert_int_equal(sv.running, 8 + 6);
	assert_int_equal(sv.queue_len, 3 + 1);
	assert_float_equal(sv.kv_usage_frac, 0.61, 1e-12);
	const double want[4][2] = { { 200, 400 }, { 100, 200 }, { 2500, 8000 }, { 500, 1000 } };
	assert_windows(&sv, s, want);
	assert_int_equal(sv.ttft->n - s->h[0].n, 200);
	struct snap *s2 = snap_take(&sv);
	replay(&d, &sv, (const char *const[]){ "vllm-v0.12-c.txt", "vllm-fp8-v0.12-c-restarted.txt", NULL });
	assert_true(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_RESET);
	/* BF16 +20, FP8 counted from zero: +10, never minus its history */
	assert_int_equal(sv.requests_completed, 390 + 20 + 10);
	assert_int_equal(sv.ttft->n - s2->h[0].n, 30);
	assert_int_equal(sv.running, 4 + 1);
	free(s);
	free(s2);
	dev_close(&d);
}

/* A replica pair on two vLLM releases: old and new names, different TTFT,
 * TBT and e2e bounds. Not mergeable bucket by bucket: each replica's
 * increase goes into the log buckets on its own (the documented fallback),
 * so the window holds both: p95 rank 190 of 200 is the 10th of the 20
 * BF16 requests in (0.75,1] s, 875 ms; p99 rank 198 is 975 ms. */
static void test_replica_pair_bounds_differ(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://bf16:8000/metrics", "replica_urls", "http://fp8:8000/metrics",
				   "labels", "model_name=llama-8b", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.8-a.txt", "vllm-fp8-v0.12-a.txt", NULL });
	struct snap *s = snap_take(&sv);
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.8-b.txt", "vllm-fp8-v0.12-b.txt", NULL });
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 160 + 150);
	assert_float_equal(sv.kv_usage_frac, 0.83, 1e-12);
	assert_int_equal(sv.ttft->n - s->h[0].n, 200);
	assert_window_q(sv.ttft, &s->h[0], 0.95, 875);
	assert_window_q(sv.ttft, &s->h[0], 0.99, 975);
	free(s);
	dev_close(&d);
}

/* One replica's bad scrape fails the read, names that replica and commits
 * nothing of the other: the next good read's window is whole. */
static void test_replica_fault(void **state)
{
	(void)state;
	struct dev d;
	const char *const kv[] = { "url", "http://bf16:8000/metrics", "replica_urls", "http://fp8:8000/metrics",
				   "labels", "model_name=llama-8b", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-a.txt", "vllm-fp8-v0.12-a.txt", NULL });
	struct snap *s = snap_take(&sv);
	size_t l1;
	char *b1 = slurp("vllm-v0.12-b.txt", &l1);
	const char *cut = "vllm:num_requests_running{engine=\"0\"} 1\nvllm:kv_cache";
	const char *bodies[2] = { b1, cut };
	size_t lens[2] = { l1, strlen(cut) };
	assert_int_equal(hal_serving_replay(&d.dev, bodies, lens, 2, &sv), 0);
	assert_false(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_PARSE);
	assert_non_null(sv.fault_msg);
	assert_non_null(strstr(sv.fault_msg, "http://fp8:8000/metrics"));
	assert_int_equal(sv.requests_completed, 190); /* nothing of the BF16 scrape counted */
	free(b1);
	/* wrong number of bodies */
	assert_int_equal(hal_serving_replay(&d.dev, bodies, lens, 1, &sv), -EINVAL);
	replay_ok(&d, &sv, (const char *const[]){ "vllm-v0.12-b.txt", "vllm-fp8-v0.12-b.txt", NULL });
	assert_int_equal(sv.requests_completed, 390);
	assert_window_q(sv.ttft, &s->h[0], 0.95, 200);
	free(s);
	dev_close(&d);
}

/* Against two real HTTP servers (tests/integration/serving_replicas.sh
 * sets SERVING_PAIR="URL1 DIR1 URL2 DIR2": each serves DIRn/metrics):
 * the same pair as test_replica_pair, scraped; then a refused replica.
 * Skips without the servers. */
static void put(const char *dir, const char *fixture)
{
	size_t len;
	char *body = slurp(fixture, &len);
	char tmp[600], dst[600];
	snprintf(tmp, sizeof(tmp), "%s/.metrics.tmp", dir);
	snprintf(dst, sizeof(dst), "%s/metrics", dir);
	FILE *f = fopen(tmp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(body, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, dst), 0); /* the server never sees half a file */
	free(body);
}

static void test_replica_pair_http(void **state)
{
	(void)state;
	const char *env = getenv("SERVING_PAIR");
	char u1[256], d1[256], u2[256], d2[256];
	/* main runs this case only with SERVING_PAIR set */
	assert_non_null(env);
	assert_int_equal(sscanf(env, "%255s %255s %255s %255s", u1, d1, u2, d2), 4);
	struct dev d;
	const char *const kv[] = { "url", u1, "replica_urls", u2, "labels", "model_name=llama-8b",
				   "timeout_ms", "3000", NULL };
	assert_int_equal(dev_open(&d, kv), 0);
	struct hal_serving sv;
	put(d1, "vllm-v0.12-a.txt");
	put(d2, "vllm-fp8-v0.12-a.txt");
	assert_int_equal(d.dev.ops->read_serving(&d.dev, &sv), 0);
	if (!sv.valid)
		print_error("%s\n", sv.fault_msg ? sv.fault_msg : "");
	assert_true(sv.valid);
	assert_int_equal(sv.n_replicas, 2);
	struct snap *s = snap_take(&sv);
	put(d1, "vllm-v0.12-b.txt");
	put(d2, "vllm-fp8-v0.12-b.txt");
	assert_int_equal(d.dev.ops->read_serving(&d.dev, &sv), 0);
	assert_true(sv.valid);
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 390);
	assert_int_equal(sv.running, 14);
	assert_int_equal(sv.queue_len, 4);
	assert_float_equal(sv.kv_usage_frac, 0.61, 1e-12);
	const double want[4][2] = { { 200, 400 }, { 100, 200 }, { 2500, 8000 }, { 500, 1000 } };
	assert_windows(&sv, s, want);
	struct snap *s2 = snap_take(&sv);
	put(d1, "vllm-v0.12-c.txt");
	put(d2, "vllm-fp8-v0.12-c-restarted.txt");
	assert_int_equal(d.dev.ops->read_serving(&d.dev, &sv), 0);
	assert_true(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_RESET);
	assert_int_equal(sv.requests_completed, 420);
	assert_int_equal(sv.ttft->n - s2->h[0].n, 30);
	free(s);
	free(s2);
	dev_close(&d);

	/* the second replica refuses: the read is invalid and says which */
	const char *const kd[] = { "url", u1, "replica_urls", "http://127.0.0.1:9/metrics", "labels",
				   "model_name=llama-8b", "timeout_ms", "3000", NULL };
	assert_int_equal(dev_open(&d, kd), 0);
	assert_int_equal(d.dev.ops->read_serving(&d.dev, &sv), 0);
	assert_false(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_CONNECT);
	assert_non_null(strstr(sv.fault_msg, "127.0.0.1:9/metrics"));
	dev_close(&d);
}

static bool has_diag(const struct diag_list *l, const char *path, const char *code)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].path, path) && !strcmp(l->v[i].code, code))
			return true;
	return false;
}

static void test_replica_options(void **state)
{
	(void)state;
	struct dev d;
	const char *const bad[][7] = {
		{ "url", "http://a/m", "replica_urls", "ftp://b/m", NULL },
		{ "url", "http://a/m", "replica_urls", "http://b/m http://a/m", NULL },
		{ "url", "http://a/m", "replica_urls", "http://b/m http://c/m http://d/m http://e/m", NULL },
		{ "replica_urls", "http://b/m", NULL },
		{ "url", "http://a/m", "format", "tgi", NULL },
	};
	const char *const code[] = { "bad-value", "duplicate-url", "range", "missing-key", "bad-enum" };
	const char *const path[] = { "options.replica_urls", "options.replica_urls", "options.replica_urls",
				     "options.replica_urls", "options.format" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dev_open(&d, bad[i]), -EINVAL);
		if (!has_diag(&d.diags, path[i], code[i]))
			print_error("case %zu: no %s %s\n", i, path[i], code[i]);
		assert_true(has_diag(&d.diags, path[i], code[i]));
		dev_close(&d);
	}
	/* blanks and tabs separate; four endpoints in all are allowed */
	const char *const ok[] = { "url", "http://a/m", "replica_urls", " http://b/m\thttp://c/m  http://d/m ", NULL };
	assert_int_equal(dev_open(&d, ok), 0);
	dev_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vllm_current_names),
		cmocka_unit_test(test_vllm_old_names),
		cmocka_unit_test(test_sglang_documented),
		cmocka_unit_test(test_sglang_current_names),
		cmocka_unit_test(test_triton),
		cmocka_unit_test(test_replica_pair),
		cmocka_unit_test(test_replica_pair_bounds_differ),
		cmocka_unit_test(test_replica_fault),
		cmocka_unit_test(test_replica_options),
	};
	const struct CMUnitTest pair[] = {
		cmocka_unit_test(test_replica_pair_http),
	};
	int rc = cmocka_run_group_tests_name("local", tests, NULL, NULL);
	/* Not a skip: ctest's integ_serving_replicas runs this binary again
	 * with two stand-in replicas and SERVING_PAIR set, and that runs it. */
	if (!getenv("SERVING_PAIR")) {
		printf("test_serving_metrics: test_replica_pair_http runs under "
		       "integ_serving_replicas (SERVING_PAIR unset here)\n");
		return rc;
	}
	return rc | cmocka_run_group_tests_name("pair", pair, NULL, NULL);
}
