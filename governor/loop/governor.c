#include "governor/loop/governor.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "governor/loop/guard.h"

/* Validator defaults when the policy leaves telemetry unset are in
 * policy_util.c (policy_defaults); the witness threshold is fixed: 5 W or
 * 5 % utilisation. */
#define STUCK_WITNESS 5.0
#define TREND_TAU_S 5.0
/* Back inside an inlet range only this far from its edges: a sensor
 * dithering on the edge must not flip the device every period. */
#define ENVELOPE_HYST_C 1.0

struct governor {
	struct governor_cfg cfg;
	const struct controller_ops *ctl;
	void *ctl_state;
	struct hal_limits lim;
	struct validator val;
	struct estimator est;
	struct guard guard;
	struct rollback rb;
	struct declog log;
	double period_s;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	double policy_int8[HAL_MAX_SLICES], max_drop[HAL_MAX_SLICES];
	struct policy_slice_rule rule[HAL_MAX_SLICES];
	struct gov_opoint cur;   /* in force */
	bool started;            /* first period done (cur adopted from the device) */
	bool wrote;              /* a HAL write happened: restore needed */
	bool restored;
	uint32_t orig_power_limit_mw;
	uint64_t seq;
	uint64_t actuate_errors;
	/* Out-of-band power-limit changes: the device reported a limit govd did
	 * not set on two periods in a row (nvidia-smi -pl, a BMC cap); counted,
	 * logged, and govd's own decision is applied again. */
	uint64_t oob_changes;
	unsigned oob_streak;
	uint32_t oob_found_mw, oob_expected_mw; /* the last one, for the log */
	uint64_t emergencies;
	bool safety;             /* the last applied point was forced by safety (not canaried) */
	bool operator_hold;      /* governor_hold */
	bool outside_envelope;
	char envelope_why[512];
	struct hal_sample sample;
	struct hal_serving serving;
	struct hal_quality quality;
	enum gov_fault faults[GOV_SIG_N];
};

static void warn_missing(struct diag_list *diags, const struct hal_dev *dev, const char *what)
{
	if (diags)
		diag_add(diags, DIAG_WARNING, dev->name, 0, 0, "", "capability",
			 "device does not offer %s; the governor will not change it", what);
}

/* The serving side's slices, and the policy's rule for each (resolved once:
 * the controller, estimator and rollback read these). */
static void init_slices(struct governor *g, struct hal_dev *dev, const struct policy *pol)
{
	if (hal_can_read_serving(dev) && dev->ops->read_serving(dev, &g->serving) == 0) {
		g->n_slices = g->serving.n_slices < HAL_MAX_SLICES ? g->serving.n_slices : HAL_MAX_SLICES;
		for (size_t s = 0; s < g->n_slices; s++)
			memcpy(g->slice_name[s], g->serving.slice_name[s], HAL_NAME_LEN);
	}
	if (!hal_can_set_precision(dev))
		g->n_slices = 0; /* nothing to steer; op points carry no slices */
	for (size_t s = 0; s < g->n_slices; s++) {
		g->policy_int8[s] = policy_slice_int8(pol, g->slice_name[s]);
		g->max_drop[s] = policy_slice_max_drop(pol, g->slice_name[s]);
		policy_slice_rule(pol, g->slice_name[s], &g->rule[s]);
	}
}

/* The rollback manager: the safe point and the last-known-good fallback
 * the policy names, the per-slice quality triggers. */
static int init_rollback(struct governor *g, const struct policy *pol)
{
	struct rb_cfg rc_cfg = { .pol = pol, .lim = &g->lim, .n_slices = g->n_slices };
	guard_safe_point(&g->guard, g->n_slices, &rc_cfg.safe);
	if (pol->rollback.lkg_fallback == POLICY_LKG_SAFE_POINT) {
		rc_cfg.fallback = rc_cfg.safe;
	} else { /* firmware default: unlocked clocks, default limit, BF16 */
		rc_cfg.fallback.clk_min_khz = g->lim.clk_min_khz;
		rc_cfg.fallback.clk_max_khz = g->lim.clk_default_max_khz;
		rc_cfg.fallback.power_limit_mw = g->lim.power_limit_default_mw;
		rc_cfg.fallback.n_slices = g->n_slices;
	}
	for (size_t s = 0; s < g->n_slices; s++) {
		struct policy_slice_rule rule;
		policy_slice_rule(pol, g->slice_name[s], &rule);
		rc_cfg.max_drop[s] = rule.max_drop;
		rc_cfg.min_samples[s] = rule.min_samples;
	}
	return rollback_init(&g->rb, &rc_cfg);
}

