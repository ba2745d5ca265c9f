/* Dynamic-batching server for fixed-cost requests (ResNet/BERT-like), as in
 * Triton's dynamic batcher or the MLPerf harness: requests queue in arrival
 * order; a batch starts when the device is free and either max_batch
 * requests have arrived or the oldest has waited batch_timeout_ms. A batch
 * takes
 *     T(f) = Tc * f_max / f + Tm + Th
 * with Tc the compute-bound time at the maximum clock (FLOPs over peak *
 * mfu for each request's precision), Tm the memory/IO time (bytes over HBM
 * bandwidth) and Th the host time. Progress is tracked as a fraction of the
 * batch so a clock change mid-batch changes the remaining time, and a batch
 * may span any number of intervals. Equations: docs/plant-models.md. */
#include "plant_models/dynbatch.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Switching activity of the memory-bound part (SMs mostly stalled on HBM);
 * assumed, see docs/plant-models.md. */
#define DYNBATCH_MEM_ACTIVITY 0.35
#define T_EPS 1e-9

/* ResNet-50 v1.5 at 224x224: 4.1 GMACs = 8.2 GFLOPs per image (He et al.,
 * CVPR 2016 table 1 gives 3.8e9 FLOPs counting multiply-adds for v1; the
 * MLPerf v1.5 variant with the stride on the 3x3 conv is ~4.1 GMACs, e.g.
 * OpenVINO Open Model Zoo resnet-50-tf lists 8.22 GFLOPs).
 * BERT-large SQuAD: 246.93 GFLOPs at sequence length 384 (OpenVINO Open Model
 * Zoo, bert-large-uncased-whole-word-masking-squad-0001: 246.93 GOps);
 * NVIDIA's MLPerf harness runs variable sequence lengths (no padding) and
 * padding is 54% of SQuAD v1.1 tokens at 384
 * (https://openreview.net/forum?id=3nzKUh9a4M), so one sample costs
 * 246.93 * 0.46 = 113.6 GFLOPs (attention's quadratic part is small at this
 * length and is scaled linearly too). */
const struct model_spec dynbatch_models[] = {
	{
		.name = "resnet50",
		.kind = SERVER_DYNBATCH,
		.params_b = 0.0256,
		.flops_per_request = 8.2e9,
		.bytes_per_request = 6.0e6,
		.mfu_bf16 = 0.50,
		.mfu_int8 = 0.45,
		.activity_bf16 = 0.72,
		.activity_int8 = 0.765,
		.host_ms_per_step = 0.10,
		.host_ms_per_request = 0.0002,
		.sources = "8.2 GFLOPs/image at 224x224 (2 x 4.1 GMACs, ResNet-50 v1.5 as in "
			   "MLPerf; OpenVINO OMZ resnet-50-tf 8.22 GFLOPs); 25.6 M parameters "
			   "(He et al. 2016); bytes, mfu, activity FITTED to MLPerf Inference v4.1 "
			   "H200 resnet50 Offline MaxP 756,960 and MaxQ(350 W) 556,234 samples/s "
			   "(docs/calibration.md)",
	},
	{
		.name = "bert-large",
		.kind = SERVER_DYNBATCH,
		.params_b = 0.336,
		.flops_per_request = 113.6e9,
		.bytes_per_request = 20.0e6,
		.mfu_bf16 = 0.85,
		.mfu_int8 = 0.47,
		.activity_bf16 = 1.00,
		.activity_int8 = 0.90,
		.host_ms_per_step = 0.10,
		.host_ms_per_request = 0.001,
		.sources = "246.93 GFLOPs at seq 384 (OpenVINO OMZ bert-large-uncased-whole-word-"
			   "masking-squad) x 0.46 non-padding share of SQuAD v1.1 at 384 "
			   "(openreview.net/forum?id=3nzKUh9a4M) = 113.6 GFLOPs/sample; 336 M "
			   "parameters (Devlin et al. 2019); INT8 = bert-99, FP16 = bert-99.9; bytes, "
			   "mfu, activity FITTED to MLPerf Inference v4.1 H200 bert-99/bert-99.9 "
			   "Offline MaxP and bert-99 MaxQ(400 W) (docs/calibration.md)",
	},
	{ .name = NULL },
};

