/* Unit tests for the gpio backend through the HAL boundary, with a fake line
 * provider that has libgpiod's poll mechanics (a pipe is the line's event fd;
 * each edge writes one byte). Covered: an edge becomes an alert readable via
 * poll on alert_fd; bounces within debounce_ms give one event; a real change
 * hidden among bounces is reported when the window ends; active-low
 * inversion; an alert active at open; the brake output held safe on open and
 * close; missing chip and bad line errors that name the chip. Waits use poll
 * with a generous bound and assert what arrived, never how fast. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/diag.h"
#include "hal/hal_gpio.h"

#ifdef GOVD_WITH_GPIOD

#include "tests/unit/fake_gpio.h"

static int setup(void **state)
{
	memset(lines, 0, sizeof(lines));
	memset(init_level, 0, sizeof(init_level));
	hal_gpio_set_line_provider(&fake);
	return 0;
}

static int teardown(void **state)
{
	hal_gpio_set_line_provider(NULL);
	for (size_t i = 0; i < FAKE_LINES; i++)
		if (lines[i].used && !lines[i].released)
			fake_release(&lines[i]);
	return 0;
}

static int open_with(struct hal_dev *dev, const char *const *kv, size_t n, struct diag_list *dl)
{
	const char *keys[16], *vals[16];
	for (size_t i = 0; i < n; i++) {
		keys[i] = kv[2 * i];
		vals[i] = kv[2 * i + 1];
	}
	struct hal_dev_cfg cfg = { .name = "lines0", .backend = "gpio", .n_opts = n, .keys = keys,
				   .values = vals };
	return hal_open(dev, &cfg, dl); /* through the registry */
}

static bool has_diag(const struct diag_list *l, const char *a, const char *b)
{
	char buf[1024];
	for (size_t i = 0; i < l->n; i++) {
		diag_format(&l->v[i], buf, sizeof(buf));
		if (strstr(buf, a) && (!b || strstr(buf, b)))
			return true;
	}
	return false;
}

/* poll() on alert_fd: 1 readable, 0 not within timeout_ms. */
static int wait_fd(struct hal_dev *dev, int timeout_ms)
{
	struct pollfd pfd = { .fd = dev->ops->alert_fd(dev), .events = POLLIN };
	assert_true(pfd.fd >= 0);
	int rc = poll(&pfd, 1, timeout_ms);
	assert_true(rc >= 0);
	return rc;
}

static void test_edge_becomes_alert_via_poll(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "3", "debounce_ms", "0" };
	assert_int_equal(open_with(&dev, kv, 3, &dl), 0);
	assert_true(hal_can_alert(&dev));
	struct hal_alert ev;
	assert_int_equal(wait_fd(&dev, 0), 0); /* idle line: nothing to read */
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0);

	struct fake_line *l = line_at(3, false);
	uint64_t t0 = now_ns();
	fake_edge(l, 1, t0);
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	assert_int_equal(ev.seq, 1);
	assert_int_equal(ev.t_ms, t0 / 1000000u); /* the edge's own time */
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0);
	assert_int_equal(wait_fd(&dev, 0), 0);

	fake_edge(l, 0, now_ns());
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_CLEARED);
	assert_int_equal(ev.seq, 2);

	/* Two changes queued before one read: both come out in order, and the
	 * fd stays readable while the second waits. */
	fake_edge(l, 1, now_ns());
	fake_edge(l, 0, now_ns());
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	assert_int_equal(wait_fd(&dev, 0), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_CLEARED);
	assert_int_equal(ev.seq, 4);
	assert_int_equal(wait_fd(&dev, 0), 0);
	dev.ops->close(&dev);
	assert_true(l->released);
	diag_clear(&dl);
}

