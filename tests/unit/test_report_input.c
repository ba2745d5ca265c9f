/* govctl report: bad runs are errors naming file:line (not NaN reports, not
 * undefined behaviour), strings cut at UTF-8 boundaries, and run labels
 * cannot run commands through the gnuplot script (docs/report.md). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"

#include <cmocka.h>
#include "tests/unit/test_skip.h"

static char tmp[64];

static const char hdr_fmt[] =
	"{\"type\":\"header\",\"scenario\":\"%s\",\"policy\":\"p\",\"period_ms\":%s,\"seed\":%s,"
	"\"device\":{\"slowdown_mc\":89000},\"slices\":%s}\n";

static const char dec_fmt[] =
	"{\"type\":\"decision\",\"t_ms\":%d,\"inputs\":{\"power_w\":{\"accel\":300,\"memory\":50,"
	"\"host\":40},\"temp_c\":{\"junction\":60},\"clk_mhz\":1800,\"util\":0.8,"
	"\"power_limit_w\":700,\"throttle\":%s,\"tokens_per_s\":1000,\"sla\":{\"window_s\":1,"
	"\"requests\":5}}}\n";

/* tmp/<name>/decisions.jsonl: a header then n decisions. */
static void write_run(const char *name, const char *scenario, const char *period, const char *seed,
		      const char *slices, const char *throttle, int n)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tmp, name);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/%s/decisions.jsonl", tmp, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, hdr_fmt, scenario, period, seed, slices);
	for (int i = 0; i < n; i++)
		fprintf(f, dec_fmt, 1000 * i, throttle);
	fclose(f);
}

static void write_file(const char *name, const char *file, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tmp, name);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/%s/%s", tmp, name, file);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Loading tmp/name fails with -EINVAL and a message holding want. */
static void expect_error(const char *name, const char *want)
{
	char p[256], err[1400] = "";
	struct rp_run r;
	snprintf(p, sizeof(p), "%s/%s", tmp, name);
	int rc = rp_run_load(p, &r, err, sizeof(err));
	print_message("%s -> %s\n", name, err);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, want));
	rp_run_free(&r);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/test_report_input-XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) ? -1 : 0;
}

static void bad_logs(void **state)
{
	(void)state;
	write_file("empty", "decisions.jsonl", "");
	expect_error("empty", "decisions.jsonl:1:1: error: no header record");
	write_run("hdr_only", "s", "1000", "1", "[\"a\"]", "0", 0);
	expect_error("hdr_only", "decisions.jsonl:1:1: error: a header but no decision records");
	write_run("period0", "s", "0", "1", "[\"a\"]", "0", 3);
	expect_error("period0", "decisions.jsonl:1:1: error: header period_ms");
	write_run("slice_num", "s", "1000", "1", "[\"a\", 7]", "0", 3);
	expect_error("slice_num", "decisions.jsonl:1:1: error: header slice name");
	write_run("slice_dup", "s", "1000", "1", "[\"a\", \"a\"]", "0", 3);
	expect_error("slice_dup", "decisions.jsonl:1:1: error: header names a slice twice");

	char two[4096];
	snprintf(two, sizeof(two), hdr_fmt, "s", "1000", "1", "[\"a\"]");
	size_t l = strlen(two);
	snprintf(two + l, sizeof(two) - l, dec_fmt, 0, "0");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, hdr_fmt, "s", "1000", "1", "[\"b\"]");
	write_file("two_headers", "decisions.jsonl", two);
	expect_error("two_headers", "decisions.jsonl:3:1: error: a second header");

	snprintf(two, sizeof(two), hdr_fmt, "s", "1000", "1", "[\"a\"]");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, "{\"type\":\"decision\",\"t_ms\":0}\n");
	write_file("no_inputs", "decisions.jsonl", two);
	expect_error("no_inputs", "decisions.jsonl:2:1: error: decision without inputs");

	/* A torn line that is not the last: the log is corrupt there. */
	snprintf(two, sizeof(two), hdr_fmt, "s", "1000", "1", "[\"a\"]");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, "{\"type\":\"decision\",\"t_ms\":0,\"inp\n");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, dec_fmt, 1000, "0");
	write_file("torn", "decisions.jsonl", two);
	expect_error("torn", "decisions.jsonl:2:");

	/* A blank line: reported at a column >= 1, never 0. */
	snprintf(two, sizeof(two), hdr_fmt, "s", "1000", "1", "[\"a\"]");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, "\n");
	l = strlen(two);
	snprintf(two + l, sizeof(two) - l, dec_fmt, 1000, "0");
	write_file("blank", "decisions.jsonl", two);
	expect_error("blank", "decisions.jsonl:2:1: error:");
}

/* A summary.json without the figures the verdict rests on is an error, not
 * a run with no clamps and no breaches. */
