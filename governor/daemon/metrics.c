/* Prometheus metrics: snapshot bookkeeping, text exposition, HTTP endpoint.
 * docs/metrics.md lists every family. */
#include "governor/daemon/metrics.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hist.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "governor/daemon/connguard.h"
#include "governor/policy/policy.h"

const double metrics_tick_bounds_s[METRICS_TICK_BUCKETS] = {
	25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3,
};
/* Request latency buckets: dense where the SLA targets sit (TBT tens of
 * ms, TTFT p99 0.5-2 s), so histogram_quantile lands near the target. */
const double metrics_lat_bounds_s[METRICS_LAT_BUCKETS] = {
	0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 1, 2, 5, 10, 30, 60,
};
static const char *const lat_bounds_le[METRICS_LAT_BUCKETS] = {
	"0.005", "0.01", "0.02", "0.03", "0.05", "0.075", "0.1", "0.2",
	"0.3",   "0.5",  "1",    "2",    "5",    "10",    "30",  "60",
};
static const char *const lat_kinds[METRICS_LAT_KINDS] = { "ttft", "tbt", "e2e" };
/* The same bounds as written in the le label (exact decimal, no exponent). */
/* The snapshot up to its last device in use: copying all 64 device slots
 * every period (84 KB) was a tenth of a one-device govd's CPU. */
static size_t metrics_snapshot_size(const struct metrics_snapshot *s)
{
	size_t n = s->n_devices < METRICS_MAX_DEVICES ? s->n_devices : METRICS_MAX_DEVICES;
	return offsetof(struct metrics_snapshot, dev) + n * sizeof(s->dev[0]);
}

static const char *const tick_bounds_le[METRICS_TICK_BUCKETS] = {
	"0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001",
	"0.0025",   "0.005",   "0.01",   "0.025",   "0.05",   "0.1",
};

static const char *const rail_names[HAL_RAIL_N] = { "accel", "memory", "host" };
static const char *const sensor_names[HAL_TEMP_N] = { "junction", "memory", "inlet" };

/* ---- snapshot bookkeeping ---------------------------------------------- */

static void device_init(struct metrics_device *d, const char *name)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->clk_min_hz = d->clk_max_hz = d->power_limit_w = d->clk_hz = NAN;
	for (int r = 0; r < HAL_RAIL_N; r++)
		d->power_w[r] = NAN;
	for (int t = 0; t < HAL_TEMP_N; t++)
		d->temp_c[t] = NAN;
	d->headroom_c = d->headroom_trend_c_per_s = NAN;
	d->tokens_per_s = d->tokens_per_joule = d->int8_token_share = NAN;
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		d->latency_s[i] = NAN;
	d->binding = GOV_B_NONE;
}

void metrics_snapshot_init(struct metrics_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->node_budget_w = NAN;
	if (gethostname(s->hostname, sizeof(s->hostname)))
		s->hostname[0] = '\0';
	s->hostname[sizeof(s->hostname) - 1] = '\0';
}

int metrics_add_device(struct metrics_snapshot *s, const char *name)
{
	if (s->n_devices >= METRICS_MAX_DEVICES)
		return -ENOSPC;
	device_init(&s->dev[s->n_devices], name);
	return (int)s->n_devices++;
}

void metrics_device_set_policy(struct metrics_device *d, const struct policy *pol)
{
	snprintf(d->policy_name, sizeof(d->policy_name), "%s", pol ? pol->name : "");
	snprintf(d->policy_hash, sizeof(d->policy_hash), "%s", pol ? pol->hash_hex : "");
}

void metrics_device_set_identity(struct metrics_device *d, const struct hal_limits *lim)
{
	snprintf(d->model, sizeof(d->model), "%s", lim->model);
	snprintf(d->uuid, sizeof(d->uuid), "%s", lim->uuid);
	snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%s", lim->pci_bus_id);
	d->have_index = lim->have_index;
	d->index = lim->index;
	snprintf(d->mig_uuid, sizeof(d->mig_uuid), "%s", lim->mig_uuid);
	d->gi_id[0] = '\0';
	if (lim->mig_uuid[0])
		snprintf(d->gi_id, sizeof(d->gi_id), "%d", (int)lim->mig_gi_id);
	d->mig_enabled = lim->mig_enabled;
}

/* The server's cumulative histogram summed to the exported bounds. A hist
 * bucket counts under a bound when its upper edge is at or below it (the
 * 2 %-wide buckets straddling a bound count one bound up). */
static void lat_le(const struct hist *h, uint64_t le[METRICS_LAT_BUCKETS])
{
	int b = 0;
	uint64_t cum = 0;
	memset(le, 0, METRICS_LAT_BUCKETS * sizeof(le[0]));
	for (int i = 0; i < HIST_NBUCKETS; i++) {
		if (!h->count[i])
			continue;
		double up_s = hist_bucket_upper_ms(i) / 1000.0;
		while (b < METRICS_LAT_BUCKETS && up_s > metrics_lat_bounds_s[b] * (1 + 1e-12))
			le[b++] = cum;
		if (b == METRICS_LAT_BUCKETS)
			return;
		cum += h->count[i];
	}
	for (; b < METRICS_LAT_BUCKETS; b++)
		le[b] = cum;
}

/* Adds what the server's histograms gained since the last read; a total
 * that went down is a server restart (everything it has now is new). */
