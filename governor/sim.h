/* One simulated run: scenario + policy + seed through the sim HAL and the
 * same governor loop govd runs, in virtual time. Writes summary.json,
 * timeseries.csv and decisions.jsonl (docs/summary.md). Deterministic:
 * same inputs, byte-identical outputs. Used by govctl sim / compare and the
 * benchmarks. */
#ifndef GOVD_GOVERNOR_SIM_H
#define GOVD_GOVERNOR_SIM_H
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"

struct sim_opts {
	const char *scenario_path;
	const char *policy_path;
	uint64_t seed;
	bool have_seed;     /* false: the scenario's seed */
	double duration_s;  /* > 0: overrides the scenario's duration */
	const char *out_dir;/* NULL: out/sim/<scenario>-<policy>-<seed> */
	bool no_output;     /* write nothing (benchmarks) */
};

struct sim_result {
	char out_dir[4096];
	char scenario[64], policy[64];
	uint64_t seed;
	double sim_s;       /* simulated seconds run */
	uint64_t periods;
	uint64_t tokens_generated;
	double tokens_per_joule;
	bool failed;
};

/* 0; -EINVAL with diags for bad input files; other -errno for I/O. */
int sim_run(const struct sim_opts *o, struct sim_result *res, struct diag_list *diags);
/* mkdir -p; 0 or -errno. */
int sim_mkdirs(const char *path);

#endif
