/* Calibration of the device model (h200-sxm preset) and the dynamic-batching
 * server against MLPerf Inference v4.1 results, NVIDIA closed division,
 * 8x H200-SXM-141GB (mlcommons/inference_results_v4.1 @ 198fc467,
 * closed/NVIDIA/{results,configs}; table: shared/data/
 * mlperf_inf_v4.1_nvidia_h100_h200_maxp_maxq.csv). Per-GPU figures are the
 * system figures / 8. All rows share one preset and one model table: the
 * fit is in docs/calibration.md.
 *
 * Harness: one device at 30 C inlet, a saturated server (the queue is never
 * short of a full batch), 600 s of 10 ms ticks (the MLPerf Offline minimum
 * run; about 7 heatsink time constants, so the firmware cap and the thermal
 * state settle), throughput measured over the last 60 s. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "plant_models/device.h"
#include "plant_models/dynbatch.h"

/* Published system throughput, samples/s (MLPerf Inference v4.1 Offline,
 * H200-SXM-141GBx8_TRT and H200-SXM-141GBx8_TRT_MaxQ). */
struct published {
	const char *system, *benchmark;
	double samples_per_s;
	double limit_w; /* per-GPU power limit; 700 = default TGP (MaxP) */
	const char *precision;
};

static const struct published pub[] = {
	{ "H200-SXM-141GBx8_TRT", "resnet50", 756960.0, 700, "int8" },
	{ "H200-SXM-141GBx8_TRT_MaxQ", "resnet50", 556234.0, 350, "int8" },
	{ "H200-SXM-141GBx8_TRT", "bert-99", 73309.5, 700, "int8" },
	{ "H200-SXM-141GBx8_TRT_MaxQ", "bert-99", 54063.2, 400, "int8" },
	{ "H200-SXM-141GBx8_TRT", "bert-99.9", 63950.4, 700, "fp16" },
	/* Held out: not used in the fit (docs/calibration.md). */
	{ "H200-SXM-141GBx8_TRT_MaxQ", "bert-99.9", 46534.6, 450, "fp16" },
};
enum { RN_700, RN_350, B8_700, B8_400, B16_700, B16_450, N_PUB };

#define GPUS 8
#define TICK 0.01
#define RUN_S 600.0
#define MEASURE_S 60.0

struct steady {
	double samples_per_s, power_w, mem_power_w, clk_mhz, tj_c;
};

