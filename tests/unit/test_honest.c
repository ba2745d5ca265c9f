/* The honest limit (governor/sim/honest.c): equal-SLA accounting against the
 * oracle's picks, and windows.csv round trip and bad input. */
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

#include "governor/sim/honest.h"

static struct oracle_pick pick(bool feasible, bool tail, bool idle, uint64_t tok, double e)
{
	struct oracle_pick p = { .feasible = feasible, .tail = tail, .idle = idle, .tokens = tok,
				 .energy_all_j = e, .sla_met = feasible };
	return p;
}

static struct honest_window win(uint32_t i, bool met, uint64_t tok, double e, uint64_t clamps,
				uint64_t breach)
{
	struct honest_window w = { .index = i, .sla_met = met, .tokens = tok, .energy_all_j = e,
				   .clamp_events = clamps, .breach_requests = breach,
				   .max_junction_c = 70 };
	return w;
}

/* Infeasible windows leave the ratio; a missed, clamped or breaching window
 * keeps its energy and loses its tokens. */
static void test_accounting(void **st)
{
	(void)st;
	struct oracle_pick p[] = {
		pick(true, false, false, 100, 10),  /* 0: policy good */
		pick(false, false, false, 50, 10),  /* 1: infeasible: left out */
		pick(true, false, false, 100, 10),  /* 2: policy missed the SLA */
		pick(true, false, false, 100, 10),  /* 3: policy clamped */
		pick(true, false, false, 100, 10),  /* 4: policy served a breach */
		pick(true, true, false, 100, 10),   /* 5: tail: not judged */
	};
	struct honest_window w[] = {
		win(0, true, 90, 10, 0, 0),  win(1, false, 500, 1, 0, 0),
		win(2, false, 120, 12, 0, 0), win(3, true, 100, 9, 1, 0),
		win(4, true, 100, 8, 0, 3),  win(5, true, 100, 1, 0, 0),
	};
	struct honest_totals t = { 0 };
	honest_add(&t, p, 6, w, 6, 83);
	assert_int_equal(t.windows, 5);
	assert_int_equal(t.feasible, 4);
	assert_int_equal(t.infeasible, 1);
	assert_int_equal(t.oracle_tokens, 400);
	assert_true(fabs(t.oracle_energy_j - 40) < 1e-12);
	assert_int_equal(t.policy_tokens, 90);
	assert_true(fabs(t.policy_energy_j - 39) < 1e-12);
	assert_int_equal(t.missed_tokens_windows, 3);
	assert_true(fabs(honest_pct(&t) - 100.0 * (90.0 / 39) / (400.0 / 40)) < 1e-9);
	/* SLA attainment over the feasible busy windows: 0, 3, 4 met, 2 missed. */
	assert_true(fabs(honest_attainment(&t) - 0.75) < 1e-12);

	/* A policy that gives up the SLA cannot beat the limit: the same
	 * windows with every SLA missed earn nothing. */
	for (size_t i = 0; i < 6; i++)
		w[i].sla_met = false;
	struct honest_totals z = { 0 };
	honest_add(&z, p, 6, w, 6, 83);
	assert_true(honest_pct(&z) == 0);
}

/* A window met over the oracle policy's thermal ceiling earns nothing, as
 * no oracle point may run there; a junction not recorded is not judged. */
static void test_over_ceiling(void **st)
{
	(void)st;
	struct oracle_pick p[] = { pick(true, false, false, 10, 1), pick(true, false, false, 10, 1),
				   pick(true, false, false, 10, 1), pick(true, false, false, 10, 1) };
	struct honest_window w[] = { win(0, true, 10, 1, 0, 0), win(1, true, 10, 1, 0, 0),
				     win(2, true, 10, 1, 0, 0), win(3, false, 10, 1, 0, 0) };
	w[1].max_junction_c = 83.5;
	w[2].max_junction_c = NAN;
	w[3].max_junction_c = 90; /* missed anyway: lost, not counted over the ceiling */
	struct honest_totals t = { 0 };
	honest_add(&t, p, 4, w, 4, 83);
	assert_int_equal(t.policy_tokens, 20);
	assert_int_equal(t.missed_tokens_windows, 2);
	assert_int_equal(t.over_ceiling, 1);
	assert_true(fabs(honest_attainment(&t) - 0.75) < 1e-12); /* the SLA's, not the ceiling's */
	assert_true(honest_window_good(&w[0], 70)); /* at the ceiling: kept */
	assert_false(honest_window_good(&w[0], 69.9));
}

