/* Unit tests for hal/promtext: every syntax feature of the text format
 * 0.0.4, errors with line:col, and histogram_quantile over bucket deltas
 * (hand-computed expectations, counter resets, label separation, windows). */
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

#include "common/hist.h"
#include "hal/promtext.h"

static int parse_str(const char *text, struct prom_doc *doc, struct prom_error *err)
{
	return prom_parse(text, strlen(text), doc, err);
}

static const struct prom_sample *find(const struct prom_doc *d, const char *name, const char *lname,
				      const char *lval)
{
	for (size_t i = 0; i < d->n_samples; i++) {
		const struct prom_sample *s = &d->samples[i];
		if (strcmp(s->name, name))
			continue;
		if (!lname)
			return s;
		const char *v = prom_label_get(s, lname);
		if (v && !strcmp(v, lval))
			return s;
	}
	return NULL;
}

static void test_parse_all_features(void **state)
{
	(void)state;
	const char *text =
		"# HELP http_requests_total The total number of HTTP requests.\n"
		"# TYPE http_requests_total counter\n"
		"http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
		"http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n"
		"\n"
		"# Escaping in label values:\n"
		"msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
		"\n"
		"# Minimalistic line:\n"
		"metric_without_timestamp_and_labels 12.47\n"
		"# A weird metric from before the epoch:\n"
		"something_weird{problem=\"division by zero\"} +Inf -3982045\n"
		"nan_metric NaN\n"
		"neg_inf -Inf\n"
		"\t  spaced_metric \t { a = \"x\" , } \t 2E-3  \n"
		"# HELP http_request_duration_seconds A histogram of the request duration.\n"
		"# TYPE http_request_duration_seconds histogram\n"
		"http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
		"http_request_duration_seconds_bucket{le=\"0.1\"} 33444\n"
		"http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
		"http_request_duration_seconds_sum 53423\n"
		"http_request_duration_seconds_count 144320\n"
		"# HELP rpc_duration_seconds A summary of the RPC duration in seconds.\n"
		"# TYPE rpc_duration_seconds summary\n"
		"rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
		"rpc_duration_seconds{quantile=\"0.99\"} 76656\n"
		"rpc_duration_seconds_sum 1.7560473e+07\n"
		"rpc_duration_seconds_count 2693\n"
		"# TYPE tokens counter\n"
		"tokens_total 5\n"
		"# HELP help_escapes line\\nbreak and back\\\\slash\n"
		"empty_labels{} 1\n";
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(parse_str(text, &d, &e), 0);
	assert_int_equal(d.n_samples, 19);

	const struct prom_sample *s = find(&d, "http_requests_total", "code", "400");
	assert_non_null(s);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_string_equal(s->family, "http_requests_total");
	assert_true(s->value == 3.0);
	assert_true(s->has_ts);
	assert_true(s->ts_ms == INT64_C(1395066363000));
	assert_int_equal(s->n_labels, 2);
	assert_string_equal(prom_label_get(s, "method"), "post");
	assert_int_equal(s->line, 4);

	s = find(&d, "msdos_file_access_time_seconds", NULL, NULL);
	assert_non_null(s);
	assert_string_equal(prom_label_get(s, "path"), "C:\\DIR\\FILE.TXT");
	assert_string_equal(prom_label_get(s, "error"), "Cannot find file:\n\"FILE.TXT\"");
	assert_true(s->value == 1.458255915e9);
	assert_false(s->has_ts);
	assert_int_equal(s->type, PROM_UNTYPED);

	s = find(&d, "something_weird", NULL, NULL);
	assert_true(isinf(s->value) && s->value > 0);
	assert_true(s->ts_ms == -3982045);
	assert_true(isnan(find(&d, "nan_metric", NULL, NULL)->value));
	s = find(&d, "neg_inf", NULL, NULL);
	assert_true(isinf(s->value) && s->value < 0);
	s = find(&d, "spaced_metric", NULL, NULL);
	assert_non_null(s);
	assert_string_equal(prom_label_get(s, "a"), "x");
	assert_true(s->value == 2e-3);
	assert_true(find(&d, "metric_without_timestamp_and_labels", NULL, NULL)->value == 12.47);

	s = find(&d, "http_request_duration_seconds_bucket", "le", "0.1");
	assert_int_equal(s->type, PROM_HISTOGRAM);
	assert_int_equal(s->role, PROM_ROLE_BUCKET);
	assert_string_equal(s->family, "http_request_duration_seconds");
	s = find(&d, "http_request_duration_seconds_sum", NULL, NULL);
	assert_int_equal(s->role, PROM_ROLE_SUM);
	s = find(&d, "http_request_duration_seconds_count", NULL, NULL);
	assert_int_equal(s->role, PROM_ROLE_COUNT);

	s = find(&d, "rpc_duration_seconds", "quantile", "0.99");
	assert_int_equal(s->type, PROM_SUMMARY);
	assert_int_equal(s->role, PROM_ROLE_VALUE);
	assert_true(find(&d, "rpc_duration_seconds_sum", NULL, NULL)->value == 1.7560473e+07);
	assert_int_equal(find(&d, "rpc_duration_seconds_count", NULL, NULL)->role, PROM_ROLE_COUNT);

	/* counter family "tokens" owns tokens_total */
	s = find(&d, "tokens_total", NULL, NULL);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_string_equal(s->family, "tokens");
	double v = 0;
	assert_int_equal(prom_value_sum(&d, "tokens", NULL, NULL, NULL, &v), 0);
	assert_true(v == 5);

	const struct prom_family *f = prom_family_find(&d, "help_escapes");
	assert_non_null(f);
	assert_string_equal(f->help, "line\nbreak and back\\slash");
	f = prom_family_find(&d, "http_requests_total");
	assert_string_equal(f->help, "The total number of HTTP requests.");
	assert_int_equal(find(&d, "empty_labels", NULL, NULL)->n_labels, 0);
	prom_doc_free(&d);
}

