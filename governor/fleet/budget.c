#include "governor/fleet/budget.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* Weights in thousandths, so the split is integer maths (deterministic,
 * never over the budget by rounding). */
#define WEIGHT_SCALE 1000.0
#define WEIGHT_MAX 1000000.0

typedef unsigned __int128 u128;

int budget_divvy(uint64_t budget_mw, const struct budget_actor *a, size_t n,
		 struct budget_result *out)
{
	uint64_t floor_sum = 0, req_sum = 0, w[BUDGET_MAX_DEVICES], req[BUDGET_MAX_DEVICES];

	memset(out, 0, sizeof(*out));
	if (n == 0 || n > BUDGET_MAX_DEVICES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (a[i].min_mw > a[i].max_mw || !(a[i].weight > 0) || a[i].weight > WEIGHT_MAX)
			return -EINVAL;
		floor_sum += a[i].min_mw;
		out->granted_mw[i] = a[i].min_mw;
	}
	if (budget_mw < floor_sum) {
		out->infeasible = true;
		out->short_mw = floor_sum - budget_mw;
		out->granted_total_mw = floor_sum;
		return 0;
	}
	uint64_t spare = budget_mw - floor_sum;

	/* Weighted request above the floor; with no request anywhere (all idle
	 * below their floors) the weights alone divide the spare. */
	for (size_t i = 0; i < n; i++) {
		uint32_t r = a[i].request_mw < a[i].min_mw ? a[i].min_mw
			   : a[i].request_mw > a[i].max_mw ? a[i].max_mw
							   : a[i].request_mw;
		w[i] = (uint64_t)llround(a[i].weight * WEIGHT_SCALE);
		if (w[i] == 0)
			w[i] = 1;
		req[i] = w[i] * (uint64_t)(r - a[i].min_mw);
		req_sum += req[i];
	}
	if (req_sum == 0)
		for (size_t i = 0; i < n; i++)
			req_sum += req[i] = w[i];

	/* Share in proportion to request; whatever a device cannot take above
	 * its max is reclaimed and re-divided by headroom (one pass suffices:
	 * a share of the extra never exceeds the headroom it is scaled by). */
	uint64_t extra = 0, headroom_sum = 0, headroom[BUDGET_MAX_DEVICES];
	for (size_t i = 0; i < n; i++) {
		uint64_t range = (uint64_t)a[i].max_mw - a[i].min_mw;
		uint64_t g = (uint64_t)((u128)spare * req[i] / req_sum);
		if (g > range) {
			extra += g - range;
			g = range;
		}
		out->granted_mw[i] = a[i].min_mw + (uint32_t)g;
		headroom[i] = range - g;
		headroom_sum += headroom[i];
	}
	if (extra > headroom_sum)
		extra = headroom_sum;
	if (extra > 0)
		for (size_t i = 0; i < n; i++)
			out->granted_mw[i] += (uint32_t)((u128)extra * headroom[i] / headroom_sum);
	for (size_t i = 0; i < n; i++)
		out->granted_total_mw += out->granted_mw[i];
	return 0;
}
