/* Fleet power allocation: one group budget shared among nodes (docs/fleet.md).
 * Pure: the etcd allocator (governor/fleet/fleet.c) and the fleet simulation
 * (governor/sim/fleet_sim.c) call the same functions.
 *
 * Two steps each round:
 *  - fleet_target: what each node should have. Floors first; then priority
 *    classes from the highest, each node up to its demand (a class that does
 *    not fit shares what is left in proportion to its demand above floor);
 *    what no demand takes is spread by headroom up to each node's maximum,
 *    again the highest class first (burst room for high priority).
 *    Two-threshold hysteresis against the current grants: a grant is raised
 *    only when the target is more than up_frac above it and lowered only when
 *    more than down_frac below, so grants do not chatter.
 *  - fleet_phase: what may be written now without the nodes' applied budgets
 *    ever summing past the budget while grants move. A node may still run at
 *    what it applied last (it acknowledges a new grant through its record),
 *    so its exposure is max(grant, applied); decreases go out at once and
 *    increases only into the headroom the exposures leave. Raises wait for
 *    the lowered nodes to acknowledge, a round or two later. */
#ifndef GOVD_GOVERNOR_FLEET_ALLOC_H
#define GOVD_GOVERNOR_FLEET_ALLOC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLEET_NAME_LEN 64
#define FLEET_MAX_NODES 4096

/* One node's registration, as the allocator reads it. Milliwatts: the
 * maths is integer, so a sum never passes the budget by rounding. */
struct fleet_rec {
	char name[FLEET_NAME_LEN];
	uint64_t floor_mw;   /* the lowest budget it runs at (its devices' minimum limits) */
	uint64_t max_mw;     /* it cannot use more (its devices' maximum limits) */
	uint64_t demand_mw;  /* what it asks for now */
	uint64_t draw_mw;    /* what it draws now (reported; not used by the maths) */
	uint64_t applied_mw; /* the budget it enforces now (its grant, or its safe budget) */
	int priority;        /* higher first; 0 default */
};

struct fleet_params {
	double up_frac;   /* raise a grant when the target is > up_frac x grant above it */
	double down_frac; /* lower it when the target is > down_frac x grant below it */
};

#define FLEET_PARAMS_DEFAULT ((struct fleet_params){ .up_frac = 0.05, .down_frac = 0.10 })

struct fleet_target_result {
	bool infeasible;     /* budget below the sum of floors: every target scaled below its floor */
	uint64_t floors_mw;  /* sum of floors */
	uint64_t granted_mw; /* sum of targets (<= budget) */
};

#define FLEET_NO_GRANT UINT64_MAX /* cur[i] / prev[i]: the node has none yet */

/* Targets for n records under budget_mw, with hysteresis against cur[]
 * (NULL, or FLEET_NO_GRANT for a node: no hysteresis for it). Always
 * sum(out) <= budget_mw and out[i] <= max_mw; out[i] >= floor_mw unless
 * infeasible. 0, or -EINVAL: n > FLEET_MAX_NODES, floor > max, fractions
 * outside [0, 1]. */
int fleet_target(uint64_t budget_mw, const struct fleet_rec *r, size_t n, const uint64_t *cur,
		 const struct fleet_params *p, uint64_t *out, struct fleet_target_result *res);

/* What to write now: target[] limited so that the sum over i of the
 * exposure, max(write[i], what node i may still run), stays <= budget_mw,
 * given prev[] (the grants in force, FLEET_NO_GRANT for none) and
 * prev_exposed[] (this function's exposed[] of the last round, or NULL).
 * A node may still run what it acknowledged (applied_mw) and, until it
 * acknowledges the grant in force, that grant and every one written since
 * its last acknowledgement (it may have read one and failed to say so).
 * Decreases go out at once; increases by priority (highest first), then
 * record order, as far as the headroom allows. When the exposure is
 * already over the budget (a join at its safe budget) nothing rises until
 * it is back under. write[i] <= target[i] always. exposed[] (may be NULL):
 * each node's exposure after this round, for the next. Returns how many
 * nodes are still below target (0: converged). */
size_t fleet_phase(uint64_t budget_mw, const struct fleet_rec *r, size_t n, const uint64_t *prev,
		   const uint64_t *prev_exposed, const uint64_t *target, uint64_t *write,
		   uint64_t *exposed);

#endif
