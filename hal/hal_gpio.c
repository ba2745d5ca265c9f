/* GPIO alert and power-brake lines; see hal_gpio.h and
 * docs/backends-modbus-gpio.md. All libgpiod (v1.6 API) calls are in the
 * "libgpiod provider" section below; the rest talks to struct
 * hal_gpio_provider only.
 *
 * alert_fd is an epoll fd over three sources: the line's event fd (edges),
 * a timerfd (end of a debounce window in which edges were ignored: the level
 * is read again then, so a real change hidden among bounces is not lost) and
 * an eventfd that stays readable while decoded events wait in the queue. */
#include "hal/hal_gpio.h"

#ifdef GOVD_WITH_GPIOD
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hal/backend_opts.h"

/* ---- libgpiod provider ------------------------------------------------- */

struct gpiod_handle {
	struct gpiod_chip *chip;
	struct gpiod_line *line;
};

static int gd_request(const char *chip, unsigned offset, const char *consumer, bool output,
		      int value, void **out, char *err, size_t errlen)
{
	struct gpiod_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	int rc;
	h->chip = gpiod_chip_open_lookup(chip);
	if (!h->chip) {
		rc = errno ? -errno : -ENOENT;
		snprintf(err, errlen, "gpio chip '%s' not found or not openable: %s", chip,
			 strerror(-rc));
		goto free_handle;
	}
	unsigned n = gpiod_chip_num_lines(h->chip);
	if (offset >= n) {
		rc = -EINVAL;
		snprintf(err, errlen, "line %u out of range on gpio chip '%s' (%s, %u lines)",
			 offset, chip, gpiod_chip_name(h->chip), n);
		goto close_chip;
	}
	h->line = gpiod_chip_get_line(h->chip, offset);
	if (!h->line) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "line %u on gpio chip '%s': %s", offset, chip, strerror(-rc));
		goto close_chip;
	}
	rc = output ? gpiod_line_request_output(h->line, consumer, value)
		    : gpiod_line_request_both_edges_events(h->line, consumer);
	if (rc) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot request line %u on gpio chip '%s' as %s: %s%s", offset,
			 chip, output ? "output" : "edge-event input", strerror(-rc),
			 rc == -EBUSY ? " (held by another consumer; see gpioinfo)" : "");
		goto close_chip;
	}
	*out = h;
	return 0;

close_chip:
	gpiod_chip_close(h->chip);
free_handle:
	free(h);
	return rc;
}

static int gd_request_events(void *ctx, const char *chip, unsigned offset, const char *consumer,
			     void **line, char *err, size_t errlen)
{
	return gd_request(chip, offset, consumer, false, 0, line, err, errlen);
}

static int gd_request_output(void *ctx, const char *chip, unsigned offset, const char *consumer,
			     int value, void **line, char *err, size_t errlen)
{
	return gd_request(chip, offset, consumer, true, value, line, err, errlen);
}

static int gd_event_fd(void *line)
{
	struct gpiod_handle *h = line;
	int fd = gpiod_line_event_get_fd(h->line);
	return fd < 0 ? -errno : fd;
}

static int gd_read_edges(void *line, struct hal_gpio_edge *edges, size_t max)
{
	struct gpiod_handle *h = line;
	struct timespec zero = { 0, 0 };
	int rc = gpiod_line_event_wait(h->line, &zero);
	if (rc <= 0)
		return rc < 0 ? -errno : 0;
	struct gpiod_line_event ev[16];
	if (max > 16)
		max = 16;
	rc = gpiod_line_event_read_multiple(h->line, ev, (unsigned)max);
	if (rc < 0)
		return -errno;
	for (int i = 0; i < rc; i++) {
		edges[i].rising = ev[i].event_type == GPIOD_LINE_EVENT_RISING_EDGE;
		edges[i].ts_ns = (uint64_t)ev[i].ts.tv_sec * 1000000000u + (uint64_t)ev[i].ts.tv_nsec;
	}
	return rc;
}

static int gd_get_value(void *line)
{
	struct gpiod_handle *h = line;
	int v = gpiod_line_get_value(h->line);
	return v < 0 ? -errno : v;
}

static int gd_set_value(void *line, int value)
{
	struct gpiod_handle *h = line;
	return gpiod_line_set_value(h->line, value) ? -errno : 0;
}