struct dynbatch {
	struct server_cfg cfg;
	const struct model_spec *m;
	const struct plant_preset *dev;
	/* Waiting requests, a ring in arrival order. */
	struct request *q;
	size_t q_cap, q_head, q_len;
	/* The batch on the device. */
	struct request *batch;
	uint32_t n_batch;
	bool running;
	double rem;     /* share of the batch still to run, 0..1 */
	double tc_s;    /* compute-bound time at max clock */
	double tc_act;  /* activity of the compute part */
	double tm_s;    /* memory/IO time */
	double th_s;    /* host time */
	double bytes;   /* HBM traffic of the whole batch */
	double tc_int8_s, tc_bf16_s; /* per request, at max clock */
	struct server_stats st;
};

int dynbatch_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		    struct dynbatch **out)
{
	if (!cfg || !dev || !out || !cfg->model || cfg->model->kind != SERVER_DYNBATCH ||
	    !(cfg->batch_timeout_ms >= 0) ||
	    cfg->n_slices > PLANT_MAX_SLICES)
		return -EINVAL;
	const struct model_spec *m = cfg->model;
	if (!(m->flops_per_request > 0) || !(m->mfu_bf16 > 0) || !(m->mfu_int8 > 0) ||
	    !(dev->peak_bf16_tflops > 0) || !(dev->peak_int8_tops > 0) || !(dev->hbm_tbps > 0))
		return -EINVAL;
	struct dynbatch *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cfg = *cfg;
	if (b->cfg.max_batch == 0)
		b->cfg.max_batch = SERVER_DEFAULT_MAX_BATCH;
	if (b->cfg.max_queue == 0)
		b->cfg.max_queue = SERVER_DEFAULT_MAX_QUEUE;
	b->m = m;
	b->dev = dev;
	b->q_cap = b->cfg.max_batch * 2u < 64 ? 64 : b->cfg.max_batch * 2u;
	b->q = malloc(b->q_cap * sizeof(*b->q));
	if (!b->q)
		goto free_b;
	b->batch = malloc(b->cfg.max_batch * sizeof(*b->batch));
	if (!b->batch)
		goto free_q;
	b->tc_int8_s = m->flops_per_request / (dev->peak_int8_tops * 1e12 * m->mfu_int8);
	b->tc_bf16_s = m->flops_per_request / (dev->peak_bf16_tflops * 1e12 * m->mfu_bf16);
	hist_reset(&b->st.ttft);
	hist_reset(&b->st.tbt);
	hist_reset(&b->st.e2e);
	*out = b;
	return 0;

free_q:
	free(b->q);
free_b:
	free(b);
	return -ENOMEM;
}

void dynbatch_destroy(struct dynbatch *b)
{
	if (!b)
		return;
	free(b->batch);
	free(b->q);
	free(b);
}

static int queue_grow(struct dynbatch *b)
{
	size_t cap = b->q_cap * 2;
	struct request *n = malloc(cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < b->q_len; i++)
		n[i] = b->q[(b->q_head + i) % b->q_cap];
	free(b->q);
	b->q = n;
	b->q_cap = cap;
	b->q_head = 0;
	return 0;
}

static const struct request *queue_at(const struct dynbatch *b, size_t i)
{
	return &b->q[(b->q_head + i) % b->q_cap];
}

