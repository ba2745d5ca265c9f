/* Event-to-read latency of the gpio alert path: from the edge's timestamp to
 * the moment a thread blocked in poll(alert_fd) has the decoded hal_alert in
 * hand (epoll wake-up, edge read, debounce bookkeeping, queue); and the whole
 * emergency path as govd runs it: edge -> alert_read -> governor_emergency()
 * -> the last HAL write of the safe point done (a sim device under
 * policies/thermal-conservative.yaml, whose safe point locks 1200 MHz and
 * 350 W; the decision-log line after the writes goes to /dev/null).
 *
 *   bench_gpio_alert [N]                      pipe-backed fake line (default),
 *                                             edges written by a second thread
 *   bench_gpio_alert --chip C --line L [N]    a real line (libgpiod); drive it
 *                                             from outside, e.g. gpio-sim pulls
 *                                             (docs/backends-modbus-gpio.md)
 * Prints p50/p99/max in microseconds; no pass/fail. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "governor/controllers/controller.h"
#include "governor/loop/governor.h"
#include "hal/hal_gpio.h"
#include "hal/hal_sim.h"

#ifdef GOVD_WITH_GPIOD

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- fake line: a pipe, one byte per edge ---- */
static int fake_pipe[2] = { -1, -1 };
static volatile int fake_level;
static struct hal_gpio_edge fake_ring[1024];
static volatile unsigned fake_w, fake_r;

static int f_req(void *c, const char *chip, unsigned off, const char *cons, void **line, char *e,
		 size_t el)
{
	if (pipe(fake_pipe))
		return -errno;
	fcntl(fake_pipe[0], F_SETFL, O_NONBLOCK);
	*line = fake_pipe;
	return 0;
}
static int f_req_out(void *c, const char *chip, unsigned off, const char *cons, int v, void **line,
		     char *e, size_t el)
{
	return -ENOTSUP;
}
static int f_fd(void *line) { return fake_pipe[0]; }
static int f_read(void *line, struct hal_gpio_edge *edges, size_t max)
{
	char buf[64];
	ssize_t n = read(fake_pipe[0], buf, max < 64 ? max : 64);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	for (ssize_t i = 0; i < n; i++)
		edges[i] = fake_ring[fake_r++ % 1024];
	return (int)n;
}
static int f_get(void *line) { return fake_level; }
static int f_set(void *line, int v) { return -ENOTSUP; }
static void f_rel(void *line)
{
	close(fake_pipe[0]);
	close(fake_pipe[1]);
}
static const struct hal_gpio_provider fake = { f_req, f_req_out, f_fd, f_read, f_get, f_set, f_rel,
					       NULL };

/* ---- wrapper around any provider: remembers the newest edge time ---- */
static const struct hal_gpio_provider *base;
static volatile uint64_t last_edge_ns;
static int w_req(void *c, const char *chip, unsigned off, const char *cons, void **line, char *e,
		 size_t el)
{
	return base->request_events(base->ctx, chip, off, cons, line, e, el);
}
static int w_req_out(void *c, const char *chip, unsigned off, const char *cons, int v, void **line,
		     char *e, size_t el)
{
	return base->request_output(base->ctx, chip, off, cons, v, line, e, el);
}
static int w_fd(void *line) { return base->event_fd(line); }
static int w_read(void *line, struct hal_gpio_edge *edges, size_t max)
{
	int n = base->read_edges(line, edges, max);
	if (n > 0)
		last_edge_ns = edges[n - 1].ts_ns;
	return n;
}
static int w_get(void *line) { return base->get_value(line); }
static int w_set(void *line, int v) { return base->set_value(line, v); }
static void w_rel(void *line) { base->release(line); }
static const struct hal_gpio_provider wrapped = { w_req, w_req_out, w_fd, w_read, w_get, w_set,
						  w_rel, NULL };

static volatile int stop;

/* ---- the sim device's writes, timed ---- */
static struct hal_ops timed_ops;
static const struct hal_ops *sim_ops;
static uint64_t last_write_ns;
static int t_clock(struct hal_dev *d, uint32_t lo, uint32_t hi)
{
	int rc = sim_ops->set_clock_range(d, lo, hi);
	last_write_ns = now_ns();
	return rc;
}
static int t_power(struct hal_dev *d, uint32_t mw)
{
	int rc = sim_ops->set_power_limit(d, mw);
	last_write_ns = now_ns();
	return rc;
}

struct emerg {
	struct hal_dev dev;
	struct govd_clock clk;
	struct policy *pol;
	struct governor *g;
	FILE *log;
};

static int emerg_open(struct emerg *em, struct diag_list *dl)
{
	const char *k[] = { "scenario" }, *v[] = { "configs/scenarios/default.yaml" };
	struct hal_dev_cfg c = { .name = "gpu0", .backend = "sim", .n_opts = 1, .keys = k, .values = v };
	int rc = hal_open(&em->dev, &c, dl);
	if (rc || (rc = hal_sim_clock(&em->dev, &em->clk)))
		return rc;
	sim_ops = em->dev.ops;
	timed_ops = *sim_ops;
	timed_ops.set_clock_range = t_clock;
	timed_ops.set_power_limit = t_power;
	em->dev.ops = &timed_ops;
	if ((rc = policy_load("policies/thermal-conservative.yaml", &em->pol, dl)))
		return rc;
	em->log = fopen("/dev/null", "w");
	struct governor_cfg gc = { .pol = em->pol, .dev = &em->dev, .clock = &em->clk,
				   .declog = em->log };
	if ((rc = governor_new(&gc, &em->g, dl)))
		return rc;
	return governor_tick(em->g) < 0 ? -EIO : 0; /* one period: a normal op point */
}

