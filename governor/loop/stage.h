/* One control period, one record: the stages of the loop (read, validate,
 * estimate, decide, roll back, guard, actuate; ../shared/design.md) fill a
 * struct gov_period in that order, then its observers (the decision log,
 * metrics, the fault log, the sim's accounting) read it. Every stage has
 * one shape: init(state, pol, lim, slices) once per governor, step(state,
 * &period) every period, fini(state). What the policy means for a stage is
 * worked out in its init (stages.c), not by the loop. */
#ifndef GOVD_GOVERNOR_STAGE_H
#define GOVD_GOVERNOR_STAGE_H
#include <stdbool.h>
#include <stdint.h>

#include "governor/controllers/controller.h"
#include "governor/loop/declog.h"
#include "governor/loop/guard.h"
#include "governor/loop/rollback.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "governor/telemetry/estimate.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

/* What the governor has counted, as of the period's end. */
struct gov_counters {
	uint64_t actuate_errors;
	uint64_t oob_changes;   /* power limit set by another writer */
	uint64_t emergencies;
	uint64_t rollbacks, recoveries;
	uint64_t fault_onsets;  /* telemetry none -> fault transitions, all signals */
};

struct gov_period {
	/* read: the readings, and the point in force as the period starts */
	uint64_t t_ms;
	const struct hal_sample *sample;
	const struct hal_serving *serving; /* NULL if not offered or invalid */
	const struct hal_quality *quality; /* likewise */
	struct gov_opoint cur;
	bool cur_safety;          /* cur was forced by safety: not a change to canary */
	bool hold;                /* an operator hold keeps cur */
	/* validate */
	struct gov_reading rd[GOV_SIG_N];
	enum gov_fault faults[GOV_SIG_N];
	unsigned n_faults;
	/* estimate */
	const struct gov_estimates *est;
	/* decide: the controller's ask; rollback and guard then change
	 * want.op, reasons and binding */
	struct ctl_output want;
	uint32_t reasons;
	enum gov_binding binding;
	/* guard: the point to apply, and whether safety forced it */
	struct gov_opoint after;
	bool safety;
	/* actuate: what was in force before; why each shadow rate was asked */
	struct gov_opoint before;
	enum gov_evidence evidence[HAL_MAX_SLICES];
	struct gov_counters counters;
	/* The decision log's record, filled by each stage as it goes (its
	 * pointers point into this period and the stages' state). */
	struct declog_record rec;
};

/* pol, lim and slices outlive the stage; state is the stage's own. */
struct gov_stage_ops {
	const char *name;
	int (*init)(void *state, const struct policy *pol, const struct hal_limits *lim,
		    const struct policy_slices *slices);
	void (*step)(void *state, struct gov_period *p);
	void (*fini)(void *state);
};

/* decide's state: the controller (the policy's, unless set before init:
 * an observe-only device gets firmware-default) and its own state. */
struct gov_decider {
	const struct controller_ops *ctl;
	void *ctl_state;
	const struct policy *pol;
	const struct hal_limits *lim;
	const struct policy_slices *slices;
	double period_s;
};

/* guard's state: the guard and the policy's envelope, judged each period. */
struct gov_guard_stage {
	struct guard guard; /* holds the policy and the limits */
	size_t n_slices;
	bool outside_envelope;
	char envelope_why[512];
};

extern const struct gov_stage_ops gov_stage_validate; /* struct validator */
extern const struct gov_stage_ops gov_stage_estimate; /* struct estimator */
extern const struct gov_stage_ops gov_stage_decide;   /* struct gov_decider */
extern const struct gov_stage_ops gov_stage_rollback; /* struct rollback */
extern const struct gov_stage_ops gov_stage_guard;    /* struct gov_guard_stage */

/* The rollback manager's and the guard's part of a decision record, for a
 * record written outside the period too (governor_emergency). */
void gov_rollback_record(const struct rollback *rb, uint64_t t_ms, struct declog_record *rec);
void gov_guard_record(const struct gov_guard_stage *gs, struct declog_record *rec);

#endif
