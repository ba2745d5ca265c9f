/* Unit tests for common/ycfg: every error kind carries file:line:col, the key
 * path and what is allowed; readers collect all errors of a file. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/diag.h"
#include "common/strjoin.h"
#include "common/ycfg.h"

static char fmt_buf[2048];

static const char *diag_str(const struct diag_list *l, size_t i)
{
	assert_true(i < l->n);
	diag_format(&l->v[i], fmt_buf, sizeof(fmt_buf));
	return fmt_buf;
}

static int load(struct ycfg *y, const char *text, struct diag_list *dl)
{
	return ycfg_load_string(y, "t.yaml", text, strlen(text), dl);
}

static void test_missing_file_names_path_and_strerror(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	int rc = ycfg_load_file(&y, "tests/data/no-such-file.yaml", &dl);
	assert_int_equal(rc, -ENOENT);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0),
			    "tests/data/no-such-file.yaml: error: cannot open: No such file or directory");
	assert_null(ycfg_root(&y));
	ycfg_fini(&y);
	diag_clear(&dl);
}

/* The bytes as they are in the file, NUL-terminated; errors as ycfg_load_file. */
static void test_read_file(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	char path[] = "/tmp/govd-ycfg-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	assert_non_null(f);
	/* Past the first 4 KiB buffer, so the growth path runs. */
	for (int i = 0; i < 5000; i++)
		fputc('a' + i % 26, f);
	fclose(f);

	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(ycfg_read_file(path, &buf, &len, &dl), 0);
	assert_int_equal(len, 5000);
	assert_int_equal(strlen(buf), 5000);
	assert_true(buf[0] == 'a' && buf[4999] == 'a' + 4999 % 26);
	assert_int_equal(dl.n, 0);
	free(buf);
	unlink(path);

	assert_int_equal(ycfg_read_file(path, &buf, &len, &dl), -ENOENT);
	assert_null(buf);
	assert_int_equal(len, 0);
	assert_int_equal(dl.n, 1);
	assert_int_equal(ycfg_read_file("tests", &buf, &len, &dl), -EISDIR);
	assert_null(buf);
	assert_string_equal(diag_str(&dl, 1), "tests: error: is a directory, not a regular file");
	diag_clear(&dl);
}

/* The joiner behind every "valid: a, b, c" message. */
static void test_strjoin(void **state)
{
	(void)state;
	static const char *const names[] = { "alpha", "beta", "gamma", NULL };
	static const char *const none[] = { NULL };
	char buf[64];
	assert_string_equal(strjoin(buf, sizeof(buf), names, ", "), "alpha, beta, gamma");
	assert_string_equal(strjoin(buf, sizeof(buf), names, "|"), "alpha|beta|gamma");
	assert_string_equal(strjoin(buf, sizeof(buf), none, ", "), "");
	/* exactly fits: no marker */
	char fit[19];
	assert_string_equal(strjoin(fit, sizeof(fit), names, ", "), "alpha, beta, gamma");
	/* one byte short: truncation shows, the buffer is full and stays so */
	char small[18];
	assert_string_equal(strjoin(small, sizeof(small), names, ", "), "alpha, beta, g...");
	assert_false(strjoin_add(small, sizeof(small), ", ", "x"));
	assert_string_equal(small, "alpha, beta, g...");
	/* appending by hand */
	buf[0] = '\0';
	assert_true(strjoin_add(buf, sizeof(buf), "; ", "one"));
	assert_true(strjoin_add(buf, sizeof(buf), "; ", "two"));
	assert_string_equal(buf, "one; two");
}

static void test_directory_is_read_error(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	int rc = ycfg_load_file(&y, "tests", &dl);
	assert_int_equal(rc, -EISDIR);
	assert_string_equal(diag_str(&dl, 0), "tests: error: is a directory, not a regular file");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_syntax_error_has_problem_context_and_position(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: 1\nb: [1, 2\nc: 3\n", &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	assert_string_equal(dl.v[0].code, "yaml-syntax");
	/* libyaml's own words, its 0-based marks reported 1-based. */
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:3:2: error: did not find expected ',' or ']' while parsing a "
			    "flow sequence (at line 2:4)");
	ycfg_fini(&y);
	diag_clear(&dl);

	assert_int_equal(load(&y, "a: 1\n b: 2\n", &dl), -EINVAL);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:2:3: error: mapping values are not allowed in this context");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_undefined_alias_is_error(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: 1\nb: *nope\n", &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0), "t.yaml:2:4: error: found undefined alias");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_bad_utf8_reports_byte_offset(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: \xff\xfe\n", &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0), "t.yaml: error: invalid leading UTF-8 octet at byte 3");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_empty_document_has_no_root(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "# only a comment\n", &dl), 0);
	assert_null(ycfg_root(&y));
	assert_int_equal(dl.n, 0);
	ycfg_fini(&y);
}

