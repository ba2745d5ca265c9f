/* Validator: every telemetry problem gets its name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "governor/telemetry/validate.h"

static struct hal_value hv(int64_t v, uint64_t t_ms)
{
	struct hal_value x = { .v = v, .t_ms = t_ms, .valid = true };
	return x;
}

static void good_sample(struct hal_sample *s, uint64_t t_ms)
{
	memset(s, 0, sizeof(*s));
	s->t_ms = t_ms;
	int64_t pw[HAL_RAIL_N] = { 450000, 80000, 120000 };
	int64_t tc[HAL_TEMP_N] = { 70000, 65000, 25000 };
	for (int r = 0; r < HAL_RAIL_N; r++) {
		s->power_mw[r] = hv(pw[r] + (int64_t)t_ms, t_ms);
		s->energy_mj[r] = hv((int64_t)t_ms * 100, t_ms);
	}
	for (int t = 0; t < HAL_TEMP_N; t++)
		s->temp_mc[t] = hv(tc[t] + (t == 2 ? 0 : (int64_t)t_ms / 10), t_ms);
	s->clk_khz = hv(1980000, t_ms);
	s->power_limit_mw = hv(700000, t_ms);
	s->util_pct = hv(90 + (int64_t)(t_ms / 500) % 5, t_ms);
}

struct run {
	struct validator v;
	enum gov_fault f[GOV_SIG_N];
	unsigned n;
};

static void step(struct run *r, const struct hal_sample *s)
{
	struct gov_reading rd[GOV_SIG_N];
	gov_readings_from_sample(s, rd);
	r->n = validate_step(&r->v, s->t_ms, rd, r->f);
}

static void setup(struct run *r)
{
	struct validate_cfg c = { .stale_ms = 1500, .stuck_periods = 4, .stuck_witness_w = 5 };
	memset(r, 0, sizeof(*r));
	assert_int_equal(validate_init(&r->v, &c), 0);
}

static void test_clean(void **state)
{
	(void)state;
	struct run r;
	struct hal_sample s;
	setup(&r);
	for (uint64_t t = 0; t < 20000; t += 500) {
		good_sample(&s, t);
		step(&r, &s);
		assert_int_equal(r.n, 0);
	}
	assert_int_equal(r.v.onsets, 0);
	validate_fini(&r.v);
}

static void test_named_faults(void **state)
{
	(void)state;
	struct run r;
	struct hal_sample s;
	setup(&r);
	good_sample(&s, 0);
	step(&r, &s);

	good_sample(&s, 500);
	s.temp_mc[HAL_TEMP_JUNCTION].v = HAL_V_NAN;
	s.temp_mc[HAL_TEMP_JUNCTION].nan = true;
	s.power_mw[HAL_RAIL_ACCEL].nan = true; /* the flag alone says NaN */
	s.power_mw[HAL_RAIL_HOST].valid = false;
	s.temp_mc[HAL_TEMP_MEMORY].v = -274000; /* below absolute zero */
	s.power_mw[HAL_RAIL_MEMORY].v = -5000;  /* negative power */
	s.clk_khz.t_ms = 0;                     /* 500 ms old: not yet stale */
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_NAN);
	assert_int_equal(r.f[GOV_SIG_POWER_HOST], GOV_FAULT_DROPOUT);
	assert_int_equal(r.f[GOV_SIG_TEMP_MEMORY], GOV_FAULT_RANGE);
	assert_int_equal(r.f[GOV_SIG_POWER_MEMORY], GOV_FAULT_RANGE);
	assert_int_equal(r.f[GOV_SIG_POWER_ACCEL], GOV_FAULT_NAN);
	assert_int_equal(r.f[GOV_SIG_CLOCK], GOV_FAULT_NONE);
	assert_int_equal(r.n, 5);
	assert_int_equal(r.v.onsets, 5);
	assert_string_equal(gov_fault_name(r.f[GOV_SIG_TEMP_JUNCTION]), "nan");
	assert_string_equal(gov_signal_name(GOV_SIG_TEMP_MEMORY), "temp_memory");
	assert_string_equal(gov_fault_name(GOV_FAULT_RANGE), "out_of_range");

	good_sample(&s, 2500);
	s.clk_khz.t_ms = 500; /* 2 s old > stale_ms */
	s.energy_mj[HAL_RAIL_ACCEL].v = 10;   /* counter went backwards */
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_CLOCK], GOV_FAULT_STALE);
	assert_int_equal(r.f[GOV_SIG_ENERGY_ACCEL], GOV_FAULT_BACKWARDS);
	assert_int_equal(r.f[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_NONE);

	/* a timestamp going backwards is stale too */
	good_sample(&s, 3000);
	s.temp_mc[HAL_TEMP_INLET].t_ms = 2000;
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_TEMP_INLET], GOV_FAULT_STALE);
	assert_true(gov_signal_critical(GOV_SIG_TEMP_JUNCTION));
	assert_false(gov_signal_critical(GOV_SIG_POWER_HOST));
}

