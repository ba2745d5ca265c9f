/* Continuous-batching LLM server (vLLM / TensorRT-LLM in-flight batching).
 * Equations, parameters and sources: docs/serving-model.md.
 *
 * Engines time-share the GPU, one per precision (FP8 where the deployment
 * loads it, INT8, BF16). The cycle is FP8 prefill, FP8 decode, INT8 prefill,
 * INT8 decode, BF16 prefill, BF16 decode; a phase with no work is skipped. A prefill phase processes at most max_prefill_tokens
 * prompt tokens: with chunked_prefill (vLLM V1) it continues the partially
 * prefilled sequence, then admits from the engine's FIFO, splitting the last
 * prompt to fill the budget; without, it admits whole prompts. The decode
 * phase that follows produces one token for every running sequence of that
 * engine whose prompt is fully prefilled, including the ones just finished. KV is reserved for prompt + output at admission
 * (TensorRT-LLM's GUARANTEED_NO_EVICT policy), so nothing is ever preempted.
 * A phase's work (FLOPs, bytes, host and link time) is fixed when it starts;
 * its duration is re-evaluated at each interval's clock and the remaining
 * share carried across interval boundaries, so latencies do not depend on
 * the tick length. */
#include "plant_models/llm_server.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Serving-model constants shared by every LLM (fitted in docs/serving-model.md). */
#define BW_EFFICIENCY 0.80   /* achievable share of peak HBM bandwidth */
#define MEM_ACTIVITY_FRAC 0.35  /* activity of a fully memory-stalled step / compute-bound */
#define COMM_ACTIVITY_FRAC 0.30 /* activity while all-reduce kernels run */
#define KV_RESERVE_FRAC 0.10    /* HBM kept free for activations, allocator slack */
#define MIN_KV_SHARE 0.20       /* BF16 weights are loaded only if this much HBM stays for KV */
#define DEFAULT_PREFILL_TOKENS 8192
/* vLLM V1 online-serving max_num_batched_tokens: 8192 on GPUs with >= 70 GiB
 * that are not A100, else 2048 (vllm/engine/arg_utils.py, _set_default_args). */
#define VLLM_BIG_GPU_B (70.0 * 1073741824.0)
#define VLLM_CHUNK_BIG 8192
#define VLLM_CHUNK_SMALL 2048

enum { ENG_FP8, ENG_INT8, ENG_BF16, ENG_N };

struct seq {
	struct request r;
	double t_last_s;   /* time of this sequence's latest token */
	uint32_t done;     /* tokens generated so far */
	uint32_t ctx_now;  /* tokens whose KV a decode step reads */
	uint32_t pf_left;  /* prompt tokens still to prefill; decodes only at 0 */
	uint32_t chunk;    /* prompt tokens prefilled by the current phase */
};

struct ring {
	struct request *v;
	uint32_t cap, head, n;
};

struct engine {
	struct ring wait;
	struct seq *run;
	uint32_t n_run;
	uint32_t n_pf;           /* run[] entries with pf_left > 0 */
	uint64_t kv_read_tokens; /* sum of ctx_now over run[] */
	uint64_t kvb;            /* KV bytes per token in this engine */
	double w_bytes, peak_flops, mfu, act;
	double lin_bw;           /* achieved bandwidth of the linear layers, relative to BF16's */
	double attn_bw;          /* achieved bandwidth of decode attention, relative to streaming */
};

struct phase {
	bool active;
	bool decode;  /* decodes the engine's prefilled sequences (with any chunks) */
	int eng;
	double prompt_tokens;          /* prefill tokens in this phase */
	double flops_lin, bytes_lin;   /* linear layers: 2 * params * tokens, weights */
	double flops_pf, bytes_pf;     /* prefill attention: ctx^2 terms, KV written */
	double flops_attn, bytes_attn; /* decode attention: ctx terms, KV read */
	double host_fixed_s; /* CPU work the GPU waits for (schedule, launch) */
	double host_var_s;   /* CPU work overlapped with the step's kernels */
	double comm_s;
	double rem;         /* share of the work still to do, 1 -> 0 */
};

struct llm_server {
	struct server_cfg cfg;
	const struct model_spec *m;
	const struct serving_stack *stk;
	const struct plant_preset *dev;
	uint64_t kv_cap_b, kv_reserved_b; /* KV cache bytes: capacity, reserved */
	uint32_t n_running, n_queued;
	bool bf16_loaded;
	struct engine eng[ENG_N];
	int pos; /* next phase in the cycle: 2*engine + (0 prefill, 1 decode) */
	struct phase ph;
	double prefill_flops; /* cumulative, finished prefill phases */
	struct server_stats st;
};