static void lat_update(struct metrics_device *d, const struct hal_serving *sv)
{
	struct metrics_dev_acc *a = &d->acc;
	const struct hist *h[METRICS_LAT_KINDS] = { sv->ttft, sv->tbt, sv->e2e };
	if (!sv->valid)
		return;
	for (int k = 0; k < METRICS_LAT_KINDS; k++)
		if (!h[k])
			return;
	for (int k = 0; k < METRICS_LAT_KINDS; k++) {
		uint64_t le[METRICS_LAT_BUCKETS];
		struct metrics_lat_hist *o = &d->lat[k];
		lat_le(h[k], le);
		bool reset = !a->have_lat || h[k]->n < a->prev_lat_n[k];
		if (a->have_lat) {
			for (int b = 0; b < METRICS_LAT_BUCKETS; b++)
				o->le[b] += reset ? le[b]
						  : le[b] >= a->prev_lat_le[k][b] ? le[b] - a->prev_lat_le[k][b] : 0;
			o->count += reset ? h[k]->n : h[k]->n - a->prev_lat_n[k];
			double ds = reset ? h[k]->sum_ms : h[k]->sum_ms - a->prev_lat_sum_ms[k];
			o->sum_s += ds > 0 ? ds / 1000.0 : 0;
		}
		memcpy(a->prev_lat_le[k], le, sizeof(le));
		a->prev_lat_n[k] = h[k]->n;
		a->prev_lat_sum_ms[k] = h[k]->sum_ms;
	}
	a->have_lat = true;
}

void metrics_observe_tick(struct metrics_snapshot *s, double tick_s)
{
	if (!(tick_s >= 0))
		return;
	for (int i = 0; i < METRICS_TICK_BUCKETS; i++) {
		if (tick_s <= metrics_tick_bounds_s[i]) {
			s->tick.bucket[i]++;
			break;
		}
	}
	s->tick.count++;
	s->tick.sum_s += tick_s;
}

/* A cumulative source counter into our own: a decrease to a nonzero value
 * is a reset (the new value is all new); a drop to zero is a failed read
 * (memset sample) and is skipped, so the next good read does not count
 * everything twice. */
static uint64_t counter_delta(bool *have, uint64_t *prev, uint64_t now)
{
	uint64_t d = 0;
	if (now == 0 && *have && *prev > 0)
		return 0;
	if (*have)
		d = now >= *prev ? now - *prev : now;
	*have = true;
	*prev = now;
	return d;
}

/* One SLA window, judged by sla_judge() (as govctl sim judges it) on the
 * estimator's window quantiles; serving unknown: not judged. */
static void sla_window(struct metrics_device *d, const struct policy *pol,
		       const struct gov_estimates *e)
{
	if (!e->serving_ok)
		return;
	struct sla_window_obs o = estimate_sla_obs(e);
	enum sla_verdict v = sla_judge(pol->sla.latency_ms, pol->sla.min_tokens_per_s, &o, NULL);
	if (v == SLA_IDLE)
		return;
	d->sla_windows++;
	d->sla_windows_met += v == SLA_MET;
}

static double khz_to_hz(uint32_t khz)
{
	return (double)khz * 1000.0;
}

/* The clock and power-limit gauges of an operating point. */
static void set_point(struct metrics_device *d, const struct hal_limits *lim,
		      const struct gov_opoint *op)
{
	d->clk_locked = op->clk_locked;
	if (op->clk_locked) {
		d->clk_min_hz = khz_to_hz(op->clk_min_khz);
		d->clk_max_hz = khz_to_hz(op->clk_max_khz);
	} else if (lim) {
		d->clk_min_hz = khz_to_hz(lim->clk_min_khz);
		d->clk_max_hz = khz_to_hz(lim->clk_default_max_khz ? lim->clk_default_max_khz
								    : lim->clk_max_khz);
	} else {
		d->clk_min_hz = d->clk_max_hz = NAN;
	}
	d->power_limit_w = op->power_limit_mw / 1000.0;
}

