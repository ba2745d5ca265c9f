/* Drives the serving backend's haproxy precision actuator as govd does:
 * opens the device (hal_open, precision: haproxy), records its originals
 * in a govd state file (statefile_original + statefile_write), sets the
 * low-precision share of slice "code", then once per period reads
 * (read_serving: the check and the next bounded step) and sets the share
 * again, as a governor's tick does (max_step bounds the period, not each
 * call), printing every fault. On SIGTERM it restores as govd's exit does (set_precision to 0,
 * hal_close puts the original weights back) and removes the state file.
 *   haproxy_driver STATE SOCKET BACKEND SHARE MAX_STEP PERIOD_MS [dry]
 * Prints "held" after 5 periods (the tests ask for at most 4 steps). With
 * "dry" the device is opened read-only (hal_dev_cfg.read_only, as govd
 * --dry-run opens it): every path above must leave HAProxy's weights alone.
 * With HAP_LOW_MODE in the environment (haproxy_low_mode: int8 or fp8) it
 * first prints what set_low_mode does with each rung (the precision ladder). */
#include <errno.h>
#include <stdbool.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "governor/daemon/statefile.h"
#include "hal/hal.h"

int main(int argc, char **argv)
{
	if (argc != 7 && !(argc == 8 && !strcmp(argv[7], "dry"))) {
		fprintf(stderr,
			"usage: haproxy_driver STATE SOCKET BACKEND SHARE MAX_STEP PERIOD_MS [dry]\n");
		return 2;
	}
	char backends[128];
	snprintf(backends, sizeof(backends), "code=%s", argv[3]);
	const char *keys[] = { "url", "slices", "precision", "precision_target", "haproxy_backends",
			       "haproxy_max_step", "timeout_ms", "haproxy_low_mode" };
	const char *vals[] = { "http://127.0.0.1:1/metrics", "code", "haproxy", argv[2], backends,
			       argv[5], "300", getenv("HAP_LOW_MODE") };
	size_t n_opts = vals[7] ? 8 : 7;
	struct hal_dev_cfg cfg = { .name = "router0", .backend = "serving", .n_opts = n_opts,
				   .keys = keys, .values = vals, .read_only = argc == 8 };
	struct diag_list d = { 0 };
	struct hal_dev dev = { 0 };
	int rc = hal_open(&dev, &cfg, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "diag: %s: %s\n", d.v[i].path, d.v[i].msg);
	if (rc)
		return 1;
	json_t *orig = NULL;
	if ((rc = statefile_original(&dev, &orig, &d)))
		return 1;
	json_t *opts = json_object();
	for (size_t i = 0; i < n_opts; i++)
		json_object_set_new(opts, keys[i], json_string(vals[i]));
	json_t *doc = json_pack("{s:s,s:s,s:I,s:s,s:[{s:s,s:s,s:o,s:o}]}", "format", STATEFILE_FORMAT,
				"govd_version", "test", "pid", (json_int_t)getpid(), "config",
				"haproxy_driver", "devices", "name", "router0", "backend", "serving",
				"options", opts, "original", orig);
	if (!doc || statefile_write(argv[1], doc)) {
		fprintf(stderr, "cannot write %s\n", argv[1]);
		return 1;
	}
	json_decref(doc);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (vals[7]) {
		printf("set_low_mode offered: %s\n", hal_can_set_low_mode(&dev) ? "yes" : "no");
		for (uint8_t m = 0; hal_can_set_low_mode(&dev) && m < HAL_LOW_N; m++) {
			int r = dev.ops->set_low_mode(&dev, &m, 1);
			printf("set_low_mode %s: %s\n", hal_low_mode_names[m],
			       r ? strerror(-r) : "ok");
		}
	}
	double share = atof(argv[4]);
	long period_ms = atol(argv[6]);
	if ((rc = dev.ops->set_precision(&dev, &share, 1)))
		printf("set_precision: %s: %s\n", strerror(-rc), dev.ops->last_error(&dev));
	char last[400] = "";
	bool faulted = false;
	for (unsigned n = 0;; n++) {
		struct timespec ts = { period_ms / 1000, (period_ms % 1000) * 1000000 };
		if (sigtimedwait(&set, NULL, &ts) > 0)
			break;
		struct hal_serving sv;
		dev.ops->read_serving(&dev, &sv);
		if (!(sv.fault_bits & HAL_SVF_ACTUATION) && !faulted) /* a fault: the governor's safe point */
			dev.ops->set_precision(&dev, &share, 1);
		faulted |= (sv.fault_bits & HAL_SVF_ACTUATION) != 0;
		const char *m = (sv.fault_bits & HAL_SVF_ACTUATION) && sv.fault_msg ? sv.fault_msg : "";
		if (strcmp(m, last)) {
			printf("period %u: %s\n", n, m[0] ? m : "actuation healthy");
			snprintf(last, sizeof(last), "%s", m);
		}
		if (n == 5)
			printf("held\n");
		fflush(stdout);
	}
	double zero = 0;
	dev.ops->set_precision(&dev, &zero, 1); /* as governor_restore */
	hal_close(&dev);                         /* the original weights back */
	statefile_remove(argv[1]);
	printf("restored\n");
	return 0;
}
