/* Unit tests for the HAL registry and the sim backend: lookups and their
 * messages, sample units and validity, limits, setters and their errors,
 * the virtual clock. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hal/hal.h"
#include "hal/hal_backends.h"
#include "hal/hal_sim.h"
#include "plant_fixture.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

static void test_registry_names(void **state)
{
	(void)state;
	const char *names[16];
	size_t n = hal_backend_names(names, 16);
	assert_int_equal(n, 6);
	const char *want[] = { "sim", "sysfs", "nvml", "modbus", "gpio", "serving" };
	for (size_t i = 0; i < n; i++)
		assert_string_equal(names[i], want[i]);
	assert_int_equal(hal_backend_names(names, 2), 6); /* total, even when truncated */
}

static void test_registry_find(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	const struct hal_ops *ops = hal_backend_find("sim", &d);
	assert_non_null(ops);
	assert_string_equal(ops->name, "sim");
	assert_int_equal(d.n, 0);

#if GOVD_WITH_SYSFS
	assert_ptr_equal(hal_backend_find("sysfs", &d), &hal_sysfs_ops);
#endif
#if GOVD_WITH_NVML
	assert_ptr_equal(hal_backend_find("nvml", &d), &hal_nvml_ops);
#endif
#if GOVD_WITH_MODBUS
	assert_ptr_equal(hal_backend_find("modbus", &d), &hal_modbus_ops);
#endif
#if GOVD_WITH_GPIOD
	assert_ptr_equal(hal_backend_find("gpio", &d), &hal_gpio_ops);
#endif
	assert_ptr_equal(hal_backend_find("serving", &d), &hal_serving_ops);
	assert_int_equal(d.n, 0);

	assert_null(hal_backend_find("cuda", &d));
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0].msg,
			    "unknown backend 'cuda'; valid: sim, sysfs, nvml, modbus, gpio, serving");
	assert_string_equal(d.v[0].code, "unknown-backend");
	diag_clear(&d);
}

static void test_open_errors(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct hal_dev dev;
	const char *names[] = {
#if !GOVD_WITH_SYSFS
		"sysfs",
#endif
#if !GOVD_WITH_NVML
		"nvml",
#endif
#if !GOVD_WITH_MODBUS
		"modbus",
#endif
#if !GOVD_WITH_GPIOD
		"gpio",
#endif
		NULL, /* every backend may be built in: keep the array non-empty */
	};
	for (size_t i = 0; names[i]; i++) {
		struct hal_dev_cfg cfg = { .name = "gpu0", .backend = names[i] };
		assert_int_equal(hal_open(&dev, &cfg, &d), -ENOTSUP);
		assert_null(dev.ops);
		char want[64];
		snprintf(want, sizeof(want), "%s: backend not compiled in", names[i]);
		assert_string_equal(d.v[d.n - 1].msg, want);
	}
	diag_clear(&d);

	struct hal_dev_cfg unknown = { .name = "gpu0", .backend = "tpu" };
	assert_int_equal(hal_open(&dev, &unknown, &d), -ENOENT);
	assert_null(dev.ops);
	diag_clear(&d);

	/* sim with neither a plant nor a scenario, an unknown option, a bad seed */
	const char *keys[] = { "seed", "scenarios" };
	const char *vals[] = { "12x", "a.yaml" };
	struct hal_dev_cfg bad = { .name = "gpu0", .backend = "sim", .n_opts = 2, .keys = keys,
				   .values = vals };
	assert_int_equal(hal_open(&dev, &bad, &d), -EINVAL);
	assert_null(dev.ops);
	assert_int_equal(d.n, 3);
	assert_string_equal(d.v[0].msg, "unknown option 'scenarios'; allowed: scenario, seed");
	assert_string_equal(d.v[0].path, "options.scenarios");
	assert_string_equal(d.v[1].msg, "expected an unsigned integer, got '12x'");
	assert_non_null(strstr(d.v[2].msg, "needs a scenario"));
	diag_clear(&d);
	hal_close(&dev); /* closing a device that never opened is harmless */
}

/* Opened from options: the backend loads the scenario and owns the plant;
 * the same seed gives the same samples as a plant made by hand. */
