/* Unit tests for the composite plant: determinism, event timing, sensor
 * faults, shutdown, precision routing and shadow sampling. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plant_fixture.h"
#include "plant_models/plant.h"

/* Field by field: struct plant_readings has padding that memcmp would read.
 * Values compare bit for bit so NaN faults compare equal to themselves. */
static bool readings_equal(const struct plant_readings *x, const struct plant_readings *y)
{
	return memcmp(&x->t_s, &y->t_s, sizeof(x->t_s)) == 0 &&
	       memcmp(x->value, y->value, sizeof(x->value)) == 0 &&
	       memcmp(x->valid, y->valid, sizeof(x->valid)) == 0 &&
	       memcmp(x->t_meas_s, y->t_meas_s, sizeof(x->t_meas_s)) == 0 &&
	       memcmp(x->energy_j, y->energy_j, sizeof(x->energy_j)) == 0 &&
	       memcmp(&x->util, &y->util, sizeof(x->util)) == 0 &&
	       memcmp(&x->power_limit_w, &y->power_limit_w, sizeof(x->power_limit_w)) == 0 &&
	       x->throttle == y->throttle && x->clamp_events == y->clamp_events &&
	       memcmp(&x->clamp_time_s, &y->clamp_time_s, sizeof(x->clamp_time_s)) == 0;
}

static struct plant *make(const struct fixture *f, uint64_t seed)
{
	struct diag_list d = { 0 };
	struct plant *p = NULL;
	int rc = plant_create(&f->sc, seed, &p, &d);
	if (rc)
		diag_print(&d, stdout);
	assert_int_equal(rc, 0);
	assert_non_null(p);
	diag_clear(&d);
	return p;
}

static void read_at(struct plant *p, double t_s, struct plant_readings *r)
{
	plant_advance_to(p, t_s);
	memset(r, 0, sizeof(*r)); /* padding too: readings are compared bytewise */
	plant_read(p, r);
}

static void test_time_lands_on_tick_boundaries(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 2);
	struct plant *p = make(&f, 1);
	assert_true(p->t_s == 0.0);
	plant_advance_to(p, 0.015);
	assert_int_equal(p->tick, 2);
	assert_true(fabs(p->t_s - 0.02) < 1e-12);
	plant_advance_to(p, 0.001); /* earlier: no-op */
	assert_int_equal(p->tick, 2);
	plant_advance_to(p, 1.0);
	assert_int_equal(p->tick, 100);
	/* 3 s in 0.1 s steps lands on exactly 300 ticks, no float drift. */
	for (int i = 11; i <= 30; i++)
		plant_advance_to(p, i * 0.1);
	assert_int_equal(p->tick, 300);
	plant_destroy(p);
}

static void test_same_seed_same_readings(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 6);
	fixture_event(&f, EV_INLET_C, 4, 3, 35);
	struct plant *a = make(&f, 42), *b = make(&f, 42), *c = make(&f, 43);
	plant_set_int8_fraction(a, 0, 0.5);
	plant_set_int8_fraction(b, 0, 0.5);
	plant_set_int8_fraction(c, 0, 0.5);
	struct plant_readings ra, rb, rc;
	bool differs = false;
	for (int i = 1; i <= 40; i++) {
		double t = i * 0.25;
		read_at(a, t, &ra);
		read_at(b, t, &rb);
		read_at(c, t, &rc);
		assert_true(readings_equal(&ra, &rb));
		differs |= !readings_equal(&ra, &rc);
	}
	const struct server_stats *sa = server_get_stats(a->srv), *sb = server_get_stats(b->srv);
	assert_true(sa->completed > 0);
	assert_int_equal(sa->completed, sb->completed);
	assert_int_equal(sa->tokens_int8, sb->tokens_int8);
	assert_memory_equal(a->q.samples, b->q.samples, sizeof(a->q.samples));
	assert_true(differs); /* another seed is another run */
	plant_destroy(a);
	plant_destroy(b);
	plant_destroy(c);
}

