/* The serving backend. Option errors, capabilities, the quality datagram
 * socket and a refused connection run everywhere; the scrapes run against
 * tests/integration/prom_server.py when SERVING_TEST_URL is set (by
 * tests/integration/serving_http.sh, ctest's integ_serving_http); without it
 * only the local group runs (main), so no case reports a skip as a pass. Expected values
 * are hand-computed in tests/data/prom/README.md. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/diag.h"
#include "common/hist.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"

#define MAXKV 24

struct devh {
	struct hal_dev dev;
	struct diag_list diags;
	const char *keys[MAXKV], *vals[MAXKV];
	char bufs[MAXKV][512];
};

/* kv: NULL-terminated key, value, key, value ... ("%s" in a value is the base URL) */
static int open_kv_clock(struct devh *h, const char *const *kv, const struct govd_clock *clock)
{
	memset(h, 0, sizeof(*h));
	const char *base = getenv("SERVING_TEST_URL");
	size_t n = 0;
	for (; kv[2 * n]; n++) {
		assert_true(n < MAXKV);
		h->keys[n] = kv[2 * n];
		const char *v = kv[2 * n + 1], *pct = strstr(v, "%s");
		if (pct)
			snprintf(h->bufs[n], sizeof(h->bufs[n]), "%.*s%s%s", (int)(pct - v), v,
				 base ? base : "http://127.0.0.1:1", pct + 2);
		else
			snprintf(h->bufs[n], sizeof(h->bufs[n]), "%s", v);
		h->vals[n] = h->bufs[n];
	}
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving", .n_opts = n, .keys = h->keys,
				   .values = h->vals, .clock = clock };
	h->dev.ops = &hal_serving_ops;
	return hal_serving_ops.open(&h->dev, &cfg, &h->diags);
}

static int open_kv(struct devh *h, const char *const *kv)
{
	return open_kv_clock(h, kv, NULL);
}

static void close_dev(struct devh *h)
{
	if (h->dev.priv)
		h->dev.ops->close(&h->dev);
	diag_clear(&h->diags);
}

static bool has_diag(const struct diag_list *l, const char *path, const char *code)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].path, path) && !strcmp(l->v[i].code, code))
			return true;
	return false;
}

static void test_option_errors(void **state)
{
	(void)state;
	struct devh h;
	const char *const bad[] = { "format", "openai", "labels", "model_name", "timeout_ms", "5",
				    "colour", "red", "precision", "file", NULL };
	assert_int_equal(open_kv(&h, bad), -EINVAL);
	assert_true(has_diag(&h.diags, "options.url", "missing-key"));
	assert_true(has_diag(&h.diags, "options.format", "bad-enum"));
	assert_true(has_diag(&h.diags, "options.labels", "bad-value"));
	assert_true(has_diag(&h.diags, "options.timeout_ms", "range"));
	assert_true(has_diag(&h.diags, "options.colour", "unknown-key"));
	assert_true(has_diag(&h.diags, "options.precision_target", "missing-key"));
	assert_true(has_diag(&h.diags, "options.slices", "missing-key"));
	assert_null(h.dev.priv);
	close_dev(&h);
	const char *const dup[] = { "url", "%s/metrics", "slices", "code,chat,code", NULL };
	assert_int_equal(open_kv(&h, dup), -EINVAL);
	assert_true(has_diag(&h.diags, "options.slices", "duplicate-slice"));
	close_dev(&h);
}

