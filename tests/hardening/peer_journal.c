/* Hardening, peers: serving, quality and sensor faults reach the daemon's
 * log (the journal under systemd) once per episode, and again when they
 * clear (issue 12, item 7: they reached only the decision log). The daemon
 * calls fault_episodes_period after every period (governor/daemon/daemon.c
 * on_period); this drives it with the periods a faulty peer produces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "governor/daemon/faultlog.h"
#include "hal/hal.h"

static FILE *logf_;

static size_t count(const char *needle)
{
	fflush(logf_);
	rewind(logf_);
	char line[1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), logf_))
		n += strstr(line, needle) != NULL;
	fseek(logf_, 0, SEEK_END);
	return n;
}

static void period(struct fault_episodes *eps, uint64_t seq, uint32_t sv, const char *msg,
		   enum gov_fault power)
{
	enum gov_fault f[GOV_SIG_N] = { 0 };
	f[GOV_SIG_POWER_ACCEL] = power;
	struct gov_period p = { .rec = { .seq = seq, .faults = f, .serving_faults = sv,
					 .serving_fault_msg = msg } };
	fault_episodes_period(eps, "srv0", &p);
}

static void test_once_per_episode(void **state)
{
	(void)state;
	logf_ = tmpfile();
	assert_non_null(logf_);
	log_init(LOG_DEBUG, logf_);
	struct fault_episodes eps = { 0 };
	period(&eps, 1, 0, NULL, GOV_FAULT_NONE);
	/* 50 periods of +Inf scrapes, messages differing: one warning */
	for (uint64_t s = 2; s < 52; s++) {
		char msg[64];
		snprintf(msg, sizeof(msg), "gauge vllm:num_requests_running = inf (%llu)",
			 (unsigned long long)s);
		period(&eps, s, HAL_SVF_IMPLAUSIBLE, msg, GOV_FAULT_NONE);
	}
	assert_int_equal(count("srv0: serving fault: implausible-value: gauge vllm:num_requests_running"), 1);
	/* a second kind joins: named once */
	period(&eps, 52, HAL_SVF_IMPLAUSIBLE | HAL_SVF_TIMEOUT, "timeout", GOV_FAULT_NONE);
	period(&eps, 53, HAL_SVF_IMPLAUSIBLE | HAL_SVF_TIMEOUT, "timeout", GOV_FAULT_NONE);
	assert_int_equal(count("srv0: serving fault: timeout"), 1);
	/* a counter reset is informational: no episode */
	period(&eps, 54, HAL_SVF_RESET, NULL, GOV_FAULT_NONE);
	assert_int_equal(count("cleared (timeout, implausible-value) after 52 period(s)"), 1);
	period(&eps, 55, 0, NULL, GOV_FAULT_NONE);
	assert_int_equal(count("counter-reset"), 0);
	/* the next episode is logged again */
	period(&eps, 60, HAL_SVF_IMPLAUSIBLE, "again", GOV_FAULT_NONE);
	assert_int_equal(count("srv0: serving fault: implausible-value: again"), 1);
	/* sensors: a NaN power reading for 10 periods, then good */
	for (uint64_t s = 61; s < 71; s++)
		period(&eps, s, 0, NULL, GOV_FAULT_NAN);
	period(&eps, 71, 0, NULL, GOV_FAULT_NONE);
	assert_int_equal(count("srv0: sensor fault: power_accel nan"), 1);
	assert_int_equal(count("srv0: sensor fault cleared (power_accel) after 10 period(s)"), 1);
	char all[4096];
	fflush(logf_);
	rewind(logf_);
	size_t n = fread(all, 1, sizeof(all) - 1, logf_);
	all[n] = '\0';
	print_message("%s", all);
	log_fini();
	fclose(logf_);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_per_episode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
