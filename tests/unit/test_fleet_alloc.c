/* governor/fleet_alloc: targets (floors, priority, demand, headroom,
 * hysteresis, infeasible budgets) and the phased write (decreases before
 * increases); a seeded randomised run (seed printed; GOVD_TEST_SEED
 * overrides it) asserting the budget and the floors every round. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "common/rng.h"
#include "governor/fleet/fleet_alloc.h"

static struct fleet_rec rec(uint64_t floor, uint64_t max, uint64_t demand, int prio)
{
	return (struct fleet_rec){ .floor_mw = floor, .max_mw = max, .demand_mw = demand,
				   .priority = prio };
}

static uint64_t sum(const uint64_t *v, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s;
}

static void test_floors_then_priority(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	struct fleet_rec r[3] = { rec(100, 1000, 900, 0), rec(100, 1000, 900, 1),
				  rec(100, 1000, 200, 1) };
	uint64_t out[3];
	struct fleet_target_result res;
	assert_int_equal(fleet_target(1200, r, 3, NULL, &p, out, &res), 0);
	assert_false(res.infeasible);
	assert_int_equal(res.floors_mw, 300);
	/* priority 1 gets its demand in full (800 + 100 above floors), the
	 * low-priority node what is left above its floor */
	assert_int_equal(out[1], 900);
	assert_int_equal(out[2], 200);
	assert_int_equal(out[0], 100);
	assert_int_equal(sum(out, 3), 1200);
}

static void test_class_shares_by_demand(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	struct fleet_rec r[2] = { rec(100, 1000, 700, 0), rec(100, 1000, 400, 0) };
	uint64_t out[2];
	struct fleet_target_result res;
	/* 400 above floors; wants 600 and 300: shares 2:1 */
	assert_int_equal(fleet_target(600, r, 2, NULL, &p, out, &res), 0);
	assert_int_equal(out[0], 100 + 266);
	assert_int_equal(out[1], 100 + 133);
	assert_true(sum(out, 2) <= 600);
}

static void test_leftover_by_headroom(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	struct fleet_rec r[2] = { rec(100, 300, 100, 0), rec(100, 1100, 100, 0) };
	uint64_t out[2];
	struct fleet_target_result res;
	/* nobody asks; 600 above floors spread by headroom 200:1000, and
	 * never past a maximum */
	assert_int_equal(fleet_target(800, r, 2, NULL, &p, out, &res), 0);
	assert_int_equal(out[0], 200);
	assert_int_equal(out[1], 600);
	assert_int_equal(fleet_target(5000, r, 2, NULL, &p, out, &res), 0);
	assert_int_equal(out[0], 300);
	assert_int_equal(out[1], 1100);
}

static void test_leftover_high_priority_first(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	struct fleet_rec r[3] = { rec(100, 1000, 200, 0), rec(100, 1000, 200, 2),
				  rec(100, 500, 200, 2) };
	uint64_t out[3];
	struct fleet_target_result res;
	/* demands met (600), 700 left: priority 2 fills its headroom first
	 * (800 + 300 > 700: shared 8:3), the low one keeps its demand and
	 * the 1 mW the shares rounded away */
	assert_int_equal(fleet_target(1300, r, 3, NULL, &p, out, &res), 0);
	assert_int_equal(out[0], 201);
	assert_int_equal(out[1], 200 + 509);
	assert_int_equal(out[2], 200 + 190);
	/* more than priority 2 can take: the rest goes down a class */
	assert_int_equal(fleet_target(2000, r, 3, NULL, &p, out, &res), 0);
	assert_int_equal(out[1], 1000);
	assert_int_equal(out[2], 500);
	assert_int_equal(out[0], 500);
}

static void test_infeasible_stays_in_budget(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	struct fleet_rec r[2] = { rec(300, 1000, 900, 0), rec(100, 1000, 900, 0) };
	uint64_t out[2];
	struct fleet_target_result res;
	assert_int_equal(fleet_target(200, r, 2, NULL, &p, out, &res), 0);
	assert_true(res.infeasible);
	assert_int_equal(out[0], 150);
	assert_int_equal(out[1], 50);
}