/* Per-interval load accumulators. */
struct acc {
	double busy_s, act_s, bytes, host_s;
};

/* Time of a whole phase at clock share r. The linear layers (weights) and
 * attention (KV cache) are separate kernels, each its own roofline:
 * max(mem, compute) + gpu_overlap * min(mem, compute). */
struct phase_time {
	double gpu_s, act; /* act: mean activity over the GPU-kernel part */
	double total_s;
};

static void roofline(double comp, double mem, double ov, double act_c, double *t_s,
		     double *act_s)
{
	double hi = comp > mem ? comp : mem, lo = comp > mem ? mem : comp;
	double t = hi + ov * lo;
	double u = hi > 0 ? comp / hi : 1.0;
	*t_s += t;
	*act_s += t * act_c * (MEM_ACTIVITY_FRAC + (1.0 - MEM_ACTIVITY_FRAC) * u);
}

static struct phase_time phase_time_of(const struct model_spec *m, const struct plant_preset *dev,
				       const struct engine *e, const struct phase *ph, double r)
{
	double flops_s = e->peak_flops * r * e->mfu;
	double bytes_s = dev->hbm_tbps * 1e12 * BW_EFFICIENCY * plant_bw_clock_factor(dev, r);
	double t = 0, a = 0;
	double ov = m->gpu_overlap;
	roofline(ph->flops_lin / flops_s, ph->bytes_lin / (bytes_s * e->lin_bw), ov, e->act, &t, &a);
	roofline(ph->flops_pf / flops_s, ph->bytes_pf / bytes_s, ov, e->act, &t, &a);
	roofline(ph->flops_attn / flops_s, ph->bytes_attn / (bytes_s * e->attn_bw), ov, e->act, &t, &a);
	struct phase_time pt;
	pt.gpu_s = t;
	pt.act = t > 0 ? a / t : 0.0;
	double dev_s = t + ph->comm_s;
	pt.total_s = ph->host_fixed_s + (dev_s > ph->host_var_s ? dev_s : ph->host_var_s);
	return pt;
}

static struct phase_time phase_time(const struct llm_server *s, const struct phase *ph, double r)
{
	return phase_time_of(s->m, s->dev, &s->eng[ph->eng], ph, r);
}

static void ring_push(struct ring *q, const struct request *r)
{
	assert(q->n < q->cap);
	q->v[(q->head + q->n) % q->cap] = *r;
	q->n++;
}

static const struct request *ring_head(const struct ring *q)
{
	return q->n ? &q->v[q->head] : NULL;
}

static void ring_pop(struct ring *q)
{
	assert(q->n > 0);
	q->head = (q->head + 1) % q->cap;
	q->n--;
}

static double weight_bytes(const struct model_spec *m, bool int8)
{
	return m->params_b * 1e9 * (int8 ? 1.0 : 2.0);
}

/* What low precision changes (docs/serving-model.md, "Precision"): weight
 * bytes, KV bytes where the model's 8-bit engine quantises KV, and the
 * tensor-core peak; mfu and activity are the model's per precision. The
 * FP8 engine's are the 8-bit ones: the 8-bit fit is FP8's (the published
 * measurement it rests on is FP8 weights), and Hopper's FP8 and INT8
 * tensor-core peaks are the same; what sets it apart is its own weights
 * and batch. */
static void engine_params(struct engine *e, const struct model_spec *m,
			  const struct plant_preset *dev, bool int8)
{
	uint64_t kvb16 = (uint64_t)llround(m->kv_bytes_per_token);
	e->w_bytes = weight_bytes(m, int8);
	e->kvb = int8 && m->kv_bytes_per_token_int8 > 0
			 ? (uint64_t)llround(m->kv_bytes_per_token_int8)
			 : kvb16;
	e->peak_flops = (int8 ? dev->peak_int8_tops : dev->peak_bf16_tflops) * 1e12;
	e->mfu = int8 ? m->mfu_int8 : m->mfu_bf16;
	e->act = int8 ? m->activity_int8 : m->activity_bf16;
	e->lin_bw = int8 && m->lin_bw_int8 > 0 ? m->lin_bw_int8 : 1.0;
	e->attn_bw = m->attn_bw > 0 ? m->attn_bw : 1.0;
}