/* Capabilities follow the options. */
static void test_capabilities(void **state)
{
	(void)state;
	struct devh h;
	const char *const plain[] = { "url", "%s/metrics", NULL };
	assert_int_equal(open_kv(&h, plain), 0);
	assert_true(hal_can_read_serving(&h.dev));
	assert_false(hal_can_set_precision(&h.dev));
	assert_false(hal_can_read_quality(&h.dev));
	struct hal_sample smp;
	assert_int_equal(h.dev.ops->sample(&h.dev, &smp), -EOPNOTSUPP);
	close_dev(&h);
	const char *const full[] = { "url", "%s/metrics", "slices", "code", "precision", "exec",
				     "precision_target", "cat >/dev/null", "quality_samples_metric", "q_total",
				     NULL };
	assert_int_equal(open_kv(&h, full), 0);
	assert_true(hal_can_set_precision(&h.dev));
	assert_true(hal_can_read_quality(&h.dev));
	double f = 0.5;
	assert_int_equal(h.dev.ops->set_precision(&h.dev, &f, 2), -EINVAL); /* 1 slice configured */
	assert_int_equal(h.dev.ops->set_precision(&h.dev, &f, 1), 0);
	double nan_frac = NAN, big = 1.5;
	assert_int_equal(h.dev.ops->set_precision(&h.dev, &nan_frac, 1), -EINVAL);
	assert_int_equal(h.dev.ops->set_precision(&h.dev, &big, 1), -EINVAL);
	close_dev(&h);
}

/* Evidence on demand through the document: a shadow-rate ask keeps the INT8
 * shares in force and the reverse; the restore document carries no ask. */
static void test_shadow_rate_document(void **state)
{
	(void)state;
	char dir[] = "/tmp/govd-sv-shadow-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128], rd[512];
	snprintf(path, sizeof(path), "%s/precision.json", dir);
	const char *const kv[] = { "url", "%s/metrics", "slices", "code,chat", "precision", "file",
				   "precision_target", path, NULL };
	struct devh h;
	assert_int_equal(open_kv(&h, kv), 0);
	assert_true(hal_can_set_shadow_rate(&h.dev));
	double f[2] = { 0.5, 0 }, ask[2] = { 0, 0.25 }, bad[2] = { 0, 1.5 };
	assert_int_equal(h.dev.ops->set_shadow_rate(&h.dev, bad, 2), -EINVAL);
	assert_int_equal(h.dev.ops->set_shadow_rate(&h.dev, ask, 1), -EINVAL);
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	assert_int_equal(h.dev.ops->set_shadow_rate(&h.dev, ask, 2), 0);
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	size_t n = fread(rd, 1, sizeof(rd) - 1, fp);
	fclose(fp);
	rd[n] = '\0';
	assert_non_null(strstr(rd, "\"slices\":{\"code\":0.5,\"chat\":0"));
	assert_non_null(strstr(rd, "\"shadow_rate\":{\"chat\":0.25}"));
	f[0] = 1;
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	fp = fopen(path, "r");
	n = fread(rd, 1, sizeof(rd) - 1, fp);
	fclose(fp);
	rd[n] = '\0';
	assert_non_null(strstr(rd, "\"shadow_rate\":{\"chat\":0.25}")); /* the ask stays */
	assert_int_equal(h.dev.ops->restore(&h.dev), 0);
	fp = fopen(path, "r");
	n = fread(rd, 1, sizeof(rd) - 1, fp);
	fclose(fp);
	rd[n] = '\0';
	assert_null(strstr(rd, "shadow_rate"));
	close_dev(&h);
	unlink(path);
	rmdir(dir);
}

static void test_connection_refused(void **state)
{
	(void)state;
	struct devh h;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "slices", "code,chat", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	assert_int_equal(h.dev.ops->read_serving(&h.dev, &sv), 0);
	assert_false(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_CONNECT);
	assert_non_null(sv.fault_msg);
	assert_non_null(strstr(sv.fault_msg, "127.0.0.1:1"));
	assert_int_equal(sv.ttft->n, 0); /* nothing entered the histograms */
	assert_int_equal(sv.e2e->n, 0);
	/* slice names are known even when the server is down */
	assert_int_equal(sv.n_slices, 2);
	assert_string_equal(sv.slice_name[1], "chat");
	assert_string_equal(hal_serving_fault_name(HAL_SVF_CONNECT), "connect");
	close_dev(&h);
}

