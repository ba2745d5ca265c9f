/* Calibration below the maximum clock, out of sample. Every figure is
 * printed model against published, marked FIT (the parameters were chosen
 * on it) or HELD OUT (they were not); docs/plant-models.md has the table.
 *
 * 1. Perseus (SOSP'24) A100-SXM GPT-3 175B BF16 pipeline stages, locked SM
 *    clocks 855-1410 MHz (ml-energy/zeus @ 1b1c4a9d, kronos,
 *    sosp24_data/emulation/stage_profile/gpt3-175b+a100_sxm_bf16.csv,
 *    $GOVD_SHARED_DATA/perseus_a100sxm_gpt3-175b_bf16_stage_profile.csv):
 *    time and energy summed over the 8 stages per instruction. FIT on the
 *    forward instructions: the a100-sxm V/f curve (knee 1080 MHz, v_min
 *    0.84 V), c_eff 290, and this test's stage workload (20 % of the
 *    max-clock time memory-bound, activity 0.98). HELD OUT: the backward
 *    instructions. Relative throughput and power at 0.6-0.9 x fmax within 5 %.
 * 2. Memory-bound kernels (V100 STREAM / vectorAdd / fastWalshTransform
 *    sweeps, nsfcac/gpupowermodel and NV-DVFS-Benchmark, Wang & Chu
 *    ICPADS'18, as summarised in $GOVD_SHARED_DATA/README.md) against a pure
 *    streaming workload on h200-sxm and a100-sxm. FIT: throughput at 0.5 and
 *    0.6 x fmax (they set bw_sat_frac = 0.70) and the energy at 0.4 x fmax
 *    (back to ~1.0 of the max-clock energy: it set uncore_demand_frac = 0.7).
 *    HELD OUT: power at 0.5 / 0.7 / 0.9, the energy minimum and its depth.
 *    Reported with it: llama-3.1-8b decode energy at 0.4 / 0.5 / 0.6 x fmax
 *    on h200-sxm (issue 31: >= 0.95 of the max-clock energy at 0.4).
 * 3. Compute-bound shape on h200-sxm (Hopper takes the A100 V/f shape with
 *    its knee moved for the MLPerf MaxQ rows, test_calib_mlperf.c): HELD
 *    OUT against the published compute-bound ranges (throughput 0.65 / 0.75
 *    / 0.85 / 0.95, power 0.50 / 0.56 / 0.64 / 0.84 at 0.6-0.9, energy
 *    lowest at 0.75-0.79 x fmax) and the power-limit minimum (Zeus, NSDI'23:
 *    energy lowest at 0.5-0.67 x TDP, rising below; the energy at 0.4 x TDP
 *    over the minimum is printed beside the published median, +18 %). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "plant_models/plant_query.h"

struct pers_row {
	uint32_t mhz;
	double time_s, energy_j; /* summed over stages 0-7 */
};

/* Embedded from the CSV (sums over the 8 stages; the test re-derives them
 * from the file when $GOVD_SHARED_DATA has it). 855-1275 MHz and 1410. */