int llm_server_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		      struct llm_server **out)
{
	const struct model_spec *m = cfg ? cfg->model : NULL;
	if (!cfg || !dev || !out || !m || m->kind != SERVER_LLM || !(m->params_b > 0) ||
	    !(m->kv_bytes_per_token > 0) || !(m->mfu_bf16 > 0) || !(m->mfu_int8 > 0) ||
	    !(m->gpu_overlap >= 0 && m->gpu_overlap <= 1) || m->kv_bytes_per_token_int8 < 0 ||
	    !(dev->hbm_tbps > 0) || !(dev->peak_bf16_tflops > 0) || !(dev->peak_int8_tops > 0) ||
	    dev->dvfs.max_mhz == 0 || (m->comm_bytes_per_token > 0 && !(m->comm_gbps > 0)))
		return -EINVAL;
	struct llm_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	if (!s->cfg.max_batch)
		s->cfg.max_batch = SERVER_DEFAULT_MAX_BATCH;
	if (!s->cfg.max_queue)
		s->cfg.max_queue = SERVER_DEFAULT_MAX_QUEUE;
	if (!s->cfg.max_prefill_tokens)
		s->cfg.max_prefill_tokens =
			!cfg->chunked_prefill ? DEFAULT_PREFILL_TOKENS
			: dev->hbm_gb * 1e9 >= VLLM_BIG_GPU_B && !(dev->name && strstr(dev->name, "a100"))
				? VLLM_CHUNK_BIG
				: VLLM_CHUNK_SMALL;
	s->m = m;
	s->stk = cfg->stack ? cfg->stack : serving_stack_find(m->stack);
	if (!s->stk) {
		free(s);
		return -EINVAL;
	}
	s->dev = dev;
	/* Every engine's weights stay resident (the router may pick any);
	 * where BF16's do not fit beside a useful KV cache, only the 8-bit
	 * engines are loaded and BF16 arrivals are rejected. */
	double usable_b = dev->hbm_gb * 1e9 * (1.0 - KV_RESERVE_FRAC);
	double low_b = weight_bytes(m, true) * (cfg->fp8_engine ? 2.0 : 1.0);
	double all_b = weight_bytes(m, false) + low_b;
	s->bf16_loaded = usable_b - all_b >= MIN_KV_SHARE * usable_b;
	double free_b = usable_b - (s->bf16_loaded ? all_b : low_b);
	if (free_b < m->kv_bytes_per_token) {
		free(s);
		return -EINVAL;
	}
	/* kv_capacity_tokens counts BF16 tokens. */
	uint64_t kvb16 = (uint64_t)llround(m->kv_bytes_per_token);
	s->kv_cap_b = cfg->kv_capacity_tokens ? cfg->kv_capacity_tokens * kvb16 : (uint64_t)free_b;
	for (int i = 0; i < ENG_N; i++) {
		struct engine *e = &s->eng[i];
		engine_params(e, m, dev, i != ENG_BF16);
		e->wait.cap = s->cfg.max_queue;
		e->wait.v = malloc(sizeof(*e->wait.v) * s->cfg.max_queue);
		e->run = malloc(sizeof(*e->run) * s->cfg.max_batch);
		if (!e->wait.v || !e->run)
			goto free_engines;
	}
	hist_reset(&s->st.ttft);
	hist_reset(&s->st.tbt);
	hist_reset(&s->st.e2e);
	*out = s;
	return 0;

free_engines:
	llm_server_destroy(s);
	return -ENOMEM;
}

void llm_server_destroy(struct llm_server *s)
{
	if (!s)
		return;
	for (int i = 0; i < ENG_N; i++) {
		free(s->eng[i].wait.v);
		free(s->eng[i].run);
	}
	free(s);
}

static int engine_of(const struct request *r)
{
	return !r->int8 ? ENG_BF16 : r->fp8 ? ENG_FP8 : ENG_INT8;
}

