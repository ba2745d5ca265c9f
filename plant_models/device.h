/* One accelerator as the governor sees it: DVFS table and V/f curve, power
 * rails (accelerator, memory, host), a two-node thermal RC network to the
 * inlet air, and the firmware's own behaviour (power cap, software thermal
 * target, hardware slowdown at 89 C, shutdown at 92 C).
 * Pure model, no I/O. Equations, units and sources: docs/plant-models.md. */
#ifndef GOVD_PLANT_DEVICE_H
#define GOVD_PLANT_DEVICE_H
#include <stdbool.h>
#include <stdint.h>

/* Throttle reason bits in struct device.throttle: the same values as
 * enum hal_throttle in hal/hal.h (a test checks), kept here so the pure
 * model does not include the HAL. */
enum device_throttle {
	DEV_THR_POWER_CAP = 1u << 0,
	DEV_THR_SW_THERMAL = 1u << 1,
	DEV_THR_HW_SLOWDOWN = 1u << 2,
	DEV_THR_APP_CLOCKS = 1u << 3,
	DEV_THR_IDLE = 1u << 4,
};

struct dvfs_params {
	uint32_t min_mhz, max_mhz, step_mhz; /* clock table: min..max in step_mhz */
	uint32_t base_mhz;                   /* guaranteed clock */
	double v_min, v_max;                 /* volts at f <= f_knee, at max_mhz */
	uint32_t knee_mhz;                   /* V flat below, rises to v_max above */
};

struct power_params {
	double idle_w;          /* accelerator idle at min clock, 25 C */
	double c_eff;           /* W / (V^2 * GHz) at activity 1.0 */
	double leak_w_ref;      /* leakage at v_max and leak_ref_c */
	double leak_ref_c;
	double leak_per_c;      /* exponential growth per degree C */
	double mem_idle_w;      /* HBM rail idle */
	double mem_w_per_tbps;  /* HBM rail power per TB/s of traffic */
	double uncore_w_per_tbps; /* accel rail: on-die memory path (L2, crossbar, memory
				   * controllers, PHY) per TB/s of HBM traffic; does not
				   * scale with the SM clock or voltage */
	double uncore_demand_frac; /* share of that path's power set by the traffic demand
				    * (achieved TB/s / plant_bw_clock_factor), not by the
				    * achieved traffic: it stays active when a low SM clock
				    * starves it of requests */
	double host_idle_w;     /* host share (CPU, DRAM, NIC) attributed to this accelerator */
	double host_busy_w;     /* extra host power while orchestrating (busy = 1) */
	double tgp_default_w;   /* default power limit (TGP) */
	double tgp_min_w, tgp_max_w;
};

struct thermal_params {
	double c_junction_j_per_k; /* die + package heat capacity */
	double r_jh_k_per_w;       /* junction -> heatsink */
	double c_sink_j_per_k;     /* heatsink heat capacity */
	double r_ha_k_per_w;       /* heatsink -> inlet air at nominal cooling */
	double mem_offset_k_per_w; /* HBM temp above heatsink per W of memory rail */
};

struct firmware_params {
	double control_period_s;   /* firmware power/thermal loop (e.g. 0.01 s) */
	double sw_thermal_target_c;/* software slowdown: trims boost above this */
	double slowdown_c;         /* hardware slowdown threshold (89 C) */
	double slowdown_hyst_c;    /* leaves slowdown below slowdown_c - hyst */
	double slowdown_clock_frac;/* clock multiplier while slowed down (e.g. 0.5) */
	double shutdown_c;         /* 92 C: run ends as failed */
	/* Power-cap loop: over the limit the clock ceiling drops by
	 * cap_gain * relative excess (proportional, at least one table step);
	 * under it by more than cap_deadband it rises cap_up_mhz per loop. */
	double cap_gain, cap_deadband, cap_up_mhz;
	double cap_avg_s;          /* power averaging window the loop acts on */
	/* Software thermal: above the target the boost ceiling falls
	 * sw_trim_mhz_per_s, never below sw_floor_mhz; recovers below
	 * target - sw_hyst_c at the same rate. */
	double sw_trim_mhz_per_s, sw_floor_mhz, sw_hyst_c;
};

/* Precision modes a device's tensor cores run natively (bit PLANT_PREC_BIT(m)).
 * Hopper: bf16, fp8, int8; Ampere: bf16, int8 (no FP8 tensor cores). */
enum plant_prec { PLANT_PREC_BF16, PLANT_PREC_FP8, PLANT_PREC_INT8, PLANT_PREC_FP4, PLANT_PREC_INT4, PLANT_PREC_N };
#define PLANT_PREC_BIT(m) (1u << (m))
extern const char *const plant_prec_names[]; /* PLANT_PREC_N + 1, NULL-terminated */

