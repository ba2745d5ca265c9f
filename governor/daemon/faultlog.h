/* Peer and sensor faults into the daemon's log (the journal under
 * systemd), once per episode: the decision log has every period's faults,
 * the journal says when a set of faults began (warning, with the source's
 * message) and when it cleared (notice, with its length). Silent while a
 * fault persists unchanged. */
#ifndef GOVD_GOVERNOR_FAULTLOG_H
#define GOVD_GOVERNOR_FAULTLOG_H
#include <stdint.h>

#include "governor/loop/governor.h"

struct fault_episode {
	uint32_t bits;      /* active now */
	uint64_t since_seq; /* period the episode began */
};

/* One source's faults of period seq: bits named by name(bit); msg may be NULL. */
void fault_episode_note(struct fault_episode *ep, const char *dev, const char *source,
			uint32_t bits, const char *(*name)(uint32_t bit), const char *msg,
			uint64_t seq);

/* A device's three sources: serving reads, quality reads, sensor readings. */
struct fault_episodes {
	struct fault_episode serving, quality, sensors;
};
void fault_episodes_period(struct fault_episodes *eps, const char *dev, const struct gov_period *p);

#endif
