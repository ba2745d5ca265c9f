#include "governor/loop/guard.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int guard_init(struct guard *g, const struct policy *pol, const struct hal_limits *lim)
{
	if (lim->clk_min_khz > lim->clk_max_khz || lim->power_limit_min_mw > lim->power_limit_max_mw)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->pol = pol;
	g->lim = *lim;
	g->fmin_khz = lim->clk_min_khz;
	g->fmax_khz = lim->clk_max_khz;
	if (pol->frequency.min_mhz > 0 && gov_mhz_to_khz(pol->frequency.min_mhz) > g->fmin_khz)
		g->fmin_khz = gov_mhz_to_khz(pol->frequency.min_mhz);
	if (pol->frequency.max_mhz > 0 && gov_mhz_to_khz(pol->frequency.max_mhz) < g->fmax_khz)
		g->fmax_khz = gov_mhz_to_khz(pol->frequency.max_mhz);
	if (g->fmin_khz > g->fmax_khz)
		g->fmin_khz = g->fmax_khz; /* policy range outside the device: its nearest edge */
	g->step_khz = pol->frequency.max_step_mhz > 0 ? gov_mhz_to_khz(pol->frequency.max_step_mhz) : 0;
	g->cap_mw = lim->power_limit_max_mw;
	if (pol->power.cap_w > 0 && gov_w_to_mw(pol->power.cap_w) < g->cap_mw)
		g->cap_mw = gov_w_to_mw(pol->power.cap_w);
	if (g->cap_mw < lim->power_limit_min_mw)
		g->cap_mw = lim->power_limit_min_mw;
	return 0;
}

void guard_fini(struct guard *g)
{
	memset(g, 0, sizeof(*g));
}

void guard_set_envelope(struct guard *g, bool outside)
{
	g->outside_envelope = outside;
}

void guard_set_budget_mw(struct guard *g, uint32_t budget_mw)
{
	g->budget_on = true;
	g->budget_mw = budget_mw;
}

void guard_clear_budget(struct guard *g)
{
	g->budget_on = false;
	g->budget_mw = 0;
}

/* The policy's power budget (power.budget_w): the mean power of the
 * objective's rails over budget_window_s (an EWMA with that time constant)
 * stays at or under budget_w. The accelerator is the rail the governor can
 * limit, so its allowance is the budget less what the other counted rails
 * draw now, less the excess the window has already accumulated (an
 * overshoot is paid back). */
double guard_budget_allowance_w(struct guard_budget *b, const double power_w[HAL_RAIL_N],
				uint32_t rails, double budget_w, double window_s, double period_s)
{
	if (!(budget_w > 0))
		return INFINITY;
	double total = 0, other = 0;
	for (int r = 0; r < HAL_RAIL_N; r++) {
		if (!(rails & POLICY_RAIL_BIT(r)) || !isfinite(power_w[r]))
			continue;
		total += power_w[r];
		if (r != HAL_RAIL_ACCEL)
			other += power_w[r];
	}
	double a = 1.0 - exp(-period_s / window_s);
	b->mean_w = b->have ? b->mean_w + a * (total - b->mean_w) : total;
	b->have = true;
	double excess = b->mean_w > budget_w ? b->mean_w - budget_w : 0;
	return budget_w - other - excess;
}

void guard_policy_budget(struct guard *g, const double power_w[HAL_RAIL_N], double period_s)
{
	const struct policy *p = g->pol;
	double w = guard_budget_allowance_w(&g->pbudget, power_w, p->objective.rails,
					    p->power.budget_w, p->power.budget_window_s, period_s);
	g->policy_budget_on = isfinite(w);
	g->policy_budget_mw = g->policy_budget_on ? gov_w_to_mw(w > 0 ? w : 0) : 0;
}

uint32_t guard_cap_mw(const struct guard *g)
{
	uint32_t cap = g->cap_mw;

	if (g->budget_on && g->budget_mw < cap)
		cap = g->budget_mw;
	if (g->policy_budget_on && g->policy_budget_mw < cap)
		cap = g->policy_budget_mw; /* spent (0): the device minimum below */
	return cap < g->lim.power_limit_min_mw ? g->lim.power_limit_min_mw : cap;
}

