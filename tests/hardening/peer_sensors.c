/* Hardening, peers: sensor and meter readings that are implausible, and
 * faults that must clear when their cause does (issue 12, item 7). Every
 * backend's readings (sysfs, NVML, Modbus, sim) pass governor/telemetry/validate.c;
 * these feed it what a broken or swapped device reports:
 * - an energy counter that steps back once (meter reset or swapped) used to
 *   be "backwards" until restart: now that period only;
 * - a timestamp from the future used to become the reference, making every
 *   later reading "stale" until the clock caught up: now it is stale itself;
 * - an energy counter rising faster than any rail can draw is out of range
 *   (and re-based, so it does not latch either). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "governor/telemetry/validate.h"

static struct validator v;

static void reset(void)
{
	const struct validate_cfg cfg = { .stale_ms = 2000, .stuck_periods = 10, .stuck_witness_w = 5 };
	assert_int_equal(validate_init(&v, &cfg), 0);
}

/* One period at t_ms: the required signals good, energy_host as given. */
static enum gov_fault step(uint64_t t_ms, uint64_t energy_t_ms, double energy_j, enum gov_signal want_sig)
{
	struct gov_reading in[GOV_SIG_N];
	enum gov_fault out[GOV_SIG_N];
	memset(in, 0, sizeof(in));
	for (int s = 0; s < GOV_SIG_N; s++)
		in[s].t_ms = t_ms;
	in[GOV_SIG_POWER_ACCEL] = (struct gov_reading){ 300 + (double)(t_ms % 7), t_ms, true, true };
	in[GOV_SIG_TEMP_JUNCTION] = (struct gov_reading){ 60 + (double)(t_ms % 5), t_ms, true, true };
	in[GOV_SIG_CLOCK] = (struct gov_reading){ 1500, t_ms, true, true };
	in[GOV_SIG_ENERGY_HOST] = (struct gov_reading){ energy_j, energy_t_ms, true, true };
	validate_step(&v, t_ms, in, out);
	return out[want_sig];
}

static void test_energy_step_back_clears(void **state)
{
	(void)state;
	reset();
	assert_int_equal(step(1000, 1000, 5000, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	assert_int_equal(step(1500, 1500, 5100, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	/* the meter was reset: counts from 10 J */
	assert_int_equal(step(2000, 2000, 10, GOV_SIG_ENERGY_HOST), GOV_FAULT_BACKWARDS);
	assert_int_equal(step(2500, 2500, 110, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	assert_int_equal(step(3000, 3000, 210, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	/* and a second step back is named again */
	assert_int_equal(step(3500, 3500, 5, GOV_SIG_ENERGY_HOST), GOV_FAULT_BACKWARDS);
	assert_int_equal(step(4000, 4000, 50, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
}

static void test_future_timestamp_does_not_latch(void **state)
{
	(void)state;
	reset();
	assert_int_equal(step(1000, 1000, 100, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	/* one reading stamped an hour ahead */
	assert_int_equal(step(1500, 3601500, 150, GOV_SIG_ENERGY_HOST), GOV_FAULT_STALE);
	assert_int_equal(step(2000, 2000, 200, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	assert_int_equal(step(2500, 2500, 250, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
}

static void test_energy_faster_than_any_rail(void **state)
{
	(void)state;
	reset();
	assert_int_equal(step(1000, 1000, 100, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	/* 1e12 J in half a second: 2e12 W */
	assert_int_equal(step(1500, 1500, 1e12, GOV_SIG_ENERGY_HOST), GOV_FAULT_RANGE);
	/* re-based on it: counting on from there is fine again */
	assert_int_equal(step(2000, 2000, 1e12 + 200, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
	/* a plausible rate (500 W) is no fault */
	assert_int_equal(step(2500, 2500, 1e12 + 450, GOV_SIG_ENERGY_HOST), GOV_FAULT_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_energy_step_back_clears),
		cmocka_unit_test(test_future_timestamp_does_not_latch),
		cmocka_unit_test(test_energy_faster_than_any_rail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