static const struct model_spec *dyn_model(const char *name)
{
	for (const struct model_spec *m = dynbatch_models; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	fail_msg("model %s missing from dynbatch_models", name);
	return NULL;
}

static struct steady run_steady(const char *model, bool int8, double limit_w, uint32_t batch)
{
	const struct plant_preset *p = plant_preset_find("h200-sxm");
	assert_non_null(p);
	struct server_cfg cfg = { .model = dyn_model(model), .max_batch = batch,
				  .batch_timeout_ms = 1.0, .n_slices = 1 };
	struct dynbatch *b = NULL;
	assert_int_equal(dynbatch_create(&cfg, p, &b), 0);
	struct device d;
	device_init(&d, p, 30.0);
	assert_int_equal(device_set_power_limit(&d, limit_w), 0);

	long n = lround(RUN_S / TICK), m0 = n - lround(MEASURE_S / TICK);
	uint64_t done0 = 0;
	double e0 = 0, em0 = 0, clk_sum = 0, t = 0;
	for (long i = 0; i < n; i++) {
		if (i == m0) {
			done0 = dynbatch_stats(b)->completed;
			e0 = d.energy_j;
			em0 = d.mem_energy_j;
		}
		while (dynbatch_stats(b)->queue_len < 2u * batch) {
			struct request r = { .arrival_s = t, .ctx_tokens = 1, .gen_tokens = 1,
					     .int8 = int8 };
			dynbatch_submit(b, &r);
		}
		struct device_load l;
		dynbatch_advance(b, t, TICK, d.clk_mhz, &l, NULL, NULL);
		device_advance(&d, TICK, &l);
		t += TICK;
		if (i >= m0)
			clk_sum += d.clk_mhz;
		assert_false(d.shut_down);
	}
	struct steady s = {
		.samples_per_s = (double)(dynbatch_stats(b)->completed - done0) / MEASURE_S,
		.power_w = (d.energy_j - e0) / MEASURE_S,
		.mem_power_w = (d.mem_energy_j - em0) / MEASURE_S,
		.clk_mhz = clk_sum / (double)(n - m0),
		.tj_c = d.tj_c,
	};
	assert_int_equal(d.clamp_events, 0);
	dynbatch_destroy(b);
	return s;
}

static struct steady res[N_PUB];
static bool have_res;

static int setup(void **state)
{
	(void)state;
	if (have_res)
		return 0;
	res[RN_700] = run_steady("resnet50", true, 700, 2048);
	res[RN_350] = run_steady("resnet50", true, 350, 2048);
	res[B8_700] = run_steady("bert-large", true, 700, 1024);
	res[B8_400] = run_steady("bert-large", true, 400, 1024);
	res[B16_700] = run_steady("bert-large", false, 700, 1024);
	res[B16_450] = run_steady("bert-large", false, 450, 1024);
	have_res = true;
	return 0;
}

static void check_row(const char *row, double published, double model, double tol)
{
	double err = model / published - 1.0;
	printf("  %-44s published %8.3f  model %8.3f  error %+6.1f%%  (tolerance %.0f%%)\n", row,
	       published, model, 100 * err, 100 * tol);
	assert_true(fabs(err) <= tol);
}

static void test_power_ratios(void **state)
{
	(void)state;
	printf("MLPerf Inference v4.1, H200 SXM, Offline, per GPU (all rows FIT: V/f knee, "
	       "c_eff, activities, bert mfu_int8):\n");
	check_row("resnet50 int8: 350 W / 700 W throughput",
		  pub[RN_350].samples_per_s / pub[RN_700].samples_per_s,
		  res[RN_350].samples_per_s / res[RN_700].samples_per_s, 0.10);
	check_row("bert-99 int8: 400 W / 700 W throughput",
		  pub[B8_400].samples_per_s / pub[B8_700].samples_per_s,
		  res[B8_400].samples_per_s / res[B8_700].samples_per_s, 0.10);
	check_row("bert int8 (bert-99) / fp16 (bert-99.9) at 700 W",
		  pub[B8_700].samples_per_s / pub[B16_700].samples_per_s,
		  res[B8_700].samples_per_s / res[B16_700].samples_per_s, 0.10);
	/* Not held out any more: the Hopper V/f knee (1560 MHz, 0.84 V) was
	 * chosen among five settings as the one that put this row in tolerance
	 * too (docs/calibration.md). The out-of-sample checks of the Hopper V/f
	 * are test_calib_dvfs (compute-bound shape, power-limit minimum) and
	 * test_calib_llm's llama2-70b MaxQ ratio. */
	printf("FIT too (it chose among the knee settings, docs/calibration.md):\n");
	check_row("bert-99.9 fp16: 450 W / 700 W throughput",
		  pub[B16_450].samples_per_s / pub[B16_700].samples_per_s,
		  res[B16_450].samples_per_s / res[B16_700].samples_per_s, 0.10);
}

/* Absolute per-GPU throughput: reported, a sanity figure only (the model
 * has no NVLink/host pipeline detail; see docs/calibration.md). */
static void test_absolute_report(void **state)
{
	(void)state;
	printf("absolute per-GPU throughput (published / 8) and operating point:\n");
	for (int i = 0; i < N_PUB; i++) {
		double want = pub[i].samples_per_s / GPUS;
		printf("  %-10s %-5s %3.0f W: published %9.1f/s model %9.1f/s (x%.2f)  "
		       "accel %5.1f W  HBM %4.1f W  clock %6.1f MHz  tj %4.1f C\n",
		       pub[i].benchmark, pub[i].precision, pub[i].limit_w, want,
		       res[i].samples_per_s, res[i].samples_per_s / want, res[i].power_w,
		       res[i].mem_power_w, res[i].clk_mhz, res[i].tj_c);
		/* Physical consistency of each run (not a fit target). */
		assert_true(res[i].power_w <= pub[i].limit_w * 1.02);
		assert_true(res[i].tj_c > 40 && res[i].tj_c < 87);
	}
	/* The MaxQ rows are power-limited at their limit. */
	assert_true(fabs(res[RN_350].power_w - 350) < 0.03 * 350);
	assert_true(fabs(res[B8_400].power_w - 400) < 0.03 * 400);
	assert_true(fabs(res[B16_450].power_w - 450) < 0.03 * 450);
}

/* The embedded figures must be the ones in the shared data table. */
static void test_embedded_figures_match_csv(void **state)
{
	(void)state;
	const char *dir = getenv("GOVD_SHARED_DATA");
	char path[4096];
	FILE *f = NULL;
	if (dir) {
		snprintf(path, sizeof(path), "%s/mlperf_inf_v4.1_nvidia_h100_h200_maxp_maxq.csv", dir);
		f = fopen(path, "r");
	}
	if (!f) {
		TEST_SKIP("$GOVD_SHARED_DATA/mlperf_inf_v4.1_nvidia_h100_h200_maxp_maxq.csv not "
			  "found; embedded figures not cross-checked");
	}
	bool found[N_PUB] = { false };
	char line[2048];
	while (fgets(line, sizeof(line), f)) {
		char *fld[11] = { 0 };
		int nf = 0;
		for (char *s = line, *tok; nf < 11 && (tok = strsep(&s, ",")) != NULL;)
			fld[nf++] = tok;
		if (nf < 9 || strcmp(fld[2], "Offline") != 0)
			continue;
		for (int i = 0; i < N_PUB; i++) {
			if (strcmp(fld[0], pub[i].system) == 0 && strcmp(fld[1], pub[i].benchmark) == 0) {
				assert_true(fabs(strtod(fld[4], NULL) - pub[i].samples_per_s) < 1e-6);
				assert_true(strncmp(fld[7], pub[i].precision, strlen(pub[i].precision)) == 0);
				if (pub[i].limit_w < 700)
					assert_true(fabs(strtod(fld[8], NULL) - pub[i].limit_w) < 1e-9);
				found[i] = true;
			}
		}
	}
	fclose(f);
	for (int i = 0; i < N_PUB; i++)
		assert_true(found[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_figures_match_csv),
		cmocka_unit_test_setup(test_power_ratios, setup),
		cmocka_unit_test_setup(test_absolute_report, setup),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
