/* Unit tests for plant_models/device: DVFS table and V/f, power monotonicity,
 * the firmware power cap, thermal steady state and integrator exactness,
 * hardware slowdown with hysteresis, shutdown, determinism, presets. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hal/hal.h"
#include "plant_models/device.h"

#define TICK 0.01

static const struct plant_preset *h200(void)
{
	const struct plant_preset *p = plant_preset_find("h200-sxm");
	assert_non_null(p);
	return p;
}

static void run(struct device *d, double seconds, const struct device_load *l)
{
	long n = lround(seconds / TICK);
	for (long i = 0; i < n; i++)
		device_advance(d, TICK, l);
}

static const struct device_load full = { .busy = 1.0, .activity = 1.0, .mem_tbps = 2.0,
					 .host_busy = 0.5 };
static const struct device_load idle = { 0 };

static void test_throttle_bits_match_hal(void **state)
{
	(void)state;
	assert_int_equal(DEV_THR_POWER_CAP, HAL_THR_POWER_CAP);
	assert_int_equal(DEV_THR_SW_THERMAL, HAL_THR_SW_THERMAL);
	assert_int_equal(DEV_THR_HW_SLOWDOWN, HAL_THR_HW_SLOWDOWN);
	assert_int_equal(DEV_THR_APP_CLOCKS, HAL_THR_APP_CLOCKS);
	assert_int_equal(DEV_THR_IDLE, HAL_THR_IDLE);
}

static void test_presets(void **state)
{
	(void)state;
	const char *const *names = plant_preset_names();
	size_t n = 0;
	for (; names[n]; n++) {
		const struct plant_preset *p = plant_preset_find(names[n]);
		assert_non_null(p);
		assert_string_equal(p->name, names[n]);
		assert_true(strlen(p->sources) > 100);
		assert_true(p->dvfs.min_mhz < p->dvfs.base_mhz && p->dvfs.base_mhz < p->dvfs.max_mhz);
		assert_int_equal((p->dvfs.max_mhz - p->dvfs.min_mhz) % p->dvfs.step_mhz, 0);
		assert_true(p->power.tgp_min_w < p->power.tgp_default_w + 1e-9);
		assert_true(p->fw.sw_thermal_target_c < p->fw.slowdown_c);
		assert_true(p->fw.slowdown_c < p->fw.shutdown_c);
	}
	assert_int_equal(n, 3);
	assert_null(plant_preset_find("h300"));
	assert_null(plant_preset_find(NULL));
	const struct plant_preset *p = h200();
	assert_int_equal(p->dvfs.max_mhz, 1980);
	assert_true(fabs(p->hbm_tbps - 4.8) < 1e-9 && fabs(p->hbm_gb - 141) < 1e-9);
	assert_true(fabs(p->peak_bf16_tflops - 989) < 1e-9 && fabs(p->peak_int8_tops - 1979) < 1e-9);
	const struct plant_preset *a = plant_preset_find("a100-sxm");
	assert_int_equal(a->dvfs.max_mhz, 1410);
	assert_true(fabs(a->power.tgp_default_w - 400) < 1e-9);
	assert_true(fabs(plant_preset_find("h100-sxm")->hbm_tbps - 3.35) < 1e-9);
	/* Precision modes: Hopper bf16/fp8/int8, Ampere bf16/int8, no fp4 before Blackwell. */
	const char *hopper[] = { "h200-sxm", "h100-sxm" };
	for (size_t i = 0; i < 2; i++) {
		const struct plant_preset *h = plant_preset_find(hopper[i]);
		assert_true(plant_preset_supports(h, "bf16") && plant_preset_supports(h, "fp8"));
		assert_true(plant_preset_supports(h, "int8"));
		assert_false(plant_preset_supports(h, "fp4") || plant_preset_supports(h, "int4"));
	}
	assert_true(plant_preset_supports(a, "bf16") && plant_preset_supports(a, "int8"));
	assert_false(plant_preset_supports(a, "fp8") || plant_preset_supports(a, "fp4"));
	assert_false(plant_preset_supports(a, "fp16") || plant_preset_supports(a, NULL));
	assert_false(plant_preset_supports(NULL, "bf16"));
	for (size_t k = 0; names[k]; k++)
		assert_true(plant_preset_supports(plant_preset_find(names[k]), "bf16"));
}