static const struct pers_row pers_for[] = {
	{ 855, 0.627832691, 146.762241 }, { 870, 0.618235914, 145.286136 }, { 885, 0.609011807, 144.083591 },
	{ 900, 0.595769046, 145.219586 }, { 915, 0.587250926, 144.108537 }, { 930, 0.578732564, 144.259216 },
	{ 945, 0.570643845, 142.692379 }, { 960, 0.560995104, 143.640102 }, { 975, 0.553254946, 143.759495 },
	{ 990, 0.544970163, 143.325504 }, { 1005, 0.537069355, 143.036717 }, { 1020, 0.529163864, 141.447854 },
	{ 1035, 0.521605585, 141.700245 }, { 1050, 0.514391959, 141.453383 }, { 1065, 0.507235608, 141.054909 },
	{ 1080, 0.501189893, 140.87992 }, { 1095, 0.494195484, 142.836517 }, { 1110, 0.487525868, 143.712815 },
	{ 1125, 0.481298378, 146.357259 }, { 1140, 0.475780099, 147.661951 }, { 1155, 0.469779816, 149.440837 },
	{ 1170, 0.463913499, 149.275393 }, { 1185, 0.458381434, 152.788043 }, { 1200, 0.452965725, 154.910565 },
	{ 1215, 0.447649828, 158.235931 }, { 1230, 0.442882902, 159.389612 }, { 1245, 0.437724078, 162.841247 },
	{ 1260, 0.432800216, 167.217204 }, { 1275, 0.427934064, 170.876034 }, { 1410, 0.405164927, 191.502637 },
};
static const struct pers_row pers_bac[] = {
	{ 855, 1.13351899, 270.506049 }, { 870, 1.11851877, 267.963666 }, { 885, 1.10390591, 268.168131 },
	{ 900, 1.07433965, 266.035741 }, { 915, 1.06063074, 266.145273 }, { 930, 1.04759505, 266.040387 },
	{ 945, 1.03500281, 265.65613 }, { 960, 1.01584363, 267.490837 }, { 975, 1.0040854, 265.856469 },
	{ 990, 0.989259313, 263.654017 }, { 1005, 0.97511938, 266.227522 }, { 1020, 0.961275513, 263.176301 },
	{ 1035, 0.947796081, 263.095121 }, { 1050, 0.934766268, 261.962837 }, { 1065, 0.922419585, 261.121292 },
	{ 1080, 0.912074154, 260.026363 }, { 1095, 0.899771274, 264.696401 }, { 1110, 0.888337738, 267.408763 },
	{ 1125, 0.878023294, 270.136294 }, { 1140, 0.869602049, 274.191957 }, { 1155, 0.858868158, 277.460995 },
	{ 1170, 0.848969982, 279.610913 }, { 1185, 0.83942547, 283.810104 }, { 1200, 0.830509832, 289.067636 },
	{ 1215, 0.821292506, 290.728816 }, { 1230, 0.812684275, 298.258021 }, { 1245, 0.804585648, 302.656646 },
	{ 1260, 0.796805084, 307.18871 }, { 1275, 0.788963637, 313.330767 }, { 1410, 0.749535082, 358.495738 },
};
#define PERS_N (sizeof(pers_for) / sizeof(pers_for[0]))
#define PERS_TOL 0.05
#define PERS_LIMIT_W 500.0   /* Perseus' boards drew ~476 W at 1410 MHz: the 500 W CTS SKU */
#define PERS_MEM_SHARE 0.20  /* FIT (forward): memory-bound share of a stage at 1410 MHz */
#define PERS_ACTIVITY 0.98   /* FIT (forward): ~472 W at 1410 MHz */

