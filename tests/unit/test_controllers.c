/* Controller steps are pure: estimates + state in, op point + reason out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/controllers/controller.h"
#include "governor/controllers/ctl_internal.h"

static struct hal_limits lim_h200(void)
{
	struct hal_limits l = {
		.clk_min_khz = 345000, .clk_max_khz = 1980000, .clk_step_khz = 15000,
		.clk_default_max_khz = 1980000,
		.power_limit_min_mw = 200000, .power_limit_max_mw = 700000,
		.power_limit_default_mw = 700000,
	};
	return l;
}

struct fixture {
	struct policy pol;
	struct hal_limits lim;
	struct gov_estimates est;
	struct gov_opoint cur;
	struct policy_slices slices;
	struct ctl_input in;
};

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	policy_defaults(&f->pol);
	f->lim = lim_h200();
	f->est.util = NAN;
	for (int t = 0; t < HAL_TEMP_N; t++)
		f->est.temp_c[t] = NAN;
	f->cur.clk_min_khz = f->lim.clk_min_khz;
	f->cur.clk_max_khz = f->lim.clk_default_max_khz;
	f->cur.power_limit_mw = 700000;
	f->cur.n_slices = 2;
	f->in = (struct ctl_input){ .est = &f->est, .pol = &f->pol, .lim = &f->lim, .cur = &f->cur,
				    .period_s = 0.5, .slices = &f->slices };
	f->slices.n = 2;
}

static void add_param(struct policy *p, const char *name, double v)
{
	struct policy_param *pp = &p->control.params[p->control.n_params++];
	snprintf(pp->name, sizeof(pp->name), "%s", name);
	pp->value = v;
}

static void run_step(const struct controller_ops *c, struct fixture *f, struct ctl_output *out)
{
	void *st = NULL;
	if (c->init)
		assert_int_equal(c->init(&st, &f->pol, &f->lim), 0);
	memset(out, 0, sizeof(*out));
	c->step(st, &f->in, out);
	if (c->fini)
		c->fini(st);
}

static void test_registry(void **state)
{
	(void)state;
	const char *names[] = { "firmware-default", "static", "naive-int8", "ondemand", "ipa",
				"slo-dvfs", "govd" };
	char buf[256];
	for (size_t i = 0; i < 7; i++) {
		const struct controller_ops *c = controller_find(names[i]);
		assert_non_null(c);
		assert_string_equal(c->name, names[i]);
		assert_non_null(c->step);
		assert_non_null(strstr(controller_names_joined(buf, sizeof(buf)), names[i]));
	}
	assert_null(controller_find("performance"));
	assert_int_equal(controller_count(), 7);
	assert_non_null(controller_param(controller_find("ipa"), "switch_on_c"));
	assert_null(controller_param(controller_find("ipa"), "upthreshold"));
}

static void test_firmware_default(void **state)
{
	(void)state;
	struct fixture f;
	struct ctl_output out;
	fx_init(&f);
	f.cur.power_limit_mw = 300000;
	f.cur.int8_frac[0] = 1;
	run_step(&ctl_firmware_default, &f, &out);
	assert_false(out.op.clk_locked);
	assert_int_equal(out.op.power_limit_mw, 700000);
	assert_true(out.op.int8_frac[0] == 0 && out.op.int8_frac[1] == 0);
	assert_int_equal(out.reasons, GOV_R_FIRMWARE_DEFAULT);
}

static void test_static_and_naive_int8(void **state)
{
	(void)state;
	struct fixture f;
	struct ctl_output out;
	fx_init(&f);
	f.pol.frequency.min_mhz = 900;
	f.pol.frequency.max_mhz = 1410;
	f.pol.power.cap_w = 450;
	f.slices.rule[0].int8_fraction = 0.25;
	f.slices.rule[1].int8_fraction = 1.0;
	run_step(&ctl_static, &f, &out);
	assert_true(out.op.clk_locked);
	assert_int_equal(out.op.clk_min_khz, 900000);
	assert_int_equal(out.op.clk_max_khz, 1410000);
	assert_int_equal(out.op.power_limit_mw, 450000);
	assert_true(out.op.int8_frac[0] == 0.25 && out.op.int8_frac[1] == 1.0);
	assert_int_equal(out.reasons, GOV_R_STATIC);

	/* values just under a whole MHz/W (decimal policy numbers) round as the
	 * guard rounds them, rather than truncating one kHz/mW below */
	f.pol.frequency.min_mhz = 899.9999999;
	f.pol.frequency.max_mhz = 1409.9999999;
	f.pol.power.cap_w = 449.9999999;
	run_step(&ctl_static, &f, &out);
	assert_int_equal(out.op.clk_min_khz, 900000);
	assert_int_equal(out.op.clk_max_khz, 1410000);
	assert_int_equal(out.op.power_limit_mw, 450000);
	assert_int_equal(gov_mhz_to_khz(1409.9995), 1410000);
	assert_int_equal(gov_mhz_to_khz(1409.9994), 1409999);
	assert_int_equal(gov_mhz_to_khz(0), 0);
	assert_int_equal(gov_w_to_mw(-1), 0);

	run_step(&ctl_naive_int8, &f, &out);
	assert_false(out.op.clk_locked);
	assert_int_equal(out.op.power_limit_mw, 700000);
	assert_true(out.op.int8_frac[0] == 1.0 && out.op.int8_frac[1] == 1.0);
	assert_int_equal(out.reasons, GOV_R_INT8_ALL);
}

