/* The oracle: with perfect knowledge of the workload, the best static
 * operating point per SLA window that meets the policy's SLA, its thermal
 * soft ceiling (no hardware clamp) and its quality thresholds (true INT8
 * drop). An estimate of the achievable tokens per joule, the limit a
 * governor is compared with. Method, why it is an upper bound and what it
 * ignores: docs/oracle.md.
 *
 * Every candidate point runs the whole scenario once (sim_run with a forced
 * operating point, in forked workers); each window then takes the feasible
 * candidate with the most tokens per joule. The selection and the grid are
 * pure functions (unit tested); oracle_run does the runs. */
#ifndef GOVD_GOVERNOR_ORACLE_H
#define GOVD_GOVERNOR_ORACLE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "governor/sim/sim.h"
#include "hal/hal.h"
#include "plant_models/scenario.h"

#define ORACLE_MAX_CANDIDATES 128
#define ORACLE_MAX_INT8_SETS 4
#define ORACLE_DEFAULT_CLK_STEP_MHZ 120.0
#define ORACLE_DEFAULT_POWER_LEVELS 4

struct oracle_opts {
	const char *scenario_path;
	const char *policy_path;
	uint64_t seed;
	bool have_seed;        /* false: the scenario's seed */
	double duration_s;     /* > 0: overrides the scenario's duration */
	unsigned jobs;         /* worker processes; <= 1: runs in this process */
	double clk_step_mhz;   /* grid spacing of locked clocks; 0: the default */
	unsigned power_levels; /* power limits below the max tried with clocks unlocked;
				* 0: the default; ORACLE_NO_POWER_LEVELS: none */
	bool bf16_only;        /* no INT8 candidates: the DVFS-only limit */
};
#define ORACLE_NO_POWER_LEVELS 0xffffffffu

/* One static operating point tried over the whole scenario. */
struct oracle_cand {
	char name[80];         /* "clk1410-bf16", "pl450-i8:code+chat", "max-bf16" */
	struct gov_opoint op;
	double clk_max_mhz;    /* locked clock ceiling; 0: unlocked (firmware boost) */
	double power_limit_w;
	uint32_t int8_slices;  /* bit s: scenario slice s served in INT8 */
	uint32_t fp8_slices;   /* ... in FP8 (a ladder policy on an FP8 engine) */
	/* Whole run, filled by oracle_run. */
	uint64_t tokens;
	double energy_j;       /* objective.power_rails */
	double energy_all_j;   /* accel + memory + host */
	bool failed;           /* thermal shutdown, or the run did not complete */
	size_t windows_feasible;
	size_t chosen;         /* windows the oracle picked it for */
};

/* One window of one candidate's run. */
struct oracle_cell {
	bool present;          /* false: the run ended before this window */
	struct sim_window w;
};

/* The oracle's choice for one window. */
struct oracle_pick {
	size_t cand;           /* index into the candidates */
	bool feasible;         /* every constraint met */
	bool relaxed;          /* no point met the SLA: the safe point closest to it */
	/* neither: no point was safe either; cand is the fallback */
	double start_s, end_s;
	bool tail, idle;
	uint64_t tokens;
	double energy_j, energy_all_j;
	bool sla_met;
	uint64_t clamp_events, breach_requests;
};

struct oracle_result {
	char scenario[64], policy[64], policy_hash[32];
	uint64_t seed;
	double window_s, duration_s;
	double ceiling_c;         /* the policy's thermal ceiling, which every feasible window keeps */
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	size_t n_cand;
	struct oracle_cand *cand;
	size_t n_windows;
	struct oracle_pick *pick;
	size_t fallback;          /* candidate taken where none is safe */
	size_t windows_feasible;  /* windows with at least one feasible candidate */
	size_t windows_relaxed;   /* none feasible, one safe (SLA relaxed) */
	size_t windows_fallback;  /* none safe */
	size_t windows_judged;    /* not idle */
	uint64_t tokens;
	double energy_j, energy_all_j;
	double tokens_per_joule;           /* objective.power_rails */
	double tokens_per_joule_all_rails; /* comparable with summary.json tokens_per_joule */
	uint64_t clamp_events, breach_requests;
	uint64_t demand_tokens;   /* tokens of the fallback's whole run: what the workload asked */
	/* The honest limit (docs/oracle.md): feasible windows only, not the tail. */
	uint64_t feasible_tokens;
	double feasible_energy_j, feasible_energy_all_j;
	double tokens_per_joule_feasible;           /* objective.power_rails */
	double tokens_per_joule_feasible_all_rails; /* what every % of oracle divides by */
	size_t best_static;       /* feasible in the most windows (ties: more tokens/J) */
};

/* Pure: the candidate grid for a policy on a device and scenario. Clock
 * locks every ~clk_step_mhz over the policy's and the device's common range,
 * power limits with clocks unlocked, each x BF16 and every distinct set of
 * slices whose true INT8 drop is within the policy's threshold at some time
 * of the scenario (quality drift events change it). The last BF16 point at
 * the highest power limit with clocks unlocked is the fallback (*fallback).
 * bf16_only: BF16 points only (the DVFS-only limit).
 * 0, or -E2BIG when max is too small. */
int oracle_grid(const struct policy *pol, const struct hal_limits *lim, const struct scenario *sc,
		double clk_step_mhz, unsigned power_levels, bool bf16_only, struct oracle_cand *out,
		size_t max, size_t *n, size_t *fallback);
/* Pure: whether one window of a run of a point serving int8_slices in INT8
 * and fp8_slices in FP8 is safe: junction never above the ceiling, no
 * hardware clamp, no shutdown, no 8-bit share on a slice whose true drop in
 * that mode was over its threshold in the window (served or not). Feasible:
 * safe and the SLA met. */
bool oracle_window_safe(const struct sim_window *w, const struct policy *pol, uint32_t int8_slices,
			uint32_t fp8_slices);
bool oracle_window_feasible(const struct sim_window *w, const struct policy *pol,
			    uint32_t int8_slices, uint32_t fp8_slices);
/* Pure: energy of a window over the policy's objective rails. */
double oracle_window_energy(const struct sim_window *w, uint32_t rails);
/* Pure: per window the feasible candidate with the most tokens per joule
 * (no tokens: least energy; ties: lower index); where none is feasible, the
 * safe one closest to the SLA (least sla_ratio; ties: more tokens per
 * joule); where none is safe either, the fallback.
 * cells[c * n_windows + w]. Fills pick[n_windows], the candidates'
 * windows_feasible and chosen, and the result totals. */
void oracle_select(const struct oracle_cell *cells, const struct policy *pol,
		   struct oracle_result *r);

/* Runs every candidate (o->jobs processes) and selects. 0; -EINVAL with
 * diags for bad input; other -errno. */
int oracle_run(const struct oracle_opts *o, struct oracle_result *res, struct diag_list *diags);
void oracle_result_free(struct oracle_result *r);
/* oracle.json (docs/oracle.md). NULL on allocation failure. */
json_t *oracle_json(const struct oracle_result *r);

#endif