/* confirm_file of any size (up to 1 MiB) is read whole, the same way the
 * file actuator reads its own document; this run continues its generation. */
static void test_confirm_file_large(void **state)
{
	(void)state;
	char dir[] = "/tmp/govd-cf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/applied.json", dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{\"note\":\"", fp);
	for (int i = 0; i < 10000; i++)
		fputc('x', fp);
	fputs("\",\"precision\":{\"generation\":41}}\n", fp);
	fclose(fp);
	struct devh h;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "slices", "code", "precision", "exec",
				   "precision_target", "cat >/dev/null", "confirm_file", path,
				   "confirm_field", "precision.generation", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	assert_int_equal(h.dev.ops->read_serving(&h.dev, &sv), 0);
	assert_int_equal(sv.precision_gen_applied, 41);
	double f = 0.5;
	assert_int_equal(h.dev.ops->set_precision(&h.dev, &f, 1), 0);
	assert_int_equal(h.dev.ops->read_serving(&h.dev, &sv), 0);
	assert_int_equal(sv.precision_gen_set, 42);
	close_dev(&h);
	unlink(path);
	rmdir(dir);
}

static uint64_t fixed_now(void *ctx)
{
	return *(const uint64_t *)ctx;
}

static int fixed_wait(void *ctx, uint64_t t_ms)
{
	*(uint64_t *)ctx = t_ms;
	return 0;
}

/* Timestamps on the clock the daemon hands in (one time base with the
 * other backends), not the backend's own CLOCK_MONOTONIC. */
static void test_clock(void **state)
{
	(void)state;
	static const struct govd_clock_ops ops = { fixed_now, fixed_wait };
	uint64_t t = 987654321;
	struct govd_clock clk = { &ops, &t };
	char dir[] = "/tmp/govd-qc-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/quality.sock", dir);
	struct devh h;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "slices", "code",
				   "quality_socket", path, NULL };
	assert_int_equal(open_kv_clock(&h, kv, &clk), 0);
	struct hal_serving sv;
	assert_int_equal(h.dev.ops->read_serving(&h.dev, &sv), 0);
	assert_int_equal(sv.t_ms, 987654321);
	struct hal_quality q;
	t = 987655321;
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_int_equal(q.t_ms, 987655321);
	close_dev(&h);
	rmdir(dir);
}

static void send_dgram(const char *path, const char *msg)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&sa, sizeof(sa)),
			 (ssize_t)strlen(msg));
	close(fd);
}

