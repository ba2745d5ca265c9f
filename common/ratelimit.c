#include "common/ratelimit.h"

bool ratelimit_hit(struct ratelimit *r, uint64_t now_ms, uint64_t *n)
{
	uint64_t quiet = r->quiet_ms ? r->quiet_ms : RATELIMIT_QUIET_MS;
	if (r->n && now_ms - r->last_ms >= quiet)
		r->n = 0; /* a new episode */
	r->n++;
	r->total++;
	r->last_ms = now_ms;
	*n = r->n;
	return (r->n & (r->n - 1)) == 0; /* 1, 2, 4, 8, ... */
}
