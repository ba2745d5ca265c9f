/* Continuous-batching LLM server (vLLM-like): the SERVER_LLM implementation
 * behind server.h. Chunked (vLLM V1) or whole-prompt prefill, INT8 and BF16 engines time-sharing
 * the GPU, KV reserved at admission; equations in docs/serving-model.md.
 * on_done may call llm_server_submit (closed-loop clients): the new request
 * is considered from the next iteration on, within the same advance. */
#ifndef GOVD_PLANT_LLM_SERVER_H
#define GOVD_PLANT_LLM_SERVER_H
#include "plant_models/server_types.h"

struct llm_server;

/* LLM model specs; model_spec_find() searches this table too. NULL-name terminated. */
extern const struct model_spec llm_models[];

int llm_server_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		      struct llm_server **out);
void llm_server_destroy(struct llm_server *s);
void llm_server_submit(struct llm_server *s, const struct request *r);
void llm_server_advance(struct llm_server *s, double t_s, double dt_s, uint32_t clk_mhz,
			struct device_load *load,
			void (*on_done)(void *ctx, const struct request *r, double t_done_s),
			void *ctx);
const struct server_stats *llm_server_stats(const struct llm_server *s);
/* server_step_cost() for SERVER_LLM models; stk NULL: the model's stack. */
int llm_step_cost(const struct model_spec *m, const struct serving_stack *stk,
		  const struct plant_preset *dev, bool int8, bool prefill, uint32_t batch,
		  uint32_t context, uint32_t prompt, uint32_t clk_mhz, struct step_cost *out);
/* FLOPs (linear + attention) of the prefill phases finished so far. */
double llm_server_prefill_flops(const struct llm_server *s);

#endif