static void test_inlet_and_cooling_events_fire_and_revert(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 2);
	fixture_event(&f, EV_COOLING, 2, 0, 1.5);
	fixture_event(&f, EV_INLET_C, 5, 3, 40);
	struct plant *p = make(&f, 7);
	struct plant_readings r;
	read_at(p, 1.99, &r);
	assert_true(p->dev.cooling_factor == 1.0);
	read_at(p, 2.0, &r);
	assert_true(p->dev.cooling_factor == 1.5);
	read_at(p, 4.99, &r);
	assert_true(r.value[SENSOR_INLET] == 25.0);
	read_at(p, 5.0, &r);
	assert_true(r.value[SENSOR_INLET] == 40.0);
	read_at(p, 7.99, &r);
	assert_true(r.value[SENSOR_INLET] == 40.0);
	read_at(p, 8.0, &r);
	assert_true(r.value[SENSOR_INLET] == 25.0);
	read_at(p, 30.0, &r);
	assert_true(p->dev.cooling_factor == 1.5); /* duration 0: permanent */
	plant_destroy(p);
}

static void test_quality_drift_changes_true_drop(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 2);
	struct scenario_event *e = fixture_event(&f, EV_QUALITY_DRIFT, 3, 0, 0.2);
	e->slice = 1;
	e = fixture_event(&f, EV_QUALITY_DRIFT, 4, 2, 0.3);
	e->slice = 0;
	struct plant *p = make(&f, 7);
	plant_advance_to(p, 2.99);
	assert_true(plant_true_drop(p, 1, false) == 0.02);
	plant_advance_to(p, 3.0);
	assert_true(plant_true_drop(p, 1, false) == 0.2);
	assert_true(plant_true_drop(p, 0, false) == 0.01);
	plant_advance_to(p, 4.0);
	assert_true(plant_true_drop(p, 0, false) == 0.3);
	plant_advance_to(p, 5.99);
	assert_true(plant_true_drop(p, 0, false) == 0.3);
	plant_advance_to(p, 6.0); /* timed drift: back to the scenario's drop */
	assert_true(plant_true_drop(p, 0, false) == 0.01);
	plant_advance_to(p, 60.0);
	assert_true(plant_true_drop(p, 1, false) == 0.2); /* duration 0: permanent */
	plant_destroy(p);
}

static void test_load_scale_burst_and_end(void **state)
{
	(void)state;
	struct fixture f, g;
	fixture_init(&f, 4);
	fixture_init(&g, 4);
	fixture_event(&g, EV_LOAD_SCALE, 10, 10, 5);
	struct plant *base = make(&f, 3), *burst = make(&g, 3);
	uint64_t a[3], b[3];
	double ts[3] = { 10, 20, 40 };
	for (int i = 0; i < 3; i++) {
		plant_advance_to(base, ts[i]);
		plant_advance_to(burst, ts[i]);
		a[i] = server_get_stats(base->srv)->arrived;
		b[i] = server_get_stats(burst->srv)->arrived;
	}
	assert_int_equal(a[0], b[0]); /* same stream before the burst */
	assert_true(a[1] - a[0] > 10);
	assert_true((double)(b[1] - b[0]) > 3.0 * (double)(a[1] - a[0]));
	/* After it ends the rate is back: 20 s at 4 rps, far below 5x. */
	assert_true((double)(b[2] - b[1]) < 2.0 * (double)(a[2] - a[1]));
	plant_destroy(base);
	plant_destroy(burst);
}