static void test_quality_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/govd-q-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/quality.sock", dir);
	struct devh h;
	const char *kv[] = { "url", "http://127.0.0.1:1/metrics", "slices", "code,chat",
			     "quality_socket", path, NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	assert_true(hal_can_read_quality(&h.dev));
	struct hal_quality q;
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_true(q.valid);
	assert_int_equal(q.n_slices, 2);
	assert_int_equal(q.samples[0], 0);
	assert_int_equal(q.delta_valid, 0);
	assert_int_equal(q.fault_bits, 0);

	send_dgram(path, "{\"slice\":\"code\",\"samples\":10,\"mismatches\":1}");
	send_dgram(path, "{\"slice\":\"code\",\"samples\":5,\"mismatches\":0}");
	send_dgram(path, "{\"slice\":\"chat\",\"delta\":-0.004}");
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_true(q.valid);
	assert_int_equal(q.samples[0], 15);
	assert_int_equal(q.mismatches[0], 1);
	assert_int_equal(q.samples[1], 0);
	assert_float_equal(q.delta[1], -0.004, 1e-15);
	assert_int_equal(q.delta_valid, 1u << 1);
	assert_int_equal(q.fault_bits, 0);
	assert_int_equal(q.malformed, 0);

	/* malformed datagrams are counted and named, the good one still counts */
	send_dgram(path, "{\"slice\":\"code\",\"samples\":3");
	send_dgram(path, "{\"slice\":\"math\",\"samples\":3,\"mismatches\":0}");
	send_dgram(path, "{\"slice\":\"code\",\"samples\":3,\"mismatches\":4}");
	send_dgram(path, "{\"slice\":\"code\",\"samples\":-1}");
	send_dgram(path, "[1,2]");
	send_dgram(path, "{\"slice\":\"chat\"}");
	send_dgram(path, "{\"slice\":\"chat\",\"samples\":2,\"mismatches\":2}");
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_int_equal(q.malformed, 6);
	assert_true(q.fault_bits & HAL_SVF_QUALITY_MSG);
	assert_non_null(q.fault_msg);
	assert_int_equal(q.samples[0], 15);
	assert_int_equal(q.samples[1], 2);
	assert_int_equal(q.mismatches[1], 2);
	/* cumulative: nothing new, nothing lost */
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_int_equal(q.samples[0], 15);
	assert_int_equal(q.fault_bits, 0);
	/* FP8's answers (the precision ladder) count apart; INT8's untouched;
	 * an unknown mode, or a delta with fp8, is malformed */
	send_dgram(path, "{\"slice\":\"code\",\"mode\":\"fp8\",\"samples\":7,\"mismatches\":2}");
	send_dgram(path, "{\"slice\":\"code\",\"mode\":\"int8\",\"samples\":1,\"mismatches\":0}");
	send_dgram(path, "{\"slice\":\"code\",\"mode\":\"fp4\",\"samples\":1}");
	send_dgram(path, "{\"slice\":\"code\",\"mode\":\"fp8\",\"delta\":0.1}");
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_int_equal(q.samples_fp8[0], 7);
	assert_int_equal(q.mismatches_fp8[0], 2);
	assert_int_equal(q.samples[0], 16);
	assert_int_equal(q.mismatches[0], 1);
	assert_int_equal(q.malformed, 8);
	close_dev(&h);
	/* the socket is removed on close */
	assert_int_equal(access(path, F_OK), -1);
	rmdir(dir);
}

/* ---- against prom_server.py ---- */

static const char *base_url(void)
{
	return getenv("SERVING_TEST_URL");
}

/* The server cases run only in the server group (main), which runs when
 * SERVING_TEST_URL is set; called without it is a test bug, not a skip. */
#define NEED_SERVER() assert_non_null(base_url())

static void read_ok(struct devh *h, struct hal_serving *sv)
{
	assert_int_equal(h->dev.ops->read_serving(&h->dev, sv), 0);
	if (!sv->valid)
		print_error("scrape invalid: faults 0x%x %s\n", sv->fault_bits, sv->fault_msg ? sv->fault_msg : "");
	assert_true(sv->valid);
}

/* The governor's path: hist_quantile of the delta of two cumulative
 * snapshots. The log buckets are 2 % wide, so the hand-computed
 * histogram_quantile values hold within 2 %. */
static void assert_window_q(const struct hist *now, const struct hist *prev, double q, double want_ms)
{
	struct hist *d = malloc(sizeof(*d));
	assert_non_null(d);
	hist_delta(d, now, prev);
	double got = hist_quantile(d, q);
	free(d);
	if (!(fabs(got - want_ms) <= 0.02 * want_ms))
		print_error("q%.2f: %.3f ms, want %.3f ms\n", q, got, want_ms);
	assert_true(fabs(got - want_ms) <= 0.02 * want_ms);
}

/* Snapshots of the three cumulative histograms (read_serving's are valid
 * only until the next call). */
struct snap {
	struct hist h[3];
};

static struct snap *snap_take(const struct hal_serving *sv)
{
	struct snap *p = malloc(sizeof(*p));
	assert_non_null(p);
	p->h[0] = *sv->ttft;
	p->h[1] = *sv->tbt;
	p->h[2] = *sv->e2e;
	return p;
}

