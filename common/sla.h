/*
 * Latency targets as rows, and the one judgement of an SLA window.
 *
 * A target is a (metric, quantile) pair: row SLA_INDEX(m, q) of every array
 * of SLA_N_ROWS (a policy's targets, a window's quantiles, an estimator's
 * quantiles). A new target is a row in sla_rows[] and nothing else.
 *
 * sla_judge() is the only place a window is judged: the sim summary, the
 * oracle (through the sim's windows), the rollback manager, the Prometheus
 * metrics and the report all call it, so they cannot disagree about what
 * "met" means.
 */
#ifndef GOVD_COMMON_SLA_H
#define GOVD_COMMON_SLA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sla_metric { SLA_TTFT, SLA_TBT, SLA_E2E, SLA_N_METRICS };
enum sla_quantile { SLA_P95, SLA_P99, SLA_N_QUANTILES };
#define SLA_N_ROWS 6 /* SLA_N_METRICS * SLA_N_QUANTILES */

struct sla_row {
	const char *key;         /* "ttft_p99_ms": the policy key, and the key in every JSON */
	const char *label;       /* "TTFT p99": for tables */
	const char *metric_key;  /* "ttft": a label value */
	const char *metric_name; /* "TTFT" */
	enum sla_metric metric;
	enum sla_quantile quantile;
	double q;      /* 0.95, 0.99 */
	double max_ms; /* the largest target a policy may set */
};
extern const struct sla_row sla_rows[SLA_N_ROWS];
extern const double sla_quantile_q[SLA_N_QUANTILES]; /* ascending: 0.95, 0.99 */

/* The row of (metric, quantile); a constant expression, for initialisers. */
#define SLA_INDEX(m, q) ((size_t)(m) * SLA_N_QUANTILES + (size_t)(q))

/* What a window showed. quantile_ms[i] is NaN when no request of that
 * metric completed (not judged); tokens_per_s is NaN when unknown. */
struct sla_window_obs {
	uint64_t served;               /* requests (or latency samples) in the window */
	bool waiting;                  /* requests queued at its close */
	bool busy;                     /* requests queued or running at its close */
	double quantile_ms[SLA_N_ROWS];
	double tokens_per_s;
};

enum sla_verdict { SLA_IDLE, SLA_MET, SLA_MISSED };

/*
 * Judges one window against target_ms[SLA_N_ROWS] (0: no target) and a
 * throughput floor (0: none). A window with nothing served is idle (not
 * counted) when nothing waits or runs, and missed when something does. A
 * quantile above its target misses (an infinite one too); a NaN one is not
 * judged. The floor binds only while requests wait: a server cannot make
 * tokens nobody asked for. *worst_ratio (may be NULL) gets the largest
 * quantile / target over the targets set: 0 when idle or none is set,
 * +inf for a busy window with nothing served.
 */
enum sla_verdict sla_judge(const double target_ms[SLA_N_ROWS], double min_tokens_per_s,
			   const struct sla_window_obs *o, double *worst_ratio);

/* A window's load against the clock it got: the requests waiting summed
 * over its periods, and of that the part in periods that ran at the most
 * clock the device could be given then (the max clock cap, or a thermal cut
 * that no other point may exceed). */
struct sla_window_load {
	uint64_t waited, waited_at_max;
};

/* A missed window that held at least half of its waiting in periods at the
 * most clock is overload: no other operating point had more clock to give
 * the requests that waited longest, so it is the load's miss, not the clock
 * choice's (docs/rollback.md). Weighted by the queue, not by periods: a
 * burst's few long-queue periods at the max outweigh the many short-queue
 * periods around it that a lower clock served. The one place this is
 * judged. */
bool sla_window_overload(enum sla_verdict v, const struct sla_window_load *l);

#endif