void metrics_device_update_from(struct metrics_device *d, const struct hal_limits *lim,
				const struct policy *pol, const struct gov_period *p,
				uint32_t fired_triggers)
{
	struct metrics_dev_acc *a = &d->acc;
	const struct gov_opoint *op = p->rec.after;
	const struct gov_estimates *e = p->rec.est;
	double dt_s = a->started && p->rec.t_ms > a->prev_t_ms ? (double)(p->rec.t_ms - a->prev_t_ms) / 1000.0
							    : 0;

	d->periods++;
	set_point(d, lim, op);
	d->n_slices = op->n_slices < HAL_MAX_SLICES ? op->n_slices : HAL_MAX_SLICES;
	for (size_t s = 0; s < d->n_slices; s++) {
		d->int8_share[s] = op->int8_frac[s];
		d->fp8_rung[s] = op->low_mode[s] == HAL_LOW_FP8;
	}
	d->binding = p->rec.binding;
	d->outside_envelope = p->rec.envelope != NULL;

	d->clk_hz = e->clk_mhz * 1e6;
	for (int r = 0; r < HAL_RAIL_N; r++)
		d->power_w[r] = e->power_w[r];
	for (int t = 0; t < HAL_TEMP_N; t++)
		d->temp_c[t] = e->temp_c[t];
	d->headroom_c = e->headroom_c;
	d->headroom_trend_c_per_s = e->headroom_trend_c_per_s;

	d->serving_up = e->serving_ok;
	/* Quantiles of an empty window are unknown, not zero. */
	bool have_q = e->serving_ok && e->window_requests > 0;
	if (e->serving_ok) {
		d->tokens_per_s = e->tokens_per_s;
		d->tokens_per_joule =
			e->power_total_w > 0 ? e->tokens_per_s / e->power_total_w : NAN;
		d->int8_token_share = e->int8_token_share;
		d->queue_len = e->queue_len;
		d->running = e->running;
	} else {
		d->tokens_per_s = d->tokens_per_joule = d->int8_token_share = NAN;
	}
	if (have_q) {
		for (size_t i = 0; i < SLA_N_ROWS; i++)
			d->latency_s[i] = e->quantile_ms[i] / 1000.0;
	} else {
		for (size_t i = 0; i < SLA_N_ROWS; i++)
			d->latency_s[i] = NAN;
	}
	if (p->serving)
		lat_update(d, p->serving);
	if (pol)
		metrics_device_set_policy(d, pol);
	if (lim && !a->started)
		metrics_device_set_identity(d, lim);
	if (p->serving)
		d->tokens_total +=
			counter_delta(&a->have_tokens, &a->prev_tokens, p->serving->tokens_generated);

	/* Energy: the rail's counter where it is offered and sound, else the
	 * filtered power over the period. After a counter gap the next good
	 * reading only re-bases (the gap was integrated from power). */
	for (int r = 0; r < HAL_RAIL_N; r++) {
		const struct hal_value *ev = &p->sample->energy_mj[r];
		bool good = ev->valid && !ev->nan && p->rec.faults[GOV_SIG_ENERGY_ACCEL + r] == GOV_FAULT_NONE;
		if (good) {
			double mj = (double)ev->v;
			if (a->have_energy[r] && mj >= a->prev_energy_mj[r])
				d->energy_j[r] += (mj - a->prev_energy_mj[r]) / 1000.0;
			a->have_energy[r] = true;
			a->prev_energy_mj[r] = mj;
		} else {
			a->have_energy[r] = false;
			if (isfinite(e->power_w[r]) && e->power_w[r] > 0)
				d->energy_j[r] += e->power_w[r] * dt_s;
		}
	}

	d->clamp_events += counter_delta(&a->have_clamp, &a->prev_clamp_events, p->sample->clamp_events);
	d->clamp_s += (double)counter_delta(&a->have_clamp_time, &a->prev_clamp_time_ms,
					    p->sample->clamp_time_ms) / 1000.0;

	for (int i = 0; i < GOV_R_COUNT; i++)
		if (p->rec.reasons & (1u << i))
			d->decisions[i]++;
	for (int i = 0; i < GOV_T_COUNT; i++)
		if (fired_triggers & (1u << i))
			d->rollbacks[i]++;
	if ((p->rec.reasons & GOV_R_ROLLBACK) && !(fired_triggers & ((1u << GOV_T_COUNT) - 1)))
		d->rollbacks_unattributed++;
	if (p->rec.reasons & GOV_R_ACTUATE_ERROR)
		d->actuate_errors++;
	for (size_t s = 0; s < d->n_slices; s++) {
		d->gate_open[s] = e->q_gate_open[s];
		d->fp8_gate_open[s] = e->q_gate_open[est_q_row(s, HAL_LOW_FP8)];
		if (a->started && a->prev_gate_open[s] && !e->q_gate_open[s])
			d->gate_closures[s]++;
		a->prev_gate_open[s] = e->q_gate_open[s];
	}
	for (int s = 0; s < GOV_SIG_N; s++) {
		if (p->rec.faults[s] != GOV_FAULT_NONE && a->prev_fault[s] == GOV_FAULT_NONE)
			d->telemetry_faults[s]++;
		a->prev_fault[s] = p->rec.faults[s];
	}

	if (pol && pol->sla.window_s > 0) {
		uint64_t win_ms = (uint64_t)llround(pol->sla.window_s * 1000.0);
		if (!a->started) {
			a->win_start_ms = p->rec.t_ms;
		} else if (p->rec.t_ms >= a->win_start_ms + win_ms) {
			sla_window(d, pol, e);
			a->win_start_ms = p->rec.t_ms;
		}
	}
	a->prev_t_ms = p->rec.t_ms;
	a->started = true;
}

void metrics_device_update(struct metrics_device *d, const struct governor *g,
			   const struct gov_period *p, uint32_t fired_triggers)
{
	const char(*names)[HAL_NAME_LEN];
	size_t n = governor_slices(g, &names);
	for (size_t s = 0; s < n && s < HAL_MAX_SLICES; s++)
		snprintf(d->slice_name[s], sizeof(d->slice_name[s]), "%s", names[s]);
	metrics_device_update_from(d, governor_limits(g), governor_policy(g), p, fired_triggers);
	d->oob_changes = p->counters.oob_changes;
	/* A dry run wrote nothing: the gauges show what the device runs, the
	 * decision goes to the would-set ones. */
	struct gov_opoint in_force;
	if (governor_in_force(g, &in_force)) {
		d->would_clk_locked = d->clk_locked;
		d->would_clk_max_hz = d->clk_max_hz;
		d->would_power_limit_w = d->power_limit_w;
		set_point(d, governor_limits(g), &in_force);
	}
}

/* ---- text exposition ---------------------------------------------------- */

bool metrics_escape_label(const char *in, char *buf, size_t len)
{
	size_t o = 0;
	if (!len)
		return false;
	for (; *in; in++) {
		const char *rep = NULL;
		char one[2] = { *in, 0 };
		switch (*in) {
		case '\\': rep = "\\\\"; break;
		case '"': rep = "\\\""; break;
		case '\n': rep = "\\n"; break;
		default: rep = one;
		}
		size_t n = strlen(rep);
		if (o + n >= len) {
			buf[o] = '\0';
			return false;
		}
		memcpy(buf + o, rep, n);
		o += n;
	}
	buf[o] = '\0';
	return true;
}

/* A label value: escaped, truncated escapes dropped whole. */
#define LABEL_LEN (2 * HAL_NAME_LEN + 8)