static void test_ondemand_maths(void **state)
{
	(void)state;
	uint32_t r;
	/* busy > 90 %: max */
	assert_int_equal(ondemand_target_khz(95, 1000000, 1980000, 90, 5, &r), 1980000);
	assert_int_equal(r, GOV_R_UTIL_HIGH);
	/* 85 < busy <= 90: keep */
	assert_int_equal(ondemand_target_khz(88, 1000000, 1980000, 90, 5, &r), 1000000);
	assert_int_equal(r, GOV_R_UTIL_KEEP);
	/* busy 44 %: cur * 44 / (90 - 5/2 = 88) = cur / 2 */
	assert_int_equal(ondemand_target_khz(44, 1600000, 1980000, 90, 5, &r), 800000);
	assert_int_equal(r, GOV_R_UTIL_SCALE);
	/* exactly 85 is not above 85: scale (85/88) */
	assert_int_equal(ondemand_target_khz(85, 880000, 1980000, 90, 5, &r), 850000);
	/* no statistics or unknown current clock: max */
	assert_int_equal(ondemand_target_khz(NAN, 1000000, 1980000, 90, 5, &r), 1980000);
	assert_int_equal(r, GOV_R_UTIL_UNKNOWN);
	assert_int_equal(ondemand_target_khz(30, 0, 1980000, 90, 5, &r), 1980000);
	/* custom thresholds: up 80, down 20 -> denominator 70 */
	assert_int_equal(ondemand_target_khz(35, 1400000, 1980000, 80, 20, &r), 700000);
}

static void test_ondemand_step(void **state)
{
	(void)state;
	struct fixture f;
	struct ctl_output out;
	fx_init(&f);
	f.cur.clk_locked = true;
	f.cur.clk_min_khz = f.cur.clk_max_khz = 1500000;
	f.est.util = 0.5; /* 1500 * 50 / 88 = 852.27 MHz -> next table step up: 855 */
	run_step(&ctl_ondemand, &f, &out);
	assert_true(out.op.clk_locked);
	assert_int_equal(out.op.clk_max_khz, 855000);
	assert_int_equal(out.op.clk_min_khz, 855000);
	assert_int_equal(out.reasons, GOV_R_UTIL_SCALE);
	assert_int_equal(out.binding, GOV_B_UTILISATION);
	assert_true(out.op.int8_frac[0] == 0);

	f.est.util = 0.97;
	run_step(&ctl_ondemand, &f, &out);
	assert_int_equal(out.op.clk_max_khz, 1980000);

	/* unlocked counts as running at the default max */
	f.cur.clk_locked = false;
	f.est.util = 0.22; /* 1980 * 22 / 88 = 495 */
	run_step(&ctl_ondemand, &f, &out);
	assert_int_equal(out.op.clk_max_khz, 495000);

	/* parameters from the policy */
	add_param(&f.pol, "upthreshold", 60);
	add_param(&f.pol, "downdifferential", 10);
	f.est.util = 0.61;
	run_step(&ctl_ondemand, &f, &out);
	assert_int_equal(out.reasons, GOV_R_UTIL_HIGH);

	/* the kernel's sanity check: upthreshold < downdifferential is rejected */
	fx_init(&f);
	add_param(&f.pol, "upthreshold", 5);
	add_param(&f.pol, "downdifferential", 10);
	void *st = NULL;
	assert_int_equal(ctl_ondemand.init(&st, &f.pol, &f.lim), -EINVAL);
}

/* The parameter table is where defaults live: init reads them from there. */
static void test_param_defaults(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	assert_true(controller_param(&ctl_ondemand, "upthreshold")->def == 90);
	assert_true(controller_param(&ctl_ondemand, "downdifferential")->def == 5);
	assert_true(ctl_param_value(&f.pol, &ctl_ondemand, "upthreshold") == 90);
	add_param(&f.pol, "upthreshold", 70);
	assert_true(ctl_param_value(&f.pol, &ctl_ondemand, "upthreshold") == 70);
	assert_true(ctl_param_value(&f.pol, &ctl_ondemand, "downdifferential") == 5);

	void *st = NULL;
	assert_int_equal(ctl_ondemand.init(&st, &f.pol, &f.lim), 0);
	const struct ondemand_state *od = st;
	assert_true(od->upthreshold == 70 && od->downdifferential == 5);
	ctl_ondemand.fini(st);

	/* ipa: fixed defaults from the table, NaN ones derived by init */
	fx_init(&f);
	assert_true(isnan(ctl_param_value(&f.pol, &ctl_ipa, "k_po")));
	assert_int_equal(ctl_ipa.init(&st, &f.pol, &f.lim), 0);
	const struct ipa_state *ipa = st;
	assert_true(ipa->switch_on_c == controller_param(&ctl_ipa, "switch_on_c")->def);
	assert_true(ipa->k_d == controller_param(&ctl_ipa, "k_d")->def);
	assert_true(ipa->integral_cutoff_c == controller_param(&ctl_ipa, "integral_cutoff_c")->def);
	assert_true(ipa->sustainable_power_w == 200);     /* device minimum limit */
	assert_true(ipa->control_temp_c == f.pol.thermal.ceiling_c);
	ctl_ipa.fini(st);
}