static void test_snap_and_range(void **state)
{
	(void)state;
	const struct dvfs_params *v = &h200()->dvfs;
	assert_int_equal(dvfs_snap_mhz(v, 1000), 1005); /* 345 + 44 * 15 */
	assert_int_equal(dvfs_snap_mhz(v, 1500), 1500);
	assert_int_equal(dvfs_snap_mhz(v, 1507.4), 1500);
	assert_int_equal(dvfs_snap_mhz(v, 1507.6), 1515);
	assert_int_equal(dvfs_snap_mhz(v, 10), 345);
	assert_int_equal(dvfs_snap_mhz(v, 5000), 1980);
	assert_int_equal(dvfs_snap_mhz(v, NAN), 345);

	struct device d;
	device_init(&d, h200(), 30);
	assert_int_equal(device_set_clock_range(&d, 1500, 1000), -EINVAL);
	assert_int_equal(device_set_clock_range(&d, 300, 1000), -EINVAL);
	assert_int_equal(device_set_clock_range(&d, 1000, 2000), -EINVAL);
	assert_int_equal(d.lock_min_mhz, 345);
	assert_int_equal(d.lock_max_mhz, 1980);
	assert_int_equal(device_set_clock_range(&d, 1000, 1501), 0);
	assert_int_equal(d.lock_min_mhz, 1005);
	assert_int_equal(d.lock_max_mhz, 1500);
	assert_int_equal(d.clk_mhz, 1500);
	assert_true(d.throttle & DEV_THR_APP_CLOCKS);
	run(&d, 1, &idle);
	assert_int_equal(d.clk_mhz, 1500);
	device_reset_clocks(&d);
	assert_int_equal(d.clk_mhz, 1980);
	assert_false(d.throttle & DEV_THR_APP_CLOCKS);

	assert_int_equal(device_set_power_limit(&d, 150), -EINVAL);
	assert_int_equal(device_set_power_limit(&d, 701), -EINVAL);
	assert_int_equal(device_set_power_limit(&d, NAN), -EINVAL);
	assert_true(fabs(d.power_limit_w - 700) < 1e-9);
	assert_int_equal(device_set_power_limit(&d, 350), 0);
	assert_true(fabs(d.power_limit_w - 350) < 1e-9);
}

static void test_voltage_monotonic(void **state)
{
	(void)state;
	for (int k = 0; plant_preset_names()[k]; k++) {
		const struct dvfs_params *v = &plant_preset_find(plant_preset_names()[k])->dvfs;
		assert_true(fabs(dvfs_voltage(v, v->min_mhz) - v->v_min) < 1e-12);
		assert_true(fabs(dvfs_voltage(v, v->max_mhz) - v->v_max) < 1e-12);
		double prev = 0;
		for (uint32_t f = v->min_mhz; f <= v->max_mhz; f += v->step_mhz) {
			double volt = dvfs_voltage(v, f);
			assert_true(volt >= prev);
			if (f > v->knee_mhz)
				assert_true(volt > prev);
			prev = volt;
		}
	}
}

