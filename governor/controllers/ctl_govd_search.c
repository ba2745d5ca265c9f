/* The window search (docs/govd-controller.md, "Window search"; the
 * parameters' meaning: ctl_govd.c's table). Pure: no I/O. */
#include <math.h>

#include "common/sla.h"
#include "governor/controllers/ctl_govd_search.h"
#include "governor/controllers/ctl_internal.h"

/* What the load ring records of each period. */
enum { LOAD_MOST = 1, LOAD_LIGHT_WAIT = 2 };

void ctl_search_init(struct ctl_search *s, const struct policy *pol, const struct controller_ops *c,
		     uint32_t fmax_khz, uint32_t floor_khz, uint32_t idle_khz, double surge_queue)
{
	*s = (struct ctl_search){
		.fmax_khz = fmax_khz,
		.floor_khz = floor_khz,
		.idle_khz = idle_khz,
		.surge_queue = surge_queue,
		.low = ctl_param_value(pol, c, "search_low"),
		.high = ctl_param_value(pol, c, "search_high"),
		.down_khz = ctl_param_value(pol, c, "search_down_mhz") * 1000.0,
		.up_khz = ctl_param_value(pol, c, "search_up_mhz") * 1000.0,
		.short_s = ctl_param_value(pol, c, "search_short_s"),
		.memory = ctl_param_value(pol, c, "search_memory"),
		.start_khz = ctl_param_value(pol, c, "search_start_mhz") * 1000.0,
		.overload = ctl_param_value(pol, c, "search_overload"),
		.thermal = ctl_param_value(pol, c, "search_thermal") >= 0.5,
		.per_mode = ctl_param_value(pol, c, "search_per_mode") >= 0.5,
		.last_surge_s = -INFINITY,
		.risk_windows = ctl_param_value(pol, c, "search_risk_windows"),
		.aftermath_s = ctl_param_value(pol, c, "search_aftermath_s"),
		.aftermath_wait_s = ctl_param_value(pol, c, "search_aftermath_wait_s"),
		.aftermath_share = ctl_param_value(pol, c, "search_aftermath_share"),
		.idle_hot_s = ctl_param_value(pol, c, "search_idle_hot_s"),
		.heavy_n = ctl_param_value(pol, c, "search_heavy_running"),
		.heavy_share = ctl_param_value(pol, c, "search_heavy_share"),
		.heavy_hot_s = ctl_param_value(pol, c, "search_heavy_hot_s"),
		.surge_release = ctl_param_value(pol, c, "search_surge_release"),
		.risk_surge = ctl_param_value(pol, c, "search_risk_surge"),
		.risk_calm = ctl_param_value(pol, c, "search_risk_calm"),
		.heavy_start_khz = ctl_param_value(pol, c, "search_heavy_start_mhz") * 1000.0,
		.blame_wait = ctl_param_value(pol, c, "search_blame_wait") >= 0.5,
		.spike_unbarred = ctl_param_value(pol, c, "search_spike_unbarred") >= 0.5,
		.miss_at_max = ctl_param_value(pol, c, "search_miss_at_max") >= 0.5,
		.bar_lift = ctl_param_value(pol, c, "search_bar_lift"),
		.down_requests = ctl_param_value(pol, c, "search_down_requests"),
		.thin_low = ctl_param_value(pol, c, "search_thin_low"),
		.heavy_surge_share = ctl_param_value(pol, c, "search_heavy_surge_share"),
		.heavy_judge_share = ctl_param_value(pol, c, "search_heavy_judge_share"),
		.last_short_raise_s = -INFINITY,
		.win_idx = -1,
	};
}

/* A clock whose window or short window failed: barred from the descent for
 * search_memory windows (param 0: never barred). */
static void remember_bad(struct ctl_search *s, double khz)
{
	if (s->memory < 1)
		return;
	if (s->bad_left <= 0 || khz > s->bad_khz)
		s->bad_khz = khz;
	s->bad_left = (long)s->memory;
}

/* The risk budget: the windows the policy allows to miss (1 - attainment)
 * of those judged so far, counted over at least search_risk_windows. */
static double search_risk_allowed(const struct ctl_search *s, const struct policy *pol)
{
	return (1.0 - pol->sla.attainment) * fmax((double)s->risk_judged, s->risk_windows);
}

