/* The plant-fidelity targets of issue 13, measured on the plant's own
 * steady-state query (plant_query_point(), what `govctl plant` prints):
 *  - h200-sxm, llama-3.1-8b BF16 decode at batch 8, 32, 128: the locked clock
 *    that minimises energy per token in 0.55-0.80 x fmax, and the energy saved
 *    there against the max clock in 15-35 %;
 *  - prefill of 2048 tokens: the energy minimum in 0.65-0.85 x fmax;
 *  - Perseus A100-SXM GPT-3 sweep (a100-sxm preset, 500 W, the calibration
 *    stage workload of test_calib_dvfs): relative throughput and power at
 *    0.6-0.9 x fmax within 5 % (largest error over both instructions).
 * Energy is the GPU's (accelerator + HBM rails, what NVML's energy counter
 * and the published sweeps measure); the all-rails figure (with the host
 * share) is printed beside it. Simulated figures.
 * Usage: bench_plant_targets [--context N] [--data DIR]
 * (DIR default $GOVD_SHARED_DATA, else ../shared/data). Exit 1 on a miss. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plant_models/plant_query.h"

struct sweep_min {
	double r_gpu, saved_gpu, r_all, saved_all;
	double thr_at_min; /* throughput at the GPU-energy minimum / max clock's */
};

static int sweep(const struct plant_query *q, struct sweep_min *o)
{
	const struct dvfs_params *v = &q->preset->dvfs;
	struct plant_point top;
	int rc = plant_query_point(q, 0, 0, &top);
	if (rc < 0)
		return rc;
	double bg = 1e9, ba = 1e9;
	memset(o, 0, sizeof(*o));
	for (uint32_t f = v->min_mhz; f <= v->max_mhz; f += v->step_mhz) {
		struct plant_point p;
		if ((rc = plant_query_point(q, f, 0, &p)) < 0)
			return rc;
		if (p.gpu_j_per_token < bg) {
			bg = p.gpu_j_per_token;
			o->r_gpu = (double)f / v->max_mhz;
			o->thr_at_min = p.tokens_per_s / top.tokens_per_s;
		}
		if (p.j_per_token < ba) {
			ba = p.j_per_token;
			o->r_all = (double)f / v->max_mhz;
		}
	}
	o->saved_gpu = 1 - bg / top.gpu_j_per_token;
	o->saved_all = 1 - ba / top.j_per_token;
	return 0;
}

static bool in(double x, double lo, double hi)
{
	return x >= lo - 1e-9 && x <= hi + 1e-9;
}

/* Perseus: sums of time and energy per (instruction, clock) from the CSV. */
#define PERS_MAX 64
struct pers {
	uint32_t mhz[PERS_MAX];
	double t[2][PERS_MAX], e[2][PERS_MAX];
	int n;
};