static void gd_release(void *line)
{
	struct gpiod_handle *h = line;
	gpiod_line_release(h->line);
	gpiod_chip_close(h->chip);
	free(h);
}

static const struct hal_gpio_provider libgpiod_provider = {
	.request_events = gd_request_events,
	.request_output = gd_request_output,
	.event_fd = gd_event_fd,
	.read_edges = gd_read_edges,
	.get_value = gd_get_value,
	.set_value = gd_set_value,
	.release = gd_release,
};

/* ---- backend ----------------------------------------------------------- */

static const struct hal_gpio_provider *provider = &libgpiod_provider;

void hal_gpio_set_line_provider(const struct hal_gpio_provider *p)
{
	provider = p ? p : &libgpiod_provider;
}

const struct hal_gpio_provider *hal_gpio_libgpiod_provider(void)
{
	return &libgpiod_provider;
}

#define GPIO_QLEN 32
#define GPIO_CONSUMER "govd"

struct gpio_priv {
	struct hal_ops ops; /* this device's table: absent lines' ops are NULL */
	const struct hal_gpio_provider *prov;
	const struct govd_clock *clock;
	/* alert input */
	void *in;
	bool in_active_low;
	uint64_t debounce_ns;
	int epfd, tfd, qfd;
	bool asserted;          /* last reported state */
	bool have_accept;
	uint64_t accept_ns;     /* edge time of the last accepted change */
	bool recheck;           /* edges were ignored: read the level at window end */
	struct hal_alert q[GPIO_QLEN];
	size_t q_head, q_n;
	bool q_signalled;
	uint64_t seq;
	/* brake output */
	void *out;
	bool out_active_low, brake_safe, brake_on;
};

/* Kernels before 5.7 stamp line events with CLOCK_REALTIME: fall back to the
 * time we read them rather than report a date as a monotonic time. */
static uint64_t edge_time(uint64_t ts_ns, uint64_t now_ns)
{
	uint64_t d = ts_ns > now_ns ? ts_ns - now_ns : now_ns - ts_ns;
	return d < 60ull * 1000000000u ? ts_ns : now_ns;
}

static void push(struct gpio_priv *p, bool asserted, uint64_t t_ns)
{
	if (p->q_n == GPIO_QLEN) { /* keep the newest; the seq gap tells the reader */
		p->q_head = (p->q_head + 1) % GPIO_QLEN;
		p->q_n--;
	}
	struct hal_alert *ev = &p->q[(p->q_head + p->q_n) % GPIO_QLEN];
	ev->kind = asserted ? HAL_ALERT_ASSERTED : HAL_ALERT_CLEARED;
	ev->t_ms = t_ns / 1000000u;
	ev->seq = ++p->seq;
	p->q_n++;
	p->asserted = asserted;
	p->have_accept = true;
	p->accept_ns = t_ns;
}

static void take_edge(struct gpio_priv *p, const struct hal_gpio_edge *e, uint64_t now_ns)
{
	uint64_t t = edge_time(e->ts_ns, now_ns);
	bool level = e->rising != p->in_active_low;
	if (p->have_accept && t < p->accept_ns + p->debounce_ns) {
		p->recheck = true; /* a bounce, or a real change we settle at window end */
		return;
	}
	if (level != p->asserted)
		push(p, level, t);
}

static int level_now(struct gpio_priv *p, bool *asserted)
{
	int v = p->prov->get_value(p->in);
	if (v < 0)
		return v;
	*asserted = (v != 0) != p->in_active_low;
	return 0;
}

static int arm_timer(struct gpio_priv *p)
{
	struct itimerspec its = { 0 };
	if (p->recheck) {
		uint64_t at = p->accept_ns + p->debounce_ns;
		its.it_value.tv_sec = (time_t)(at / 1000000000u);
		its.it_value.tv_nsec = (long)(at % 1000000000u);
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1; /* zero would disarm */
	}
	return timerfd_settime(p->tfd, TFD_TIMER_ABSTIME, &its, NULL) ? -errno : 0;
}