/* Sums from the CSV for one instruction; false if the file is absent. */
static bool pers_read(const char *instr, struct pers_row *rows, size_t n)
{
	const char *dir = getenv("GOVD_SHARED_DATA");
	if (!dir)
		return false;
	char path[4096], line[512];
	snprintf(path, sizeof(path), "%s/perseus_a100sxm_gpt3-175b_bf16_stage_profile.csv", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	for (size_t i = 0; i < n; i++)
		rows[i].time_s = rows[i].energy_j = 0;
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(strncmp(line, "stage,instruction,frequency,time,energy", 39), 0);
	while (fgets(line, sizeof(line), f)) {
		char ins[32];
		int stage;
		unsigned mhz;
		double t, e;
		if (sscanf(line, "%d,%31[^,],%u,%lf,%lf", &stage, ins, &mhz, &t, &e) != 5)
			continue;
		if (strcmp(ins, instr))
			continue;
		for (size_t i = 0; i < n; i++)
			if (rows[i].mhz == mhz) {
				rows[i].time_s += t;
				rows[i].energy_j += e;
			}
	}
	fclose(f);
	return true;
}

struct rel {
	double thr, pow, energy; /* relative to the max clock; power = accel + HBM */
};

static struct rel rel_at(const struct plant_query *q, uint32_t mhz, double limit_w,
			 const struct plant_point *top)
{
	struct plant_point o;
	assert_int_equal(plant_query_point(q, mhz, limit_w, &o), 0);
	struct rel r;
	r.thr = o.tokens_per_s / top->tokens_per_s;
	r.pow = (o.power_accel_w + o.power_memory_w) / (top->power_accel_w + top->power_memory_w);
	r.energy = o.gpu_j_per_token / top->gpu_j_per_token;
	return r;
}

static int check(const char *what, double model, double pub, double tol, bool fit)
{
	double err = model / pub - 1;
	bool ok = fabs(err) <= tol;
	print_message("  %-44s published %6.3f model %6.3f error %+6.1f%%  %s%s\n", what, pub, model,
		      err * 100, fit ? "FIT" : "HELD OUT", ok ? "" : "  <-- outside tolerance");
	return ok ? 0 : 1;
}

static void test_perseus_a100(void **state)
{
	(void)state;
	struct pers_row csv_f[PERS_N], csv_b[PERS_N];
	for (size_t i = 0; i < PERS_N; i++)
		csv_f[i].mhz = csv_b[i].mhz = pers_for[i].mhz;
	if (pers_read("forward", csv_f, PERS_N) && pers_read("backward", csv_b, PERS_N)) {
		for (size_t i = 0; i < PERS_N; i++) {
			assert_true(fabs(csv_f[i].time_s / pers_for[i].time_s - 1) < 1e-6);
			assert_true(fabs(csv_f[i].energy_j / pers_for[i].energy_j - 1) < 1e-6);
			assert_true(fabs(csv_b[i].time_s / pers_bac[i].time_s - 1) < 1e-6);
			assert_true(fabs(csv_b[i].energy_j / pers_bac[i].energy_j - 1) < 1e-6);
		}
		print_message("embedded Perseus sums match the CSV\n");
	} else {
		test_skip_note("CSV cross-check: $GOVD_SHARED_DATA/perseus_a100sxm_*.csv not found; "
			       "checking against the embedded sums only");
	}
	const struct plant_preset *p = plant_preset_find("a100-sxm");
	assert_non_null(p);
	struct model_spec m = model_spec_kernel(p, PERS_MEM_SHARE, PERS_ACTIVITY, 0.1);
	struct plant_query q = { .preset = p, .model = &m, .batch = 1, .inlet_c = 30 };
	struct plant_point top;
	assert_int_equal(plant_query_point(&q, 0, PERS_LIMIT_W, &top), 0);
	const struct pers_row *pub_top_f = &pers_for[PERS_N - 1], *pub_top_b = &pers_bac[PERS_N - 1];
	assert_int_equal(pub_top_f->mhz, 1410);
	print_message("Perseus A100-SXM GPT-3 stages, %0.f W limit: model %.0f W at %u MHz, "
		      "published forward %.0f W, backward %.0f W (tolerance %.0f%%)\n",
		      PERS_LIMIT_W, top.power_accel_w + top.power_memory_w, top.clock_mhz,
		      pub_top_f->energy_j / pub_top_f->time_s, pub_top_b->energy_j / pub_top_b->time_s,
		      PERS_TOL * 100);
	int bad = 0;
	double e_min_m = 9, e_min_p = 9;
	uint32_t f_min_m = 0, f_min_p = 0;
	for (int part = 0; part < 2; part++) {
		const struct pers_row *pub = part ? pers_bac : pers_for;
		const struct pers_row *pt = part ? pub_top_b : pub_top_f;
		print_message(" %s instructions (%s):\n", part ? "backward" : "forward",
			      part ? "HELD OUT" : "FIT");
		for (size_t i = 0; i + 1 < PERS_N; i++) {
			struct rel r = rel_at(&q, pub[i].mhz, PERS_LIMIT_W, &top);
			double thr = pt->time_s / pub[i].time_s;
			double pw = (pub[i].energy_j / pub[i].time_s) / (pt->energy_j / pt->time_s);
			double en = pub[i].energy_j / pt->energy_j;
			char w[64];
			snprintf(w, sizeof(w), "%u MHz (%.2f fmax) throughput", pub[i].mhz,
				 pub[i].mhz / 1410.0);
			bad += check(w, r.thr, thr, PERS_TOL, part == 0);
			snprintf(w, sizeof(w), "%u MHz (%.2f fmax) power", pub[i].mhz, pub[i].mhz / 1410.0);
			bad += check(w, r.pow, pw, PERS_TOL, part == 0);
			if (part == 1) {
				if (r.energy < e_min_m) {
					e_min_m = r.energy;
					f_min_m = pub[i].mhz;
				}
				if (en < e_min_p) {
					e_min_p = en;
					f_min_p = pub[i].mhz;
				}
			}
		}
	}
	print_message(" backward energy minimum: published %u MHz (%.3f of max-clock energy), model "
		      "%u MHz (%.3f)\n", f_min_p, e_min_p, f_min_m, e_min_m);
	assert_int_equal(bad, 0);
	assert_true(abs((int)f_min_m - (int)f_min_p) <= 90);
}

/* Published ranges (README of the data): [lo, hi] at a clock share. */
struct range {
	double r, lo, hi;
};

static int check_range(const char *what, double model, const struct range *g, double tol,
		       bool fit)
{
	bool ok = model >= g->lo * (1 - tol) && model <= g->hi * (1 + tol);
	char at[32] = "";
	if (g->r > 0)
		snprintf(at, sizeof(at), " at %.2f fmax", g->r);
	print_message("  %-34s%-13s: published %.2f-%.2f model %.3f  %s%s\n", what, at, g->lo, g->hi,
		      model, fit ? "FIT" : "HELD OUT", ok ? "" : "  <-- outside tolerance");
	return ok ? 0 : 1;
}

static void test_memory_bound_shape(void **state)
{
	(void)state;
	static const struct range thr[] = { { 0.5, 0.66, 0.73 }, { 0.6, 0.83, 0.89 }, { 0.7, 0.97, 1.0 } };
	static const struct range pw[] = { { 0.5, 0.59, 0.62 }, { 0.7, 0.73, 0.79 }, { 0.9, 0.87, 0.90 } };
	int bad = 0;
	const char *presets[] = { "h200-sxm", "a100-sxm" };
	for (int k = 0; k < 2; k++) {
		const struct plant_preset *p = plant_preset_find(presets[k]);
		struct model_spec m = model_spec_kernel(p, 1.0, 1.0, 0.1);
		struct plant_query q = { .preset = p, .model = &m, .batch = 1, .inlet_c = 30 };
		struct plant_point top;
		assert_int_equal(plant_query_point(&q, 0, 0, &top), 0);
		print_message("memory-bound streaming on %s (tolerance 5%% of the published range):\n",
			      p->name);
		uint32_t fmax = p->dvfs.max_mhz;
		for (int i = 0; i < 3; i++) {
			struct rel r = rel_at(&q, dvfs_snap_mhz(&p->dvfs, thr[i].r * fmax), 0, &top);
			bad += check_range("throughput", r.thr, &thr[i], 0.05, i < 2);
		}
		for (int i = 0; i < 3; i++) {
			struct rel r = rel_at(&q, dvfs_snap_mhz(&p->dvfs, pw[i].r * fmax), 0, &top);
			bad += check_range("power", r.pow, &pw[i], 0.05, false);
		}
		double best = 9, at = 0, e40 = 0;
		for (uint32_t f = p->dvfs.min_mhz; f <= fmax; f += p->dvfs.step_mhz) {
			struct rel r = rel_at(&q, f, 0, &top);
			if (r.energy < best) {
				best = r.energy;
				at = (double)f / fmax;
			}
			if (fabs((double)f / fmax - 0.40) < 0.5 * p->dvfs.step_mhz / fmax)
				e40 = r.energy;
		}
		struct range emin_at = { 0, 0.66, 0.69 }, emin = { 0, 0.74, 0.77 };
		bad += check_range("energy minimum at (x fmax)", at, &emin_at, 0.05, false);
		bad += check_range("energy at the minimum", best, &emin, 0.05, false);
		/* Back to about the max-clock energy at 0.37-0.43 fmax: the on-die
		 * memory path does not idle when a low clock starves it. */
		struct range e_low = { 0.40, 0.95, 1.05 };
		bad += check_range("energy", e40, &e_low, 0.0, true);
	}
	/* What the decode of a served LLM does there (issue 31 target). */
	const struct plant_preset *h = plant_preset_find("h200-sxm");
	static const uint32_t batches[] = { 8, 32 };
	for (int k = 0; k < 2; k++) {
		struct plant_query q = { .preset = h, .model = model_spec_find("llama-3.1-8b"),
					 .batch = batches[k], .context = 1024, .inlet_c = 30 };
		struct plant_point top;
		assert_int_equal(plant_query_point(&q, 0, 0, &top), 0);
		double e[3];
		for (int i = 0; i < 3; i++)
			e[i] = rel_at(&q, dvfs_snap_mhz(&h->dvfs, (0.4 + 0.1 * i) * h->dvfs.max_mhz),
				      0, &top).energy;
		print_message("h200-sxm llama-3.1-8b BF16 decode batch %u, context 1024: GPU energy at "
			      "0.4 / 0.5 / 0.6 fmax = %.3f / %.3f / %.3f of the max clock's "
			      "(target >= 0.95 at 0.4)%s\n", batches[k], e[0], e[1], e[2],
			      e[0] >= 0.95 ? "" : "  <-- missed");
		bad += e[0] < 0.95;
	}
	assert_int_equal(bad, 0);
}

static void test_compute_bound_shape_h200(void **state)
{
	(void)state;
	static const struct range thr[] = { { 0.6, 0.65, 0.65 }, { 0.7, 0.75, 0.75 },
					    { 0.8, 0.85, 0.85 }, { 0.9, 0.95, 0.95 } };
	static const struct range pw[] = { { 0.6, 0.50, 0.50 }, { 0.7, 0.56, 0.56 },
					   { 0.8, 0.64, 0.64 }, { 0.9, 0.84, 0.84 } };
	const struct plant_preset *p = plant_preset_find("h200-sxm");
	struct plant_query q = { .preset = p, .model = model_spec_find("llama-3.1-8b"),
				 .prefill = true, .batch = 1, .prompt = 2048, .inlet_c = 30 };
	struct plant_point top;
	assert_int_equal(plant_query_point(&q, 0, 0, &top), 0);
	uint32_t fmax = p->dvfs.max_mhz;
	print_message("compute-bound: h200-sxm llama-3.1-8b BF16 prefill of 2048 tokens, 700 W "
		      "(its max-clock point is power-capped at %u MHz; tolerance 10%%):\n",
		      top.clock_mhz);
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		struct rel r = rel_at(&q, dvfs_snap_mhz(&p->dvfs, thr[i].r * fmax), 0, &top);
		bad += check_range("throughput", r.thr, &thr[i], 0.10, false);
		bad += check_range("power", r.pow, &pw[i], 0.10, false);
	}
	double best = 9, at = 0;
	for (uint32_t f = p->dvfs.min_mhz; f <= fmax; f += p->dvfs.step_mhz) {
		struct rel r = rel_at(&q, f, 0, &top);
		if (r.energy < best) {
			best = r.energy;
			at = (double)f / fmax;
		}
	}
	struct range emin_at = { 0, 0.75, 0.79 };
	bad += check_range("energy minimum at (x fmax)", at, &emin_at, 0.05, false);
	print_message("  energy at the minimum: %.3f of max-clock energy\n", best);
	/* Power limit: the clock unlocked, the firmware settles under each limit. */
	double lbest = 1e9, lat = 0, e200 = 0;
	for (double w = p->power.tgp_min_w; w <= p->power.tgp_max_w; w += 10) {
		struct plant_point o;
		assert_int_equal(plant_query_point(&q, 0, w, &o), 0);
		if (o.gpu_j_per_token < lbest) {
			lbest = o.gpu_j_per_token;
			lat = w / p->power.tgp_default_w;
		}
		if (w == p->power.tgp_min_w)
			e200 = o.gpu_j_per_token;
	}
	struct range lim = { 0, 0.50, 0.67 };
	bad += check_range("energy minimum at (x TDP)", lat, &lim, 0.10, false);
	print_message("  power-limit curve, GPU energy over its minimum:");
	for (int k = 3; k <= 10; k++) {
		struct plant_point ok;
		assert_int_equal(plant_query_point(&q, 0, 0.1 * k * p->power.tgp_default_w, &ok), 0);
		print_message(" %.1f TDP %+.1f%%", 0.1 * k, (ok.gpu_j_per_token / lbest - 1) * 100);
	}
	print_message("\n");
	struct plant_point o40;
	assert_int_equal(plant_query_point(&q, 0, 0.4 * p->power.tgp_default_w, &o40), 0);
	print_message("  energy at 0.4 x TDP (%.0f W) over the minimum: %+.1f%% (Zeus NSDI'23 "
		      "power-limit sweeps: median +18%%; REPORTED, not held)\n",
		      0.4 * p->power.tgp_default_w, (o40.gpu_j_per_token / lbest - 1) * 100);
	print_message("  energy at the minimum limit (%.0f W) / at the best: %.3f (rising below "
		      "the minimum)\n", p->power.tgp_min_w, e200 / lbest);
	assert_true(e200 > lbest);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perseus_a100),
		cmocka_unit_test(test_memory_bound_shape),
		cmocka_unit_test(test_compute_bound_shape_h200),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