static void test_parse_empty_and_comments(void **state)
{
	(void)state;
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(prom_parse("", 0, &d, &e), 0);
	assert_int_equal(d.n_samples, 0);
	prom_doc_free(&d);
	/* an empty HTTP body arrives as no buffer at all (UBSan: NULL + 0) */
	assert_int_equal(prom_parse(NULL, 0, &d, &e), 0);
	assert_int_equal(d.n_samples, 0);
	prom_doc_free(&d);
	assert_int_equal(parse_str("\n\n# just a comment\n#\n   \n# HELPER is a comment\n", &d, &e), 0);
	assert_int_equal(d.n_samples, 0);
	prom_doc_free(&d);
}

/* The buffer is not NUL terminated: parsing stops at len. */
static void test_parse_respects_length(void **state)
{
	(void)state;
	char buf[] = "a 1\nb 2\nGARBAGE{{{";
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(prom_parse(buf, 8, &d, &e), 0);
	assert_int_equal(d.n_samples, 2);
	prom_doc_free(&d);
	/* cut inside the second line: a partial scrape is an error */
	assert_int_equal(prom_parse(buf, 6, &d, &e), -EBADMSG);
	assert_string_equal(e.msg, "truncated input: the last line has no line feed at 2:3");
	assert_int_equal(d.n_samples, 0);
	prom_doc_free(&d);
}

struct err_case {
	const char *text;
	const char *msg;
};