struct plant_preset {
	const char *name;           /* "h200-sxm" */
	const char *description;
	struct dvfs_params dvfs;
	struct power_params power;
	struct thermal_params thermal;
	struct firmware_params fw;
	double hbm_tbps;            /* peak memory bandwidth, TB/s */
	double hbm_gb;              /* capacity */
	double peak_bf16_tflops;    /* dense, at max_mhz */
	double peak_int8_tops;      /* dense, at max_mhz */
	/* Achievable HBM bandwidth falls once the SM clock is too low to keep
	 * enough requests in flight: bandwidth share = min(1, f / (bw_sat_frac
	 * f_max)) (Little's law with a per-cycle issue limit). */
	double bw_sat_frac;
	uint32_t precision_modes;   /* PLANT_PREC_BIT(PLANT_PREC_*) supported */
	const char *sources;        /* citation list for the numbers above */
};

const struct plant_preset *plant_preset_find(const char *name);
/* NULL-terminated list of preset names, for "unknown preset; valid: ..." */
const char *const *plant_preset_names(void);
/* Whether preset p runs precision mode `mode` ("bf16", "fp8", ...); an unknown
 * mode name is not supported. */
bool plant_preset_supports(const struct plant_preset *p, const char *mode);

/* Work the serving model put on the device over one interval. */
struct device_load {
	double busy;         /* share of the interval with kernels running, 0..1 */
	double activity;     /* switching activity of what ran (avg over busy time), 0..1 */
	double mem_tbps;     /* average HBM traffic over the interval */
	double host_busy;    /* host orchestration share, 0..1 */
};

struct device {
	const struct plant_preset *p;
	/* Control inputs (what a governor or nvidia-smi sets). */
	uint32_t lock_min_mhz, lock_max_mhz; /* locked clock range; default min..max */
	/* lock_min_mhz is kept for readback only: the modelled firmware always runs
	 * at the highest clock it may (lock_max, or lower where the power cap or a
	 * thermal limit force it, and those override a locked minimum), idle or not,
	 * so the floor never binds (docs/plant-models.md, "Precedence"). */
	double power_limit_w;
	/* Environment. */
	double inlet_c;
	double cooling_factor; /* multiplies r_ha: 1 nominal, >1 degraded */
	/* State. */
	double tj_c, tsink_c, tmem_c;
	uint32_t clk_mhz;      /* effective clock now */
	double fw_cap_mhz;     /* firmware's power-cap clock ceiling */
	bool in_slowdown, shut_down;
	uint32_t throttle;     /* HAL_THR_* bits, same values as hal.h */
	double fw_accum_s;     /* time since last firmware loop */
	/* Last interval's rails and cumulative energy. */
	double power_w, mem_power_w, host_power_w;
	double energy_j, mem_energy_j, host_energy_j;
	uint64_t clamp_events;
	double clamp_time_s;
	/* Firmware and cache state, private to device.c (set by device_init). */
	double sw_thermal_mhz;   /* software thermal boost ceiling */
	double fw_power_avg_w;   /* accel power as the cap loop sees it (averaged) */
	uint32_t cache_clk_mhz;  /* clock the cached V terms belong to */
	double cache_v2f;        /* V^2 * f_GHz at cache_clk_mhz */
	double cache_leak_v;     /* leak_w_ref * (V / v_max)^2 at cache_clk_mhz */
	double cache_tj_c;       /* junction temp the leakage factor belongs to */
	double cache_leak_t;     /* exp(leak_per_c * (cache_tj_c - leak_ref_c)) */
	double cache_leak0_w;    /* leakage already in idle_w (v_min, 25 C) */
	double cache_dt_s, cache_cf; /* thermal step matrix belongs to (dt, cooling) */
	double th_a[4];          /* exact 2x2 step matrix exp(A dt), row major */
};

void device_init(struct device *d, const struct plant_preset *p, double inlet_c);
/* Returns -EINVAL (and changes nothing) outside the device's table/range;
 * values are snapped to the clock table. */
int device_set_clock_range(struct device *d, uint32_t min_mhz, uint32_t max_mhz);
void device_reset_clocks(struct device *d);
int device_set_power_limit(struct device *d, double limit_w);
/* Advance dt_s seconds under load: power, thermal and firmware update.
 * The clock used by the serving model for the next interval is d->clk_mhz. */
void device_advance(struct device *d, double dt_s, const struct device_load *load);

/* Pure helpers (also used by the oracle and the calibration tests). */
uint32_t dvfs_snap_mhz(const struct dvfs_params *p, double mhz);
double dvfs_voltage(const struct dvfs_params *p, double mhz);
double power_accel_w(const struct plant_preset *p, double mhz, double activity, double busy,
		     double tj_c);
double power_memory_w(const struct plant_preset *p, double mem_tbps);
double power_host_w(const struct plant_preset *p, double host_busy);
/* On-die memory-path power of mem_tbps of HBM traffic at clock mhz (part of
 * power_w): independent of the SM clock, except that below the bandwidth
 * saturation clock the demand share does not fall with the achieved traffic. */
double power_uncore_w(const struct plant_preset *p, double mem_tbps, double mhz);
/* Share of the achievable HBM bandwidth left at clock share r = f / f_max. */
double plant_bw_clock_factor(const struct plant_preset *p, double r);

#endif
