/* Node power budget: floors first, spare by weighted request, capped devices'
 * surplus re-divided by headroom, never over the budget. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "governor/fleet/budget.h"

static struct budget_actor gpu(uint32_t req_mw, double w)
{
	struct budget_actor a = { .min_mw = 200000, .max_mw = 700000, .request_mw = req_mw,
				  .weight = w };
	return a;
}

static void test_split_by_request(void **st)
{
	struct budget_actor a[2] = { gpu(300000, 1), gpu(600000, 1) };
	struct budget_result r;
	/* spare 600 W over requests above the floor 100 : 400 -> 120 : 480 */
	assert_int_equal(budget_divvy(1000000, a, 2, &r), 0);
	assert_false(r.infeasible);
	assert_int_equal(r.granted_mw[0], 320000);
	assert_int_equal(r.granted_mw[1], 680000);
	assert_int_equal(r.granted_total_mw, 1000000);
}

static void test_weights(void **st)
{
	struct budget_actor a[2] = { gpu(400000, 3), gpu(400000, 1) };
	struct budget_result r;
	/* equal requests, weight 3:1 over a 400 W spare -> 300 : 100 */
	assert_int_equal(budget_divvy(800000, a, 2, &r), 0);
	assert_int_equal(r.granted_mw[0], 500000);
	assert_int_equal(r.granted_mw[1], 300000);
}

static void test_capped_surplus_goes_by_headroom(void **st)
{
	/* A asks for everything, B and C little: A's proportional share is over
	 * its max, the surplus goes to B and C in proportion to their headroom. */
	struct budget_actor a[3] = { gpu(700000, 1), gpu(210000, 1), gpu(220000, 1) };
	struct budget_result r;
	assert_int_equal(budget_divvy(1500000, a, 3, &r), 0);
	/* spare 900 W, requests 500:10:20 of 530 -> A 849 W over its 500 W range */
	assert_int_equal(r.granted_mw[0], 700000);
	uint64_t b = r.granted_mw[1] - 200000, c = r.granted_mw[2] - 200000;
	assert_true(b > 16000 && c > 33000);
	assert_true(r.granted_total_mw <= 1500000);
	assert_true(r.granted_total_mw >= 1500000 - 3);
	/* headroom after the first pass: B 483 W, C 466 W: B gets a bit more of the extra */
	assert_true(b - 16981 > c - 33962);
}

static void test_budget_above_all_max(void **st)
{
	struct budget_actor a[2] = { gpu(300000, 1), gpu(600000, 1) };
	struct budget_result r;
	assert_int_equal(budget_divvy(5000000, a, 2, &r), 0);
	assert_int_equal(r.granted_mw[0], 700000);
	assert_int_equal(r.granted_mw[1], 700000);
	assert_false(r.infeasible);
}

static void test_infeasible_gives_floors(void **st)
{
	struct budget_actor a[3] = { gpu(700000, 1), gpu(700000, 1), gpu(700000, 1) };
	struct budget_result r;
	assert_int_equal(budget_divvy(500000, a, 3, &r), 0);
	assert_true(r.infeasible);
	assert_int_equal(r.short_mw, 100000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r.granted_mw[i], 200000);
}

static void test_all_idle_split_by_weight(void **st)
{
	/* every request at or below the floor: nothing to go by but weights */
	struct budget_actor a[2] = { gpu(90000, 1), gpu(0, 1) };
	struct budget_result r;
	assert_int_equal(budget_divvy(600000, a, 2, &r), 0);
	assert_int_equal(r.granted_mw[0], 300000);
	assert_int_equal(r.granted_mw[1], 300000);
}

static void test_never_over_budget(void **st)
{
	/* odd numbers that do not divide: floors of shares stay under budget */
	struct budget_actor a[8];
	for (int i = 0; i < 8; i++) {
		a[i] = gpu(200001 + 77777u * (uint32_t)i, 1.0 + 0.37 * i);
		a[i].min_mw = 100003;
		a[i].max_mw = 700001 - 1001u * (uint32_t)i;
	}
	for (uint64_t b = 800024; b < 6000000; b += 123457) {
		struct budget_result r;
		assert_int_equal(budget_divvy(b, a, 8, &r), 0);
		uint64_t sum = 0;
		for (int i = 0; i < 8; i++) {
			assert_true(r.granted_mw[i] >= a[i].min_mw);
			assert_true(r.granted_mw[i] <= a[i].max_mw);
			sum += r.granted_mw[i];
		}
		assert_int_equal(sum, r.granted_total_mw);
		assert_true(sum <= b);
	}
}

static void test_bad_input(void **st)
{
	struct budget_actor a[2] = { gpu(300000, 1), gpu(300000, 0) };
	struct budget_result r;
	assert_int_equal(budget_divvy(1000000, a, 0, &r), -EINVAL);
	assert_int_equal(budget_divvy(1000000, a, 2, &r), -EINVAL);
	a[1].weight = 1;
	a[1].min_mw = 800000;
	assert_int_equal(budget_divvy(1000000, a, 2, &r), -EINVAL);
	assert_int_equal(budget_divvy(1000000, a, BUDGET_MAX_DEVICES + 1, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_by_request),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_capped_surplus_goes_by_headroom),
		cmocka_unit_test(test_budget_above_all_max),
		cmocka_unit_test(test_infeasible_gives_floors),
		cmocka_unit_test(test_all_idle_split_by_weight),
		cmocka_unit_test(test_never_over_budget),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
