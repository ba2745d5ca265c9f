/* The `serving` backend: latency windows, throughput and queue from an
 * inference server's Prometheus endpoint (vLLM, Triton or named metrics),
 * quality samples from the scrape or an evaluator's datagram socket, and
 * the precision document back to the server. Options and semantics in
 * docs/serving-integration.md. */
#ifndef GOVD_HAL_SERVING_H
#define GOVD_HAL_SERVING_H
#include "hal/hal.h"

extern const struct hal_ops hal_serving_ops;

/* "connect", "timeout", ... for one enum hal_serving_fault bit; "?" otherwise. */
const char *hal_serving_fault_name(uint32_t bit);

/* One read_serving over recorded exposition texts instead of the GETs:
 * bodies[i] (lens[i] bytes) stands for the i-th endpoint (url, then
 * replica_urls in order) and n must be their number. The same parse,
 * merge, plausibility check and commit as a scrape; no confirmation read.
 * For tests and for replaying captured scrapes. 0; -EINVAL (not a serving
 * device, n wrong). */
int hal_serving_replay(struct hal_dev *dev, const char *const *bodies, const size_t *lens, size_t n,
		       struct hal_serving *out);

#endif
