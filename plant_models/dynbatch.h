/* Dynamic-batching server for fixed-cost requests (BERT/ResNet-like): the
 * SERVER_DYNBATCH implementation behind server.h. A batch forms when it is
 * full or its oldest request waited batch_timeout_ms; its run time is
 * compute-bound FLOPs at the current clock plus IO bytes over bandwidth. */
#ifndef GOVD_PLANT_DYNBATCH_H
#define GOVD_PLANT_DYNBATCH_H
#include "plant_models/server_types.h"

struct dynbatch;

/* Fixed-cost model specs (bert-large, resnet50); model_spec_find() searches
 * this table too. NULL-name terminated. */
extern const struct model_spec dynbatch_models[];

int dynbatch_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		    struct dynbatch **out);
void dynbatch_destroy(struct dynbatch *b);
void dynbatch_submit(struct dynbatch *b, const struct request *r);
void dynbatch_advance(struct dynbatch *b, double t_s, double dt_s, uint32_t clk_mhz,
		      struct device_load *load,
		      void (*on_done)(void *ctx, const struct request *r, double t_done_s),
		      void *ctx);
const struct server_stats *dynbatch_stats(const struct dynbatch *b);
/* server_step_cost() for SERVER_DYNBATCH models. */
int dynbatch_step_cost(const struct model_spec *m, const struct plant_preset *dev, bool int8,
		       uint32_t batch, uint32_t clk_mhz, struct step_cost *out);

#endif
