/* Controllers: pure decision functions named by the policy, in a static
 * registry (like the kernel's thermal governors). A step gets the estimates,
 * the policy, the device limits and the operating point in force, and
 * returns the operating point it wants plus reason codes. No I/O in a step;
 * state lives in what init allocated. The guard clamps afterwards. */
#ifndef GOVD_GOVERNOR_CONTROLLER_H
#define GOVD_GOVERNOR_CONTROLLER_H
#include <stddef.h>

#include "common/diag.h"
#include "governor/estimate.h"
#include "governor/opoint.h"
#include "governor/policy.h"
#include "hal/hal.h"

/* A numeric parameter a controller accepts under control.params. def is the
 * one place its default lives (NaN: none; the controller derives one). */
struct ctl_param {
	const char *name;
	double min, max, def;
	const char *doc;
};

struct ctl_input {
	const struct gov_estimates *est;
	const struct policy *pol;
	const struct hal_limits *lim;
	const struct gov_opoint *cur; /* in force now */
	double period_s;
	size_t n_slices;
	const double *policy_int8;    /* per device slice, resolved from the policy */
	const double *max_drop;       /* per device slice */
};

struct ctl_output {
	struct gov_opoint op;
	uint32_t reasons;
	enum gov_binding binding;
};

struct controller_ops {
	const char *name;
	const char *description;
	const struct ctl_param *params; /* terminated by a NULL name; may be NULL */
	int (*init)(void **state, const struct policy *pol, const struct hal_limits *lim);
	void (*step)(void *state, const struct ctl_input *in, struct ctl_output *out);
	void (*fini)(void *state);
};

/* Registry. Unknown name: NULL and, if diags, an error listing the valid
 * names (file/line/col/path give its place). */
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

/* The registered controllers (one file each). */
extern const struct controller_ops ctl_firmware_default;
extern const struct controller_ops ctl_static;
extern const struct controller_ops ctl_naive_int8;
extern const struct controller_ops ctl_ondemand;
extern const struct controller_ops ctl_ipa;

/* Exposed for tests: the pure maths of the two feedback baselines. */
struct ondemand_state {
	double upthreshold, downdifferential; /* percent */
};
/* devfreq simple_ondemand: next frequency in kHz (before snapping). */
uint32_t ondemand_target_khz(double util_pct, uint32_t cur_khz, uint32_t max_khz,
			     double upthreshold, double downdifferential, uint32_t *reason);

struct ipa_state {
	double sustainable_power_w, control_temp_c, switch_on_c; /* switch_on_c < 0: none */
	double k_po, k_pu, k_i, k_d, integral_cutoff_c;
	double err_integral_c, prev_err_c;
	double max_power_w;
	bool passive;
};
void ipa_setup(struct ipa_state *s, double sustainable_power_w, double control_temp_c,
	       double switch_on_c, double max_power_w);
/* One throttle() call: granted power (W), or max power below switch-on. */
double ipa_throttle(struct ipa_state *s, double temp_c, double period_ms, uint32_t *reason);

#endif