/* The decision log's header: the run, the policy, the device and slices. */
static int init_log(struct governor *g, const struct governor_cfg *cfg)
{
	const struct policy *pol = cfg->pol;
	declog_init(&g->log, cfg->declog);
	declog_set_compact(&g->log, cfg->declog_heartbeat_ms);
	struct declog_header h = {
		.scenario = cfg->scenario,
		.scenario_path = cfg->scenario_path,
		.command = cfg->command,
		.policy_name = pol->name,
		.policy_path = pol->path,
		.policy_hash = pol->hash_hex,
		.controller = g->ctl->name,
		.period_ms = pol->control.period_ms,
		.seed = cfg->seed,
		.lim = &g->lim,
		.device_name = cfg->dev->name,
		.n_slices = g->n_slices,
		.slice_name = (const char(*)[HAL_NAME_LEN])g->slice_name,
		.dry_run = cfg->dry_run || cfg->dry_run_device,
		.workload_profile = pol->metadata.workload_profile,
		.model_revision = pol->metadata.model_revision,
		.power_mode = pol->metadata.power_mode,
	};
	return declog_header(&g->log, &h);
}

static int governor_init(struct governor *g, const struct governor_cfg *cfg,
			 struct diag_list *diags)
{
	const struct policy *pol = cfg->pol;
	int rc;

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	/* policy_load() refused any other name, with its location: the one
	 * place an unknown controller is reported (policy.c). */
	g->ctl = controller_find(pol->control.controller);
	assert(g->ctl);
	if (!g->ctl)
		return -ENOENT;
	if (!cfg->dev || !cfg->dev->ops || !cfg->clock)
		return -EINVAL;
	if ((hal_can_set_clocks(cfg->dev) || hal_can_set_power_limit(cfg->dev) ||
	     hal_can_set_precision(cfg->dev)) && !hal_can_restore(cfg->dev)) {
		diag_add(diags, DIAG_ERROR, cfg->dev->name, 0, 0, "", "no-restore",
			 "backend %s can write but cannot restore: refusing to govern it",
			 cfg->dev->ops->name);
		return -EINVAL;
	}
	rc = cfg->dev->ops->get_limits(cfg->dev, &g->lim);
	if (rc) {
		diag_add(diags, DIAG_ERROR, cfg->dev->name, 0, 0, "", "limits",
			 "cannot read device limits: %s", strerror(-rc));
		return rc;
	}
	if (!hal_can_set_clocks(cfg->dev))
		warn_missing(diags, cfg->dev, "clock locking");
	if (!hal_can_set_power_limit(cfg->dev))
		warn_missing(diags, cfg->dev, "a power limit");
	/* A device with nothing to write (alert and brake lines, a meter) is
	 * observed: a governing controller needs a clock or power range to work
	 * in and refuses a device without one, which would stop the daemon. */
	if (!hal_can_set_clocks(cfg->dev) && !hal_can_set_power_limit(cfg->dev) &&
	    !hal_can_set_precision(cfg->dev) && strcmp(g->ctl->name, "firmware-default")) {
		const struct controller_ops *obs = controller_find("firmware-default");
		assert(obs);
		diag_add(diags, DIAG_WARNING, cfg->dev->name, 0, 0, "control.controller", "observe-only",
			 "offers nothing to govern (no clock locking, power limit or precision): "
			 "observed with controller firmware-default instead of %s", g->ctl->name);
		g->ctl = obs;
	}
	init_slices(g, cfg->dev, pol);
	g->period_s = pol->control.period_ms / 1000.0;

