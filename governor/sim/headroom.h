/* How much room a scenario leaves a DVFS governor (docs/scenarios.md,
 * "Headroom"): its TTFT and TBT p99 at the maximum clock (BF16, clocks
 * locked at the top, no governor) as a share of the policy's SLA targets, and
 * the lowest locked clock at which the SLA is met in the policy's attainment
 * share of the judged windows (0.99 in the shipped policies). Each point runs
 * the whole scenario once (sim_run with a forced operating point); the
 * lowest clock is found by bisection over the clock table, assuming the
 * attainment does not fall as the clock rises. Simulated figures. */
#ifndef GOVD_GOVERNOR_HEADROOM_H
#define GOVD_GOVERNOR_HEADROOM_H
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"

struct headroom_opts {
	const char *scenario_path;
	const char *policy_path; /* the SLA targets and attainment goal */
	uint64_t seed;
	bool have_seed;          /* false: the scenario's seed */
	double duration_s;       /* > 0: overrides the scenario's duration */
};

struct headroom {
	char scenario[64];
	uint64_t seed;
	uint32_t max_mhz, min_mhz;     /* the device's clock table */
	double ttft_p99_ms, tbt_p99_ms; /* whole run at the max clock (NaN: none completed) */
	double ttft_target_ms, tbt_target_ms; /* the policy's p99 targets (0: none) */
	double ttft_share, tbt_share;  /* p99 / target (NaN: no target) */
	uint64_t windows;              /* judged windows at the max clock */
	double attainment_max;         /* their share meeting the SLA there */
	double goal;                   /* the policy's attainment goal */
	uint32_t lowest_mhz;           /* lowest locked clock meeting the goal; 0: not even max */
	unsigned runs;                 /* scenario runs it took */
};

/* 0, or a negative errno with diags (bad scenario or policy, a failed run). */
int headroom_measure(const struct headroom_opts *o, struct headroom *out,
		     struct diag_list *diags);

#endif