void llm_server_submit(struct llm_server *s, const struct request *r)
{
	assert(r->slice < PLANT_MAX_SLICES);
	struct request q = *r;
	if (q.gen_tokens == 0)
		q.gen_tokens = 1;
	if (q.shadow)
		s->st.shadow_arrived++;
	else
		s->st.arrived++;
	int ei = engine_of(&q);
	uint64_t kvb = s->eng[ei].kvb;
	if (s->n_queued >= s->cfg.max_queue || (!q.int8 && !s->bf16_loaded) ||
	    (ei == ENG_FP8 && !s->cfg.fp8_engine) ||
	    ((uint64_t)q.ctx_tokens + q.gen_tokens) * kvb > s->kv_cap_b) {
		if (q.shadow)
			s->st.shadow_rejected++;
		else
			s->st.rejected++;
		return;
	}
	ring_push(&s->eng[ei].wait, &q);
	s->n_queued++;
	s->st.queue_len = s->n_queued;
}

/* A shadow re-run is background work: in chunked mode it prefills at most
 * this many tokens per step, so the decodes that share its cycle wait for a
 * short step, not for a whole prompt + answer (docs/serving-model.md,
 * "Shadow evaluation's cost"). */
#define SHADOW_CHUNK_TOKENS 256

/* Prompt tokens a prefill processes (an empty prompt still runs one). */
static uint32_t prompt_tokens(const struct request *r)
{
	return r->ctx_tokens ? r->ctx_tokens : 1;
}

/* Fill this phase's prefill budget: first the partially prefilled sequences
 * (chunked mode), then admissions from the engine's FIFO of whatever has
 * arrived by t and fits. Chunked: the last prompt is split to fill the
 * budget. Whole: prompts are not split and the first is always admitted.
 * Sets run[].chunk; returns the number admitted, *n_tok the tokens. */
static uint32_t fill_prefill(struct llm_server *s, int ei, double t, uint64_t budget,
			     uint64_t *n_tok)
{
	struct engine *e = &s->eng[ei];
	const bool chunked = s->cfg.chunked_prefill;
	uint64_t tokens = 0;
	for (uint32_t i = 0; e->n_pf > 0 && i < e->n_run && tokens < budget; i++) {
		struct seq *q = &e->run[i];
		if (q->pf_left == 0)
			continue;
		q->chunk = (uint32_t)(q->pf_left < budget - tokens ? q->pf_left : budget - tokens);
		if (q->r.shadow && chunked && q->chunk > SHADOW_CHUNK_TOKENS)
			q->chunk = SHADOW_CHUNK_TOKENS;
		tokens += q->chunk;
	}
	uint32_t n = 0;
	const struct request *h;
	while ((h = ring_head(&e->wait)) && h->arrival_s <= t && s->n_running < s->cfg.max_batch &&
	       tokens < budget) {
		uint64_t need = ((uint64_t)h->ctx_tokens + h->gen_tokens) * e->kvb;
		if (s->kv_reserved_b + need > s->kv_cap_b)
			break;
		uint32_t p = prompt_tokens(h);
		if (!chunked && n > 0 && tokens + p > budget)
			break;
		struct seq *q = &e->run[e->n_run++];
		q->r = *h;
		q->done = 0;
		q->ctx_now = h->ctx_tokens;
		q->t_last_s = t;
		q->pf_left = p;
		q->chunk = chunked && p > budget - tokens ? (uint32_t)(budget - tokens) : p;
		if (h->shadow && chunked && q->chunk > SHADOW_CHUNK_TOKENS)
			q->chunk = SHADOW_CHUNK_TOKENS;
		e->n_pf++;
		s->kv_reserved_b += need;
		tokens += q->chunk;
		s->n_running++;
		s->n_queued--;
		n++;
		ring_pop(&e->wait);
	}
	*n_tok = tokens;
	return n;
}

static double comm_s(const struct model_spec *m, double tokens)
{
	double c = m->comm_ms_per_step * 1e-3;
	if (m->comm_bytes_per_token > 0)
		c += tokens * m->comm_bytes_per_token / (m->comm_gbps * 1e9);
	return c;
}

/* One iteration of an engine: the prompt chunks set by fill_prefill
 * (n_tok tokens, n_new of them newly admitted) and, if decode, one token for
 * every prefilled sequence, in one forward pass: the weights are read once
 * for all of it. A chunk of c tokens from prompt offset o attends to o + c
 * tokens: a * c * (2o + c) = a * ((o+c)^2 - o^2), so the chunks of a prompt
 * sum to the whole-prompt a * ctx^2. */
