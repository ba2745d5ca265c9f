/* Hardening, peers: scrapes whose values no server reports (issue 12,
 * item 7). `vllm:num_requests_running +Inf` was read as -9.2e18 running,
 * TBT buckets at 1e300 made the window p99 0.99 ms, NaN and -Inf counters
 * counted as valid. Each is now the named fault implausible-value, nothing
 * of that scrape counts, and the next plausible scrape is valid again.
 * Served by python3's http.server (tests/hardening/peer_servers.py http)
 * from tests/data/prom/vllm-1.txt with one line changed per case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/diag.h"
#include "common/hist.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"
#include "peer_util.h"

static char dir[64];
static struct peer srv;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* base with the first occurrence of from replaced by to, as dir/name */
static void write_case(const char *base, const char *name, const char *from, const char *to)
{
	const char *at = from ? strstr(base, from) : NULL;
	if (from)
		assert_non_null(at);
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (at) {
		fwrite(base, 1, (size_t)(at - base), f);
		fputs(to, f);
		fputs(at + strlen(from), f);
	} else {
		fputs(base, f);
	}
	fclose(f);
}

struct scase {
	const char *name, *from, *to, *msg;
};

static const struct scase cases[] = {
	{ "running-inf.txt", "vllm:num_requests_running{model_name=\"llama\"} 8.0",
	  "vllm:num_requests_running{model_name=\"llama\"} +Inf", "vllm:num_requests_running" },
	{ "running-neg.txt", "vllm:num_requests_running{model_name=\"llama\"} 8.0",
	  "vllm:num_requests_running{model_name=\"llama\"} -3", "gauge" },
	{ "waiting-huge.txt", "vllm:num_requests_waiting{model_name=\"llama\"} 3.0",
	  "vllm:num_requests_waiting{model_name=\"llama\"} 1e12", "vllm:num_requests_waiting" },
	{ "tokens-nan.txt", "vllm:generation_tokens_total{model_name=\"llama\"} 27453.0",
	  "vllm:generation_tokens_total{model_name=\"llama\"} NaN", "vllm:generation_tokens_total" },
	{ "success-neginf.txt", "{finished_reason=\"length\",model_name=\"llama\"} 131.0",
	  "{finished_reason=\"length\",model_name=\"llama\"} -Inf", "vllm:request_success_total" },
	{ "success-2e20.txt", "{finished_reason=\"length\",model_name=\"llama\"} 131.0",
	  "{finished_reason=\"length\",model_name=\"llama\"} 2e20", "counter" },
	{ "tbt-1e300.txt", "vllm:inter_token_latency_seconds_bucket{le=\"0.01\",model_name=\"llama\"}",
	  "vllm:inter_token_latency_seconds_bucket{le=\"1e300\",model_name=\"llama\"}",
	  "bucket bound above a day" },
	{ "ttft-count-nan.txt", "vllm:time_to_first_token_seconds_count{model_name=\"llama\"} 140.0",
	  "vllm:time_to_first_token_seconds_count{model_name=\"llama\"} NaN", "_count" },
	{ "ttft-sum-neg.txt", "vllm:time_to_first_token_seconds_sum{model_name=\"llama\"} 4.213",
	  "vllm:time_to_first_token_seconds_sum{model_name=\"llama\"} -4.213", "_sum" },
};

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/peer_scrape_XXXXXX");
	assert_non_null(mkdtemp(dir));
	const char *base = slurp("tests/data/prom/vllm-1.txt");
	write_case(base, "good.txt", NULL, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		write_case(base, cases[i].name, cases[i].from, cases[i].to);
	if (peer_start(&srv, "http", dir))
		fail_msg("peer_servers.py http did not start (python3 is a test dependency)");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	peer_stop(&srv);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int open_url(struct hal_dev *dev, const char *file)
{
	char url[160];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s", srv.port, file);
	const char *keys[] = { "url", "format", "labels", "timeout_ms" };
	const char *vals[] = { url, "vllm", "model_name=llama", "2000" };
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving", .n_opts = 4, .keys = keys,
				   .values = vals };
	struct diag_list dl = { 0 };
	dev->ops = &hal_serving_ops;
	int rc = hal_serving_ops.open(dev, &cfg, &dl);
	diag_print(&dl, stdout);
	diag_clear(&dl);
	return rc;
}

static void test_good_scrape_is_valid(void **state)
{
	(void)state;
	struct hal_dev dev;
	assert_int_equal(open_url(&dev, "good.txt"), 0);
	struct hal_serving sv;
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_true(sv.valid);
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.running, 8);
	dev.ops->close(&dev);
}

