/* Hardening, peers: quality datagrams that try to open the INT8 gate
 * (issue 12, item 7). One datagram claiming 10^12 clean samples opened the
 * gate of a slice whose true drop is 1.8 % at once; two claiming INT64_MAX
 * wrapped the counter (UBSan: out-of-range conversion in estimate.c). Now a
 * read takes at most quality_max_samples per slice from the datagrams (a
 * datagram past it is dropped whole: implausible-value), counts saturate,
 * the estimator drops any period's increase over ESTIMATE_Q_MAX_PER_PERIOD,
 * and the gate stays shut on evidence that did not pass. The peer is a real
 * Unix datagram socket, as an evaluator uses it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/diag.h"
#include "governor/telemetry/estimate.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"

struct qdev {
	char dir[48], path[96];
	struct hal_dev dev;
};

static void qdev_open(struct qdev *q, const char *max_samples)
{
	snprintf(q->dir, sizeof(q->dir), "/tmp/peer_quality_XXXXXX");
	assert_non_null(mkdtemp(q->dir));
	snprintf(q->path, sizeof(q->path), "%s/quality.sock", q->dir);
	const char *keys[] = { "url", "slices", "quality_socket", "quality_max_samples" };
	const char *vals[] = { "http://127.0.0.1:1/metrics", "code,chat", q->path, max_samples };
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving",
				   .n_opts = max_samples ? 4 : 3, .keys = keys, .values = vals };
	struct diag_list dl = { 0 };
	q->dev.ops = &hal_serving_ops;
	int rc = hal_serving_ops.open(&q->dev, &cfg, &dl);
	diag_print(&dl, stdout);
	diag_clear(&dl);
	assert_int_equal(rc, 0);
}

static void qdev_close(struct qdev *q)
{
	q->dev.ops->close(&q->dev);
	rmdir(q->dir);
}

static void send_dgram(const struct qdev *q, const char *msg)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", q->path);
	assert_int_equal(sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&sa, sizeof(sa)),
			 (ssize_t)strlen(msg));
	close(fd);
}

static void read_q(struct qdev *q, struct hal_quality *out)
{
	assert_int_equal(q->dev.ops->read_quality(&q->dev, out), 0);
}

static void test_datagram_over_bound_dropped(void **state)
{
	(void)state;
	struct qdev q;
	qdev_open(&q, NULL); /* default bound 10,000 */
	struct hal_quality hq;
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":1000000000000,\"mismatches\":0}");
	read_q(&q, &hq);
	print_message("10^12 samples: faults 0x%x samples %llu: %s\n", hq.fault_bits,
		      (unsigned long long)hq.samples[0], hq.fault_msg ? hq.fault_msg : "");
	assert_true(hq.fault_bits & HAL_SVF_IMPLAUSIBLE);
	assert_int_equal(hq.samples[0], 0);
	assert_non_null(strstr(hq.fault_msg, "quality_max_samples"));
	/* two INT64_MAX: both dropped, nothing wraps */
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":9223372036854775807,\"mismatches\":0}");
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":9223372036854775807,\"mismatches\":0}");
	read_q(&q, &hq);
	assert_true(hq.fault_bits & HAL_SVF_IMPLAUSIBLE);
	assert_int_equal(hq.samples[0], 0);
	/* the bound is per read and per slice, over all datagrams together */
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":4000,\"mismatches\":40}");
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":4000,\"mismatches\":40}");
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":4000,\"mismatches\":40}");
	send_dgram(&q, "{\"slice\":\"chat\",\"samples\":4000,\"mismatches\":1}");
	read_q(&q, &hq);
	assert_true(hq.fault_bits & HAL_SVF_IMPLAUSIBLE);
	assert_int_equal(hq.samples[0], 8000);
	assert_int_equal(hq.mismatches[0], 80);
	assert_int_equal(hq.samples[1], 4000);
	/* next read, fresh bound; and with nothing implausible the fault clears */
	send_dgram(&q, "{\"slice\":\"code\",\"samples\":4000,\"mismatches\":40}");
	read_q(&q, &hq);
	assert_int_equal(hq.fault_bits, 0);
	assert_int_equal(hq.samples[0], 12000);
	read_q(&q, &hq);
	assert_int_equal(hq.fault_bits, 0);
	qdev_close(&q);
}