static void test_power_monotonic(void **state)
{
	(void)state;
	const struct plant_preset *p = h200();
	const struct dvfs_params *v = &p->dvfs;
	double prev = 0;
	for (uint32_t f = v->min_mhz; f <= v->max_mhz; f += v->step_mhz) {
		double w = power_accel_w(p, f, 0.8, 1.0, 60);
		assert_true(w > prev);
		prev = w;
	}
	for (double a = 0.1; a <= 1.0; a += 0.1)
		assert_true(power_accel_w(p, 1500, a, 1, 60) > power_accel_w(p, 1500, a - 0.1, 1, 60));
	for (double t = 30; t <= 90; t += 5)
		assert_true(power_accel_w(p, 1500, 0.5, 1, t) > power_accel_w(p, 1500, 0.5, 1, t - 5));
	assert_true(power_accel_w(p, 1500, 0.5, 1, 60) > power_accel_w(p, 1500, 0.5, 0.5, 60));
	/* idle_w is the power at min clock, idle, 25 C. */
	assert_true(fabs(power_accel_w(p, v->min_mhz, 0, 0, 25) - p->power.idle_w) < 1e-9);
	/* Sensible magnitudes for the other engineers' calibrations. */
	double idle30 = power_accel_w(p, v->max_mhz, 0, 0, 30);
	assert_true(idle30 > 60 && idle30 < 100);
	double mem = power_memory_w(p, p->hbm_tbps);
	assert_true(mem > 40 && mem < 90);
	assert_true(power_memory_w(p, 2) > power_memory_w(p, 1));
	assert_true(power_host_w(p, 1) > power_host_w(p, 0));
	assert_true(fabs(power_host_w(p, 7) - power_host_w(p, 1)) < 1e-12);
	printf("h200: idle at 1980 MHz 30 C %.1f W, HBM at 4.8 TB/s %.1f W, 1980 MHz a=0.8 75 C "
	       "%.1f W\n",
	       idle30, mem, power_accel_w(p, 1980, 0.8, 1, 75));
}

/* The cached per-tick path must agree with the pure helpers. */
static void test_device_power_matches_helpers(void **state)
{
	(void)state;
	struct device d;
	device_init(&d, h200(), 30);
	device_set_power_limit(&d, 700);
	struct device_load l = { .busy = 0.7, .activity = 0.5, .mem_tbps = 3.0, .host_busy = 0.25 };
	for (int i = 0; i < 3000; i++) {
		uint32_t clk = d.clk_mhz;
		double tj = d.tj_c;
		device_advance(&d, TICK, &l);
		double want = power_accel_w(d.p, clk, l.activity, l.busy, tj) +
			      power_uncore_w(d.p, l.mem_tbps, clk);
		assert_true(fabs(d.power_w - want) < 1e-3 * want);
	}
	assert_true(fabs(d.mem_power_w - power_memory_w(d.p, 3.0)) < 1e-9);
	assert_true(fabs(d.host_power_w - power_host_w(d.p, 0.25)) < 1e-9);
	assert_true(fabs(d.energy_j - 0) > 0);
}

static void check_cap(double limit_w, const struct device_load *l)
{
	struct device d;
	device_init(&d, h200(), 30);
	assert_int_equal(device_set_power_limit(&d, limit_w), 0);
	run(&d, 60, l);
	double e0 = d.energy_j, pmax = 0;
	int n = 0;
	for (; n < 2000; n++) {
		device_advance(&d, TICK, l);
		if (d.power_w > pmax)
			pmax = d.power_w;
		assert_true(d.throttle & DEV_THR_POWER_CAP);
	}
	double avg = (d.energy_j - e0) / (n * TICK);
	printf("cap %.0f W: mean %.1f W, max tick %.1f W, clock %u MHz, tj %.1f C\n", limit_w, avg,
	       pmax, d.clk_mhz, d.tj_c);
	assert_true(fabs(avg - limit_w) < 0.03 * limit_w);
	assert_true(pmax < 1.05 * limit_w);
	assert_true(d.clk_mhz < d.p->dvfs.max_mhz);
}

static void test_power_cap_holds(void **state)
{
	(void)state;
	check_cap(700, &full);
	check_cap(400, &full);
	/* A fixed 2 TB/s is more than 345 MHz can pull from HBM, and the memory
	 * path's demand power stays (uncore_demand_frac): 250 W is checked on a
	 * compute-bound load. */
	static const struct device_load gemm = { .busy = 1.0, .activity = 1.0, .mem_tbps = 0.3 };
	check_cap(250, &gemm);
	/* Power cap overrides locked clocks. */
	struct device d;
	device_init(&d, h200(), 30);
	device_set_clock_range(&d, 1980, 1980);
	device_set_power_limit(&d, 300);
	run(&d, 30, &gemm);
	assert_true(d.clk_mhz < 1980);
	assert_true(d.power_w < 300 * 1.05);
	/* Light load: the ceiling recovers to max. */
	run(&d, 5, &idle);
	assert_int_equal(d.clk_mhz, 1980);
	assert_false(d.throttle & DEV_THR_POWER_CAP);
	assert_true(d.throttle & DEV_THR_IDLE);
}