static void test_hysteresis_two_thresholds(void **state)
{
	(void)state;
	const struct fleet_params p = { .up_frac = 0.05, .down_frac = 0.10 };
	struct fleet_rec r[2] = { rec(100, 1000, 520, 0), rec(100, 1000, 480, 0) };
	uint64_t out[2], cur[2] = { 500, 500 };
	struct fleet_target_result res;
	/* targets 520 (+4 %) and 480 (-4 %): inside both bands, kept */
	assert_int_equal(fleet_target(1000, r, 2, cur, &p, out, &res), 0);
	assert_int_equal(out[0], 500);
	assert_int_equal(out[1], 500);
	/* 560 (+12 %) is raised; 440 (-12 %) lowered */
	r[0].demand_mw = 560;
	r[1].demand_mw = 440;
	assert_int_equal(fleet_target(1000, r, 2, cur, &p, out, &res), 0);
	assert_int_equal(out[0], 560);
	assert_int_equal(out[1], 440);
	/* 540 (+8 %) raised, 460 (-8 %) kept: 1040 > budget, the kept one goes
	 * to its target */
	r[0].demand_mw = 540;
	r[1].demand_mw = 460;
	assert_int_equal(fleet_target(1000, r, 2, cur, &p, out, &res), 0);
	assert_int_equal(out[0], 540);
	assert_int_equal(out[1], 460);
	/* a grant no longer inside the node's range is not kept */
	r[1].max_mw = 400;
	r[1].demand_mw = 380;
	cur[0] = 620;
	assert_int_equal(fleet_target(1000, r, 2, cur, &p, out, &res), 0);
	assert_true(out[1] <= 400);
}

static void test_bad_input(void **state)
{
	(void)state;
	const struct fleet_params p = FLEET_PARAMS_DEFAULT, bad = { .up_frac = 2 };
	struct fleet_rec r[1] = { rec(500, 100, 0, 0) };
	uint64_t out[1];
	struct fleet_target_result res;
	assert_int_equal(fleet_target(1000, r, 1, NULL, &p, out, &res), -EINVAL);
	r[0] = rec(0, 100, 0, 0);
	assert_int_equal(fleet_target(1000, r, 1, NULL, &bad, out, &res), -EINVAL);
	assert_int_equal(fleet_target(1000, r, FLEET_MAX_NODES + 1, NULL, &p, out, &res), -EINVAL);
	assert_int_equal(fleet_target(1000, r, 0, NULL, &p, out, &res), 0);
}

static void test_phase_decrease_first(void **state)
{
	(void)state;
	/* 600 moves from node 0 to node 1 under a 1000 budget */
	struct fleet_rec r[2] = { rec(100, 1000, 0, 0), rec(100, 1000, 0, 0) };
	uint64_t prev[2] = { 800, 200 }, target[2] = { 200, 800 }, w[2];
	r[0].applied_mw = 800;
	r[1].applied_mw = 200;
	/* round 1: node 0 lowered, node 1 waits (node 0 still runs at 800) */
	assert_int_equal(fleet_phase(1000, r, 2, prev, NULL, target, w, NULL), 1);
	assert_int_equal(w[0], 200);
	assert_int_equal(w[1], 200);
	/* node 0 acknowledges: node 1 raised */
	r[0].applied_mw = 200;
	prev[0] = w[0];
	assert_int_equal(fleet_phase(1000, r, 2, prev, NULL, target, w, NULL), 0);
	assert_int_equal(w[1], 800);
}

static void test_phase_new_node_and_priority(void **state)
{
	(void)state;
	/* a node without a grant runs at its safe budget (its applied) */
	struct fleet_rec r[3] = { rec(0, 1000, 0, 0), rec(0, 1000, 0, 5), rec(0, 1000, 0, 0) };
	uint64_t prev[3] = { 300, 300, FLEET_NO_GRANT }, target[3] = { 300, 500, 200 }, w[3];
	r[0].applied_mw = 300;
	r[1].applied_mw = 300;
	r[2].applied_mw = 150;
	/* head = 1000 - 750 = 250: priority 5 takes 200, the new node 50 more */
	assert_int_equal(fleet_phase(1000, r, 3, prev, NULL, target, w, NULL), 0);
	assert_int_equal(w[1], 500);
	assert_int_equal(w[2], 150 + 50);
	assert_int_equal(w[0], 300);
	/* over budget already: only decreases */
	r[2].applied_mw = 900;
	assert_int_equal(fleet_phase(1000, r, 3, prev, NULL, target, w, NULL), 1);
	assert_int_equal(w[1], 300);
	assert_int_equal(w[2], 200); /* below what it applies: no exposure added */
}

static uint64_t test_seed(void)
{
	const char *s = getenv("GOVD_TEST_SEED");
	return s ? strtoull(s, NULL, 0) : 20261201;
}

