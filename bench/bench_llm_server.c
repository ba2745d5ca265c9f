/* Speed of the LLM serving model: one simulated hour of the Azure LLM code
 * trace (Splitwise, ISCA'24; $GOVD_SHARED_DATA/AzureLLMInferenceTrace2023_code.csv)
 * at 1x, 4x and 8x the recorded load (time compressed, trace looped), on
 * llama-3.1-8b / h100-sxm, server alone and server + device model, 10 ms
 * ticks as in the plant. Target: well under 0.3 s per simulated hour.
 * Usage: bench_llm_server [trace.csv] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plant_models/device.h"
#include "plant_models/plant.h"
#include "plant_models/server.h"

struct row {
	double t_s;
	unsigned ctx, gen;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load(const char *path, struct row **out, size_t *n_out, double *span_s)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = 0, cap = 16384;
	struct row *v = malloc(cap * sizeof(*v));
	char line[256];
	double t0 = -1;
	if (!v || !fgets(line, sizeof(line), f)) { /* header */
		free(v);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		int y, mo, d, h, mi;
		double sec;
		unsigned c, g;
		if (sscanf(line, "%d-%d-%d %d:%d:%lf,%u,%u", &y, &mo, &d, &h, &mi, &sec, &c, &g) != 8)
			continue;
		double t = ((d * 24.0 + h) * 60.0 + mi) * 60.0 + sec; /* one month in the trace */
		if (t0 < 0)
			t0 = t;
		if (n == cap) {
			cap *= 2;
			struct row *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = (struct row){ t - t0, c, g ? g : 1 };
	}
	fclose(f);
	*out = v;
	*n_out = n;
	*span_s = n ? v[n - 1].t_s : 0;
	return n ? 0 : -1;
}

static void run(const struct row *rows, size_t n, double span_s, double scale, bool with_device)
{
	const struct plant_preset *p = plant_preset_find("h100-sxm");
	struct server_cfg c;
	memset(&c, 0, sizeof(c));
	c.model = model_spec_find("llama-3.1-8b");
	c.max_batch = 256;
	c.max_queue = 4096;
	c.n_slices = 1;
	struct server *s;
	if (!p || !c.model || server_create(&c, p, &s) < 0) {
		fprintf(stderr, "setup failed\n");
		exit(1);
	}
	struct device d;
	device_init(&d, p, 30.0);
	const double hour = 3600.0, dt = PLANT_TICK_S;
	size_t i = 0;
	double loop_off = 0, t = 0;
	double t_start = now_s();
	while (t < hour - 1e-9) {
		for (;;) {
			double ta = (rows[i].t_s + loop_off) / scale;
			if (ta >= t + dt)
				break;
			struct request r = { .arrival_s = ta, .ctx_tokens = rows[i].ctx,
					     .gen_tokens = rows[i].gen, .int8 = (i % 3) == 0 };
			server_submit(s, &r);
			if (++i == n) {
				i = 0;
				loop_off += span_s + 1.0;
			}
		}
		struct device_load l;
		server_advance(s, t, dt, with_device ? d.clk_mhz : p->dvfs.max_mhz, &l, NULL, NULL);
		if (with_device)
			device_advance(&d, dt, &l);
		t += dt;
	}
	double wall = now_s() - t_start;
	const struct server_stats *st = server_get_stats(s);
	printf("%4.0fx load %-14s %8.3f s wall per simulated hour: %llu arrived, %llu rejected, "
	       "%llu done, p99 TTFT %.0f ms, p99 TBT %.1f ms\n",
	       scale, with_device ? "server+device" : "server", wall,
	       (unsigned long long)st->arrived, (unsigned long long)st->rejected,
	       (unsigned long long)st->completed, hist_quantile(&st->ttft, 0.99),
	       hist_quantile(&st->tbt, 0.99));
	server_destroy(s);
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *dir = getenv("GOVD_SHARED_DATA");
	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "%s/AzureLLMInferenceTrace2023_code.csv",
			 dir ? dir : GOVD_SOURCE_DIR "/../shared/data");
	struct row *rows;
	size_t n;
	double span;
	if (load(path, &rows, &n, &span) < 0) {
		fprintf(stderr, "bench_llm_server: cannot read %s\n", path);
		return 1;
	}
	printf("%zu requests over %.0f s from %s\n", n, span, path);
	const double scales[] = { 1, 4, 8 };
	for (size_t k = 0; k < 3; k++) {
		run(rows, n, span, scales[k], false);
		run(rows, n, span, scales[k], true);
	}
	free(rows);
	return 0;
}
