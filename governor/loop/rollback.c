/* Rollback manager: state machine and equations in docs/rollback.md. */
#include "governor/loop/rollback.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const state_names[RB_N] = { "normal", "canary", "hold" };

const char *rollback_state_name(enum rb_state s)
{
	return (unsigned)s < RB_N ? state_names[s] : "?";
}

int rollback_init(struct rollback *rb, const struct rb_cfg *cfg)
{
	if (!cfg->pol || !cfg->lim || cfg->n_slices > HAL_MAX_SLICES)
		return -EINVAL;
	const struct policy_rollback *r = &cfg->pol->rollback;

	memset(rb, 0, sizeof(*rb));
	rb->cfg = *cfg;
	rb->cfg.fallback.n_slices = cfg->n_slices;
	if (r->sla_violated_windows > 0 && r->sla_of_windows > 0)
		rb->enabled |= GOV_T_SLA;
	if (r->quality_breach)
		rb->enabled |= GOV_T_QUALITY;
	if (r->thermal_clamp_events > 0)
		rb->enabled |= GOV_T_THERMAL;
	if (r->telemetry_faults > 0)
		rb->enabled |= GOV_T_TELEMETRY;
	double w = cfg->pol->sla.window_s > 0 ? cfg->pol->sla.window_s : 60;
	rb->window_ms = (uint64_t)llround(w * 1000.0);
	if (rb->window_ms == 0)
		rb->window_ms = 1;
	rb->canary_ms = r->canary_s > 0 ? (uint64_t)llround(r->canary_s * 1000.0) : 0;
	rb->state = RB_NORMAL;
	return 0;
}

void rollback_fini(struct rollback *rb)
{
	memset(rb, 0, sizeof(*rb));
}

double rollback_hold_s(const struct policy_rollback *r, uint32_t k)
{
	double h = r->hold_s * pow(r->backoff_factor > 1 ? r->backoff_factor : 1, k > 1 ? k - 1 : 0);
	return h > r->max_hold_s ? r->max_hold_s : h;
}

double rollback_hold_left_s(const struct rollback *rb, uint64_t t_ms)
{
	if (rb->state != RB_HOLD || t_ms >= rb->hold_end_ms)
		return 0;
	return (double)(rb->hold_end_ms - t_ms) / 1000.0;
}

bool rollback_sla_met(const struct policy *pol, const struct gov_estimates *est)
{
	struct sla_window_obs o = estimate_sla_obs(est);
	return sla_judge(pol->sla.latency_ms, pol->sla.min_tokens_per_s, &o, NULL) != SLA_MISSED;
}

/* The clock cap an op point sets; unlocked runs up to the default boost. */
static uint32_t clk_cap(const struct rollback *rb, const struct gov_opoint *op)
{
	return op->clk_locked ? op->clk_max_khz : rb->cfg.lim->clk_default_max_khz;
}

static bool below(uint32_t v, uint32_t ref)
{
	return (double)v < (double)ref * (1.0 - RB_CHANGE_TOL);
}

/* Whether cur is a change against the reference (precision mix differs, or
 * clock cap / power limit fell by more than the tolerance). A change becomes
 * the new reference; otherwise upward moves raise the reference, so that a
 * later fall back down is a change, and small falls keep it, so that a slow
 * creep is caught once it adds up. */
static bool detect_change(struct rollback *rb, const struct gov_opoint *cur)
{
	struct gov_opoint *ref = &rb->ref;
	bool prec = false;

	for (size_t s = 0; s < rb->cfg.n_slices; s++)
		prec |= fabs(cur->int8_frac[s] - ref->int8_frac[s]) > 1e-9 ||
			cur->low_mode[s] != ref->low_mode[s];
	if (prec || below(clk_cap(rb, cur), clk_cap(rb, ref)) ||
	    below(cur->power_limit_mw, ref->power_limit_mw)) {
		*ref = *cur;
		return true;
	}
	if (clk_cap(rb, cur) > clk_cap(rb, ref)) {
		ref->clk_locked = cur->clk_locked;
		ref->clk_min_khz = cur->clk_min_khz;
		ref->clk_max_khz = cur->clk_max_khz;
	}
	if (cur->power_limit_mw > ref->power_limit_mw)
		ref->power_limit_mw = cur->power_limit_mw;
	return false;
}