static void fmt_value(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else
		snprintf(buf, len, "%.15g", v);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample; labels is "" or 'a="x",b="y"'. NaN gauges are left out:
 * absent means unknown. */
static void sample(FILE *f, const char *name, const char *labels, double v)
{
	char num[40];
	if (isnan(v))
		return;
	fmt_value(num, sizeof(num), v);
	if (labels[0])
		fprintf(f, "%s{%s} %s\n", name, labels, num);
	else
		fprintf(f, "%s %s\n", name, num);
}

static void sample_u64(FILE *f, const char *name, const char *labels, uint64_t v)
{
	if (labels[0])
		fprintf(f, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
	else
		fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* One sample with the device label and one more label (value escaped). */
static void sample2(FILE *f, const char *name, const char *dev, const char *key, const char *val,
		    double v)
{
	char num[40];
	if (isnan(v))
		return;
	fmt_value(num, sizeof(num), v);
	fprintf(f, "%s{%s,%s=\"%s\"} %s\n", name, dev, key, val, num);
}

static void sample2_u64(FILE *f, const char *name, const char *dev, const char *key,
			const char *val, uint64_t v)
{
	fprintf(f, "%s{%s,%s=\"%s\"} %llu\n", name, dev, key, val, (unsigned long long)v);
}

struct devlab {
	char dev[LABEL_LEN + 16];
};

static void dev_label(const struct metrics_device *d, struct devlab *l)
{
	char esc[LABEL_LEN];
	metrics_escape_label(d->name, esc, sizeof(esc));
	snprintf(l->dev, sizeof(l->dev), "device=\"%s\"", esc);
}

/* Per-device gauge family: one line per device. */
#define DEV_GAUGE(NAME, HELP, FIELD)                                                    \
	do {                                                                            \
		family(f, NAME, "gauge", HELP);                                         \
		for (size_t i = 0; i < n; i++)                                         \
			sample(f, NAME, lab[i].dev, s->dev[i].FIELD);                   \
	} while (0)
#define DEV_COUNTER(NAME, HELP, FIELD)                                                  \
	do {                                                                            \
		family(f, NAME, "counter", HELP);                                       \
		for (size_t i = 0; i < n; i++)                                         \
			sample_u64(f, NAME, lab[i].dev, s->dev[i].FIELD);               \
	} while (0)

static void render_latency(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab,
			   bool p99)
{
	const char *name = p99 ? "govd_window_latency_p99_seconds" : "govd_window_latency_p95_seconds";
	family(f, name, "gauge",
	       p99 ? "99th percentile latency over the SLA window (kind: ttft, tbt, e2e)."
		   : "95th percentile latency over the SLA window (kind: ttft, tbt, e2e).");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct metrics_device *d = &s->dev[i];
		for (int m = 0; m < SLA_N_METRICS; m++) {
			size_t r = SLA_INDEX(m, p99 ? SLA_P99 : SLA_P95);
			sample2(f, name, lab[i].dev, "kind", sla_rows[r].metric_key, d->latency_s[r]);
		}
	}
}

/* Writes ',key="escaped value"' when the value is known (non-empty). */
static void put_label(FILE *f, const char *key, const char *val)
{
	char esc[LABEL_LEN];
	if (!val[0])
		return;
	metrics_escape_label(val, esc, sizeof(esc));
	fprintf(f, ",%s=\"%s\"", key, esc);
}

/* govd_policy_info per device (two devices on two policies: two series) and
 * govd_device_info with dcgm-exporter's label names for the same GPU, so
 * `on(UUID)` joins the two exporters' series. */
static void render_info(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	family(f, "govd_policy_info", "gauge", "Policy each device runs (value 1).");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct metrics_device *d = &s->dev[i];
		if (!d->policy_name[0] && !d->policy_hash[0])
			continue;
		fprintf(f, "govd_policy_info{%s", lab[i].dev);
		put_label(f, "policy", d->policy_name);
		put_label(f, "hash", d->policy_hash);
		fputs("} 1\n", f);
	}
	family(f, "govd_device_info", "gauge",
	       "Device identity with dcgm-exporter's labels (gpu, UUID, pci_bus_id, modelName, "
	       "Hostname; a MIG instance: UUID its parent's, GPU_I_ID, mig_uuid its own; mig: "
	       "enabled on a GPU in MIG mode); value 1.");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct metrics_device *d = &s->dev[i];
		char idx[16] = "";
		if (d->have_index)
			snprintf(idx, sizeof(idx), "%u", d->index);
		fprintf(f, "govd_device_info{%s", lab[i].dev);
		put_label(f, "gpu", idx);
		put_label(f, "UUID", d->uuid);
		put_label(f, "pci_bus_id", d->pci_bus_id);
		put_label(f, "modelName", d->model);
		put_label(f, "Hostname", s->hostname);
		if (d->gi_id[0]) {
			put_label(f, "GPU_I_ID", d->gi_id);
			put_label(f, "mig_uuid", d->mig_uuid);
		}
		if (d->mig_enabled)
			put_label(f, "mig", "enabled");
		fputs("} 1\n", f);
	}
}

