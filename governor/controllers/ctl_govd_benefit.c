/* The precision benefit learned per batch range (`benefit: 1`;
 * docs/govd-controller.md, "The benefit learned"): energy per generated
 * token per mode and bucket of requests running, an EWMA of what the
 * controller's own telemetry shows, and the hold that keeps BF16 where low
 * precision does not pay. Pure: no I/O. */
#include <math.h>
#include <string.h>

#include "governor/controllers/ctl_internal.h"

void ctl_govd_benefit_init(struct ctl_govd_benefit *b)
{
	memset(b, 0, sizeof(*b));
	b->mode = -1;
	b->mode_since_s = -INFINITY;
	for (int k = 0; k < GOVD_BENEFIT_BUCKETS; k++)
		b->until_s[k] = -INFINITY;
}

int ctl_govd_benefit_bucket(uint64_t running)
{
	return running < 8 ? 0 : running < 32 ? 1 : running < 96 ? 2 : 3;
}

double ctl_govd_benefit_j_per_token(const struct ctl_govd_benefit *b, const struct ctl_govd_benefit_cfg *c,
				int mode, int bucket)
{
	if (b->seen_s[mode][bucket] < c->min_s || !(b->tok[mode][bucket] > 0))
		return NAN;
	return b->e_j[mode][bucket] / b->tok[mode][bucket];
}

bool ctl_govd_benefit_step(struct ctl_govd_benefit *b, const struct ctl_govd_benefit_cfg *c, double now_s,
		       double period_s, int mode, uint64_t running, double tokens, double energy_j)
{
	int k = ctl_govd_benefit_bucket(running);
	if (mode != b->mode) {
		b->mode = mode;
		b->mode_since_s = now_s;
	}
	/* The power filter and the clock settle after a switch; idle periods
	 * say nothing about a precision's cost per token. */
	if (now_s - b->mode_since_s >= c->settle_s && tokens > 0 && energy_j > 0 &&
	    (mode == 0 || mode == 1)) {
		double a = 1.0 - exp(-period_s / c->tau_s);
		b->e_j[mode][k] += a * (energy_j - b->e_j[mode][k]);
		b->tok[mode][k] += a * (tokens - b->tok[mode][k]);
		b->seen_s[mode][k] += period_s;
	}
	if (now_s < b->until_s[k])
		return true;
	double lo = ctl_govd_benefit_j_per_token(b, c, 1, k), hi = ctl_govd_benefit_j_per_token(b, c, 0, k);
	if (isnan(lo) || isnan(hi))
		return false; /* not known here yet: low precision is tried */
	if (lo < (1.0 - c->margin) * hi) {
		b->hold_s[k] = fmax(c->hold_s, 0.5 * b->hold_s[k]);
		return false;
	}
	/* Low precision does not pay in this bucket: BF16, then try again
	 * (its estimate starts over so the retry measures it afresh). */
	b->hold_s[k] = b->hold_s[k] > 0 ? fmin(2 * b->hold_s[k], 3600) : c->hold_s;
	b->until_s[k] = now_s + b->hold_s[k];
	b->seen_s[1][k] = 0;
	b->e_j[1][k] = b->tok[1][k] = 0;
	return true;
}