static void setup_step(struct llm_server *s, int ei, uint32_t n_new, uint64_t n_tok, bool decode)
{
	const struct model_spec *m = s->m;
	struct engine *e = &s->eng[ei];
	double attn = 0;
	uint32_t n_chunks = 0;
	for (uint32_t i = 0; n_tok > 0 && i < e->n_run; i++) {
		const struct seq *q = &e->run[i];
		if (q->chunk == 0)
			continue;
		double c = q->chunk, o = prompt_tokens(&q->r) - q->pf_left;
		attn += c * (2.0 * o + c);
		n_chunks++;
	}
	double b = decode ? e->n_run - e->n_pf : 0, k = decode ? (double)e->kv_read_tokens : 0;
	double tok = (double)n_tok + b;
	struct phase *ph = &s->ph;
	ph->active = true;
	ph->decode = decode;
	ph->eng = ei;
	ph->prompt_tokens = (double)n_tok;
	ph->flops_lin = 2.0 * m->params_b * 1e9 * tok;
	ph->bytes_lin = e->w_bytes;
	ph->flops_pf = m->attn_flops_per_ctx2 * attn;
	ph->bytes_pf = (double)e->kvb * (double)n_tok;
	ph->flops_attn = 2.0 * m->attn_flops_per_ctx2 * k;
	ph->bytes_attn = (double)e->kvb * k;
	ph->host_fixed_s = s->stk->step_ms * 1e-3;
	ph->host_var_s = (s->stk->request_ms * n_new + s->stk->seq_step_ms * (n_chunks + b)) * 1e-3;
	ph->comm_s = comm_s(m, tok);
	ph->rem = 1.0;
}

/* Start the next phase of the cycle that has work at time t; false if none. */
static bool start_phase(struct llm_server *s, double t)
{
	for (int k = 0; k < 2 * ENG_N; k++) {
		int p = (s->pos + k) % (2 * ENG_N), ei = p / 2;
		struct engine *e = &s->eng[ei];
		uint32_t b = e->n_run - e->n_pf;
		if (p % 2 == 0) {
			/* Chunked (vLLM V1): the step's token budget counts the
			 * decodes first, prompt chunks fill the rest, one pass. */
			bool mixed = s->cfg.chunked_prefill;
			uint64_t budget = s->cfg.max_prefill_tokens;
			if (mixed)
				budget = budget > b ? budget - b : 0;
			uint64_t n_tok = 0;
			uint32_t n_new = budget ? fill_prefill(s, ei, t, budget, &n_tok) : 0;
			if (n_tok == 0 && !(mixed && b > 0))
				continue;
			setup_step(s, ei, n_new, n_tok, mixed && b > 0);
		} else {
			if (s->cfg.chunked_prefill || b == 0)
				continue;
			setup_step(s, ei, 0, 0, true);
		}
		s->pos = p;
		return true;
	}
	return false;
}

static void emit_token(struct llm_server *s, const struct seq *q)
{
	if (q->r.shadow) {
		s->st.shadow_tokens++;
		return;
	}
	s->st.tokens_generated++;
	if (q->r.int8) {
		s->st.tokens_int8++;
		s->st.slice_tokens_int8[q->r.slice]++;
		s->st.tokens_fp8 += q->r.fp8;
	}
}

/* Retire run[i] (done) at t_s: stats, KV release, callback; swap-removes it. */
static void complete(struct llm_server *s, struct engine *e, uint32_t i, double t_s,
		     void (*on_done)(void *, const struct request *, double), void *ctx)
{
	struct seq q = e->run[i];
	if (q.r.shadow) {
		s->st.shadow_completed++;
	} else {
		s->st.completed++;
		s->st.slice_completed[q.r.slice]++;
		if (q.r.int8) {
			s->st.slice_int8_completed[q.r.slice]++;
			s->st.slice_fp8_completed[q.r.slice] += q.r.fp8;
		}
		hist_add(&s->st.e2e, (t_s - q.r.arrival_s) * 1e3, 1);
	}
	s->kv_reserved_b -= ((uint64_t)q.r.ctx_tokens + q.r.gen_tokens) * e->kvb;
	e->kv_read_tokens -= q.ctx_now;
	s->n_running--;
	e->run[i] = e->run[--e->n_run];
	if (on_done)
		on_done(ctx, &q.r, t_s);
}

