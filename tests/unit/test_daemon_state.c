/* State file: crash-safe write (no temp file left, mode 0600), read-back,
 * format check, restore by replaying a recorded write list and by reopening
 * a device, and the restore-then-remove that govd's start and govctl restore
 * share. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/daemon/daemon.h"
#include "governor/daemon/statefile.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"

static char dir[] = "/tmp/test_state_XXXXXX";

static int setup(void **st)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void get(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_write_read_remove(void **st)
{
	char path[256], tmp[300];
	snprintf(path, sizeof(path), "%s/state.json", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.path, sizeof(cfg.path), "/etc/govd/govd.yaml");
	cfg.n_devices = 1;
	snprintf(cfg.dev[0].name, HAL_NAME_LEN, "gpu0");
	snprintf(cfg.dev[0].backend, 32, "nvml");
	char k[] = "index", v[] = "0";
	cfg.dev[0].n_opts = 1;
	cfg.dev[0].keys[0] = k;
	cfg.dev[0].values[0] = v;
	json_t *orig[1] = { json_pack("{s:i}", "power_limit_mw", 700000) };
	json_t *doc = statefile_build(&cfg, orig);
	assert_non_null(doc);
	assert_int_equal(statefile_write(path, doc), 0);
	json_decref(doc);
	struct stat s;
	assert_int_equal(stat(path, &s), 0);
	assert_int_equal(s.st_mode & 0777, 0600);
	assert_true(stat(tmp, &s) != 0); /* renamed, not left */

	struct diag_list d = { 0 };
	json_t *back;
	assert_int_equal(statefile_read(path, &back, &d), 0);
	json_t *dev0 = json_array_get(json_object_get(back, "devices"), 0);
	assert_string_equal(json_string_value(json_object_get(dev0, "backend")), "nvml");
	assert_string_equal(json_string_value(json_object_get(json_object_get(dev0, "options"), "index")), "0");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(dev0, "original"),
							     "power_limit_mw")),
			 700000);
	json_decref(back);
	assert_int_equal(statefile_remove(path), 0);
	assert_int_equal(statefile_remove(path), 0); /* absent is fine */
	assert_int_equal(statefile_read(path, &back, &d), -ENOENT);
	assert_int_equal(d.n, 0);

	put(path, "{\"format\": \"other\"}\n");
	assert_int_equal(statefile_read(path, &back, &d), -EINVAL);
	assert_int_equal(d.n, 1);
	diag_clear(&d);
	put(path, "{\"format\": \n");
	assert_int_equal(statefile_read(path, &back, &d), -EINVAL);
	assert_true(d.n == 1 && d.v[0].line >= 1);
	diag_clear(&d);
	unlink(path);
}

/* The sysfs form: a list of writes replayed in order, each attempted, each
 * only to a path the backend itself writes for that device. */
#define GPU0 "sys/devices/pci0000:00/0000:00:03.1/0000:03:00.0"
static void test_replay_list(void **st)
{
	char fx[256], a[512], b[512], victim[300], text[4096], path[256], buf[64];
	snprintf(fx, sizeof(fx), "%s/fx", dir);
	snprintf(text, sizeof(text), "cp -a tests/data/sysfs/xeon-mi210 %s", fx);
	assert_int_equal(system(text), 0);
	snprintf(a, sizeof(a), "%s/" GPU0 "/hwmon/hwmon3/power1_cap", fx);
	snprintf(b, sizeof(b), "%s/" GPU0 "/power_dpm_force_performance_level", fx);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(path, sizeof(path), "%s/replay.json", dir);
	put(a, "250000000\n");
	put(b, "manual\n");
	put(victim, "untouched\n");
	snprintf(text, sizeof(text),
		 "{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"gpu0\",\"backend\":\"sysfs\","
		 "\"options\":{\"root\":\"%s\",\"pci\":\"0000:03:00.0\"},\"original\":{\"backend\":"
		 "\"sysfs\",\"restore\":["
		 "{\"path\":\"%s\",\"value\":\"300000000\"},{\"path\":\"%s\",\"value\":\"1\"},"
		 "{\"path\":\"%s\",\"value\":\"auto\"}]}}]}",
		 fx, a, victim, b);
	put(path, text);
	struct diag_list d = { 0 };
	bool found;
	struct statefile_result r;
	/* one entry names a file the backend never writes: skipped, the others
	 * still happen, the state file stays */
	assert_int_equal(daemon_restore_state(path, &found, &r, &d), -EIO);
	assert_true(found);
	assert_int_equal(r.devices, 1);
	assert_int_equal(r.failed, 1);
	get(a, buf, sizeof(buf));
	assert_string_equal(buf, "300000000");
	get(b, buf, sizeof(buf));
	assert_string_equal(buf, "auto");
	get(victim, buf, sizeof(buf));
	assert_string_equal(buf, "untouched\n");
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0].file, "gpu0");
	assert_non_null(strstr(d.v[0].msg, "victim"));
	assert_non_null(strstr(d.v[0].msg, "not a file this device's backend writes"));
	diag_clear(&d);
}

/* The generic form: the device is reopened and written; all restored, the
 * file goes. */
static void test_reopen_generic(void **st)
{
	char path[256], text[1024];
	snprintf(path, sizeof(path), "%s/generic.json", dir);
	snprintf(text, sizeof(text),
		 "{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"sim0\",\"backend\":\"sim\","
		 "\"options\":{\"scenario\":\"configs/scenarios/default.yaml\",\"seed\":\"1\"},"
		 "\"original\":{\"generic\":true,\"power_limit_mw\":650000,\"locked_clocks\":\"reset\","
		 "\"int8_slices\":3}}]}");
	put(path, text);
	struct diag_list d = { 0 };
	bool found;
	struct statefile_result r;
	assert_int_equal(daemon_restore_state(path, &found, &r, &d), 0);
	assert_true(found);
	assert_int_equal(r.restored, 1);
	assert_true(access(path, F_OK) != 0);
	/* a device that cannot be opened is a failure naming it */
	put(path, "{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"x\",\"backend\":\"sim\","
		  "\"options\":{},\"original\":{\"generic\":true}}]}");
	assert_int_equal(daemon_restore_state(path, &found, &r, &d), -EIO);
	assert_int_equal(r.failed, 1);
	assert_true(d.n >= 1);
	diag_clear(&d);
	/* nothing there: success, not found */
	unlink(path);
	assert_int_equal(daemon_restore_state(path, &found, &r, &d), 0);
	assert_false(found);
}

/* Without get_original the daemon records the power limit it found. */
static void test_generic_original(void **st)
{
	struct diag_list d = { 0 };
	struct hal_dev dev;
	const char *k[] = { "scenario" }, *v[] = { "configs/scenarios/default.yaml" };
	struct hal_dev_cfg c = { .name = "sim0", .backend = "sim", .n_opts = 1, .keys = k, .values = v };
	assert_int_equal(hal_open(&dev, &c, &d), 0);
	hal_sim_plant(&dev)->dev.power_limit_w = 612.0;
	json_t *o;
	assert_int_equal(statefile_original(&dev, &o, &d), 0);
	assert_true(json_is_true(json_object_get(o, "generic")));
	assert_int_equal(json_integer_value(json_object_get(o, "power_limit_mw")), 612000);
	assert_int_equal(json_integer_value(json_object_get(o, "int8_slices")), 3);
	json_decref(o);
	hal_close(&dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read_remove),
		cmocka_unit_test(test_replay_list),
		cmocka_unit_test(test_reopen_generic),
		cmocka_unit_test(test_generic_original),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