/* search_risk_calm: the run's last risk_calm busy windows all met the SLA.
 * Its misses came with bursts that have passed (fam-1012: one miss in
 * window 2, then 27 windows of insurance at 1.05-1.14x the energy of a
 * lock that met them), so the spent budget stops costing it. */
static bool search_risk_calm(const struct ctl_search *s)
{
	return s->risk_calm > 0 && (double)s->risk_met_since >= s->risk_calm;
}

/* The step-down threshold under the risk budget (param search_risk_windows):
 * search_low while the run's missed busy windows stay within the policy's
 * allowed share of them (counted over at least risk_windows), shrinking as
 * sqrt(allowed / missed) beyond it, so a run that spends its budget stops
 * descending onto the clocks that spent it; search_low again once calm. */
static double search_low_at_risk(const struct ctl_search *s, const struct policy *pol)
{
	if (!(s->risk_windows > 0) || s->risk_missed == 0 || search_risk_calm(s))
		return s->low;
	return s->low * sqrt(fmin(1.0, search_risk_allowed(s, pol) / (double)s->risk_missed));
}

/* search_risk_surge: the run has missed more windows than its budget
 * allows, so a request waiting, while cool, takes the max clock. On these
 * bursty loads the first request to wait is the burst's onset, and the
 * device at the max barely keeps up with a burst: the backlog a lower
 * clock builds in its first seconds is carried through the whole burst
 * (azure-code-30c window 9: 15-22 waiting at the max where the firmware,
 * at the max all along, had 11-16). A run that has missed once has bursts,
 * so it pays from then on (until calm: search_risk_calm); one that has
 * not pays nothing. */
static bool search_risk_spent(const struct ctl_search *s, const struct policy *pol)
{
	return s->risk_windows > 0 && (double)s->risk_missed > search_risk_allowed(s, pol) &&
	       !search_risk_calm(s);
}

/* A step down of *base_khz, never back onto bad_khz while it is barred
 * (bad_left windows); *last_move says which. */
static void base_down(const struct ctl_search *s, double *base_khz, enum gov_why_move *last_move,
		      double bad_khz, long bad_left, enum gov_why_move move)
{
	*base_khz -= s->down_khz;
	*last_move = move;
	if (bad_left > 0 && *base_khz <= bad_khz) {
		*base_khz = bad_khz + s->up_khz;
		*last_move = GOV_WHY_M_BARRED;
	}
}

/* A step down of the base in force. */
static void search_down(struct ctl_search *s, enum gov_why_move move)
{
	base_down(s, &s->base_khz, &s->last_move, s->bad_khz, s->bad_left, move);
}

/* search_thin_low: a busy window with fewer requests than
 * search_down_requests says little about the next busy one, so its tail
 * alone moves nothing (a light member then sat at its start all run, over
 * the clock its tails asked for). Quiet ones in a row at one base, each
 * under search_thin_low (a wider margin than search_low's: a few requests
 * show a thinner tail), pool their requests; once the pool holds
 * search_down_requests the base steps down. Thin evidence only trims what
 * no full window has judged: never under the lowest base a full window has
 * met, and before one has, one step under the start at most (a quiet
 * stretch under a base the busy windows chose ends in a busy window at a
 * clock none of them met). Returns true while the window's requests stay
 * pooled. */
static bool search_thin(struct ctl_search *s, double r, double low, double requests)
{
	double start_khz = s->start_khz > 0 ? s->start_khz : s->fmax_khz;
	double floor_khz = s->thin_full_khz > 0 ? s->thin_full_khz + s->down_khz : start_khz;
	if (!(s->thin_low > 0) || !(r > 0) || !(r < fmin(s->thin_low, low)) ||
	    s->base_khz < floor_khz - 1)
		return false;
	if (s->thin_base_khz != s->base_khz) {
		s->thin_pool = 0;
		s->thin_base_khz = s->base_khz;
	}
	s->thin_pool += requests;
	if (s->thin_pool < s->down_requests)
		return true;
	search_down(s, GOV_WHY_M_POOLED);
	return false;
}

/* search_heavy_surge_share: the window closing moves the heavy base and
 * met the SLA, its tail over search_low, while queue surges held the max
 * clock in at least this share of its busy periods. The max clock met it,
 * not the heavy base, which alone falls behind the load: near capacity the
 * tail stays just under the target window after window and the next one is
 * lost (the Azure conversation trace at 1.3-1.4x: TBT at 0.91-0.98 of the
 * target at a 1560 MHz heavy base for six windows, surges in 2-29 % of
 * their periods, then a window the firmware kept). A step up. */