static void assert_value_equal(const struct hal_value *x, const struct hal_value *y)
{
	assert_int_equal(x->v, y->v);
	assert_int_equal(x->t_ms, y->t_ms);
	assert_int_equal(x->valid, y->valid);
	assert_int_equal(x->nan, y->nan);
}

static void test_sim_open_from_options(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	const char *keys[] = { "scenario", "seed" };
	const char *vals[] = { "tests/data/plant/events.yaml", "0x11" };
	struct hal_dev_cfg cfg = { .name = "gpu1", .backend = "sim", .n_opts = 2, .keys = keys,
				   .values = vals };
	struct hal_dev dev;
	int rc = hal_open(&dev, &cfg, &d);
	if (rc)
		diag_print(&d, stdout);
	assert_int_equal(rc, 0);
	struct plant *p = hal_sim_plant(&dev);
	assert_non_null(p);
	assert_string_equal(p->sc->name, "plant-events");

	struct scenario *sc;
	assert_int_equal(scenario_load(vals[0], &sc, &d), 0);
	struct plant *q;
	assert_int_equal(plant_create(sc, 17, &q, &d), 0);
	struct govd_clock c;
	assert_int_equal(hal_sim_clock(&dev, &c), 0);
	assert_int_equal(govd_clock_wait_until(&c, 12000), 0);
	plant_advance_to(q, 12.0);
	struct hal_sample a, b;
	assert_int_equal(dev.ops->sample(&dev, &a), 0);
	struct hal_dev_cfg byhand = { .backend = "sim", .plant = q };
	struct hal_dev dq;
	assert_int_equal(hal_open(&dq, &byhand, &d), 0);
	assert_int_equal(dq.ops->sample(&dq, &b), 0);
	/* Field by field: struct hal_value has padding that memcmp would read. */
	for (int r = 0; r < HAL_RAIL_N; r++) {
		assert_value_equal(&a.power_mw[r], &b.power_mw[r]);
		assert_value_equal(&a.energy_mj[r], &b.energy_mj[r]);
	}
	for (int t = 0; t < HAL_TEMP_N; t++)
		assert_value_equal(&a.temp_mc[t], &b.temp_mc[t]);
	hal_close(&dq);
	plant_destroy(q);
	scenario_free(sc);
	hal_close(&dev); /* frees the plant and scenario it loaded (ASan checks) */
	assert_null(dev.ops);
	assert_int_equal(d.n, 0);

	/* a scenario that does not load: its diagnostics, the open fails */
	const char *missing[] = { "tests/data/plant/no-such.yaml" };
	struct hal_dev_cfg bad = { .backend = "sim", .n_opts = 1, .keys = keys, .values = missing };
	assert_true(hal_open(&dev, &bad, &d) < 0);
	assert_null(dev.ops);
	assert_true(d.n >= 1);
	assert_non_null(strstr(d.v[0].file, "no-such.yaml"));
	diag_clear(&d);
}

struct simfix {
	struct fixture f;
	struct plant *p;
	struct hal_dev dev;
};