	struct validate_cfg vc = {
		.stale_ms = pol->telemetry.stale_ms,
		.stuck_periods = pol->telemetry.stuck_periods,
		.stuck_witness_w = STUCK_WITNESS,
	};
	if ((rc = validate_init(&g->val, &vc)))
		goto err_validate;
	struct estimate_cfg ec = {
		.period_s = g->period_s,
		.ewma_tau_s = pol->telemetry.ewma_tau_s,
		.trend_tau_s = TREND_TAU_S,
		.window_s = pol->sla.window_s,
		.ceiling_c = pol->thermal.ceiling_c,
		.n_q = g->n_slices,
	};
	for (size_t s = 0; s < g->n_slices; s++)
		ec.q[s] = (struct est_quality_cfg){
			.max_drop = g->rule[s].max_drop,
			.confidence = g->rule[s].confidence,
			.min_samples = g->rule[s].min_samples,
			.prior_samples = g->rule[s].offline_samples,
			.prior_mismatches = g->rule[s].offline_mismatches,
			.confirm_samples = g->rule[s].confirm_samples,
		};
	if ((rc = estimate_init(&g->est, &ec)))
		goto err_estimate;
	if ((rc = guard_init(&g->guard, pol, &g->lim)))
		goto err_guard;
	if ((rc = init_rollback(g, pol)))
		goto err_rollback;
	/* The device part of the envelope is known now; the inlet is judged each
	 * period (any value inside the policy's range stands in for it here). */
	double inlet_c = isfinite(pol->envelope.inlet_min_c) ? pol->envelope.inlet_min_c
		       : isfinite(pol->envelope.inlet_max_c) ? pol->envelope.inlet_max_c : NAN;
	char why[512];
	if (!policy_envelope_check(pol, &g->lim, inlet_c, why, sizeof(why)) && diags)
		diag_add(diags, DIAG_WARNING, pol->path, 0, 0, "envelope", "outside-envelope",
			 "device %s is outside the policy's envelope (%s); the governor will hold "
			 "the safe point", cfg->dev->name, why);
	if (g->ctl->init && (rc = g->ctl->init(&g->ctl_state, pol, &g->lim))) {
		diag_add(diags, DIAG_ERROR, pol->path, 0, 0, "control.params", "controller-init",
			 "controller %s rejected its parameters: %s", g->ctl->name, strerror(-rc));
		goto err_ctl;
	}
	if ((rc = init_log(g, cfg)))
		goto err_log;
	return 0;

err_log:
	declog_fini(&g->log);
	if (g->ctl->fini)
		g->ctl->fini(g->ctl_state);
err_ctl:
	rollback_fini(&g->rb);
err_rollback:
	guard_fini(&g->guard);
err_guard:
	estimate_fini(&g->est);
err_estimate:
	validate_fini(&g->val);
err_validate:
	g->ctl = NULL;
	return rc;
}

/* What the device runs before the governor touched it. */
void governor_device_point(const struct governor *g, struct gov_opoint *op)
{
	memset(op, 0, sizeof(*op));
	op->clk_locked = false;
	op->clk_min_khz = g->lim.clk_min_khz;
	op->clk_max_khz = g->lim.clk_default_max_khz;
	op->power_limit_mw = g->lim.power_limit_default_mw;
	if (g->sample.power_limit_mw.valid && g->sample.power_limit_mw.v > 0 &&
	    g->sample.power_limit_mw.v <= (int64_t)g->lim.power_limit_max_mw)
		op->power_limit_mw = (uint32_t)g->sample.power_limit_mw.v;
	op->n_slices = g->n_slices;
}

bool governor_in_force(const struct governor *g, struct gov_opoint *op)
{
	bool dry = g->cfg.dry_run || g->cfg.dry_run_device;
	if (dry)
		governor_device_point(g, op);
	else
		*op = g->cur;
	return dry;
}

static void adopt_device(struct governor *g)
{
	governor_device_point(g, &g->cur);
	g->orig_power_limit_mw = g->cur.power_limit_mw;
}

