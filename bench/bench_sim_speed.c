/* Simulation speed: the 1 h Azure code scenario under firmware-default, no
 * outputs written. Prints simulated seconds per wall second (target >=
 * 10,000x on one core) and peak RSS. Skips when the trace is absent.
 * Usage: bench_sim_speed [SCENARIO [POLICY]] (run from the repo root). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "governor/sim/sim.h"

int main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "configs/scenarios/azure-code-30c.yaml";
	const char *policy = argc > 2 ? argv[2] : "policies/baselines/firmware-default.yaml";

	if (access(scenario, R_OK)) {
		printf("bench_sim_speed: SKIP: %s: %s\n", scenario, strerror(errno));
		return 0;
	}
	struct sim_opts o = { .scenario_path = scenario, .policy_path = policy, .no_output = true };
	struct sim_result r;
	struct diag_list d = { 0 };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = sim_run(&o, &r, &d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc) {
		/* A missing trace is the one expected failure: skip, say why. */
		bool missing = false;
		for (size_t i = 0; i < d.n; i++)
			missing |= strstr(d.v[i].msg, "No such file") != NULL;
		diag_print(&d, stdout);
		diag_clear(&d);
		if (missing) {
			printf("bench_sim_speed: SKIP: trace or scenario file absent\n");
			return 0;
		}
		printf("bench_sim_speed: run failed: %s\n", strerror(-rc));
		return 1;
	}
	diag_clear(&d);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("bench_sim_speed: %s with %s: %.0f s simulated in %.3f s wall = %.0fx real time "
	       "(target >= 10000x); %llu control periods; peak RSS %.1f MiB; %.4f tokens/J\n",
	       r.scenario, r.policy, r.sim_s, wall, wall > 0 ? r.sim_s / wall : 0,
	       (unsigned long long)r.periods, ru.ru_maxrss / 1024.0, r.tokens_per_joule);
	return 0;
}