static void test_bounces_within_debounce_give_one_event(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "4", "debounce_ms", "30" };
	assert_int_equal(open_with(&dev, kv, 3, &dl), 0);
	struct fake_line *l = line_at(4, false);
	uint64_t t0 = now_ns();
	/* Contact bounce: 1 0 1 0 1 within 4 ms, settling high. */
	for (int i = 0; i < 5; i++)
		fake_edge(l, (i % 2) == 0, t0 + (uint64_t)i * 1000000u);
	struct hal_alert ev;
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	assert_int_equal(ev.seq, 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0);
	/* The window end re-reads the level: still high, so nothing new. */
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0);
	assert_int_equal(wait_fd(&dev, 0), 0);

	/* After the window a new edge counts again. */
	fake_edge(l, 0, now_ns());
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_CLEARED);
	assert_int_equal(ev.seq, 2);
	dev.ops->close(&dev);
	diag_clear(&dl);
}

static void test_real_change_among_bounces_is_reported_at_window_end(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "5", "debounce_ms", "20" };
	assert_int_equal(open_with(&dev, kv, 3, &dl), 0);
	struct fake_line *l = line_at(5, false);
	uint64_t t0 = now_ns();
	fake_edge(l, 1, t0);
	fake_edge(l, 0, t0 + 2000000u); /* a short pulse: ends inside the window */
	struct hal_alert ev;
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0); /* window still open */
	/* The timerfd wakes the poller when the window ends; the level is low. */
	int got = 0;
	for (int i = 0; i < 10 && !got; i++) {
		assert_int_equal(wait_fd(&dev, 1000), 1);
		got = dev.ops->alert_read(&dev, &ev);
		assert_true(got >= 0);
	}
	assert_int_equal(got, 1);
	assert_int_equal(ev.kind, HAL_ALERT_CLEARED);
	assert_int_equal(ev.seq, 2);
	dev.ops->close(&dev);
	diag_clear(&dl);
}

static void test_active_low_inverts(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	init_level[6] = 1; /* idle high = not asserted when active low */
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "6", "alert_active_low",
					   "true", "debounce_ms", "0" };
	assert_int_equal(open_with(&dev, kv, 4, &dl), 0);
	struct hal_alert ev;
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 0);
	struct fake_line *l = line_at(6, false);
	fake_edge(l, 0, now_ns()); /* falling = asserted */
	assert_int_equal(wait_fd(&dev, 5000), 1);
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	fake_edge(l, 1, now_ns());
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_CLEARED);
	dev.ops->close(&dev);
	diag_clear(&dl);
}

static void test_alert_active_at_open_is_reported(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	init_level[7] = 0; /* active low and low: asserted before we started */
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "7", "alert_active_low",
					   "yes" };
	assert_int_equal(open_with(&dev, kv, 3, &dl), 0);
	assert_int_equal(wait_fd(&dev, 0), 1);
	struct hal_alert ev;
	assert_int_equal(dev.ops->alert_read(&dev, &ev), 1);
	assert_int_equal(ev.kind, HAL_ALERT_ASSERTED);
	assert_int_equal(ev.seq, 1);
	assert_int_equal(wait_fd(&dev, 0), 0);
	dev.ops->close(&dev);
	diag_clear(&dl);
}

static void test_brake_held_safe_on_open_and_close(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	/* Safe = released; active low, so the safe physical level is high. */
	static const char *const kv[] = { "chip", FAKE_CHIP, "brake_line", "9", "brake_active_low",
					   "true", "brake_safe", "false" };
	assert_int_equal(open_with(&dev, kv, 3, &dl), 0);
	struct fake_line *l = line_at(9, true);
	assert_int_equal(l->value, 1);      /* requested at the safe level: no glitch */
	assert_int_equal(l->set_calls, 0);
	assert_true(hal_can_brake(&dev));
	assert_false(hal_can_alert(&dev)); /* brake-only device */
	assert_int_equal(dev.ops->set_brake(&dev, true), 0);
	assert_int_equal(l->value, 0);
	dev.ops->close(&dev);
	assert_true(l->released);
	assert_int_equal(l->value, 1);

	/* Safe = asserted, active high. */
	memset(lines, 0, sizeof(lines));
	static const char *const kv2[] = { "chip", FAKE_CHIP, "brake_line", "10", "brake_safe",
					    "true" };
	assert_int_equal(open_with(&dev, kv2, 3, &dl), 0);
	l = line_at(10, true);
	assert_int_equal(l->value, 1);
	assert_int_equal(dev.ops->set_brake(&dev, false), 0);
	assert_int_equal(l->value, 0);
	dev.ops->close(&dev);
	assert_int_equal(l->value, 1);
	diag_clear(&dl);
}

