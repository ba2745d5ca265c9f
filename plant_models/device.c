/* One accelerator: DVFS table and V/f curve, power rails, two-node thermal
 * RC network and the firmware (power cap, software thermal target, hardware
 * slowdown, shutdown). Equations and parameter sources: docs/plant-models.md.
 *
 * device_advance() runs 100 times per simulated second, so the expensive
 * terms are cached: V(f)^2 f and the leakage voltage term per clock, the
 * thermal step matrix per (dt, cooling factor), and the leakage temperature
 * factor, which is corrected to first order between exact refreshes. */
#include "plant_models/device.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>


/* Leakage temperature factor is refreshed exactly when the junction moved
 * more than this since the last exp(); in between a first-order correction
 * keeps the relative error below (k * 0.25)^2 / 2 ~ 1e-5. */
#define LEAK_REFRESH_C 0.25
#define IDLE_BUSY_EPS 1e-9

/* ---- DVFS ---------------------------------------------------------------- */

uint32_t dvfs_snap_mhz(const struct dvfs_params *p, double mhz)
{
	if (!(mhz > (double)p->min_mhz)) /* also NaN */
		return p->min_mhz;
	if (mhz >= (double)p->max_mhz)
		return p->max_mhz;
	double k = floor((mhz - (double)p->min_mhz) / (double)p->step_mhz + 0.5);
	uint32_t f = p->min_mhz + (uint32_t)k * p->step_mhz;
	return f > p->max_mhz ? p->max_mhz : f;
}

/* Largest table clock <= mhz (ceilings must never round up). */
static uint32_t snap_down(const struct dvfs_params *p, double mhz)
{
	if (!(mhz > (double)p->min_mhz))
		return p->min_mhz;
	if (mhz >= (double)p->max_mhz)
		return p->max_mhz;
	double k = floor((mhz - (double)p->min_mhz) / (double)p->step_mhz + 1e-9);
	return p->min_mhz + (uint32_t)k * p->step_mhz;
}

double dvfs_voltage(const struct dvfs_params *p, double mhz)
{
	if (mhz <= (double)p->knee_mhz)
		return p->v_min;
	if (mhz >= (double)p->max_mhz)
		return p->v_max;
	double x = (mhz - (double)p->knee_mhz) / (double)(p->max_mhz - p->knee_mhz);
	return p->v_min + (p->v_max - p->v_min) * x;
}

/* ---- Power --------------------------------------------------------------- */

static double leak_idle_w(const struct plant_preset *p)
{
	double vr = p->dvfs.v_min / p->dvfs.v_max;
	return p->power.leak_w_ref * vr * vr * exp(p->power.leak_per_c * (25.0 - p->power.leak_ref_c));
}

double power_accel_w(const struct plant_preset *p, double mhz, double activity, double busy,
		     double tj_c)
{
	double v = dvfs_voltage(&p->dvfs, mhz);
	double vr = v / p->dvfs.v_max;
	double dyn = p->power.c_eff * v * v * (mhz * 1e-3) * activity * busy;
	double leak = p->power.leak_w_ref * vr * vr *
		      exp(p->power.leak_per_c * (tj_c - p->power.leak_ref_c));
	return p->power.idle_w + dyn + leak - leak_idle_w(p);
}

double power_memory_w(const struct plant_preset *p, double mem_tbps)
{
	return p->power.mem_idle_w + p->power.mem_w_per_tbps * (mem_tbps > 0 ? mem_tbps : 0);
}

double power_uncore_w(const struct plant_preset *p, double mem_tbps, double mhz)
{
	if (!(mem_tbps > 0))
		return 0.0;
	double g = plant_bw_clock_factor(p, mhz / p->dvfs.max_mhz);
	double phi = p->power.uncore_demand_frac;
	/* The demand never exceeds what the HBM could deliver. */
	double demand = g > 0 ? mem_tbps / g : p->hbm_tbps;
	if (demand > p->hbm_tbps)
		demand = p->hbm_tbps;
	if (demand < mem_tbps)
		demand = mem_tbps;
	return p->power.uncore_w_per_tbps * ((1.0 - phi) * mem_tbps + phi * demand);
}

double plant_bw_clock_factor(const struct plant_preset *p, double r)
{
	if (!(p->bw_sat_frac > 0) || r >= p->bw_sat_frac)
		return 1.0;
	return r > 0 ? r / p->bw_sat_frac : 0.0;
}