static bool clocks_differ(const struct gov_opoint *a, const struct gov_opoint *b)
{
	if (a->clk_locked != b->clk_locked)
		return true;
	return a->clk_locked && (a->clk_min_khz != b->clk_min_khz || a->clk_max_khz != b->clk_max_khz);
}

/* One per-slice setting (INT8 shares, shadow rates) written when it changed;
 * a failed write keeps the values in force. */
static uint32_t write_slices(struct governor *g,
			     int (*set)(struct hal_dev *, const double *, size_t), double *want,
			     const double *cur, size_t n)
{
	bool changed = false;
	for (size_t s = 0; s < n; s++)
		changed |= want[s] != cur[s];
	if (!changed)
		return 0;
	int rc = set ? set(g->cfg.dev, want, n) : -EOPNOTSUPP;
	g->wrote |= rc != -EOPNOTSUPP;
	if (!rc)
		return 0;
	memcpy(want, cur, HAL_MAX_SLICES * sizeof(*want));
	return GOV_R_ACTUATE_ERROR;
}

/* Writes only what changed; a failed write keeps that part as it was. */
static uint32_t actuate(struct governor *g, struct gov_opoint *want)
{
	struct hal_dev *dev = g->cfg.dev;
	const struct hal_ops *ops = dev->ops;
	uint32_t reasons = 0;
	int rc;

	if (clocks_differ(&g->cur, want)) {
		if (want->clk_locked && ops->set_clock_range)
			rc = ops->set_clock_range(dev, want->clk_min_khz, want->clk_max_khz);
		else if (!want->clk_locked && ops->reset_clocks)
			rc = ops->reset_clocks(dev);
		else
			rc = -EOPNOTSUPP;
		g->wrote |= rc != -EOPNOTSUPP;
		if (rc) {
			want->clk_locked = g->cur.clk_locked;
			want->clk_min_khz = g->cur.clk_min_khz;
			want->clk_max_khz = g->cur.clk_max_khz;
			reasons |= GOV_R_ACTUATE_ERROR;
		}
	}
	if (want->power_limit_mw != g->cur.power_limit_mw) {
		rc = ops->set_power_limit ? ops->set_power_limit(dev, want->power_limit_mw) : -EOPNOTSUPP;
		g->wrote |= rc != -EOPNOTSUPP;
		if (rc) {
			want->power_limit_mw = g->cur.power_limit_mw;
			reasons |= GOV_R_ACTUATE_ERROR;
		}
	}
	reasons |= write_slices(g, ops->set_precision, want->int8_frac, g->cur.int8_frac,
				want->n_slices);
	reasons |= write_slices(g, ops->set_shadow_rate, want->shadow_rate, g->cur.shadow_rate,
				want->n_slices);
	if (reasons)
		g->actuate_errors++;
	return reasons;
}

/* The controller's shadow-rate asks on the guarded point: none in the
 * safe point or where the backend cannot take them; an operator hold keeps
 * what is in force. Outside the rollback: evidence is what a rolled-back
 * slice needs most. */
static void apply_asks(const struct governor *g, const struct ctl_output *out,
		       struct gov_opoint *after, enum gov_evidence *why)
{
	for (size_t s = 0; s < HAL_MAX_SLICES; s++) {
		bool ask = s < after->n_slices && !g->safety && hal_can_set_shadow_rate(g->cfg.dev);
		after->shadow_rate[s] = ask ? out->op.shadow_rate[s] : 0;
		why[s] = ask ? out->evidence[s] : GOV_EV_NONE;
		if (g->operator_hold && s < after->n_slices) {
			after->shadow_rate[s] = g->cur.shadow_rate[s];
			why[s] = GOV_EV_NONE;
		}
	}
}

/* Another writer changed the power limit: the limit the device reports
 * differs from the one govd set (more than 1 W and 1 %) on two periods in a
 * row (one period lets a write settle). govd owns the device: its in-force
 * view takes the device's value, so this period's actuation writes its own
 * decision again, and the change is counted and logged (docs/daemon.md,
 * "Out-of-band changes"). Not in a dry run (govd set nothing), not before
 * govd's first write. True on the period it is found. */