static void test_missing_chip_is_named(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "chip", "gpiochip42", "alert_line", "1" };
	assert_int_equal(open_with(&dev, kv, 2, &dl), -ENOENT);
	assert_true(has_diag(&dl, "lines0: error: options.chip", "'gpiochip42' not found"));
	assert_null(dev.priv);
	assert_null(dev.ops);
	diag_clear(&dl);

	/* Brake line fine, alert chip missing: the brake is released again, safe. */
	static const char *const kv2[] = { "chip", FAKE_CHIP, "brake_line", "2", "alert_chip",
					    "nochip", "alert_line", "1" };
	assert_int_equal(open_with(&dev, kv2, 4, &dl), -ENOENT);
	assert_true(has_diag(&dl, "options.alert_chip", "'nochip'"));
	struct fake_line *l = line_at(2, true);
	assert_true(l->released);
	assert_int_equal(l->value, 0);
	diag_clear(&dl);

	static const char *const kv3[] = { "chip", FAKE_CHIP, "alert_line", "99" };
	assert_int_equal(open_with(&dev, kv3, 2, &dl), -EINVAL);
	assert_true(has_diag(&dl, "line 99 out of range", FAKE_CHIP));
	diag_clear(&dl);
}

static void test_option_errors(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const none[] = { "chip", FAKE_CHIP };
	assert_int_equal(open_with(&dev, none, 1, &dl), -EINVAL);
	assert_true(has_diag(&dl, "options", "alert_line', 'brake_line' or both"));
	diag_clear(&dl);
	static const char *const bad[] = { "alert_line", "x", "debounce_ms", "-1", "colour", "red",
					   "alert_active_low", "maybe" };
	assert_int_equal(open_with(&dev, bad, 4, &dl), -EINVAL);
	assert_true(has_diag(&dl, "options.alert_line", "unsigned integer"));
	assert_true(has_diag(&dl, "options.debounce_ms", "unsigned integer"));
	assert_true(has_diag(&dl, "options.colour", "allowed: chip"));
	assert_true(has_diag(&dl, "options.alert_active_low", "true or false"));
	assert_true(has_diag(&dl, "options.chip", "needs 'chip'"));
	diag_clear(&dl);
	static const char *const stray[] = { "chip", FAKE_CHIP, "alert_line", "1", "brake_safe",
					    "true" };
	assert_int_equal(open_with(&dev, stray, 3, &dl), -EINVAL);
	assert_true(has_diag(&dl, "options.brake_line", "without 'brake_line'"));
	diag_clear(&dl);
}

static void test_sample_says_invalid(void **state)
{
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "chip", FAKE_CHIP, "alert_line", "1" };
	assert_int_equal(open_with(&dev, kv, 2, &dl), 0);
	struct hal_sample s;
	memset(&s, 0xff, sizeof(s));
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_true(s.t_ms > 0);
	for (int r = 0; r < HAL_RAIL_N; r++)
		assert_false(s.power_mw[r].valid);
	assert_false(s.clk_khz.valid);
	struct hal_limits lim;
	assert_int_equal(dev.ops->get_limits(&dev, &lim), 0);
	assert_int_equal(lim.clk_max_khz, 0);
	assert_int_equal(lim.power_limit_max_mw, 0);
	assert_true(hal_can_alert(&dev));
	assert_false(hal_can_brake(&dev)); /* alert-only device */
	assert_string_equal(dev.name, "lines0");
	hal_close(&dev);
	assert_null(dev.ops);
	diag_clear(&dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_edge_becomes_alert_via_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounces_within_debounce_give_one_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_real_change_among_bounces_is_reported_at_window_end,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_active_low_inverts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alert_active_at_open_is_reported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_brake_held_safe_on_open_and_close, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_chip_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_option_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample_says_invalid, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* !GOVD_WITH_GPIOD */

int main(void)
{
	printf("SKIP: gpio backend not compiled in (GOVD_WITH_GPIOD=OFF)\n");
	return 77;
}

#endif
