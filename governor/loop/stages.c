/* The loop's stages that need no device (stage.h): validate, estimate,
 * decide, rollback and guard, each an adapter of one shape around its
 * module (telemetry/, controllers/, loop/), where what the policy means
 * for that module is worked out once, at init. */
#include "governor/loop/stage.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The stuck detector's witness must have moved 5 W or 5 % utilisation; the
 * validator's other settings are the policy's (defaults: policy_defaults). */
#define STUCK_WITNESS 5.0
/* The junction temperature trend's filter time constant (s). */
#define TREND_TAU_S 5.0
/* Back inside an inlet range only this far from its edges: a sensor
 * dithering on the edge must not flip the device every period. */
#define ENVELOPE_HYST_C 1.0

/* ---- validate ---- */

static int validate_stage_init(void *state, const struct policy *pol, const struct hal_limits *lim,
			       const struct policy_slices *slices)
{
	(void)lim;
	(void)slices;
	struct validate_cfg vc = {
		.stale_ms = pol->telemetry.stale_ms,
		.stuck_periods = pol->telemetry.stuck_periods,
		.stuck_witness_w = STUCK_WITNESS,
	};
	return validate_init(state, &vc);
}

static void validate_stage_step(void *state, struct gov_period *p)
{
	struct validator *v = state;
	gov_readings_from_sample(p->sample, p->rd);
	p->n_faults = validate_step(v, p->t_ms, p->rd, p->faults);
	p->counters.fault_onsets = v->onsets;
	p->rec.faults = p->faults;
}

static void validate_stage_fini(void *state)
{
	validate_fini(state);
}

const struct gov_stage_ops gov_stage_validate = {
	.name = "validate",
	.init = validate_stage_init,
	.step = validate_stage_step,
	.fini = validate_stage_fini,
};

/* ---- estimate ---- */

static int estimate_stage_init(void *state, const struct policy *pol, const struct hal_limits *lim,
			       const struct policy_slices *slices)
{
	(void)lim;
	struct estimate_cfg ec = {
		.period_s = pol->control.period_ms / 1000.0,
		.ewma_tau_s = pol->telemetry.ewma_tau_s,
		.trend_tau_s = TREND_TAU_S,
		.window_s = pol->sla.window_s,
		.ceiling_c = pol->thermal.ceiling_c,
		.n_q = slices->n,
	};
	for (int m = 0; m < SLA_N_METRICS; m++)
		ec.over_ms[m] = pol->sla.latency_ms[SLA_INDEX(m, SLA_P99)];
	for (size_t s = 0; s < slices->n; s++) {
		const struct policy_slice_rule *r = &slices->rule[s];
		ec.q[s] = (struct est_quality_cfg){
			.max_drop = r->max_drop,
			.confidence = r->confidence,
			.min_samples = r->min_samples,
			.prior_samples = r->offline_samples,
			.prior_mismatches = r->offline_mismatches,
			.confirm_samples = r->confirm_samples,
		};
		if (r->fp8_allowed) { /* the FP8 rung's own gate: its own prior */
			ec.q[est_q_row(s, HAL_LOW_FP8)] = ec.q[s];
			ec.q[est_q_row(s, HAL_LOW_FP8)].prior_samples = r->fp8_offline_samples;
			ec.q[est_q_row(s, HAL_LOW_FP8)].prior_mismatches = r->fp8_offline_mismatches;
		}
	}
	return estimate_init(state, &ec);
}

static void estimate_stage_step(void *state, struct gov_period *p)
{
	p->est = estimate_step(state, p->t_ms, p->rd, p->faults, p->n_faults, p->sample->throttle,
			       p->serving, p->quality);
	p->rec.est = p->est;
}

static void estimate_stage_fini(void *state)
{
	estimate_fini(state);
}

const struct gov_stage_ops gov_stage_estimate = {
	.name = "estimate",
	.init = estimate_stage_init,
	.step = estimate_stage_step,
	.fini = estimate_stage_fini,
};

/* ---- decide ---- */

static int decide_stage_init(void *state, const struct policy *pol, const struct hal_limits *lim,
			     const struct policy_slices *slices)
{
	struct gov_decider *d = state;
	/* policy_load() refused any other name, with its location: the one
	 * place an unknown controller is reported (policy.c). */
	if (!d->ctl)
		d->ctl = controller_find(pol->control.controller);
	assert(d->ctl);
	if (!d->ctl)
		return -ENOENT;
	d->ctl_state = NULL;
	d->pol = pol;
	d->lim = lim;
	d->slices = slices;
	d->period_s = pol->control.period_ms / 1000.0;
	return d->ctl->init ? d->ctl->init(&d->ctl_state, pol, lim) : 0;
}

