/* Policy loader: every shipped policy loads; every error names file:line:col
 * and says what is allowed; loading is all-or-nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/controller.h"
#include "governor/policy.h"

static struct policy *load(const char *text, struct diag_list *d)
{
	struct policy *p = NULL;
	int rc = policy_load_string("t.yaml", text, strlen(text), &p, d);
	assert_true((rc == 0) == (p != NULL));
	return p;
}

/* The diag list printed, for substring checks. */
static char *printed(const struct diag_list *d)
{
	static char buf[8192];
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < d->n && off < sizeof(buf) - 1; i++) {
		diag_format(&d->v[i], buf + off, sizeof(buf) - off);
		off += strlen(buf + off);
		if (off < sizeof(buf) - 1)
			buf[off++] = '\n';
		buf[off] = '\0';
	}
	return buf;
}

static void test_full_policy(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	const char *text = "name: p1\n"
			   "description: all keys\n"
			   "control:\n"
			   "  controller: ipa\n"
			   "  period_ms: 250\n"
			   "  params: {sustainable_power_w: 500, switch_on_c: 65}\n"
			   "sla: {window_s: 30, ttft_p99_ms: 1500, tbt_p99_ms: 80, e2e_p99_ms: 20000,\n"
			   "      ttft_p95_ms: 900, tbt_p95_ms: 60, attainment: 0.95}\n"
			   "thermal: {ceiling_c: 80, hysteresis_c: 3}\n"
			   "power: {cap_w: 600}\n"
			   "frequency: {min_mhz: 600, max_mhz: 1800, max_step_mhz: 90}\n"
			   "precision:\n"
			   "  int8_fraction: 0.25\n"
			   "  slices: {code: 1.0, math: 0}\n"
			   "quality:\n"
			   "  default_max_drop: 0.02\n"
			   "  slices: {chat: {max_drop: 0.005}, code: {max_drop: 0.01}}\n"
			   "safe_point: {clk_max_mhz: 1200, power_cap_w: 400, int8_fraction: 0, hold_periods: 4}\n"
			   "telemetry: {ewma_tau_s: 1.5, stale_ms: 900, stuck_periods: 6}\n";
	struct policy *p = load(text, &d);
	assert_non_null(p);
	assert_int_equal(d.n, 0);
	assert_string_equal(p->name, "p1");
	assert_string_equal(p->control.controller, "ipa");
	assert_int_equal(p->control.period_ms, 250);
	assert_true(policy_param(p, "sustainable_power_w", 0) == 500);
	assert_true(policy_param(p, "k_d", -3) == -3);
	assert_true(p->sla.window_s == 30 && p->sla.tbt_p95_ms == 60 && p->sla.attainment == 0.95);
	assert_true(p->thermal.ceiling_c == 80 && p->power.cap_w == 600);
	assert_true(p->frequency.max_step_mhz == 90);
	assert_true(policy_slice_int8(p, "code") == 1.0);
	assert_true(policy_slice_int8(p, "math") == 0);
	assert_true(policy_slice_int8(p, "chat") == 0.25); /* default */
	assert_true(policy_slice_max_drop(p, "chat") == 0.005);
	assert_true(policy_slice_max_drop(p, "math") == 0.02);
	assert_true(p->safe_point.clk_max_mhz == 1200 && p->safe_point.hold_periods == 4);
	assert_int_equal(p->telemetry.stale_ms, 900);
	assert_int_equal(p->telemetry.stuck_periods, 6);
	/* hash of the bytes: the same text hashes the same, one byte more differs */
	assert_true(p->hash == fnv1a64(text, strlen(text)));
	assert_non_null(strstr(p->hash_hex, "fnv1a64:"));
	policy_free(p);
	/* FNV-1a 64 reference value ("a") */
	assert_true(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
}

static void test_defaults(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *p = load("name: m\ncontrol: {controller: firmware-default}\n", &d);
	assert_non_null(p);
	assert_int_equal(p->control.period_ms, 500);
	assert_int_equal(p->telemetry.stale_ms, 1500);
	assert_true(p->thermal.ceiling_c == 83 && p->sla.window_s == 60);
	assert_true(p->quality.default_max_drop == 0.01);
	policy_free(p);
	p = load("name: m\ncontrol: {controller: static, period_ms: 200}\n", &d);
	assert_int_equal(p->telemetry.stale_ms, 600);
	policy_free(p);
	diag_clear(&d);
}

static void test_errors_have_positions(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	const char *text = "name: bad\n"                      /* 1 */
			   "control:\n"                       /* 2 */
			   "  controller: ondemand\n"         /* 3 */
			   "  period_ms: 5\n"                 /* 4: below 10 */
			   "  params: {upthreshold: 150, sampling_rate: 3}\n" /* 5 */
			   "thermal: {ceiling_cc: 80}\n"      /* 6: unknown key */
			   "frequency: {min_mhz: 1500, max_mhz: 900}\n" /* 7: min > max */
			   "quality: {slices: {code: {max_drop: 2}}}\n" /* 8 */
			   "colour: blue\n";                  /* 9 */
	struct policy *p = load(text, &d);
	assert_null(p);
	char *s = printed(&d);
	assert_non_null(strstr(s, "t.yaml:4:"));
	assert_non_null(strstr(s, "period_ms"));
	assert_non_null(strstr(s, "t.yaml:5:"));
	assert_non_null(strstr(s, "upthreshold"));
	assert_non_null(strstr(s, "sampling_rate"));
	assert_non_null(strstr(s, "downdifferential")); /* the allowed keys are listed */
	assert_non_null(strstr(s, "t.yaml:6:"));
	assert_non_null(strstr(s, "ceiling_cc"));
	assert_non_null(strstr(s, "t.yaml:7:"));
	assert_non_null(strstr(s, "t.yaml:8:"));
	assert_non_null(strstr(s, "t.yaml:9:"));
	assert_true(diag_count(&d, DIAG_ERROR) >= 7);
	diag_clear(&d);
}

static void test_unknown_controller_and_missing(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *p = load("name: x\ncontrol:\n  controller: schedutil\n", &d);
	assert_null(p);
	char *s = printed(&d);
	assert_non_null(strstr(s, "t.yaml:3:"));
	assert_non_null(strstr(s, "schedutil"));
	for (size_t i = 0; i < controller_count(); i++)
		assert_non_null(strstr(s, controller_at(i)->name));
	diag_clear(&d);

	p = load("description: no name, no control\n", &d);
	assert_null(p);
	s = printed(&d);
	assert_non_null(strstr(s, "name"));
	assert_non_null(strstr(s, "control"));
	diag_clear(&d);

	p = load("name: [1, 2\n", &d); /* syntax error */
	assert_null(p);
	assert_true(diag_count(&d, DIAG_ERROR) >= 1);
	assert_true(d.v[0].line >= 1);
	diag_clear(&d);

	assert_int_not_equal(policy_load("/nonexistent/p.yaml", &p, &d), 0);
	assert_null(p);
	assert_non_null(strstr(printed(&d), "/nonexistent/p.yaml"));
	diag_clear(&d);
}

static void test_shipped_policies_load(void **state)
{
	(void)state;
	const char *files[] = { "policies/default.yaml", "policies/baselines/firmware-default.yaml",
				"policies/baselines/static.yaml", "policies/baselines/naive-int8.yaml",
				"policies/baselines/ondemand.yaml", "policies/baselines/ipa.yaml" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct diag_list d = { 0 };
		struct policy *p = NULL;
		int rc = policy_load(files[i], &p, &d);
		if (rc)
			diag_print(&d, stdout);
		assert_int_equal(rc, 0);
		assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
		assert_non_null(controller_find(p->control.controller));
		assert_true(p->sla.ttft_p99_ms == 2000 && p->sla.tbt_p99_ms == 100);
		policy_free(p);
		diag_clear(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_policy),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors_have_positions),
		cmocka_unit_test(test_unknown_controller_and_missing),
		cmocka_unit_test(test_shipped_policies_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
