/* The decision log's reader against its writer: what declog.c writes comes
 * back typed (header, periods), a compact log's left-out periods come back
 * as copies, and bad logs are errors naming path:line (docs/decision-log.md). */
#include <errno.h>
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

#include "governor/loop/declog.h"
#include "governor/loop/declog_read.h"

#define MAX_P 64

struct got {
	struct declog_head head;
	int n_head;
	struct declog_period p[MAX_P];
	bool copied[MAX_P];
	size_t n;
	int fail_at; /* period callback returns -ENOMEM at this count (0: never) */
};

static int on_head(void *ctx, const struct declog_head *h)
{
	struct got *g = ctx;
	g->head = *h;
	g->n_head++;
	return 0;
}

static int on_period(void *ctx, const struct declog_period *p, bool copied)
{
	struct got *g = ctx;
	if (g->fail_at && (int)g->n + 1 == g->fail_at)
		return -ENOMEM;
	assert_true(g->n < MAX_P);
	g->p[g->n] = *p;
	g->copied[g->n++] = copied;
	return 0;
}

static const struct declog_read_cb cb = { .header = on_head, .period = on_period };

static char path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/govd-declog-read-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* Writes a header and n decisions (clock 1000 + 10*i MHz unless same), then
 * the restore record, with the writer; heartbeat_ms 0: a full log. */
static void write_log(size_t n, bool same, uint32_t heartbeat_ms)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	struct declog d;
	assert_int_equal(declog_init(&d, f), 0);
	declog_set_compact(&d, heartbeat_ms);
	struct hal_limits lim = { .clk_min_khz = 345000, .clk_max_khz = 1980000, .slowdown_mc = 90000,
				  .shutdown_mc = 95000 };
	snprintf(lim.model, sizeof(lim.model), "h200-sxm");
	const char names[2][HAL_NAME_LEN] = { "chat", "code" };
	struct declog_header h = { .scenario = "unit", .policy_name = "p", .policy_hash = "fnv1a64:1",
				   .controller = "govd", .period_ms = 500, .seed = 7, .lim = &lim,
				   .device_name = "sim0", .n_slices = 2, .slice_name = names,
				   .dry_run = true };
	assert_int_equal(declog_header(&d, &h), 0);
	enum gov_fault faults[GOV_SIG_N] = { 0 };
	struct gov_opoint op = { .n_slices = 2 };
	op.int8_frac[1] = 0.5;
	for (size_t i = 0; i < n; i++) {
		struct gov_estimates e = { 0 };
		e.clk_mhz = same ? 1500 : 1000 + 10.0 * (double)i;
		e.util = 0.5;
		e.tokens_per_s = 2000;
		e.window_requests = 12;
		e.queue_len = 3;
		for (size_t r = 0; r < SLA_N_ROWS; r++)
			e.quantile_ms[r] = 100.0 * (double)(r + 1);
		/* Every other period explains its clock (the model, one step
		 * lower lost on TBT); the others carry no "why". */
		struct gov_why why = { .valid = i % 2 == 0, .bound = GOV_WHY_LOAD_FLOOR,
				       .clk_mhz = e.clk_mhz, .model_mhz = e.clk_mhz,
				       .tbt_pred_ms = 70 + (double)i, .ttft_pred_ms = 600,
				       .lower_mhz = e.clk_mhz - 15, .tbt_lower_ms = 82,
				       .ttft_lower_ms = NAN, .lower_limit = GOV_WHY_L_TBT,
				       .margin = 0.8, .sigmas = 1.5, .floor_mhz = 1200,
				       .floor_load = true, .tail_ratio = 0.6,
				       .base_mhz = 1560, .bar_mhz = NAN, .move = GOV_WHY_M_BARRED,
				       .load = i % 4 ? GOV_WHY_LOAD_LIGHT : GOV_WHY_LOAD_HEAVY,
				       .heat_floor_w = i % 4 ? NAN : 455 };
		struct declog_record rec = { .t_ms = 500 * (i + 1), .seq = i + 1, .est = &e,
					     .faults = faults, .before = &op, .after = &op,
					     .policy_name = "p", .policy_hash = "fnv1a64:1", .seed = 7,
					     .why = &why };
		assert_int_equal(declog_decision(&d, &rec), 0);
	}
	assert_int_equal(declog_restore(&d, 500 * (n + 1), &op, 0), 0);
	declog_fini(&d);
	assert_int_equal(fclose(f), 0);
}