/* The policy's INT8 bounds per slice, whatever the controller asked:
 * none where int8 is not in precision.modes, at most int8_max_fraction, and
 * at least int8_min_fraction while the slice's quality gate is open (a
 * minimum never forces INT8 past the quality threshold). */
static void clamp_int8(const struct policy_slices *slices, const struct gov_estimates *est,
		       struct gov_opoint *op)
{
	for (size_t s = 0; s < op->n_slices; s++) {
		const struct policy_slice_rule *r = &slices->rule[s];
		double f = op->int8_frac[s];
		bool fp8 = op->low_mode[s] == HAL_LOW_FP8;
		/* a rung the policy lacks, or no rung at all */
		if (op->low_mode[s] >= HAL_LOW_N || (fp8 ? !r->fp8_allowed : !r->int8_allowed)) {
			op->low_mode[s] = r->fp8_allowed ? HAL_LOW_FP8 : HAL_LOW_INT8;
			f = 0;
		}
		if (!r->low_allowed || isnan(f) || f < 0)
			f = 0;
		if (f > r->int8_max_fraction)
			f = r->int8_max_fraction;
		if (est->q_gate_open[est_q_row(s, op->low_mode[s])] && f < r->int8_min_fraction)
			f = r->int8_min_fraction;
		op->int8_frac[s] = f;
	}
}

static void decide_stage_step(void *state, struct gov_period *p)
{
	struct gov_decider *d = state;
	struct ctl_input in = {
		.est = p->est,
		.pol = d->pol,
		.lim = d->lim,
		.cur = &p->cur,
		.period_s = d->period_s,
		.slices = d->slices,
	};
	p->want = (struct ctl_output){ .binding = GOV_B_NONE };
	d->ctl->step(d->ctl_state, &in, &p->want);
	p->want.op.n_slices = d->slices->n;
	clamp_int8(d->slices, p->est, &p->want.op);
	p->reasons |= p->want.reasons;
	p->binding = p->want.binding;
	p->rec.why = &p->want.why;
	p->rec.evidence_budget = p->want.evidence_budget;
	p->rec.heat_prior = p->want.heat_prior;
	p->rec.mix_held = p->want.mix_held;
	p->rec.detect_held_s = p->want.detect_held_s;
}

static void decide_stage_fini(void *state)
{
	struct gov_decider *d = state;
	if (d->ctl && d->ctl->fini)
		d->ctl->fini(d->ctl_state);
	d->ctl_state = NULL;
}

const struct gov_stage_ops gov_stage_decide = {
	.name = "decide",
	.init = decide_stage_init,
	.step = decide_stage_step,
	.fini = decide_stage_fini,
};

/* ---- rollback ---- */

/* The rollback manager: the safe point and the last-known-good fallback
 * the policy names, the per-slice quality triggers. */
static int rollback_stage_init(void *state, const struct policy *pol, const struct hal_limits *lim,
			       const struct policy_slices *slices)
{
	struct rb_cfg rc_cfg = { .pol = pol, .lim = lim, .n_slices = slices->n };
	struct guard guard;
	int rc = guard_init(&guard, pol, lim);
	if (rc)
		return rc;
	guard_safe_point(&guard, slices->n, &rc_cfg.safe);
	guard_fini(&guard);
	if (pol->rollback.lkg_fallback == POLICY_LKG_SAFE_POINT) {
		rc_cfg.fallback = rc_cfg.safe;
	} else { /* firmware default: unlocked clocks, default limit, BF16 */
		rc_cfg.fallback.clk_min_khz = lim->clk_min_khz;
		rc_cfg.fallback.clk_max_khz = lim->clk_default_max_khz;
		rc_cfg.fallback.power_limit_mw = lim->power_limit_default_mw;
		rc_cfg.fallback.n_slices = slices->n;
	}
	for (size_t s = 0; s < slices->n; s++) {
		rc_cfg.max_drop[s] = slices->rule[s].max_drop;
		rc_cfg.min_samples[s] = slices->rule[s].min_samples;
	}
	return rollback_init(state, &rc_cfg);
}