/* The modelled firmware never picks a clock below the ceiling on its own, and
 * the power cap overrides a locked minimum: lock_min changes nothing (the
 * documented simplification). Same load, 345 vs 1830 MHz floor: identical. */
static void test_lock_min_never_binds(void **state)
{
	(void)state;
	struct device a, b;
	device_init(&a, h200(), 30);
	device_init(&b, h200(), 30);
	assert_int_equal(device_set_clock_range(&b, 1830, 1980), 0);
	assert_int_equal(b.lock_min_mhz, 1830);
	assert_int_equal(device_set_power_limit(&a, 300), 0);
	assert_int_equal(device_set_power_limit(&b, 300), 0);
	uint32_t lowest = UINT32_MAX;
	for (int phase = 0; phase < 4; phase++) {
		const struct device_load *l = phase % 2 ? &idle : &full;
		for (int i = 0; i < (int)(5.0 / TICK); i++) {
			device_advance(&a, TICK, l);
			device_advance(&b, TICK, l);
			assert_int_equal(a.clk_mhz, b.clk_mhz);
			assert_true(a.power_w == b.power_w);
			assert_int_equal(a.throttle, b.throttle);
			if (b.clk_mhz < lowest)
				lowest = b.clk_mhz;
		}
	}
	assert_true(lowest < 1830); /* the cap did pull it under the locked minimum */
	assert_int_equal(b.clk_mhz, 1980); /* idle: at the ceiling, not the floor */
}

static struct plant_preset no_leak(void)
{
	struct plant_preset p = *h200();
	p.power.leak_w_ref = 0;
	return p;
}

static void test_thermal_steady_state(void **state)
{
	(void)state;
	const struct plant_preset *p = h200();
	struct device_load l = { .busy = 1.0, .activity = 0.5, .mem_tbps = 4.0, .host_busy = 0 };
	for (double cf = 1.0; cf <= 1.5; cf += 0.5) {
		struct device d;
		device_init(&d, p, 30);
		d.cooling_factor = cf;
		run(&d, 1500, &l); /* > 15 heatsink time constants */
		double r_ha = p->thermal.r_ha_k_per_w * cf;
		double ts = 30 + (d.power_w + d.mem_power_w) * r_ha;
		double tj = ts + d.power_w * p->thermal.r_jh_k_per_w;
		printf("steady cf %.1f: P %.1f W + HBM %.1f W -> tj %.2f C (analytic %.2f), "
		       "sink %.2f, hbm %.2f\n",
		       cf, d.power_w, d.mem_power_w, d.tj_c, tj, d.tsink_c, d.tmem_c);
		assert_true(fabs(d.tj_c - tj) < 0.02);
		assert_true(fabs(d.tsink_c - ts) < 0.02);
		assert_true(fabs(d.tmem_c - (ts + p->thermal.mem_offset_k_per_w * d.mem_power_w)) < 0.02);
	}
	/* TGP at 30 C inlet sits at 70-80 C; the degraded hot case (40 C, cooling
	 * x1.5) would pass the slowdown threshold at TGP. Every preset. */
	for (int k = 0; plant_preset_names()[k]; k++) {
		const struct plant_preset *q = plant_preset_find(plant_preset_names()[k]);
		const struct thermal_params *th = &q->thermal;
		double tgp = q->power.tgp_default_w, mem = power_memory_w(q, q->hbm_tbps / 2);
		double tj_nom = 30 + (tgp + mem) * th->r_ha_k_per_w + tgp * th->r_jh_k_per_w;
		double tj_hot = 40 + (tgp + mem) * 1.5 * th->r_ha_k_per_w + tgp * th->r_jh_k_per_w;
		printf("%s: TGP %.0f W -> %.1f C at 30 C inlet, %.1f C hot\n", q->name, tgp, tj_nom,
		       tj_hot);
		assert_true(tj_nom > 70 && tj_nom < 80);
		assert_true(tj_hot > q->fw.slowdown_c + 3);
		/* Time constants: junction seconds, heatsink 1-3 minutes. */
		double tau_j = th->c_junction_j_per_k * th->r_jh_k_per_w;
		double tau_s = th->c_sink_j_per_k * th->r_ha_k_per_w;
		assert_true(tau_j > 1 && tau_j < 10);
		assert_true(tau_s > 60 && tau_s < 180);
	}
}