static void test_second_document_rejected(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: 1\n---\nb: 2\n", &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:3:1: error: only one YAML document per file is allowed; remove "
			    "the second '---'");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static const char *const keys_thermal[] = {"ceiling_c", "soft_ceiling_c", "period_ms", NULL};

static void test_unknown_key_suggests_closest(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "thermal:\n  cieling_c: 80\n  zzz: 1\n", &dl), 0);
	yaml_node_t *t = ycfg_get(&y, ycfg_root(&y), "thermal");
	assert_non_null(t);
	assert_int_equal(ycfg_check_keys(&y, t, "thermal", keys_thermal), 2);
	assert_int_equal(dl.n, 2);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:2:3: error: thermal.cieling_c: unknown key 'cieling_c' (did you "
			    "mean 'ceiling_c'?); allowed: ceiling_c, soft_ceiling_c, period_ms");
	assert_string_equal(diag_str(&dl, 1),
			    "t.yaml:3:3: error: thermal.zzz: unknown key 'zzz'; allowed: ceiling_c, "
			    "soft_ceiling_c, period_ms");
	assert_string_equal(dl.v[0].code, "unknown-key");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_duplicate_key(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "ceiling_c: 80\nperiod_ms: 5\nceiling_c: 81\n", &dl), 0);
	assert_int_equal(ycfg_check_keys(&y, ycfg_root(&y), "", keys_thermal), 1);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:3:1: error: ceiling_c: duplicate key 'ceiling_c' (first given at "
			    "line 1:1)");
	assert_string_equal(dl.v[0].code, "duplicate-key");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_non_scalar_key_rejected(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "? [a, b]\n: 1\n", &dl), 0);
	assert_int_equal(ycfg_check_keys(&y, ycfg_root(&y), "", keys_thermal), 1);
	assert_string_equal(diag_str(&dl, 0), "t.yaml:1:3: error: keys must be plain names, got a list");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_double_parsing_and_errors(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	const char *text = "a_c: 72.5\n"
			   "b_c: abc\n"
			   "c_c: 95\n"
			   "d_c: '70'\n"
			   "e_c: 1e3x\n"
			   "f_c: .nan\n"
			   "g_c: nan\n"
			   "h_c: [1]\n"
			   "i_c:\n"
			   "j_s: -1\n"
			   "k_w: 2000\n";
	assert_int_equal(load(&y, text, &dl), 0);
	yaml_node_t *r = ycfg_root(&y);
	double v = -1;
	assert_int_equal(ycfg_double(&y, r, "thermal", "a_c", true, 40, 88, &v), 0);
	assert_true(v == 72.5);
	v = -1;
	/* Absent optional keys leave the default untouched. */
	assert_int_equal(ycfg_double(&y, r, "thermal", "zz_c", false, 40, 88, &v), 0);
	assert_true(v == -1);
	assert_int_equal(ycfg_double(&y, r, "thermal", "zz_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "b_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "c_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "d_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "e_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "f_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "g_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "h_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "thermal", "i_c", true, 40, 88, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "", "j_s", true, 0, INFINITY, &v), -EINVAL);
	assert_int_equal(ycfg_double(&y, r, "", "k_w", true, -INFINITY, 700, &v), -EINVAL);
	assert_true(v == -1); /* failures never write *out */
	const char *want[] = {
		"t.yaml:1:1: error: thermal.zz_c: missing required key 'zz_c'",
		"t.yaml:2:6: error: thermal.b_c: expected a number, got 'abc'",
		"t.yaml:3:6: error: thermal.c_c: 95 is out of range; allowed 40..88 C",
		("t.yaml:4:6: error: thermal.d_c: expected a number, got the quoted string '70' "
		 "(remove the quotes)"),
		"t.yaml:5:6: error: thermal.e_c: expected a number, got '1e3x'",
		"t.yaml:6:6: error: thermal.f_c: expected a number, got '.nan'",
		"t.yaml:7:6: error: thermal.g_c: expected a finite number, got 'nan'",
		"t.yaml:8:6: error: thermal.h_c: expected a number, got a list",
		"t.yaml:9:5: error: thermal.i_c: expected a number, got an empty value",
		"t.yaml:10:6: error: j_s: -1 is out of range; allowed >= 0 s",
		"t.yaml:11:6: error: k_w: 2000 is out of range; allowed <= 700 W",
	};
	assert_int_equal(dl.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < dl.n; i++)
		assert_string_equal(diag_str(&dl, i), want[i]);
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_int_parsing_and_errors(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	const char *text = "n: 64\nm: -3\nf: 1.5\ng: 12abc\nh: 99999999999999999999\ni: 300\n";
	assert_int_equal(load(&y, text, &dl), 0);
	yaml_node_t *r = ycfg_root(&y);
	long long v = 0;
	assert_int_equal(ycfg_int(&y, r, "server", "n", true, 1, 256, &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(ycfg_int(&y, r, "server", "m", true, LLONG_MIN, LLONG_MAX, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(ycfg_int(&y, r, "server", "f", true, 1, 256, &v), -EINVAL);
	assert_int_equal(ycfg_int(&y, r, "server", "g", true, 1, 256, &v), -EINVAL);
	assert_int_equal(ycfg_int(&y, r, "server", "h", true, 0, LLONG_MAX, &v), -EINVAL);
	assert_int_equal(ycfg_int(&y, r, "server", "i", true, 1, 256, &v), -EINVAL);
	assert_int_equal(v, -3);
	assert_string_equal(diag_str(&dl, 0), "t.yaml:3:4: error: server.f: expected an integer, got '1.5'");
	assert_string_equal(diag_str(&dl, 1), "t.yaml:4:4: error: server.g: expected an integer, got '12abc'");
	assert_string_equal(diag_str(&dl, 2),
			    "t.yaml:5:4: error: server.h: 99999999999999999999 is out of range; allowed >= 0");
	assert_string_equal(diag_str(&dl, 3), "t.yaml:6:4: error: server.i: 300 is out of range; allowed 1..256");
	assert_int_equal(dl.n, 4);
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_bool_words(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: true\nb: no\nc: Yes\nd: FALSE\ne: 1\nf: 'true'\n", &dl), 0);
	yaml_node_t *r = ycfg_root(&y);
	bool a = false, b = true, c = false, d = true, e = false;
	assert_int_equal(ycfg_bool(&y, r, "", "a", true, &a), 0);
	assert_int_equal(ycfg_bool(&y, r, "", "b", true, &b), 0);
	assert_int_equal(ycfg_bool(&y, r, "", "c", true, &c), 0);
	assert_int_equal(ycfg_bool(&y, r, "", "d", true, &d), 0);
	assert_true(a && !b && c && !d);
	assert_int_equal(ycfg_bool(&y, r, "", "e", true, &e), -EINVAL);
	assert_int_equal(ycfg_bool(&y, r, "", "f", true, &e), -EINVAL);
	assert_false(e);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:5:4: error: e: expected a boolean (true/false/yes/no), got '1'");
	assert_string_equal(diag_str(&dl, 1),
			    "t.yaml:6:4: error: f: expected a boolean (true/false/yes/no), got the "
			    "quoted string 'true' (remove the quotes)");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_string_and_enum(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	static const char *const kinds[] = {"trace", "generator", NULL};
	assert_int_equal(load(&y, "name: \"hello world\"\nlong: abcdefghij\nkind: generater\n"
				  "k2: generator\nk3: {a: 1}\nlst: [1]\n",
			      &dl),
			 0);
	yaml_node_t *r = ycfg_root(&y);
	char buf[8];
	char big[32];
	assert_int_equal(ycfg_string(&y, r, "", "name", true, big, sizeof(big)), 0);
	assert_string_equal(big, "hello world");
	assert_int_equal(ycfg_string(&y, r, "", "long", true, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(ycfg_string(&y, r, "", "lst", true, buf, sizeof(buf)), -EINVAL);
	int k = -1;
	assert_int_equal(ycfg_enum(&y, r, "workload", "kind", true, kinds, &k), -EINVAL);
	assert_int_equal(k, -1);
	assert_int_equal(ycfg_enum(&y, r, "workload", "k2", true, kinds, &k), 0);
	assert_int_equal(k, 1);
	assert_int_equal(ycfg_enum(&y, r, "workload", "k3", true, kinds, &k), -EINVAL);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:2:7: error: long: string is 10 characters long; at most 7 allowed");
	assert_string_equal(diag_str(&dl, 1), "t.yaml:6:6: error: lst: expected a string, got a list");
	assert_string_equal(diag_str(&dl, 2),
			    "t.yaml:3:7: error: workload.kind: unknown value 'generater' (did you "
			    "mean 'generator'?); valid: trace, generator");
	assert_string_equal(diag_str(&dl, 3),
			    "t.yaml:5:5: error: workload.k3: expected one of trace, generator, got a "
			    "mapping");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_sequences_and_node_double(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "xs: [1.5, 2, oops, 9]\nm: {a: 1}\n", &dl), 0);
	yaml_node_t *r = ycfg_root(&y);
	yaml_node_t *xs = ycfg_get(&y, r, "xs");
	assert_true(ycfg_is_seq(&y, xs, "xs"));
	assert_false(ycfg_is_map(&y, xs, "xs"));
	assert_false(ycfg_is_seq(&y, ycfg_get(&y, r, "m"), "m"));
	/* Absent nodes are not errors here: callers decide whether absent is allowed. */
	assert_false(ycfg_is_map(&y, NULL, "nothing"));
	assert_int_equal(ycfg_seq_len(xs), 4);
	assert_null(ycfg_seq_at(&y, xs, 4));
	double sum = 0;
	int bad = 0;
	char p[64];
	for (size_t i = 0; i < ycfg_seq_len(xs); i++) {
		double v;
		if (ycfg_node_double(&y, ycfg_seq_at(&y, xs, i), ycfg_index(p, sizeof(p), "xs", i), 0,
				     5, &v) == 0)
			sum += v;
		else
			bad++;
	}
	assert_true(sum == 3.5);
	assert_int_equal(bad, 2);
	assert_int_equal(dl.n, 4);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:1:5: error: xs: expected a mapping (key: value lines), got a list");
	assert_string_equal(diag_str(&dl, 1),
			    "t.yaml:2:4: error: m: expected a list ('- item' lines or [a, b]), got a "
			    "mapping");
	assert_string_equal(diag_str(&dl, 2), "t.yaml:1:14: error: xs[2]: expected a number, got 'oops'");
	assert_string_equal(diag_str(&dl, 3), "t.yaml:1:20: error: xs[3]: 9 is out of range; allowed 0..5");
	ycfg_fini(&y);
	diag_clear(&dl);
}

/* Anchors are shared nodes in the document API; a self-referencing alias forms a
 * cycle that a schema-driven reader only descends as deep as its schema. */
static void test_aliases_shared_and_recursive(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "base: &b {ceiling_c: 80}\nother: *b\nself: &s {ceiling_c: *s}\n",
			      &dl),
			 0);
	yaml_node_t *r = ycfg_root(&y);
	double v = 0;
	assert_int_equal(ycfg_double(&y, ycfg_get(&y, r, "other"), "other", "ceiling_c", true, 0, 100,
				     &v),
			 0);
	assert_true(v == 80);
	yaml_node_t *s = ycfg_get(&y, r, "self");
	assert_int_equal(ycfg_check_keys(&y, s, "self", keys_thermal), 0);
	assert_int_equal(ycfg_double(&y, s, "self", "ceiling_c", true, 0, 100, &v), -EINVAL);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:3:7: error: self.ceiling_c: expected a number, got a mapping");
	assert_true(ycfg_get(&y, ycfg_get(&y, s, "ceiling_c"), "ceiling_c") == s);
	ycfg_fini(&y);
	diag_clear(&dl);

	/* Billion laughs stays small: aliases share nodes instead of copying them. */
	const char *lol = "a: &a [x, x, x, x, x, x, x, x, x]\n"
			  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
			  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
			  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
			  "f: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
	assert_int_equal(load(&y, lol, &dl), 0);
	assert_true(y.doc.nodes.top - y.doc.nodes.start < 100);
	ycfg_fini(&y);
}

static void test_all_errors_collected_in_one_pass(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "ceiling_c: 95\nsoft_ceiling_c: x\nperiod_m: 5\nperiod_ms: -1\n", &dl),
			 0);
	yaml_node_t *r = ycfg_root(&y);
	int errs = 0;
	double c = 83, s = 80, p = 10;
	errs += ycfg_check_keys(&y, r, "", keys_thermal);
	errs += ycfg_double(&y, r, "", "ceiling_c", false, 40, 88, &c) != 0;
	errs += ycfg_double(&y, r, "", "soft_ceiling_c", false, 40, 88, &s) != 0;
	errs += ycfg_double(&y, r, "", "period_ms", false, 1, 1000, &p) != 0;
	assert_int_equal(errs, 4);
	assert_int_equal(diag_count(&dl, DIAG_ERROR), 4);
	assert_string_equal(diag_str(&dl, 0),
			    "t.yaml:3:1: error: period_m: unknown key 'period_m' (did you mean "
			    "'period_ms'?); allowed: ceiling_c, soft_ceiling_c, period_ms");
	assert_string_equal(diag_str(&dl, 3), "t.yaml:4:12: error: period_ms: -1 is out of range; allowed 1..1000 ms");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_warning_and_error_helpers(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(load(&y, "a: 1\n", &dl), 0);
	ycfg_warning(&y, ycfg_get(&y, ycfg_root(&y), "a"), "a", "late", "after the end (%d s)", 5);
	ycfg_error(&y, NULL, "", "x", "whole file");
	assert_int_equal(diag_count(&dl, DIAG_WARNING), 1);
	assert_string_equal(diag_str(&dl, 0), "t.yaml:1:4: warning: a: after the end (5 s)");
	assert_string_equal(diag_str(&dl, 1), "t.yaml: error: whole file");
	ycfg_fini(&y);
	diag_clear(&dl);
}

static void test_join_index_resolve(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(ycfg_join(b, sizeof(b), "", "k"), "k");
	assert_string_equal(ycfg_join(b, sizeof(b), NULL, "k"), "k");
	assert_string_equal(ycfg_join(b, sizeof(b), "a.b", "k"), "a.b.k");
	assert_string_equal(ycfg_index(b, sizeof(b), "slices", 3), "slices[3]");

	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(ycfg_load_string(&y, "configs/scenarios/x.yaml", "a: 1", 4, &dl), 0);
	char p[4096];
	assert_int_equal(ycfg_resolve_path(&y, "../t.csv", p, sizeof(p)), 0);
	assert_string_equal(p, "configs/scenarios/../t.csv");
	assert_int_equal(ycfg_resolve_path(&y, "/abs/t.csv", p, sizeof(p)), 0);
	assert_string_equal(p, "/abs/t.csv");
	assert_int_equal(ycfg_resolve_path(&y, "t.csv", p, 10), -ENAMETOOLONG);
	ycfg_fini(&y);
	assert_int_equal(ycfg_load_string(&y, "x.yaml", "a: 1", 4, &dl), 0);
	assert_int_equal(ycfg_resolve_path(&y, "t.csv", p, sizeof(p)), 0);
	assert_string_equal(p, "t.csv");
	ycfg_fini(&y);
	assert_int_equal(dl.n, 0);
}

static void test_load_real_file(void **state)
{
	(void)state;
	char path[] = "/tmp/test_ycfg_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("# comment\nperiod_ms: 20\n", f);
	fclose(f);
	struct diag_list dl = {0};
	struct ycfg y;
	assert_int_equal(ycfg_load_file(&y, path, &dl), 0);
	long long v = 0;
	assert_int_equal(ycfg_int(&y, ycfg_root(&y), "", "period_ms", true, 1, 100, &v), 0);
	assert_int_equal(v, 20);
	assert_string_equal(y.file, path);
	ycfg_fini(&y);
	remove(path);
	assert_int_equal(dl.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_file_names_path_and_strerror),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_strjoin),
		cmocka_unit_test(test_directory_is_read_error),
		cmocka_unit_test(test_syntax_error_has_problem_context_and_position),
		cmocka_unit_test(test_undefined_alias_is_error),
		cmocka_unit_test(test_bad_utf8_reports_byte_offset),
		cmocka_unit_test(test_empty_document_has_no_root),
		cmocka_unit_test(test_second_document_rejected),
		cmocka_unit_test(test_unknown_key_suggests_closest),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_non_scalar_key_rejected),
		cmocka_unit_test(test_double_parsing_and_errors),
		cmocka_unit_test(test_int_parsing_and_errors),
		cmocka_unit_test(test_bool_words),
		cmocka_unit_test(test_string_and_enum),
		cmocka_unit_test(test_sequences_and_node_double),
		cmocka_unit_test(test_aliases_shared_and_recursive),
		cmocka_unit_test(test_all_errors_collected_in_one_pass),
		cmocka_unit_test(test_warning_and_error_helpers),
		cmocka_unit_test(test_join_index_resolve),
		cmocka_unit_test(test_load_real_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
