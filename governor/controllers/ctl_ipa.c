/* ipa: the Linux thermal power_allocator governor
 * (drivers/thermal/gov_power_allocator.c): a PID on the junction temperature
 * towards the control temperature, feed-forward of the sustainable power,
 * the granted power becomes the device power limit (the firmware's power
 * loop plays power2state). BF16. Floating point replaces the kernel's
 * 10-bit fixed point; units W and C (the kernel's mW/mC ratios are equal).
 * Function by function in docs/baselines.md. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "governor/controllers/ctl_internal.h"

/* estimate_pid_constants(): k_po = P / dT, k_pu = 2P / dT, k_i = k_pu / 10,
 * k_d = 0, integral_cutoff = 0, dT = control - switch-on (or control alone
 * without a switch-on trip). dT == 0: the kernel gives up (gains stay 0). */
void ipa_setup(struct ipa_state *s, double sustainable_power_w, double control_temp_c,
	       double switch_on_c, double max_power_w)
{
	memset(s, 0, sizeof(*s));
	s->sustainable_power_w = sustainable_power_w;
	s->control_temp_c = control_temp_c;
	s->switch_on_c = switch_on_c;
	s->max_power_w = max_power_w;
	double dt = control_temp_c - (switch_on_c >= 0 ? switch_on_c : 0);
	if (dt > 0) {
		s->k_po = sustainable_power_w / dt;
		s->k_pu = 2 * sustainable_power_w / dt;
		s->k_i = s->k_pu / 10;
	}
}

static void reset_pid_controller(struct ipa_state *s)
{
	s->err_integral_c = 0;
	s->prev_err_c = 0;
}

/* power_allocator_throttle() + pid_controller(). */
double ipa_throttle(struct ipa_state *s, double temp_c, double period_ms, uint32_t *reason)
{
	if (s->switch_on_c >= 0 && temp_c < s->switch_on_c) {
		s->passive = false;
		reset_pid_controller(s);
		*reason = GOV_R_IPA_IDLE;
		return s->max_power_w; /* allow_maximum_power() */
	}
	s->passive = true;
	*reason = GOV_R_IPA_PID;

	double err = s->control_temp_c - temp_c;
	double p = (err < 0 ? s->k_po : s->k_pu) * err;
	double i = s->k_i * s->err_integral_c;

	/* Integrate only below the cutoff, and only while the integral term
	 * stays within max power (the kernel's anti-windup). */
	if (err < s->integral_cutoff_c) {
		double i_next = i + s->k_i * err;
		if (fabs(i_next) < s->max_power_w) {
			i = i_next;
			s->err_integral_c += err;
		}
	}
	double d = period_ms > 0 ? s->k_d * (err - s->prev_err_c) / period_ms : 0;
	s->prev_err_c = err;

	double power = s->sustainable_power_w + p + i + d;
	if (power < 0)
		power = 0;
	if (power > s->max_power_w)
		power = s->max_power_w;
	return power;
}

static const struct ctl_param ipa_params[] = {
	{ "sustainable_power_w", 0, 5000, NAN,
	  "power dissipatable at the control temperature; absent: device minimum limit" },
	{ "switch_on_c", -1, 150, -1, "PID starts above this junction temperature; -1: no switch-on trip" },
	{ "control_temp_c", 0, 150, NAN, "target junction temperature; absent: thermal.ceiling_c" },
	{ "k_po", 0, 1e6, NAN, "W/C when above the control temp; absent: kernel estimate" },
	{ "k_pu", 0, 1e6, NAN, "W/C when below; absent: kernel estimate" },
	{ "k_i", 0, 1e6, NAN, "W/(C period); absent: k_pu / 10" },
	{ "k_d", 0, 1e6, 0, "W ms/C" },
	{ "integral_cutoff_c", -150, 150, 0, "integrate only while error < cutoff" },
	{ NULL, 0, 0, 0, NULL },
};

static int ipa_init(void **state, const struct policy *pol, const struct hal_limits *lim)
{
	struct ipa_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	double sus = ctl_param_value(pol, &ctl_ipa, "sustainable_power_w");
	if (isnan(sus))
		sus = lim->power_limit_min_mw / 1000.0; /* estimate_sustainable_power() analogue */
	double ctl = ctl_param_value(pol, &ctl_ipa, "control_temp_c");
	if (isnan(ctl))
		ctl = pol->thermal.ceiling_c;
	ipa_setup(s, sus, ctl, ctl_param_value(pol, &ctl_ipa, "switch_on_c"),
		  lim->power_limit_max_mw / 1000.0);
	double v;
	if (!isnan(v = ctl_param_value(pol, &ctl_ipa, "k_po")))
		s->k_po = v;
	if (!isnan(v = ctl_param_value(pol, &ctl_ipa, "k_pu")))
		s->k_pu = v;
	if (!isnan(v = ctl_param_value(pol, &ctl_ipa, "k_i")))
		s->k_i = v;
	s->k_d = ctl_param_value(pol, &ctl_ipa, "k_d");
	s->integral_cutoff_c = ctl_param_value(pol, &ctl_ipa, "integral_cutoff_c");
	*state = s;
	return 0;
}

static void ipa_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	struct ipa_state *s = state;
	double tj = in->est->temp_c[HAL_TEMP_JUNCTION];
	uint32_t reason = 0;

	ctl_default_op(in, &out->op);
	if (isnan(tj)) {
		/* No temperature yet: nothing to control (the guard handles faults). */
		out->op.power_limit_mw = gov_w_to_mw(s->max_power_w);
		out->reasons = GOV_R_IPA_IDLE;
		out->binding = GOV_B_NONE;
		return;
	}
	double granted = ipa_throttle(s, tj, in->period_s * 1000.0, &reason);
	out->op.power_limit_mw = gov_w_to_mw(granted);
	out->reasons = reason;
	out->binding = reason == GOV_R_IPA_PID && granted < s->max_power_w ? GOV_B_THERMAL : GOV_B_NONE;
}

static void ipa_fini(void *state)
{
	free(state);
}

const struct controller_ops ctl_ipa = {
	.name = "ipa",
	.description = "Linux thermal power_allocator: PID on junction temperature -> power limit, BF16",
	.params = ipa_params,
	.init = ipa_init,
	.step = ipa_step,
	.fini = ipa_fini,
};
