/* ondemand: Linux devfreq simple_ondemand on device utilisation, BF16.
 * Follows drivers/devfreq/governor_simpleondemand.c,
 * devfreq_simple_ondemand_func() (DFSO_UPTHRESHOLD 90,
 * DFSO_DOWNDIFFERENCTIAL 5); devfreq then picks the lowest OPP at or above
 * the target (devfreq_recommended_opp). docs/baselines.md has the details. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "governor/controllers/ctl_internal.h"

uint32_t ondemand_target_khz(double util_pct, uint32_t cur_khz, uint32_t max_khz,
			     double upthreshold, double downdifferential, uint32_t *reason)
{
	/* No busy/total statistics: the kernel assumes max. */
	if (!isfinite(util_pct)) {
		*reason = GOV_R_UTIL_UNKNOWN;
		return max_khz;
	}
	if (util_pct > upthreshold) {
		*reason = GOV_R_UTIL_HIGH;
		return max_khz;
	}
	if (cur_khz == 0) {
		*reason = GOV_R_UTIL_UNKNOWN;
		return max_khz;
	}
	if (util_pct > upthreshold - downdifferential) {
		*reason = GOV_R_UTIL_KEEP;
		return cur_khz;
	}
	/* b = busy * cur / total * 100 / (up - down / 2): the kernel divides
	 * integers, so down / 2 truncates (5 / 2 = 2 -> 88). */
	double denom = upthreshold - floor(downdifferential / 2.0);
	double f = util_pct * (double)cur_khz / denom;
	*reason = GOV_R_UTIL_SCALE;
	if (f > (double)max_khz)
		return max_khz;
	return (uint32_t)f;
}

static const struct ctl_param od_params[] = {
	{ "upthreshold", 1, 100, 90, "busy percent above which the max clock is used" },
	{ "downdifferential", 0, 99, 5, "hysteresis below upthreshold that keeps the clock" },
	{ NULL, 0, 0, 0, NULL },
};

static int od_init(void **state, const struct policy *pol, const struct hal_limits *lim)
{
	struct ondemand_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->upthreshold = ctl_param_value(pol, &ctl_ondemand, "upthreshold");
	s->downdifferential = ctl_param_value(pol, &ctl_ondemand, "downdifferential");
	/* The kernel's own sanity check. */
	if (s->upthreshold < s->downdifferential) {
		free(s);
		return -EINVAL;
	}
	*state = s;
	return 0;
}

static uint32_t snap_up(const struct hal_limits *lim, uint32_t khz)
{
	if (khz <= lim->clk_min_khz)
		return lim->clk_min_khz;
	if (!lim->clk_step_khz)
		return khz;
	uint32_t k = (khz - lim->clk_min_khz + lim->clk_step_khz - 1) / lim->clk_step_khz;
	uint32_t f = lim->clk_min_khz + k * lim->clk_step_khz;
	return f;
}

static void od_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	const struct ondemand_state *s = state;
	const struct hal_limits *lim = in->lim;
	uint32_t maxf = lim->clk_default_max_khz;
	uint32_t cur = in->cur->clk_locked ? in->cur->clk_max_khz : maxf;
	double util_pct = in->est->util * 100.0;
	uint32_t reason = 0;
	uint32_t f = ondemand_target_khz(util_pct, cur, maxf, s->upthreshold, s->downdifferential,
					 &reason);

	f = snap_up(lim, f);
	if (f > maxf)
		f = maxf;
	ctl_default_op(in, &out->op);
	out->op.clk_locked = true;
	out->op.clk_min_khz = f; /* an OPP is one frequency */
	out->op.clk_max_khz = f;
	out->reasons = reason;
	out->binding = GOV_B_UTILISATION;
}

static void od_fini(void *state)
{
	free(state);
}

const struct controller_ops ctl_ondemand = {
	.name = "ondemand",
	.description = "devfreq simple_ondemand on utilisation, BF16",
	.params = od_params,
	.init = od_init,
	.step = od_step,
	.fini = od_fini,
};
