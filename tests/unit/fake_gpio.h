/* A fake gpio line provider with libgpiod's poll mechanics, for tests (this
 * kernel has no gpio-sim): a pipe is a line's event fd and each edge writes
 * one byte. hal_gpio_set_line_provider(&fake) installs it; fake_edge() is
 * the world changing a line; line_at() finds a requested line. Include
 * after cmocka.h, in files built with GOVD_WITH_GPIOD. */
#ifndef GOVD_TEST_FAKE_GPIO_H
#define GOVD_TEST_FAKE_GPIO_H
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hal/hal_gpio.h"

#define FAKE_LINES 8
#define FAKE_CHIP "fakechip0"
#define FAKE_NLINES 32

struct fake_line {
	bool used, released, output;
	unsigned offset;
	int value;   /* physical level */
	int pipe[2]; /* event fd = pipe[0] */
	struct hal_gpio_edge edges[64];
	size_t n_edges, head;
	int set_calls;
};

static struct fake_line lines[FAKE_LINES];
static int init_level[FAKE_NLINES]; /* physical level a line has when requested */

static int fake_request(void *ctx, const char *chip, unsigned offset, bool output, int value,
			void **out, char *err, size_t errlen)
{
	if (strcmp(chip, FAKE_CHIP) != 0) {
		snprintf(err, errlen, "gpio chip '%s' not found or not openable: %s", chip,
			 strerror(ENOENT));
		return -ENOENT;
	}
	if (offset >= FAKE_NLINES) {
		snprintf(err, errlen, "line %u out of range on gpio chip '%s' (%u lines)", offset,
			 chip, FAKE_NLINES);
		return -EINVAL;
	}
	for (size_t i = 0; i < FAKE_LINES; i++) {
		struct fake_line *l = &lines[i];
		if (l->used)
			continue;
		memset(l, 0, sizeof(*l));
		l->used = true;
		l->offset = offset;
		l->output = output;
		l->value = output ? value : init_level[offset];
		l->pipe[0] = l->pipe[1] = -1;
		if (!output) {
			if (pipe(l->pipe))
				return -errno;
			fcntl(l->pipe[0], F_SETFL, O_NONBLOCK);
		}
		*out = l;
		return 0;
	}
	return -ENOSPC;
}

static int fake_request_events(void *ctx, const char *chip, unsigned offset, const char *consumer,
			       void **line, char *err, size_t errlen)
{
	return fake_request(ctx, chip, offset, false, 0, line, err, errlen);
}

static int fake_request_output(void *ctx, const char *chip, unsigned offset, const char *consumer,
			       int value, void **line, char *err, size_t errlen)
{
	return fake_request(ctx, chip, offset, true, value, line, err, errlen);
}

static int fake_event_fd(void *line)
{
	return ((struct fake_line *)line)->pipe[0];
}

static int fake_read_edges(void *line, struct hal_gpio_edge *edges, size_t max)
{
	struct fake_line *l = line;
	char buf[64];
	if (max > sizeof(buf))
		max = sizeof(buf);
	ssize_t n = read(l->pipe[0], buf, max);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	for (ssize_t i = 0; i < n; i++)
		edges[i] = l->edges[l->head++];
	return (int)n;
}

static int fake_get_value(void *line)
{
	return ((struct fake_line *)line)->value;
}

static int fake_set_value(void *line, int value)
{
	struct fake_line *l = line;
	l->value = value;
	l->set_calls++;
	return 0;
}

static void fake_release(void *line)
{
	struct fake_line *l = line;
	if (l->pipe[0] >= 0)
		close(l->pipe[0]);
	if (l->pipe[1] >= 0)
		close(l->pipe[1]);
	l->pipe[0] = l->pipe[1] = -1;
	l->released = true;
}

static const struct hal_gpio_provider fake = {
	.request_events = fake_request_events,
	.request_output = fake_request_output,
	.event_fd = fake_event_fd,
	.read_edges = fake_read_edges,
	.get_value = fake_get_value,
	.set_value = fake_set_value,
	.release = fake_release,
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The line changes to `level` at ts_ns and the kernel queues the edge. */
static void fake_edge(struct fake_line *l, int level, uint64_t ts_ns)
{
	assert_true(l->n_edges < 64);
	l->value = level;
	l->edges[l->n_edges++] = (struct hal_gpio_edge){ .rising = level != 0, .ts_ns = ts_ns };
	assert_int_equal(write(l->pipe[1], "e", 1), 1);
}

static struct fake_line *line_at(unsigned offset, bool output)
{
	for (size_t i = 0; i < FAKE_LINES; i++)
		if (lines[i].used && lines[i].offset == offset && lines[i].output == output)
			return &lines[i];
	fail_msg("no fake line %u", offset);
	return NULL;
}

#endif
