/* Guard: device and policy envelope, step limits, power cap, safe point. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "governor/loop/guard.h"

static const struct hal_limits lim = {
	.clk_min_khz = 345000, .clk_max_khz = 1980000, .clk_step_khz = 15000,
	.clk_default_max_khz = 1980000, .power_limit_min_mw = 200000,
	.power_limit_max_mw = 700000, .power_limit_default_mw = 700000,
};

static struct gov_opoint unlocked(void)
{
	struct gov_opoint o = { .clk_locked = false, .clk_min_khz = 345000, .clk_max_khz = 1980000,
				.power_limit_mw = 700000, .n_slices = 2 };
	return o;
}

static struct gov_opoint locked(uint32_t lo, uint32_t hi)
{
	struct gov_opoint o = unlocked();
	o.clk_locked = true;
	o.clk_min_khz = lo;
	o.clk_max_khz = hi;
	return o;
}

static void apply(struct guard *g, const struct gov_opoint *cur, const struct gov_opoint *want,
		  bool fault, struct gov_opoint *out, uint32_t *r, enum gov_binding *b)
{
	*r = 0;
	*b = GOV_B_NONE;
	guard_apply(g, cur, want, fault, out, r, b);
}

static void test_passthrough_and_device_clamp(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur = unlocked(), want, out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	assert_int_equal(guard_init(&g, &p, &lim), 0);

	want = unlocked();
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_true(gov_opoint_equal(&out, &want));
	assert_int_equal(r, 0);
	assert_int_equal(b, GOV_B_NONE);

	want = locked(100000, 2500000);
	want.power_limit_mw = 900000;
	want.int8_frac[0] = NAN;
	want.int8_frac[1] = 1.5;
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.clk_min_khz, 345000);
	assert_int_equal(out.clk_max_khz, 1980000);
	assert_int_equal(out.power_limit_mw, 700000);
	assert_true(out.int8_frac[0] == 0 && out.int8_frac[1] == 1);
	assert_true(r & GOV_R_CLAMP_DEVICE);
	assert_int_equal(b, GOV_B_DEVICE_LIMIT);

	want = unlocked();
	want.power_limit_mw = 50000;
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.power_limit_mw, 200000);
	guard_fini(&g);
}

static void test_policy_range_and_cap(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur = unlocked(), want, out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	p.frequency.min_mhz = 600;
	p.frequency.max_mhz = 1500;
	p.power.cap_w = 500;
	assert_int_equal(guard_init(&g, &p, &lim), 0);

	/* unlocked becomes the policy's range */
	want = unlocked();
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_true(out.clk_locked);
	assert_int_equal(out.clk_min_khz, 600000);
	assert_int_equal(out.clk_max_khz, 1500000);
	assert_true(r & GOV_R_CLAMP_POLICY_FREQ);
	/* the cap binds last */
	assert_int_equal(out.power_limit_mw, 500000);
	assert_true(r & GOV_R_CLAMP_POWER_CAP);
	assert_int_equal(b, GOV_B_POWER_CAP);

	want = locked(345000, 1800000);
	want.power_limit_mw = 400000;
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.clk_min_khz, 600000);
	assert_int_equal(out.clk_max_khz, 1500000);
	assert_int_equal(out.power_limit_mw, 400000);
	assert_int_equal(b, GOV_B_POLICY_FREQ);
}

static void test_step_limit(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur, want, out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	p.frequency.max_step_mhz = 150;
	assert_int_equal(guard_init(&g, &p, &lim), 0);

	/* unlocked counts as default max: 1980 -> 1000 goes to 1830 */
	cur = unlocked();
	want = locked(1000000, 1000000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.clk_max_khz, 1830000);
	assert_int_equal(out.clk_min_khz, 495000); /* 345 + 150 */
	assert_true(r & GOV_R_STEP_LIMIT);
	assert_int_equal(b, GOV_B_STEP_LIMIT);

	/* within the step: untouched */
	cur = locked(900000, 900000);
	want = locked(1000000, 1000000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.clk_max_khz, 1000000);
	assert_false(r & GOV_R_STEP_LIMIT);

	/* unlocking from far below climbs one step at a time */
	cur = locked(600000, 600000);
	want = unlocked();
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_true(out.clk_locked);
	assert_int_equal(out.clk_max_khz, 750000);
	assert_true(r & GOV_R_STEP_LIMIT);
}