void dynbatch_submit(struct dynbatch *b, const struct request *r)
{
	if (r->shadow)
		b->st.shadow_arrived++;
	else
		b->st.arrived++;
	if (b->q_len >= b->cfg.max_queue ||
	    (b->q_len == b->q_cap && queue_grow(b) != 0)) {
		if (r->shadow)
			b->st.shadow_rejected++;
		else
			b->st.rejected++;
		return;
	}
	assert(b->q_len == 0 || r->arrival_s >= queue_at(b, b->q_len - 1)->arrival_s);
	b->q[(b->q_head + b->q_len) % b->q_cap] = *r;
	b->q_len++;
	b->st.queue_len = b->q_len;
}

/* Requests that have arrived by t (the queue is in arrival order). */
static uint32_t arrived_by(const struct dynbatch *b, double t)
{
	uint32_t n = 0;
	while (n < b->cfg.max_batch && n < b->q_len && queue_at(b, n)->arrival_s <= t + T_EPS)
		n++;
	return n;
}

static bool try_start(struct dynbatch *b, double t)
{
	uint32_t n = arrived_by(b, t);
	if (n == 0)
		return false;
	if (n < b->cfg.max_batch &&
	    t - queue_at(b, 0)->arrival_s < b->cfg.batch_timeout_ms * 1e-3 - T_EPS)
		return false;
	const struct model_spec *m = b->m;
	double tc = 0, tc_act = 0;
	for (uint32_t i = 0; i < n; i++) {
		b->batch[i] = *queue_at(b, i);
		if (b->batch[i].int8) {
			tc += b->tc_int8_s;
			tc_act += b->tc_int8_s * m->activity_int8;
		} else {
			tc += b->tc_bf16_s;
			tc_act += b->tc_bf16_s * m->activity_bf16;
		}
	}
	b->q_head = (b->q_head + n) % b->q_cap;
	b->q_len -= n;
	b->n_batch = n;
	b->running = true;
	b->rem = 1.0;
	b->tc_s = tc;
	b->tc_act = tc > 0 ? tc_act / tc : 0;
	b->bytes = m->bytes_per_request * n;
	b->tm_s = b->bytes / (b->dev->hbm_tbps * 1e12);
	b->th_s = (m->host_ms_per_step + m->host_ms_per_request * n) * 1e-3;
	b->st.queue_len = b->q_len;
	b->st.running = n;
	return true;
}

/* Earliest time >= now a batch could start from the queue as it is. */
static double next_start(const struct dynbatch *b)
{
	if (b->q_len == 0)
		return INFINITY;
	double t = queue_at(b, 0)->arrival_s + b->cfg.batch_timeout_ms * 1e-3;
	if (b->q_len >= b->cfg.max_batch) {
		double full = queue_at(b, b->cfg.max_batch - 1)->arrival_s;
		if (full < t)
			t = full;
	}
	return t;
}

static void finish_batch(struct dynbatch *b, double t_done,
			 void (*on_done)(void *ctx, const struct request *r, double t_done_s),
			 void *ctx)
{
	struct server_stats *st = &b->st;
	uint32_t i = 0;
	while (i < b->n_batch) {
		/* Requests with the same arrival share one histogram update. */
		uint32_t j = i + 1, served = !b->batch[i].shadow;
		while (j < b->n_batch && b->batch[j].arrival_s == b->batch[i].arrival_s)
			served += !b->batch[j++].shadow;
		double e2e_ms = (t_done - b->batch[i].arrival_s) * 1e3;
		hist_add(&st->ttft, e2e_ms, served);
		hist_add(&st->e2e, e2e_ms, served);
		i = j;
	}
	for (i = 0; i < b->n_batch; i++) {
		const struct request *r = &b->batch[i];
		uint64_t tok = r->gen_tokens ? r->gen_tokens : 1;
		if (r->shadow) {
			st->shadow_completed++;
			st->shadow_tokens += tok;
			continue;
		}
		st->completed++;
		st->tokens_generated += tok;
		uint32_t s = r->slice < PLANT_MAX_SLICES ? r->slice : PLANT_MAX_SLICES - 1;
		st->slice_completed[s]++;
		if (r->int8) {
			st->tokens_int8 += tok;
			st->slice_int8_completed[s]++;
			st->slice_tokens_int8[s] += tok;
			if (r->fp8) {
				st->tokens_fp8 += tok;
				st->slice_fp8_completed[s]++;
			}
		}
		if (on_done)
			on_done(ctx, r, t_done);
	}
	b->running = false;
	b->n_batch = 0;
	st->running = 0;
}