static int pers_load(const char *dir, struct pers *ps)
{
	char path[4096], line[512];
	snprintf(path, sizeof(path), "%s/perseus_a100sxm_gpt3-175b_bf16_stage_profile.csv", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	memset(ps, 0, sizeof(*ps));
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		int stage;
		char ins[32];
		unsigned mhz;
		double t, e;
		if (sscanf(line, "%d,%31[^,],%u,%lf,%lf", &stage, ins, &mhz, &t, &e) != 5)
			continue;
		int k = strcmp(ins, "backward") == 0;
		int i = 0;
		while (i < ps->n && ps->mhz[i] != mhz)
			i++;
		if (i == ps->n) {
			if (ps->n == PERS_MAX)
				continue;
			ps->mhz[ps->n++] = mhz;
		}
		ps->t[k][i] += t;
		ps->e[k][i] += e;
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t context = 1024;
	const char *dir = getenv("GOVD_SHARED_DATA");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--context") && i + 1 < argc) {
			context = (uint32_t)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--data") && i + 1 < argc) {
			dir = argv[++i];
		} else {
			fprintf(stderr, "usage: bench_plant_targets [--context N] [--data DIR]\n");
			return 2;
		}
	}
	if (!dir)
		dir = "../shared/data";
	int miss = 0;
	struct plant_query q;
	memset(&q, 0, sizeof(q));
	q.preset = plant_preset_find("h200-sxm");
	q.model = model_spec_find("llama-3.1-8b");
	q.inlet_c = 30;
	q.context = context;
	printf("plant targets (simulated; h200-sxm, llama-3.1-8b BF16, 30 C inlet, 700 W)\n");
	printf("%-28s %10s %9s %9s %10s %9s  %s\n", "case", "min at", "saved", "thr there",
	       "all rails", "saved", "target");
	static const uint32_t batches[] = { 8, 32, 128 };
	for (int i = 0; i < 3; i++) {
		q.batch = batches[i];
		struct sweep_min m;
		if (sweep(&q, &m) < 0) {
			fprintf(stderr, "decode batch %u: query failed\n", q.batch);
			return 1;
		}
		bool ok = in(m.r_gpu, 0.55, 0.80) && in(m.saved_gpu, 0.15, 0.35);
		miss += !ok;
		char c[64];
		snprintf(c, sizeof(c), "decode b%u ctx %u", q.batch, context);
		printf("%-28s %7.3f fx %8.1f%% %9.3f %7.3f fx %8.1f%%  0.55-0.80 fmax, 15-35%%: %s\n",
		       c, m.r_gpu, m.saved_gpu * 100, m.thr_at_min, m.r_all, m.saved_all * 100,
		       ok ? "met" : "MISSED");
	}
	/* Below half the max clock (issue 31): memory-bound energy comes back to
	 * about the max-clock energy at 0.37-0.43 fmax (V100 sweeps,
	 * shared/data/README.md); target >= 0.95 at 0.4 on batch 8 and 32. */
	printf("%-28s %9s %9s %9s  %s\n", "decode GPU energy / max clk", "0.4 fmax", "0.5 fmax",
	       "0.6 fmax", "target");
	static const uint32_t low_batches[] = { 8, 32 };
	for (int i = 0; i < 2; i++) {
		q.batch = low_batches[i];
		struct plant_point top, pt[3];
		static const double rr[3] = { 0.4, 0.5, 0.6 };
		if (plant_query_point(&q, 0, 0, &top) < 0)
			return 1;
		for (int j = 0; j < 3; j++) {
			uint32_t f = dvfs_snap_mhz(&q.preset->dvfs, rr[j] * q.preset->dvfs.max_mhz);
			if (plant_query_point(&q, f, 0, &pt[j]) < 0)
				return 1;
		}
		double e4 = pt[0].gpu_j_per_token / top.gpu_j_per_token;
		bool ok = e4 >= 0.95;
		miss += !ok;
		char c[64];
		snprintf(c, sizeof(c), "decode b%u ctx %u", q.batch, context);
		printf("%-28s %9.3f %9.3f %9.3f  >= 0.95 at 0.4: %s\n", c, e4,
		       pt[1].gpu_j_per_token / top.gpu_j_per_token,
		       pt[2].gpu_j_per_token / top.gpu_j_per_token, ok ? "met" : "MISSED");
	}
	q.prefill = true;
	q.batch = 1;
	q.prompt = 2048;
	struct sweep_min m;
	if (sweep(&q, &m) < 0) {
		fprintf(stderr, "prefill: query failed\n");
		return 1;
	}
	bool ok = in(m.r_gpu, 0.65, 0.85);
	miss += !ok;
	printf("%-28s %7.3f fx %8.1f%% %9.3f %7.3f fx %8.1f%%  0.65-0.85 fmax: %s\n",
	       "prefill 2048 tokens", m.r_gpu, m.saved_gpu * 100, m.thr_at_min, m.r_all,
	       m.saved_all * 100, ok ? "met" : "MISSED");

	struct pers ps;
	int rc = pers_load(dir, &ps);
	if (rc < 0) {
		printf("Perseus A100 sweep: %s/perseus_a100sxm_gpt3-175b_bf16_stage_profile.csv: %s "
		       "(not checked)\n", dir, strerror(-rc));
		return miss ? 1 : 0;
	}
	const struct plant_preset *a100 = plant_preset_find("a100-sxm");
	struct model_spec k = model_spec_kernel(a100, 0.20, 0.98, 0.1);
	struct plant_query pq = { .preset = a100, .model = &k, .batch = 1, .inlet_c = 30 };
	struct plant_point top;
	if (plant_query_point(&pq, 0, 500, &top) < 0)
		return 1;
	int itop = -1;
	for (int i = 0; i < ps.n; i++)
		if (ps.mhz[i] == a100->dvfs.max_mhz)
			itop = i;
	if (itop < 0) {
		printf("Perseus A100 sweep: no 1410 MHz rows\n");
		return 1;
	}
	double worst[2][2] = { { 0, 0 }, { 0, 0 } }; /* [instr][thr, pow] */
	int n = 0;
	for (int i = 0; i < ps.n; i++) {
		double r = (double)ps.mhz[i] / a100->dvfs.max_mhz;
		if (r < 0.6 - 1e-9 || r > 0.9 + 1e-9)
			continue;
		struct plant_point p;
		if (plant_query_point(&pq, ps.mhz[i], 500, &p) < 0)
			return 1;
		double mt = p.tokens_per_s / top.tokens_per_s;
		double mp = (p.power_accel_w + p.power_memory_w) / (top.power_accel_w + top.power_memory_w);
		for (int k2 = 0; k2 < 2; k2++) {
			double pt = ps.t[k2][itop] / ps.t[k2][i];
			double pp = (ps.e[k2][i] / ps.t[k2][i]) / (ps.e[k2][itop] / ps.t[k2][itop]);
			worst[k2][0] = fmax(worst[k2][0], fabs(mt / pt - 1));
			worst[k2][1] = fmax(worst[k2][1], fabs(mp / pp - 1));
		}
		n++;
	}
	for (int k2 = 0; k2 < 2; k2++) {
		bool pok = worst[k2][0] <= 0.05 && worst[k2][1] <= 0.05;
		miss += !pok;
		printf("Perseus A100 %-8s (%s), %d clocks 0.6-0.9 fmax: largest error throughput "
		       "%.1f%%, power %.1f%% (target 5%%): %s\n",
		       k2 ? "backward" : "forward", k2 ? "held out" : "fitted", n, worst[k2][0] * 100,
		       worst[k2][1] * 100, pok ? "met" : "MISSED");
	}
	return miss ? 1 : 0;
}