double power_host_w(const struct plant_preset *p, double host_busy)
{
	if (host_busy < 0)
		host_busy = 0;
	if (host_busy > 1)
		host_busy = 1;
	return p->power.host_idle_w + p->power.host_busy_w * host_busy;
}

/* ---- Caches -------------------------------------------------------------- */

static void cache_clock(struct device *d, uint32_t mhz)
{
	const struct dvfs_params *v = &d->p->dvfs;
	double volt = dvfs_voltage(v, mhz);
	double vr = volt / v->v_max;
	d->cache_clk_mhz = mhz;
	d->cache_v2f = volt * volt * (mhz * 1e-3);
	d->cache_leak_v = d->p->power.leak_w_ref * vr * vr;
}

static double leak_temp_factor(struct device *d)
{
	double k = d->p->power.leak_per_c;
	double dt = d->tj_c - d->cache_tj_c;
	if (fabs(dt) > LEAK_REFRESH_C) {
		d->cache_tj_c = d->tj_c;
		d->cache_leak_t = exp(k * (d->tj_c - d->p->power.leak_ref_c));
		return d->cache_leak_t;
	}
	return d->cache_leak_t * (1.0 + k * dt);
}

/* exp(A dt) of the junction/heatsink system in closed form: the RC ladder's
 * two eigenvalues are real, negative and distinct. */
static void cache_thermal(struct device *d, double dt_s)
{
	const struct thermal_params *t = &d->p->thermal;
	double r_ha = t->r_ha_k_per_w * d->cooling_factor;
	double a = -1.0 / (t->c_junction_j_per_k * t->r_jh_k_per_w);
	double b = 1.0 / (t->c_junction_j_per_k * t->r_jh_k_per_w);
	double c = 1.0 / (t->c_sink_j_per_k * t->r_jh_k_per_w);
	double e = -1.0 / (t->c_sink_j_per_k * t->r_jh_k_per_w) - 1.0 / (t->c_sink_j_per_k * r_ha);
	double tr = a + e, det = a * e - b * c;
	double disc = sqrt(tr * tr / 4.0 - det);
	double l1 = tr / 2.0 + disc, l2 = tr / 2.0 - disc;
	assert(disc > 0);
	double e1 = exp(l1 * dt_s), e2 = exp(l2 * dt_s);
	double k = 1.0 / (l1 - l2);
	/* E = (e1 (A - l2 I) - e2 (A - l1 I)) / (l1 - l2) */
	d->th_a[0] = k * (e1 * (a - l2) - e2 * (a - l1));
	d->th_a[1] = k * (e1 * b - e2 * b);
	d->th_a[2] = k * (e1 * c - e2 * c);
	d->th_a[3] = k * (e1 * (e - l2) - e2 * (e - l1));
	d->cache_dt_s = dt_s;
	d->cache_cf = d->cooling_factor;
}

static void thermal_step(struct device *d, double dt_s, double p_die_w, double p_mem_w)
{
	if (dt_s != d->cache_dt_s || d->cooling_factor != d->cache_cf)
		cache_thermal(d, dt_s);
	const struct thermal_params *t = &d->p->thermal;
	double r_ha = t->r_ha_k_per_w * d->cooling_factor;
	/* HBM shares the cold plate: its heat enters at the heatsink node. */
	double ts_ss = d->inlet_c + (p_die_w + p_mem_w) * r_ha;
	double tj_ss = ts_ss + p_die_w * t->r_jh_k_per_w;
	double xj = d->tj_c - tj_ss, xs = d->tsink_c - ts_ss;
	d->tj_c = tj_ss + d->th_a[0] * xj + d->th_a[1] * xs;
	d->tsink_c = ts_ss + d->th_a[2] * xj + d->th_a[3] * xs;
	d->tmem_c = d->tsink_c + t->mem_offset_k_per_w * p_mem_w;
}

/* ---- Clock selection ------------------------------------------------------ */

/* Precedence (as NVIDIA documents for locked clocks): the lock range bounds
 * the firmware's boost choice; software thermal, the power cap and the
 * hardware slowdown all override it, the last one hardest. The boost choice
 * is always the top of the range (no idle downclocking), and everything that
 * goes lower overrides lock_min, so lock_min is never read here. */