static void render_lat_hist(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	const char *name = "govd_request_latency_seconds";
	family(f, name, "histogram",
	       "Request latency since govd started, from the server's histograms (kind: ttft, tbt, "
	       "e2e); aggregate with histogram_quantile.");
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct metrics_device *d = &s->dev[i];
		for (int k = 0; k < METRICS_LAT_KINDS; k++) {
			const struct metrics_lat_hist *h = &d->lat[k];
			char num[40];
			for (int b = 0; b < METRICS_LAT_BUCKETS; b++)
				fprintf(f, "%s_bucket{%s,kind=\"%s\",le=\"%s\"} %llu\n", name, lab[i].dev,
					lat_kinds[k], lat_bounds_le[b], (unsigned long long)h->le[b]);
			fprintf(f, "%s_bucket{%s,kind=\"%s\",le=\"+Inf\"} %llu\n", name, lab[i].dev,
				lat_kinds[k], (unsigned long long)h->count);
			fmt_value(num, sizeof(num), h->sum_s);
			fprintf(f, "%s_sum{%s,kind=\"%s\"} %s\n", name, lab[i].dev, lat_kinds[k], num);
			fprintf(f, "%s_count{%s,kind=\"%s\"} %llu\n", name, lab[i].dev, lat_kinds[k],
				(unsigned long long)h->count);
		}
	}
}

enum slice_field { SF_INT8_SHARE, SF_GATE_OPEN, SF_GATE_CLOSURES, SF_FP8_RUNG, SF_FP8_GATE_OPEN };

static double slice_value(const struct metrics_device *d, size_t k, enum slice_field fld)
{
	switch (fld) {
	case SF_INT8_SHARE: return d->int8_share[k];
	case SF_GATE_OPEN: return d->gate_open[k];
	case SF_FP8_RUNG: return d->fp8_rung[k];
	case SF_FP8_GATE_OPEN: return d->fp8_gate_open[k];
	default: return (double)d->gate_closures[k];
	}
}

/* A per-slice family (label slice: its name, else its index). */
static void render_slices(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab,
			  const char *name, const char *type, const char *help, enum slice_field fld)
{
	family(f, name, type, help);
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct metrics_device *d = &s->dev[i];
		for (size_t k = 0; k < d->n_slices; k++) {
			char es[LABEL_LEN], fallback[16];
			const char *nm = d->slice_name[k];
			if (!nm[0]) {
				snprintf(fallback, sizeof(fallback), "%zu", k);
				nm = fallback;
			}
			metrics_escape_label(nm, es, sizeof(es));
			sample2(f, name, lab[i].dev, "slice", es, slice_value(d, k, fld));
		}
	}
}

/* The node and the loop: build, budgets, the fleet, hold, dry run, ticks. */
static void render_node(FILE *f, const struct metrics_snapshot *s)
{
	char l[2 * LABEL_LEN + 64];
	/* Node and loop. */
	family(f, "govd_build_info", "gauge", "Build of the running govd (value 1).");
	sample(f, "govd_build_info", "version=\"" GOVD_VERSION "\"", 1);
	family(f, "govd_node_power_budget_watts", "gauge",
	       "Node power budget shared among the devices (absent: none).");
	sample(f, "govd_node_power_budget_watts", "", s->node_budget_w);
	/* ---- fleet (docs/fleet.md) ---- */
	if (s->fleet.enabled) {
		static const char *const modes[] = { "no_grant", "granted", "safe" };
		family(f, "govd_fleet_grant_watts", "gauge",
		       "Last grant from the fleet allocator (absent: none received).");
		sample(f, "govd_fleet_grant_watts", "", s->fleet.grant_w);
		family(f, "govd_fleet_budget_watts", "gauge",
		       "Node budget the fleet agent enforces (the grant, or the safe budget).");
		sample(f, "govd_fleet_budget_watts", "", s->fleet.budget_w);
		family(f, "govd_fleet_draw_watts", "gauge", "Node draw reported to the fleet.");
		sample(f, "govd_fleet_draw_watts", "", s->fleet.draw_w);
		family(f, "govd_fleet_mode", "gauge", "1 for the agent's mode (safe: fallback).");
		for (int m = 0; m < 3; m++) {
			snprintf(l, sizeof(l), "mode=\"%s\"", modes[m]);
			sample(f, "govd_fleet_mode", l, s->fleet.mode == m);
		}
		family(f, "govd_fleet_fallbacks_total", "counter",
		       "Times the node fell back to its safe budget.");
		sample_u64(f, "govd_fleet_fallbacks_total", "", s->fleet.fallbacks);
		family(f, "govd_fleet_allocator", "gauge", "1 while this node is the group's allocator.");
		sample(f, "govd_fleet_allocator", "", s->fleet.allocating);
		family(f, "govd_fleet_etcd_up", "gauge", "1 when the last etcd request succeeded.");
		sample(f, "govd_fleet_etcd_up", "", s->fleet.etcd_ok);
	}
	/* ---- end fleet ---- */
	family(f, "govd_hold", "gauge", "1 while an operator holds the operating points (govctl hold).");
	sample(f, "govd_hold", "", s->held);
	family(f, "govd_dry_run", "gauge", "1 in observe mode: decisions are logged, not actuated.");
	sample(f, "govd_dry_run", "", s->dry_run);
	family(f, "govd_loop_overruns_total", "counter",
	       "Control periods that started late because the previous one overran.");
	sample_u64(f, "govd_loop_overruns_total", "", s->loop_overruns);
	family(f, "govd_tick_duration_seconds", "histogram",
	       "Time from sample to actuate of one control period, all devices.");
	uint64_t cum = 0;
	for (int b = 0; b < METRICS_TICK_BUCKETS; b++) {
		cum += s->tick.bucket[b];
		snprintf(l, sizeof(l), "le=\"%s\"", tick_bounds_le[b]);
		sample_u64(f, "govd_tick_duration_seconds_bucket", l, cum);
	}
	sample_u64(f, "govd_tick_duration_seconds_bucket", "le=\"+Inf\"", s->tick.count);
	sample(f, "govd_tick_duration_seconds_sum", "", s->tick.sum_s);
	sample_u64(f, "govd_tick_duration_seconds_count", "", s->tick.count);
}