static void test_parse_errors_line_col(void **state)
{
	(void)state;
	static const struct err_case cases[] = {
		{ "ok 1\nm{a \"x\"} 1\n", "expected '=' after label name at 2:5" },
		{ "m{a=\"x\" b=\"y\"} 1\n", "expected ',' or '}' after label value at 1:9" },
		{ "m{a=\"x} 1\n", "unterminated label value at 1:5" },
		{ "m{a=\"\\q\"} 1\n", "invalid escape sequence '\\q' in label value at 1:6" },
		{ "m{1a=\"x\"} 1\n", "expected label name at 1:3" },
		{ "m{a=x} 1\n", "expected '\"' to open the label value at 1:5" },
		{ "m{a=\"x\"\n", "expected ',' or '}' after label value at 1:8" },
		{ "m{a=\"x\"}1\n", "expected whitespace before the value at 1:9" },
		{ "m abc\n", "invalid value 'abc' at 1:3" },
		{ "m\n", "expected value after metric 'm' at 1:2" },
		{ "m 1 1.5\n", "invalid timestamp '1.5' (integer milliseconds) at 1:5" },
		{ "m 1 2 3\n", "unexpected text after timestamp at 1:7" },
		{ "m-x 1\n", "invalid character '-' in metric name at 1:2" },
		{ "1m 1\n", "expected metric name, found '1' at 1:1" },
		{ "m 1 99999999999999999999\n", "invalid timestamp '99999999999999999999' (integer milliseconds) at 1:5" },
		{ "# TYPE m gauge\n# TYPE m counter\n", "second TYPE line for metric name 'm' at 2:8" },
		{ "# HELP m a\n# HELP m b\n", "second HELP line for metric name 'm' at 2:8" },
		{ "m 1\n# TYPE m gauge\n", "TYPE line for 'm' after its samples at 2:8" },
		{ "# TYPE m meter\n", "unknown metric type 'meter' (counter, gauge, histogram, summary, untyped) at 1:10" },
		{ "# TYPE m\n", "expected metric type after TYPE m at 1:9" },
		{ "# TYPE m gauge extra\n", "unexpected text after metric type at 1:16" },
		{ "# TYPE\n", "expected metric name after TYPE at 1:7" },
		{ "# TYPE h histogram\nh_bucket 1\n", "histogram bucket 'h_bucket' without an le label at 2:1" },
		{ "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", "invalid le bound \"x\" at 2:1" },
		{ "# TYPE h histogram\nh 1\n", "histogram sample 'h' needs a _bucket, _sum or _count suffix at 2:1" },
		{ "# TYPE s summary\ns 1\n", "summary sample 's' without a quantile label at 2:1" },
		{ "a 1\nb 2\r\n", "invalid value '2\r' at 2:3" },
		{ "a 1\nb 2", "truncated input: the last line has no line feed at 2:4" },
		{ "m{a=\"x\",a=\"y\"} 1\n", "duplicate label name 'a' at 1:9" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prom_doc d;
		struct prom_error e;
		int rc = parse_str(cases[i].text, &d, &e);
		if (rc != -EBADMSG || strcmp(e.msg, cases[i].msg) != 0)
			print_error("case %zu: rc %d msg '%s', want '%s'\n", i, rc, e.msg, cases[i].msg);
		assert_int_equal(rc, -EBADMSG);
		assert_string_equal(e.msg, cases[i].msg);
		assert_int_equal(d.n_samples, 0);
		prom_doc_free(&d);
	}
	/* a NUL byte is an error, not a silent truncation */
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(prom_parse("a 1\nb\0 2\n", 9, &d, &e), -EBADMSG);
	assert_string_equal(e.msg, "NUL byte in input at 2:2");
	prom_doc_free(&d);
}

static void test_matcher(void **state)
{
	(void)state;
	struct prom_matcher m;
	char err[128];
	assert_int_equal(prom_matcher_parse("model_name=llama, version = \"1,2\"", &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(m.value[0], "llama");
	assert_string_equal(m.name[1], "version");
	assert_string_equal(m.value[1], "1,2");
	assert_int_equal(prom_matcher_parse("", &m, err, sizeof(err)), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(prom_matcher_parse("model_name", &m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "expected '=' after label name at column 11 of \"model_name\"");
	assert_int_equal(prom_matcher_parse("=x", &m, err, sizeof(err)), -EINVAL);
	assert_int_equal(prom_matcher_parse("a=\"x", &m, err, sizeof(err)), -EINVAL);
}

static struct prom_buckets mk(size_t n, const double *le, const double *cum)
{
	struct prom_buckets b = { .n = n };
	for (size_t i = 0; i < n; i++) {
		b.le[i] = le[i];
		b.cum[i] = cum[i];
	}
	b.count = cum[n - 1];
	return b;
}

static const double LE4[] = { 0.1, 0.5, 1.0, INFINITY };

/* histogram_quantile by hand: buckets (0,0.1]=10 (0.1,0.5]=50 (0.5,1]=30 (1,+Inf)=10 */
static void test_quantile_hand_computed(void **state)
{
	(void)state;
	const double cum[] = { 10, 60, 90, 100 };
	struct prom_buckets b = mk(4, LE4, cum);
	/* rank 50 in (0.1,0.5]: 0.1 + 0.4 * (50-10)/50 */
	assert_float_equal(prom_bucket_quantile(0.5, &b), 0.42, 1e-12);
	/* rank 5 in the first bucket, lower bound 0: 0.1 * 5/10 */
	assert_float_equal(prom_bucket_quantile(0.05, &b), 0.05, 1e-12);
	/* rank 75 in (0.5,1]: 0.5 + 0.5 * 15/30 */
	assert_float_equal(prom_bucket_quantile(0.75, &b), 0.75, 1e-12);
	assert_float_equal(prom_bucket_quantile(0.9, &b), 1.0, 1e-12);
	/* in the +Inf bucket: the highest finite bound */
	assert_float_equal(prom_bucket_quantile(0.95, &b), 1.0, 1e-12);
	assert_float_equal(prom_bucket_quantile(0.99, &b), 1.0, 1e-12);
	assert_true(isinf(prom_bucket_quantile(1.5, &b)) && prom_bucket_quantile(1.5, &b) > 0);
	assert_true(isinf(prom_bucket_quantile(-0.1, &b)) && prom_bucket_quantile(-0.1, &b) < 0);
	assert_true(isnan(prom_bucket_quantile(NAN, &b)));
	/* empty window */
	const double zero[] = { 0, 0, 0, 0 };
	b = mk(4, LE4, zero);
	assert_true(isnan(prom_bucket_quantile(0.5, &b)));
	/* no +Inf bucket */
	const double le3[] = { 0.1, 0.5, 1.0 };
	b = mk(3, le3, cum);
	assert_true(isnan(prom_bucket_quantile(0.5, &b)));
	/* non-monotonic counts are lifted (PromQL ensureMonotonic): 10,10,20,20 */
	const double nm[] = { 10, 8, 20, 20 };
	b = mk(4, LE4, nm);
	/* rank 15 -> (0.5,1]: 0.5 + 0.5 * 5/10 */
	assert_float_equal(prom_bucket_quantile(0.75, &b), 0.75, 1e-12);
}

static void test_delta_and_reset(void **state)
{
	(void)state;
	const double c1[] = { 10, 60, 90, 100 }, c2[] = { 12, 70, 99, 110 }, c3[] = { 1, 3, 4, 5 };
	struct prom_buckets a = mk(4, LE4, c1), b = mk(4, LE4, c2), r = mk(4, LE4, c3), d;
	a.sum = 40;
	b.sum = 45;
	assert_false(prom_buckets_delta(&d, &b, &a));
	assert_float_equal(d.cum[0], 2, 0);
	assert_float_equal(d.cum[3], 10, 0);
	assert_float_equal(d.count, 10, 0);
	assert_float_equal(d.sum, 5, 1e-12);
	/* delta buckets 2,8,1,1 -> rank 5 in (0.1,0.5]: 0.1 + 0.4 * 3/8 */
	assert_float_equal(prom_bucket_quantile(0.5, &d), 0.25, 1e-12);
	/* a decrease is a reset: the window starts from zero */
	assert_true(prom_buckets_delta(&d, &r, &b));
	assert_float_equal(d.cum[1], 3, 0);
	assert_float_equal(d.count, 5, 0);
	/* only _count decreased: still a reset */
	struct prom_buckets b2 = b;
	b2.count = 90;
	assert_true(prom_buckets_delta(&d, &b2, &b));
	/* changed bounds: a reset too */
	struct prom_buckets other = b;
	other.le[0] = 0.2;
	assert_true(prom_buckets_delta(&d, &other, &a));
}

static const char *two_models =
	"# TYPE lat histogram\n"
	"lat_bucket{model_name=\"a\",le=\"1\"} 10\n"
	"lat_bucket{model_name=\"a\",le=\"2\"} 20\n"
	"lat_bucket{model_name=\"a\",le=\"+Inf\"} 20\n"
	"lat_sum{model_name=\"a\"} 25\n"
	"lat_count{model_name=\"a\"} 20\n"
	"lat_bucket{model_name=\"b\",le=\"1\"} 0\n"
	"lat_bucket{model_name=\"b\",le=\"2\"} 0\n"
	"lat_bucket{model_name=\"b\",le=\"+Inf\"} 4\n"
	"lat_sum{model_name=\"b\"} 40\n"
	"lat_count{model_name=\"b\"} 4\n"
	"# TYPE req counter\n"
	"req_total{model_name=\"a\",reason=\"stop\"} 7\n"
	"req_total{model_name=\"a\",reason=\"length\"} 3\n"
	"req_total{model_name=\"b\",reason=\"stop\"} 100\n";

static void test_label_separation(void **state)
{
	(void)state;
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(parse_str(two_models, &d, &e), 0);
	struct prom_matcher ma, mb;
	assert_int_equal(prom_matcher_parse("model_name=a", &ma, NULL, 0), 0);
	assert_int_equal(prom_matcher_parse("model_name=b", &mb, NULL, 0), 0);
	struct prom_buckets h;
	assert_int_equal(prom_histogram_get(&d, "lat", &ma, &h), 0);
	assert_int_equal(h.n, 3);
	assert_float_equal(h.count, 20, 0);
	assert_float_equal(h.sum, 25, 0);
	/* a: rank 10 -> first bucket: 1 * 10/10 */
	assert_float_equal(prom_bucket_quantile(0.5, &h), 1.0, 1e-12);
	assert_int_equal(prom_histogram_get(&d, "lat", &mb, &h), 0);
	assert_float_equal(h.count, 4, 0);
	/* b: all in +Inf -> highest finite bound */
	assert_float_equal(prom_bucket_quantile(0.5, &h), 2.0, 1e-12);
	/* no matcher: sum by (le) over both */
	assert_int_equal(prom_histogram_get(&d, "lat", NULL, &h), 0);
	assert_float_equal(h.cum[2], 24, 0);
	assert_float_equal(h.count, 24, 0);
	double v;
	assert_int_equal(prom_value_sum(&d, "req_total", &ma, NULL, NULL, &v), 0);
	assert_float_equal(v, 10, 0);
	assert_int_equal(prom_value_sum(&d, "req_total", &ma, "reason", "stop", &v), 0);
	assert_float_equal(v, 7, 0);
	assert_int_equal(prom_value_sum(&d, "req_total", &mb, NULL, NULL, &v), 0);
	assert_float_equal(v, 100, 0);
	struct prom_matcher mc;
	assert_int_equal(prom_matcher_parse("model_name=c", &mc, NULL, 0), 0);
	assert_int_equal(prom_value_sum(&d, "req_total", &mc, NULL, NULL, &v), -ENOENT);
	assert_int_equal(prom_histogram_get(&d, "lat", &mc, &h), -ENOENT);
	assert_int_equal(prom_histogram_get(&d, "nope", NULL, &h), -ENOENT);
	prom_doc_free(&d);
}

static void test_histogram_malformed(void **state)
{
	(void)state;
	struct prom_doc d;
	struct prom_error e;
	struct prom_buckets h;
	assert_int_equal(parse_str("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n", &d, &e), 0);
	assert_int_equal(prom_histogram_get(&d, "h", NULL, &h), -EBADMSG); /* no +Inf */
	prom_doc_free(&d);
	assert_int_equal(parse_str("# TYPE h histogram\n"
				   "h_bucket{s=\"x\",le=\"1\"} 1\nh_bucket{s=\"x\",le=\"+Inf\"} 1\n"
				   "h_bucket{s=\"y\",le=\"2\"} 1\nh_bucket{s=\"y\",le=\"+Inf\"} 1\n",
				   &d, &e),
			 0);
	assert_int_equal(prom_histogram_get(&d, "h", NULL, &h), -EBADMSG); /* differing bounds */
	prom_doc_free(&d);
	/* untyped histogram lines (no TYPE) are still found */
	assert_int_equal(parse_str("u_bucket{le=\"1\"} 3\nu_bucket{le=\"+Inf\"} 4\nu_sum 2\nu_count 4\n", &d, &e), 0);
	assert_int_equal(prom_histogram_get(&d, "u", NULL, &h), 0);
	assert_float_equal(h.count, 4, 0);
	assert_float_equal(h.sum, 2, 0);
	prom_doc_free(&d);
}

static void test_counter_reset(void **state)
{
	(void)state;
	struct prom_counter c = { 0 };
	assert_false(prom_counter_update(&c, 100));
	assert_float_equal(c.total, 100, 0);
	assert_false(prom_counter_update(&c, 150));
	assert_float_equal(c.total, 150, 0);
	assert_true(prom_counter_update(&c, 20)); /* restart: 20 new since */
	assert_float_equal(c.total, 170, 0);
	assert_false(prom_counter_update(&c, 25));
	assert_float_equal(c.total, 175, 0);
}

/* The conversion into common/hist log buckets keeps the quantile within
 * one hist bucket (2 %) of histogram_quantile. */
static void test_buckets_to_hist(void **state)
{
	(void)state;
	const double cum[] = { 10, 60, 90, 100 };
	struct prom_buckets b = mk(4, LE4, cum);
	b.sum = 42.0;
	struct hist *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	prom_buckets_to_hist(h, &b, 1000.0);
	assert_int_equal(h->n, 100);
	assert_float_equal(h->sum_ms, 42000.0, 1e-9);
	uint64_t tot = 0;
	for (int i = 0; i < HIST_NBUCKETS; i++)
		tot += h->count[i];
	assert_int_equal(tot, 100);
	const double qs[] = { 0.05, 0.25, 0.5, 0.75, 0.95, 0.99 };
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double want = prom_bucket_quantile(qs[i], &b) * 1000.0;
		double got = hist_quantile(h, qs[i]);
		if (fabs(got - want) > 0.021 * want)
			print_error("q %.2f: hist %.3f, promql %.3f\n", qs[i], got, want);
		assert_true(fabs(got - want) <= 0.021 * want);
	}
	free(h);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	return buf;
}

/* Recorded vLLM scrapes: windowed quantiles between scrape 1 and 2 by hand
 * (see tests/data/prom/README.md for the per-bucket additions). */
static void test_recorded_vllm(void **state)
{
	(void)state;
	size_t l1, l2;
	char *t1 = slurp("tests/data/prom/vllm-1.txt", &l1), *t2 = slurp("tests/data/prom/vllm-2.txt", &l2);
	assert_non_null(t1);
	assert_non_null(t2);
	struct prom_doc d1, d2;
	struct prom_error e;
	assert_int_equal(prom_parse(t1, l1, &d1, &e), 0);
	assert_int_equal(prom_parse(t2, l2, &d2, &e), 0);
	struct prom_matcher m;
	prom_matcher_parse("model_name=llama", &m, NULL, 0);
	struct prom_buckets a, b, d;
	assert_int_equal(prom_histogram_get(&d1, "vllm:time_to_first_token_seconds", &m, &a), 0);
	assert_int_equal(prom_histogram_get(&d2, "vllm:time_to_first_token_seconds", &m, &b), 0);
	assert_float_equal(a.count, 140, 0);
	assert_false(prom_buckets_delta(&d, &b, &a));
	assert_float_equal(d.count, 100, 0);
	/* rank 95 at the top of (0.1,0.25]; rank 99 in (0.25,0.5]: 0.25 + 0.25*4/5 */
	assert_float_equal(prom_bucket_quantile(0.95, &d), 0.25, 1e-12);
	assert_float_equal(prom_bucket_quantile(0.99, &d), 0.45, 1e-12);
	assert_int_equal(prom_histogram_get(&d1, "vllm:inter_token_latency_seconds", &m, &a), 0);
	assert_int_equal(prom_histogram_get(&d2, "vllm:inter_token_latency_seconds", &m, &b), 0);
	prom_buckets_delta(&d, &b, &a);
	assert_float_equal(prom_bucket_quantile(0.95, &d), 0.15, 1e-12);
	assert_float_equal(prom_bucket_quantile(0.99, &d), 0.2 + 0.1 * 10.0 / 15.0, 1e-12);
	assert_int_equal(prom_histogram_get(&d1, "vllm:e2e_request_latency_seconds", &m, &a), 0);
	assert_int_equal(prom_histogram_get(&d2, "vllm:e2e_request_latency_seconds", &m, &b), 0);
	prom_buckets_delta(&d, &b, &a);
	assert_float_equal(prom_bucket_quantile(0.95, &d), 5.0, 1e-12);
	assert_float_equal(prom_bucket_quantile(0.99, &d), 9.0, 1e-12);
	/* mistral: 50 new, all in (1,2.5]: rank 47.5 -> 1 + 1.5 * 0.95 */
	prom_matcher_parse("model_name=mistral", &m, NULL, 0);
	prom_histogram_get(&d1, "vllm:time_to_first_token_seconds", &m, &a);
	prom_histogram_get(&d2, "vllm:time_to_first_token_seconds", &m, &b);
	prom_buckets_delta(&d, &b, &a);
	assert_float_equal(prom_bucket_quantile(0.95, &d), 2.425, 1e-12);
	double v;
	prom_matcher_parse("model_name=llama", &m, NULL, 0);
	assert_int_equal(prom_value_sum(&d2, "vllm:request_success_total", &m, NULL, NULL, &v), 0);
	assert_float_equal(v, 240, 0);
	prom_doc_free(&d1);
	prom_doc_free(&d2);
	free(t1);
	free(t2);
}

static void test_recorded_triton(void **state)
{
	(void)state;
	size_t l1;
	char *t1 = slurp("tests/data/prom/triton-1.txt", &l1);
	assert_non_null(t1);
	struct prom_doc d;
	struct prom_error e;
	assert_int_equal(prom_parse(t1, l1, &d, &e), 0);
	struct prom_matcher m;
	prom_matcher_parse("model=llama", &m, NULL, 0);
	struct prom_buckets h;
	assert_int_equal(prom_histogram_get(&d, "nv_inference_first_response_histogram_ms", &m, &h), 0);
	assert_int_equal(h.n, 5);
	assert_float_equal(h.count, 37, 0);
	assert_float_equal(h.sum, 10771, 0);
	/* rank 18.5 in (100,500]: 100 + 400 * 10.5/22 */
	assert_float_equal(prom_bucket_quantile(0.5, &h), 100 + 400 * 10.5 / 22, 1e-9);
	double v;
	assert_int_equal(prom_value_sum(&d, "nv_inference_request_duration_us", &m, NULL, NULL, &v), 0);
	assert_float_equal(v, 5e6, 0);
	prom_doc_free(&d);
	free(t1);
}

/* Two replicas' histograms: summed per le when the bounds match (PromQL
 * sum by (le)), refused untouched when they differ; the ratio gauge's max. */
static void test_buckets_merge_and_max(void **state)
{
	(void)state;
	struct prom_buckets a = { .n = 3, .le = { 0.1, 0.5, INFINITY }, .cum = { 10, 30, 40 }, .count = 40, .sum = 8 };
	struct prom_buckets b = { .n = 3, .le = { 0.1, 0.5, INFINITY }, .cum = { 30, 50, 60 }, .count = 60, .sum = 12 };
	struct prom_buckets acc = { .n = 0 };
	assert_int_equal(prom_buckets_merge(&acc, &a), 0); /* empty: takes a */
	assert_int_equal(acc.n, 3);
	assert_int_equal(prom_buckets_merge(&acc, &b), 0);
	assert_float_equal(acc.cum[0], 40, 0);
	assert_float_equal(acc.cum[1], 80, 0);
	assert_float_equal(acc.cum[2], 100, 0);
	assert_float_equal(acc.count, 100, 0);
	assert_float_equal(acc.sum, 20, 0);
	/* rank 50 of 100 in (0.1,0.5]: 0.1 + 0.4 * 10/40 */
	assert_float_equal(prom_bucket_quantile(0.5, &acc), 0.2, 1e-12);
	struct prom_buckets c = { .n = 3, .le = { 0.2, 0.5, INFINITY }, .cum = { 1, 2, 3 }, .count = 3 };
	struct prom_buckets keep = acc;
	assert_int_equal(prom_buckets_merge(&acc, &c), -EDOM);
	assert_memory_equal(&acc, &keep, sizeof(acc));
	struct prom_buckets d = { .n = 2, .le = { 0.1, INFINITY }, .cum = { 1, 2 }, .count = 2 };
	assert_int_equal(prom_buckets_merge(&acc, &d), -EDOM);

	static const char text[] = "# TYPE kv gauge\nkv{engine=\"0\"} 0.25\nkv{engine=\"1\"} 0.75\n"
				   "kv{engine=\"2\"} 0.5\n";
	struct prom_doc doc;
	struct prom_error e;
	assert_int_equal(prom_parse(text, sizeof(text) - 1, &doc, &e), 0);
	double v = 0;
	assert_int_equal(prom_value_max(&doc, "kv", NULL, &v), 0);
	assert_float_equal(v, 0.75, 0);
	assert_int_equal(prom_value_sum(&doc, "kv", NULL, NULL, NULL, &v), 0);
	assert_float_equal(v, 1.5, 0);
	assert_int_equal(prom_value_max(&doc, "nope", NULL, &v), -ENOENT);
	prom_doc_free(&doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_all_features),
		cmocka_unit_test(test_parse_empty_and_comments),
		cmocka_unit_test(test_parse_respects_length),
		cmocka_unit_test(test_parse_errors_line_col),
		cmocka_unit_test(test_matcher),
		cmocka_unit_test(test_quantile_hand_computed),
		cmocka_unit_test(test_delta_and_reset),
		cmocka_unit_test(test_label_separation),
		cmocka_unit_test(test_histogram_malformed),
		cmocka_unit_test(test_counter_reset),
		cmocka_unit_test(test_buckets_to_hist),
		cmocka_unit_test(test_recorded_vllm),
		cmocka_unit_test(test_buckets_merge_and_max),
		cmocka_unit_test(test_recorded_triton),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
