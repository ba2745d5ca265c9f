#include "governor/loop/declog.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "hal/hal_serving.h"

static int emit(struct declog *d, json_t *o)
{
	if (!o)
		return -ENOMEM;
	/* Encoded into one buffer and written with its newline in one go:
	 * jansson's dumpf makes a stdio call per token, which was most of a
	 * one-device govd's CPU. Flushed per line: after kill -9 the log is
	 * valid up to its last complete record. */
	const size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(DECLOG_REAL_PRECISION);
	size_t n = json_dumpb(o, d->buf, d->cap, flags);
	if (n + 1 > d->cap) {
		size_t cap = (n + 1) * 2;
		char *b = realloc(d->buf, cap);
		if (!b) {
			json_decref(o);
			return -ENOMEM;
		}
		d->buf = b;
		d->cap = cap;
		n = json_dumpb(o, d->buf, d->cap, flags);
	}
	json_decref(o);
	if (n == 0 || n + 1 > d->cap)
		return -EIO;
	d->buf[n++] = '\n';
	if (fwrite(d->buf, 1, n, d->f) != n || fflush(d->f))
		return -EIO;
	return 0;
}

const char *declog_compiler(void)
{
	/* gcc's __VERSION__ is the bare number; clang's names itself. */
#if defined(__GNUC__) && !defined(__clang__)
	return "gcc " __VERSION__;
#else
	return __VERSION__;
#endif
}

int declog_init(struct declog *d, FILE *f)
{
	memset(d, 0, sizeof(*d));
	d->f = f;
	return 0;
}

void declog_set_compact(struct declog *d, uint32_t heartbeat_ms)
{
	d->heartbeat_ms = heartbeat_ms;
	d->have_last = false;
}

static void key_of(const struct declog_record *r, struct declog_key *k)
{
	memset(k, 0, sizeof(*k));
	k->after = *r->after;
	k->reasons = r->reasons;
	k->armed = r->armed;
	k->fired = r->fired;
	k->binding = r->binding;
	memcpy(k->faults, r->faults, sizeof(k->faults));
	k->serving_faults = r->serving_faults;
	k->quality_faults = r->quality_faults;
	snprintf(k->rb_state, sizeof(k->rb_state), "%s", rollback_state_name(r->rb_state));
	k->have_lkg = r->lkg != NULL;
	if (r->lkg)
		k->lkg = *r->lkg;
	k->operator_hold = r->operator_hold;
	k->rollbacks = r->rollbacks;
	snprintf(k->envelope, sizeof(k->envelope), "%s", r->envelope ? r->envelope : "");
	k->power_budget_on = r->power_budget_on;
	k->power_budget_mw = r->power_budget_mw;
	/* A window's judgement (served or idle) is read from the held inputs
	 * at its close: a change of it is written, or idle reads as serving. */
	k->serving = r->est && (r->est->window_requests > 0 || r->est->queue_len > 0 ||
				r->est->running > 0);
}

/* Compact mode: true when this record may be left out (its decision equals
 * the last written one and the heartbeat is not due). Emergencies are
 * always written. */
static bool compact_skip(struct declog *d, const struct declog_record *r)
{
	if (!d->heartbeat_ms)
		return false;
	d->have_seen = true;
	d->last_seen_seq = r->seq;
	struct declog_key k;
	key_of(r, &k);
	if (!r->emergency && d->have_last && r->t_ms < d->last_t_ms + d->heartbeat_ms &&
	    !memcmp(&k, &d->last, sizeof(k))) {
		d->skipped++;
		return true;
	}
	d->last = k;
	d->last_t_ms = r->t_ms;
	d->have_last = true;
	return false;
}

void declog_fini(struct declog *d)
{
	if (d->f)
		fflush(d->f);
	d->f = NULL;
	free(d->buf);
	d->buf = NULL;
	d->cap = 0;
}

