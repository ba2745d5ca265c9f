/* Speed of the LLM serving model: one simulated hour of the Azure LLM code
 * trace (Splitwise, ISCA'24; $GOVD_SHARED_DATA/AzureLLMInferenceTrace2023_code.csv)
 * at 1x, 4x and 8x the recorded load (time compressed, trace looped), on
 * llama-3.1-8b / h100-sxm, server alone and server + device model, 10 ms
 * ticks as in the plant. The trace is read and replayed by the plant's own
 * trace_load and WORKLOAD_TRACE workload. Target: well under 0.3 s per
 * simulated hour.
 * Usage: bench_llm_server [trace.csv] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/diag.h"
#include "common/rng.h"
#include "plant_models/device.h"
#include "plant_models/plant.h"
#include "plant_models/server.h"
#include "plant_models/workload.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(const struct trace *tr, double scale, bool with_device)
{
	const struct plant_preset *p = plant_preset_find("h100-sxm");
	struct server_cfg c;
	memset(&c, 0, sizeof(c));
	c.model = model_spec_find("llama-3.1-8b");
	c.max_batch = 256;
	c.max_queue = 4096;
	c.n_slices = 1;
	struct workload_cfg wc;
	memset(&wc, 0, sizeof(wc));
	wc.kind = WORKLOAD_TRACE;
	wc.time_scale = scale;
	wc.loop = true;
	wc.n_slices = 1;
	wc.slice_fraction[0] = 1;
	struct rng root;
	rng_seed(&root, 1); /* a looping trace draws nothing; one slice needs no draw */
	struct server *s;
	struct workload *w;
	if (!p || !c.model || server_create(&c, p, &s) < 0) {
		fprintf(stderr, "bench_llm_server: server setup failed\n");
		exit(1);
	}
	if (workload_open(&wc, tr, &root, &w) < 0) {
		fprintf(stderr, "bench_llm_server: workload setup failed\n");
		exit(1);
	}
	struct device d;
	device_init(&d, p, 30.0);
	const double hour = 3600.0, dt = PLANT_TICK_S;
	struct request r;
	bool have = workload_next(w, &r) == 0;
	uint64_t k = 0;
	double t = 0;
	double t_start = now_s();
	while (t < hour - 1e-9) {
		while (have && r.arrival_s < t + dt) {
			r.int8 = (k++ % 3) == 0; /* a third in INT8, fixed so runs compare */
			server_submit(s, &r);
			have = workload_next(w, &r) == 0;
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
	workload_close(w);
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
	struct diag_list diags = { 0 };
	struct trace *tr;
	int rc = trace_load(path, &tr, &diags);
	diag_print(&diags, stderr);
	diag_clear(&diags);
	if (rc < 0) {
		fprintf(stderr, "bench_llm_server: cannot use %s\n", path);
		return 1;
	}
	printf("%zu requests over %.0f s from %s\n", tr->n, tr->span_s, path);
	const double scales[] = { 1, 4, 8 };
	for (size_t k = 0; k < 3; k++) {
		run(tr, scales[k], false);
		run(tr, scales[k], true);
	}
	trace_free(tr);
	return 0;
}
