/* Restore of an NVML device after a crash, through the daemon's state file
 * path (governor/daemon/statefile.c) and the fake libnvidia-ml.so.1: a child
 * process records the originals, governs (power limit, locked clocks) and
 * dies without closing; the fake's driver file keeps the governed settings
 * as a real driver would. The restore must put back the recorded originals
 * (700 W, unlocked), not what the reopened device finds (450 W). */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/daemon/config.h"
#include "governor/daemon/daemon.h"
#include "governor/daemon/statefile.h"
#include "hal/hal.h"

#if GOVD_WITH_NVML
struct fx {
	char dir[64], log[96], driver[96], state[96], lib[512];
	struct diag_list diags;
};

static int setup(void **st)
{
	const char *d = getenv("FAKE_NVML_DIR");
	if (!d) {
		fail_msg("FAKE_NVML_DIR not set"); /* main checks it first */
	}
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/govd-nvrest-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->log, sizeof(f->log), "%s/log", f->dir);
	snprintf(f->driver, sizeof(f->driver), "%s/driver", f->dir);
	snprintf(f->state, sizeof(f->state), "%s/state.json", f->dir);
	snprintf(f->lib, sizeof(f->lib), "%s/full/libnvidia-ml.so.1", d);
	setenv("FAKE_NVML_LOG", f->log, 1);
	setenv("FAKE_NVML_DRIVER", f->driver, 1);
	unsetenv("FAKE_NVML_STATE");
	*st = f;
	return 0;
}

static int teardown(void **st)
{
	struct fx *f = *st;
	if (!f)
		return 0;
	diag_clear(&f->diags);
	unlink(f->log);
	unlink(f->driver);
	unlink(f->state);
	rmdir(f->dir);
	unsetenv("FAKE_NVML_DRIVER");
	free(f);
	return 0;
}

static char *slurp(const char *path)
{
	static char buf[32768];
	buf[0] = '\0';
	FILE *l = fopen(path, "r");
	if (!l)
		return buf;
	size_t n = fread(buf, 1, sizeof(buf) - 1, l);
	buf[n] = '\0';
	fclose(l);
	return buf;
}

static int open_gpu(struct fx *f, struct hal_dev *dev, const char *index)
{
	const char *keys[] = { "library", "index" }, *vals[] = { f->lib, index };
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "nvml", .n_opts = 2, .keys = keys,
				   .values = vals };
	memset(dev, 0, sizeof(*dev));
	return hal_open(dev, &cfg, &f->diags);
}

/* The same GPU as the serving backend's power side (power_backend: nvml):
 * the record and its adoption are the power side's, through the view. */
static int open_serving(struct fx *f, struct hal_dev *dev)
{
	const char *keys[] = { "url", "timeout_ms", "power_backend", "power.library", "power.index" };
	const char *vals[] = { "http://127.0.0.1:1/metrics", "100", "nvml", f->lib, "0" };
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "serving", .n_opts = 5, .keys = keys,
				   .values = vals };
	memset(dev, 0, sizeof(*dev));
	return hal_open(dev, &cfg, &f->diags);
}

static struct config *load_cfg(struct fx *f, bool serving)
{
	char yaml[2048];
	if (serving)
		snprintf(yaml, sizeof(yaml),
			 "policy: %s/policies/default.yaml\n"
			 "state_file: %s\n"
			 "devices:\n"
			 "  - name: gpu0\n"
			 "    backend: serving\n"
			 "    options:\n"
			 "      url: http://127.0.0.1:1/metrics\n"
			 "      timeout_ms: 100\n"
			 "      power_backend: nvml\n"
			 "      power.library: %s\n"
			 "      power.index: 0\n",
			 GOVD_SOURCE_DIR, f->state, f->lib);
	else
		snprintf(yaml, sizeof(yaml),
			 "policy: %s/policies/default.yaml\n"
			 "state_file: %s\n"
			 "devices:\n"
			 "  - name: gpu0\n"
			 "    backend: nvml\n"
			 "    options:\n"
			 "      library: %s\n"
			 "      index: 0\n",
			 GOVD_SOURCE_DIR, f->state, f->lib);
	struct config *c = NULL;
	assert_int_equal(config_load_string("restore.yaml", yaml, strlen(yaml), &c, &f->diags), 0);
	return c;
}

/* The daemon's start up to its first writes, then death without close. */
static void crashing_run_as(struct fx *f, bool serving)
{
	struct config *c = load_cfg(f, serving);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hal_dev dev;
		struct diag_list d = { 0 };
		json_t *orig[1] = { NULL };
		if (serving ? open_serving(f, &dev) : open_gpu(f, &dev, "0"))
			_exit(10);
		if (statefile_original(&dev, &orig[0], &d))
			_exit(11);
		json_t *doc = statefile_build(c, orig);
		if (!doc || statefile_write(c->state_file, doc))
			_exit(12);
		if (dev.ops->set_power_limit(&dev, 450000) ||
		    dev.ops->set_clock_range(&dev, 1000000, 1500000))
			_exit(13);
		_exit(0); /* kill -9: no close, no restore */
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	config_free(c);
	/* the driver kept the governed settings */
	assert_non_null(strstr(slurp(f->driver), "gpu 0 450000 1000 1500"));
}

static void crashing_run(struct fx *f)
{
	crashing_run_as(f, false);
}

