/* govctl report: window classification, clock sensitivity, cost ranking and
 * the run's class. The rules live in govctl's sources (not a library), so the
 * pure file is compiled into this test directly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"

static const struct rp_thresholds *th = &rp_default_thresholds;

/* A busy, unremarkable window: 60 periods at max clock, 50 % busy, power well
 * under the limit, no queue, host 20 % of power, no sensitivity measured. */
static struct rp_wstats busy(void)
{
	struct rp_wstats w = {
		.t0_s = 0, .t1_s = 60, .periods = 60, .tokens = 6000, .energy_j = 24000,
		.mean_util = 0.5, .mean_clk_mhz = 1980, .min_clk_mhz = 1980, .max_tj_c = 70,
		.ceiling_c = 83, .slowdown_c = 89, .mean_accel_w = 300, .mean_limit_w = 700,
		.power_ratio = 300.0 / 700.0, .host_share = 0.2, .mean_queue = 0, .max_queue = 0,
		.busy = true, .judged = true, .clock_sens = NAN,
	};
	w.tpj = w.tokens / w.energy_j;
	return w;
}

static void test_idle(void **state)
{
	struct rp_wstats w = busy();
	w.busy = false;
	w.clamp_periods = 5; /* idle wins: nothing was served, so nothing to blame */
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_IDLE);
}

static void test_thermal_by_clamp_with_evidence(void **state)
{
	struct rp_wstats w = busy();
	w.clamp_periods = 3;
	w.max_tj_c = 88.9;
	w.min_clk_mhz = 915;
	w.mean_queue = 50;     /* queueing too, but the clamp caused it */
	w.power_ratio = 0.99; /* and at the cap */
	char why[512];
	assert_int_equal(rp_classify(&w, th, why, sizeof(why)), RP_C_THERMAL);
	assert_non_null(strstr(why, "hardware slowdown in 3 period(s)"));
	assert_non_null(strstr(why, "junction max 88.9 C vs ceiling 83.0 C"));
	assert_non_null(strstr(why, "clock min 915 MHz"));
}

static void test_thermal_by_ceiling_or_trim(void **state)
{
	struct rp_wstats w = busy();
	w.max_tj_c = 83.0; /* at the ceiling counts */
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_THERMAL);
	w.max_tj_c = 82.9;
	assert_int_not_equal(rp_classify(&w, th, NULL, 0), RP_C_THERMAL);
	w.swtherm_periods = 1;
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_THERMAL);
}

static void test_power_cap(void **state)
{
	struct rp_wstats w = busy();
	w.power_ratio = 0.95;
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_POWER_CAP);
	w.power_ratio = 0.94;
	w.cap_periods = 11; /* 18 % of 60 */
	assert_int_not_equal(rp_classify(&w, th, NULL, 0), RP_C_POWER_CAP);
	w.cap_periods = 12; /* 20 % */
	char why[512];
	assert_int_equal(rp_classify(&w, th, why, sizeof(why)), RP_C_POWER_CAP);
	assert_non_null(strstr(why, "power-cap throttle in 20% of periods"));
}

static void test_queueing(void **state)
{
	struct rp_wstats w = busy();
	w.mean_queue = 3.9;
	assert_int_not_equal(rp_classify(&w, th, NULL, 0), RP_C_QUEUEING);
	w.mean_queue = 4.0;
	w.max_queue = 40;
	char why[512];
	assert_int_equal(rp_classify(&w, th, why, sizeof(why)), RP_C_QUEUEING);
	assert_non_null(strstr(why, "queue depth mean 4.0, max 40"));
}

static void test_host(void **state)
{
	struct rp_wstats w = busy();
	w.host_share = 0.40;
	w.mean_util = 0.30;
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_HOST);
	w.mean_util = 0.60; /* the accelerator is the busy one: not the host */
	assert_int_not_equal(rp_classify(&w, th, NULL, 0), RP_C_HOST);
	w.mean_util = 0.30;
	w.host_share = 0.34;
	assert_int_not_equal(rp_classify(&w, th, NULL, 0), RP_C_HOST);
}

static void test_compute_memory_unresolved(void **state)
{
	struct rp_wstats w = busy();
	char why[512];
	assert_int_equal(rp_classify(&w, th, why, sizeof(why)), RP_C_UNRESOLVED);
	assert_non_null(strstr(why, "not measurable"));
	w.clock_sens = 0.5;
	assert_int_equal(rp_classify(&w, th, NULL, 0), RP_C_COMPUTE);
	w.clock_sens = 0.49;
	w.sens_pooled = true;
	assert_int_equal(rp_classify(&w, th, why, sizeof(why)), RP_C_MEMORY);
	assert_non_null(strstr(why, "run-wide median"));
}