static void test_vllm_windows_and_reset(void **state)
{
	(void)state;
	NEED_SERVER();
	struct devh h;
	const char *const kv[] = { "url", "%s/vllm/metrics?seq=llama", "labels", "model_name=llama",
				   "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	read_ok(&h, &sv);
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 140);
	assert_int_equal(sv.tokens_generated, 27453);
	assert_int_equal(sv.running, 8);
	assert_int_equal(sv.queue_len, 3);
	assert_int_equal(sv.ttft->n, 140); /* first scrape: everything so far */
	struct snap *s1 = snap_take(&sv);

	read_ok(&h, &sv);
	assert_int_equal(sv.fault_bits, 0);
	assert_int_equal(sv.requests_completed, 240);
	assert_int_equal(sv.tokens_generated, 30453);
	assert_int_equal(sv.running, 5);
	assert_int_equal(sv.queue_len, 0);
	assert_int_equal(sv.ttft->n - s1->h[0].n, 100);
	assert_window_q(sv.ttft, &s1->h[0], 0.95, 250.0);
	assert_window_q(sv.ttft, &s1->h[0], 0.99, 450.0);
	assert_window_q(sv.tbt, &s1->h[1], 0.95, 150.0);
	assert_window_q(sv.tbt, &s1->h[1], 0.99, 200.0 + 100.0 * 10.0 / 15.0);
	assert_window_q(sv.e2e, &s1->h[2], 0.95, 5000.0);
	assert_window_q(sv.e2e, &s1->h[2], 0.99, 9000.0);
	/* _sum carried over: the window mean */
	assert_float_equal((sv.e2e->sum_ms - s1->h[2].sum_ms) / 100.0, 2100.0, 1e-6);
	struct snap *s2 = snap_take(&sv);

	/* the server restarted: counters went down */
	read_ok(&h, &sv);
	assert_true(sv.fault_bits & HAL_SVF_RESET);
	assert_int_equal(sv.requests_completed, 250); /* 240 + 10 after the restart */
	assert_int_equal(sv.tokens_generated, 30953);
	assert_int_equal(sv.ttft->n, 250); /* still monotone: no wrap-around */
	assert_int_equal(sv.ttft->n - s2->h[0].n, 10);
	/* window since scrape 1: the 100 of scrape 2 plus the 10 new ones,
	 * rank 104.5 in (0.1,0.25] = 0.1 + 0.15 * 14.5/15 */
	assert_window_q(sv.ttft, &s1->h[0], 0.95, 245.0);
	free(s1);
	free(s2);
	close_dev(&h);

	/* the other model on the same endpoint is kept apart */
	const char *const km[] = { "url", "%s/vllm/metrics?seq=mistral", "labels", "model_name=mistral",
				   "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, km), 0);
	read_ok(&h, &sv);
	assert_int_equal(sv.requests_completed, 50);
	s1 = snap_take(&sv);
	read_ok(&h, &sv);
	assert_window_q(sv.ttft, &s1->h[0], 0.95, 2425.0);
	assert_int_equal(sv.requests_completed, 100);
	free(s1);
	close_dev(&h);
}

static void test_triton(void **state)
{
	(void)state;
	NEED_SERVER();
	struct devh h;
	const char *const kv[] = { "url", "%s/triton/metrics?seq=t", "format", "triton", "labels",
				   "model=llama", "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	read_ok(&h, &sv);
	assert_int_equal(sv.requests_completed, 100);
	assert_int_equal(sv.tokens_generated, 100);
	assert_int_equal(sv.queue_len, 4);
	struct snap *s1 = snap_take(&sv);
	read_ok(&h, &sv);
	assert_int_equal(sv.fault_bits, 0);
	assert_window_q(sv.ttft, &s1->h[0], 0.95, 100.0 + 400.0 * 28.0 / 30.0);
	assert_window_q(sv.ttft, &s1->h[0], 0.99, 100.0 + 400.0 * 29.6 / 30.0);
	assert_int_equal(sv.tbt->n, 0); /* Triton offers no inter-token histogram */
	assert_int_equal(sv.queue_len, 2);
	/* each interval's requests enter the e2e histogram at the interval mean */
	assert_int_equal(sv.e2e->n, 200);
	assert_true(fabs(sv.e2e->sum_ms - (100 * 50.0 + 100 * 80.0)) < 1e-6);
	assert_window_q(sv.e2e, &s1->h[2], 0.5, 80.0);
	assert_window_q(sv.e2e, &s1->h[2], 0.99, 80.0);
	free(s1);
	close_dev(&h);
}

struct fault_case {
	const char *url, *format, *labels;
	uint32_t fault;
	const char *msg;
};

static void test_scrape_faults(void **state)
{
	(void)state;
	NEED_SERVER();
	static const struct fault_case cases[] = {
		{ "%s/hang", "vllm", "", HAL_SVF_TIMEOUT, "/hang" },
		{ "%s/500", "vllm", "", HAL_SVF_HTTP, "HTTP 500" },
		{ "%s/nothing-here", "vllm", "", HAL_SVF_HTTP, "HTTP 404" },
		{ "%s/malformed", "vllm", "", HAL_SVF_PARSE, "expected ',' or '}' after label value at 3:9" },
		{ "%s/partial", "vllm", "", HAL_SVF_PARSE, "truncated input" },
		{ "%s/triton/metrics?seq=f1", "vllm", "", HAL_SVF_MISSING, "vllm:time_to_first_token_seconds" },
		{ "%s/vllm/metrics?seq=f2", "vllm", "model_name=nope", HAL_SVF_MISSING, "model_name=\"nope\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct devh h;
		const char *const kv[] = { "url", cases[i].url, "format", cases[i].format, "labels",
					   cases[i].labels, "timeout_ms", "300", NULL };
		assert_int_equal(open_kv(&h, kv), 0);
		struct hal_serving sv;
		assert_int_equal(h.dev.ops->read_serving(&h.dev, &sv), 0);
		if (sv.valid || !(sv.fault_bits & cases[i].fault) || !sv.fault_msg ||
		    !strstr(sv.fault_msg, cases[i].msg))
			print_error("case %zu: valid %d faults 0x%x msg '%s'\n", i, sv.valid, sv.fault_bits,
				    sv.fault_msg ? sv.fault_msg : "(null)");
		assert_false(sv.valid);
		assert_int_equal(sv.ttft->n, 0);
		assert_true(sv.fault_bits & cases[i].fault);
		assert_non_null(strstr(sv.fault_msg, cases[i].msg));
		assert_int_equal(sv.requests_completed, 0); /* nothing stale passed as fresh */
		close_dev(&h);
	}
}

/* Requests of method to path the stand-in server has seen (its /hits). */
static long server_hits(const char *method, const char *path)
{
	char url[512], body[32] = "";
	snprintf(url, sizeof(url), "%s/hits?m=%s&p=%s", base_url(), method, path);
	FILE *f = fmemopen(body, sizeof(body) - 1, "w");
	assert_non_null(f);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f); /* default callback: fwrite */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_cleanup(c);
	fclose(f);
	return strtol(body, NULL, 10);
}

static json_t *latest_record(void)
{
	const char *dir = getenv("SERVING_TEST_RECORD");
	assert_non_null(dir);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int best = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int n;
		if (sscanf(e->d_name, "precision-%d.json", &n) == 1 && !strstr(e->d_name, ".tmp") && n > best)
			best = n;
	}
	closedir(d);
	assert_true(best > 0);
	char p[512];
	snprintf(p, sizeof(p), "%s/precision-%d.json", dir, best);
	json_error_t err;
	json_t *j = json_load_file(p, 0, &err);
	assert_non_null(j);
	return j;
}

static void test_precision_http(void **state)
{
	(void)state;
	NEED_SERVER();
	struct devh h;
	const char *const kv[] = { "url", "%s/generic/metrics?seq=p", "format", "generic", "slices",
				   "code,chat", "precision", "http", "precision_target", "%s/precision",
				   "confirm_url", "%s/applied", "confirm_grace_ms", "600000",
				   "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	read_ok(&h, &sv);
	const double f[] = { 0.5, 0.25 };
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	json_t *j = latest_record();
	uint64_t gen = (uint64_t)json_integer_value(json_object_get(j, "generation"));
	assert_true(gen >= 1);
	json_t *sl = json_object_get(j, "slices");
	assert_float_equal(json_number_value(json_object_get(sl, "code")), 0.5, 0);
	assert_float_equal(json_number_value(json_object_get(sl, "chat")), 0.25, 0);
	assert_true(json_integer_value(json_object_get(j, "updated_ms")) > 0);
	json_decref(j);
	read_ok(&h, &sv);
	assert_int_equal(sv.precision_gen_set, gen);
	assert_int_equal(sv.precision_gen_applied, gen);
	assert_false(sv.fault_bits & HAL_SVF_ACTUATION);
	close_dev(&h);

	/* the server lags one generation behind: an actuation fault once the
	 * grace is over (0 here) */
	const char *const kb[] = { "url", "%s/generic/metrics?seq=p2", "format", "generic", "slices",
				   "code,chat", "precision", "http", "precision_target", "%s/precision",
				   "confirm_url", "%s/applied-behind", "confirm_grace_ms", "0",
				   "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, kb), 0);
	read_ok(&h, &sv);
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	read_ok(&h, &sv);
	assert_true(sv.fault_bits & HAL_SVF_ACTUATION);
	assert_non_null(strstr(sv.fault_msg, "not applied"));
	close_dev(&h);

	/* bounded retries: 503 then 200 */
	const char *const kf[] = { "url", "%s/generic/metrics", "format", "generic", "slices", "code,chat",
				   "precision", "http", "precision_target", "%s/precision-flaky",
				   "precision_retries", "2", NULL };
	assert_int_equal(open_kv(&h, kf), 0);
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	close_dev(&h);
	const char *const k0[] = { "url", "%s/generic/metrics", "format", "generic", "slices", "code,chat",
				   "precision", "http", "precision_target", "%s/precision-flaky",
				   "precision_retries", "0", NULL };
	assert_int_equal(open_kv(&h, k0), 0);
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), -EIO);
	close_dev(&h);
	/* a server that never answers: the POST gives up after the timeout,
	 * which all tries share, so no retry is left after a hung first try */
	const char *const kh[] = { "url", "%s/generic/metrics", "format", "generic", "slices", "code,chat",
				   "precision", "http", "precision_target", "%s/hang",
				   "precision_timeout_ms", "300", "precision_retries", "3", NULL };
	assert_int_equal(open_kv(&h, kh), 0);
	long before = server_hits("POST", "/hang");
	uint64_t t0 = govd_mono_ms();
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), -ETIMEDOUT);
	uint64_t took = govd_mono_ms() - t0;
	/* The property: all tries together cost at most the one timeout (four
	 * hung tries would take 1.2 s). Counting the server's hits instead
	 * failed under load, when the first try ended early for another
	 * reason and a retry still fit the deadline. */
	assert_true(took < 300 + 250);
	assert_true(server_hits("POST", "/hang") - before >= 1);
	close_dev(&h);
	/* no retry unless asked for: the governor tries again next tick */
	const char *const kd[] = { "url", "%s/generic/metrics", "format", "generic", "slices", "code,chat",
				   "precision", "http", "precision_target", "%s/precision-flaky", NULL };
	assert_int_equal(open_kv(&h, kd), 0);
	before = server_hits("POST", "/precision-flaky");
	int rc1 = h.dev.ops->set_precision(&h.dev, f, 2);
	int rc2 = h.dev.ops->set_precision(&h.dev, f, 2);
	assert_true((rc1 == -EIO) != (rc2 == -EIO)); /* every other POST fails */
	assert_int_equal(server_hits("POST", "/precision-flaky") - before, 2);
	close_dev(&h);
}

