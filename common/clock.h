/* The one clock interface. govctl sim hands the governor a virtual clock
 * whose wait advances the plant; govd hands it CLOCK_MONOTONIC + timerfd.
 * The governor never calls clock_gettime or sleep itself. */
#ifndef GOVD_COMMON_CLOCK_H
#define GOVD_COMMON_CLOCK_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct govd_clock_ops {
	uint64_t (*now_ms)(void *ctx);
	/* Block (or, in virtual time, advance the world) until t_ms; 0 or -errno. */
	int (*wait_until)(void *ctx, uint64_t t_ms);
};

struct govd_clock {
	const struct govd_clock_ops *ops;
	void *ctx;
};

static inline uint64_t govd_clock_now_ms(const struct govd_clock *c)
{
	return c->ops->now_ms(c->ctx);
}

/* Real elapsed time (timeouts, budgets, debouncing), whatever clock the
 * daemon runs on. */
static inline uint64_t govd_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t govd_mono_ms(void)
{
	return govd_mono_ns() / 1000000u;
}

/* Timestamps of a backend: the clock it was handed (hal_dev_cfg.clock),
 * CLOCK_MONOTONIC when none. */
static inline uint64_t govd_clock_now_or_mono_ms(const struct govd_clock *c)
{
	return c ? govd_clock_now_ms(c) : govd_mono_ms();
}

static inline int govd_clock_wait_until(const struct govd_clock *c, uint64_t t_ms)
{
	return c->ops->wait_until(c->ctx, t_ms);
}

#endif