/* Misses among the last m entries of a ring holding n so far. */
static uint32_t ring_misses(const bool *ring, size_t n_so_far, uint32_t m)
{
	size_t n = n_so_far < m ? n_so_far : m;
	uint32_t misses = 0;

	for (size_t i = 0; i < n; i++)
		misses += ring[(n_so_far - 1 - i) % m];
	return misses;
}

static void promote(struct rollback *rb, const struct gov_opoint *cur)
{
	/* While changes are under watch (or just undone), the point that was
	 * in force when this clean window began: it has served at least one
	 * whole clean window. The point in force now may be minutes old (a
	 * change at 4:59 must not be LKG at 5:00, or a rollback would revert
	 * to the change itself). */
	rb->lkg = rb->state == RB_NORMAL ? *cur : rb->win_first;
	rb->lkg.n_slices = rb->cfg.n_slices;
	rb->have_lkg = true;
}

/* Judges a finished SLA window (sla_judge()). Only windows with
 * completions count: the rollback compares latencies, and a window where
 * nothing completed has none. */
static void close_window(struct rollback *rb, const struct rb_input *in, uint32_t m)
{
	const struct gov_estimates *e = in->est;
	const struct policy_rollback *r = &rb->cfg.pol->rollback;

	if (e->serving_ok && e->window_requests > 0) {
		bool met = rollback_sla_met(rb->cfg.pol, e);
		/* Missed at the most clock: the load, not a change, missed it;
		 * neither the canary nor the record before one counts it. */
		bool overload = sla_window_overload(met ? SLA_MET : SLA_MISSED, &rb->win_load);
		rb->windows_judged++;
		rb->windows_missed += !met;
		rb->windows_overload += overload;
		if (!overload) {
			rb->hist_miss[rb->hist_n % m] = !met;
			rb->hist_n++;
		}
		if (rb->state == RB_CANARY && !overload) {
			rb->canary_miss[rb->canary_n % m] = !met;
			rb->canary_n++;
		}
		if (met && !rb->win_trigger) {
			rb->clean_windows++;
			if (rb->clean_windows >= r->lkg_min_clean_windows)
				promote(rb, in->cur);
			if (rb->state == RB_NORMAL)
				rb->consecutive = 0;
		} else {
			rb->clean_windows = 0;
		}
	}
	rb->win_start_ms = in->t_ms;
	rb->win_first = *in->cur;
	rb->win_trigger = false;
	rb->win_load = (struct sla_window_load){ 0 };
}

static uint32_t check_triggers(struct rollback *rb, const struct rb_input *in, uint32_t m,
			       uint32_t *bf16_mask)
{
	const struct policy_rollback *r = &rb->cfg.pol->rollback;
	const struct gov_estimates *e = in->est;
	uint32_t fired = 0;

	/* A regression: N of the last M missed in the canary, where the M
	 * before the change had fewer (else the change is not what broke it). */
	if ((rb->enabled & GOV_T_SLA) && rb->pre_misses < r->sla_violated_windows &&
	    ring_misses(rb->canary_miss, rb->canary_n, m) >= r->sla_violated_windows)
		fired |= GOV_T_SLA;
	if (rb->enabled & GOV_T_QUALITY) {
		/* Below min_samples the bound says "not enough evidence", which
		 * is the quality gate's business, not a breach. */
		for (size_t s = 0; s < rb->cfg.n_slices && s < e->n_slices; s++) {
			size_t row = est_q_row(s, in->cur->low_mode[s]); /* the rung served */
			if (in->cur->int8_frac[s] > 0 && e->q_samples[s] > 0 &&
			    e->q_samples[s] >= rb->cfg.min_samples[s] &&
			    e->q_drop_upper[row] > rb->cfg.max_drop[s]) {
				fired |= GOV_T_QUALITY;
				*bf16_mask |= 1u << s;
			}
		}
	}
	/* A counter that went backwards (device re-initialised) restarted from
	 * zero: what it holds now happened since, inside the canary. */
	if (in->clamp_events < rb->canary_clamp0 || in->clamp_events < rb->prev_clamp)
		rb->canary_clamp0 = 0;
	if (in->fault_onsets < rb->canary_faults0 || in->fault_onsets < rb->prev_faults)
		rb->canary_faults0 = 0;
	if ((rb->enabled & GOV_T_THERMAL) &&
	    in->clamp_events - rb->canary_clamp0 >= r->thermal_clamp_events)
		fired |= GOV_T_THERMAL;
	if ((rb->enabled & GOV_T_TELEMETRY) &&
	    in->fault_onsets - rb->canary_faults0 >= r->telemetry_faults)
		fired |= GOV_T_TELEMETRY;
	return fired;
}

