/* Fleet simulation (docs/fleet.md, "Fleet simulation"): N nodes x M
 * accelerators under one group budget, each node serving its own slice of
 * a request trace, for three policies:
 *   static  every accelerator capped at budget / accelerators;
 *   polca   POLCA-style reactive capping with two thresholds: uncapped
 *           until the group draws above t1 x budget, then low-priority
 *           accelerators are capped step by step, high-priority ones only
 *           above t2 x budget; caps are lifted below t_low x budget;
 *   govd    fleet_target + fleet_phase (governor/fleet/fleet_alloc.c, the code
 *           the etcd allocator runs) every step, each node's grant split
 *           among its accelerators by budget_divvy (governor/fleet/budget.c).
 * Reduced fidelity, stated: one queue per accelerator; capacity at a
 * power cap from the published compute-bound throughput-vs-power shape
 * (shared/data/README.md: A100/V100 clock sweeps); draw = idle + (cap -
 * idle) x utilisation; no thermal, no clocks, no precision. Simulated:
 * nothing here is measured on hardware. Pure (no I/O) apart from
 * fleet_trace_load. */
#ifndef GOVD_GOVERNOR_FLEET_SIM_H
#define GOVD_GOVERNOR_FLEET_SIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

/* Arrivals binned into work units (generated tokens + context tokens / 8)
 * per second over the trace's length. */
struct fleet_trace {
	double *work;   /* per second */
	size_t n_s;
	double mean;    /* work per second */
	size_t n_requests;
};

/* TIMESTAMP,ContextTokens,GeneratedTokens (shared/data Azure LLM trace
 * format). 0 or -errno with file:line in diags. */
int fleet_trace_load(const char *path, struct fleet_trace *t, struct diag_list *diags);
void fleet_trace_free(struct fleet_trace *t);

enum fleet_policy { FLEET_STATIC, FLEET_POLCA, FLEET_GOVD, FLEET_POLICY_N };
extern const char *const fleet_policy_names[FLEET_POLICY_N];

struct fleet_sim_cfg {
	size_t nodes, per_node;
	double hours, step_s;
	double budget_w;
	double idle_w, min_w, max_w;    /* per accelerator */
	double mean_util;               /* offered load / full-power capacity, day average */
	double diurnal_amp;             /* 0..1 */
	double phase_spread_h;          /* nodes' diurnal peaks spread over +- this */
	double high_share;              /* share of nodes with high-priority traffic */
	double sla_delay_s;             /* queueing delay beyond this is an SLA loss */
	double polca_t1, polca_t2, polca_low, polca_step; /* fractions of budget / of max_w */
	uint64_t seed;
};

void fleet_sim_defaults(struct fleet_sim_cfg *c);

struct fleet_sim_result {
	double hp_loss, lp_loss;        /* share of work that arrived in late steps */
	double hp_served, lp_served;    /* share of offered work served by the end */
	size_t over_budget_steps;       /* group draw above the budget */
	double max_draw_w, mean_draw_w;
	size_t steps, accelerators;
};

/* One run: 0, or -EINVAL (bad cfg), -ENOMEM. */
int fleet_sim_run(const struct fleet_sim_cfg *c, const struct fleet_trace *t, enum fleet_policy p,
		  struct fleet_sim_result *out);

/* Largest node count (per_node fixed, the rest of c as given) whose run
 * meets hp_loss <= max_loss with no step over budget; 0 when none does.
 * Search up to max_nodes. */
size_t fleet_sim_fit(const struct fleet_sim_cfg *c, const struct fleet_trace *t, enum fleet_policy p,
		     double max_loss, size_t max_nodes, struct fleet_sim_result *at_fit);

#endif