static void test_sensor_faults_appear_and_clear(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 6);
	struct scenario_event *e;
	e = fixture_event(&f, EV_SENSOR_FAULT, 2, 4, 0);
	e->sensor = SENSOR_JUNCTION;
	e->fault = FAULT_STUCK;
	e = fixture_event(&f, EV_SENSOR_FAULT, 3, 1, 0);
	e->sensor = SENSOR_POWER_ACCEL;
	e->fault = FAULT_NAN;
	e = fixture_event(&f, EV_SENSOR_FAULT, 3, 1, 0);
	e->sensor = SENSOR_MEMORY_TEMP;
	e->fault = FAULT_DROPOUT;
	e = fixture_event(&f, EV_SENSOR_FAULT, 3, 1, -274);
	e->sensor = SENSOR_INLET;
	e->fault = FAULT_VALUE;
	e = fixture_event(&f, EV_METER_LOSS, 3, 2, 0);
	e->sensor = SENSOR_POWER_HOST;
	struct plant *p = make(&f, 11);
	plant_set_int8_fraction(p, 0, 1.0);
	struct plant_readings r;

	read_at(p, 1.99, &r);
	for (int s = 0; s < SENSOR_N; s++) {
		assert_true(r.valid[s]);
		assert_false(isnan(r.value[s]));
		assert_true(r.t_meas_s[s] == r.t_s);
	}
	read_at(p, 2.0, &r);
	double stuck = r.value[SENSOR_JUNCTION];
	assert_true(stuck == p->dev.tj_c); /* frozen at the fault's start */

	read_at(p, 3.5, &r);
	assert_true(r.value[SENSOR_JUNCTION] == stuck);
	assert_true(p->dev.tj_c != stuck); /* the die moved on, under load */
	assert_true(r.valid[SENSOR_JUNCTION]);
	assert_true(r.t_meas_s[SENSOR_JUNCTION] == r.t_s); /* stuck still reports fresh */
	assert_true(isnan(r.value[SENSOR_POWER_ACCEL]));
	assert_true(r.valid[SENSOR_POWER_ACCEL]);
	assert_false(r.valid[SENSOR_MEMORY_TEMP]);
	assert_true(r.t_meas_s[SENSOR_MEMORY_TEMP] == 3.0); /* last data: the dropout's start */
	assert_true(r.value[SENSOR_INLET] == -274.0);
	assert_false(r.valid[SENSOR_POWER_HOST]);
	assert_true(r.valid[SENSOR_POWER_MEMORY]);
	assert_true(r.valid[SENSOR_CLOCK]);

	read_at(p, 4.0, &r); /* 1 s faults end */
	assert_true(r.valid[SENSOR_MEMORY_TEMP]);
	assert_true(r.value[SENSOR_POWER_ACCEL] == p->dev.power_w);
	assert_true(r.value[SENSOR_INLET] == 25.0);
	assert_false(r.valid[SENSOR_POWER_HOST]); /* meter loss lasts 2 s */
	assert_true(r.value[SENSOR_JUNCTION] == stuck);

	read_at(p, 6.0, &r);
	for (int s = 0; s < SENSOR_N; s++)
		assert_true(r.valid[s]);
	assert_true(r.value[SENSOR_JUNCTION] == p->dev.tj_c);
	assert_true(r.value[SENSOR_POWER_HOST] == p->dev.host_power_w);
	plant_destroy(p);
}

static void test_shutdown_ends_the_run(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 8);
	fixture_event(&f, EV_INLET_C, 5, 0, 100); /* junction can only be above inlet */
	struct plant *p = make(&f, 5);
	plant_advance_to(p, 4.0);
	assert_false(p->failed);
	double t = 5;
	while (!p->failed && t < 3600) {
		t += 5;
		plant_advance_to(p, t);
	}
	assert_true(p->failed);
	assert_true(p->dev.shut_down);
	const char *want = "thermal shutdown at 92 C at t=";
	assert_memory_equal(p->fail_reason, want, strlen(want));
	struct plant_readings before, after;
	memset(&before, 0, sizeof(before));
	plant_read(p, &before);
	uint64_t done = server_get_stats(p->srv)->completed;
	plant_advance_to(p, t + 60);
	assert_true(fabs(p->t_s - (t + 60)) < 1e-9); /* time still moves */
	memset(&after, 0, sizeof(after));
	plant_read(p, &after);
	assert_true(after.value[SENSOR_JUNCTION] == before.value[SENSOR_JUNCTION]);
	assert_true(after.energy_j[0] == before.energy_j[0]);
	assert_int_equal(server_get_stats(p->srv)->completed, done);
	plant_destroy(p);
}

static double int8_share(double frac0, double frac1, uint64_t *slice_int8, uint64_t *samples)
{
	struct fixture f;
	fixture_init(&f, 8);
	struct plant *p = make(&f, 21);
	plant_set_int8_fraction(p, 0, frac0);
	plant_set_int8_fraction(p, 1, frac1);
	plant_advance_to(p, 60);
	const struct server_stats *st = server_get_stats(p->srv);
	assert_true(st->tokens_generated > 1000);
	double share = (double)st->tokens_int8 / (double)st->tokens_generated;
	for (int i = 0; i < 2; i++) {
		slice_int8[i] = st->slice_tokens_int8[i];
		samples[i] = p->q.samples[i];
	}
	plant_destroy(p);
	return share;
}