static void test_round_trip(void **state)
{
	(void)state;
	write_log(5, false, 0);
	struct got g = { 0 };
	char err[512] = "";
	assert_int_equal(declog_read(path, 1 << 20, &cb, &g, err, sizeof(err)), 0);
	assert_int_equal(g.n_head, 1);
	assert_int_equal(g.head.schema_version, DECLOG_SCHEMA_VERSION);
	assert_string_equal(g.head.scenario, "unit");
	assert_string_equal(g.head.controller, "govd");
	assert_true(g.head.period_ms == 500);
	assert_int_equal(g.head.seed, 7);
	assert_true(g.head.dry_run);
	assert_int_equal(g.head.n_slices, 2);
	assert_string_equal(g.head.slice[1], "code");
	assert_true(g.head.slowdown_mc == 90000);
	assert_int_equal(g.head.compact_gap, 0);
	assert_int_equal(g.head.line, 1);
	assert_int_equal(g.n, 5);
	for (size_t i = 0; i < g.n; i++) {
		assert_false(g.copied[i]);
		assert_true(g.p[i].t_s == 0.5 * (double)(i + 1));
		assert_true(g.p[i].clk_mhz == 1000 + 10.0 * (double)i);
		assert_true(g.p[i].tokens_per_s == 2000);
		assert_true(g.p[i].queue_len == 3);
		assert_true(g.p[i].win_requests == 12);
		assert_true(g.p[i].q_ms[SLA_INDEX(SLA_E2E, SLA_P99)] == 600);
		assert_true(g.p[i].int8_after[1] == 0.5);
		/* "why" back as written; absent where none was given. */
		const struct gov_why *w = &g.p[i].why;
		assert_true(w->valid == (i % 2 == 0));
		if (!w->valid)
			continue;
		assert_int_equal(w->bound, GOV_WHY_LOAD_FLOOR);
		assert_int_equal(w->lower_limit, GOV_WHY_L_TBT);
		assert_true(w->clk_mhz == g.p[i].clk_mhz && w->lower_mhz == w->clk_mhz - 15);
		assert_true(w->tbt_pred_ms == 70 + (double)i && w->tbt_lower_ms == 82);
		assert_true(isnan(w->ttft_lower_ms)); /* null in JSON */
		assert_true(w->margin == 0.8 && w->sigmas == 1.5 && w->floor_mhz == 1200);
		assert_true(w->floor_load && w->tail_ratio == 0.6);
		assert_true(w->base_mhz == 1560 && isnan(w->bar_mhz));
		assert_int_equal(w->move, GOV_WHY_M_BARRED);
		assert_int_equal(w->load, i % 4 ? GOV_WHY_LOAD_LIGHT : GOV_WHY_LOAD_HEAVY);
		assert_true(i % 4 ? isnan(w->heat_floor_w) : w->heat_floor_w == 455);
	}
	/* A load class the reader does not know reads as one base, not as light. */
	assert_int_equal(gov_why_load_parse("medium"), GOV_WHY_LOAD_NONE);
	assert_int_equal(gov_why_load_parse(NULL), GOV_WHY_LOAD_NONE);
	assert_null(gov_why_load_name(GOV_WHY_LOAD_NONE));
}

/* Unchanged decisions are left out of a compact log; the reader gives every
 * period back, the left-out ones as copies one period apart. */
static void test_compact_copies(void **state)
{
	(void)state;
	write_log(8, true, 60000);
	struct got g = { 0 };
	char err[512] = "";
	assert_int_equal(declog_read(path, 1 << 20, &cb, &g, err, sizeof(err)), 0);
	assert_true(g.head.compact_gap > 0);
	assert_int_equal(g.n, 8);
	size_t n_copied = 0;
	for (size_t i = 0; i < g.n; i++) {
		n_copied += g.copied[i];
		assert_true(fabs(g.p[i].t_s - 0.5 * (double)(i + 1)) < 1e-9);
		assert_true(g.p[i].clk_mhz == 1500);
	}
	assert_false(g.copied[0]);
	assert_int_equal(n_copied, 7); /* only the first record differs from its predecessor */
}

static void write_text(const char *s)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(s, f);
	fclose(f);
}

static void expect_error(const char *text, const char *want)
{
	write_text(text);
	struct got g = { 0 };
	char err[512] = "";
	assert_true(declog_read(path, 1 << 20, &cb, &g, err, sizeof(err)) < 0);
	if (!strstr(err, want) || strncmp(err, path, strlen(path)))
		fail_msg("error '%s' lacks '%s'", err, want);
}

#define HDR "{\"type\":\"header\",\"period_ms\":500"
#define DEC "{\"type\":\"decision\",\"t_ms\":500,\"seq\":1,\"inputs\":{}}\n"

static void test_errors(void **state)
{
	(void)state;
	expect_error(HDR ",\"schema_version\":2}\n" DEC, ":1:1: error: header schema_version is newer");
	expect_error(HDR ",\"schema_version\":\"1\"}\n" DEC, "not a positive integer");
	expect_error(DEC HDR "}\n", ":1:1: error: decision before the header");
	expect_error(HDR "}\n" HDR "}\n", ":2:1: error: a second header");
	expect_error(HDR "}\n{\"type\":\"decision\",\"inputs\":{}}\n", "without a numeric t_ms");
	expect_error(HDR "}\n{nope\n", ":2:");
	expect_error(HDR "}\n", ":1:1: error: a header but no decision records");
	expect_error("", ":1:1: error: no header record");
	expect_error("{\"type\":\"header\",\"period_ms\":0}\n" DEC, "period_ms missing or outside");
	expect_error(HDR ",\"slices\":[\"a\",\"a\"]}\n" DEC, "names a slice twice");
	expect_error(HDR ",\"log_mode\":\"compact\",\"heartbeat_ms\":1000}\n" DEC
		     "{\"type\":\"decision\",\"t_ms\":5000,\"seq\":10,\"inputs\":{}}\n",
		     ":3:1: error: seq jumps over 8 periods");
}

/* A schema_version absent (logs before the key) reads as 1; a torn last
 * line (a crash's) is dropped; a callback's error stops the read. */
static void test_old_and_torn(void **state)
{
	(void)state;
	write_text(HDR "}\n" DEC "{\"type\":\"decision\",\"t_ms\":10");
	struct got g = { 0 };
	char err[512] = "";
	assert_int_equal(declog_read(path, 1 << 20, &cb, &g, err, sizeof(err)), 0);
	assert_int_equal(g.head.schema_version, 1);
	assert_int_equal(g.n, 1);

	struct got h = { .fail_at = 1 };
	assert_int_equal(declog_read(path, 1 << 20, &cb, &h, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compact_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_and_torn, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