static int sim_setup(void **state)
{
	struct simfix *s = calloc(1, sizeof(*s));
	fixture_init(&s->f, 6);
	struct scenario_event *e;
	e = fixture_event(&s->f, EV_SENSOR_FAULT, 2, 1, 0);
	e->sensor = SENSOR_POWER_ACCEL;
	e->fault = FAULT_NAN;
	e = fixture_event(&s->f, EV_SENSOR_FAULT, 2, 1, 0);
	e->sensor = SENSOR_JUNCTION;
	e->fault = FAULT_DROPOUT;
	e = fixture_event(&s->f, EV_METER_LOSS, 2, 1, 0);
	e->sensor = SENSOR_POWER_MEMORY;
	struct diag_list d = { 0 };
	if (plant_create(&s->f.sc, 9, &s->p, &d)) {
		diag_print(&d, stdout);
		diag_clear(&d);
		free(s);
		return -1;
	}
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "sim", .plant = s->p };
	if (hal_open(&s->dev, &cfg, &d)) {
		diag_print(&d, stdout);
		diag_clear(&d);
		plant_destroy(s->p);
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int sim_teardown(void **state)
{
	struct simfix *s = *state;
	hal_close(&s->dev);
	plant_destroy(s->p); /* given in cfg.plant: the caller's */
	free(s);
	return 0;
}

static void test_sim_capabilities(void **state)
{
	struct simfix *s = *state;
	assert_string_equal(s->dev.name, "gpu0");
	assert_true(hal_can_set_clocks(&s->dev));
	assert_true(hal_can_set_power_limit(&s->dev));
	assert_true(hal_can_read_serving(&s->dev));
	assert_true(hal_can_read_quality(&s->dev));
	assert_true(hal_can_set_precision(&s->dev));
	assert_ptr_equal(hal_sim_plant(&s->dev), s->p);
}

static void test_sim_limits(void **state)
{
	struct simfix *s = *state;
	const struct plant_preset *pp = plant_preset_find("h200-sxm");
	struct hal_limits l;
	assert_int_equal(s->dev.ops->get_limits(&s->dev, &l), 0);
	assert_int_equal(l.clk_min_khz, pp->dvfs.min_mhz * 1000u);
	assert_int_equal(l.clk_max_khz, pp->dvfs.max_mhz * 1000u);
	assert_int_equal(l.clk_step_khz, pp->dvfs.step_mhz * 1000u);
	assert_int_equal(l.clk_default_max_khz, pp->dvfs.max_mhz * 1000u);
	assert_int_equal(l.power_limit_default_mw, (uint32_t)llround(pp->power.tgp_default_w * 1000));
	assert_int_equal(l.power_limit_min_mw, (uint32_t)llround(pp->power.tgp_min_w * 1000));
	assert_int_equal(l.power_limit_max_mw, (uint32_t)llround(pp->power.tgp_max_w * 1000));
	assert_int_equal(l.shutdown_mc, 92000);
	assert_int_equal(l.slowdown_mc, (int32_t)llround(pp->fw.slowdown_c * 1000));
	assert_string_equal(l.model, "h200-sxm");
	assert_string_equal(l.driver_version, "sim-" GOVD_VERSION);
	assert_string_equal(l.firmware_version, "sim-" GOVD_VERSION);
}

static void test_sim_sample_units(void **state)
{
	struct simfix *s = *state;
	plant_advance_to(s->p, 1.5);
	struct hal_sample hs;
	assert_int_equal(s->dev.ops->sample(&s->dev, &hs), 0);
	const struct device *d = &s->p->dev;
	assert_int_equal(hs.t_ms, 1500);
	assert_int_equal(hs.power_mw[HAL_RAIL_ACCEL].v, llround(d->power_w * 1000));
	assert_int_equal(hs.power_mw[HAL_RAIL_MEMORY].v, llround(d->mem_power_w * 1000));
	assert_int_equal(hs.power_mw[HAL_RAIL_HOST].v, llround(d->host_power_w * 1000));
	assert_int_equal(hs.energy_mj[HAL_RAIL_ACCEL].v, llround(d->energy_j * 1000));
	assert_int_equal(hs.energy_mj[HAL_RAIL_HOST].v, llround(d->host_energy_j * 1000));
	assert_int_equal(hs.temp_mc[HAL_TEMP_JUNCTION].v, llround(d->tj_c * 1000));
	assert_int_equal(hs.temp_mc[HAL_TEMP_INLET].v, 25000);
	assert_int_equal(hs.clk_khz.v, (int64_t)d->clk_mhz * 1000);
	assert_int_equal(hs.power_limit_mw.v, llround(d->power_limit_w * 1000));
	assert_true(hs.util_pct.v >= 0 && hs.util_pct.v <= 100);
	assert_int_equal(hs.throttle, d->throttle);
	const struct hal_value *all[] = { &hs.power_mw[0], &hs.power_mw[1], &hs.power_mw[2],
					  &hs.energy_mj[0], &hs.energy_mj[1], &hs.energy_mj[2],
					  &hs.temp_mc[0], &hs.temp_mc[1], &hs.temp_mc[2],
					  &hs.clk_khz, &hs.power_limit_mw, &hs.util_pct };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		assert_true(all[i]->valid);
		assert_false(all[i]->nan);
		assert_int_equal(all[i]->t_ms, 1500);
	}
	assert_true(hs.power_mw[HAL_RAIL_ACCEL].v > 0);
	assert_true(hs.energy_mj[HAL_RAIL_ACCEL].v > 0);
}