static bool check_out_of_band(struct governor *g)
{
	const struct hal_value *pl = &g->sample.power_limit_mw;
	if (g->cfg.dry_run || !g->wrote || !pl->valid || pl->nan || pl->v <= 0 ||
	    pl->v > HAL_POWER_MAX_MW || !hal_can_set_power_limit(g->cfg.dev)) {
		g->oob_streak = 0;
		return false;
	}
	int64_t want = g->cur.power_limit_mw, d = pl->v - want;
	if (llabs(d) <= 1000 || llabs(d) * 100 <= want) {
		g->oob_streak = 0;
		return false;
	}
	if (++g->oob_streak < 2)
		return false;
	g->oob_streak = 0;
	g->oob_changes++;
	g->oob_found_mw = (uint32_t)pl->v;
	g->oob_expected_mw = g->cur.power_limit_mw;
	g->cur.power_limit_mw = (uint32_t)pl->v;
	return true;
}

/* The envelope this period: device limits and the inlet (last good
 * reading), with hysteresis on the way back in. */
static void check_envelope(struct governor *g, double inlet_c)
{
	const struct policy *pol = g->cfg.pol;
	bool in = policy_envelope_check(pol, &g->lim, inlet_c, g->envelope_why,
					sizeof(g->envelope_why));
	if (in && g->outside_envelope && isfinite(inlet_c)) {
		char tmp[8];
		in = policy_envelope_check(pol, &g->lim, inlet_c - ENVELOPE_HYST_C, tmp, sizeof(tmp)) &&
		     policy_envelope_check(pol, &g->lim, inlet_c + ENVELOPE_HYST_C, tmp, sizeof(tmp));
		if (!in)
			snprintf(g->envelope_why, sizeof(g->envelope_why),
				 "inlet %.1f C within %.1f C of the envelope's edge (%g..%g C)", inlet_c,
				 ENVELOPE_HYST_C, pol->envelope.inlet_min_c, pol->envelope.inlet_max_c);
	}
	g->outside_envelope = !in;
	guard_set_envelope(&g->guard, !in);
}

static void fill_rb_record(const struct governor *g, uint64_t now, struct declog_record *rec)
{
	rec->armed = g->rb.armed;
	rec->fired = g->rb.fired;
	rec->rb_state = g->rb.state;
	rec->lkg = g->rb.have_lkg ? &g->rb.lkg : NULL;
	rec->hold_left_s = rollback_hold_left_s(&g->rb, now);
	rec->rollbacks = g->rb.rollbacks;
	rec->envelope = g->outside_envelope ? g->envelope_why : NULL;
	rec->operator_hold = g->operator_hold;
	rec->power_budget_on = g->guard.budget_on;
	rec->power_budget_mw = g->guard.budget_on ? g->guard.budget_mw : 0;
}

/* Actuates the guarded point (not in dry run, where the device keeps what
 * it runs and only the log shows the decision); *before gets the point in
 * force until now. Returns actuate_error reasons. */
static uint32_t apply_point(struct governor *g, struct gov_opoint *after, struct gov_opoint *before)
{
	uint32_t reasons = 0;

	if (!g->cfg.dry_run)
		reasons = actuate(g, after);
	*before = g->cur;
	if (!g->cfg.dry_run)
		g->cur = *after;
	return reasons;
}

/* The fields every decision record has, the periodic and the emergency one. */
static void record_init(const struct governor *g, uint64_t now, const struct gov_estimates *est,
			const struct gov_opoint *before, const struct gov_opoint *after,
			uint32_t reasons, enum gov_binding binding, struct declog_record *rec)
{
	*rec = (struct declog_record){
		.t_ms = now,
		.seq = g->seq,
		.est = est,
		.faults = g->faults,
		.before = before,
		.after = after,
		.reasons = reasons,
		.binding = binding,
		.policy_name = g->cfg.pol->name,
		.policy_hash = g->cfg.pol->hash_hex,
		.seed = g->cfg.seed,
	};
	fill_rb_record(g, now, rec);
}