static void test_safe_point(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur = unlocked(), want, out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	p.safe_point.clk_max_mhz = 1200;
	p.safe_point.power_cap_w = 400;
	p.safe_point.hold_periods = 2;
	p.frequency.max_step_mhz = 15; /* the safe point ignores step limits */
	assert_int_equal(guard_init(&g, &p, &lim), 0);

	want = unlocked();
	want.int8_frac[0] = 1;
	apply(&g, &cur, &want, true, &out, &r, &b);
	assert_true(out.clk_locked);
	assert_int_equal(out.clk_max_khz, 1200000);
	assert_int_equal(out.power_limit_mw, 400000);
	assert_true(out.int8_frac[0] == 0);
	assert_int_equal(r, GOV_R_SAFE_POINT);
	assert_int_equal(b, GOV_B_SAFE_POINT);

	/* two clean periods held, then the controller's wish again */
	cur = out;
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(r, GOV_R_SAFE_HOLD);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(r, GOV_R_SAFE_HOLD);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_false(r & (GOV_R_SAFE_HOLD | GOV_R_SAFE_POINT));
	assert_true(out.int8_frac[0] == 1);

	/* a safe point without clocks/power set: firmware default clocks, default limit */
	policy_defaults(&p);
	assert_int_equal(guard_init(&g, &p, &lim), 0);
	guard_safe_point(&g, 2, &out);
	assert_false(out.clk_locked);
	assert_int_equal(out.power_limit_mw, 700000);
}

/* Outside the envelope: the safe point (under the budget), no step limit;
 * a critical fault still reads as safe_point. */
static void test_envelope_and_budget(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur = unlocked(), want = unlocked(), out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	p.safe_point.clk_max_mhz = 1200;
	p.safe_point.power_cap_w = 400;
	p.safe_point.hold_periods = 0;
	p.power.cap_w = 600;
	p.frequency.max_step_mhz = 15;
	assert_int_equal(guard_init(&g, &p, &lim), 0);
	assert_int_equal(guard_cap_mw(&g), 600000);

	guard_set_envelope(&g, true);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(r, GOV_R_ENVELOPE);
	assert_int_equal(b, GOV_B_ENVELOPE);
	assert_int_equal(out.clk_max_khz, 1200000);
	assert_int_equal(out.power_limit_mw, 400000);
	apply(&g, &cur, &want, true, &out, &r, &b);
	assert_int_equal(r, GOV_R_SAFE_POINT);
	/* the budget binds the safe point too */
	guard_set_budget_mw(&g, 300000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(r, GOV_R_ENVELOPE);
	assert_int_equal(out.power_limit_mw, 300000);
	guard_set_envelope(&g, false);

	/* back inside: the controller's wish under min(policy cap, budget) */
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.power_limit_mw, 300000);
	assert_int_equal(r, GOV_R_CLAMP_POWER_CAP);
	assert_int_equal(b, GOV_B_POWER_CAP);
	guard_set_budget_mw(&g, 650000); /* above the policy cap: the policy's */
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.power_limit_mw, 600000);
	guard_set_budget_mw(&g, 1000); /* never under the device minimum */
	assert_int_equal(guard_cap_mw(&g), 200000);
	/* 0 is a budget of 0 (the device minimum), never "no budget" */
	guard_set_budget_mw(&g, 0);
	assert_int_equal(guard_cap_mw(&g), 200000);
	guard_clear_budget(&g);
	assert_int_equal(guard_cap_mw(&g), 600000);

	/* emergency: safe point now, then held like a fault */
	p.safe_point.hold_periods = 1;
	r = 0;
	guard_emergency(&g, 2, &out, &r, &b);
	assert_int_equal(r, GOV_R_SAFE_POINT);
	assert_int_equal(out.clk_max_khz, 1200000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(r, GOV_R_SAFE_HOLD);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_false(r & (GOV_R_SAFE_HOLD | GOV_R_SAFE_POINT));
}

/* power.budget_w: the accelerator allowance from the counted rails and the
 * window's accumulated excess. */
