/* The honest limit (docs/oracle.md, "Equal-SLA comparison"): a policy run
 * and the oracle compared over the same windows at the same SLA. Windows
 * where no operating point meets every constraint (the oracle found none
 * feasible) are infeasible and left out; in the feasible windows a policy
 * window that misses the SLA, clamps, runs the junction over the oracle
 * policy's thermal ceiling (the rule the oracle's own points obey) or
 * serves a quality-breach request counts its energy with zero tokens.
 *
 * Owns windows.csv, the per-window record of a governed run that govctl
 * compare writes next to summary.json (writer and reader here). The
 * accounting is pure. */
#ifndef GOVD_GOVERNOR_HONEST_H
#define GOVD_GOVERNOR_HONEST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "governor/sim/oracle.h"
#include "governor/sim/sim.h"

struct honest_window {
	uint32_t index;
	bool tail, idle, sla_met;
	uint64_t tokens;
	double energy_all_j;     /* accel + memory + host */
	uint64_t clamp_events;
	uint64_t breach_requests;
	bool failed;
	double max_junction_c;   /* true junction, hottest period; NAN: not recorded */
};

/* From the sim's window (ground truth). */
void honest_from_sim(const struct sim_window *w, struct honest_window *out);
/* A window that earns its tokens: SLA met, no clamp, the junction never
 * over ceiling_c (an unrecorded one is not judged), no breach, no shutdown:
 * the oracle's oracle_window_safe() and the SLA, for a policy's run. */
bool honest_window_good(const struct honest_window *w, double ceiling_c);

/* windows.csv: a header line, then one row per window. 0 or -errno. */
int honest_windows_write(FILE *f, const struct honest_window *w, size_t n);
/* 0; -EINVAL with a diag naming path:line for a malformed file; -errno. */
int honest_windows_load(const char *path, struct honest_window **out, size_t *n,
			struct diag_list *diags);

struct honest_totals {
	size_t windows;            /* judged: not the tail */
	size_t feasible;           /* of those, the oracle found a feasible point */
	size_t infeasible;
	size_t feasible_busy;      /* feasible and not idle (the attainment's denominator) */
	size_t feasible_met;       /* ... where the policy met the SLA */
	size_t missed_tokens_windows; /* feasible windows whose tokens the policy lost */
	size_t over_ceiling;       /* ... of them, met but over the thermal ceiling */
	uint64_t oracle_tokens, policy_tokens;
	double oracle_energy_j, policy_energy_j; /* all rails, feasible windows */
};

/* Adds one run (one scenario and seed): the oracle's picks and the policy's
 * windows, matched by index, judged against the oracle policy's thermal
 * ceiling_c. A policy window missing (the run ended early) counts no tokens
 * and no energy. */
void honest_add(struct honest_totals *t, const struct oracle_pick *pick, size_t n_pick,
		const struct honest_window *w, size_t n_w, double ceiling_c);
/* Tokens per joule of the policy / the oracle's over the feasible windows, in
 * percent; NAN with no feasible energy. */
double honest_pct(const struct honest_totals *t);
/* The policy's SLA attainment over the feasible, busy windows; NAN with none. */
double honest_attainment(const struct honest_totals *t);
double honest_oracle_tpj(const struct honest_totals *t);
double honest_policy_tpj(const struct honest_totals *t);

#endif