static void bad_summaries(void **state)
{
	(void)state;
	write_run("sum_empty", "s", "1000", "1", "[\"a\"]", "0", 3);
	write_file("sum_empty", "summary.json", "{}\n");
	expect_error("sum_empty", "summary.json: error: tokens_generated missing");

	static const char ok_but_clamps[] =
		"{\"tokens_generated\":1,\"tokens_per_joule\":0.1,\"energy_j\":{\"total\":10},"
		"\"sla\":{\"attainment\":1},\"thermal\":{},\"quality\":{\"breach_requests\":0,"
		"\"per_slice\":{\"a\":{}}}}\n";
	write_run("sum_noclamp", "s", "1000", "1", "[\"a\"]", "0", 3);
	write_file("sum_noclamp", "summary.json", ok_but_clamps);
	expect_error("sum_noclamp", "summary.json: error: thermal.clamp_events missing");

	static const char other_slices[] =
		"{\"tokens_generated\":1,\"tokens_per_joule\":0.1,\"energy_j\":{\"total\":10},"
		"\"sla\":{\"attainment\":1},\"thermal\":{\"clamp_events\":0},\"quality\":"
		"{\"breach_requests\":0,\"per_slice\":{\"b\":{}}}}\n";
	write_run("sum_slices", "s", "1000", "1", "[\"a\"]", "0", 3);
	write_file("sum_slices", "summary.json", other_slices);
	expect_error("sum_slices", "slice 'a' of the decision log's header is not in quality.per_slice");

	write_run("sum_array", "s", "1000", "1", "[\"a\"]", "0", 3);
	write_file("sum_array", "summary.json", "[1]\n");
	expect_error("sum_array", "summary.json: error: not a JSON object");

	write_run("sum_torn", "s", "1000", "1", "[\"a\"]", "0", 3);
	write_file("sum_torn", "summary.json", "{\"tokens_generated\":\n");
	expect_error("sum_torn", "summary.json:2:");
}

/* Out-of-range numbers load clamped (an unchecked float -> integer cast is
 * undefined behaviour: the sanitizer build aborts on it). */
static void huge_numbers(void **state)
{
	(void)state;
	write_run("huge", "s", "1000", "1e30", "[\"a\"]", "1e20", 3);
	char p[256], err[1400] = "";
	struct rp_run r;
	snprintf(p, sizeof(p), "%s/huge", tmp);
	assert_int_equal(rp_run_load(p, &r, err, sizeof(err)), 0);
	assert_true(r.seed == UINT64_MAX);
	assert_true(r.p[0].throttle == UINT32_MAX);
	assert_true(r.clamp_events == 1); /* every period has the slowdown bit: one onset */
	rp_run_free(&r);
}

/* A scenario name longer than the field is cut between characters, so the
 * label is still a JSON string (json_string refuses broken UTF-8). */
static void utf8_cut(void **state)
{
	(void)state;
	char sc[256] = "";
	for (int i = 0; i < 70; i++)
		strcat(sc, "\xc3\xa9"); /* é */
	write_run("utf8", sc, "1000", "1", "[\"a\"]", "0", 3);
	char p[256], err[1400] = "";
	struct rp_run r;
	snprintf(p, sizeof(p), "%s/utf8", tmp);
	assert_int_equal(rp_run_load(p, &r, err, sizeof(err)), 0);
	assert_int_equal(strlen(r.scenario) % 2, 0);
	json_t *j = json_string(r.label);
	assert_non_null(j);
	json_decref(j);
	rp_run_free(&r);
}

static bool have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* gnuplot runs `...` inside double-quoted strings: a label carrying one must
 * be drawn as text, never run. */
static void gnuplot_no_command_substitution(void **state)
{
	(void)state;
	if (!have_gnuplot()) {
		TEST_SKIP("gnuplot not installed (tools/install-deps installs gnuplot-nox)");
	}
	char marker[128], sc[512];
	snprintf(marker, sizeof(marker), "%s/pwned", tmp);
	snprintf(sc, sizeof(sc), "x`touch %s`\\\" 'q' \\n@y", marker);
	write_run("inject", sc, "1000", "1", "[\"a`true`\\\"\\nb\"]", "0", 5);
	char p[256], err[1400] = "";
	struct rp_run r;
	snprintf(p, sizeof(p), "%s/inject", tmp);
	assert_int_equal(rp_run_load(p, &r, err, sizeof(err)), 0);
	struct rp_run *runs[1] = { &r };
	const char *roles[1] = { "candidate" };
	json_t *figs = rp_figures(&r, &r, runs, roles, 1, NULL, 0);
	struct rp_plots pl;
	rp_make_plots(figs, &pl);
	assert_int_equal(access(marker, F_OK), -1);
	/* Every figure renders, even those with nothing to draw (the fixture
	 * logs no window quantile: an empty frame that says so, not a gnuplot
	 * error that costs the figure). */
	assert_int_equal(pl.n, json_array_size(figs));
	size_t points = pl.n;
	for (size_t i = 0; i < pl.n; i++) {
		if (!pl.svg[i])
			print_message("plot %s: %s\n", pl.id[i], pl.why[i]);
		assert_non_null(pl.svg[i]);
		if (!strcmp(pl.id[i], "fig-points"))
			points = i;
	}
	assert_true(points < pl.n);
	/* The label is drawn literally (gnuplot's SVG escapes < and &). */
	assert_non_null(strstr(pl.svg[points], "touch "));
	assert_non_null(strstr(pl.svg[points], "'q'"));
	json_decref(figs);
	rp_plots_free(&pl);
	rp_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_logs),
		cmocka_unit_test(bad_summaries),
		cmocka_unit_test(huge_numbers),
		cmocka_unit_test(utf8_cut),
		cmocka_unit_test(gnuplot_no_command_substitution),
	};
	return test_exit(cmocka_run_group_tests(tests, setup, teardown));
}