/* The safe point under the external budget: a node's budget is a hard
 * limit even while the device is unsafe. */
static void safe_point_capped(const struct guard *g, size_t n_slices, struct gov_opoint *out)
{
	guard_safe_point(g, n_slices, out);
	if ((g->budget_on || g->policy_budget_on) && out->power_limit_mw > guard_cap_mw(g))
		out->power_limit_mw = guard_cap_mw(g);
}

void guard_emergency(struct guard *g, size_t n_slices, struct gov_opoint *out, uint32_t *reasons,
		     enum gov_binding *binding)
{
	g->in_safe = true;
	g->safe_hold_left = g->pol->safe_point.hold_periods;
	safe_point_capped(g, n_slices, out);
	*reasons |= GOV_R_SAFE_POINT;
	*binding = GOV_B_SAFE_POINT;
}

void guard_safe_point(const struct guard *g, size_t n_slices, struct gov_opoint *out)
{
	const struct policy *p = g->pol;

	memset(out, 0, sizeof(*out));
	out->n_slices = n_slices;
	out->clk_min_khz = g->lim.clk_min_khz;
	out->clk_max_khz = g->lim.clk_default_max_khz;
	if (p->safe_point.clk_max_mhz > 0) {
		uint32_t f = gov_mhz_to_khz(p->safe_point.clk_max_mhz);
		out->clk_locked = true;
		out->clk_max_khz = f < g->lim.clk_min_khz ? g->lim.clk_min_khz
			       : f > g->lim.clk_max_khz ? g->lim.clk_max_khz : f;
	}
	uint32_t pw = p->safe_point.power_cap_w > 0 ? gov_w_to_mw(p->safe_point.power_cap_w)
						    : g->lim.power_limit_default_mw;
	if (pw < g->lim.power_limit_min_mw)
		pw = g->lim.power_limit_min_mw;
	if (pw > g->lim.power_limit_max_mw)
		pw = g->lim.power_limit_max_mw;
	/* The policy's cap holds on the safe point too: without a
	 * safe_point.power_cap_w the device default may sit above it. */
	if (g->cap_mw && pw > g->cap_mw)
		pw = g->cap_mw;
	out->power_limit_mw = pw;
	for (size_t s = 0; s < n_slices; s++)
		out->int8_frac[s] = p->safe_point.int8_fraction;
}

static uint32_t clampu(uint32_t v, uint32_t lo, uint32_t hi, bool *hit)
{
	if (v < lo) {
		*hit = true;
		return lo;
	}
	if (v > hi) {
		*hit = true;
		return hi;
	}
	return v;
}

static uint32_t step_limit(uint32_t want, uint32_t cur, uint32_t step, bool *hit)
{
	if (!step)
		return want;
	if (want > cur && want - cur > step) {
		*hit = true;
		return cur + step;
	}
	if (cur > want && cur - want > step) {
		*hit = true;
		return cur - step;
	}
	return want;
}

void guard_apply(struct guard *g, const struct gov_opoint *cur, const struct gov_opoint *want,
		 bool critical_fault, struct gov_opoint *out, uint32_t *reasons,
		 enum gov_binding *binding)
{
	const struct hal_limits *lim = &g->lim;

	if (critical_fault) {
		guard_emergency(g, want->n_slices, out, reasons, binding);
		return;
	}
	if (g->in_safe && g->safe_hold_left > 0) {
		g->safe_hold_left--;
		safe_point_capped(g, want->n_slices, out);
		*reasons |= GOV_R_SAFE_HOLD;
		*binding = GOV_B_SAFE_POINT;
		return;
	}
	g->in_safe = false;
	/* Like a fault, leaving the envelope skips the step limit: the policy's
	 * tuning no longer describes the system. */
	if (g->outside_envelope) {
		safe_point_capped(g, want->n_slices, out);
		*reasons |= GOV_R_ENVELOPE;
		*binding = GOV_B_ENVELOPE;
		return;
	}

	*out = *want;
	enum gov_binding b = GOV_B_N;
	bool hit;