static json_t *op_json(const struct gov_opoint *op)
{
	json_t *o = json_object();
	json_t *fr = json_array();

	json_object_set_new(o, "clk_locked", json_boolean(op->clk_locked));
	json_object_set_new(o, "clk_min_khz", json_integer(op->clk_min_khz));
	json_object_set_new(o, "clk_max_khz", json_integer(op->clk_max_khz));
	json_object_set_new(o, "power_limit_mw", json_integer(op->power_limit_mw));
	bool asked = false;
	for (size_t s = 0; s < op->n_slices; s++) {
		json_array_append_new(fr, jsonx_real(op->int8_frac[s]));
		asked |= op->shadow_rate[s] > 0;
	}
	json_object_set_new(o, "int8_frac", fr);
	/* Only where a slice's rung is FP8 (the precision ladder): what the
	 * int8_frac shares are served in. */
	if (gov_opoint_any_fp8(op)) {
		json_t *lm = json_array();
		for (size_t s = 0; s < op->n_slices; s++)
			json_array_append_new(lm, json_string(hal_low_mode_names[op->low_mode[s]]));
		json_object_set_new(o, "low_mode", lm);
	}
	/* Only while govd asks for evidence somewhere: 0 is the server's own. */
	if (asked) {
		json_t *sr = json_array();
		for (size_t s = 0; s < op->n_slices; s++)
			json_array_append_new(sr, jsonx_real(op->shadow_rate[s]));
		json_object_set_new(o, "shadow_rate", sr);
	}
	return o;
}

