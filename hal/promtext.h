/* Prometheus text exposition format 0.0.4: parser, label matchers, histogram
 * extraction and PromQL histogram_quantile over bucket deltas.
 * Spec: https://prometheus.io/docs/instrumenting/exposition_formats/
 * Semantics and sources in docs/serving-integration.md. Pure: no I/O. */
#ifndef GOVD_HAL_PROMTEXT_H
#define GOVD_HAL_PROMTEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hist.h"

enum prom_type { PROM_UNTYPED, PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_SUMMARY };

/* What a sample line is inside its family. */
enum prom_role {
	PROM_ROLE_VALUE,    /* counter, gauge, untyped, or a summary quantile line */
	PROM_ROLE_BUCKET,   /* histogram x_bucket{le=".."} */
	PROM_ROLE_SUM,      /* histogram or summary x_sum */
	PROM_ROLE_COUNT,    /* histogram or summary x_count */
};

struct prom_label {
	const char *name;
	const char *value; /* unescaped */
};

struct prom_sample {
	const char *name;   /* as written: "x_bucket" */
	const char *family; /* family it belongs to: "x" (== name when untyped) */
	enum prom_type type;
	enum prom_role role;
	size_t n_labels;
	const struct prom_label *labels;
	double value;
	bool has_ts;
	int64_t ts_ms;
	int line;
};

struct prom_family {
	const char *name;
	enum prom_type type;
	const char *help; /* unescaped, NULL if none */
};

struct prom_arena;

struct prom_doc {
	struct prom_sample *samples;
	size_t n_samples, cap_samples;
	struct prom_family *families;
	size_t n_families, cap_families;
	struct prom_arena *arena;
};

struct prom_error {
	int line, col; /* 1-based */
	char msg[160]; /* "expected '=' after label name at 12:34" */
};

/* Parses buf[0..len) (no NUL needed). 0, -EBADMSG (syntax or truncated: err
 * filled with line:col), -ENOMEM. doc is always safe to prom_doc_free. */
int prom_parse(const char *buf, size_t len, struct prom_doc *doc, struct prom_error *err);
void prom_doc_free(struct prom_doc *doc);
const char *prom_label_get(const struct prom_sample *s, const char *name);
const struct prom_family *prom_family_find(const struct prom_doc *doc, const char *name);

/* Equality matchers "a=x,b=y" (values may be quoted: a="x,y"). */
#define PROM_MATCH_MAX 8
#define PROM_MATCH_LEN 128
struct prom_matcher {
	size_t n;
	char name[PROM_MATCH_MAX][PROM_MATCH_LEN];
	char value[PROM_MATCH_MAX][PROM_MATCH_LEN];
};
int prom_matcher_parse(const char *s, struct prom_matcher *m, char *err, size_t errlen);
bool prom_match(const struct prom_sample *s, const struct prom_matcher *m);

/* Sum over the series of `name` (exact sample name, or family with role
 * VALUE) whose labels match, plus an optional extra label equality
 * (extra_name NULL: none). -ENOENT when no series matched. */
int prom_value_sum(const struct prom_doc *doc, const char *name, const struct prom_matcher *m,
		   const char *extra_name, const char *extra_value, double *out);

/* The largest value over the matching series (a ratio gauge such as a KV
 * cache's use, where a sum means nothing); NaN if any is NaN. -ENOENT
 * when no series matched. */
int prom_value_max(const struct prom_doc *doc, const char *name, const struct prom_matcher *m,
		   double *out);

/* One histogram: cumulative counts per upper bound, ascending, last is +Inf.
 * Series that match are summed per le (PromQL sum by (le)). */
#define PROM_MAX_BUCKETS 64
struct prom_buckets {
	size_t n;
	double le[PROM_MAX_BUCKETS];
	double cum[PROM_MAX_BUCKETS];
	double count, sum;
};
/* 0; -ENOENT (family absent or nothing matched); -EBADMSG (no +Inf bucket,
 * series with different le sets); -E2BIG (more than PROM_MAX_BUCKETS). */
int prom_histogram_get(const struct prom_doc *doc, const char *family, const struct prom_matcher *m,
		       struct prom_buckets *out);
/* delta = now - prev; a decrease of any bucket or of _count, or a changed le
 * set, is a counter reset: delta = now (PromQL rate()). Returns true on reset. */
bool prom_buckets_delta(struct prom_buckets *delta, const struct prom_buckets *now,
			const struct prom_buckets *prev);
/* acc += b bucket by bucket (PromQL sum by (le) of two histograms, e.g.
 * the same family from two replicas): 0; -EDOM when the bucket bounds
 * differ (acc unchanged). An empty acc (n == 0) takes b as it is. */
int prom_buckets_merge(struct prom_buckets *acc, const struct prom_buckets *b);
/* PromQL histogram_quantile(q, b): NaN if empty or malformed. The backend
 * answers no quantiles itself; this is the reference the tests hold
 * prom_buckets_to_hist + hist_quantile (the governor's path) to. */
double prom_bucket_quantile(double q, const struct prom_buckets *b);
/* Adds the (non-cumulative) content of b to h, values scaled by unit_ms
 * (1000 for seconds): the j-th of c counts of a bucket goes where the
 * bucket's linear CDF reaches j/c, +Inf counts at the highest finite bound.
 * hist_quantile(h) then matches prom_bucket_quantile within one hist bucket
 * (2 %) at integer ranks, within one count's share of the bucket otherwise. */
void prom_buckets_to_hist(struct hist *h, const struct prom_buckets *b, double unit_ms);

/* Cumulative accumulator that survives server restarts: each update adds
 * the delta since the last raw value (the raw value itself after a reset). */
struct prom_counter {
	bool have;
	double last_raw;
	double total;
};
/* Returns true if a reset was seen. */
bool prom_counter_update(struct prom_counter *c, double raw);

#endif
