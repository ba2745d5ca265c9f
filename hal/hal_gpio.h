/* GPIO backend: a thermal-alert input line (edge events, debounced, readable
 * through hal_ops.alert_fd/alert_read outside the control period) and a
 * power-brake output line held in its safe state on open and close.
 * Options: docs/backends-modbus-gpio.md.
 *
 * Every libgpiod call lives in hal_gpio.c behind struct hal_gpio_provider, so
 * a libgpiod v2 port touches one file, and tests can swap in a fake line
 * with the same poll mechanics (a pipe or eventfd as the event fd). */
#ifndef GOVD_HAL_GPIO_H
#define GOVD_HAL_GPIO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal.h"

#if GOVD_WITH_GPIOD
extern const struct hal_ops hal_gpio_ops;
#endif

/* One edge as the line reported it: physical level after the edge. */
struct hal_gpio_edge {
	bool rising;
	uint64_t ts_ns; /* CLOCK_MONOTONIC (kernel >= 5.7 line events, and fakes) */
};

/* Line access. Values are physical levels (0/1): active-low inversion is done
 * by the backend so every provider behaves the same. Errors are -errno with
 * a human message in err (name the chip and line). */
struct hal_gpio_provider {
	/* chip: name ("gpiochip0"), path, label or number. Both edges. */
	int (*request_events)(void *ctx, const char *chip, unsigned offset, const char *consumer,
			      void **line, char *err, size_t errlen);
	int (*request_output)(void *ctx, const char *chip, unsigned offset, const char *consumer,
			      int value, void **line, char *err, size_t errlen);
	int (*event_fd)(void *line);
	/* Never blocks: up to max pending edges, 0 when none, -errno. */
	int (*read_edges)(void *line, struct hal_gpio_edge *edges, size_t max);
	int (*get_value)(void *line); /* 0/1 or -errno */
	int (*set_value)(void *line, int value);
	void (*release)(void *line);
	void *ctx;
};

/* Tests and benches only: NULL restores libgpiod. Affects devices opened
 * afterwards. The libgpiod provider itself is offered so a bench can wrap it. */
void hal_gpio_set_line_provider(const struct hal_gpio_provider *p);
const struct hal_gpio_provider *hal_gpio_libgpiod_provider(void);

#endif
