#include "common/sla.h"

#include <math.h>

#define ROW(k, lab, mk, name, m, qu, qv, mx) \
	{ .key = k, .label = lab, .metric_key = mk, .metric_name = name, .metric = m, .quantile = qu, .q = qv, .max_ms = mx }
/* In SLA_INDEX() order: metric-major, quantile-minor. */
const struct sla_row sla_rows[SLA_N_ROWS] = {
	ROW("ttft_p95_ms", "TTFT p95", "ttft", "TTFT", SLA_TTFT, SLA_P95, 0.95, 1e7),
	ROW("ttft_p99_ms", "TTFT p99", "ttft", "TTFT", SLA_TTFT, SLA_P99, 0.99, 1e7),
	ROW("tbt_p95_ms", "TBT p95", "tbt", "TBT", SLA_TBT, SLA_P95, 0.95, 1e7),
	ROW("tbt_p99_ms", "TBT p99", "tbt", "TBT", SLA_TBT, SLA_P99, 0.99, 1e7),
	ROW("e2e_p95_ms", "e2e p95", "e2e", "end-to-end", SLA_E2E, SLA_P95, 0.95, 1e8),
	ROW("e2e_p99_ms", "e2e p99", "e2e", "end-to-end", SLA_E2E, SLA_P99, 0.99, 1e8),
};
_Static_assert(SLA_N_ROWS == SLA_N_METRICS * SLA_N_QUANTILES, "one row per (metric, quantile)");

const double sla_quantile_q[SLA_N_QUANTILES] = { 0.95, 0.99 };

enum sla_verdict sla_judge(const double target_ms[SLA_N_ROWS], double min_tokens_per_s,
			   const struct sla_window_obs *o, double *worst_ratio)
{
	double ratio = 0;
	bool met = true;

	if (o->served == 0) {
		if (worst_ratio)
			*worst_ratio = o->busy ? INFINITY : 0;
		return o->busy ? SLA_MISSED : SLA_IDLE;
	}
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		double q_ms = o->quantile_ms[i];
		if (!(target_ms[i] > 0) || isnan(q_ms))
			continue;
		if (q_ms > target_ms[i])
			met = false;
		ratio = fmax(ratio, q_ms / target_ms[i]);
	}
	if (min_tokens_per_s > 0 && o->waiting && o->tokens_per_s < min_tokens_per_s)
		met = false;
	if (worst_ratio)
		*worst_ratio = ratio;
	return met ? SLA_MET : SLA_MISSED;
}

bool sla_window_overload(enum sla_verdict v, const struct sla_window_load *l)
{
	return v == SLA_MISSED && l->waited > 0 && l->waited_at_max >= l->waited - l->waited_at_max;
}