static bool search_surge_held(const struct ctl_search *s, double r)
{
	return s->heavy_surge_share > 0 && s->cls_cur == 1 && r > s->low && s->win_periods > 0 &&
	       (double)s->win_surged >= s->heavy_surge_share * (double)s->win_periods;
}

/* search_heavy_judge_share: a window that moves the light base met the SLA,
 * and its heavy periods held SEARCH_JUDGE_MIN_SAMPLES TBT samples or more,
 * under this share of them over the target. The heavy base moves only on
 * heavy windows, and its short-window raises come in light ones: where heavy
 * windows are rare it only climbs (the Azure conversation trace at 0.8x:
 * 1650 -> 1740-1980 MHz, where the best pair with hindsight holds it at
 * 1395), so its own periods' tail judges it there. A step down (not onto a
 * clock barred for it, nor under the floor; cls_order keeps it over the
 * light base). The window's counts are cleared either way. */
static void search_heavy_judge(struct ctl_search *s, enum sla_verdict v, bool judge)
{
	if (s->heavy_judge_share > 0 && judge && v == SLA_MET && s->cls_cur == 0 &&
	    s->win_heavy_tbt_n >= SEARCH_JUDGE_MIN_SAMPLES &&
	    (double)s->win_heavy_tbt_over < s->heavy_judge_share * (double)s->win_heavy_tbt_n) {
		base_down(s, &s->cls[1].base_khz, &s->cls[1].last_move, s->cls[1].bad_khz,
			  s->cls[1].bad_left, GOV_WHY_M_JUDGED);
		if (s->cls[1].base_khz < s->floor_khz)
			s->cls[1].base_khz = s->floor_khz;
	}
	s->win_heavy_tbt_over = s->win_heavy_tbt_n = 0;
}

/* The closing window as the SLA judges it (sla_judge, the judgement the
 * rollback manager and the simulator use), once, for the risk budget,
 * search_thin_low's floor, search_heavy_judge_share and search_miss_at_max;
 * SLA_IDLE where none is on. */
static enum sla_verdict search_verdict(const struct ctl_search *s, const struct gov_estimates *e,
				       const struct policy *pol)
{
	if (!s->win_busy ||
	    !(s->risk_windows > 0 || s->thin_low > 0 || s->heavy_judge_share > 0 || s->miss_at_max))
		return SLA_IDLE;
	struct sla_window_obs o = estimate_sla_obs(e);
	return sla_judge(pol->sla.latency_ms, pol->sla.min_tokens_per_s, &o, NULL);
}

/* The risk budget counts the closing window as the SLA judged it. */
static void risk_count(struct ctl_search *s, enum sla_verdict v)
{
	if (!(s->risk_windows > 0) || v == SLA_IDLE)
		return;
	s->risk_judged++;
	s->risk_missed += v == SLA_MISSED;
	if (v == SLA_MISSED)
		s->risk_met_since = 0;
	else if (v == SLA_MET)
		s->risk_met_since++;
}

/* The bar in force lifted now. */
static void bar_clear(struct ctl_search *s)
{
	s->bad_left = 0;
	s->bad_khz = 0;
}

/* search_miss_at_max: the closing window missed with its base at the max
 * clock, where no clock the search could choose kept it (the Azure
 * conversation trace at 1.4x from 600 s: window 15 missed at 1830-1980 MHz
 * with most of its waiting at the max, as the firmware did there). It
 * spends no risk budget, and the bars its raises set (at 1830-1920, and
 * the max at its close) are lifted. Counted, it shrank search_low to 0.38
 * and the bar at the max held the heavy base there for the 10 windows the
 * budget took to calm (tails 0.66-0.73), at 1.3x the energy of the
 * 1545 MHz lock that met them. A miss a step under the max is counted: the
 * risk surge it arms keeps azure-code-30c's window 45. */
static bool search_max_miss(const struct ctl_search *s, enum sla_verdict v, double judged_khz)
{
	return s->miss_at_max && v == SLA_MISSED && judged_khz >= s->fmax_khz - 1;
}

