/* The serving models' shared vocabulary: kinds, stacks, models, requests,
 * the server configuration, its statistics and the cost of one step. Both
 * implementations (llm_server.c, dynbatch.c) and the facade that dispatches
 * to them (server.h) include this; it includes neither. */
#ifndef GOVD_PLANT_SERVER_TYPES_H
#define GOVD_PLANT_SERVER_TYPES_H
#include <stdbool.h>
#include <stdint.h>

#include "common/hist.h"
#include "plant_models/device.h"

#define PLANT_MAX_SLICES 8
/* What a zero server_cfg.max_batch / max_queue means (both servers). */
#define SERVER_DEFAULT_MAX_BATCH 256
#define SERVER_DEFAULT_MAX_QUEUE 65536

enum server_kind { SERVER_LLM, SERVER_DYNBATCH };

/* The serving stack's own cost per iteration (docs/serving-model.md, "Serving
 * stacks"): what the GPU waits for in every step (schedule, launch, sample:
 * kernel-free time), what overlaps it (per running sequence) and per request.
 * A property of the software, not of the model. */
struct serving_stack {
	const char *name;      /* "vllm", "tensorrt-llm" */
	double step_ms;        /* per iteration, GPU idle */
	double seq_step_ms;    /* per running sequence per iteration, overlapped with kernels */
	double request_ms;     /* per admitted request (tokenise, schedule, detokenise) */
	const char *sources;
};

/* The shipped stacks (defined in llm_server.c, which owns their use). */
const struct serving_stack *serving_stack_find(const char *name);
const char *const *serving_stack_names(void);

/* A model served: LLMs by size and KV footprint, fixed-cost ones by FLOPs. */
struct model_spec {
	const char *name;            /* "llama-3.1-8b", "llama2-70b-tp8", "bert-large", "resnet50" */
	enum server_kind kind;
	double params_b;             /* parameters on this GPU, billions */
	double kv_bytes_per_token;   /* BF16 KV cache per token on this GPU */
	double flops_per_request;    /* SERVER_DYNBATCH: FLOPs of one request */
	double bytes_per_request;    /* SERVER_DYNBATCH: activations/IO bytes */
	double mfu_bf16, mfu_int8;   /* achievable share of peak compute */
	double activity_bf16, activity_int8; /* switching activity when compute-bound */
	double host_ms_per_step;     /* SERVER_DYNBATCH: CPU orchestration per batch */
	double host_ms_per_request;  /* SERVER_DYNBATCH: per request */
	const char *stack;           /* SERVER_LLM: serving stack it was measured on (default) */
	/* SERVER_LLM additions (docs/serving-model.md); 0 where not modelled. */
	double attn_flops_per_ctx2;  /* causal prefill attention FLOPs per ctx^2 (2*layers*q_width);
				      * decode reads 2x this per token of context */
	double comm_ms_per_step;     /* tensor-parallel all-reduce latency per iteration, clock-free */
	double comm_bytes_per_token; /* all-reduce traffic per token in the step, per GPU */
	double comm_gbps;            /* achieved all-reduce bus bandwidth, GB/s */
	double gpu_overlap;          /* kernel time = max(mem, compute) + gpu_overlap * min(...):
				      * 0 perfect overlap, 1 serial (fitted per deployment) */
	double kv_bytes_per_token_int8; /* INT8 engine's KV per token (8-bit KV); 0: as BF16 */
	double lin_bw_int8;          /* 8-bit linear layers' achieved HBM bandwidth relative to
				      * BF16's (scaled-GEMM kernels at small batch); 0: 1 */
	double attn_bw;              /* paged decode attention's achieved HBM bandwidth relative
				      * to streaming (per-sequence page walks); 0: 1 */
	const char *sources;
};


struct request {
	double arrival_s;
	uint32_t ctx_tokens;  /* prompt tokens */
	uint32_t gen_tokens;  /* tokens to generate (>= 1) */
	uint8_t slice;
	bool int8;            /* precision the router chose at admission: 8-bit (INT8 or FP8) */
	/* With int8: the 8-bit answer is FP8's, served by its own engine and
	 * weights (the precision ladder's first rung); without: INT8's. */
	bool fp8;
	/* Shadow evaluation's re-run of a served request in the other
	 * precision: it loads the device like any request but is nobody's
	 * answer, so no served statistic counts it (shadow_* do). */
	bool shadow;
};

struct server_cfg {
	const struct model_spec *model;
	uint32_t max_batch;        /* max running sequences / batch size (0: SERVER_DEFAULT_MAX_BATCH) */
	uint64_t kv_capacity_tokens; /* 0: derived from HBM left after weights */
	uint32_t max_queue;        /* arrivals beyond are rejected (counted)
				    * (0: SERVER_DEFAULT_MAX_QUEUE) */
	double batch_timeout_ms;   /* SERVER_DYNBATCH: wait to fill a batch */
	uint32_t n_slices;
	/* SERVER_LLM: prompt tokens prefilled per iteration (vLLM max_num_batched_tokens);
	 * 0: 8192 whole, or vLLM V1's online default when chunked (8192 on >= 70 GiB GPUs
	 * other than A100, else 2048). */
	uint32_t max_prefill_tokens;
	bool chunked_prefill;      /* SERVER_LLM: split prompts to fill the budget (vLLM V1) */
	/* SERVER_LLM: an FP8 checkpoint is loaded beside the BF16 and INT8 ones
	 * (a third engine and weight set: the precision ladder bf16 -> fp8 ->
	 * int8); false: FP8 requests are rejected. */
	bool fp8_engine;
	const struct serving_stack *stack; /* SERVER_LLM: NULL = the model's default stack */
};

struct server_stats {
	uint64_t arrived, rejected, completed;
	/* *_int8: every 8-bit answer (INT8 or FP8); *_fp8: the FP8 ones among them. */
	uint64_t tokens_generated, tokens_int8, tokens_fp8;
	uint64_t slice_completed[PLANT_MAX_SLICES];
	uint64_t slice_int8_completed[PLANT_MAX_SLICES];
	uint64_t slice_tokens_int8[PLANT_MAX_SLICES];
	uint64_t slice_fp8_completed[PLANT_MAX_SLICES];
	uint64_t queue_len, running;
	struct hist ttft, tbt, e2e;  /* cumulative, ms */
	/* Shadow re-runs (struct request.shadow): admitted, refused, done, and
	 * the tokens they put through the device. Not in the counts above. */
	uint64_t shadow_arrived, shadow_rejected, shadow_completed, shadow_tokens;
};

/* One step in steady state, as the servers above compute it: a decode
 * iteration of `batch` sequences with `context` tokens each, a prefill of
 * `batch` prompts of `prompt` tokens (whole, one iteration), or a
 * dynamic batch of `batch` requests; back to back at clk_mhz. Pure. */
struct step_cost {
	double step_s;      /* wall time of the step */
	double tokens;      /* tokens it produces (prefill: prompt tokens; dynbatch: requests) */
	struct device_load load; /* what back-to-back steps put on the device */
};

#endif