static const struct estimate_cfg ecfg = {
	.period_s = 0.5, .ewma_tau_s = 2, .trend_tau_s = 10, .window_s = 60, .ceiling_c = 90,
	.n_q = 1,
	.q = { { .max_drop = 0.01, .confidence = 0.95, .min_samples = 200 } },
};

static const struct gov_estimates *step(struct estimator *e, uint64_t t_ms, const struct hal_quality *hq)
{
	struct gov_reading in[GOV_SIG_N];
	enum gov_fault f[GOV_SIG_N];
	memset(in, 0, sizeof(in));
	memset(f, 0, sizeof(f));
	return estimate_step(e, t_ms, in, f, 0, 0, NULL, hq);
}

/* End to end through the backend: the attack leaves the gate shut; the
 * true 2 % drop the evaluator honestly reports keeps it shut. */
static void test_gate_stays_shut(void **state)
{
	(void)state;
	struct qdev q;
	qdev_open(&q, NULL);
	struct estimator e;
	assert_int_equal(estimate_init(&e, &ecfg), 0);
	struct hal_quality hq;
	read_q(&q, &hq);
	const struct gov_estimates *o = step(&e, 500, &hq);
	assert_false(o->q_gate_open[0]);
	for (int k = 0; k < 20; k++) {
		send_dgram(&q, "{\"slice\":\"code\",\"samples\":1000000000000,\"mismatches\":0}");
		send_dgram(&q, "{\"slice\":\"code\",\"samples\":9223372036854775807,\"mismatches\":0}");
		char honest[96];
		snprintf(honest, sizeof(honest), "{\"slice\":\"code\",\"samples\":100,\"mismatches\":%d}",
			 2); /* 2 %: the true drop is above max_drop */
		send_dgram(&q, honest);
		read_q(&q, &hq);
		o = step(&e, 1000 + 500 * (uint64_t)k, &hq);
		assert_false(o->q_gate_open[0]);
	}
	print_message("after 20 periods of attack: evidence %llu samples, upper bound %.4f, gate %s\n",
		      (unsigned long long)o->q_evidence_n[0], o->q_drop_upper[0],
		      o->q_gate_open[0] ? "open" : "shut");
	assert_true(o->q_evidence_n[0] <= 2000); /* only the honest ones (the 2 % raises an alarm) */
	estimate_fini(&e);
	qdev_close(&q);
}

/* Any backend (no HAL bound): cumulative counts that jump by 2^63 or wrap
 * are dropped by the estimator, its sums saturate, no UB. */
static void test_estimator_bounds_any_backend(void **state)
{
	(void)state;
	struct estimator e;
	assert_int_equal(estimate_init(&e, &ecfg), 0);
	struct hal_quality hq = { .valid = true, .n_slices = 1 };
	const struct gov_estimates *o = step(&e, 500, &hq);
	static const uint64_t seq[] = { UINT64_C(9223372036854775807), UINT64_MAX, UINT64_MAX - 1,
					1000, UINT64_MAX };
	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		hq.samples[0] = seq[k];
		hq.mismatches[0] = seq[k] == 1000 ? 50 : 0; /* the one plausible step: 5 % */
		o = step(&e, 1000 + 500 * (uint64_t)k, &hq);
		assert_false(o->q_gate_open[0]);
	}
	print_message("rejected slice-periods %llu, evidence %llu\n",
		      (unsigned long long)o->q_rejected_periods, (unsigned long long)o->q_evidence_n[0]);
	assert_true(o->q_rejected_periods >= 3);
	assert_true(o->q_evidence_n[0] <= 1000);
	estimate_fini(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_datagram_over_bound_dropped),
		cmocka_unit_test(test_gate_stays_shut),
		cmocka_unit_test(test_estimator_bounds_any_backend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
