/* governor/sim/fleet_sim.c: trace errors with file:line; a run on a small
 * synthetic trace: govd's allocator and the static split never pass the
 * budget, the same seed gives the same result, more load loses more, and
 * a bad configuration is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/sim/fleet_sim.h"

static char path[64];

static void write_trace(const char *body)
{
	snprintf(path, sizeof(path), "/tmp/test_fleet_sim.%d.csv", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
}

static void test_trace_errors(void **st)
{
	(void)st;
	struct fleet_trace t;
	struct diag_list d = { 0 };
	write_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n"
		    "2023-11-16 18:17:03.9799600,4808,10\n"
		    "2023-11-16 18:17:04.0,x,8\n");
	assert_int_equal(fleet_trace_load(path, &t, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 3);
	diag_clear(&d);
	write_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n"
		    "2023-11-16 18:17:03,1,1\n"
		    "2023-11-16 18:17:02,1,1\n");
	assert_int_equal(fleet_trace_load(path, &t, &d), -EINVAL);
	assert_int_equal(d.v[0].line, 3);
	diag_clear(&d);
	write_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n");
	assert_int_equal(fleet_trace_load(path, &t, &d), -EINVAL);
	diag_clear(&d);
	assert_int_equal(fleet_trace_load("/nonexistent/t.csv", &t, &d), -ENOENT);
	diag_clear(&d);
	unlink(path);
}

/* 20 minutes: one request a second, a burst of 30 every 5 minutes. */
static void synthetic(struct fleet_trace *t)
{
	char *buf = malloc(1 << 20);
	size_t o = (size_t)sprintf(buf, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
	for (int s = 0; s < 1200; s++) {
		int n = s % 300 < 10 ? 4 : 1;
		for (int k = 0; k < n; k++)
			o += (size_t)sprintf(buf + o, "2023-11-16 18:%02d:%02d.%03d,800,%d\n", 17 + s / 60,
					     s % 60, k * 100, 50 + k);
	}
	write_trace(buf);
	free(buf);
	struct diag_list d = { 0 };
	assert_int_equal(fleet_trace_load(path, t, &d), 0);
	unlink(path);
	assert_int_equal(t->n_s, 1200);
}

static void test_runs(void **st)
{
	(void)st;
	struct fleet_trace t;
	synthetic(&t);
	struct fleet_sim_cfg c;
	fleet_sim_defaults(&c);
	c.nodes = 20;
	c.per_node = 4;
	c.hours = 2;
	c.budget_w = 20 * 4 * 330.0;
	struct fleet_sim_result r[FLEET_POLICY_N], again;
	for (int p = 0; p < FLEET_POLICY_N; p++) {
		assert_int_equal(fleet_sim_run(&c, &t, (enum fleet_policy)p, &r[p]), 0);
		assert_int_equal(r[p].accelerators, 80);
		assert_int_equal(r[p].steps, 720);
		assert_true(r[p].hp_loss >= 0 && r[p].hp_loss <= 1);
	}
	assert_int_equal(r[FLEET_STATIC].over_budget_steps, 0);
	assert_int_equal(r[FLEET_GOVD].over_budget_steps, 0);
	assert_true(r[FLEET_GOVD].max_draw_w <= c.budget_w + 1);
	assert_int_equal(fleet_sim_run(&c, &t, FLEET_GOVD, &again), 0);
	assert_memory_equal(&again, &r[FLEET_GOVD], sizeof(again));
	/* twice the load under the same budget loses no less */
	struct fleet_sim_result hi;
	c.mean_util *= 2;
	assert_int_equal(fleet_sim_run(&c, &t, FLEET_STATIC, &hi), 0);
	assert_true(hi.hp_loss + hi.lp_loss >= r[FLEET_STATIC].hp_loss + r[FLEET_STATIC].lp_loss);
	/* bad configurations */
	struct fleet_sim_cfg b = c;
	b.per_node = 65;
	assert_int_equal(fleet_sim_run(&b, &t, FLEET_GOVD, &again), -EINVAL);
	b = c;
	b.min_w = 50; /* below idle */
	assert_int_equal(fleet_sim_run(&b, &t, FLEET_GOVD, &again), -EINVAL);
	/* the fit search returns a count whose run meets the criterion */
	c.mean_util /= 2;
	struct fleet_sim_result f;
	size_t n = fleet_sim_fit(&c, &t, FLEET_GOVD, 0.01, 60, &f);
	if (n) {
		assert_true(f.hp_loss <= 0.01);
		assert_int_equal(f.over_budget_steps, 0);
		assert_int_equal(f.accelerators, n * c.per_node);
	}
	fleet_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_errors),
		cmocka_unit_test(test_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