/* search_bar_lift: the closing window (busy, one mode's) has its tail r
 * under this share of the target, and under the step-down threshold in
 * force. A clock barred a step or two under the base would meet such a
 * window too: the bar came from a short window's few requests (the Azure
 * conversation trace at 0.2-0.6x: a short-window raise with one request
 * waiting, then windows closing at 0.09-0.30 of the target held a step up
 * for the 10 windows of search_memory, where a 1005 MHz lock met every
 * window). The bar of the window's class is lifted before the window moves
 * its base; returns true if there was one. */
static bool search_unbar(struct ctl_search *s, const struct policy *pol, double r, bool judge)
{
	if (!(s->bar_lift > 0) || !judge || !s->win_busy || s->bad_left <= 0 || !(r > 0) ||
	    !(r < fmin(s->bar_lift, search_low_at_risk(s, pol))))
		return false;
	bar_clear(s);
	return true;
}

/* One window closed: a bar counts down and lifts at zero. */
static void bar_tick(double *bad_khz, long *bad_left)
{
	if (*bad_left > 0 && --*bad_left == 0)
		*bad_khz = 0;
}

/* Put the base, bar and last move in force away and take load class c's. */
static void cls_load(struct ctl_search *s, int c)
{
	if (c == s->cls_cur)
		return;
	s->cls[s->cls_cur].base_khz = s->base_khz;
	s->cls[s->cls_cur].bad_khz = s->bad_khz;
	s->cls[s->cls_cur].bad_left = s->bad_left;
	s->cls[s->cls_cur].last_move = s->last_move;
	s->base_khz = s->cls[c].base_khz;
	s->bad_khz = s->cls[c].bad_khz;
	s->bad_left = s->cls[c].bad_left;
	s->last_move = s->cls[c].last_move;
	s->cls_cur = c;
}

/* The heavy base never under the light one: the class just moved wins. */
static void cls_order(struct ctl_search *s)
{
	s->cls[s->cls_cur].base_khz = s->base_khz;
	if (s->cls[1].base_khz < s->cls[0].base_khz)
		s->cls[!s->cls_cur].base_khz = s->base_khz;
}

/* One period into the load ring: requests waiting at its end, the clock it
 * ran at the most the device could be given (the max or a thermal cut), and
 * a light period with requests waiting at a clock under the max. */
static void search_load_push(struct ctl_search *s, const struct ctl_search_in *in,
			     const struct gov_estimates *e, double prev_khz)
{
	bool queued = e->queue_len > 0, most = in->th_bound || prev_khz >= s->fmax_khz;
	uint8_t b = (uint8_t)((most ? LOAD_MOST : 0) |
			      (queued && !most && s->cls_cur == 0 ? LOAD_LIGHT_WAIT : 0));
	s->wait_ring[s->load_n % SEARCH_LOAD_RING] =
		(uint16_t)(e->queue_len < UINT16_MAX ? e->queue_len : UINT16_MAX);
	s->load_ring[s->load_n++ % SEARCH_LOAD_RING] = b;
}

/* A burst's aftermath (param search_aftermath_s): over the last
 * search_aftermath_s the waiting was overload
 * (sla_window_overload(), the judgement the rollback manager uses) and the
 * light periods themselves barely had requests waiting (for at most
 * search_aftermath_wait_s, or at most search_aftermath_share of the
 * waiting). Then a light
 * period's short-window tail is the burst's, which the max clock already
 * served: raising the light base buys the burst nothing and every light
 * period after it pays (the Azure trace at 0.8-1x: the light base climbed to
 * 1740-1920 MHz where 1470-1545 met every feasible window). */
static bool search_aftermath(const struct ctl_search *s, double period_s)
{
	if (!(s->aftermath_s > 0) || s->cls_cur != 0 || !(period_s > 0))
		return false;
	double want = ceil(s->aftermath_s / period_s - 1e-9);
	uint32_t n = want < SEARCH_LOAD_RING ? (uint32_t)want : SEARCH_LOAD_RING;
	if (n > s->load_n)
		n = s->load_n;
	struct sla_window_load l = { 0 };
	uint32_t light_wait = 0;
	uint64_t light_q = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = (s->load_n - 1 - i) % SEARCH_LOAD_RING;
		uint8_t b = s->load_ring[k];
		l.waited += s->wait_ring[k];
		l.waited_at_max += (b & LOAD_MOST) ? s->wait_ring[k] : 0;
		light_wait += !!(b & LOAD_LIGHT_WAIT);
		light_q += (b & LOAD_LIGHT_WAIT) ? s->wait_ring[k] : 0;
	}
	bool own = (double)light_wait * period_s > s->aftermath_wait_s + 1e-9 &&
		   !(s->aftermath_share > 0 &&
		     (double)light_q <= s->aftermath_share * (double)l.waited);
	return !own && sla_window_overload(SLA_MISSED, &l);
}

