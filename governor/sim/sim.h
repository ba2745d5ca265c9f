/* One simulated run: scenario + policy + seed through the sim HAL and the
 * same governor loop govd runs, in virtual time. Writes summary.json,
 * timeseries.csv and decisions.jsonl (docs/summary.md). Deterministic:
 * same inputs, byte-identical outputs. Used by govctl sim / compare and the
 * benchmarks. */
#ifndef GOVD_GOVERNOR_SIM_H
#define GOVD_GOVERNOR_SIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"

/* One SLA window as the sim judged it, from the plant's ground truth (the
 * oracle reads these; docs/oracle.md). */
struct sim_window {
	uint32_t index;
	double start_s, end_s;
	bool tail;             /* the run's end after the last window the summary judges
				* (up to window_s long): not in its attainment */
	bool idle;             /* nothing completed and nothing waiting */
	bool sla_met;          /* every policy target met (true when idle) */
	double sla_ratio;      /* worst quantile / target over the policy's targets (<= 1: met;
				* 0 when idle, +inf when requests waited and none completed) */
	uint64_t tokens;
	double energy_j[HAL_RAIL_N]; /* true energy per rail */
	double max_junction_c;       /* true, sampled every control period */
	uint64_t clamp_events;       /* hardware slowdown entries */
	double clamp_time_s;
	uint64_t breach_requests;    /* INT8 completions on a slice over its threshold */
	uint32_t over_threshold;     /* bit per slice: true INT8 drop above the policy's
				      * max_drop at some control period of the window */
	uint32_t over_threshold_fp8; /* the same for the true FP8 drop (an FP8 engine) */
	bool failed;                 /* the plant shut down in this window */
	/* The window's own quantile per SLA row (common/sla.h) (ms, from the
	 * ground-truth histograms; NaN when nothing completed). */
	double quantile_ms[SLA_N_ROWS];
};
typedef void (*sim_window_cb)(void *ctx, const struct sim_window *w);

struct sim_opts {
	const char *scenario_path;
	const char *policy_path;
	uint64_t seed;
	bool have_seed;     /* false: the scenario's seed */
	double duration_s;  /* > 0: overrides the scenario's duration */
	const char *out_dir;/* NULL: out/sim/<scenario>-<policy>-<seed> */
	bool no_output;     /* write nothing (benchmarks) */
	/* Optional hooks (NULL/false: off). */
	const struct policy *policy;       /* used instead of loading policy_path (not owned) */
	const struct gov_opoint *force_op; /* no governor: this point is applied at t = 0 and
					    * held for the whole run (oracle candidates); no
					    * decision log */
	sim_window_cb on_window;           /* every SLA window, then the tail */
	void *window_ctx;
	/* Recorded as summary.json's and the decision-log header's `command`;
	 * NULL: sim_command()'s canonical one (what govctl sim and compare use). */
	const char *command;
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
	/* Whole run, from the plant's ground truth (as summary.json's sla). */
	double quantile_ms[SLA_N_ROWS]; /* NaN when nothing completed */
	uint64_t windows, windows_met;  /* judged SLA windows (not idle, not tail) */
};

/* The device's limits as the sim backend reports them for this scenario
 * (clock table, power-limit range): 0 or a negative errno with diags. */
struct scenario;
struct hal_limits;
int sim_device_limits(const struct scenario *sc, uint64_t seed, struct hal_limits *lim,
		      struct diag_list *diags);
/* 0; -EINVAL with diags for bad input files; other -errno for I/O. */
int sim_run(const struct sim_opts *o, struct sim_result *res, struct diag_list *diags);
/* The govctl sim command that reproduces a run of o with seed: `govctl sim
 * --scenario S --policy P --seed N [--duration D]`, paths as given, words
 * shell-quoted, no --out (the same run into another directory gives the same
 * bytes). policy_path: o's, or the path of o->policy. 0, or -ENAMETOOLONG. */
int sim_command(const struct sim_opts *o, const char *policy_path, uint64_t seed, char *buf,
		size_t len);
/* Appends ' ' and s quoted for a POSIX shell (bare when only safe characters)
 * to buf; 0, or -ENAMETOOLONG (buf then holds a truncated string). */
int sim_shell_append(char *buf, size_t len, const char *s);

#endif