static void finish_phase(struct llm_server *s, double t,
			 void (*on_done)(void *, const struct request *, double), void *ctx)
{
	struct phase *ph = &s->ph;
	struct engine *e = &s->eng[ph->eng];
	if (ph->prompt_tokens > 0)
		s->prefill_flops += 2.0 * s->m->params_b * 1e9 * ph->prompt_tokens + ph->flops_pf;
	/* Decoded sequences share their previous token time in groups (the
	 * previous step, this cycle's prefill): one hist_add per group.
	 * Backwards, so a swap-remove only moves an already handled entry. */
	double g_t[2] = { 0, 0 };
	uint64_t g_n[2] = { 0, 0 };
	for (uint32_t i = e->n_run; i-- > 0;) {
		struct seq *q = &e->run[i];
		if (q->chunk > 0) {
			q->pf_left -= q->chunk;
			q->chunk = 0;
			if (q->pf_left > 0)
				continue;
			/* Last chunk: the first token (TTFT). */
			e->n_pf--;
			q->done = 1;
			q->t_last_s = t;
			e->kv_read_tokens += q->ctx_now;
			if (!q->r.shadow)
				hist_add(&s->st.ttft, (t - q->r.arrival_s) * 1e3, 1);
			emit_token(s, q);
			if (q->done >= q->r.gen_tokens)
				complete(s, e, i, t, on_done, ctx);
			continue;
		}
		if (!ph->decode || q->pf_left > 0)
			continue;
		int g = g_n[0] == 0 || g_t[0] == q->t_last_s ? 0 :
			g_n[1] == 0 || g_t[1] == q->t_last_s ? 1 : -1;
		if (g < 0) {
			hist_add(&s->st.tbt, (t - g_t[1]) * 1e3, g_n[1]);
			g = 1;
			g_n[1] = 0;
		}
		g_t[g] = q->t_last_s;
		g_n[g]++;
		q->t_last_s = t;
		q->done++;
		q->ctx_now++;
		e->kv_read_tokens++;
		emit_token(s, q);
		if (q->done >= q->r.gen_tokens)
			complete(s, e, i, t, on_done, ctx);
	}
	for (int g = 0; g < 2; g++)
		hist_add(&s->st.tbt, (t - g_t[g]) * 1e3, g_n[g]);
	ph->active = false;
	s->pos = (s->pos + 1) % (2 * ENG_N);
}

/* Earliest queued arrival after t, or INFINITY. */
static double next_arrival(const struct llm_server *s)
{
	double best = INFINITY;
	for (int i = 0; i < ENG_N; i++) {
		const struct request *h = ring_head(&s->eng[i].wait);
		if (h && h->arrival_s < best)
			best = h->arrival_s;
	}
	return best;
}

static void account(struct acc *a, const struct phase *ph, const struct phase_time *pt,
		    double share, double comm_act)
{
	a->busy_s += (pt->gpu_s + ph->comm_s) * share;
	a->act_s += (pt->gpu_s * pt->act + ph->comm_s * comm_act) * share;
	a->bytes += (ph->bytes_lin + ph->bytes_pf + ph->bytes_attn) * share;
	a->host_s += (ph->host_fixed_s + ph->host_var_s) * share;
}

void llm_server_advance(struct llm_server *s, double t_s, double dt_s, uint32_t clk_mhz,
			struct device_load *load,
			void (*on_done)(void *ctx, const struct request *r, double t_done_s),
			void *ctx)
{
	struct acc a = { 0, 0, 0, 0 };
	double t = t_s, t_end = t_s + dt_s;
	double r = (double)clk_mhz / s->dev->dvfs.max_mhz;
	/* A stopped clock (device shut down) makes no progress. */
	while (clk_mhz > 0 && t < t_end) {
		if (!s->ph.active && !start_phase(s, t)) {
			double ta = next_arrival(s);
			if (!(ta < t_end))
				break;
			t = ta > t ? ta : t;
			if (!start_phase(s, t))
				break; /* head arrived but cannot run: nothing else can */
		}
		struct phase *ph = &s->ph;
		struct phase_time pt = phase_time(s, ph, r);
		double left_s = ph->rem * pt.total_s;
		double comm_act = s->eng[ph->eng].act * COMM_ACTIVITY_FRAC;
		if (t + left_s <= t_end) {
			account(&a, ph, &pt, ph->rem, comm_act);
			t += left_s;
			finish_phase(s, t, on_done, ctx);
		} else {
			double share = (t_end - t) / pt.total_s;
			account(&a, ph, &pt, share, comm_act);
			ph->rem -= share;
			t = t_end;
		}
	}
	s->st.queue_len = s->n_queued;
	s->st.running = s->n_running;
	if (load) {
		double d = dt_s > 0 ? dt_s : 1.0;
		load->busy = fmin(1.0, a.busy_s / d);
		load->activity = a.busy_s > 0 ? a.act_s / a.busy_s : 0.0;
		load->mem_tbps = a.bytes / d / 1e12;
		load->host_busy = fmin(1.0, a.host_s / d);
	}
}

