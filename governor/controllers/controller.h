/* Controllers: pure decision functions named by the policy, in a static
 * registry (like the kernel's thermal governors). A step gets the estimates,
 * the policy, the device limits and the operating point in force, and
 * returns the operating point it wants plus reason codes. No I/O in a step;
 * state lives in what init allocated. The loop then hands the point to the
 * rollback manager and the guard (governor/loop/governor.c). */
#ifndef GOVD_GOVERNOR_CONTROLLER_H
#define GOVD_GOVERNOR_CONTROLLER_H
#include <stddef.h>

#include "common/diag.h"
#include "governor/telemetry/estimate.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "hal/hal.h"

struct ctl_input {
	const struct gov_estimates *est;
	const struct policy *pol;
	const struct hal_limits *lim;
	const struct gov_opoint *cur; /* in force now */
	double period_s;
	const struct policy_slices *slices; /* the device's, with their rules; never NULL */
};

struct ctl_output {
	struct gov_opoint op;
	uint32_t reasons;
	enum gov_binding binding;
	struct gov_why why; /* why the clock; zeroed (not valid) by the loop */
	/* Why each op.shadow_rate was asked; budget: the asks were scaled
	 * down to quality.shadow_budget. */
	enum gov_evidence evidence[HAL_MAX_SLICES];
	bool evidence_budget;
	/* Bit per slice: its first rung is open on the unconfirmed prior
	 * because the device is thermally bound (govd's heat_prior). */
	uint32_t heat_prior;
	/* Bit per slice: its rung is open but held in BF16 until every
	 * slice's is (govd's low_all_or_none). */
	uint32_t mix_held;
	/* Per slice, where the expected-value gate (govd's int8_max_detect_s)
	 * keeps a rung shut whose quality gate is open: the seconds the
	 * detectors would need to catch a drift to 3 x max_drop at the slice's
	 * shadow-sample rate (INFINITY: no samples yet); 0: not held. */
	double detect_held_s[HAL_MAX_SLICES];
};

struct controller_ops {
	const char *name;
	const char *description;
	const struct ctl_param *params; /* terminated by a NULL name; may be NULL */
	int (*init)(void **state, const struct policy *pol, const struct hal_limits *lim);
	void (*step)(void *state, const struct ctl_input *in, struct ctl_output *out);
	void (*fini)(void *state);
	/* Optional (NULL: none): rules between parameters that the table's
	 * ranges cannot say; errors into diags with the policy's
	 * file:line:col. Returns 0 or -EINVAL. */
	int (*check)(const struct policy *pol, struct diag_list *diags);
};

/* A policy parsed (policy_parse) and bound to its controller
 * (policy_bind_controller: the name and control.params against the
 * controller's table): what every caller that loads a policy for use calls.
 * All of a file's problems in diags, in file order. */
int policy_load(const char *path, struct policy **out, struct diag_list *diags);
int policy_load_string(const char *name, const char *text, size_t len, struct policy **out,
		       struct diag_list *diags);

/* Registry (a static table). Unknown name: NULL; the policy binder
 * (policy_load) reports it with the valid names, controller_names_joined. */
const struct controller_ops *controller_find(const char *name);
size_t controller_count(void);
const struct controller_ops *controller_at(size_t i);
/* "a, b, c" */
const char *controller_names_joined(char *buf, size_t len);
const struct ctl_param *controller_param(const struct controller_ops *c, const char *name);
/* The policy's value of c's parameter name, else the table's default. name
 * must be in c's table. */
double ctl_param_value(const struct policy *pol, const struct controller_ops *c, const char *name);

/* Helpers the controllers share. */
void ctl_default_op(const struct ctl_input *in, struct gov_opoint *op);

/* The registered controllers: the three fixed-point baselines in
 * controllers.c, the others in ctl_<name>.c (slo-dvfs, the DVFS-only peer,
 * is govd's latency loop alone, in ctl_govd.c). */
extern const struct controller_ops ctl_firmware_default; /* controllers.c */
extern const struct controller_ops ctl_static;           /* controllers.c */
extern const struct controller_ops ctl_naive_int8;       /* controllers.c */
extern const struct controller_ops ctl_ondemand;         /* ctl_ondemand.c */
extern const struct controller_ops ctl_ipa;              /* ctl_ipa.c */
extern const struct controller_ops ctl_govd;             /* ctl_govd.c */
extern const struct controller_ops ctl_slo_dvfs;         /* ctl_govd.c */

#endif