static void fire(struct rollback *rb, const struct gov_opoint *cur, uint64_t t_ms,
		 uint32_t fired, uint32_t bf16_mask)
{
	rb->fired = fired;
	rb->rollbacks++;
	for (int i = 0; i < GOV_T_COUNT; i++)
		if (fired & (1u << i))
			rb->rollbacks_by[i]++;
	rb->consecutive++;
	for (size_t s = 0; s < rb->cfg.n_slices; s++) {
		if (!(bf16_mask & (1u << s)))
			continue;
		rb->lkg.int8_frac[s] = 0; /* the slice regressed: BF16 there from now on */
		rb->cfg.fallback.int8_frac[s] = 0;
	}
	rb->held = rb->have_lkg ? rb->lkg : rb->cfg.fallback;
	rb->held.n_slices = rb->cfg.n_slices;
	/* An SLA miss is never answered with a slower device: a fallback chosen
	 * for safety (or an LKG from lighter load) keeps at least the clock cap
	 * and power limit that missed. */
	if (fired & GOV_T_SLA) {
		if (clk_cap(rb, cur) > clk_cap(rb, &rb->held)) {
			rb->held.clk_locked = cur->clk_locked;
			rb->held.clk_min_khz = cur->clk_min_khz;
			rb->held.clk_max_khz = cur->clk_max_khz;
		}
		if (cur->power_limit_mw > rb->held.power_limit_mw)
			rb->held.power_limit_mw = cur->power_limit_mw;
	}
	/* A thermal clamp is never answered with more heat: the held point's
	 * clock cap and power limit stay at or under both what clamped and the
	 * policy's safe point (an LKG at max boost would clamp again). */
	if (fired & GOV_T_THERMAL) {
		const struct gov_opoint *lim[2] = { cur, &rb->cfg.safe };
		for (int i = 0; i < 2; i++) {
			if (clk_cap(rb, &rb->held) > clk_cap(rb, lim[i])) {
				rb->held.clk_locked = true;
				rb->held.clk_max_khz = clk_cap(rb, lim[i]);
				if (rb->held.clk_min_khz > rb->held.clk_max_khz)
					rb->held.clk_min_khz = rb->held.clk_max_khz;
			}
			if (lim[i]->power_limit_mw && rb->held.power_limit_mw > lim[i]->power_limit_mw)
				rb->held.power_limit_mw = lim[i]->power_limit_mw;
		}
	}
	double h = rollback_hold_s(&rb->cfg.pol->rollback, rb->consecutive);
	rb->hold_end_ms = t_ms + (uint64_t)llround(h * 1000.0);
	rb->state = RB_HOLD;
	rb->win_trigger = true;
	rb->clean_windows = 0;
	rb->canary_n = 0;
}