static void test_int8_fraction_sets_the_int8_share(void **state)
{
	(void)state;
	uint64_t si[2], sm[2];
	assert_true(int8_share(0, 0, si, sm) == 0.0);
	/* Shadow evaluation samples requests whatever precision served them. */
	assert_true(sm[0] > 0 && sm[1] > 0);
	assert_true(int8_share(1, 1, si, sm) == 1.0);
	double half = int8_share(0.5, 0.5, si, sm);
	assert_true(half > 0.3 && half < 0.7);
	double one = int8_share(1, 0, si, sm);
	assert_true(si[0] > 0);
	assert_int_equal(si[1], 0);
	assert_true(one > 0.2 && one < 0.8);
}

/* Asked shadow samples with an FP8 engine loaded, slice 0 on the FP8 rung
 * asked at every request over the server's own 10 %: served in BF16 each
 * asked sample is one re-run and counts in FP8's row alone (the rung the
 * slice decides next); served in FP8 it is two (BF16, INT8) and counts in
 * both rows. Returns the re-runs (made or lost) per asked sample of slice
 * 0; *int8_rows / *fp8_rows: slice 0's samples in each row. */
static double asked_reruns(double frac0, uint64_t *int8_rows, uint64_t *fp8_rows)
{
	struct fixture f;
	fixture_init(&f, 4);
	f.sc.server.fp8_engine = true;
	for (int i = 0; i < 2; i++) {
		f.sc.slices[i].shadow_rate = 0.1;
		f.sc.slices[i].fp8_drop = 0.005;
	}
	struct plant *p = make(&f, 21);
	assert_int_equal(plant_set_low_mode(p, 0, true), 0);
	plant_set_int8_fraction(p, 0, frac0);
	plant_set_shadow_rate(p, 0, 1.0);
	plant_advance_to(p, 60);
	const struct server_stats *st = server_get_stats(p->srv);
	assert_true(p->q.asked[0] > 50);
	assert_int_equal(p->q.asked[1], 0);
	*int8_rows = p->q.samples[0];
	*fp8_rows = p->q.samples_fp8[0];
	double per = ((double)st->shadow_arrived + (double)p->shadow_lost) / (double)p->q.asked[0];
	/* own samples count in both rows, asked ones in FP8's, and in INT8's
	 * only where FP8 served them */
	assert_int_equal(*fp8_rows - p->q.asked[0], *int8_rows - (frac0 > 0 ? p->q.asked[0] : 0));
	plant_destroy(p);
	return per;
}

static void test_asked_sample_scored_where_the_decision_lies(void **state)
{
	(void)state;
	uint64_t i8, f8;
	/* served in BF16: one re-run per asked sample, in FP8's row alone */
	assert_true(fabs(asked_reruns(0, &i8, &f8) - 1.0) < 0.02);
	assert_true(f8 > 5 * i8 && i8 > 0);
	/* served in FP8: two re-runs (BF16, INT8), both rows */
	assert_true(fabs(asked_reruns(1, &i8, &f8) - 2.0) < 0.04);
	assert_int_equal(i8, f8);
}

static struct plant *make_from_yaml(const char *path, struct scenario **sc, uint64_t seed)
{
	struct diag_list d = { 0 };
	int rc = scenario_load(path, sc, &d);
	if (rc)
		diag_print(&d, stdout);
	assert_int_equal(rc, 0);
	diag_clear(&d);
	struct plant *p = NULL;
	rc = plant_create(*sc, seed, &p, &d);
	if (rc)
		diag_print(&d, stdout);
	assert_int_equal(rc, 0);
	diag_clear(&d);
	return p;
}