static void test_stuck_needs_witness(void **state)
{
	(void)state;
	struct run r;
	struct hal_sample s;
	setup(&r);
	/* junction frozen while accel power moves by > 5 W: stuck after 4 repeats */
	int stuck_at = -1;
	for (int i = 0; i < 10; i++) {
		good_sample(&s, (uint64_t)i * 500);
		s.temp_mc[HAL_TEMP_JUNCTION].v = 71000;
		s.power_mw[HAL_RAIL_ACCEL].v = 400000 + i * 10000;
		step(&r, &s);
		if (r.f[GOV_SIG_TEMP_JUNCTION] == GOV_FAULT_STUCK && stuck_at < 0)
			stuck_at = i;
	}
	assert_int_equal(stuck_at, 4);
	/* a change clears it */
	good_sample(&s, 5000);
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_NONE);

	/* frozen while the witness is steady too: plausible steady state, no fault */
	setup(&r);
	for (int i = 0; i < 20; i++) {
		good_sample(&s, (uint64_t)i * 500);
		s.temp_mc[HAL_TEMP_JUNCTION].v = 71000;
		s.power_mw[HAL_RAIL_ACCEL].v = 400000 + (i % 2) * 1000; /* 1 W jitter */
		step(&r, &s);
		assert_int_equal(r.f[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_NONE);
	}
	/* signals without a witness are never stuck (inlet is steady by nature) */
	assert_int_equal(r.f[GOV_SIG_TEMP_INLET], GOV_FAULT_NONE);
}

static void test_optional_signals(void **state)
{
	(void)state;
	struct run r;
	struct hal_sample s;
	setup(&r);
	/* a backend without energy counters or a memory sensor: not a fault,
	 * in the first period nor in later ones (it was never there to lose) */
	for (uint64_t t = 0; t <= 2000; t += 500) {
		good_sample(&s, t);
		for (int k = 0; k < HAL_RAIL_N; k++)
			s.energy_mj[k].valid = false;
		s.temp_mc[HAL_TEMP_MEMORY].valid = false;
		step(&r, &s);
		assert_int_equal(r.n, 0);
	}
	validate_fini(&r.v);
	setup(&r);
	/* a required signal missing from the start is */
	good_sample(&s, 500);
	s.temp_mc[HAL_TEMP_JUNCTION].valid = false;
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_DROPOUT);
	/* an optional one that was seen and then lost is a dropout */
	good_sample(&s, 1000);
	step(&r, &s);
	good_sample(&s, 1500);
	s.power_mw[HAL_RAIL_HOST].valid = false;
	step(&r, &s);
	assert_int_equal(r.f[GOV_SIG_POWER_HOST], GOV_FAULT_DROPOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_named_faults),
		cmocka_unit_test(test_stuck_needs_witness),
		cmocka_unit_test(test_optional_signals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