const struct server_stats *llm_server_stats(const struct llm_server *s)
{
	return &s->st;
}

double llm_server_prefill_flops(const struct llm_server *s)
{
	return s->prefill_flops;
}

int llm_step_cost(const struct model_spec *m, const struct serving_stack *stk,
		  const struct plant_preset *dev, bool int8, bool prefill, uint32_t batch,
		  uint32_t context, uint32_t prompt, uint32_t clk_mhz, struct step_cost *out)
{
	if (!m || m->kind != SERVER_LLM || !dev || !out || batch == 0 || clk_mhz == 0 ||
	    (prefill && prompt == 0))
		return -EINVAL;
	if (!stk)
		stk = serving_stack_find(m->stack);
	if (!stk)
		return -EINVAL;
	struct engine e;
	memset(&e, 0, sizeof(e));
	engine_params(&e, m, dev, int8);
	struct phase ph;
	memset(&ph, 0, sizeof(ph));
	double b = batch;
	ph.host_fixed_s = stk->step_ms * 1e-3;
	if (prefill) {
		double n = b * prompt;
		ph.flops_lin = 2.0 * m->params_b * 1e9 * n;
		ph.flops_pf = m->attn_flops_per_ctx2 * (double)prompt * prompt * b;
		ph.bytes_pf = (double)e.kvb * n;
		ph.host_var_s = (stk->request_ms + stk->seq_step_ms) * b * 1e-3;
		ph.comm_s = comm_s(m, n);
		out->tokens = n;
	} else {
		double k = b * context;
		ph.flops_lin = 2.0 * m->params_b * 1e9 * b;
		ph.flops_attn = 2.0 * m->attn_flops_per_ctx2 * k;
		ph.bytes_attn = (double)e.kvb * k;
		ph.host_var_s = stk->seq_step_ms * b * 1e-3;
		ph.comm_s = comm_s(m, b);
		out->tokens = b;
	}
	ph.bytes_lin = e.w_bytes;
	double r = (double)clk_mhz / dev->dvfs.max_mhz;
	struct phase_time pt = phase_time_of(m, dev, &e, &ph, r);
	struct acc a = { 0, 0, 0, 0 };
	account(&a, &ph, &pt, 1.0, e.act * COMM_ACTIVITY_FRAC);
	out->step_s = pt.total_s;
	out->load.busy = fmin(1.0, a.busy_s / pt.total_s);
	out->load.activity = a.busy_s > 0 ? a.act_s / a.busy_s : 0.0;
	out->load.mem_tbps = a.bytes / pt.total_s / 1e12;
	out->load.host_busy = fmin(1.0, a.host_s / pt.total_s);
	return 0;
}

/* Serving stacks: per-iteration costs of the software (docs/serving-model.md). */
static const struct serving_stack stacks[] = {
	{
		.name = "vllm",
		.step_ms = 0.9,
		.seq_step_ms = 0.012,
		.request_ms = 0.3,
		.sources = "vLLM V1 (as run by the ML.ENERGY Benchmark v3): FITTED to ML.ENERGY "
			   "Llama-3.1-8B H100 step times at batch 8 and 64 (docs/serving-model.md); "
			   "the vLLM v0.6.0 performance update (blog.vllm.ai, 2024-09-05) shows CPU "
			   "work (scheduling, sampling, detokenising) idling an H100 between Llama-3 "
			   "8B steps, which V1's overlap reduces to about a millisecond",
	},
	{
		.name = "tensorrt-llm",
		.step_ms = 0.3,
		.seq_step_ms = 0.005,
		.request_ms = 0.1,
		.sources = "TensorRT-LLM in-flight batching with CUDA graphs (MLPerf Inference v4.1 "
			   "NVIDIA harness): C++ runtime, no Python in the step; assumed a third of "
			   "vLLM's fixed step cost, not fitted (docs/serving-model.md)",
	},
};
#define N_STACKS (sizeof(stacks) / sizeof(stacks[0]))