/* The YAML fixture: each event kind fires at the time the file gives. */
static void test_yaml_events_fire_at_their_time(void **state)
{
	(void)state;
	struct scenario *sc;
	struct plant *p = make_from_yaml("tests/data/plant/events.yaml", &sc, 5);
	struct plant_readings r;
	read_at(p, 1.99, &r);
	assert_true(r.value[SENSOR_INLET] == 25.0);
	read_at(p, 2.0, &r);
	assert_true(r.value[SENSOR_INLET] == 40.0);
	read_at(p, 3.0, &r);
	assert_true(r.value[SENSOR_JUNCTION] == -274.0);
	assert_true(r.valid[SENSOR_JUNCTION]);
	read_at(p, 4.0, &r);
	assert_true(r.value[SENSOR_INLET] == 25.0);
	assert_true(r.value[SENSOR_JUNCTION] == p->dev.tj_c);
	read_at(p, 4.99, &r);
	assert_true(p->dev.cooling_factor == 1.0);
	read_at(p, 5.0, &r);
	assert_true(p->dev.cooling_factor == 2.0);
	read_at(p, 6.0, &r);
	assert_true(plant_true_drop(p, 1, false) == 0.2);
	read_at(p, 7.0, &r);
	assert_false(r.valid[SENSOR_POWER_MEMORY]);
	read_at(p, 8.0, &r);
	assert_true(r.valid[SENSOR_POWER_MEMORY]);
	double clk = r.value[SENSOR_CLOCK];
	read_at(p, 9.0, &r);
	assert_true(plant_true_drop(p, 1, false) == 0.02);
	assert_true(isnan(r.value[SENSOR_INLET]));
	assert_true(r.value[SENSOR_CLOCK] == clk);
	read_at(p, 10.0, &r);
	for (int s = 0; s < SENSOR_N; s++)
		assert_true(r.valid[s] && !isnan(r.value[s]));
	assert_true(r.value[SENSOR_CLOCK] == (double)p->dev.clk_mhz);
	assert_true(p->dev.cooling_factor == 2.0);
	plant_destroy(p);
	scenario_free(sc);
}

/* Trace replay: four rows 1 s apart, compressed 2x and looped. */
static void test_yaml_trace_replay(void **state)
{
	(void)state;
	struct scenario *sc;
	struct plant *p = make_from_yaml("tests/data/plant/trace.yaml", &sc, 1);
	assert_non_null(p->trace);
	plant_advance_to(p, 30);
	const struct server_stats *st = server_get_stats(p->srv);
	/* one row every 0.5 s (plus one mean gap per loop): 50..61 arrivals */
	assert_true(st->arrived >= 50 && st->arrived <= 61);
	assert_true(st->completed + st->queue_len + st->running + st->rejected == st->arrived);
	/* every request shadow-evaluated (rate 1) */
	assert_int_equal(p->q.samples[0], st->completed);
	plant_destroy(p);
	scenario_free(sc);
}

static void test_unknown_preset_and_model(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 2);
	snprintf(f.sc.preset, sizeof(f.sc.preset), "b300");
	struct diag_list d = { 0 };
	struct plant *p = (struct plant *)1;
	assert_int_equal(plant_create(&f.sc, 1, &p, &d), -EINVAL);
	assert_null(p);
	assert_int_equal(d.n, 1);
	assert_non_null(strstr(d.v[0].msg, "unknown device preset 'b300'; valid: "));
	assert_non_null(strstr(d.v[0].msg, "h200-sxm"));
	diag_clear(&d);
	fixture_init(&f, 2);
	snprintf(f.sc.model, sizeof(f.sc.model), "gpt-9");
	assert_int_equal(plant_create(&f.sc, 1, &p, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	assert_non_null(strstr(d.v[0].msg, "unknown model 'gpt-9'; valid: "));
	assert_non_null(strstr(d.v[0].msg, "llama-3.1-8b"));
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_lands_on_tick_boundaries),
		cmocka_unit_test(test_same_seed_same_readings),
		cmocka_unit_test(test_inlet_and_cooling_events_fire_and_revert),
		cmocka_unit_test(test_quality_drift_changes_true_drop),
		cmocka_unit_test(test_load_scale_burst_and_end),
		cmocka_unit_test(test_sensor_faults_appear_and_clear),
		cmocka_unit_test(test_shutdown_ends_the_run),
		cmocka_unit_test(test_int8_fraction_sets_the_int8_share),
		cmocka_unit_test(test_asked_sample_scored_where_the_decision_lies),
		cmocka_unit_test(test_yaml_events_fire_at_their_time),
		cmocka_unit_test(test_yaml_trace_replay),
		cmocka_unit_test(test_unknown_preset_and_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