/* Random groups and budgets, rounds of target + phase with nodes that read
 * their grant late, or read it and fail to acknowledge it: every round the
 * written grants sum <= budget, the exposure bounds what the nodes actually
 * run (a node runs the last grant it read, which may be one it never
 * acknowledged) and stays <= budget once it was, floors honoured when
 * feasible, no grant above a maximum; a steady group converges. */
static void test_random_rounds(void **state)
{
	(void)state;
	uint64_t seed = test_seed();
	printf("seed %llu (GOVD_TEST_SEED)\n", (unsigned long long)seed);
	struct rng g;
	rng_seed(&g, seed);
	static struct fleet_rec r[200];
	static uint64_t grant[200], target[200], w[200], run[200], exposed[200], ex_next[200];
	const struct fleet_params p = FLEET_PARAMS_DEFAULT;
	for (int trial = 0; trial < 300; trial++) {
		size_t n = 1 + rng_u64(&g) % 200;
		uint64_t floors = 0, maxes = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t f = rng_u64(&g) % 200000, m = f + rng_u64(&g) % 600000;
			r[i] = rec(f, m, rng_u64(&g) % (m + 100000), (int)(rng_u64(&g) % 4));
			floors += f;
			maxes += m;
			grant[i] = FLEET_NO_GRANT;
			r[i].applied_mw = 0;
			run[i] = 0;
			exposed[i] = FLEET_NO_GRANT;
		}
		uint64_t budget = floors + rng_u64(&g) % (maxes - floors + 1);
		if (trial % 10 == 0)
			budget = floors / 2; /* infeasible */
		bool steady = trial % 3 == 0;
		size_t pending = 0;
		for (int round = 0; round < 40; round++) {
			if (!steady && rng_uniform(&g) < 0.3)
				for (size_t i = 0; i < n; i++)
					r[i].demand_mw = rng_u64(&g) % (r[i].max_mw + 100000);
			if (!steady && rng_uniform(&g) < 0.1)
				budget = floors + rng_u64(&g) % (maxes - floors + 1);
			struct fleet_target_result res;
			assert_int_equal(fleet_target(budget, r, n, grant, &p, target, &res), 0);
			assert_true(res.granted_mw <= budget);
			assert_int_equal(sum(target, n), res.granted_mw);
			for (size_t i = 0; i < n; i++) {
				assert_true(target[i] <= r[i].max_mw);
				if (!res.infeasible)
					assert_true(target[i] >= r[i].floor_mw);
			}
			/* the exposure the last round left (what nodes may run) */
			uint64_t exp_before = 0;
			for (size_t i = 0; i < n; i++)
				exp_before += exposed[i] == FLEET_NO_GRANT ? r[i].applied_mw : exposed[i];
			pending = fleet_phase(budget, r, n, grant, exposed, target, w, ex_next);
			for (size_t i = 0; i < n; i++) {
				assert_true(w[i] <= target[i]);
				exposed[i] = ex_next[i];
			}
			assert_true(sum(w, n) <= budget);
			/* each node reads its new grant (70 %, and acknowledges it),
			 * reads it and fails to acknowledge it (15 %), or reads
			 * nothing this round (15 %: it runs what it ran) */
			for (size_t i = 0; i < n; i++) {
				grant[i] = w[i];
				double u = rng_uniform(&g);
				if (u < 0.85)
					run[i] = w[i];
				if (u < 0.7)
					r[i].applied_mw = w[i];
			}
			/* the exposure bounds what runs, and stays within the
			 * budget once it was */
			assert_true(sum(run, n) <= sum(exposed, n));
			if (exp_before <= budget)
				assert_true(sum(exposed, n) <= budget);
		}
		if (steady) {
			/* one more round with every node acknowledged */
			for (size_t i = 0; i < n; i++)
				r[i].applied_mw = grant[i];
			struct fleet_target_result res;
			fleet_target(budget, r, n, grant, &p, target, &res);
			pending = fleet_phase(budget, r, n, grant, exposed, target, w, NULL);
			assert_int_equal(pending, 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floors_then_priority),
		cmocka_unit_test(test_class_shares_by_demand),
		cmocka_unit_test(test_leftover_by_headroom),
		cmocka_unit_test(test_leftover_high_priority_first),
		cmocka_unit_test(test_infeasible_stays_in_budget),
		cmocka_unit_test(test_hysteresis_two_thresholds),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_phase_decrease_first),
		cmocka_unit_test(test_phase_new_node_and_priority),
		cmocka_unit_test(test_random_rounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