static void select_clock(struct device *d, bool idle)
{
	const struct dvfs_params *v = &d->p->dvfs;
	uint32_t thr = 0;
	uint32_t c = d->lock_max_mhz;
	if (d->lock_max_mhz < v->max_mhz)
		thr |= DEV_THR_APP_CLOCKS;
	/* Each firmware limiter that holds the clock below the application's
	 * ceiling reports its reason bit (several may be active, as in NVML). */
	uint32_t sw = snap_down(v, d->sw_thermal_mhz);
	if (sw < d->lock_max_mhz)
		thr |= DEV_THR_SW_THERMAL;
	if (sw < c)
		c = sw;
	uint32_t cap = snap_down(v, d->fw_cap_mhz);
	if (cap < d->lock_max_mhz)
		thr |= DEV_THR_POWER_CAP;
	if (cap < c)
		c = cap;
	if (d->in_slowdown) {
		c = snap_down(v, (double)c * d->p->fw.slowdown_clock_frac);
		thr |= DEV_THR_HW_SLOWDOWN;
	}
	if (idle)
		thr |= DEV_THR_IDLE;
	d->clk_mhz = c;
	d->throttle = thr;
}

/* Ceiling without the power cap: what the cap loop scales from when over. */
static double uncapped_ceiling(const struct device *d)
{
	double c = (double)d->lock_max_mhz;
	double sw = (double)snap_down(&d->p->dvfs, d->sw_thermal_mhz);
	return sw < c ? sw : c;
}

static void firmware_loop(struct device *d, double period_s)
{
	const struct firmware_params *fw = &d->p->fw;
	const struct dvfs_params *v = &d->p->dvfs;
	double lim = d->power_limit_w;
	double avg = d->fw_power_avg_w;

	/* Power cap: proportional down, slow linear up. */
	if (avg > lim) {
		double ref = uncapped_ceiling(d);
		if (d->fw_cap_mhz < ref)
			ref = d->fw_cap_mhz;
		double next = ref * (1.0 - fw->cap_gain * (avg - lim) / lim);
		if (next > ref - (double)v->step_mhz)
			next = ref - (double)v->step_mhz;
		d->fw_cap_mhz = next;
	} else if (avg < lim * (1.0 - fw->cap_deadband)) {
		d->fw_cap_mhz += fw->cap_up_mhz;
	}
	if (d->fw_cap_mhz > (double)v->max_mhz)
		d->fw_cap_mhz = (double)v->max_mhz;
	if (d->fw_cap_mhz < (double)v->min_mhz)
		d->fw_cap_mhz = (double)v->min_mhz;

	/* Software thermal target: gradual trim of boost clocks only. */
	double trim = fw->sw_trim_mhz_per_s * period_s;
	if (d->tj_c > fw->sw_thermal_target_c) {
		d->sw_thermal_mhz -= trim;
		if (d->sw_thermal_mhz < fw->sw_floor_mhz)
			d->sw_thermal_mhz = fw->sw_floor_mhz;
	} else if (d->tj_c < fw->sw_thermal_target_c - fw->sw_hyst_c) {
		d->sw_thermal_mhz += trim;
		if (d->sw_thermal_mhz > (double)v->max_mhz)
			d->sw_thermal_mhz = (double)v->max_mhz;
	}
}

/* ---- Public API ----------------------------------------------------------- */

void device_init(struct device *d, const struct plant_preset *p, double inlet_c)
{
	memset(d, 0, sizeof(*d));
	d->p = p;
	d->lock_min_mhz = p->dvfs.min_mhz;
	d->lock_max_mhz = p->dvfs.max_mhz;
	d->power_limit_w = p->power.tgp_default_w;
	d->inlet_c = inlet_c;
	d->cooling_factor = 1.0;
	d->tj_c = d->tsink_c = d->tmem_c = inlet_c;
	d->fw_cap_mhz = (double)p->dvfs.max_mhz;
	d->sw_thermal_mhz = (double)p->dvfs.max_mhz;
	d->fw_power_avg_w = p->power.idle_w;
	d->cache_leak0_w = leak_idle_w(p);
	d->cache_tj_c = inlet_c;
	d->cache_leak_t = exp(p->power.leak_per_c * (inlet_c - p->power.leak_ref_c));
	d->cache_dt_s = -1.0;
	cache_clock(d, p->dvfs.max_mhz);
	select_clock(d, true);
}