/* The controller's explanation of its clock (docs/decision-log.md, "why"). */
static json_t *why_json(const struct gov_why *w)
{
	json_t *o = json_object();
	json_object_set_new(o, "bound", json_string(gov_why_bound_name(w->bound)));
	json_object_set_new(o, "clk_mhz", jsonx_real(w->clk_mhz));
	json_object_set_new(o, "model_mhz", jsonx_real(w->model_mhz));
	json_object_set_new(o, "tbt_pred_ms", jsonx_real(w->tbt_pred_ms));
	json_object_set_new(o, "ttft_pred_ms", jsonx_real(w->ttft_pred_ms));
	json_object_set_new(o, "lower_mhz", jsonx_real(w->lower_mhz));
	json_object_set_new(o, "tbt_lower_ms", jsonx_real(w->tbt_lower_ms));
	json_object_set_new(o, "ttft_lower_ms", jsonx_real(w->ttft_lower_ms));
	json_object_set_new(o, "lower_limit", json_string(gov_why_limit_name(w->lower_limit)));
	json_object_set_new(o, "margin", jsonx_real(w->margin));
	json_object_set_new(o, "sigmas", jsonx_real(w->sigmas));
	json_object_set_new(o, "floor_mhz", jsonx_real(w->floor_mhz));
	json_object_set_new(o, "floor", json_string(w->floor_load ? "load" : "policy"));
	json_object_set_new(o, "tail_ratio", jsonx_real(w->tail_ratio));
	json_object_set_new(o, "base_mhz", jsonx_real(w->base_mhz));
	json_object_set_new(o, "bar_mhz", jsonx_real(w->bar_mhz));
	json_object_set_new(o, "move", json_string(gov_why_move_name(w->move)));
	const char *load = gov_why_load_name(w->load);
	json_object_set_new(o, "load", load ? json_string(load) : json_null());
	json_object_set_new(o, "heat_floor_w", jsonx_real(w->heat_floor_w));
	return o;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

int declog_header(struct declog *d, const struct declog_header *h)
{
	if (!d->f)
		return 0;
	json_t *o = json_object();
	json_t *dev = json_object();
	json_t *sl = json_array();
	const struct hal_limits *l = h->lim;

	json_object_set_new(o, "type", json_string("header"));
	json_object_set_new(o, "schema_version", json_integer(DECLOG_SCHEMA_VERSION));
	json_object_set_new(o, "govd_version", json_string(GOVD_VERSION));
	json_object_set_new(o, "scenario", h->scenario ? json_string(h->scenario) : json_null());
	if (h->scenario_path)
		json_object_set_new(o, "scenario_path", json_string(h->scenario_path));
	if (h->command)
		json_object_set_new(o, "command", json_string(h->command));
	json_object_set_new(o, "policy", json_string(h->policy_name));
	json_object_set_new(o, "policy_path", json_string(h->policy_path));
	json_object_set_new(o, "policy_hash", json_string(h->policy_hash));
	json_object_set_new(o, "controller", json_string(h->controller));
	json_object_set_new(o, "period_ms", json_integer(h->period_ms));
	json_object_set_new(o, "seed", json_integer((json_int_t)h->seed));
	json_object_set_new(o, "dry_run", json_boolean(h->dry_run));
	/* Only in compact mode: a log without it has a record every period. */
	if (d->heartbeat_ms) {
		json_object_set_new(o, "log_mode", json_string("compact"));
		json_object_set_new(o, "heartbeat_ms", json_integer(d->heartbeat_ms));
	}
	d->have_last = false; /* a new header: the next decision is written */
	json_t *ver = json_object();
	json_object_set_new(ver, "govd", json_string(GOVD_VERSION));
	json_object_set_new(ver, "driver", json_string(l->driver_version));
	json_object_set_new(ver, "firmware", json_string(l->firmware_version));
	json_object_set_new(ver, "compiler", json_string(declog_compiler()));
	json_object_set_new(ver, "jansson", json_string(JANSSON_VERSION));
	json_object_set_new(o, "versions", ver);
	json_t *md = json_object();
	json_object_set_new(md, "workload_profile", json_string(str_or_empty(h->workload_profile)));
	json_object_set_new(md, "model_revision", json_string(str_or_empty(h->model_revision)));
	json_object_set_new(md, "power_mode", json_string(str_or_empty(h->power_mode)));
	json_object_set_new(o, "policy_metadata", md);
	json_object_set_new(dev, "name", json_string(h->device_name ? h->device_name : ""));
	json_object_set_new(dev, "model", json_string(l->model));
	json_object_set_new(dev, "driver_version", json_string(l->driver_version));
	json_object_set_new(dev, "firmware_version", json_string(l->firmware_version));
	json_object_set_new(dev, "clk_min_khz", json_integer(l->clk_min_khz));
	json_object_set_new(dev, "clk_max_khz", json_integer(l->clk_max_khz));
	json_object_set_new(dev, "clk_step_khz", json_integer(l->clk_step_khz));
	json_object_set_new(dev, "clk_default_max_khz", json_integer(l->clk_default_max_khz));
	json_object_set_new(dev, "power_limit_min_mw", json_integer(l->power_limit_min_mw));
	json_object_set_new(dev, "power_limit_max_mw", json_integer(l->power_limit_max_mw));
	json_object_set_new(dev, "power_limit_default_mw", json_integer(l->power_limit_default_mw));
	json_object_set_new(dev, "slowdown_mc", json_integer(l->slowdown_mc));
	json_object_set_new(dev, "shutdown_mc", json_integer(l->shutdown_mc));
	json_object_set_new(o, "device", dev);
	for (size_t s = 0; s < h->n_slices; s++)
		json_array_append_new(sl, json_string(h->slice_name[s]));
	json_object_set_new(o, "slices", sl);
	return emit(d, o);
}

/* {"faults": [names], "msg": text or null} */
static json_t *backend_faults_json(uint32_t bits, const char *msg)
{
	json_t *o = json_object(), *names = json_array();

	for (int i = 0; i < 32; i++)
		if (bits & (1u << i))
			json_array_append_new(names, json_string(hal_serving_fault_name(1u << i)));
	json_object_set_new(o, "faults", names);
	json_object_set_new(o, "msg", msg ? json_string(msg) : json_null());
	return o;
}

int declog_decision(struct declog *d, const struct declog_record *r)
{
	if (!d->f || compact_skip(d, r))
		return 0;
	const struct gov_estimates *e = r->est;
	json_t *o = json_object();
	json_t *in = json_object();
	json_t *pw = json_object(), *tc = json_object(), *sla = json_object(), *q = json_array();
	json_t *faults = json_array(), *reasons = json_array();

	json_object_set_new(o, "type", json_string("decision"));
	json_object_set_new(o, "t_ms", json_integer((json_int_t)r->t_ms));
	json_object_set_new(o, "seq", json_integer((json_int_t)r->seq));

	json_object_set_new(pw, "accel", jsonx_real(e->power_w[HAL_RAIL_ACCEL]));
	json_object_set_new(pw, "memory", jsonx_real(e->power_w[HAL_RAIL_MEMORY]));
	json_object_set_new(pw, "host", jsonx_real(e->power_w[HAL_RAIL_HOST]));
	json_object_set_new(in, "power_w", pw);
	json_object_set_new(tc, "junction", jsonx_real(e->temp_c[HAL_TEMP_JUNCTION]));
	json_object_set_new(tc, "memory", jsonx_real(e->temp_c[HAL_TEMP_MEMORY]));
	json_object_set_new(tc, "inlet", jsonx_real(e->temp_c[HAL_TEMP_INLET]));
	json_object_set_new(in, "temp_c", tc);
	json_object_set_new(in, "headroom_c", jsonx_real(e->headroom_c));
	json_object_set_new(in, "headroom_trend_c_per_s", jsonx_real(e->headroom_trend_c_per_s));
	json_object_set_new(in, "clk_mhz", jsonx_real(e->clk_mhz));
	json_object_set_new(in, "util", jsonx_real(e->util));
	json_object_set_new(in, "power_limit_w", jsonx_real(e->power_limit_w));
	json_object_set_new(in, "throttle", json_integer(e->throttle));
	json_object_set_new(sla, "window_s", jsonx_real(e->window_s));
	json_object_set_new(sla, "requests", json_integer((json_int_t)e->window_requests));
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		json_object_set_new(sla, sla_rows[i].key, jsonx_real(e->quantile_ms[i]));
	/* Only when it happened: periods whose latency delta was not stored. */
	if (e->window_errors)
		json_object_set_new(sla, "window_errors", json_integer((json_int_t)e->window_errors));
	json_object_set_new(in, "sla", sla);
	json_object_set_new(in, "tokens_per_s", jsonx_real(e->tokens_per_s));
	json_object_set_new(in, "int8_token_share", jsonx_real(e->int8_token_share));
	json_object_set_new(in, "queue_len", json_integer((json_int_t)e->queue_len));
	json_object_set_new(in, "running", json_integer((json_int_t)e->running));
	for (size_t s = 0; s < e->n_slices; s++) {
		json_t *qs = json_object();
		json_object_set_new(qs, "samples", json_integer((json_int_t)e->q_samples[s]));
		json_object_set_new(qs, "mismatches", json_integer((json_int_t)e->q_mismatches[s]));
		json_object_set_new(qs, "drop_upper", jsonx_real(e->q_drop_upper[s]));
		/* The gate behind the bound: its evidence (prior + online, or
		 * online since the last alarm), the regression statistic, and
		 * whether INT8 may serve the slice. */
		json_object_set_new(qs, "evidence", json_integer((json_int_t)e->q_evidence_n[s]));
		json_object_set_new(qs, "cusum", jsonx_real(e->q_cusum[s]));
		json_object_set_new(qs, "alarm", json_boolean(e->q_alarm[s]));
		json_object_set_new(qs, "gate_open", json_boolean(e->q_gate_open[s]));
		/* Only when it holds: the first rung open on the prior before its
		 * confirmation, the device being thermally bound (heat_prior). */
		if (r->heat_prior & (1u << s))
			json_object_set_new(qs, "heat_prior", json_true());
		/* Only while it holds: the rung is open, but the slice waits in
		 * BF16 until every slice's is (low_all_or_none). */
		if (r->mix_held & (1u << s))
			json_object_set_new(qs, "mix_held", json_true());
		/* Only while it holds: the gate is open but a drift would be
		 * caught too late at this shadow rate (null: no samples yet). */
		if (r->detect_held_s && s < HAL_MAX_SLICES && r->detect_held_s[s] > 0)
			json_object_set_new(qs, "detect_held_s", jsonx_real(r->detect_held_s[s]));
		/* The FP8 rung's own gate, where the server evaluates FP8. */
		size_t f8 = est_q_row(s, HAL_LOW_FP8);
		if (e->q_total_samples[f8] > 0) {
			json_t *fq = json_object();
			json_object_set_new(fq, "drop_upper", jsonx_real(e->q_drop_upper[f8]));
			json_object_set_new(fq, "evidence",
					    json_integer((json_int_t)e->q_evidence_n[f8]));
			json_object_set_new(fq, "alarm", json_boolean(e->q_alarm[f8]));
			json_object_set_new(fq, "gate_open", json_boolean(e->q_gate_open[f8]));
			json_object_set_new(qs, "fp8", fq);
		}
		/* Evidence asked for this slice, and why (docs/decision-log.md). */
		if (r->evidence && s < r->after->n_slices && r->after->shadow_rate[s] > 0) {
			json_object_set_new(qs, "ask", json_string(gov_evidence_name(r->evidence[s])));
			json_object_set_new(qs, "ask_rate", jsonx_real(r->after->shadow_rate[s]));
			if (r->evidence_budget)
				json_object_set_new(qs, "ask_budget", json_true());
		}
		json_array_append_new(q, qs);
	}
	json_object_set_new(in, "quality", q);
	json_object_set_new(o, "inputs", in);

	for (int s = 0; s < GOV_SIG_N; s++) {
		if (r->faults[s] == GOV_FAULT_NONE)
			continue;
		json_t *f = json_object();
		json_object_set_new(f, "signal", json_string(gov_signal_name((enum gov_signal)s)));
		json_object_set_new(f, "fault", json_string(gov_fault_name(r->faults[s])));
		json_array_append_new(faults, f);
	}
	json_object_set_new(o, "faults", faults);
	if (r->serving_faults)
		json_object_set_new(o, "serving_faults",
				    backend_faults_json(r->serving_faults, r->serving_fault_msg));
	if (r->quality_faults)
		json_object_set_new(o, "quality_faults",
				    backend_faults_json(r->quality_faults, r->quality_fault_msg));
	if (r->oob_found_mw)
		json_object_set_new(o, "out_of_band",
				    json_pack("{s:s, s:I, s:I}", "setting", "power_limit", "found_mw",
					      (json_int_t)r->oob_found_mw, "expected_mw",
					      (json_int_t)r->oob_expected_mw));
	json_object_set_new(o, "before", op_json(r->before));
	json_object_set_new(o, "after", op_json(r->after));
	for (int i = 0; i < GOV_R_COUNT; i++)
		if (r->reasons & (1u << i))
			json_array_append_new(reasons, json_string(gov_reason_name(1u << i)));
	json_object_set_new(o, "reasons", reasons);
	json_object_set_new(o, "binding", json_string(gov_binding_name(r->binding)));
	if (r->why && r->why->valid)
		json_object_set_new(o, "why", why_json(r->why));
	json_t *armed = json_array();
	for (int i = 0; i < GOV_T_COUNT; i++)
		if (r->armed & (1u << i))
			json_array_append_new(armed, json_string(gov_trigger_name(1u << i)));
	json_object_set_new(o, "armed", armed);
	char fired[64];
	json_object_set_new(o, "fired", r->fired ? json_string(gov_triggers_join(r->fired, fired,
										 sizeof(fired)))
						 : json_null());
	json_t *rb = json_object();
	json_object_set_new(rb, "state", json_string(rollback_state_name(r->rb_state)));
	json_object_set_new(rb, "lkg", r->lkg ? op_json(r->lkg) : json_null());
	json_object_set_new(rb, "hold_left_s", jsonx_real(r->hold_left_s));
	json_object_set_new(rb, "rollbacks", json_integer((json_int_t)r->rollbacks));
	json_object_set_new(o, "rollback", rb);
	json_object_set_new(o, "envelope", r->envelope ? json_string(r->envelope) : json_null());
	json_object_set_new(o, "operator_hold", json_boolean(r->operator_hold));
	json_object_set_new(o, "power_budget_mw",
			    r->power_budget_on ? json_integer(r->power_budget_mw) : json_null());
	if (r->emergency)
		json_object_set_new(o, "emergency", json_string(r->emergency));
	json_object_set_new(o, "policy", json_string(r->policy_name));
	json_object_set_new(o, "policy_hash", json_string(r->policy_hash));
	json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
	return emit(d, o);
}

int declog_restore(struct declog *d, uint64_t t_ms, const struct gov_opoint *restored, int rc)
{
	if (!d->f)
		return 0;
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("restore"));
	json_object_set_new(o, "t_ms", json_integer((json_int_t)t_ms));
	/* Compact: the last period's seq, so a reader knows the periods after
	 * the last decision record were unchanged up to here. */
	if (d->heartbeat_ms && d->have_seen)
		json_object_set_new(o, "seq", json_integer((json_int_t)d->last_seen_seq));
	json_object_set_new(o, "after", op_json(restored));
	json_object_set_new(o, "reasons", json_pack("[s]", gov_reason_name(GOV_R_RESTORE)));
	json_object_set_new(o, "rc", json_integer(rc));
	return emit(d, o);
}