/* Per device: the operating point in force (and a dry run's would-set). */
static void render_point(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	size_t n = s->n_devices;
	/* Per device: operating point. */
	DEV_COUNTER("govd_periods_total", "Control periods run.", periods);
	DEV_GAUGE("govd_clock_locked", "1 when the governor locks the clock range, 0 at firmware default.",
		  clk_locked);
	DEV_GAUGE("govd_clock_min_hertz", "Lower end of the clock range in force.", clk_min_hz);
	DEV_GAUGE("govd_clock_max_hertz", "Upper end of the clock range in force.", clk_max_hz);
	DEV_GAUGE("govd_power_limit_watts", "Device power limit in force.", power_limit_w);
	render_slices(f, s, lab, "govd_int8_share_ratio", "gauge",
		      "INT8 share of requests set per slice (0..1).", SF_INT8_SHARE);
	render_slices(f, s, lab, "govd_quality_gate_open", "gauge",
		      "1 while the slice's INT8 quality gate is open (enough evidence, drop within bound).",
		      SF_GATE_OPEN);
	render_slices(f, s, lab, "govd_quality_gate_closures_total", "counter",
		      "Times the slice's INT8 quality gate closed (open -> closed).", SF_GATE_CLOSURES);
	render_slices(f, s, lab, "govd_fp8_rung", "gauge",
		      "1 while the slice's 8-bit share is served in FP8 (the precision ladder), 0: INT8.",
		      SF_FP8_RUNG);
	render_slices(f, s, lab, "govd_quality_fp8_gate_open", "gauge",
		      "1 while the slice's FP8 quality gate is open (a ladder policy, FP8 evaluated).",
		      SF_FP8_GATE_OPEN);
	if (s->dry_run) {
		DEV_GAUGE("govd_dry_run_would_clock_locked",
			  "Dry run: 1 where govd would lock the clock (govd_clock_locked is what is in force).",
			  would_clk_locked);
		DEV_GAUGE("govd_dry_run_would_clock_max_hertz",
			  "Dry run: the top of the clock range govd would set.", would_clk_max_hz);
		DEV_GAUGE("govd_dry_run_would_power_limit_watts",
			  "Dry run: the power limit govd would set.", would_power_limit_w);
	}
	DEV_GAUGE("govd_outside_envelope",
		  "1 while the device is outside its policy's envelope (driver, firmware, inlet, limits): "
		  "the governor holds the safe point, not the policy.",
		  outside_envelope);
	family(f, "govd_binding", "gauge",
	       "Constraint that set this period's operating point (1 for the binding one).");
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < GOV_B_N; b++) {
			sample2(f, "govd_binding", lab[i].dev, "binding", gov_binding_name((enum gov_binding)b),
			      s->dev[i].binding == (enum gov_binding)b);
		}
}

/* Per device: what the sensors measured. */
static void render_measured(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	size_t n = s->n_devices;
	/* Measurements. */
	DEV_GAUGE("govd_clock_hertz", "Measured effective clock.", clk_hz);
	family(f, "govd_power_watts", "gauge", "Filtered power per rail (EWMA).");
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < HAL_RAIL_N; r++) {
			sample2(f, "govd_power_watts", lab[i].dev, "rail", rail_names[r],
			      s->dev[i].power_w[r]);
		}
	family(f, "govd_energy_joules_total", "counter",
	       "Energy per rail (device counter where offered, else filtered power over time).");
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < HAL_RAIL_N; r++) {
			sample2(f, "govd_energy_joules_total", lab[i].dev, "rail", rail_names[r],
			      s->dev[i].energy_j[r]);
		}
	family(f, "govd_temperature_celsius", "gauge", "Temperature per sensor (last good reading).");
	for (size_t i = 0; i < n; i++)
		for (int t = 0; t < HAL_TEMP_N; t++) {
			sample2(f, "govd_temperature_celsius", lab[i].dev, "sensor", sensor_names[t],
			      s->dev[i].temp_c[t]);
		}
	DEV_GAUGE("govd_thermal_headroom_celsius", "Policy ceiling minus junction temperature.",
		  headroom_c);
	DEV_GAUGE("govd_thermal_headroom_trend_celsius_per_second",
		  "Filtered rate of change of the headroom (negative: heating).", headroom_trend_c_per_s);
	DEV_COUNTER("govd_thermal_clamp_events_total", "Hardware thermal slowdown entries.",
		    clamp_events);
	family(f, "govd_thermal_clamp_seconds_total", "counter", "Time in hardware thermal slowdown.");
	for (size_t i = 0; i < n; i++)
		sample(f, "govd_thermal_clamp_seconds_total", lab[i].dev, s->dev[i].clamp_s);
}

/* Per device: the server's telemetry and the SLA windows. */
static void render_serving(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	size_t n = s->n_devices;
	/* Serving. */
	DEV_GAUGE("govd_serving_up", "1 when the serving telemetry of the period was valid.",
		  serving_up);
	DEV_GAUGE("govd_tokens_per_second", "Generated tokens per second over the SLA window.",
		  tokens_per_s);
	DEV_GAUGE("govd_tokens_per_joule",
		  "Window token rate over filtered total power (accelerator + memory + host).",
		  tokens_per_joule);
	DEV_COUNTER("govd_tokens_generated_total", "Tokens generated by the server.", tokens_total);
	DEV_GAUGE("govd_int8_token_share_ratio", "Share of tokens served in INT8 over the window.",
		  int8_token_share);
	DEV_GAUGE("govd_queue_requests", "Requests waiting in the server's queue.", queue_len);
	DEV_GAUGE("govd_running_requests", "Requests in the server's running batch.", running);
	render_latency(f, s, lab, false);
	render_latency(f, s, lab, true);
	render_lat_hist(f, s, lab);
	DEV_COUNTER("govd_sla_windows_total", "SLA windows judged (idle windows are not counted).",
		    sla_windows);
	DEV_COUNTER("govd_sla_windows_met_total", "SLA windows that met every policy target.",
		    sla_windows_met);
	family(f, "govd_sla_attainment_ratio", "gauge",
	       "Share of judged SLA windows that met every target (absent before the first).");
	for (size_t i = 0; i < n; i++)
		if (s->dev[i].sla_windows)
			sample(f, "govd_sla_attainment_ratio", lab[i].dev,
			       (double)s->dev[i].sla_windows_met / (double)s->dev[i].sla_windows);
}

