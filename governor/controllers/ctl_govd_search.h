/* The window search (param search; docs/govd-controller.md, "Window
 * search"): a base clock per load class, moved only when an SLA window
 * closes, on that window's judged tail; what a fixed lock chosen with
 * hindsight does, found online. Pure maths on the estimates, held by the
 * govd controller (ctl_govd.c); internal to governor/controllers. */
#ifndef GOVD_GOVERNOR_CTL_GOVD_SEARCH_H
#define GOVD_GOVERNOR_CTL_GOVD_SEARCH_H
#include <stdbool.h>
#include <stdint.h>

#include "governor/controllers/controller.h"

/* Periods the load ring holds (search_aftermath_s looks back at most this
 * many: 256 s at 500 ms periods). */
#define SEARCH_LOAD_RING 512
/* The TBT samples a light window's heavy periods must hold before their own
 * tail judges the heavy base (search_heavy_judge_share): about 10 heavy
 * periods' worth at 12 running and 500 ms periods. */
#define SEARCH_JUDGE_MIN_SAMPLES 2000

struct ctl_search {
	/* The clocks it may use and the surge rule (the controller's). */
	uint32_t fmax_khz, floor_khz, idle_khz; /* idle_khz 0: hold */
	double surge_queue;        /* waiting requests that send the clock to max */
	/* Parameters (search_*; ctl_search_init). */
	double low, high, down_khz, up_khz;
	double short_s, memory, start_khz;
	bool per_mode;             /* search_per_mode */
	double overload;           /* search_overload */
	double surge_release;      /* search_surge_release (< 0: off) */
	bool thermal;              /* search_thermal */
	double idle_hot_s;         /* search_idle_hot_s */
	double heavy_n, heavy_share, heavy_hot_s, heavy_start_khz; /* search_heavy_* */
	double down_requests;      /* search_down_requests */
	double thin_low;           /* search_thin_low (0: off) */
	double heavy_surge_share;  /* search_heavy_surge_share (0: off) */
	double heavy_judge_share;  /* search_heavy_judge_share (0: off) */
	bool blame_wait;           /* search_blame_wait */
	bool spike_unbarred;       /* search_spike_unbarred */
	bool miss_at_max;          /* search_miss_at_max */
	double bar_lift;           /* search_bar_lift (0: off) */
	double risk_windows;       /* search_risk_windows */
	double risk_surge;         /* search_risk_surge (0: off) */
	double risk_calm;          /* search_risk_calm (0: off) */
	double aftermath_s, aftermath_wait_s, aftermath_share; /* search_aftermath_* */

	/* The base in force and the window it judges. */
	double base_khz;
	double mode_base_khz[2];   /* the other mode's base while this one runs (0: none yet) */
	int base_mode;             /* the mode base_khz belongs to */
	bool win_mode_changed;
	long win_idx;              /* -1: no window yet */
	bool win_busy;
	double last_short_raise_s; /* when the short window last raised the base */
	enum gov_why_move last_move; /* for the decision log's why */
	bool surging;
	bool win_thermal;
	double last_surge_s;
	double bad_khz;            /* the highest clock that failed lately (0: none) */
	long bad_left;             /* windows it stays barred */
	/* Load classes (search_heavy_running): 0 light, 1 heavy; the class in
	 * force has its base and bar in base_khz / bad_khz / bad_left. */
	struct {
		double base_khz, bad_khz;
		long bad_left;
		enum gov_why_move last_move;
	} cls[2];
	int cls_cur;
	uint32_t win_periods, win_heavy;
	uint32_t win_surged;       /* periods of the window a queue surge took to the max (all busy) */
	/* search_heavy_judge_share: the TBT samples over the target, and all,
	 * in the window's heavy periods */
	uint64_t win_heavy_tbt_over, win_heavy_tbt_n;
	/* search_blame_wait: requests waiting summed over the window's
	 * periods, and over its heavy periods */
	uint64_t win_wait, win_wait_heavy;
	uint64_t risk_judged, risk_missed; /* busy windows closed this run, and missed */
	uint64_t risk_met_since;   /* busy windows met in a row since the last miss */
	/* The last periods' load (search_aftermath_s): LOAD_* bits per period. */
	uint8_t load_ring[SEARCH_LOAD_RING];
	uint16_t wait_ring[SEARCH_LOAD_RING]; /* requests waiting per period (saturated) */
	uint32_t load_n;
	/* search_thin_low: requests pooled over thin quiet windows in a row at
	 * thin_base_khz, and the lowest base a full window has met (0: none
	 * yet): a pooled step never goes under it, nor more than one step
	 * under the start before it exists. */
	double thin_pool, thin_base_khz, thin_full_khz;
};

/* What the controller around it knows this period. */
struct ctl_search_in {
	double period_s;
	bool busy;                 /* requests running, waiting or arrived */
	int mode;                  /* the precision mode in force (search_per_mode) */
	bool th_bound;             /* the thermal limit bound last period */
	double last_hot_s;         /* when it last bound (-INFINITY: never) */
};

/* The parameters from the policy (c: the controller whose table holds
 * them), the controller's clocks (fmax >= floor; idle 0: hold) and surge
 * rule, the state before the first window. */
void ctl_search_init(struct ctl_search *s, const struct policy *pol, const struct controller_ops *c,
		     uint32_t fmax_khz, uint32_t floor_khz, uint32_t idle_khz, double surge_queue);
/* One period: *f_khz (the clock in force, in and out) and why's search
 * fields; returns the period's GOV_R_* reason. */
uint32_t ctl_search_step(struct ctl_search *s, const struct ctl_search_in *in,
			 const struct gov_estimates *e, const struct policy *pol, double *f_khz,
			 struct gov_why *why);

#endif