/* A run that ended early: the missing windows earn nothing. */
static void test_short_run(void **st)
{
	(void)st;
	struct oracle_pick p[] = { pick(true, false, false, 10, 1), pick(true, false, false, 10, 1) };
	struct honest_window w[] = { win(0, true, 10, 1, 0, 0) };
	struct honest_totals t = { 0 };
	honest_add(&t, p, 2, w, 1, 83);
	assert_int_equal(t.policy_tokens, 10);
	assert_int_equal(t.missed_tokens_windows, 1);
	assert_true(fabs(honest_attainment(&t) - 0.5) < 1e-12);
	struct honest_totals none = { 0 };
	assert_true(isnan(honest_pct(&none)));
	assert_true(isnan(honest_attainment(&none)));
}

static void test_windows_roundtrip(void **st)
{
	(void)st;
	char path[] = "/tmp/test_honest_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	struct honest_window w[] = { win(0, true, 12345, 678.25, 0, 0), win(1, false, 0, 3.5, 2, 7) };
	w[1].idle = true;
	w[1].tail = true;
	w[0].max_junction_c = 82.125;
	w[1].max_junction_c = NAN;
	assert_int_equal(honest_windows_write(f, w, 2), 0);
	fclose(f);
	struct honest_window *r = NULL;
	size_t n = 0;
	struct diag_list d = { 0 };
	assert_int_equal(honest_windows_load(path, &r, &n, &d), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].tokens, 12345);
	assert_true(r[0].energy_all_j == 678.25);
	assert_true(r[1].idle && r[1].tail && !r[1].sla_met);
	assert_int_equal(r[1].clamp_events, 2);
	assert_int_equal(r[1].breach_requests, 7);
	assert_true(r[0].max_junction_c == 82.125);
	assert_true(isnan(r[1].max_junction_c));
	free(r);
	diag_clear(&d);
	unlink(path);
}

static int load_text(const char *text, struct diag_list *d)
{
	char path[] = "/tmp/test_honest_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct honest_window *r = NULL;
	size_t n = 0;
	int rc = honest_windows_load(path, &r, &n, d);
	free(r);
	unlink(path);
	return rc;
}

static void test_windows_bad(void **st)
{
	(void)st;
	static const char hdr[] = "index,tail,idle,sla_met,tokens,energy_j,clamp_events,"
				  "breach_requests,failed,max_junction_c\n";
	static const char *const rows[] = {
		"0,0,0,1,10,1.5,0,0,0\n",       /* 9 fields */
		"0,0,0,1,10,1.5,0,0,0,70,1\n",  /* 11 fields */
		"0,2,0,1,10,1.5,0,0,0,70\n",    /* bool 2 */
		"0,0,0,1,-1,1.5,0,0,0,70\n",    /* negative tokens */
		"0,0,0,1,10,nan,0,0,0,70\n",    /* energy nan */
		"0,0,0,1,10,-3,0,0,0,70\n",     /* negative energy */
		"x,0,0,1,10,1,0,0,0,70\n",      /* index */
		"0,0,0,1,10,1,0,0,0,inf\n",     /* junction inf */
		"0,0,0,1,10,1,0,0,0,-300\n",    /* junction under absolute zero */
		"0,0,0,1,10,1,0,0,0,hot\n",     /* junction not a number */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[512];
		snprintf(text, sizeof(text), "%s%s", hdr, rows[i]);
		struct diag_list d = { 0 };
		assert_int_equal(load_text(text, &d), -EINVAL);
		assert_true(diag_count(&d, DIAG_ERROR) == 1);
		assert_int_equal(d.v[0].line, 2);
		diag_clear(&d);
	}
	struct diag_list d = { 0 };
	/* a file from before max_junction_c: read, the junction not judged */
	assert_int_equal(load_text("index,tail,idle,sla_met,tokens,energy_j,clamp_events,"
				   "breach_requests,failed\n0,0,0,1,10,1.5,0,0,0\n",
				   &d),
			 0);
	assert_int_equal(load_text("index,tail,idle,sla_met,tokens,energy_j,clamp_events,"
				   "breach_requests,failed\n0,0,0,1,10,1.5,0,0,0,70\n",
				   &d),
			 -EINVAL);
	diag_clear(&d);
	assert_int_equal(load_text("", &d), -EINVAL);
	diag_clear(&d);
	assert_int_equal(load_text("index,tail\n", &d), -EINVAL);
	diag_clear(&d);
	assert_int_equal(honest_windows_load("/nonexistent/w.csv", &(struct honest_window *){ 0 },
					     &(size_t){ 0 }, &d),
			 -ENOENT);
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accounting),
		cmocka_unit_test(test_short_run),
		cmocka_unit_test(test_over_ceiling),
		cmocka_unit_test(test_windows_roundtrip),
		cmocka_unit_test(test_windows_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