void dynbatch_advance(struct dynbatch *b, double t_s, double dt_s, uint32_t clk_mhz,
		      struct device_load *load,
		      void (*on_done)(void *ctx, const struct request *r, double t_done_s),
		      void *ctx)
{
	double t = t_s, end = t_s + dt_s;
	double busy_s = 0, act_s = 0, host_s = 0, bytes = 0;
	double fmax = (double)b->dev->dvfs.max_mhz;

	while (t < end - T_EPS) {
		if (!b->running && !try_start(b, t)) {
			double next = next_start(b);
			if (next >= end - T_EPS)
				break;
			if (next > t)
				t = next;
			if (!try_start(b, t))
				break; /* cannot happen: next_start said it could */
			continue;
		}
		if (clk_mhz == 0)
			break; /* device off: nothing progresses */
		double r = (double)clk_mhz / fmax;
		double tc = b->tc_s / r;
		double tm = b->tm_s / plant_bw_clock_factor(b->dev, r);
		double total = tc + tm + b->th_s;
		double need = b->rem * total;
		double span = need < end - t ? need : end - t;
		double frac = total > 0 ? span / total : b->rem;
		busy_s += (tc + tm) * frac;
		act_s += (tc * b->tc_act + tm * DYNBATCH_MEM_ACTIVITY) * frac;
		host_s += b->th_s * frac;
		bytes += b->bytes * frac;
		b->rem -= frac;
		t += span;
		if (span >= need || b->rem <= 1e-12)
			finish_batch(b, t, on_done, ctx);
	}

	if (load) {
		load->busy = dt_s > 0 ? busy_s / dt_s : 0;
		load->activity = busy_s > 0 ? act_s / busy_s : 0;
		load->mem_tbps = dt_s > 0 ? bytes / dt_s * 1e-12 : 0;
		load->host_busy = dt_s > 0 ? host_s / dt_s : 0;
		if (load->busy > 1)
			load->busy = 1;
		if (load->host_busy > 1)
			load->host_busy = 1;
	}
}

const struct server_stats *dynbatch_stats(const struct dynbatch *b)
{
	return &b->st;
}

int dynbatch_step_cost(const struct model_spec *m, const struct plant_preset *dev, bool int8,
		       uint32_t batch, uint32_t clk_mhz, struct step_cost *out)
{
	if (!m || m->kind != SERVER_DYNBATCH || !dev || !out || batch == 0 || clk_mhz == 0 ||
	    !(m->flops_per_request > 0))
		return -EINVAL;
	double peak = (int8 ? dev->peak_int8_tops * m->mfu_int8 : dev->peak_bf16_tflops * m->mfu_bf16);
	double r = (double)clk_mhz / dev->dvfs.max_mhz;
	double tc = batch * m->flops_per_request / (peak * 1e12) / r;
	double bytes = m->bytes_per_request * batch;
	double tm = bytes / (dev->hbm_tbps * 1e12) / plant_bw_clock_factor(dev, r);
	double th = (m->host_ms_per_step + m->host_ms_per_request * batch) * 1e-3;
	double total = tc + tm + th;
	double act = int8 ? m->activity_int8 : m->activity_bf16;
	out->step_s = total;
	out->tokens = batch;
	out->load.busy = (tc + tm) / total;
	out->load.activity = tc + tm > 0 ? (tc * act + tm * DYNBATCH_MEM_ACTIVITY) / (tc + tm) : 0;
	out->load.mem_tbps = bytes / total * 1e-12;
	out->load.host_busy = th / total;
	return 0;
}
