/* Connection guard for a local HTTP endpoint (the metrics server): a
 * whole-request deadline per connection (not an idle timer that every byte
 * resets), a bound per peer address and a bound in all, enforced by
 * shutting a connection's socket down so its server closes it.
 *
 * When a bound is reached the new connection is kept and the oldest one
 * not being answered right now (of that peer, or of all) goes: slow or
 * idle connections, however many are opened, cannot keep a scrape out,
 * and a scrape being answered is never the one dropped. A request being
 * answered keeps its own deadline. Thread-safe: the server's thread calls
 * the notifications, the guard's own thread enforces the deadline.
 * docs/daemon.md ("Metrics endpoint protections"). */
#ifndef GOVD_GOVERNOR_CONNGUARD_H
#define GOVD_GOVERNOR_CONNGUARD_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct connguard_cfg {
	unsigned max_conns;    /* open at once, all peers */
	unsigned max_per_peer; /* open at once from one address */
	uint32_t deadline_ms;  /* from accept (or the end of the previous request) to the answer sent */
	uint32_t tick_ms;      /* how often the deadline is checked */
};

struct connguard_stats {
	uint64_t opened, expired, evicted_peer, evicted_total;
	unsigned open;
};

struct connguard;

int connguard_start(struct connguard **out, const struct connguard_cfg *cfg);
/* Stops the thread; connections still open are left to their server. */
void connguard_stop(struct connguard *g);

/* The server accepted fd from peer (may shut others down to stay in bounds). */
void connguard_opened(struct connguard *g, int fd, const struct sockaddr *peer);
/* A request on fd is being answered (busy) or its answer is done (its
 * deadline restarts for the next request on a kept-alive connection). */
void connguard_busy(struct connguard *g, int fd);
void connguard_done(struct connguard *g, int fd);
/* The server is about to close fd: forget it (before the close, so a
 * reused descriptor is never shut down). */
void connguard_closed(struct connguard *g, int fd);
void connguard_get_stats(struct connguard *g, struct connguard_stats *out);

#endif