static void test_sim_sample_faults(void **state)
{
	struct simfix *s = *state;
	plant_advance_to(s->p, 2.5);
	struct hal_sample hs;
	assert_int_equal(s->dev.ops->sample(&s->dev, &hs), 0);
	/* NaN: present but not a number */
	assert_true(hs.power_mw[HAL_RAIL_ACCEL].valid);
	assert_true(hs.power_mw[HAL_RAIL_ACCEL].nan);
	assert_true(hs.power_mw[HAL_RAIL_ACCEL].v == HAL_V_NAN);
	assert_int_equal(hs.power_mw[HAL_RAIL_ACCEL].t_ms, 2500);
	assert_true(hs.energy_mj[HAL_RAIL_ACCEL].valid);
	/* dropout: nothing, stamped when it last gave data */
	assert_false(hs.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_int_equal(hs.temp_mc[HAL_TEMP_JUNCTION].t_ms, 2000);
	/* meter loss: power and energy of that rail */
	assert_false(hs.power_mw[HAL_RAIL_MEMORY].valid);
	assert_false(hs.energy_mj[HAL_RAIL_MEMORY].valid);
	assert_true(hs.power_mw[HAL_RAIL_HOST].valid);
	plant_advance_to(s->p, 3.0);
	assert_int_equal(s->dev.ops->sample(&s->dev, &hs), 0);
	assert_false(hs.power_mw[HAL_RAIL_ACCEL].nan);
	assert_true(hs.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_true(hs.energy_mj[HAL_RAIL_MEMORY].valid);
}

static void test_sim_setters(void **state)
{
	struct simfix *s = *state;
	struct hal_dev *dev = &s->dev;
	struct device *d = &s->p->dev;
	struct hal_limits l;
	assert_int_equal(dev->ops->get_limits(dev, &l), 0);
	uint32_t mid = l.clk_min_khz + ((l.clk_max_khz - l.clk_min_khz) / 2 / l.clk_step_khz) * l.clk_step_khz;

	assert_int_equal(dev->ops->set_clock_range(dev, l.clk_min_khz, mid), 0);
	assert_int_equal(d->lock_max_mhz, mid / 1000);
	assert_int_equal(d->lock_min_mhz, l.clk_min_khz / 1000);
	assert_int_equal(dev->ops->set_clock_range(dev, mid, l.clk_min_khz), -EINVAL);
	assert_int_equal(dev->ops->set_clock_range(dev, l.clk_min_khz, l.clk_max_khz + 100000), -EINVAL);
	assert_int_equal(d->lock_max_mhz, mid / 1000); /* errors change nothing */
	assert_int_equal(dev->ops->reset_clocks(dev), 0);
	assert_int_equal(d->lock_max_mhz, l.clk_max_khz / 1000);

	assert_int_equal(dev->ops->set_power_limit(dev, l.power_limit_min_mw), 0);
	assert_true(fabs(d->power_limit_w - l.power_limit_min_mw / 1000.0) < 1e-9);
	assert_int_equal(dev->ops->set_power_limit(dev, l.power_limit_max_mw + 1000), -EINVAL);
	assert_int_equal(dev->ops->set_power_limit(dev, l.power_limit_min_mw - 1000), -EINVAL);
	assert_true(fabs(d->power_limit_w - l.power_limit_min_mw / 1000.0) < 1e-9);
	struct hal_sample hs;
	dev->ops->sample(dev, &hs);
	assert_int_equal(hs.power_limit_mw.v, l.power_limit_min_mw);

	double ok[2] = { 0.25, 1.0 }, nan2[2] = { NAN, 0 }, over[2] = { 0.5, 1.5 };
	assert_int_equal(dev->ops->set_precision(dev, ok, 1), -EINVAL);
	assert_int_equal(dev->ops->set_precision(dev, nan2, 2), -EINVAL);
	assert_int_equal(dev->ops->set_precision(dev, over, 2), -EINVAL);
	assert_true(s->p->int8_frac[0] == 0.0); /* nothing applied on error */
	assert_int_equal(dev->ops->set_precision(dev, ok, 2), 0);
	assert_true(s->p->int8_frac[0] == 0.25);
	assert_true(s->p->int8_frac[1] == 1.0);
}

static void test_sim_serving_and_quality(void **state)
{
	struct simfix *s = *state;
	double all_int8[2] = { 1, 1 };
	assert_int_equal(s->dev.ops->set_precision(&s->dev, all_int8, 2), 0);
	plant_advance_to(s->p, 30);
	struct hal_serving sv;
	assert_int_equal(s->dev.ops->read_serving(&s->dev, &sv), 0);
	const struct server_stats *st = server_get_stats(s->p->srv);
	assert_true(sv.valid);
	assert_int_equal(sv.t_ms, 30000);
	assert_true(sv.requests_completed > 0);
	assert_int_equal(sv.requests_completed, st->completed);
	assert_int_equal(sv.tokens_generated, st->tokens_generated);
	assert_int_equal(sv.tokens_int8, sv.tokens_generated);
	assert_int_equal(sv.n_slices, 2);
	assert_string_equal(sv.slice_name[0], "chat");
	assert_string_equal(sv.slice_name[1], "code");
	assert_int_equal(sv.slice_completed[0] + sv.slice_completed[1], sv.requests_completed);
	assert_int_equal(sv.slice_int8_completed[1], sv.slice_completed[1]);
	assert_ptr_equal(sv.e2e, &st->e2e);
	assert_int_equal(sv.e2e->n, st->e2e.n);

	struct hal_quality q;
	assert_int_equal(s->dev.ops->read_quality(&s->dev, &q), 0);
	assert_true(q.valid);
	assert_int_equal(q.n_slices, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(q.samples[i], s->p->q.samples[i]);
		assert_int_equal(q.mismatches[i], s->p->q.mismatches[i]);
		assert_true(q.samples[i] > 0);
		assert_true(q.samples[i] <= sv.slice_completed[i]);
	}
}

static void test_sim_clock(void **state)
{
	struct simfix *s = *state;
	struct govd_clock c;
	assert_int_equal(hal_sim_clock(&s->dev, &c), 0);
	assert_int_equal(govd_clock_now_ms(&c), 0);
	assert_int_equal(govd_clock_wait_until(&c, 1000), 0);
	assert_int_equal(govd_clock_now_ms(&c), 1000);
	assert_int_equal(s->p->tick, 100);
	assert_int_equal(govd_clock_wait_until(&c, 500), 0); /* the past: nothing */
	assert_int_equal(govd_clock_now_ms(&c), 1000);
	assert_int_equal(govd_clock_wait_until(&c, 2345), 0);
	assert_int_equal(govd_clock_now_ms(&c), 2350); /* next tick boundary */

	struct hal_ops other = { .name = "other" };
	struct hal_dev od = { .ops = &other };
	assert_int_equal(hal_sim_clock(&od, &c), -EINVAL);
	assert_null(hal_sim_plant(&od));
}

static void test_sim_clock_reports_shutdown(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 4);
	fixture_event(&f, EV_INLET_C, 1, 0, 100);
	struct diag_list d = { 0 };
	struct plant *p;
	assert_int_equal(plant_create(&f.sc, 1, &p, &d), 0);
	struct hal_dev dev;
	struct hal_dev_cfg cfg = { .backend = "sim", .plant = p };
	assert_int_equal(hal_open(&dev, &cfg, &d), 0);
	assert_string_equal(dev.name, "sim"); /* no name: the backend's */
	struct govd_clock c;
	assert_int_equal(hal_sim_clock(&dev, &c), 0);
	int rc = 0;
	uint64_t t = 0;
	while (rc == 0 && t < 3600000) {
		t += 1000;
		rc = govd_clock_wait_until(&c, t);
	}
	assert_int_equal(rc, -EHOSTDOWN);
	assert_true(p->failed);
	assert_int_equal(govd_clock_wait_until(&c, t + 1000), -EHOSTDOWN);
	hal_close(&dev);
	plant_destroy(p);
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_names),
		cmocka_unit_test(test_registry_find),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_sim_open_from_options),
		cmocka_unit_test_setup_teardown(test_sim_capabilities, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_limits, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_sample_units, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_sample_faults, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_setters, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_serving_and_quality, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_clock, sim_setup, sim_teardown),
		cmocka_unit_test(test_sim_clock_reports_shutdown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