int device_set_clock_range(struct device *d, uint32_t min_mhz, uint32_t max_mhz)
{
	const struct dvfs_params *v = &d->p->dvfs;
	if (min_mhz > max_mhz || min_mhz < v->min_mhz || max_mhz > v->max_mhz)
		return -EINVAL;
	uint32_t lo = dvfs_snap_mhz(v, min_mhz), hi = dvfs_snap_mhz(v, max_mhz);
	if (lo > hi)
		lo = hi;
	d->lock_min_mhz = lo;
	d->lock_max_mhz = hi;
	if (!d->shut_down)
		select_clock(d, (d->throttle & DEV_THR_IDLE) != 0);
	return 0;
}

void device_reset_clocks(struct device *d)
{
	d->lock_min_mhz = d->p->dvfs.min_mhz;
	d->lock_max_mhz = d->p->dvfs.max_mhz;
	if (!d->shut_down)
		select_clock(d, (d->throttle & DEV_THR_IDLE) != 0);
}

int device_set_power_limit(struct device *d, double limit_w)
{
	if (!(limit_w >= d->p->power.tgp_min_w && limit_w <= d->p->power.tgp_max_w))
		return -EINVAL;
	d->power_limit_w = limit_w;
	return 0;
}

void device_advance(struct device *d, double dt_s, const struct device_load *load)
{
	assert(dt_s >= 0);
	if (dt_s <= 0)
		return;
	const struct plant_preset *p = d->p;

	if (d->shut_down) {
		/* Off: no power, the package cools towards the inlet. */
		d->power_w = d->mem_power_w = 0;
		d->host_power_w = p->power.host_idle_w;
		d->host_energy_j += d->host_power_w * dt_s;
		thermal_step(d, dt_s, 0, 0);
		return;
	}

	double busy = load ? load->busy : 0, act = load ? load->activity : 0;
	busy = busy < 0 ? 0 : (busy > 1 ? 1 : busy);
	act = act < 0 ? 0 : (act > 1 ? 1 : act);

	if (d->clk_mhz != d->cache_clk_mhz)
		cache_clock(d, d->clk_mhz);
	double leak = d->cache_leak_v * leak_temp_factor(d) - d->cache_leak0_w;
	double mem_tbps = load ? load->mem_tbps : 0;
	d->power_w = p->power.idle_w + p->power.c_eff * d->cache_v2f * act * busy + leak +
		     power_uncore_w(p, mem_tbps, d->clk_mhz);
	d->mem_power_w = power_memory_w(p, mem_tbps);
	d->host_power_w = power_host_w(p, load ? load->host_busy : 0);
	d->energy_j += d->power_w * dt_s;
	d->mem_energy_j += d->mem_power_w * dt_s;
	d->host_energy_j += d->host_power_w * dt_s;

	/* This interval ran at a clamped clock. */
	if (d->in_slowdown)
		d->clamp_time_s += dt_s;

	thermal_step(d, dt_s, d->power_w, d->mem_power_w);

	/* Hardware protection is a comparator, not part of the firmware loop. */
	const struct firmware_params *fw = &p->fw;
	if (d->tj_c >= fw->shutdown_c) {
		d->shut_down = true;
		d->in_slowdown = true;
		d->clk_mhz = 0;
		d->throttle = DEV_THR_HW_SLOWDOWN;
		return;
	}
	if (!d->in_slowdown && d->tj_c >= fw->slowdown_c) {
		d->in_slowdown = true;
		d->clamp_events++;
	} else if (d->in_slowdown && d->tj_c < fw->slowdown_c - fw->slowdown_hyst_c) {
		d->in_slowdown = false;
	}

	double w = dt_s >= fw->cap_avg_s ? 1.0 : dt_s / fw->cap_avg_s;
	d->fw_power_avg_w += (d->power_w - d->fw_power_avg_w) * w;
	d->fw_accum_s += dt_s;
	if (d->fw_accum_s >= fw->control_period_s - 1e-12) {
		/* One loop per call: a long dt does not compound the same reading. */
		firmware_loop(d, d->fw_accum_s < 4 * fw->control_period_s ? d->fw_accum_s
									  : fw->control_period_s);
		d->fw_accum_s = fmod(d->fw_accum_s + 1e-12, fw->control_period_s);
	}
	select_clock(d, busy < IDLE_BUSY_EPS);
}
