#include <errno.h>
#include <math.h>

#include "common/clock.h"
#include "governor/daemon/daemon.h"
#include "governor/fleet/fleet.h"

int daemon_fleet_start(struct daemon *d, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	char err[256];
	if (!c->fleet.enabled)
		return 0;
	int rc = fleet_agent_start(&d->fleet, &c->fleet, c->node, d->dry_run, err, sizeof(err));
	if (rc)
		diag_add(diags, DIAG_ERROR, c->path, 0, 0, "fleet", "fleet", "%s", err);
	return rc;
}

void daemon_fleet_stop(struct daemon *d)
{
	fleet_agent_stop(d->fleet);
	d->fleet = NULL;
}

void daemon_fleet_period(struct daemon *d)
{
	uint64_t floor = 0, max = 0, draw = 0, demand = 0;
	struct fleet_status st;
	if (!d->fleet)
		return;
	fleet_agent_status(d->fleet, govd_mono_ms(), &st);
	for (size_t i = 0; i < d->n; i++) {
		const struct governor *g = d->dev[i].g;
		const struct gov_estimates *e = governor_estimates(g);
		const struct hal_limits *lim = governor_limits(g);
		struct governor_status gs;
		governor_status(g, &gs);
		double w = gs.started ? e->power_w[HAL_RAIL_ACCEL] : NAN;
		uint64_t mw = w > 0 ? (uint64_t)(w * 1000.0) : lim->power_limit_max_mw;
		bool capped = !gs.started || (e->throttle & HAL_THR_POWER_CAP);
		floor += lim->power_limit_min_mw;
		max += lim->power_limit_max_mw;
		draw += mw;
		demand += fleet_demand_mw(mw, d->dev[i].grant_mw, capped && d->dev[i].has_grant);
	}
	fleet_agent_observe(d->fleet, floor, max, draw, demand > max ? max : demand);
	if (d->snap) {
		d->snap->fleet.enabled = true;
		d->snap->fleet.mode = (int)st.mode;
		d->snap->fleet.budget_w = (double)st.budget_mw / 1000.0;
		d->snap->fleet.grant_w = st.have_grant ? (double)st.grant_mw / 1000.0 : NAN;
		d->snap->fleet.draw_w = (double)draw / 1000.0;
		d->snap->fleet.allocating = st.allocating;
		d->snap->fleet.etcd_ok = st.etcd_ok;
		d->snap->fleet.fallbacks = st.fallbacks;
	}
}

double daemon_fleet_budget_w(const struct daemon *d)
{
	struct fleet_status st;
	if (!d->fleet)
		return 0;
	fleet_agent_status(d->fleet, govd_mono_ms(), &st);
	return (double)st.budget_mw / 1000.0;
}

void daemon_fleet_applied(struct daemon *d, uint64_t budget_mw)
{
	if (d->fleet)
		fleet_agent_applied(d->fleet, budget_mw);
}