void gov_rollback_record(const struct rollback *rb, uint64_t t_ms, struct declog_record *rec)
{
	rec->armed = rb->armed;
	rec->fired = rb->fired;
	rec->rb_state = rb->state;
	rec->lkg = rb->have_lkg ? &rb->lkg : NULL;
	rec->hold_left_s = rollback_hold_left_s(rb, t_ms);
	rec->rollbacks = rb->rollbacks;
}

static void rollback_stage_step(void *state, struct gov_period *p)
{
	struct rollback *rb = state;
	struct rb_input ri = {
		.t_ms = p->t_ms,
		.est = p->est,
		.cur = &p->cur,
		.safety = p->cur_safety,
		.clamp_events = p->sample->clamp_events,
		.fault_onsets = p->counters.fault_onsets,
	};
	rollback_step(rb, &ri, &p->want.op, &p->reasons, &p->binding);
	p->counters.rollbacks = rb->rollbacks;
	p->counters.recoveries = rb->recoveries;
	gov_rollback_record(rb, p->t_ms, &p->rec);
}

static void rollback_stage_fini(void *state)
{
	rollback_fini(state);
}

const struct gov_stage_ops gov_stage_rollback = {
	.name = "rollback",
	.init = rollback_stage_init,
	.step = rollback_stage_step,
	.fini = rollback_stage_fini,
};

/* ---- guard ---- */

static int guard_stage_init(void *state, const struct policy *pol, const struct hal_limits *lim,
			    const struct policy_slices *slices)
{
	struct gov_guard_stage *gs = state;
	memset(gs, 0, sizeof(*gs));
	gs->n_slices = slices->n;
	return guard_init(&gs->guard, pol, lim);
}

/* The envelope this period: device limits and the inlet (last good
 * reading), with hysteresis on the way back in. */
static void check_envelope(struct gov_guard_stage *gs, double inlet_c)
{
	const struct policy *pol = gs->guard.pol;
	const struct hal_limits *lim = &gs->guard.lim;
	bool in = policy_envelope_check(pol, lim, inlet_c, gs->envelope_why,
					sizeof(gs->envelope_why));
	if (in && gs->outside_envelope && isfinite(inlet_c)) {
		char tmp[8];
		in = policy_envelope_check(pol, lim, inlet_c - ENVELOPE_HYST_C, tmp, sizeof(tmp)) &&
		     policy_envelope_check(pol, lim, inlet_c + ENVELOPE_HYST_C, tmp, sizeof(tmp));
		if (!in)
			snprintf(gs->envelope_why, sizeof(gs->envelope_why),
				 "inlet %.1f C within %.1f C of the envelope's edge (%g..%g C)", inlet_c,
				 ENVELOPE_HYST_C, pol->envelope.inlet_min_c, pol->envelope.inlet_max_c);
	}
	gs->outside_envelope = !in;
	guard_set_envelope(&gs->guard, !in);
}

void gov_guard_record(const struct gov_guard_stage *gs, struct declog_record *rec)
{
	rec->envelope = gs->outside_envelope ? gs->envelope_why : NULL;
	rec->power_budget_on = gs->guard.budget_on;
	rec->power_budget_mw = gs->guard.budget_on ? gs->guard.budget_mw : 0;
}

/* An operator hold keeps the point in force; then the envelope, the
 * policy's average-power budget and the guard's clamps. */
static void guard_stage_step(void *state, struct gov_period *p)
{
	struct gov_guard_stage *gs = state;
	if (p->hold) {
		p->want.op = p->cur;
		p->want.op.n_slices = gs->n_slices;
	}
	check_envelope(gs, p->est->temp_c[HAL_TEMP_INLET]);
	guard_policy_budget(&gs->guard, p->est->power_w, gs->guard.pol->control.period_ms / 1000.0);
	guard_apply(&gs->guard, &p->cur, &p->want.op, p->est->critical_fault, &p->after, &p->reasons,
		    &p->binding);
	p->safety = (p->reasons & (GOV_R_SAFE_POINT | GOV_R_SAFE_HOLD | GOV_R_ENVELOPE)) != 0;
	gov_guard_record(gs, &p->rec);
}

static void guard_stage_fini(void *state)
{
	struct gov_guard_stage *gs = state;
	guard_fini(&gs->guard);
}

const struct gov_stage_ops gov_stage_guard = {
	.name = "guard",
	.init = guard_stage_init,
	.step = guard_stage_step,
	.fini = guard_stage_fini,
};
