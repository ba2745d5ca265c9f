/* govd's side of the fleet (docs/fleet.md): the agent started with the
 * endpoints, the node's range, draw and demand handed to it each period,
 * and the budget it grants used as the node budget. */
#ifndef GOVD_GOVERNOR_FLEET_DAEMON_H
#define GOVD_GOVERNOR_FLEET_DAEMON_H
#include "common/diag.h"

struct daemon;

/* Starts the agent when the config has a fleet section. 0 or -errno. */
int daemon_fleet_start(struct daemon *d, struct diag_list *diags);
void daemon_fleet_stop(struct daemon *d);
/* Each period before the budget is divided: observe, publish metrics. */
void daemon_fleet_period(struct daemon *d);
/* The node budget the fleet grants (W); 0 without a fleet. */
double daemon_fleet_budget_w(const struct daemon *d);

#endif