static void test_implausible_values_are_faults(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hal_dev dev;
		assert_int_equal(open_url(&dev, cases[i].name), 0);
		struct hal_serving sv;
		assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
		print_message("%-20s valid %d faults 0x%x: %s\n", cases[i].name, sv.valid, sv.fault_bits,
			      sv.fault_msg ? sv.fault_msg : "(none)");
		assert_false(sv.valid);
		assert_true(sv.fault_bits & HAL_SVF_IMPLAUSIBLE);
		assert_string_equal(hal_serving_fault_name(HAL_SVF_IMPLAUSIBLE), "implausible-value");
		assert_non_null(sv.fault_msg);
		assert_non_null(strstr(sv.fault_msg, cases[i].msg));
		/* nothing of it counted */
		assert_int_equal(sv.requests_completed, 0);
		assert_int_equal(sv.running, 0);
		assert_int_equal(sv.tbt->n, 0);
		dev.ops->close(&dev);
	}
}

/* A server that serves +Inf once and then recovers: the same device's
 * fault clears with the next plausible scrape. */
static void test_fault_clears_when_cause_does(void **state)
{
	(void)state;
	char good[128];
	snprintf(good, sizeof(good), "%s/good.txt", dir);
	write_case(slurp(good), "flip.txt", "vllm:num_requests_running{model_name=\"llama\"} 8.0",
		   "vllm:num_requests_running{model_name=\"llama\"} +Inf");
	struct hal_dev dev;
	assert_int_equal(open_url(&dev, "flip.txt"), 0);
	struct hal_serving sv;
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_false(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_IMPLAUSIBLE);
	write_case(slurp(good), "flip.txt", NULL, NULL);
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_true(sv.valid);
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.running, 8);
	assert_int_equal(sv.requests_completed, 140);
	dev.ops->close(&dev);
}

/* Quality counters in the scrape: an increase over quality_max_samples in
 * one read is dropped (re-based) and named; the scrape's other data still
 * count, and counting goes on from the new value. */
static void write_quality(const char *samples)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/q.txt", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(slurp("tests/data/prom/vllm-1.txt"), f);
	fprintf(f, "# TYPE eval_samples_total counter\neval_samples_total{model_name=\"llama\",slice=\"code\"} %s\n"
		   "# TYPE eval_mismatches_total counter\neval_mismatches_total{model_name=\"llama\",slice=\"code\"} 0\n",
		samples);
	fclose(f);
}

static void test_quality_counter_jump(void **state)
{
	(void)state;
	write_quality("100");
	char url[160];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/q.txt", srv.port);
	const char *keys[] = { "url", "format", "labels", "slices", "quality_samples_metric",
			       "quality_mismatches_metric" };
	const char *vals[] = { url, "vllm", "model_name=llama", "code", "eval_samples_total",
			       "eval_mismatches_total" };
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving", .n_opts = 6, .keys = keys,
				   .values = vals };
	struct diag_list dl = { 0 };
	struct hal_dev dev = { .ops = &hal_serving_ops };
	int rc = hal_serving_ops.open(&dev, &cfg, &dl);
	diag_print(&dl, stdout);
	diag_clear(&dl);
	assert_int_equal(rc, 0);
	struct hal_serving sv;
	struct hal_quality q;
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_int_equal(dev.ops->read_quality(&dev, &q), 0);
	assert_true(q.valid);
	assert_int_equal(q.samples[0], 100);
	write_quality("1e12");
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_int_equal(dev.ops->read_quality(&dev, &q), 0);
	print_message("quality counter 100 -> 1e12: faults 0x%x samples %llu: %s\n", q.fault_bits,
		      (unsigned long long)q.samples[0], q.fault_msg ? q.fault_msg : "");
	assert_true(q.fault_bits & HAL_SVF_IMPLAUSIBLE);
	assert_int_equal(q.samples[0], 100);
	assert_true(sv.valid); /* the rest of the scrape counted */
	write_quality("1000000000500");
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_int_equal(dev.ops->read_quality(&dev, &q), 0);
	assert_int_equal(q.fault_bits, 0);
	assert_int_equal(q.samples[0], 600);
	dev.ops->close(&dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_scrape_is_valid),
		cmocka_unit_test(test_implausible_values_are_faults),
		cmocka_unit_test(test_fault_clears_when_cause_does),
		cmocka_unit_test(test_quality_counter_jump),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
