/* Stand-ins for the governor API that branch `rollback` adds to governor.h
 * (governor_set_power_budget_mw, governor_hold, governor_emergency). Delete
 * this file once that lands in main: the static definitions below then clash
 * with the real declarations, so the build says when. */
#ifndef GOVD_GOVERNOR_DAEMON_SHIM_H
#define GOVD_GOVERNOR_DAEMON_SHIM_H
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "governor/governor.h"

/* The node budget's share as an upper bound on the power limit, on top of
 * the policy's cap (what guard_init computes); 0 lifts it. */
static inline int governor_set_power_budget_mw(struct governor *g, uint32_t mw)
{
	uint32_t cap = g->lim.power_limit_max_mw;
	const struct policy *p = g->cfg.pol;
	if (p->power.cap_w > 0 && gov_w_to_mw(p->power.cap_w) < cap)
		cap = gov_w_to_mw(p->power.cap_w);
	if (mw && mw < cap)
		cap = mw;
	if (cap < g->lim.power_limit_min_mw)
		cap = g->lim.power_limit_min_mw;
	g->guard.cap_mw = cap;
	return 0;
}

static inline int governor_hold(struct governor *g, bool on)
{
	return -ENOSYS;
}

static inline int governor_emergency(struct governor *g, const char *why)
{
	return -ENOSYS;
}

#endif