/* A crashed run (as the nvml backend, or serving with it as the power
 * side), then the daemon's restore: the recorded originals go back (700 W,
 * unlocked), never the governed limit (the bug: close restored what open
 * found, 450 W). */
static void crash_then_restore(struct fx *f, bool serving)
{
	crashing_run_as(f, serving);
	size_t mark = strlen(slurp(f->log));

	bool found = false;
	struct statefile_result res;
	int rc = daemon_restore_state(f->state, &found, &res, &f->diags);
	diag_print(&f->diags, stdout);
	assert_int_equal(rc, 0);
	assert_true(found);
	assert_int_equal(res.restored, 1);
	assert_int_equal(access(f->state, F_OK), -1); /* removed after the restore */

	const char *after = slurp(f->log) + mark;
	assert_non_null(strstr(after, "nvmlDeviceResetGpuLockedClocks 0 -> 0"));
	assert_non_null(strstr(after, "nvmlDeviceSetPowerManagementLimit 0 700000 -> 0"));
	assert_null(strstr(after, "nvmlDeviceSetPowerManagementLimit 0 450000"));
	assert_non_null(strstr(slurp(f->driver), "gpu 0 700000 0 0"));
}

static void test_crash_then_restore_puts_back_true_originals(void **st)
{
	crash_then_restore(*st, false);
}

/* The serving backend with the GPU as its power side: the restore reopens
 * it and the power side adopts the recorded originals, so its close puts
 * them back (before the view forwarded adopt_original it put back what it
 * found at open, the crashed run's 450 W, after the restore's writes). */
static void test_serving_power_side_restore(void **st)
{
	crash_then_restore(*st, true);
}

static void test_restore_refuses_another_gpu(void **st)
{
	struct fx *f = *st;
	crashing_run(f);
	/* the state file's GPU 0 was some other card */
	json_t *doc = NULL;
	assert_int_equal(statefile_read(f->state, &doc, &f->diags), 0);
	json_t *orig = json_object_get(json_array_get(json_object_get(doc, "devices"), 0), "original");
	assert_non_null(orig);
	json_object_set_new(orig, "name", json_string("NVIDIA A100"));
	assert_int_equal(statefile_write(f->state, doc), 0);
	json_decref(doc);
	size_t mark = strlen(slurp(f->log));

	bool found = false;
	struct statefile_result res;
	assert_int_equal(daemon_restore_state(f->state, &found, &res, &f->diags), -EIO);
	assert_int_equal(res.failed, 1);
	assert_int_equal(access(f->state, F_OK), 0); /* stays for govctl restore */
	bool said = false;
	for (size_t i = 0; i < f->diags.n; i++)
		said |= strstr(f->diags.v[i].msg, "not restoring another GPU's settings") != NULL;
	assert_true(said);
	assert_null(strstr(slurp(f->log) + mark, "Set")); /* nothing written */
	assert_null(strstr(slurp(f->log) + mark, "Reset"));
}

static void test_adopt_checks_the_record(void **st)
{
	struct fx *f = *st;
	struct hal_dev dev;
	assert_int_equal(open_gpu(f, &dev, "1"), 0);
	assert_true(hal_can_adopt_original(&dev));
	assert_int_equal(dev.ops->adopt_original(&dev, "{"), -EINVAL);
	assert_int_equal(dev.ops->adopt_original(&dev, "{\"backend\":\"sysfs\",\"restore\":[]}"),
			 -EINVAL);
	assert_int_equal(dev.ops->adopt_original(
				 &dev, "{\"backend\":\"nvml\",\"index\":1,\"power_limit_mw\":-5}"),
			 -EINVAL);
	assert_int_equal(dev.ops->adopt_original(
				 &dev, "{\"backend\":\"nvml\",\"index\":0,\"power_limit_mw\":600000}"),
			 -ENODEV);
	assert_non_null(strstr(dev.ops->last_error(&dev), "this is GPU 1"));
	hal_close(&dev);
	assert_null(strstr(slurp(f->log), "Set")); /* refused records change nothing */

	/* an accepted record is put back at close even without a write here */
	assert_int_equal(open_gpu(f, &dev, "1"), 0);
	assert_int_equal(dev.ops->adopt_original(&dev, "{\"backend\":\"nvml\",\"index\":1,"
						      "\"name\":\"NVIDIA H200 (fake 1)\","
						      "\"power_limit_mw\":600000,"
						      "\"locked_clocks\":\"reset\"}"),
			 0);
	hal_close(&dev);
	const char *log = slurp(f->log);
	const char *reset = strstr(log, "nvmlDeviceResetGpuLockedClocks 1 -> 0");
	const char *limit = strstr(log, "nvmlDeviceSetPowerManagementLimit 1 600000 -> 0");
	assert_non_null(reset);
	assert_non_null(limit);
	assert_true(reset < limit);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crash_then_restore_puts_back_true_originals,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_serving_power_side_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_refuses_another_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_checks_the_record, setup, teardown),
	};
	if (!getenv("FAKE_NVML_DIR")) {
		/* ctest sets it to the fake libraries it builds (tests/fake_nvml) */
		printf("SKIP: FAKE_NVML_DIR not set (run through ctest)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	printf("SKIP: NVML backend not compiled in (GOVD_WITH_NVML=OFF)\n");
	return 77;
}
#endif