/* The policy's INT8 bounds per slice, whatever the controller asked:
 * none where int8 is not in precision.modes, at most int8_max_fraction, and
 * at least int8_min_fraction while the slice's quality gate is open (a
 * minimum never forces INT8 past the quality threshold). */
static void clamp_int8(const struct governor *g, const struct gov_estimates *est,
		       struct gov_opoint *op)
{
	for (size_t s = 0; s < op->n_slices; s++) {
		const struct policy_slice_rule *r = &g->rule[s];
		double f = op->int8_frac[s];
		if (!r->int8_allowed || isnan(f) || f < 0)
			f = 0;
		if (f > r->int8_max_fraction)
			f = r->int8_max_fraction;
		if (est->q_gate_open[s] && f < r->int8_min_fraction)
			f = r->int8_min_fraction;
		op->int8_frac[s] = f;
	}
}

int governor_tick(struct governor *g)
{
	struct hal_dev *dev = g->cfg.dev;
	uint64_t now = govd_clock_now_ms(g->cfg.clock);
	struct gov_reading rd[GOV_SIG_N];
	uint32_t reasons = 0;
	int rc;

	/* Backends fill the whole sample; a failed read counts as nothing valid
	 * (every required signal a dropout), whatever it wrote before failing. */
	rc = dev->ops->sample(dev, &g->sample);
	if (rc)
		memset(&g->sample, 0, sizeof(g->sample));
	/* An invalid read still names its faults: they go to the log. */
	const struct hal_serving *sv = NULL;
	uint32_t sv_faults = 0, q_faults = 0;
	if (hal_can_read_serving(dev) && dev->ops->read_serving(dev, &g->serving) == 0) {
		sv_faults = g->serving.fault_bits;
		if (g->serving.valid)
			sv = &g->serving;
	}
	const struct hal_quality *q = NULL;
	if (hal_can_read_quality(dev) && dev->ops->read_quality(dev, &g->quality) == 0) {
		q_faults = g->quality.fault_bits;
		if (g->quality.valid)
			q = &g->quality;
	}

	gov_readings_from_sample(&g->sample, rd);
	unsigned n_faults = validate_step(&g->val, now, rd, g->faults);
	const struct gov_estimates *est =
		estimate_step(&g->est, now, rd, g->faults, n_faults, g->sample.throttle, sv, q);

	if (!g->started) {
		adopt_device(g);
		g->started = true;
		reasons |= GOV_R_INIT;
	}
	bool oob = check_out_of_band(g);
	struct ctl_input in = {
		.est = est,
		.pol = g->cfg.pol,
		.lim = &g->lim,
		.cur = &g->cur,
		.period_s = g->period_s,
		.n_slices = g->n_slices,
		.policy_int8 = g->policy_int8,
		.max_drop = g->max_drop,
		.rule = g->rule,
	};
	struct ctl_output out = { .binding = GOV_B_NONE };
	g->ctl->step(g->ctl_state, &in, &out);
	out.op.n_slices = g->n_slices;
	clamp_int8(g, est, &out.op);
	reasons |= out.reasons;
	enum gov_binding binding = out.binding;

	struct rb_input ri = {
		.t_ms = now,
		.est = est,
		.cur = &g->cur,
		.safety = g->safety,
		.clamp_events = g->sample.clamp_events,
		.fault_onsets = g->val.onsets,
	};
	rollback_step(&g->rb, &ri, &out.op, &reasons, &binding);
	if (g->operator_hold) {
		out.op = g->cur;
		out.op.n_slices = g->n_slices;
	}
	check_envelope(g, est->temp_c[HAL_TEMP_INLET]);

	struct gov_opoint after;
	guard_policy_budget(&g->guard, est->power_w, g->period_s);
	guard_apply(&g->guard, &g->cur, &out.op, est->critical_fault, &after, &reasons, &binding);
	g->safety = (reasons & (GOV_R_SAFE_POINT | GOV_R_SAFE_HOLD | GOV_R_ENVELOPE)) != 0;
	enum gov_evidence ev[HAL_MAX_SLICES];
	apply_asks(g, &out, &after, ev);
	struct gov_opoint before;
	reasons |= apply_point(g, &after, &before);
	struct declog_record rec;
	record_init(g, now, est, &before, &after, reasons, binding, &rec);
	rec.why = &out.why;
	rec.evidence = ev;
	rec.evidence_budget = out.evidence_budget;
	if (oob) {
		rec.oob_found_mw = g->oob_found_mw;
		rec.oob_expected_mw = g->oob_expected_mw;
	}
	rec.serving_faults = sv_faults;
	rec.serving_fault_msg = sv_faults ? g->serving.fault_msg : NULL;
	rec.quality_faults = q_faults;
	rec.quality_fault_msg = q_faults ? g->quality.fault_msg : NULL;
	rc = declog_decision(&g->log, &rec);
	if (rc)
		return rc;
	int stop = 0;
	if (g->cfg.on_period) {
		struct gov_period p = {
			.rec = &rec,
			.sample = &g->sample,
			.serving = sv,
		};
		stop = g->cfg.on_period(g->cfg.cb_ctx, &p);
	}
	g->seq++;
	return stop ? 1 : 0;
}

