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

#endif