/* Constant power (no leakage): one long step equals many short ones, and a
 * huge step is stable and lands on the steady state. */
static void test_thermal_exact_any_dt(void **state)
{
	(void)state;
	struct plant_preset p = no_leak();
	struct device_load l = { .busy = 1.0, .activity = 0.3, .mem_tbps = 1.0 };
	struct device a, b, c;
	device_init(&a, &p, 30);
	device_init(&b, &p, 30);
	device_init(&c, &p, 30);
	/* Fix the clock so power is constant and the firmware stays out. */
	device_set_clock_range(&a, 1200, 1200);
	device_set_clock_range(&b, 1200, 1200);
	device_set_clock_range(&c, 1200, 1200);
	for (int i = 0; i < 10000; i++)
		device_advance(&a, 0.01, &l);
	device_advance(&b, 100.0, &l);
	assert_true(fabs(a.tj_c - b.tj_c) < 1e-6);
	assert_true(fabs(a.tsink_c - b.tsink_c) < 1e-6);
	device_advance(&c, 1e6, &l);
	double ts = 30 + (c.power_w + c.mem_power_w) * p.thermal.r_ha_k_per_w;
	assert_true(fabs(c.tsink_c - ts) < 1e-6);
	assert_true(fabs(c.tj_c - (ts + c.power_w * p.thermal.r_jh_k_per_w)) < 1e-6);
	assert_true(fabs(a.energy_j - b.energy_j) < 1e-6 * a.energy_j);
}

/* 40 C inlet, degraded cooling, saturating load: the hardware slowdown must
 * fire, count a clamp event, halve clocks and release only below 84 C. */
static void test_slowdown_hot_case(void **state)
{
	(void)state;
	struct device d;
	device_init(&d, h200(), 30);
	run(&d, 600, &full);
	assert_int_equal(d.clamp_events, 0);
	assert_true(d.tj_c < 85);
	d.inlet_c = 40;
	d.cooling_factor = 1.5;
	uint32_t clk_before = 0;
	int i = 0;
	for (; i < 60000 && d.clamp_events == 0; i++) {
		clk_before = d.clk_mhz;
		device_advance(&d, TICK, &full);
	}
	printf("hot case: slowdown after %.1f s at tj %.2f C; clock %u -> %u MHz\n", i * TICK,
	       d.tj_c, clk_before, d.clk_mhz);
	assert_int_equal(d.clamp_events, 1);
	assert_true(d.in_slowdown);
	assert_true(d.tj_c >= 89);
	assert_true(d.throttle & DEV_THR_HW_SLOWDOWN);
	assert_true(d.clk_mhz <= clk_before / 2 + d.p->dvfs.step_mhz);
	assert_false(d.shut_down);

	/* Stays slowed while above 89 - 5 C; clamp time accumulates. */
	double ct0 = d.clamp_time_s;
	bool released = false;
	for (i = 0; i < 100000; i++) {
		double tj_prev = d.tj_c;
		device_advance(&d, TICK, &idle);
		if (!d.in_slowdown) {
			assert_true(d.tj_c < 84.0);
			assert_true(tj_prev >= 84.0 - 0.5);
			released = true;
			break;
		}
		assert_true(d.tj_c >= 84.0);
	}
	assert_true(released);
	assert_true(d.clamp_time_s - ct0 > 0);
	assert_false(d.throttle & DEV_THR_HW_SLOWDOWN);
	assert_int_equal(d.clamp_events, 1);
	printf("released after %.1f s of clamp\n", d.clamp_time_s);

	/* Back to full load in the hot room: it clamps again (a second event). */
	run(&d, 300, &full);
	assert_true(d.clamp_events >= 2);
	assert_false(d.shut_down);
	assert_true(d.tj_c < 92);
}

