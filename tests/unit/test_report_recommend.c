/* govctl report: the release recommendation (GO / GO WITH CONDITIONS /
 * NO-GO) from a candidate and a baseline. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"

static const struct rp_thresholds *th = &rp_default_thresholds;

/* A candidate that passes everything, guarded, +10 % over the baseline. */
static struct rp_side good(void)
{
	return (struct rp_side){
		.tpj = 0.22, .attainment = 1.0, .attainment_goal = 0.99, .latency_ok = true,
		.breaches = 0, .quality_ok = true, .clamp_events = 0, .max_tj_c = 80,
		.slowdown_c = 89, .guard_sla = true, .guard_quality = true, .guard_thermal = true,
	};
}

static struct rp_side base(void)
{
	struct rp_side b = good();
	b.tpj = 0.20;
	b.guard_sla = b.guard_quality = b.guard_thermal = false;
	return b;
}

static bool has(const struct rp_decision *d, bool blocker, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->reasons[i].blocker == blocker && strstr(d->reasons[i].text, needle))
			return true;
	return false;
}

static void test_go(void **state)
{
	struct rp_side c = good(), b = base();
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO);
	assert_int_equal(d.n, 0);
	assert_float_equal(d.gain, 0.1, 1e-12);
	assert_non_null(strstr(d.summary, "+10.0%"));
	assert_string_equal(rp_verdict_name(d.verdict), "GO");
}

static void test_small_gain_is_conditional(void **state)
{
	struct rp_side c = good(), b = base();
	c.tpj = 0.2030; /* +1.5 % */
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "within run-to-run noise"));
}

static void test_quality_breach_blocks(void **state)
{
	struct rp_side c = good(), b = base();
	c.breaches = 2229;
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "2229 quality breach"));
	/* Live log: breaches unknown, but the drop bound said no. */
	c.breaches = NAN;
	c.quality_ok = false;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "drop bound exceeded"));
	assert_string_equal(rp_verdict_name(d.verdict), "NO-GO");
}

static void test_clamp_blocks(void **state)
{
	struct rp_side c = good(), b = base();
	c.clamp_events = 2;
	c.max_tj_c = 88.7;
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "2 hardware thermal clamp event(s)"));
}

static void test_below_baseline_blocks(void **state)
{
	struct rp_side c = good(), b = base();
	c.tpj = 0.19;
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "below the baseline"));
}

static void test_failed_blocks(void **state)
{
	struct rp_side c = good(), b = base();
	c.failed = true;
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "thermal shutdown"));
}

static void test_sla_regression_vs_capacity(void **state)
{
	struct rp_side c = good(), b = base();
	struct rp_decision d;
	/* The baseline meets the SLA, the candidate does not: a regression. */
	c.attainment = 0.95;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "SLA not met"));
	/* Both miss it and the candidate is no worse: capacity, a condition. */
	b.attainment = 0.29;
	b.latency_ok = false;
	c.latency_ok = false;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "capacity, not a regression"));
	assert_string_equal(rp_verdict_name(d.verdict), "GO WITH CONDITIONS");
	/* Both miss it and the candidate is worse: a regression again. */
	c.attainment = 0.20;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_NOGO);
}

static void test_unguarded_and_recomputed_are_conditions(void **state)
{
	struct rp_side c = good(), b = base();
	c.guard_quality = false;
	struct rp_decision d;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "quality check unguarded"));
	c = good();
	c.recomputed = true;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "recomputed from a decision log"));
	c = good();
	c.max_tj_c = 87.5; /* 1.5 C from slowdown */
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "within 2.0 C of slowdown"));
	c = good();
	c.rollbacks = 1;
	rp_recommend(&c, &b, th, &d);
	assert_int_equal(d.verdict, RP_GO_COND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go),
		cmocka_unit_test(test_small_gain_is_conditional),
		cmocka_unit_test(test_quality_breach_blocks),
		cmocka_unit_test(test_clamp_blocks),
		cmocka_unit_test(test_below_baseline_blocks),
		cmocka_unit_test(test_failed_blocks),
		cmocka_unit_test(test_sla_regression_vs_capacity),
		cmocka_unit_test(test_unguarded_and_recomputed_are_conditions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