static void test_policy_budget(void **state)
{
	(void)state;
	struct guard_budget b = { 0 };
	struct { double power_w[HAL_RAIL_N]; } e = { { 0 } };
	e.power_w[HAL_RAIL_ACCEL] = 300;
	e.power_w[HAL_RAIL_MEMORY] = 20;
	e.power_w[HAL_RAIL_HOST] = 60;

	/* No budget: no allowance. */
	assert_true(isinf(guard_budget_allowance_w(&b, e.power_w, POLICY_RAILS_ALL, 0, 60, 0.5)));
	/* Under budget (380 of 400 W): the accelerator may take 400 - 80. */
	double a = guard_budget_allowance_w(&b, e.power_w, POLICY_RAILS_ALL, 400, 60, 0.5);
	assert_true(fabs(a - 320) < 1e-9);
	/* Only the accelerator counted: the whole budget is its. */
	struct guard_budget b2 = { 0 };
	a = guard_budget_allowance_w(&b2, e.power_w, POLICY_RAIL_BIT(HAL_RAIL_ACCEL), 350, 60, 0.5);
	assert_true(fabs(a - 350) < 1e-9);
	/* Over budget for a while: the allowance drops below budget - other
	 * by the window's accumulated excess, and recovers as it is paid back. */
	struct guard_budget b3 = { 0 };
	e.power_w[HAL_RAIL_ACCEL] = 500;
	for (int i = 0; i < 240; i++)
		a = guard_budget_allowance_w(&b3, e.power_w, POLICY_RAILS_ALL, 400, 60, 0.5);
	assert_true(b3.mean_w > 500 && a < 320 - 100);
	e.power_w[HAL_RAIL_ACCEL] = 200;
	double before = a;
	for (int i = 0; i < 240; i++)
		a = guard_budget_allowance_w(&b3, e.power_w, POLICY_RAILS_ALL, 400, 60, 0.5);
	assert_true(a > before && fabs(a - 320) < 1e-6);
}

/* A step from outside the policy's range never lands outside it; the safe
 * point stays under the policy's power cap when it sets none of its own. */
static void test_policy_range_over_step(void **state)
{
	(void)state;
	struct policy p;
	struct guard g;
	struct gov_opoint cur, want, out;
	uint32_t r;
	enum gov_binding b;
	policy_defaults(&p);
	p.frequency.min_mhz = 600;
	p.frequency.max_mhz = 1500;
	p.frequency.max_step_mhz = 150;
	p.power.cap_w = 500;
	assert_int_equal(guard_init(&g, &p, &lim), 0);

	/* firmware clocks (1980 default max, 345 min) toward 1000 */
	cur = unlocked();
	want = locked(1000000, 1000000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_true(out.clk_locked);
	assert_true(out.clk_max_khz <= 1500000 && out.clk_min_khz >= 600000);
	assert_true(out.clk_min_khz <= out.clk_max_khz);
	assert_true(r & GOV_R_CLAMP_POLICY_FREQ);
	/* inside the range the step limit still holds */
	cur = locked(600000, 1500000);
	want = locked(1000000, 1000000);
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.clk_max_khz, 1350000);
	assert_int_equal(out.clk_min_khz, 750000);
	assert_true(r & GOV_R_STEP_LIMIT);

	/* safe point without a power cap of its own: the policy cap */
	guard_safe_point(&g, 2, &out);
	assert_int_equal(out.power_limit_mw, 500000);
	r = 0;
	guard_emergency(&g, 2, &out, &r, &b);
	assert_int_equal(out.power_limit_mw, 500000);
}

/* power.budget_w through the guard: the allowance caps the applied limit,
 * a spent budget leaves the device minimum, no budget leaves the cap. */
static void test_policy_budget_caps_limit(void **state)
{
	(void)state;
	struct policy p;
	policy_defaults(&p);
	p.objective.rails = POLICY_RAIL_BIT(HAL_RAIL_ACCEL);
	struct guard g;
	assert_int_equal(guard_init(&g, &p, &lim), 0);
	double pw[HAL_RAIL_N] = { 300, 0, 0 };
	guard_policy_budget(&g, pw, 0.5);
	assert_int_equal(guard_cap_mw(&g), 700000); /* no budget set */

	p.power.budget_w = 450;
	p.power.budget_window_s = 60;
	assert_int_equal(guard_init(&g, &p, &lim), 0);
	guard_policy_budget(&g, pw, 0.5);
	assert_int_equal(guard_cap_mw(&g), 450000);
	struct gov_opoint cur = unlocked(), want = unlocked(), out;
	uint32_t r;
	enum gov_binding b;
	apply(&g, &cur, &want, false, &out, &r, &b);
	assert_int_equal(out.power_limit_mw, 450000);

	/* Far over for long: the allowance falls under the device minimum. */
	double hot[HAL_RAIL_N] = { 1500, 0, 0 };
	for (int i = 0; i < 400; i++)
		guard_policy_budget(&g, hot, 0.5);
	assert_int_equal(g.policy_budget_mw, 0);
	assert_int_equal(guard_cap_mw(&g), 200000);
	guard_fini(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_budget),
		cmocka_unit_test(test_policy_budget_caps_limit),
		cmocka_unit_test(test_passthrough_and_device_clamp),
		cmocka_unit_test(test_policy_range_and_cap),
		cmocka_unit_test(test_step_limit),
		cmocka_unit_test(test_policy_range_over_step),
		cmocka_unit_test(test_safe_point),
		cmocka_unit_test(test_envelope_and_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
