/* Scenario headroom (governor/sim/headroom.c): the max-clock shares are the
 * max-clock run's own p99 over the policy's targets, and the bisection's
 * lowest clock meets the goal while the table clock below it does not. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/sla.h"
#include "governor/policy/opoint.h"
#include "governor/sim/headroom.h"
#include "governor/sim/sim.h"

#define SCEN "configs/scenarios/default.yaml"
#define POL "policies/balanced.yaml"
#define DUR_S 900.0

static void run_locked(uint32_t mhz, struct sim_result *r)
{
	struct gov_opoint op;
	memset(&op, 0, sizeof(op));
	op.clk_locked = true;
	op.clk_min_khz = 345000;
	op.clk_max_khz = mhz * 1000;
	op.power_limit_mw = 700000;
	op.n_slices = 3;
	struct sim_opts so = { .scenario_path = SCEN, .policy_path = POL, .duration_s = DUR_S,
			       .no_output = true, .force_op = &op };
	struct diag_list d = { 0 };
	assert_int_equal(sim_run(&so, r, &d), 0);
	diag_clear(&d);
}

static void test_headroom_default(void **state)
{
	(void)state;
	struct headroom_opts o = { .scenario_path = SCEN, .policy_path = POL, .duration_s = DUR_S };
	struct headroom h;
	struct diag_list d = { 0 };
	assert_int_equal(headroom_measure(&o, &h, &d), 0);
	diag_clear(&d);
	print_message("default, %.0f s: TTFT p99 %.0f ms (%.2f of SLA), TBT p99 %.1f ms (%.2f), "
		      "%llu windows, lowest clock %u MHz in %u runs\n", DUR_S, h.ttft_p99_ms,
		      h.ttft_share, h.tbt_p99_ms, h.tbt_share, (unsigned long long)h.windows,
		      h.lowest_mhz, h.runs);
	assert_int_equal(h.max_mhz, 1980);
	assert_true(h.tbt_target_ms == 100 && h.ttft_target_ms == 2000);
	assert_true(fabs(h.tbt_share - h.tbt_p99_ms / 100.0) < 1e-12);

	/* The shares are the max-clock run's. */
	struct sim_result r;
	run_locked(1980, &r);
	assert_true(fabs(r.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)] - h.tbt_p99_ms) < 1e-9);

	/* Bisection: the lowest clock meets the goal, one table step below misses. */
	assert_true(h.lowest_mhz > h.min_mhz && h.lowest_mhz < h.max_mhz);
	run_locked(h.lowest_mhz, &r);
	assert_true(r.windows_met >= h.goal * r.windows);
	run_locked(h.lowest_mhz - 15, &r);
	assert_true(r.windows_met < h.goal * r.windows);
}

/* A missing scenario is an error naming it, not a row. */
static void test_headroom_bad_input(void **state)
{
	(void)state;
	struct headroom_opts o = { .scenario_path = "configs/scenarios/nope.yaml",
				   .policy_path = POL };
	struct headroom h;
	struct diag_list d = { 0 };
	assert_true(headroom_measure(&o, &h, &d) < 0);
	assert_true(d.n > 0);
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headroom_default),
		cmocka_unit_test(test_headroom_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