/* Keep the eventfd readable exactly while events wait. */
static int signal_queue(struct gpio_priv *p)
{
	uint64_t one = 1, buf;
	if (p->q_n > 0 && !p->q_signalled) {
		if (write(p->qfd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			return -errno;
		p->q_signalled = true;
	} else if (p->q_n == 0 && p->q_signalled) {
		if (read(p->qfd, &buf, sizeof(buf)) < 0 && errno != EAGAIN)
			return -errno;
		p->q_signalled = false;
	}
	return 0;
}

static int gpio_alert_fd(struct hal_dev *dev)
{
	struct gpio_priv *p = dev->priv;
	return p->in ? p->epfd : -ENOTSUP;
}

static int gpio_alert_read(struct hal_dev *dev, struct hal_alert *ev)
{
	struct gpio_priv *p = dev->priv;
	if (!p->in)
		return -ENOTSUP;
	uint64_t expirations;
	if (read(p->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return -errno;
	struct hal_gpio_edge edges[16];
	int n;
	do {
		n = p->prov->read_edges(p->in, edges, 16);
		if (n < 0)
			return n;
		uint64_t now = govd_mono_ns();
		for (int i = 0; i < n; i++)
			take_edge(p, &edges[i], now);
	} while (n == 16);
	uint64_t now = govd_mono_ns();
	if (p->recheck && now >= p->accept_ns + p->debounce_ns) {
		p->recheck = false;
		bool lvl;
		int rc = level_now(p, &lvl);
		if (rc)
			return rc;
		if (lvl != p->asserted)
			push(p, lvl, now);
	}
	int got = 0;
	if (p->q_n) {
		*ev = p->q[p->q_head];
		p->q_head = (p->q_head + 1) % GPIO_QLEN;
		p->q_n--;
		got = 1;
	}
	int rc = arm_timer(p);
	if (rc == 0)
		rc = signal_queue(p);
	return rc ? rc : got;
}

static int gpio_set_brake(struct hal_dev *dev, bool on)
{
	struct gpio_priv *p = dev->priv;
	if (!p->out)
		return -ENOTSUP;
	int rc = p->prov->set_value(p->out, on != p->out_active_low);
	if (rc == 0)
		p->brake_on = on;
	return rc;
}

static int gpio_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct gpio_priv *p = dev->priv;
	/* Lines only: no telemetry, every value says so. */
	memset(out, 0, sizeof(*out));
	out->t_ms = govd_clock_now_or_mono_ms(p->clock);
	return 0;
}

static int gpio_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->model, sizeof(out->model), "gpio");
	snprintf(out->driver_version, sizeof(out->driver_version), "libgpiod %s",
		 gpiod_version_string());
	return 0;
}

static void release_in(struct gpio_priv *p)
{
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->tfd >= 0)
		close(p->tfd);
	if (p->qfd >= 0)
		close(p->qfd);
	if (p->in)
		p->prov->release(p->in);
	p->in = NULL;
	p->epfd = p->tfd = p->qfd = -1;
}

static void release_out(struct gpio_priv *p)
{
	if (!p->out)
		return;
	/* Held safe on the way out; the kernel keeps the level after release
	 * on most controllers. */
	p->prov->set_value(p->out, p->brake_safe != p->out_active_low);
	p->prov->release(p->out);
	p->out = NULL;
}

static void gpio_close(struct hal_dev *dev)
{
	struct gpio_priv *p = dev->priv;
	if (!p)
		return;
	release_out(p);
	release_in(p);
	free(p);
	dev->priv = NULL;
}

static int setup_alert(struct gpio_priv *p, struct bopts *o, const char *chip, unsigned offset)
{
	char err[256] = "";
	int rc = p->prov->request_events(p->prov->ctx, chip, offset, GPIO_CONSUMER, &p->in, err,
					 sizeof(err));
	if (rc) {
		p->in = NULL;
		bopts_error(o, bopts_has(o, "alert_chip") ? "alert_chip" : "chip", "gpio", "%s",
			    err[0] ? err : strerror(-rc));
		return rc;
	}
	int lfd = p->prov->event_fd(p->in);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->qfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (lfd < 0 || p->epfd < 0 || p->tfd < 0 || p->qfd < 0) {
		rc = lfd < 0 ? lfd : -errno;
		goto fail;
	}
	int fds[3] = { lfd, p->tfd, p->qfd };
	for (int i = 0; i < 3; i++) {
		struct epoll_event ee = { .events = EPOLLIN, .data.fd = fds[i] };
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fds[i], &ee)) {
			rc = -errno;
			goto fail;
		}
	}
	/* An alert already active at start is reported like an edge. */
	bool lvl;
	rc = level_now(p, &lvl);
	if (rc)
		goto fail;
	p->asserted = false;
	if (lvl)
		push(p, true, govd_mono_ns());
	rc = signal_queue(p);
	if (rc)
		goto fail;
	return 0;

