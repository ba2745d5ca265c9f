/* Hardening, peers: a Modbus meter that drips its reply (issue 12, item 7).
 * libmodbus bounds the wait for the first byte and each wait for the next,
 * never the whole: with the old timeouts (byte timeout timeout_ms / 2) a
 * meter sending one byte every 60 ms had every 13-byte reply accepted after
 * ~780 ms with timeout_ms 200, each sample overrunning. Now a transaction
 * is bounded by timeout_ms as a whole: that reply fails, while a meter that
 * answers in time, even byte by byte, still reads. The peer is
 * tests/hardening/peer_servers.py (modbus-drip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/diag.h"
#include "hal/hal.h"
#include "hal/hal_modbus.h"
#include "peer_util.h"

#ifdef GOVD_WITH_MODBUS

static int open_meter(struct hal_dev *dev, unsigned port, const char *timeout_ms)
{
	char port_s[16];
	snprintf(port_s, sizeof(port_s), "%u", port);
	const char *keys[] = { "host", "port", "map", "timeout_ms", "budget_ms", "backoff_min_ms" };
	const char *vals[] = { "127.0.0.1", port_s, "configs/meters/eastron-sdm630.yaml", timeout_ms,
			       "20000", "1" };
	struct hal_dev_cfg cfg = { .name = "meter0", .backend = "modbus", .n_opts = 6, .keys = keys,
				   .values = vals };
	struct diag_list dl = { 0 };
	int rc = hal_open(dev, &cfg, &dl);
	diag_print(&dl, stdout);
	diag_clear(&dl);
	return rc;
}

/* One sample against a meter dripping drip_ms per byte; its stats and time. */
static void sample_once(const char *drip_ms, const char *timeout_ms, struct hal_sample *s,
			struct hal_modbus_stats *st, double *took_ms)
{
	struct peer p;
	if (peer_start(&p, "modbus-drip", drip_ms)) {
		fail_msg("peer_servers.py modbus-drip did not start (python3 is a test dependency)");
	}
	struct hal_dev dev;
	assert_int_equal(open_meter(&dev, p.port, timeout_ms), 0);
	uint64_t t0 = govd_mono_ms();
	assert_int_equal(dev.ops->sample(&dev, s), 0);
	*took_ms = (double)(govd_mono_ms() - t0);
	assert_int_equal(hal_modbus_stats(&dev, st), 0);
	hal_close(&dev);
	peer_stop(&p);
}

static void test_burst_meter_reads(void **state)
{
	(void)state;
	struct hal_sample s;
	struct hal_modbus_stats st;
	double took;
	sample_once("0", "200", &s, &st, &took);
	print_message("burst meter: %llu reads ok, %llu failed, %.0f ms\n",
		      (unsigned long long)st.reads_ok, (unsigned long long)st.reads_failed, took);
	assert_int_equal(st.reads_failed, 0);
	assert_int_equal(st.reads_ok, 5);
	assert_true(s.power_mw[HAL_RAIL_HOST].valid);
	assert_int_equal(s.power_mw[HAL_RAIL_HOST].v, 460000);
}

/* In time as a whole, though byte by byte: still read. */
static void test_slow_but_in_time_meter_reads(void **state)
{
	(void)state;
	struct hal_sample s;
	struct hal_modbus_stats st;
	double took;
	sample_once("2", "3000", &s, &st, &took);
	print_message("2 ms/byte, timeout_ms 3000: %llu reads ok, %llu failed, %.0f ms\n",
		      (unsigned long long)st.reads_ok, (unsigned long long)st.reads_failed, took);
	assert_int_equal(st.reads_failed, 0);
	assert_int_equal(st.reads_ok, 5);
}

static void test_drip_meter_bounded(void **state)
{
	(void)state;
	struct hal_sample s;
	struct hal_modbus_stats st;
	double took;
	sample_once("60", "200", &s, &st, &took);
	print_message("60 ms/byte (a 13-byte reply takes ~780 ms), timeout_ms 200: %llu reads ok, "
		      "%llu failed, sample took %.0f ms\n",
		      (unsigned long long)st.reads_ok, (unsigned long long)st.reads_failed, took);
	assert_int_equal(st.reads_ok, 0); /* no reply took longer than timeout_ms and counted */
	assert_true(st.reads_failed >= 1);
	assert_false(s.power_mw[HAL_RAIL_HOST].valid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_meter_reads),
		cmocka_unit_test(test_slow_but_in_time_meter_reads),
		cmocka_unit_test(test_drip_meter_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void)
{
	printf("modbus backend not compiled in: skipped\n");
	return 77;
}
#endif
