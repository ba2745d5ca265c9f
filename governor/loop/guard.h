/* Guard: the envelope every controller output passes through. Clamps to the
 * device limits and the policy's frequency range and power cap, limits the
 * clock step per period, and replaces the output with the policy's safe
 * operating point while critical telemetry is faulted (and for
 * safe_point.hold_periods clean periods after). Pure. */
#ifndef GOVD_GOVERNOR_GUARD_H
#define GOVD_GOVERNOR_GUARD_H
#include <stdbool.h>

#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "hal/hal.h"

/* State of the policy's average-power budget (power.budget_w). */
struct guard_budget {
	bool have;
	double mean_w; /* EWMA of the counted rails over budget_window_s */
};

struct guard {
	const struct policy *pol;
	struct hal_limits lim;
	uint32_t fmin_khz, fmax_khz; /* device range intersected with the policy's */
	uint32_t step_khz;           /* 0: unlimited */
	uint32_t cap_mw;             /* policy cap within device limits */
	uint32_t safe_hold_left;
	bool in_safe;
	bool outside_envelope;       /* guard_set_envelope */
	bool budget_on;              /* an external power budget is in force */
	uint32_t budget_mw;          /* that budget (node share); 0 is a budget of 0 */
	struct guard_budget pbudget;
	bool policy_budget_on;       /* power.budget_w set: policy_budget_mw caps the limit */
	uint32_t policy_budget_mw;   /* its accelerator allowance now */
};

int guard_init(struct guard *g, const struct policy *pol, const struct hal_limits *lim);
void guard_fini(struct guard *g);
/* want: controller output; cur: in force. critical_fault: this period's
 * validator verdict. Writes the op point to apply; ORs reasons; sets binding
 * when the guard (not the controller) decided. */
void guard_apply(struct guard *g, const struct gov_opoint *cur, const struct gov_opoint *want,
		 bool critical_fault, struct gov_opoint *out, uint32_t *reasons,
		 enum gov_binding *binding);
/* The policy's safe operating point for this device. */
void guard_safe_point(const struct guard *g, size_t n_slices, struct gov_opoint *out);
/* Outside the policy's envelope: guard_apply returns the safe point (reason
 * envelope) until cleared. A critical fault still wins (safe_point). */
void guard_set_envelope(struct guard *g, bool outside);
/* An external power cap on top of the policy's; never below the device's
 * minimum limit (0 is a cap at the minimum, never "no cap"). Applies to the
 * safe point too. guard_clear_budget removes it. */
void guard_set_budget_mw(struct guard *g, uint32_t budget_mw);
void guard_clear_budget(struct guard *g);
/* Accelerator power allowed by an average-power budget (W; INFINITY when
 * budget_w is 0). Pure but for b. */
double guard_budget_allowance_w(struct guard_budget *b, const double power_w[HAL_RAIL_N],
				uint32_t rails, double budget_w, double window_s, double period_s);
/* One period of the policy's power.budget_w, from the filtered rails: sets
 * the allowance guard_cap_mw() applies. */
void guard_policy_budget(struct guard *g, const double power_w[HAL_RAIL_N], double period_s);
/* The power cap in force: policy cap, device limits and budget. */
uint32_t guard_cap_mw(const struct guard *g);
/* Emergency (e.g. a GPIO thermal alert): the safe point now, held for
 * safe_point.hold_periods periods as after a critical fault. */
void guard_emergency(struct guard *g, size_t n_slices, struct gov_opoint *out, uint32_t *reasons,
		     enum gov_binding *binding);

#endif