/* search_spike_unbarred: a short-window raise on the TBT tail alone (the
 * short TTFT tail within its target), nothing waiting, while the SLA
 * window's tail (r) is under the step-down threshold in force. The tail is
 * a spike: a long prompt's prefill chunks stretch the decode steps beside
 * them for a few seconds, which the short window (10 s) sees over the
 * target and the 60 s window does not (the Azure conversation trace at
 * 0.2-1.0x: short TBT tails at 1.00-1.13, the window's at 0.70-0.82). The
 * raise stays, the clock it left is not barred: the next window closing
 * under search_low may step back onto it, where a bar kept the base a
 * step up for search_memory windows. A raise at a window tail over
 * search_low is one the window itself is near (fam-4022 at 1290 MHz:
 * 0.91), and keeps its bar. */
static bool search_spike(const struct ctl_search *s, const struct gov_estimates *e,
			 const struct policy *pol, double r)
{
	return s->spike_unbarred && e->queue_len == 0 &&
	       ctl_govd_sla_ratio(e, pol, SLA_TTFT) <= 1.0 && r < search_low_at_risk(s, pol);
}

/* search_blame_wait: the window closing missed on its TTFT tail alone
 * (TBT within search_high) and had requests waiting. TTFT is time waited,
 * so the class whose periods held most of the waiting made the miss; a
 * light base raised for a wait the heavy periods held stays raised (and
 * barred under) long after the burst. */
static bool wait_missed(const struct ctl_search *s, const struct gov_estimates *e,
			const struct policy *pol)
{
	double ttft = ctl_govd_tail_ratio(e->quantile_ms, pol, SLA_TTFT);
	double tbt = ctl_govd_tail_ratio(e->quantile_ms, pol, SLA_TBT);
	return ttft > s->high && tbt <= s->high && s->win_wait > 0;
}

/* The class a closing window's verdict moves (true: heavy): by its busy
 * periods' heavy share, or (search_blame_wait) a TTFT miss by where its
 * requests waited (*wait_blamed). judge: the window is one mode's. */
static bool window_heavy(const struct ctl_search *s, const struct gov_estimates *e,
			 const struct policy *pol, bool judge, bool *wait_blamed)
{
	*wait_blamed = s->blame_wait && judge && s->win_busy && wait_missed(s, e, pol);
	if (*wait_blamed)
		return 2 * s->win_wait_heavy >= s->win_wait;
	return s->win_periods > 0 && s->win_heavy >= s->heavy_share * s->win_periods;
}

/* This period's queue surge: surge_queue waiting requests, or
 * search_risk_surge once the risk budget is spent (while cool); a surge
 * released at surge_queue leaves the rest of its queue to the base, which
 * is what let it build: held until it drains, when cool. Returns the bound
 * that sent the clock to the max, GOV_WHY_N for none. */
static enum gov_why_bound search_surge(struct ctl_search *s, const struct gov_estimates *e,
				       const struct policy *pol, bool cool)
{
	double q = (double)e->queue_len;
	enum gov_why_bound b = GOV_WHY_N;
	if (q >= s->surge_queue)
		b = GOV_WHY_SURGE;
	else if (s->risk_surge > 0 && cool && q >= s->risk_surge && search_risk_spent(s, pol))
		b = GOV_WHY_RISK_SURGE;
	else if (s->surging && s->surge_release >= 0 && q > s->surge_release && cool)
		b = GOV_WHY_SURGE;
	s->surging = b != GOV_WHY_N;
	if (s->surging) {
		s->win_surged++; /* a surge has requests waiting: a busy period */
		s->last_surge_s = e->t_s;
	}
	return b;
}

/* An SLA window closed (index k): its judged tail (r) moves the base of its
 * class, and its counts are cleared. */