int governor_run(struct governor *g, uint64_t end_ms)
{
	uint64_t period_ms = g->cfg.pol->control.period_ms;

	for (;;) {
		uint64_t now = govd_clock_now_ms(g->cfg.clock);
		if (now >= end_ms)
			return 0;
		int rc = governor_tick(g);
		if (rc < 0)
			return rc;
		if (rc > 0)
			return 0;
		uint64_t next = now + period_ms;
		if (next > end_ms)
			next = end_ms;
		rc = govd_clock_wait_until(g->cfg.clock, next);
		if (rc < 0)
			return rc;
	}
}

int governor_set_power_budget_mw(struct governor *g, uint32_t cap_mw)
{
	if (!g->ctl)
		return -EINVAL;
	guard_set_budget_mw(&g->guard, cap_mw);
	return 0;
}

void governor_clear_power_budget(struct governor *g)
{
	if (g->ctl)
		guard_clear_budget(&g->guard);
}

void governor_hold(struct governor *g, bool hold)
{
	g->operator_hold = hold;
}

int governor_emergency(struct governor *g, const char *why)
{
	if (!g->ctl)
		return -EINVAL;
	uint64_t now = govd_clock_now_ms(g->cfg.clock);
	uint32_t reasons = 0;
	enum gov_binding binding = GOV_B_NONE;

	if (!g->started) { /* before the first period: the device as the HAL describes it */
		adopt_device(g);
		g->started = true;
		reasons |= GOV_R_INIT;
	}
	struct gov_opoint after;
	guard_emergency(&g->guard, g->n_slices, &after, &reasons, &binding);
	g->safety = true;
	struct gov_opoint before;
	reasons |= apply_point(g, &after, &before);
	g->emergencies++;
	struct declog_record rec;
	/* The last period's estimates: nothing was sampled outside it. */
	record_init(g, now, &g->est.est, &before, &after, reasons, binding, &rec);
	rec.emergency = why ? why : "";
	rec.armed = rec.fired = 0; /* nothing was judged outside the period */
	g->seq++;
	return declog_decision(&g->log, &rec);
}

/* The power limit a restore puts back: the backend's record of the
 * originals when it keeps one (after a crash, the adopted one, not what
 * this run's first sample saw), else the first sample's. */
static uint32_t restored_limit_mw(const struct governor *g)
{
	struct hal_dev *dev = g->cfg.dev;
	char buf[4096];
	uint32_t mw = g->orig_power_limit_mw;
	if (!dev->ops->get_original || dev->ops->get_original(dev, buf, sizeof(buf)))
		return mw;
	json_t *j = json_loads(buf, 0, NULL);
	json_t *v = json_object_get(j, "power_limit_mw");
	if (json_is_integer(v) && json_integer_value(v) > 0 &&
	    json_integer_value(v) <= HAL_POWER_MAX_MW)
		mw = (uint32_t)json_integer_value(v);
	json_decref(j);
	return mw;
}