static void test_clock_sensitivity(void **state)
{
	/* Compute-bound: half the clock, twice the busy time. */
	assert_float_equal(rp_clock_sensitivity(0.8, 990, 0, 0.4, 1980, 0, th), 1.0, 1e-12);
	/* Memory-bound: busy time unchanged. */
	assert_float_equal(rp_clock_sensitivity(0.4, 990, 0, 0.4, 1980, 0, th), 0.0, 1e-12);
	/* Symmetric in the pair. */
	assert_float_equal(rp_clock_sensitivity(0.4, 1980, 0, 0.6, 1200, 0, th),
			   rp_clock_sensitivity(0.6, 1200, 0, 0.4, 1980, 0, th), 1e-12);
	/* Clocks within 5 %: not measurable. */
	assert_true(isnan(rp_clock_sensitivity(0.4, 1900, 0, 0.5, 1980, 0, th)));
	/* Different precision mix: INT8 changes busy time by itself. */
	assert_true(isnan(rp_clock_sensitivity(0.8, 990, 1.0, 0.4, 1980, 0, th)));
	assert_true(isnan(rp_clock_sensitivity(0, 990, 0, 0.4, 1980, 0, th)));
}

static void test_cost(void **state)
{
	assert_float_equal(rp_window_cost_j(1000, 150, 0.2), 250, 1e-9);
	assert_float_equal(rp_window_cost_j(1000, 250, 0.2), 0, 0); /* better than "best": no cost */
	assert_float_equal(rp_window_cost_j(1000, 150, 0), 0, 0);
	assert_float_equal(rp_window_cost_j(1000, 150, NAN), 0, 0);
}

static void test_rank_and_run_class(void **state)
{
	struct rp_wstats w[5];
	for (int i = 0; i < 5; i++)
		w[i] = busy();
	w[0].cls = RP_C_IDLE;
	w[0].cost_j = 1e6; /* idle cost is never ranked */
	w[1].cls = RP_C_QUEUEING;
	w[1].cost_j = 300;
	w[2].cls = RP_C_THERMAL;
	w[2].cost_j = 100;
	w[3].cls = RP_C_QUEUEING;
	w[3].cost_j = 200;
	w[4].cls = RP_C_MEMORY;
	w[4].cost_j = 0;
	struct rp_rank r[RP_C_N];
	size_t n = rp_rank_classes(w, 5, 1000, 5000, r, RP_C_N);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].cls, RP_C_QUEUEING);
	assert_int_equal(r[0].windows, 2);
	assert_float_equal(r[0].cost_j, 500, 1e-9);
	assert_float_equal(r[0].share_of_energy, 0.1, 1e-12);
	assert_float_equal(r[0].tpj_if_removed, 1000.0 / 4500.0, 1e-12);
	assert_int_equal(r[1].cls, RP_C_THERMAL);
	assert_int_equal(r[2].cls, RP_C_MEMORY);
	/* A run that clamped is thermal-bound even when queueing costs more. */
	assert_int_equal(rp_run_class(r, n, 2), RP_C_THERMAL);
	assert_int_equal(rp_run_class(r, n, 0), RP_C_QUEUEING);
	assert_int_equal(rp_run_class(r, 0, 0), RP_C_IDLE);
	/* cap truncates */
	assert_int_equal(rp_rank_classes(w, 5, 1000, 5000, r, 1), 1);
	assert_int_equal(r[0].cls, RP_C_QUEUEING);
}

static void test_slope_pearson(void **state)
{
	const double x[4] = { 0, 1, 2, 3 }, y[4] = { 1, 3, 5, 7 }, z[4] = { 2, 2, 2, 2 };
	assert_float_equal(rp_slope(x, y, 4), 2.0, 1e-12);
	assert_float_equal(rp_pearson(x, y, 4), 1.0, 1e-12);
	assert_true(isnan(rp_pearson(x, z, 4)));
	assert_true(isnan(rp_slope(x, y, 1)));
	const double yn[4] = { 7, 5, 3, 1 };
	assert_float_equal(rp_pearson(x, yn, 4), -1.0, 1e-12);
}

static void test_names(void **state)
{
	assert_string_equal(rp_class_name(RP_C_THERMAL), "thermal-bound");
	assert_string_equal(rp_class_name(RP_C_HOST), "host-orchestration-bound");
	assert_string_equal(rp_class_key(RP_C_POWER_CAP), "power_cap");
	assert_string_equal(rp_class_name(RP_C_N), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_thermal_by_clamp_with_evidence),
		cmocka_unit_test(test_thermal_by_ceiling_or_trim),
		cmocka_unit_test(test_power_cap),
		cmocka_unit_test(test_queueing),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_compute_memory_unresolved),
		cmocka_unit_test(test_clock_sensitivity),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_rank_and_run_class),
		cmocka_unit_test(test_slope_pearson),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