/* Puts the governor back on a point the safe point differs from, so every
 * emergency writes clocks and power limit. */
static void emerg_rearm(struct emerg *em)
{
	struct gov_opoint op = *governor_point(em->g);
	op.clk_locked = true;
	op.clk_min_khz = op.clk_max_khz = governor_limits(em->g)->clk_max_khz;
	op.power_limit_mw = governor_limits(em->g)->power_limit_max_mw;
	governor_assume_point(em->g, &op);
}

static void *toggler(void *arg)
{
	int n = *(int *)arg;
	for (int i = 0; i < n && !stop; i++) {
		struct timespec gap = { 0, 300000 }; /* 300 us: one edge per wake-up */
		nanosleep(&gap, NULL);
		fake_level = !fake_level;
		fake_ring[fake_w % 1024] = (struct hal_gpio_edge){ fake_level != 0, now_ns() };
		fake_w++;
		if (write(fake_pipe[1], "e", 1) != 1)
			break;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *chip = NULL, *line = "0";
	int n = 2000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--chip") && i + 1 < argc)
			chip = argv[++i];
		else if (!strcmp(argv[i], "--line") && i + 1 < argc)
			line = argv[++i];
		else
			n = atoi(argv[i]);
	}
	if (n <= 0 || n > 1000000)
		n = 2000;
	base = chip ? hal_gpio_libgpiod_provider() : &fake;
	hal_gpio_set_line_provider(&wrapped);
	const char *keys[] = { "chip", "alert_line", "debounce_ms" };
	const char *vals[] = { chip ? chip : "fake", line, "0" };
	struct hal_dev_cfg cfg = { .name = "bench", .backend = "gpio", .n_opts = 3, .keys = keys,
				   .values = vals };
	struct hal_dev dev = { .ops = &hal_gpio_ops };
	struct diag_list dl = { 0 };
	if (hal_gpio_ops.open(&dev, &cfg, &dl)) {
		diag_print(&dl, stderr);
		return 1;
	}
	struct emerg em = { 0 };
	bool emerg_ok = emerg_open(&em, &dl) == 0;
	if (!emerg_ok)
		diag_print(&dl, stderr);
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	uint64_t *elat = calloc((size_t)n, sizeof(*elat));
	int egot = 0;
	pthread_t th;
	if (!chip)
		pthread_create(&th, NULL, toggler, &n);
	int got = 0;
	struct pollfd pfd = { .fd = dev.ops->alert_fd(&dev), .events = POLLIN };
	while (got < n) {
		int rc = poll(&pfd, 1, 10000);
		if (rc <= 0) {
			fprintf(stderr, "no edge within 10 s after %d events\n", got);
			break;
		}
		struct hal_alert ev;
		while (got < n && dev.ops->alert_read(&dev, &ev) == 1) {
			uint64_t t = now_ns(), edge = last_edge_ns;
			lat[got++] = t > edge ? t - edge : 0;
			if (emerg_ok && ev.kind == HAL_ALERT_ASSERTED) {
				emerg_rearm(&em);
				last_write_ns = 0;
				governor_emergency(em.g, "bench alert");
				if (last_write_ns > edge)
					elat[egot++] = last_write_ns - edge;
			}
		}
	}
	stop = 1;
	if (!chip)
		pthread_join(th, NULL);
	hal_gpio_ops.close(&dev);
	hal_gpio_set_line_provider(NULL);
	if (got > 0) {
		qsort(lat, (size_t)got, sizeof(*lat), cmp_u64);
		printf("gpio alert %s: %d events, edge->alert_read latency p50 %.1f us, p99 %.1f us, "
		       "max %.1f us\n",
		       chip ? "libgpiod" : "fake pipe line", got, lat[got / 2] / 1e3,
		       lat[(size_t)got * 99 / 100] / 1e3, lat[got - 1] / 1e3);
	}
	if (egot > 0) {
		qsort(elat, (size_t)egot, sizeof(*elat), cmp_u64);
		printf("emergency path (edge -> governor_emergency -> last HAL write of the safe point, "
		       "sim device): %d events, p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       egot, elat[egot / 2] / 1e3, elat[(size_t)egot * 99 / 100] / 1e3,
		       elat[egot - 1] / 1e3);
	}
	if (emerg_ok) {
		governor_free(em.g);
		policy_free(em.pol);
	}
	if (em.dev.ops)
		hal_close(&em.dev);
	if (em.log)
		fclose(em.log);
	free(elat);
	free(lat);
	diag_clear(&dl);
	return got == n ? 0 : 1;
}

#else
int main(void)
{
	printf("bench_gpio_alert: built with GOVD_WITH_GPIOD=OFF\n");
	return 0;
}
#endif