int governor_restore(struct governor *g)
{
	struct hal_dev *dev = g->cfg.dev;
	int rc = 0, r;

	if (g->restored || !g->started)
		return 0;
	/* The backend owns the originals (found at open, or adopted from a
	 * crashed run's state file): its restore is the one (governor_init
	 * refused a device that writes without one). */
	if (g->wrote)
		rc = dev->ops->restore(dev);
	struct gov_opoint orig = { .clk_locked = false,
				   .clk_min_khz = g->lim.clk_min_khz,
				   .clk_max_khz = g->lim.clk_default_max_khz,
				   .power_limit_mw = restored_limit_mw(g),
				   .n_slices = g->n_slices };
	/* Done only when every write went through: a failed restore is tried
	 * again (governor_fini, the daemon's shutdown) rather than forgotten. */
	g->restored = rc == 0;
	if (!rc)
		g->cur = orig;
	r = declog_restore(&g->log, govd_clock_now_ms(g->cfg.clock), &orig, rc);
	return rc ? rc : r;
}

static void governor_fini(struct governor *g)
{
	if (!g->ctl)
		return;
	governor_restore(g);
	declog_fini(&g->log);
	if (g->ctl->fini)
		g->ctl->fini(g->ctl_state);
	rollback_fini(&g->rb);
	guard_fini(&g->guard);
	estimate_fini(&g->est);
	validate_fini(&g->val);
	g->ctl = NULL;
}

int governor_new(const struct governor_cfg *cfg, struct governor **out, struct diag_list *diags)
{
	struct governor *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc = governor_init(g, cfg, diags);
	if (rc) {
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void governor_free(struct governor *g)
{
	if (!g)
		return;
	governor_fini(g);
	free(g);
}

void governor_handover(struct governor *neu, struct governor *old)
{
	neu->started = old->started;
	neu->wrote = old->wrote;
	neu->orig_power_limit_mw = old->orig_power_limit_mw;
	neu->cur = old->cur;
	neu->seq = old->seq;
	neu->actuate_errors = old->actuate_errors;
	governor_abandon(old); /* neu carries on */
}

void governor_abandon(struct governor *g)
{
	g->restored = true;
}

void governor_assume_point(struct governor *g, const struct gov_opoint *op)
{
	g->cur = *op;
}

const struct policy *governor_policy(const struct governor *g)
{
	return g->cfg.pol;
}

const struct hal_limits *governor_limits(const struct governor *g)
{
	return &g->lim;
}

const struct gov_opoint *governor_point(const struct governor *g)
{
	return &g->cur;
}

const struct gov_estimates *governor_estimates(const struct governor *g)
{
	return &g->est.est;
}

const enum gov_fault *governor_faults(const struct governor *g)
{
	return g->faults;
}

size_t governor_slices(const struct governor *g, const char (**names)[HAL_NAME_LEN])
{
	*names = (const char(*)[HAL_NAME_LEN])g->slice_name;
	return g->n_slices;
}

void governor_status(const struct governor *g, struct governor_status *out)
{
	*out = (struct governor_status){
		.started = g->started,
		.hold = g->operator_hold,
		.restored = g->restored,
		.periods = g->seq,
		.actuate_errors = g->actuate_errors,
		.oob_changes = g->oob_changes,
		.emergencies = g->emergencies,
		.rollbacks = g->rb.rollbacks,
		.recoveries = g->rb.recoveries,
		.rb_state = g->rb.state,
		.fault_onsets = g->val.onsets,
		.orig_power_limit_mw = g->orig_power_limit_mw,
		.envelope = g->outside_envelope ? g->envelope_why : NULL,
		.controller = g->ctl ? g->ctl->name : "",
	};
}

uint32_t governor_power_request_mw(const struct governor *g)
{
	if (!g->started)
		return g->lim.power_limit_max_mw;
	const struct gov_estimates *e = &g->est.est;
	if (e->throttle & HAL_THR_POWER_CAP)
		return g->lim.power_limit_max_mw;
	double w = e->power_w[HAL_RAIL_ACCEL];
	if (!(w > 0))
		return g->lim.power_limit_max_mw;
	double mw = w * 1000.0;
	return mw > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)mw;
}
