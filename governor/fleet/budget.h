/* Node power budget split among devices, the way the kernel's power allocator
 * (drivers/thermal/gov_power_allocator.c, divvy_up_power) divides a budget
 * among its actors: in proportion to each actor's weighted request, capped at
 * the actor's maximum, with what the capped actors could not take handed to
 * the others in proportion to their headroom. One change for accelerators:
 * a power limit has a floor (power_limit_min_mw), so every device gets its
 * floor first and the share is taken of what the floors leave. Pure; the
 * maths is in docs/daemon.md ("Node power budget"). */
#ifndef GOVD_GOVERNOR_BUDGET_H
#define GOVD_GOVERNOR_BUDGET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUDGET_MAX_DEVICES 64

struct budget_actor {
	uint32_t min_mw, max_mw; /* power-limit range the device accepts */
	uint32_t request_mw;     /* what it draws now (filtered), or max_mw when unknown */
	double weight;           /* > 0; 1 = equal footing */
};

struct budget_result {
	uint32_t granted_mw[BUDGET_MAX_DEVICES];
	uint64_t granted_total_mw;
	/* The budget is below the sum of the floors: every device gets its
	 * floor and the node may exceed the budget by short_mw. */
	bool infeasible;
	uint64_t short_mw;
};

/* 0; -EINVAL for n == 0, n > BUDGET_MAX_DEVICES, min > max or weight not
 * > 0. Sum of grants <= budget_mw unless infeasible. */
int budget_divvy(uint64_t budget_mw, const struct budget_actor *a, size_t n,
		 struct budget_result *out);

#endif
