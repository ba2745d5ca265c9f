/* Request arrivals: replay of traces in the Azure LLM trace format
 * (TIMESTAMP,ContextTokens,GeneratedTokens) with time scaling and looping, or
 * a seeded generator (bursty arrivals, diurnal shape, lognormal token
 * lengths) whose defaults are fitted to the Azure code trace
 * (docs/workload-fit.md). Requests get a slice by configured fractions.
 * Deterministic for a seed. Pure model except trace_load, which reads a file. */
#ifndef GOVD_PLANT_WORKLOAD_H
#define GOVD_PLANT_WORKLOAD_H

/* Trace bounds (fsafe): a trace is a regular file of at most 256 MiB with
 * lines of at most 4 KiB (a row is under 100 bytes). */
#define TRACE_MAX_BYTES (256u * 1024u * 1024u)
#define TRACE_MAX_LINE 4096u
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/rng.h"
#include "plant_models/server.h"

struct trace_row {
	double t_s; /* seconds since the first row */
	uint32_t ctx_tokens, gen_tokens;
};

struct trace {
	char *path;
	struct trace_row *rows;
	size_t n;
	double span_s; /* last - first timestamp */
};

/* Malformed rows are errors with path:line and what was expected; all rows'
 * errors are collected (up to a cap). Returns 0 or -errno. */
int trace_load(const char *path, struct trace **out, struct diag_list *diags);
void trace_free(struct trace *t);

enum workload_kind { WORKLOAD_TRACE, WORKLOAD_GENERATOR };

struct generator_params {
	double rate_rps;          /* mean arrival rate */
	double burst_cv;          /* inter-arrival coefficient of variation (1 = Poisson) */
	double burst_on_fraction; /* burst_cv > 1: share of time the on/off source is on */
	double diurnal_amplitude; /* 0..1: rate * (1 + a*sin(2 pi t / period)) */
	double diurnal_period_s;
	double diurnal_phase_s;
	double ctx_mu, ctx_sigma; /* lognormal context tokens */
	double gen_mu, gen_sigma; /* lognormal generated tokens */
	uint32_t ctx_max, gen_max;
};

/* Defaults fitted to the Azure LLM code trace (docs/workload-fit.md). */
extern const struct generator_params generator_azure_code_fit;

struct workload_cfg {
	enum workload_kind kind;
	char trace_path[4096];    /* resolved path (WORKLOAD_TRACE) */
	double time_scale;        /* >1 compresses time (more load); 1 = as recorded */
	bool loop;                /* restart the trace at its end */
	double start_offset_s;    /* skip into the trace */
	struct generator_params gen;
	/* Generator only: when set, each request's (context, generated) token
	 * pair is drawn uniformly from this trace's rows (the public trace's
	 * joint length distribution) instead of the lognormals. */
	char lengths_path[4096];
	uint32_t n_slices;
	double slice_fraction[PLANT_MAX_SLICES]; /* sums to 1 */
};

struct workload;

/* trace: the replayed trace (WORKLOAD_TRACE), or the generator's lengths
 * (lengths_path set), else NULL. */
int workload_open(const struct workload_cfg *cfg, const struct trace *trace /* may be NULL for generator */,
		  const struct rng *parent, struct workload **out);
void workload_close(struct workload *w);
/* Next arrival in time order: 0, or 1 at the end of a non-looping trace. */
int workload_next(struct workload *w, struct request *r);
/* From now_s on, arrivals come factor times as fast (load burst); 1 restores.
 * factor > 0. If an arrival later than now_s was already handed out (the
 * plant keeps one pending), the new rate applies from that arrival on. */
void workload_set_rate_scale(struct workload *w, double now_s, double factor);

#endif