/* Per device: decisions, rollbacks, faults, errors. */
static void render_decisions(FILE *f, const struct metrics_snapshot *s, const struct devlab *lab)
{
	size_t n = s->n_devices;
	/* Decisions and faults. */
	family(f, "govd_decisions_total", "counter", "Control periods carrying each reason code.");
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < GOV_R_COUNT; r++) {
			sample2_u64(f, "govd_decisions_total", lab[i].dev, "reason", gov_reason_name(1u << r),
			      s->dev[i].decisions[r]);
		}
	family(f, "govd_rollbacks_total", "counter", "Rollbacks to the last known good point by trigger.");
	for (size_t i = 0; i < n; i++) {
		for (int t = 0; t < GOV_T_COUNT; t++) {
			sample2_u64(f, "govd_rollbacks_total", lab[i].dev, "trigger", gov_trigger_name(1u << t),
			      s->dev[i].rollbacks[t]);
		}
		sample2_u64(f, "govd_rollbacks_total", lab[i].dev, "trigger", "unknown",
			    s->dev[i].rollbacks_unattributed);
	}
	family(f, "govd_telemetry_faults_total", "counter",
	       "Telemetry fault onsets (a good signal turning stale, NaN, stuck, ...) by signal.");
	for (size_t i = 0; i < n; i++)
		for (int g = 0; g < GOV_SIG_N; g++) {
			sample2_u64(f, "govd_telemetry_faults_total", lab[i].dev, "signal", gov_signal_name((enum gov_signal)g),
			      s->dev[i].telemetry_faults[g]);
		}
	DEV_COUNTER("govd_actuation_errors_total", "Periods in which a device write failed.",
		    actuate_errors);
	DEV_COUNTER("govd_out_of_band_changes_total",
		    "Power-limit changes by another writer (nvidia-smi -pl, a BMC cap): govd applies its own "
		    "decision again.",
		    oob_changes);
	DEV_COUNTER("govd_decision_log_write_errors_total",
		    "Decision-log writes that failed (the record is dropped whole).", log_write_errors);
}

int metrics_render(const struct metrics_snapshot *s, FILE *f)
{
	struct devlab lab[METRICS_MAX_DEVICES];
	size_t n = s->n_devices;

	assert(n <= METRICS_MAX_DEVICES);

	for (size_t i = 0; i < n; i++)
		dev_label(&s->dev[i], &lab[i]);
	render_node(f, s);
	render_info(f, s, lab);
	render_point(f, s, lab);
	render_measured(f, s, lab);
	render_serving(f, s, lab);
	render_decisions(f, s, lab);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}

int metrics_render_alloc(const struct metrics_snapshot *s, char **out, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return -errno;
	int rc = metrics_render(s, f);
	if (fclose(f) && !rc)
		rc = -EIO;
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* ---- HTTP endpoint ------------------------------------------------------ */

struct metrics_server {
	struct MHD_Daemon *mhd;
	struct connguard *guard;
	int listen_fd;
	unsigned port;
	pthread_mutex_t mu;
	struct metrics_snapshot *pub; /* last published, under mu */
	uint64_t published;           /* under mu */
	atomic_uint_fast64_t scrapes;
};

int metrics_parse_listen(const char *listen, struct sockaddr_storage *ss, unsigned *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h0, *h1;
	memset(ss, 0, sizeof(*ss));
	if (!listen || !*listen)
		return -EINVAL;
	if (listen[0] == '[') {
		h0 = listen + 1;
		h1 = strchr(h0, ']');
		if (!h1 || h1[1] != ':')
			return -EINVAL;
		colon = h1 + 1;
	} else {
		h0 = listen;
		colon = strrchr(listen, ':');
		if (!colon || memchr(listen, ':', (size_t)(colon - listen)))
			return -EINVAL;
		h1 = colon;
	}
	size_t hl = (size_t)(h1 - h0);
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h0, hl);
	host[hl] = '\0';
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+')
		return -EINVAL;
	if (listen[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	}
	return 0;
}

static void guard_busy(struct metrics_server *m, struct MHD_Connection *c);

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned code, const char *text)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- connection guard (governor/daemon/connguard.h): MHD's notifications in ---- */

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct metrics_server *m = cls;
	(void)socket_context;
	int fd = conn_fd(c);
	if (fd < 0)
		return;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		connguard_opened(m->guard, fd, ci ? ci->client_addr : NULL);
	} else {
		connguard_closed(m->guard, fd);
	}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct metrics_server *m = cls;
	(void)con_cls;
	(void)toe;
	int fd = conn_fd(c);
	if (fd >= 0)
		connguard_done(m->guard, fd);
}