static void search_close(struct ctl_search *s, const struct gov_estimates *e,
			 const struct policy *pol, double r, long k)
{
	bool judge = !s->win_mode_changed;
	s->win_mode_changed = false;
	bool wait_blamed = false;
	if (s->heavy_n > 0)
		cls_load(s, window_heavy(s, e, pol, judge, &wait_blamed));
	bool pooled = false;
	double judged_khz = s->base_khz;
	enum sla_verdict verdict = search_verdict(s, e, pol);
	bool max_miss = search_max_miss(s, verdict, judged_khz);
	bool unbarred = search_unbar(s, pol, r, judge);
	if (s->win_thermal) {
		s->base_khz -= s->down_khz;
		s->last_move = GOV_WHY_M_THERMAL;
	} else if (!judge) {
		/* the window's tail is two modes': it judges neither base */
	} else if (s->win_busy && r > s->high && s->overload > 0 && s->win_surged > 0 &&
		   r > s->overload) {
		s->last_move = GOV_WHY_M_OVERLOAD;
	} else if (s->win_busy && r > s->high) {
		remember_bad(s, s->base_khz);
		s->base_khz += s->up_khz;
		s->last_move = wait_blamed ? GOV_WHY_M_WAIT_UP : GOV_WHY_M_UP;
	} else if (search_surge_held(s, r)) {
		s->base_khz += s->up_khz;
		s->last_move = GOV_WHY_M_SURGED;
	} else if (s->win_busy && r > 0 && r < search_low_at_risk(s, pol) &&
		   (double)e->window_requests >= s->down_requests) {
		search_down(s, GOV_WHY_M_DOWN);
	} else if (s->win_busy) {
		pooled = search_thin(s, r, search_low_at_risk(s, pol), (double)e->window_requests);
	}
	if (!pooled)
		s->thin_pool = 0;
	if (unbarred && s->last_move == GOV_WHY_M_DOWN)
		s->last_move = GOV_WHY_M_UNBARRED;
	if (max_miss) {
		bar_clear(s);
		s->last_move = GOV_WHY_M_MAX_MISS;
	}
	/* search_thin_low's floor: the lowest base a full window met */
	if (judge && verdict == SLA_MET && (double)e->window_requests >= s->down_requests &&
	    (!(s->thin_full_khz > 0) || judged_khz < s->thin_full_khz))
		s->thin_full_khz = judged_khz;
	bar_tick(&s->bad_khz, &s->bad_left);
	if (s->heavy_n > 0) {
		int o = !s->cls_cur;
		search_heavy_judge(s, verdict, judge);
		if (s->win_thermal) {
			s->cls[o].base_khz -= s->down_khz;
			s->cls[o].last_move = GOV_WHY_M_THERMAL;
		}
		bar_tick(&s->cls[o].bad_khz, &s->cls[o].bad_left);
		cls_order(s);
		s->win_periods = s->win_heavy = 0;
		s->win_wait = s->win_wait_heavy = 0;
	}
	if (!max_miss)
		risk_count(s, verdict);
	s->win_idx = k;
	s->win_busy = false;
	s->win_surged = 0;
	s->win_thermal = false;
}

/* The window search (param search): one base clock (one per load class with
 * search_heavy_running), moved only when an SLA window closes, on that window's judged tail (the quantiles over
 * sla.window_s against the p99 targets): down a step while it stays under
 * search_low, up while it is over search_high, and up at once inside a window
 * when the short window's tail passes the target. What a fixed lock chosen
 * with hindsight does, found online. Queue surges still send the clock to max
 * for the period; idle periods take idle_mhz. Guards (each a param, 0: off):
 * a start clock, one short-window raise per search_short_s, a failed clock
 * barred from the descent for search_memory window closes, an overload tail
 * made in a surge raising nothing (search_overload), and a window under the
 * thermal limit closing a step down (search_thermal). */
