/* Rollback manager: the policy's `rollback` section (docs/rollback.md).
 * Every change of the operating point in force toward less energy or a
 * different precision mix starts (or restarts) a canary window; while it
 * runs the enabled triggers are armed. A trigger reverts to the last known
 * good point (LKG), holds it with exponential back-off, then lets the
 * controller resume. Pure: estimates and counters in, an op point override
 * and reason codes out; time is the caller's. */
#ifndef GOVD_GOVERNOR_ROLLBACK_H
#define GOVD_GOVERNOR_ROLLBACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "governor/telemetry/estimate.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "hal/hal.h"

/* A clock cap or power limit must fall by more than this share of the
 * reference before the move counts as a change (docs/rollback.md). */
#define RB_CHANGE_TOL 0.05
/* policy.rollback.triggers.sla_of_windows is at most this (policy.md). */
#define RB_MAX_WINDOWS 1000

enum rb_state { RB_NORMAL, RB_CANARY, RB_HOLD, RB_N };

struct rb_cfg {
	const struct policy *pol;        /* rollback.*, sla targets and window; outlives the manager */
	const struct hal_limits *lim;    /* unlocked clocks count as clk_default_max_khz */
	struct gov_opoint fallback;      /* before any LKG (lkg_fallback resolved by the caller) */
	struct gov_opoint safe;          /* the policy's safe point: a thermal rollback's ceiling */
	size_t n_slices;
	double max_drop[HAL_MAX_SLICES];     /* per device slice */
	uint32_t min_samples[HAL_MAX_SLICES]; /* shadow samples before a drop bound is evidence */
};

struct rb_input {
	uint64_t t_ms;
	const struct gov_estimates *est;
	const struct gov_opoint *cur; /* in force now: what the last period applied */
	/* The last period's point was forced by safety (guard safe point,
	 * envelope, emergency): not a controller change, never canaried. */
	bool safety;
	uint64_t clamp_events;        /* cumulative hardware slowdown entries (hal_sample) */
	uint64_t fault_onsets;        /* cumulative validator fault onsets */
};

struct rollback {
	struct rb_cfg cfg;
	uint32_t enabled;             /* GOV_T_* the policy turns on; 0: manager inert */
	enum rb_state state;
	bool started;
	uint64_t window_ms, canary_ms;
	struct gov_opoint ref;        /* last accepted point; changes are measured against it */
	struct gov_opoint lkg;
	bool have_lkg;
	struct gov_opoint win_first;   /* in force when the current SLA window began */
	struct gov_opoint held;        /* what a hold applies */
	uint64_t canary_end_ms, hold_end_ms;
	uint64_t canary_clamp0, canary_faults0;
	uint64_t prev_clamp, prev_faults;
	/* SLA windows: fixed cadence from the first step. */
	uint64_t win_start_ms;
	bool win_trigger;              /* a trigger fired during this window */
	struct sla_window_load win_load; /* waiting, and at the max cap or a thermal cut */
	bool prev_heat;                /* the last period's point was the controller's thermal cut */
	uint32_t clean_windows;        /* consecutive clean judged windows */
	size_t canary_n;               /* windows judged during this canary (ring below) */
	bool canary_miss[RB_MAX_WINDOWS];
	/* Every judged window (ring of the last M): the SLA record before a
	 * change, so that only a regression is blamed on it. */
	size_t hist_n;
	bool hist_miss[RB_MAX_WINDOWS];
	uint32_t pre_misses;           /* misses in the M windows before this canary */
	uint32_t consecutive;          /* k: rollbacks without a clean recovery */
	/* This period's verdict, for the log. */
	uint32_t armed, fired;
	/* Counters. */
	uint64_t rollbacks, rollbacks_by[GOV_T_COUNT], recoveries, canaries;
	uint64_t windows_judged, windows_missed, windows_overload; /* overload: missed, not blamed */
};

int rollback_init(struct rollback *rb, const struct rb_cfg *cfg);
void rollback_fini(struct rollback *rb);
/* One period, after the controller's step and before the guard. want: the
 * controller's op point, replaced while a hold runs. ORs reason codes, sets
 * binding to GOV_B_ROLLBACK while holding. Returns true when want was
 * replaced. */
bool rollback_step(struct rollback *rb, const struct rb_input *in, struct gov_opoint *want,
		   uint32_t *reasons, enum gov_binding *binding);
/* The estimator's SLA window was not missed (sla_judge(): met, or idle).
 * Pure; exposed for tests. */
bool rollback_sla_met(const struct policy *pol, const struct gov_estimates *est);
/* hold_s * backoff_factor^(k-1), capped at max_hold_s; k >= 1. */
double rollback_hold_s(const struct policy_rollback *r, uint32_t k);
/* Seconds left in the hold (0 unless holding). */
double rollback_hold_left_s(const struct rollback *rb, uint64_t t_ms);
const char *rollback_state_name(enum rb_state s);

#endif