bool rollback_step(struct rollback *rb, const struct rb_input *in, struct gov_opoint *want,
		   uint32_t *reasons, enum gov_binding *binding)
{
	const struct policy_rollback *r = &rb->cfg.pol->rollback;
	uint32_t m = r->sla_of_windows < RB_MAX_WINDOWS ? r->sla_of_windows : RB_MAX_WINDOWS;
	uint64_t t = in->t_ms;
	bool override = false;
	/* A hold keeps the controller's thermal cuts (below): at such a point
	 * a rollback has no more clock to give. */
	bool heat = *binding == GOV_B_CEILING || *binding == GOV_B_THERMAL;

	if (m == 0)
		m = 1;
	rb->armed = rb->fired = 0;
	if (!rb->started) {
		rb->started = true;
		rb->win_start_ms = t;
		rb->ref = rb->win_first = *in->cur;
		rb->prev_clamp = in->clamp_events;
		rb->prev_faults = in->fault_onsets;
	}
	if (!rb->enabled)
		goto out;

	/* What the last period applied. */
	if (rb->state == RB_HOLD || in->safety) {
		rb->ref = *in->cur;
	} else if (detect_change(rb, in->cur) && rb->canary_ms > 0) {
		if (rb->state == RB_NORMAL) {
			rb->state = RB_CANARY;
			rb->canaries++;
			rb->canary_n = 0;
			rb->canary_clamp0 = rb->prev_clamp;
			rb->canary_faults0 = rb->prev_faults;
			rb->pre_misses = ring_misses(rb->hist_miss, rb->hist_n, m);
		}
		rb->canary_end_ms = t + rb->canary_ms; /* a further change restarts it */
	}

	/* The period just gone: requests waited, at the max clock cap or under it. */
	if (in->est->queue_len > 0) {
		/* one period's share bounded, so a window's sum cannot wrap */
		uint64_t q = in->est->queue_len < UINT32_MAX ? in->est->queue_len : UINT32_MAX;
		rb->win_load.waited += q;
		if (rb->prev_heat || clk_cap(rb, in->cur) >= rb->cfg.lim->clk_default_max_khz)
			rb->win_load.waited_at_max += q;
	}
	if (t >= rb->win_start_ms + rb->window_ms)
		close_window(rb, in, m);

	if (rb->state == RB_CANARY) {
		uint32_t bf16_mask = 0;
		rb->armed = rb->enabled;
		uint32_t fired = check_triggers(rb, in, m, &bf16_mask);
		if (fired) {
			fire(rb, in->cur, t, fired, bf16_mask);
			*reasons |= GOV_R_ROLLBACK;
		} else if (t >= rb->canary_end_ms) {
			rb->state = RB_NORMAL; /* the change passed */
			rb->consecutive = 0;
		} else {
			*reasons |= GOV_R_CANARY;
		}
	} else if (rb->state == RB_HOLD) {
		if (t >= rb->hold_end_ms) {
			rb->state = RB_NORMAL;
			rb->recoveries++;
			rb->ref = *in->cur;
			*reasons |= GOV_R_ROLLBACK_RECOVER;
		} else {
			*reasons |= GOV_R_ROLLBACK_HOLD;
		}
	}
	if (rb->state == RB_HOLD) {
		struct gov_opoint hold = rb->held;
		enum gov_binding b = GOV_B_ROLLBACK;
		/* The controller's thermal cuts are safety moves the hold must
		 * not undo (it would pin an LKG at max boost through a heat
		 * wave): its clock cap and power limit bound the held point. */
		if (*binding == GOV_B_CEILING || *binding == GOV_B_THERMAL) {
			if (clk_cap(rb, want) < clk_cap(rb, &hold)) {
				hold.clk_locked = true;
				hold.clk_max_khz = clk_cap(rb, want);
				if (hold.clk_min_khz > hold.clk_max_khz)
					hold.clk_min_khz = hold.clk_max_khz;
				b = *binding;
			}
			if (want->power_limit_mw < hold.power_limit_mw) {
				hold.power_limit_mw = want->power_limit_mw;
				b = *binding;
			}
		}
		/* A slice whose quality gate closed during the hold gets no more
		 * INT8 than the controller now gives it: an LKG from before the
		 * regression must not keep serving it INT8 for up to max_hold_s. */
		for (size_t s = 0; s < rb->cfg.n_slices && s < in->est->n_slices; s++)
			if (!in->est->q_gate_open[est_q_row(s, hold.low_mode[s])] &&
			    hold.int8_frac[s] > want->int8_frac[s]) {
				hold.int8_frac[s] = want->int8_frac[s];
				hold.low_mode[s] = want->low_mode[s];
			}
		hold.n_slices = want->n_slices;
		*want = hold;
		*binding = b;
		override = true;
	}
out:
	rb->prev_heat = heat;
	rb->prev_clamp = in->clamp_events;
	rb->prev_faults = in->fault_onsets;
	return override;
}