/* Named metrics, quality counters per slice from the scrape, and the
 * applied generation as a metric (the file actuator continues it). */
static void test_generic_quality_confirm(void **state)
{
	(void)state;
	NEED_SERVER();
	char dir[] = "/tmp/govd-sv-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/precision.json", dir);
	struct devh h;
	const char *const kv[] = { "url", "%s/generic/metrics?seq=g", "format", "generic",
				   "ttft_metric", "srv_ttft_ms", "latency_unit", "ms",
				   "requests_metric", "srv_requests_total", "waiting_metric", "srv_queue",
				   "slices", "code,chat", "quality_samples_metric", "eval_samples_total",
				   "quality_mismatches_metric", "eval_mismatches_total",
				   "confirm_metric", "srv_precision_generation", "confirm_grace_ms", "600000",
				   "precision", "file", "precision_target", path, "timeout_ms", "2000", NULL };
	assert_int_equal(open_kv(&h, kv), 0);
	struct hal_serving sv;
	struct hal_quality q;
	read_ok(&h, &sv);
	assert_int_equal(sv.requests_completed, 40);
	assert_int_equal(sv.queue_len, 7);
	assert_int_equal(sv.ttft->n, 40);
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0); /* same scrape, no new GET */
	assert_true(q.valid);
	assert_int_equal(q.samples[0], 100);
	assert_int_equal(q.mismatches[0], 3);
	assert_int_equal(q.samples[1], 50);
	assert_int_equal(q.mismatches[1], 1);
	read_ok(&h, &sv);
	assert_int_equal(sv.precision_gen_applied, 7);
	assert_int_equal(sv.requests_completed, 45);
	const double f[] = { 1.0, 0.0 };
	assert_int_equal(h.dev.ops->set_precision(&h.dev, f, 2), 0);
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "generation")), 8); /* continues 7 */
	json_decref(j);
	assert_int_equal(h.dev.ops->read_quality(&h.dev, &q), 0);
	assert_int_equal(q.samples[0], 160);
	assert_int_equal(q.mismatches[0], 5);
	read_ok(&h, &sv);
	assert_int_equal(sv.precision_gen_set, 8);
	assert_false(sv.fault_bits & HAL_SVF_ACTUATION); /* within the grace */
	close_dev(&h);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest local[] = {
		cmocka_unit_test(test_option_errors),
		cmocka_unit_test(test_capabilities),
		cmocka_unit_test(test_shadow_rate_document),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_confirm_file_large),
		cmocka_unit_test(test_quality_socket),
	};
	const struct CMUnitTest server[] = {
		cmocka_unit_test(test_vllm_windows_and_reset),
		cmocka_unit_test(test_triton),
		cmocka_unit_test(test_scrape_faults),
		cmocka_unit_test(test_precision_http),
		cmocka_unit_test(test_generic_quality_confirm),
	};
	int rc = cmocka_run_group_tests_name("local", local, NULL, NULL);
	/* Not skipped: ctest's integ_serving_http runs this binary again with
	 * the stand-in server and SERVING_TEST_URL set, and that runs them. */
	if (!base_url()) {
		printf("test_hal_serving: the %zu server cases run under integ_serving_http "
		       "(SERVING_TEST_URL unset here)\n", sizeof(server) / sizeof(server[0]));
		return rc;
	}
	return rc | cmocka_run_group_tests_name("server", server, NULL, NULL);
}