static void guard_busy(struct metrics_server *m, struct MHD_Connection *c)
{
	int fd = conn_fd(c);
	if (fd >= 0)
		connguard_busy(m->guard, fd);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct metrics_server *m = cls;

	guard_busy(m, c);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (strcmp(url, "/metrics"))
		return respond_text(c, MHD_HTTP_NOT_FOUND, "not found; try /metrics\n");

	/* Copy out under the lock, render without it: the loop never waits for
	 * a slow client. */
	struct metrics_snapshot *copy = malloc(sizeof(*copy));
	if (!copy)
		return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	pthread_mutex_lock(&m->mu);
	memcpy(copy, m->pub, metrics_snapshot_size(m->pub));
	pthread_mutex_unlock(&m->mu);
	char *body;
	size_t len;
	int rc = metrics_render_alloc(copy, &body, &len);
	free(copy);
	if (rc)
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "render failed\n");
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	atomic_fetch_add(&m->scrapes, 1);
	return ret;
}

/* MHD's thread only. Any local peer can make MHD complain (a connection
 * closed mid-request, one the guard dropped): one line per episode and
 * per doubling, with the count. */
__attribute__((format(printf, 2, 0)))
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static struct ratelimit rl;
	uint64_t n;
	(void)cls;
	if (!ratelimit_hit(&rl, govd_mono_ms(), &n))
		return;
	char buf[256];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t len = strlen(buf);
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (n > 1)
		log_warn("metrics: %s (%llu such messages in this episode)", buf, (unsigned long long)n);
	else
		log_warn("metrics: %s", buf);
}

int metrics_start(struct metrics_server **out, const struct metrics_cfg *cfg,
		  struct diag_list *diags)
{
	const char *listen_s = cfg && cfg->listen ? cfg->listen : METRICS_DEFAULT_LISTEN;
	struct sockaddr_storage ss;
	unsigned sl;
	int rc, one = 1;

	*out = NULL;
	if (metrics_parse_listen(listen_s, &ss, &sl)) {
		diag_add(diags, DIAG_ERROR, "metrics", 0, 0, "metrics.listen", "bad-address",
			 "'%s': expected ADDR:PORT or [V6ADDR]:PORT with a numeric address", listen_s);
		return -EINVAL;
	}
	struct metrics_server *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pub = malloc(sizeof(*m->pub));
	if (!m->pub) {
		rc = -ENOMEM;
		goto free_m;
	}
	metrics_snapshot_init(m->pub);
	if ((rc = pthread_mutex_init(&m->mu, NULL))) {
		rc = -rc;
		goto free_pub;
	}
	/* Our own listening socket: bind errors get a precise message, and the
	 * port of "ADDR:0" is known. */
	m->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (m->listen_fd < 0) {
		rc = -errno;
		goto destroy_mu;
	}
	setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->listen_fd, (struct sockaddr *)&ss, sl) || listen(m->listen_fd, 128)) {
		rc = -errno;
		diag_add(diags, DIAG_ERROR, "metrics", 0, 0, "metrics.listen", "bind",
			 "cannot listen on %s: %s", listen_s, strerror(-rc));
		goto close_fd;
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	if (getsockname(m->listen_fd, (struct sockaddr *)&bound, &bl)) {
		rc = -errno;
		goto close_fd;
	}
	m->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						    : ((struct sockaddr_in *)&bound)->sin_port);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			 MHD_USE_ITC;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* MHD's own timeout is an idle timer every byte resets and its limit
	 * refuses new connections once slow ones fill it: the guard bounds
	 * each request as a whole and per peer, keeping new connections and
	 * dropping the oldest idle ones, so MHD's limit (twice the guard's,
	 * room for the ones shut but not yet closed) is never what refuses. */
	static const struct connguard_cfg gcfg = {
		.max_conns = METRICS_CONN_MAX,
		.max_per_peer = METRICS_CONN_PER_PEER,
		.deadline_ms = METRICS_REQUEST_DEADLINE_MS,
		.tick_ms = 250,
	};
	if ((rc = connguard_start(&m->guard, &gcfg)))
		goto close_fd;
	m->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)NULL,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)m->listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * METRICS_CONN_MAX + 8),
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
				  MHD_OPTION_END);
	if (!m->mhd) {
		rc = -EIO;
		diag_add(diags, DIAG_ERROR, "metrics", 0, 0, "metrics.listen", "http",
			 "libmicrohttpd did not start on %s", listen_s);
		goto stop_guard;
	}
	*out = m;
	return 0;

stop_guard:
	connguard_stop(m->guard);
close_fd:
	close(m->listen_fd);
destroy_mu:
	pthread_mutex_destroy(&m->mu);
free_pub:
	free(m->pub);
free_m:
	free(m);
	return rc;
}

void metrics_conn_stats(struct metrics_server *m, struct connguard_stats *out)
{
	connguard_get_stats(m->guard, out);
}

unsigned metrics_port(const struct metrics_server *m)
{
	return m->port;
}

void metrics_publish(struct metrics_server *m, const struct metrics_snapshot *s)
{
	pthread_mutex_lock(&m->mu);
	memcpy(m->pub, s, metrics_snapshot_size(s));
	m->pub->seq = ++m->published;
	pthread_mutex_unlock(&m->mu);
}

uint64_t metrics_scrapes(const struct metrics_server *m)
{
	return atomic_load(&((struct metrics_server *)m)->scrapes);
}

void metrics_stop(struct metrics_server *m)
{
	if (!m)
		return;
	/* Quiesced, the listening socket is ours to close (after the stop, as
	 * MHD's thread may still hold it); otherwise MHD closes it. */
	MHD_socket fd = MHD_quiesce_daemon(m->mhd);
	MHD_stop_daemon(m->mhd);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	connguard_stop(m->guard);
	pthread_mutex_destroy(&m->mu);
	free(m->pub);
	free(m);
}