const struct serving_stack *serving_stack_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < N_STACKS; i++)
		if (strcmp(stacks[i].name, name) == 0)
			return &stacks[i];
	return NULL;
}

const char *const *serving_stack_names(void)
{
	static const char *const names[N_STACKS + 1] = { "vllm", "tensorrt-llm", NULL };
	return names;
}

/* Architecture numbers: Hugging Face config.json of each model (layers,
 * hidden, attention and KV heads); parameter counts from the model cards.
 * Serving parameters (mfu, activity, host, link): docs/serving-model.md. */
const struct model_spec llm_models[] = {
	{
		/* 32 layers, hidden 4096, 32 query / 8 KV heads of 128:
		 * KV = 2 (K,V) * 32 * 8 * 128 * 2 B = 131072 B/token. */
		.name = "llama-3.1-8b",
		.kind = SERVER_LLM,
		.params_b = 8.03,
		.kv_bytes_per_token = 131072,
		.mfu_bf16 = 0.42,
		.mfu_int8 = 0.42,
		.activity_bf16 = 0.85,
		.activity_int8 = 0.90,
		.stack = "vllm",
		.lin_bw_int8 = 0.765,
		.attn_bw = 0.55,
		.attn_flops_per_ctx2 = 2.0 * 32 * 4096,
		.gpu_overlap = 0.6,
		.sources = "meta-llama/Llama-3.1-8B config.json (num_hidden_layers 32, hidden_size 4096, "
			   "num_key_value_heads 8, head_dim 128) and model card (8.03B params)",
	},
	{
		/* Llama-2-70B: 80 layers, hidden 8192, 64 query / 8 KV heads of 128,
		 * 68.98B params. Tensor parallel 8: each GPU holds 1/8 of the weights
		 * and one KV head: 2 * 80 * 1 * 128 * 2 B = 40960 B/token. Two
		 * all-reduces per layer of hidden * 2 B per token, ring factor 2*7/8. */
		.name = "llama2-70b-tp8",
		.kind = SERVER_LLM,
		.params_b = 68.98 / 8,
		.kv_bytes_per_token = 40960,
		.mfu_bf16 = 0.60,
		.mfu_int8 = 0.60,
		.activity_bf16 = 0.85,
		.activity_int8 = 0.90,
		.stack = "tensorrt-llm",
		.attn_flops_per_ctx2 = 2.0 * 80 * 8192 / 8,
		.gpu_overlap = 0.15,
		.kv_bytes_per_token_int8 = 20480,
		.comm_ms_per_step = 1.0,
		.comm_bytes_per_token = 2.0 * 80 * 8192 * 2 * (2.0 * 7 / 8),
		.comm_gbps = 400,
		.sources = "meta-llama/Llama-2-70b-hf config.json (num_hidden_layers 80, hidden_size 8192, "
			   "num_key_value_heads 8, 64 heads of 128), Llama 2 paper (Touvron et al. 2023); "
			   "NCCL all-reduce bus bandwidth on NVLink4/NVSwitch (nccl-tests)",
	},
	{
		/* Llama-2-70B whole on one GPU (tensor parallel 1), as NVIDIA ran it
		 * on H200 in MLPerf Inference v4.1 (8-bit weights fit in 141 GB).
		 * KV = 2 * 80 * 8 * 128 * 2 B = 327680 B/token. */
		.name = "llama2-70b",
		.kind = SERVER_LLM,
		.params_b = 68.98,
		.kv_bytes_per_token = 327680,
		.mfu_bf16 = 0.60,
		.mfu_int8 = 0.60,
		.activity_bf16 = 0.85,
		.activity_int8 = 0.90,
		.stack = "tensorrt-llm",
		.attn_flops_per_ctx2 = 2.0 * 80 * 8192,
		.gpu_overlap = 0.15,
		.kv_bytes_per_token_int8 = 163840,
		.sources = "meta-llama/Llama-2-70b-hf config.json (num_hidden_layers 80, hidden_size 8192, "
			   "num_key_value_heads 8, 64 heads of 128), Llama 2 paper (Touvron et al. 2023); "
			   "mlcommons/inference_results_v4.1 closed/NVIDIA/configs/llama2-70b/Offline "
			   "(H200_SXM_141GBx8: tensor_parallelism 1, gpu_batch_size 806, use_fp8)",
	},
	{ .name = NULL },
};
