#include "governor/fleet/fleet_alloc.h"

#include <errno.h>
#include <string.h>

typedef unsigned __int128 u128;

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The highest priority below `below` among nodes selected by mask (NULL:
 * all); false when none. Classes are visited by repeated scans: the number
 * of distinct priorities is small. */
static bool next_class(const struct fleet_rec *r, size_t n, const bool *mask, bool first,
		       int below, int *out)
{
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		if (mask && !mask[i])
			continue;
		if (!first && r[i].priority >= below)
			continue;
		if (!found || r[i].priority > *out)
			*out = r[i].priority;
		found = true;
	}
	return found;
}

/* Hands `pool` to the nodes of want[] (those of class prio) in proportion to
 * want, or in full when it fits; returns what is left. Integer shares round
 * down, so the sum never passes pool. */
static uint64_t share(const struct fleet_rec *r, size_t n, int prio, const uint64_t *want,
		      uint64_t pool, uint64_t *out)
{
	u128 total = 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].priority == prio)
			total += want[i];
	if (total == 0)
		return pool;
	if (total <= pool) {
		for (size_t i = 0; i < n; i++)
			if (r[i].priority == prio)
				out[i] += want[i];
		return pool - (uint64_t)total;
	}
	uint64_t given = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].priority != prio)
			continue;
		uint64_t s = (uint64_t)((u128)want[i] * pool / total);
		out[i] += s;
		given += s;
	}
	return pool - given;
}

int fleet_target(uint64_t budget_mw, const struct fleet_rec *r, size_t n, const uint64_t *cur,
		 const struct fleet_params *p, uint64_t *out, struct fleet_target_result *res)
{
	uint64_t want[FLEET_MAX_NODES];
	u128 floors = 0;

	memset(res, 0, sizeof(*res));
	if (n > FLEET_MAX_NODES || !(p->up_frac >= 0 && p->up_frac <= 1) ||
	    !(p->down_frac >= 0 && p->down_frac <= 1))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (r[i].floor_mw > r[i].max_mw)
			return -EINVAL;
		floors += r[i].floor_mw;
	}
	res->floors_mw = floors > UINT64_MAX ? UINT64_MAX : (uint64_t)floors;
	if (floors > budget_mw) {
		/* Below the floors nothing is safe; keep the sum inside the
		 * budget anyway (the nodes cannot follow: they log it). */
		res->infeasible = true;
		for (size_t i = 0; i < n; i++) {
			out[i] = (uint64_t)((u128)r[i].floor_mw * budget_mw / floors);
			res->granted_mw += out[i];
		}
		return 0;
	}
	uint64_t pool = budget_mw - (uint64_t)floors;
	for (size_t i = 0; i < n; i++) {
		out[i] = r[i].floor_mw;
		uint64_t d = min_u64(max_u64(r[i].demand_mw, r[i].floor_mw), r[i].max_mw);
		want[i] = d - r[i].floor_mw;
	}
	int prio = 0;
	for (bool first = true; pool > 0 && next_class(r, n, NULL, first, prio, &prio); first = false)
		pool = share(r, n, prio, want, pool, out);
	/* Nobody asked for the rest: spread it by headroom, the highest class
	 * first, so a node whose demand estimate lags a burst is not capped for
	 * nothing, and high-priority nodes get that slack before the others. */
	for (bool first = true; pool > 0 && next_class(r, n, NULL, first, prio, &prio); first = false) {
		u128 head = 0;
		for (size_t i = 0; i < n; i++)
			if (r[i].priority == prio)
				head += r[i].max_mw - out[i];
		uint64_t given = 0;
		for (size_t i = 0; i < n && head > 0; i++) {
			if (r[i].priority != prio)
				continue;
			uint64_t h = r[i].max_mw - out[i];
			uint64_t s = head <= pool ? h : (uint64_t)((u128)h * pool / head);
			out[i] += s;
			given += s;
		}
		pool -= given;
	}
	/* Hysteresis: keep a grant the target is close to. */
	if (cur) {
		u128 sum = 0;
		uint64_t t[FLEET_MAX_NODES];
		memcpy(t, out, n * sizeof(*t));
		for (size_t i = 0; i < n; i++) {
			uint64_t c = cur[i];
			if (c != FLEET_NO_GRANT && c >= r[i].floor_mw && c <= r[i].max_mw) {
				bool up = t[i] > c && (double)(t[i] - c) > p->up_frac * (double)c;
				bool down = t[i] < c && (double)(c - t[i]) > p->down_frac * (double)c;
				if (!up && !down)
					out[i] = c;
			}
			sum += out[i];
		}
		/* Kept grants above target may not fit next to the raised
		 * ones: those go to target (sum(target) <= budget). */
		if (sum > budget_mw)
			for (size_t i = 0; i < n; i++)
				if (out[i] > t[i])
					out[i] = t[i];
	}
	for (size_t i = 0; i < n; i++)
		res->granted_mw += out[i];
	return 0;
}

/* What node i may run whatever is written now: what it acknowledged, and
 * while the grant in force is not acknowledged (applied != prev), that
 * grant and every earlier one since its last acknowledgement (it may have
 * read one and not said so). */
static uint64_t base_of(const struct fleet_rec *r, const uint64_t *prev, const uint64_t *prev_exposed,
			size_t i)
{
	uint64_t b = r[i].applied_mw, p = prev ? prev[i] : FLEET_NO_GRANT;
	if (p == FLEET_NO_GRANT || p == r[i].applied_mw)
		return b;
	b = max_u64(b, p);
	if (prev_exposed && prev_exposed[i] != FLEET_NO_GRANT)
		b = max_u64(b, prev_exposed[i]);
	return b;
}

size_t fleet_phase(uint64_t budget_mw, const struct fleet_rec *r, size_t n, const uint64_t *prev,
		   const uint64_t *prev_exposed, const uint64_t *target, uint64_t *write,
		   uint64_t *exposed)
{
	bool rising[FLEET_MAX_NODES];
	uint64_t base[FLEET_MAX_NODES];
	u128 exposure = 0;
	size_t pending = 0;

	if (n > FLEET_MAX_NODES)
		n = FLEET_MAX_NODES;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = prev ? prev[i] : FLEET_NO_GRANT;
		write[i] = p == FLEET_NO_GRANT ? 0 : min_u64(p, target[i]);
		rising[i] = write[i] < target[i];
		base[i] = base_of(r, prev, prev_exposed, i);
		exposure += max_u64(write[i], base[i]);
	}
	uint64_t head = exposure >= budget_mw ? 0 : budget_mw - (uint64_t)exposure;
	int prio = 0;
	for (bool first = true; next_class(r, n, rising, first, prio, &prio); first = false) {
		for (size_t i = 0; i < n; i++) {
			if (!rising[i] || r[i].priority != prio)
				continue;
			uint64_t e = max_u64(write[i], base[i]);
			uint64_t top = min_u64(target[i], e + head);
			if (top > write[i]) {
				write[i] = top;
				head -= max_u64(top, base[i]) - e;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		pending += write[i] < target[i];
		if (exposed)
			exposed[i] = max_u64(write[i], base[i]);
	}
	return pending;
}
