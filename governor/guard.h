/* Guard: the envelope every controller output passes through. Clamps to the
 * device limits and the policy's frequency range and power cap, limits the
 * clock step per period, and replaces the output with the policy's safe
 * operating point while critical telemetry is faulted (and for
 * safe_point.hold_periods clean periods after). Pure. */
#ifndef GOVD_GOVERNOR_GUARD_H
#define GOVD_GOVERNOR_GUARD_H
#include <stdbool.h>

#include "governor/opoint.h"
#include "governor/policy.h"
#include "hal/hal.h"

struct guard {
	const struct policy *pol;
	struct hal_limits lim;
	uint32_t fmin_khz, fmax_khz; /* device range intersected with the policy's */
	uint32_t step_khz;           /* 0: unlimited */
	uint32_t cap_mw;             /* policy cap within device limits */
	uint32_t safe_hold_left;
	bool in_safe;
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

#endif
