/* Fleet simulation speed and capacity (docs/fleet.md): 1000 simulated
 * accelerators (125 nodes x 8) for 24 simulated hours under one budget,
 * one run per policy (static, POLCA-style, govd's allocator), then the
 * capacity search (--fit) at the default 10 s step. Target: the whole
 * bench under 10 minutes on the 2-core machine. SIMULATED figures.
 * Usage: bench_fleet [TRACE] (default $GOVD_SHARED_DATA or ../shared/data). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "governor/sim/fleet_sim.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *sd = getenv("GOVD_SHARED_DATA");
	snprintf(path, sizeof(path), "%s/AzureLLMInferenceTrace2023_code.csv",
		 sd && *sd ? sd : "../shared/data");
	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	if (access(path, R_OK)) {
		printf("bench_fleet: SKIP: %s: %s\n", path, strerror(errno));
		return 0;
	}
	struct diag_list d = { 0 };
	struct fleet_trace t;
	if (fleet_trace_load(path, &t, &d)) {
		diag_print(&d, stderr);
		diag_clear(&d);
		return 1;
	}
	struct fleet_sim_cfg c;
	fleet_sim_defaults(&c);
	double t_all = now_s();
	printf("bench_fleet: SIMULATED, %zu nodes x %zu accelerators, %.0f h, step %.0f s, budget %.0f W\n",
	       c.nodes, c.per_node, c.hours, c.step_s, c.budget_w);
	for (int p = 0; p < FLEET_POLICY_N; p++) {
		struct fleet_sim_result r;
		double t0 = now_s();
		if (fleet_sim_run(&c, &t, (enum fleet_policy)p, &r))
			return 1;
		printf("  run %-6s %6.2f s wall: hp loss %.3f %%, lp loss %.2f %%, max draw %.0f W, "
		       "%zu steps over budget\n",
		       fleet_policy_names[p], now_s() - t0, 100 * r.hp_loss, 100 * r.lp_loss, r.max_draw_w,
		       r.over_budget_steps);
	}
	/* capacity at the default 10 s step and at 2 s (closer to the
	 * allocator's real 0.5 s round; both policies react once a step) */
	for (int pass = 0; pass < 2; pass++) {
		size_t base = 0;
		c.step_s = pass ? 2 : 10;
		for (int p = 0; p < FLEET_POLICY_N; p++) {
			struct fleet_sim_result r;
			double t0 = now_s();
			size_t n = fleet_sim_fit(&c, &t, (enum fleet_policy)p, 0.01, 4 * c.nodes, &r);
			if (p == 0)
				base = n;
			printf("  fit step %2.0f s %-6s %5zu accelerators (%+.1f %% vs static), hp loss %.3f %%, "
			       "lp loss %.2f %% (%.1f s wall)\n",
			       c.step_s, fleet_policy_names[p], n * c.per_node,
			       base ? 100.0 * ((double)n / (double)base - 1) : 0.0, 100 * r.hp_loss,
			       100 * r.lp_loss, now_s() - t0);
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("bench_fleet: total %.1f s wall, peak RSS %.1f MiB (target: under 600 s)\n",
	       now_s() - t_all, (double)ru.ru_maxrss / 1024.0);
	fleet_trace_free(&t);
	return 0;
}