	/* Clocks. Unlocked stays unlocked unless the policy narrows the range. */
	bool policy_narrows = g->fmin_khz > lim->clk_min_khz || g->fmax_khz < lim->clk_default_max_khz;
	if (!out->clk_locked && policy_narrows) {
		out->clk_locked = true;
		out->clk_min_khz = g->fmin_khz;
		out->clk_max_khz = g->fmax_khz < lim->clk_default_max_khz ? g->fmax_khz
									: lim->clk_default_max_khz;
		*reasons |= GOV_R_CLAMP_POLICY_FREQ;
		b = GOV_B_POLICY_FREQ;
	}
	if (out->clk_locked) {
		hit = false;
		out->clk_min_khz = clampu(out->clk_min_khz, lim->clk_min_khz, lim->clk_max_khz, &hit);
		out->clk_max_khz = clampu(out->clk_max_khz, lim->clk_min_khz, lim->clk_max_khz, &hit);
		if (hit) {
			*reasons |= GOV_R_CLAMP_DEVICE;
			b = GOV_B_DEVICE_LIMIT;
		}
		hit = false;
		out->clk_min_khz = clampu(out->clk_min_khz, g->fmin_khz, g->fmax_khz, &hit);
		out->clk_max_khz = clampu(out->clk_max_khz, g->fmin_khz, g->fmax_khz, &hit);
		if (hit) {
			*reasons |= GOV_R_CLAMP_POLICY_FREQ;
			b = GOV_B_POLICY_FREQ;
		}
		if (out->clk_min_khz > out->clk_max_khz)
			out->clk_min_khz = out->clk_max_khz;
		/* Step limit against what is in force; unlocked counts as the
		 * firmware's range. */
		uint32_t cmin = cur->clk_locked ? cur->clk_min_khz : lim->clk_min_khz;
		uint32_t cmax = cur->clk_locked ? cur->clk_max_khz : lim->clk_default_max_khz;
		hit = false;
		out->clk_max_khz = step_limit(out->clk_max_khz, cmax, g->step_khz, &hit);
		out->clk_min_khz = step_limit(out->clk_min_khz, cmin, g->step_khz, &hit);
		if (hit) {
			*reasons |= GOV_R_STEP_LIMIT;
			b = GOV_B_STEP_LIMIT;
		}
		/* A step from a point outside the policy's range (firmware
		 * clocks at start, a safe point without a clock) must not land
		 * outside it: the range wins over the step limit. */
		bool range_hit = false;
		out->clk_min_khz = clampu(out->clk_min_khz, g->fmin_khz, g->fmax_khz, &range_hit);
		out->clk_max_khz = clampu(out->clk_max_khz, g->fmin_khz, g->fmax_khz, &range_hit);
		if (range_hit) {
			*reasons |= GOV_R_CLAMP_POLICY_FREQ;
			b = GOV_B_POLICY_FREQ;
		}
		if (out->clk_min_khz > out->clk_max_khz)
			out->clk_min_khz = out->clk_max_khz;
	} else if (cur->clk_locked && g->step_khz &&
		   lim->clk_default_max_khz > cur->clk_max_khz + g->step_khz) {
		/* Unlocking would jump further than one step: climb in steps. */
		out->clk_locked = true;
		out->clk_min_khz = lim->clk_min_khz;
		out->clk_max_khz = cur->clk_max_khz + g->step_khz;
		*reasons |= GOV_R_STEP_LIMIT;
		b = GOV_B_STEP_LIMIT;
	}

	/* Power limit. */
	hit = false;
	uint32_t pw = clampu(out->power_limit_mw, lim->power_limit_min_mw, lim->power_limit_max_mw, &hit);
	if (hit) {
		*reasons |= GOV_R_CLAMP_DEVICE;
		if (b == GOV_B_N)
			b = GOV_B_DEVICE_LIMIT;
	}
	if (pw > guard_cap_mw(g)) {
		pw = guard_cap_mw(g);
		*reasons |= GOV_R_CLAMP_POWER_CAP;
		b = GOV_B_POWER_CAP;
	}
	out->power_limit_mw = pw;

	for (size_t s = 0; s < out->n_slices; s++) {
		double f = out->int8_frac[s];
		out->int8_frac[s] = isnan(f) || f < 0 ? 0 : f > 1 ? 1 : f;
	}
	if (b != GOV_B_N)
		*binding = b;
}