/* The software thermal target trims boost gradually (no clamp event). */
static void test_sw_thermal_trim(void **state)
{
	(void)state;
	struct device d;
	device_init(&d, h200(), 30);
	/* Uncapped ~600 W at a warm inlet sits between the target and slowdown. */
	struct device_load mid = { .busy = 1.0, .activity = 0.6, .mem_tbps = 1.0 };
	d.inlet_c = 45;
	d.cooling_factor = 1.3;
	run(&d, 900, &mid);
	printf("sw thermal: tj %.1f C clock %u MHz throttle 0x%x events %llu\n", d.tj_c, d.clk_mhz,
	       d.throttle, (unsigned long long)d.clamp_events);
	assert_true(d.throttle & DEV_THR_SW_THERMAL);
	assert_true(d.clk_mhz < 1980 && d.clk_mhz >= (uint32_t)d.p->fw.sw_floor_mhz);
	assert_int_equal(d.clamp_events, 0);
}

static void test_shutdown(void **state)
{
	(void)state;
	struct device d;
	device_init(&d, h200(), 30);
	d.inlet_c = 95; /* cooling failure: nothing the firmware does can hold it */
	int i = 0;
	for (; i < 60000 && !d.shut_down; i++) {
		assert_true(d.tj_c < 92.0);
		device_advance(&d, TICK, &full);
	}
	assert_true(d.shut_down);
	assert_true(d.tj_c >= 92.0);
	assert_true(d.clamp_events >= 1); /* slowdown came first, maybe several times */
	assert_true(d.throttle & DEV_THR_HW_SLOWDOWN);
	assert_int_equal(d.clk_mhz, 0);
	double e = d.energy_j;
	run(&d, 10, &full);
	assert_true(d.power_w == 0 && d.mem_power_w == 0);
	assert_true(d.energy_j == e);
	assert_true(d.shut_down);
	assert_int_equal(d.clk_mhz, 0);
}

static void test_determinism(void **state)
{
	(void)state;
	struct device a, b;
	device_init(&a, h200(), 35);
	device_init(&b, h200(), 35);
	device_set_power_limit(&a, 450);
	device_set_power_limit(&b, 450);
	for (int i = 0; i < 20000; i++) {
		struct device_load l = { .busy = (i % 7) / 6.0, .activity = 0.4 + 0.05 * (i % 13),
					 .mem_tbps = (i % 5), .host_busy = 0.3 };
		if (i == 9000) {
			a.cooling_factor = b.cooling_factor = 1.4;
			device_set_clock_range(&a, 900, 1800);
			device_set_clock_range(&b, 900, 1800);
		}
		device_advance(&a, TICK, &l);
		device_advance(&b, TICK, &l);
		assert_int_equal(a.clk_mhz, b.clk_mhz);
	}
	assert_memory_equal(&a, &b, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_throttle_bits_match_hal),
		cmocka_unit_test(test_presets),
		cmocka_unit_test(test_snap_and_range),
		cmocka_unit_test(test_voltage_monotonic),
		cmocka_unit_test(test_power_monotonic),
		cmocka_unit_test(test_device_power_matches_helpers),
		cmocka_unit_test(test_power_cap_holds),
		cmocka_unit_test(test_lock_min_never_binds),
		cmocka_unit_test(test_thermal_steady_state),
		cmocka_unit_test(test_thermal_exact_any_dt),
		cmocka_unit_test(test_slowdown_hot_case),
		cmocka_unit_test(test_sw_thermal_trim),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_determinism),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
