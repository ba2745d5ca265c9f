/* Device presets. Every number's source is in the preset's `sources` string
 * and, with the fitting procedure, in docs/plant-models.md and
 * docs/calibration.md. Datasheet values are as published; "fitted" values
 * were chosen to reproduce the MLPerf v4.1 MaxP/MaxQ ratios
 * (tests/unit/test_calib_mlperf.c) and the thermal targets in the docs. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "plant_models/device.h"

/* Hopper (GH100) silicon, shared by H100 SXM and H200 SXM: the two differ in
 * HBM only, so the DVFS, core power and firmware numbers are the same. */
#define HOPPER_DVFS                                                                       \
	{ .min_mhz = 345, .max_mhz = 1980, .step_mhz = 15, .base_mhz = 1590, .v_min = 0.84,   \
	  .v_max = 1.00, .knee_mhz = 1560 }

#define HOPPER_FW                                                                          \
	{ .control_period_s = 0.01, .sw_thermal_target_c = 87.0, .slowdown_c = 89.0,          \
	  .slowdown_hyst_c = 5.0, .slowdown_clock_frac = 0.5, .shutdown_c = 92.0,            \
	  .cap_gain = 0.5, .cap_deadband = 0.02, .cap_up_mhz = 15.0, .cap_avg_s = 0.05,       \
	  .sw_trim_mhz_per_s = 15.0, .sw_floor_mhz = 1830.0, .sw_hyst_c = 2.0 }

#define HOPPER_THERMAL                                                                     \
	{ .c_junction_j_per_k = 120.0, .r_jh_k_per_w = 0.025, .c_sink_j_per_k = 2000.0,       \
	  .r_ha_k_per_w = 0.040, .mem_offset_k_per_w = 0.15 }

#define HOPPER_SOURCES                                                                     \
	"clocks: 345-1980 MHz in 15 MHz steps, boost 1980 (NVIDIA H100/H200 datasheets; "      \
	"nvidia-smi -q supported clocks), base 1590 (TechPowerUp GPU database, H100 SXM5); "   \
	"compute: 989 TFLOPS BF16 dense, 1979 TOPS INT8 dense (NVIDIA H100/H200 datasheets, "  \
	"sparsity figures halved); power limit 700 W default, 200-700 W "                      \
	"(nvidia-smi -q captures, /work/shared/data/README.md); thermal thresholds: slowdown " \
	"89 C, shutdown 92 C, max operating 87 C used as the software target (same README); "  \
	"FITTED: V/f curve (v_min, knee, v_max), c_eff, leakage and idle_w to MLPerf "         \
	"Inference v4.1 H200 MaxP vs MaxQ resnet50/bert-99 throughput ratios "                 \
	"(docs/calibration.md); thermal RC to 70-80 C junction at 700 W and 30 C inlet with "  \
	"a seconds-scale junction and ~2 min heatsink time constant; HBM rail W/(TB/s) from "  \
	"a few pJ/bit access energy; host share from MLPerf v4.1 MaxQ node wall power "      \
	"(docs/plant-models.md)"