fail:
	bopts_error(o, "alert_line", "gpio", "cannot watch alert line %u on '%s': %s", offset, chip,
		    strerror(-rc));
	return rc;
}

static int gpio_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	static const char *const keys[] = { "chip", "alert_chip", "alert_line", "alert_active_low",
					    "debounce_ms", "brake_chip", "brake_line",
					    "brake_active_low", "brake_safe", NULL };
	struct bopts o;
	bopts_init(&o, cfg, diags, "gpio");
	bopts_check_keys(&o, keys);
	uint32_t alert_line = 0, brake_line = 0, debounce_ms = 10;
	bool in_al = false, out_al = false, safe = false;
	bool want_in = bopts_has(&o, "alert_line"), want_out = bopts_has(&o, "brake_line");
	const char *chip = bopts_str(&o, "chip", NULL);
	const char *in_chip = bopts_str(&o, "alert_chip", chip);
	const char *out_chip = bopts_str(&o, "brake_chip", chip);
	bopts_u32(&o, "alert_line", 0, 65535, 0, &alert_line);
	bopts_u32(&o, "brake_line", 0, 65535, 0, &brake_line);
	bopts_u32(&o, "debounce_ms", 0, 10000, 10, &debounce_ms);
	bopts_bool(&o, "alert_active_low", false, &in_al);
	bopts_bool(&o, "brake_active_low", false, &out_al);
	bopts_bool(&o, "brake_safe", false, &safe);
	if (!want_in && !want_out)
		bopts_error(&o, "", "missing", "gpio needs 'alert_line', 'brake_line' or both");
	if (want_in && (!in_chip || !in_chip[0]))
		bopts_error(&o, "chip", "missing",
			    "alert_line needs 'chip' or 'alert_chip' (e.g. gpiochip0)");
	if (want_out && (!out_chip || !out_chip[0]))
		bopts_error(&o, "chip", "missing",
			    "brake_line needs 'chip' or 'brake_chip' (e.g. gpiochip0)");
	if (!want_in && (bopts_has(&o, "alert_active_low") || bopts_has(&o, "debounce_ms")))
		bopts_error(&o, "alert_line", "missing", "alert options given without 'alert_line'");
	if (!want_out && (bopts_has(&o, "brake_active_low") || bopts_has(&o, "brake_safe")))
		bopts_error(&o, "brake_line", "missing", "brake options given without 'brake_line'");
	if (o.errors)
		return -EINVAL;

	struct gpio_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->prov = provider;
	p->epfd = p->tfd = p->qfd = -1;
	p->in_active_low = in_al;
	p->debounce_ns = (uint64_t)debounce_ms * 1000000u;
	p->out_active_low = out_al;
	p->brake_safe = safe;
	p->brake_on = safe;
	int rc = 0;
	if (want_out) {
		char err[256] = "";
		rc = p->prov->request_output(p->prov->ctx, out_chip, brake_line, GPIO_CONSUMER,
					     safe != out_al, &p->out, err, sizeof(err));
		if (rc) {
			p->out = NULL;
			bopts_error(&o, bopts_has(&o, "brake_chip") ? "brake_chip" : "chip", "gpio",
				    "%s", err[0] ? err : strerror(-rc));
			goto free_priv;
		}
	}
	if (want_in) {
		rc = setup_alert(p, &o, in_chip, alert_line);
		if (rc)
			goto release;
	}
	/* hal_can_alert()/hal_can_brake() tell the truth for this device. */
	p->ops = hal_gpio_ops;
	if (!p->in) {
		p->ops.alert_fd = NULL;
		p->ops.alert_read = NULL;
	}
	if (!p->out)
		p->ops.set_brake = NULL;
	p->clock = cfg->clock;
	dev->ops = &p->ops;
	dev->priv = p;
	return 0;

release:
	release_in(p);
	release_out(p);
free_priv:
	free(p);
	return rc;
}

const struct hal_ops hal_gpio_ops = {
	.name = "gpio",
	.open = gpio_open,
	.close = gpio_close,
	.get_limits = gpio_get_limits,
	.sample = gpio_sample,
	.alert_fd = gpio_alert_fd,
	.alert_read = gpio_alert_read,
	.set_brake = gpio_set_brake,
};

#endif /* GOVD_WITH_GPIOD */
