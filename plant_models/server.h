/* Serving models, driven in virtual time by the plant:
 *  - SERVER_LLM: continuous batching (vLLM-like). Prefill is compute-bound and
 *    grows with context tokens; a decode step is mostly memory-bound (weights +
 *    KV bytes over bandwidth) plus a compute part that grows with batch, plus
 *    host time per step. Max batch and KV capacity bound admission.
 *  - SERVER_DYNBATCH: dynamic batching of fixed-cost requests (BERT/ResNet).
 * Precision is per request (INT8 or BF16); INT8 halves weight bytes and has
 * higher peak compute and a different switching activity.
 * Pure model, no I/O. docs/plant-models.md has the equations and sources. */
#ifndef GOVD_PLANT_SERVER_H
#define GOVD_PLANT_SERVER_H
#include "plant_models/server_types.h"

const struct model_spec *model_spec_find(const char *name);
/* A fixed-cost (SERVER_DYNBATCH) kernel for calibration against published
 * clock sweeps: of its t_s at the max clock on preset p, share mem_share
 * streams HBM and the rest is BF16 tensor-core work at mfu 0.5; `activity`
 * is the compute part's switching activity. */
struct model_spec model_spec_kernel(const struct plant_preset *p, double mem_share,
				    double activity, double t_s);
const char *const *model_spec_names(void);

struct server;

int server_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		  struct server **out);
void server_destroy(struct server *s);
/* Queue an arrival (r->arrival_s must not go backwards). */
void server_submit(struct server *s, const struct request *r);
/* Run from t_s for dt_s at clock clk_mhz; fills the load it put on the device.
 * Completed requests are passed to on_done (may be NULL). */
void server_advance(struct server *s, double t_s, double dt_s, uint32_t clk_mhz,
		    struct device_load *load,
		    void (*on_done)(void *ctx, const struct request *r, double t_done_s), void *ctx);
const struct server_stats *server_get_stats(const struct server *s);

/* One step of the server kind m names, in steady state (struct step_cost). */
int server_step_cost(const struct model_spec *m, const struct serving_stack *stack,
		     const struct plant_preset *dev, bool int8, bool prefill, uint32_t batch,
		     uint32_t context, uint32_t prompt, uint32_t clk_mhz, struct step_cost *out);

#endif