static const struct plant_preset presets[] = {
	{
		.name = "h200-sxm",
		.description = "NVIDIA H200 SXM 141 GB (HBM3e 4.8 TB/s, 700 W TGP)",
		.dvfs = HOPPER_DVFS,
		.power = { .idle_w = 55.0, .c_eff = 382.5, .leak_w_ref = 80.0, .leak_ref_c = 75.0,
			   .leak_per_c = 0.02, .mem_idle_w = 12.0, .mem_w_per_tbps = 15.0, .uncore_w_per_tbps = 50.0,
			   .uncore_demand_frac = 0.7,
			   .host_idle_w = 60.0, .host_busy_w = 60.0, .tgp_default_w = 700.0,
			   .tgp_min_w = 200.0, .tgp_max_w = 700.0 },
		.thermal = HOPPER_THERMAL,
		.fw = HOPPER_FW,
		.hbm_tbps = 4.8,
		.hbm_gb = 141.0,
		.peak_bf16_tflops = 989.0,
		.peak_int8_tops = 1979.0,
		.bw_sat_frac = 0.70,
		.precision_modes = PLANT_PREC_BIT(PLANT_PREC_BF16) | PLANT_PREC_BIT(PLANT_PREC_FP8) | PLANT_PREC_BIT(PLANT_PREC_INT8),
		.sources = "H200 SXM: 141 GB HBM3e, 4.8 TB/s, 700 W TGP (NVIDIA H200 Tensor Core "
			   "GPU datasheet); " HOPPER_SOURCES,
	},
	{
		.name = "h100-sxm",
		.description = "NVIDIA H100 SXM 80 GB (HBM3 3.35 TB/s, 700 W TGP)",
		.dvfs = HOPPER_DVFS,
		.power = { .idle_w = 55.0, .c_eff = 382.5, .leak_w_ref = 80.0, .leak_ref_c = 75.0,
			   .leak_per_c = 0.02, .mem_idle_w = 10.0, .mem_w_per_tbps = 15.0, .uncore_w_per_tbps = 50.0,
			   .uncore_demand_frac = 0.7,
			   .host_idle_w = 60.0, .host_busy_w = 60.0, .tgp_default_w = 700.0,
			   .tgp_min_w = 200.0, .tgp_max_w = 700.0 },
		.thermal = HOPPER_THERMAL,
		.fw = HOPPER_FW,
		.hbm_tbps = 3.35,
		.hbm_gb = 80.0,
		.peak_bf16_tflops = 989.0,
		.peak_int8_tops = 1979.0,
		.bw_sat_frac = 0.70,
		.precision_modes = PLANT_PREC_BIT(PLANT_PREC_BF16) | PLANT_PREC_BIT(PLANT_PREC_FP8) | PLANT_PREC_BIT(PLANT_PREC_INT8),
		.sources = "H100 SXM: 80 GB HBM3, 3.35 TB/s, 700 W TGP (NVIDIA H100 Tensor Core "
			   "GPU datasheet); " HOPPER_SOURCES,
	},
	{
		.name = "a100-sxm",
		.description = "NVIDIA A100 SXM4 80 GB (HBM2e 2.0 TB/s, 400 W TGP)",
		.dvfs = { .min_mhz = 210, .max_mhz = 1410, .step_mhz = 15, .base_mhz = 1095,
			  .v_min = 0.84, .v_max = 1.00, .knee_mhz = 1080 },
		.power = { .idle_w = 45.0, .c_eff = 290.0, .leak_w_ref = 50.0, .leak_ref_c = 75.0,
			   .leak_per_c = 0.02, .mem_idle_w = 10.0, .mem_w_per_tbps = 20.0, .uncore_w_per_tbps = 50.0,
			   .uncore_demand_frac = 0.7,
			   .host_idle_w = 60.0, .host_busy_w = 60.0, .tgp_default_w = 400.0,
			   .tgp_min_w = 100.0, .tgp_max_w = 500.0 },
		.thermal = { .c_junction_j_per_k = 90.0, .r_jh_k_per_w = 0.040,
			     .c_sink_j_per_k = 2000.0, .r_ha_k_per_w = 0.065,
			     .mem_offset_k_per_w = 0.15 },
		.fw = { .control_period_s = 0.01, .sw_thermal_target_c = 85.0, .slowdown_c = 89.0,
			.slowdown_hyst_c = 5.0, .slowdown_clock_frac = 0.5, .shutdown_c = 92.0,
			.cap_gain = 0.5, .cap_deadband = 0.02, .cap_up_mhz = 15.0, .cap_avg_s = 0.05,
			.sw_trim_mhz_per_s = 15.0, .sw_floor_mhz = 1305.0, .sw_hyst_c = 2.0 },
		.hbm_tbps = 2.039,
		.hbm_gb = 80.0,
		.peak_bf16_tflops = 312.0,
		.peak_int8_tops = 624.0,
		.bw_sat_frac = 0.70,
		.precision_modes = PLANT_PREC_BIT(PLANT_PREC_BF16) | PLANT_PREC_BIT(PLANT_PREC_INT8),
		.sources = "A100 SXM4 80 GB: 2,039 GB/s HBM2e, 312 TFLOPS BF16 dense, 624 TOPS INT8 "
			   "dense, 400 W TGP, boost 1410 MHz (NVIDIA A100 Tensor Core GPU datasheet); "
			   "clocks 210-1410 MHz in 15 MHz steps, base 1095 MHz, power limit "
			   "100-400 W (nvidia-smi -q captures of A100-SXM4-80GB); thresholds: "
			   "shutdown 92 C, slowdown 89 C, max operating 85 C used as the software "
			   "target (/work/shared/data/README.md); FITTED/SCALED: V/f, c_eff, "
			   "leakage, thermal RC scaled from the Hopper fit to a 400 W part "
			   "(docs/plant-models.md); not calibrated against A100 measurements",
	},
};

#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

static const char *preset_names[N_PRESETS + 1];
static pthread_once_t preset_names_once = PTHREAD_ONCE_INIT;

static void preset_names_fill(void)
{
	for (size_t i = 0; i < N_PRESETS; i++)
		preset_names[i] = presets[i].name;
	preset_names[N_PRESETS] = NULL;
}

const char *const plant_prec_names[] = { "bf16", "fp8", "int8", "fp4", "int4", NULL };

bool plant_preset_supports(const struct plant_preset *p, const char *mode)
{
	if (!p || !mode)
		return false;
	for (unsigned m = 0; m < PLANT_PREC_N; m++)
		if (strcmp(plant_prec_names[m], mode) == 0)
			return (p->precision_modes & PLANT_PREC_BIT(m)) != 0;
	return false;
}

const struct plant_preset *plant_preset_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < N_PRESETS; i++)
		if (strcmp(presets[i].name, name) == 0)
			return &presets[i];
	return NULL;
}

const char *const *plant_preset_names(void)
{
	pthread_once(&preset_names_once, preset_names_fill);
	return preset_names;
}