uint32_t ctl_search_step(struct ctl_search *s, const struct ctl_search_in *in,
			 const struct gov_estimates *e, const struct policy *pol, double *f_khz,
			 struct gov_why *why)
{
	double w = pol->sla.window_s > 0 ? pol->sla.window_s : 60;
	long k = (long)floor(e->t_s / w + 1e-9);
	double r = ctl_govd_tail_ratio(e->quantile_ms, pol, -1); /* the judged window's */
	double prev = *f_khz;
	if (s->win_idx < 0) {
		s->win_idx = k;
		s->base_khz = s->start_khz > 0 ? s->start_khz : s->fmax_khz;
		s->cls[0].base_khz = s->cls[1].base_khz = s->base_khz;
		/* heavy periods may start higher: a burst in the first windows
		 * meets a base no window has judged yet */
		if (s->heavy_n > 0 && s->heavy_start_khz > s->base_khz)
			s->cls[1].base_khz = fmin(s->heavy_start_khz, s->fmax_khz);
	}
	/* Per mode: the mode in force over the period just gone runs at its
	 * own base; a new mode starts from the base in force. */
	if (s->per_mode && in->mode != s->base_mode) {
		s->mode_base_khz[s->base_mode] = s->base_khz;
		if (s->mode_base_khz[in->mode] > 0)
			s->base_khz = s->mode_base_khz[in->mode];
		s->base_mode = in->mode;
		s->win_mode_changed = true;
	}
	if (k != s->win_idx)
		search_close(s, e, pol, r, k);
	/* Under heat a higher clock spends the heat the next burst needs (the
	 * thermal guard's reason): within search_heavy_hot_s of the limit
	 * binding, one base and no held surge. */
	bool cool = e->t_s - in->last_hot_s >= s->heavy_hot_s;
	if (s->heavy_n > 0) {
		bool heavy = (double)(e->running + e->queue_len) >= s->heavy_n && cool;
		cls_load(s, heavy);
		s->win_periods += in->busy;
		s->win_heavy += in->busy && heavy;
		s->win_wait += e->queue_len;
		s->win_wait_heavy += heavy ? e->queue_len : 0;
		s->win_heavy_tbt_over += heavy ? e->period_over[SLA_TBT] : 0;
		s->win_heavy_tbt_n += heavy ? e->period_n[SLA_TBT] : 0;
	}
	bool hot = s->thermal && in->th_bound;
	s->win_thermal |= hot;
	s->win_busy |= in->busy;
	enum gov_why_bound surge = search_surge(s, e, pol, cool);
	double short_r = ctl_govd_sla_ratio(e, pol, -1);
	bool short_surged = s->overload > 0 && short_r > s->overload &&
			    e->t_s - s->last_surge_s <
				    (e->short_window_s > 0 ? e->short_window_s : ESTIMATE_SHORT_WINDOW_S);
	search_load_push(s, in, e, prev);
	if (in->busy && short_r > 1.0 && s->base_khz < s->fmax_khz && !short_surged && !hot &&
	    e->t_s - s->last_short_raise_s >= s->short_s) {
		if (search_aftermath(s, in->period_s)) {
			s->last_move = GOV_WHY_M_AFTERMATH;
		} else {
			bool spike = search_spike(s, e, pol, r);
			if (!spike)
				remember_bad(s, s->base_khz);
			s->base_khz += s->up_khz;
			s->last_short_raise_s = e->t_s;
			s->last_move = spike ? GOV_WHY_M_SPIKE : GOV_WHY_M_SHORT;
		}
	}
	if (s->base_khz > s->fmax_khz)
		s->base_khz = s->fmax_khz;
	if (s->base_khz < s->floor_khz)
		s->base_khz = s->floor_khz;
	if (s->heavy_n > 0)
		cls_order(s);
	why->bound = GOV_WHY_SEARCH;
	why->margin = search_low_at_risk(s, pol); /* the step-down threshold in force */
	why->tail_ratio = r;
	why->base_mhz = s->base_khz / 1000.0;
	why->bar_mhz = s->bad_left > 0 ? s->bad_khz / 1000.0 : NAN;
	why->move = s->last_move;
	why->load = s->heavy_n <= 0 ? GOV_WHY_LOAD_NONE
		    : s->cls_cur ? GOV_WHY_LOAD_HEAVY : GOV_WHY_LOAD_LIGHT;
	uint32_t reason;
	if (surge != GOV_WHY_N) {
		*f_khz = s->fmax_khz;
		why->bound = surge;
		reason = GOV_R_QUEUE_SURGE;
	} else if (!in->busy) {
		bool cool_idle = s->idle_khz &&
				 (s->idle_hot_s <= 0 || e->t_s - in->last_hot_s < s->idle_hot_s);
		*f_khz = cool_idle ? s->idle_khz : s->base_khz;
		why->bound = GOV_WHY_IDLE;
		reason = GOV_R_SLA_KEEP;
	} else {
		*f_khz = s->base_khz;
		reason = *f_khz > prev * 1.001 ? GOV_R_SLA_RAISE
			 : *f_khz < prev * 0.999 ? GOV_R_SLA_LOWER : GOV_R_SLA_KEEP;
	}
	return reason;
}