static void test_ipa_gains(void **state)
{
	(void)state;
	struct ipa_state s;
	ipa_setup(&s, 450, 83, 70, 700);
	assert_true(fabs(s.k_po - 450.0 / 13) < 1e-9);
	assert_true(fabs(s.k_pu - 900.0 / 13) < 1e-9);
	assert_true(fabs(s.k_i - 90.0 / 13) < 1e-9);
	assert_true(s.k_d == 0 && s.integral_cutoff_c == 0);
	/* without a switch-on trip the kernel measures from 0 */
	ipa_setup(&s, 415, 83, -1, 700);
	assert_true(fabs(s.k_po - 5.0) < 1e-9);
	/* degenerate trips: gains stay 0, output is the sustainable power */
	ipa_setup(&s, 450, 70, 70, 700);
	assert_true(s.k_po == 0 && s.k_pu == 0 && s.k_i == 0);
}

static void test_ipa_throttle(void **state)
{
	(void)state;
	struct ipa_state s;
	uint32_t r;
	ipa_setup(&s, 450, 83, 70, 700);

	/* below switch-on: maximum power, PID reset */
	s.err_integral_c = -7;
	assert_true(ipa_throttle(&s, 60, 500, &r) == 700);
	assert_int_equal(r, GOV_R_IPA_IDLE);
	assert_true(s.err_integral_c == 0 && !s.passive);

	/* at the control temperature: sustainable power, no integration (err 0 is not < cutoff 0) */
	assert_true(fabs(ipa_throttle(&s, 83, 500, &r) - 450) < 1e-9);
	assert_int_equal(r, GOV_R_IPA_PID);
	assert_true(s.err_integral_c == 0);

	/* undershoot (err +2): k_pu * 2, still no integration */
	double p = ipa_throttle(&s, 81, 500, &r);
	assert_true(fabs(p - (450 + 2 * 900.0 / 13)) < 1e-9);
	/* far below: clamped to max allocatable power */
	assert_true(ipa_throttle(&s, 72, 500, &r) == 700);
	assert_true(s.err_integral_c == 0);

	/* overshoot (err -2): k_po * -2 + k_i * -2, integral accumulates */
	p = ipa_throttle(&s, 85, 500, &r);
	assert_true(fabs(p - (450 - 2 * 450.0 / 13 - 2 * 90.0 / 13)) < 1e-9);
	assert_true(s.err_integral_c == -2);
	p = ipa_throttle(&s, 85, 500, &r);
	assert_true(fabs(p - (450 - 2 * 450.0 / 13 - 4 * 90.0 / 13)) < 1e-9);

	/* anti-windup: the integral term never reaches max power; output clamps at 0 */
	for (int i = 0; i < 10000; i++)
		p = ipa_throttle(&s, 95, 500, &r);
	assert_true(fabs(s.k_i * s.err_integral_c) < 700);
	assert_true(p == 0);
	/* overshoot gone: the wound-down integral keeps the power below sustainable */
	p = ipa_throttle(&s, 82, 500, &r);
	assert_true(p < 450);
}

static void test_ipa_step(void **state)
{
	(void)state;
	struct fixture f;
	struct ctl_output out;
	fx_init(&f);
	f.pol.thermal.ceiling_c = 83;
	add_param(&f.pol, "sustainable_power_w", 450);
	add_param(&f.pol, "switch_on_c", 70);
	f.est.temp_c[HAL_TEMP_JUNCTION] = 86;
	run_step(&ctl_ipa, &f, &out);
	assert_false(out.op.clk_locked);
	assert_int_equal(out.reasons, GOV_R_IPA_PID);
	assert_int_equal(out.binding, GOV_B_THERMAL);
	/* 450 - 3 * 450/13 - 3 * 90/13 = 325.38 W */
	assert_int_equal(out.op.power_limit_mw, 325385);
	f.est.temp_c[HAL_TEMP_JUNCTION] = 50;
	run_step(&ctl_ipa, &f, &out);
	assert_int_equal(out.op.power_limit_mw, 700000);
	assert_int_equal(out.reasons, GOV_R_IPA_IDLE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_firmware_default),
		cmocka_unit_test(test_static_and_naive_int8),
		cmocka_unit_test(test_ondemand_maths),
		cmocka_unit_test(test_ondemand_step),
		cmocka_unit_test(test_param_defaults),
		cmocka_unit_test(test_ipa_gains),
		cmocka_unit_test(test_ipa_throttle),
		cmocka_unit_test(test_ipa_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
