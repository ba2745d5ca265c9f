/* Rate limit for warnings a peer can trigger at will (refused control
 * connections, connections the metrics endpoint drops): the first of an
 * episode is logged, then the 2nd, 4th, 8th ... with the count so far, so
 * a flood costs the journal log2(n) lines and still says how big it is.
 * An episode ends after quiet_ms without an event. Pure; not thread-safe
 * (one owner per limiter). */
#ifndef GOVD_COMMON_RATELIMIT_H
#define GOVD_COMMON_RATELIMIT_H
#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	uint64_t quiet_ms;
	uint64_t n;       /* events this episode */
	uint64_t total;   /* events ever */
	uint64_t last_ms; /* last event */
};

#define RATELIMIT_QUIET_MS 60000

/* One event at now_ms: true when it is to be logged (*n: this episode's count). */
bool ratelimit_hit(struct ratelimit *r, uint64_t now_ms, uint64_t *n);

#endif
