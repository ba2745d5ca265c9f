/* NVML backend against the fake libnvidia-ml.so.1 (tests/fake_nvml/): the
 * test scripts sensors through FAKE_NVML_STATE and checks the calls the
 * backend made, restore on close included, in FAKE_NVML_LOG. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/clock.h"
#include "hal/hal.h"
#include "hal/hal_backends.h"

#if GOVD_WITH_NVML
struct fx {
	char dir[64], state[96], log[96], lib[512];
	uint64_t t_ms;
	struct govd_clock clock;
	struct hal_dev dev;
	struct diag_list diags;
	bool open;
	bool dry; /* open as a dry run does (hal_dev_cfg.read_only) */
};

static uint64_t fx_now(void *ctx)
{
	return ((struct fx *)ctx)->t_ms;
}

static int fx_wait(void *ctx, uint64_t t)
{
	((struct fx *)ctx)->t_ms = t;
	return 0;
}

static const struct govd_clock_ops fx_clock_ops = { fx_now, fx_wait };

static int setup(void **state)
{
	const char *dir = getenv("FAKE_NVML_DIR");
	if (!dir) {
		fail_msg("FAKE_NVML_DIR not set"); /* main checks it first */
	}
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/govd-nvml-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/log", f->dir);
	snprintf(f->lib, sizeof(f->lib), "%s/full/libnvidia-ml.so.1", dir);
	setenv("FAKE_NVML_STATE", f->state, 1);
	setenv("FAKE_NVML_LOG", f->log, 1);
	f->t_ms = 1000;
	f->clock.ops = &fx_clock_ops;
	f->clock.ctx = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (!f)
		return 0;
	if (f->open)
		f->dev.ops->close(&f->dev);
	diag_clear(&f->diags);
	unlink(f->state);
	unlink(f->log);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void script(struct fx *f, const char *text)
{
	FILE *s = fopen(f->state, "w");
	assert_non_null(s);
	fputs(text, s);
	fclose(s);
}

static int fx_open(struct fx *f, ...)
{
	const char *keys[8], *vals[8];
	size_t n = 0;
	keys[n] = "library", vals[n++] = f->lib;
	va_list ap;
	va_start(ap, f);
	const char *k;
	while ((k = va_arg(ap, const char *)) && n < 8) {
		keys[n] = k;
		vals[n++] = va_arg(ap, const char *);
	}
	va_end(ap);
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "nvml", .n_opts = n, .keys = keys,
				   .values = vals, .clock = &f->clock, .read_only = f->dry };
	memset(&f->dev, 0, sizeof(f->dev));
	f->dev.ops = &hal_nvml_ops;
	int rc = hal_nvml_ops.open(&f->dev, &cfg, &f->diags);
	f->open = rc == 0;
	return rc;
}

static void fx_close(struct fx *f)
{
	f->dev.ops->close(&f->dev);
	f->open = false;
}

static bool diags_mention(const struct diag_list *l, const char *needle)
{
	for (size_t i = 0; i < l->n; i++)
		if (strstr(l->v[i].msg, needle))
			return true;
	return false;
}

/* The log from the first line containing `after` on (whole log if NULL). */
static char *read_log(struct fx *f)
{
	static char buf[16384];
	buf[0] = '\0';
	FILE *l = fopen(f->log, "r");
	if (!l)
		return buf;
	size_t n = fread(buf, 1, sizeof(buf) - 1, l);
	buf[n] = '\0';
	fclose(l);
	return buf;
}

static void test_missing_library(void **state)
{
	struct fx *f = *state;
	snprintf(f->lib, sizeof(f->lib), "/nonexistent/libnvidia-ml.so.1");
	assert_int_equal(fx_open(f, NULL), -ENOENT);
	assert_true(diags_mention(&f->diags, "nvml: /nonexistent/libnvidia-ml.so.1 not found (dlopen: "));
}

static void test_missing_symbol(void **state)
{
	struct fx *f = *state;
	snprintf(f->lib, sizeof(f->lib), "%s/broken/libnvidia-ml.so.1", getenv("FAKE_NVML_DIR"));
	assert_int_equal(fx_open(f, NULL), -ENOSYS);
	assert_true(diags_mention(&f->diags, "nvmlDeviceGetCount_v2"));
}

static void test_bad_options(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, "index", "5", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "GPU index 5 not present (2 GPUs)"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "index", "-1", NULL), -EINVAL);
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "power", "peak", NULL), -EINVAL);
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "gpu", "0", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "unknown option 'gpu'"));
}

static void test_sample(void **state)
{
	struct fx *f = *state;
	script(f, "reasons 0 0x44\nthermal_violation_ns 0 2500000000\n");
	assert_int_equal(fx_open(f, NULL), 0);
	struct hal_sample s;
	assert_int_equal(f->dev.ops->sample(&f->dev, &s), 0);
	assert_int_equal(s.t_ms, 1000);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 350000); /* instant, not the 1 s average */
	assert_int_equal(s.energy_mj[HAL_RAIL_ACCEL].v, 1000000);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 55000);
	assert_int_equal(s.temp_mc[HAL_TEMP_MEMORY].v, 60000);
	assert_false(s.temp_mc[HAL_TEMP_INLET].valid);
	assert_false(s.power_mw[HAL_RAIL_HOST].valid);
	assert_int_equal(s.clk_khz.v, 1980000);
	assert_int_equal(s.power_limit_mw.v, 700000);
	assert_int_equal(s.util_pct.v, 87);
	assert_int_equal(s.throttle, HAL_THR_POWER_CAP | HAL_THR_HW_SLOWDOWN);
	assert_int_equal(s.clamp_events, 1);
	assert_int_equal(s.clamp_time_ms, 2500);
	assert_int_equal(s.fault_count, 0);
	/* Slowdown entries are counted on rising edges. */
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.clamp_events, 1);
	script(f, "reasons 0 0x1\n");
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.throttle, HAL_THR_IDLE);
	script(f, "reasons 0 0x8\n");
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.clamp_events, 2);
}

static void test_power_average_and_index(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, "power", "average", "index", "1", NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 340001);
}

static void test_old_driver(void **state)
{
	struct fx *f = *state;
	snprintf(f->lib, sizeof(f->lib), "%s/old/libnvidia-ml.so.1", getenv("FAKE_NVML_DIR"));
	script(f, "reasons 0 0x20\n");
	assert_int_equal(fx_open(f, NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 340000); /* fell back to the average */
	assert_false(s.energy_mj[HAL_RAIL_ACCEL].valid);
	assert_false(s.temp_mc[HAL_TEMP_MEMORY].valid);
	assert_int_equal(s.throttle, HAL_THR_SW_THERMAL); /* via ...ThrottleReasons */
	assert_int_equal(s.fault_count, 0);
}

static void test_limits(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, NULL), 0);
	struct hal_limits l;
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_int_equal(l.clk_min_khz, 345000);
	assert_int_equal(l.clk_max_khz, 1980000);
	assert_int_equal(l.clk_step_khz, 15000);
	assert_int_equal(l.clk_default_max_khz, 1980000);
	assert_int_equal(l.power_limit_min_mw, 200000);
	assert_int_equal(l.power_limit_max_mw, 700000);
	assert_int_equal(l.power_limit_default_mw, 700000);
	assert_int_equal(l.slowdown_mc, 89000);
	assert_int_equal(l.shutdown_mc, 92000);
	assert_string_equal(l.model, "NVIDIA H200 (fake 0)");
	assert_string_equal(l.driver_version, "550.54.15");
	assert_string_equal(l.firmware_version, "96.00.99.00.01");
	assert_true(hal_can_set_clocks(&f->dev));
	assert_true(hal_can_set_power_limit(&f->dev));
}

/* Selected by UUID: the GPU itself whatever its index; identity as
 * dcgm-exporter labels it (UUID, pci_bus_id, gpu index). */
static void test_uuid_select(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, "power", "average", "uuid", "GPU-fa4e0000-0000-4000-8000-000000000001",
				 NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 340001); /* GPU 1's reading */
	struct hal_limits l;
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_string_equal(l.uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
	assert_string_equal(l.pci_bus_id, "00000000:19:00.0");
	assert_true(l.have_index);
	assert_int_equal(l.index, 1);
	char rec[512];
	assert_int_equal(f->dev.ops->get_original(&f->dev, rec, sizeof(rec)), 0);
	assert_non_null(strstr(rec, "\"uuid\":\"GPU-fa4e0000-0000-4000-8000-000000000001\""));
	fx_close(f);

	/* Another GPU's record is refused by UUID even with a matching index. */
	assert_int_equal(fx_open(f, "uuid", "GPU-fa4e0000-0000-4000-8000-000000000000", NULL), 0);
	assert_int_equal(f->dev.ops->adopt_original(&f->dev,
		"{\"backend\": \"nvml\", \"index\": 0, \"uuid\": \"GPU-fa4e0000-0000-4000-8000-000000000001\", "
		"\"power_limit_mw\": 500000}"), -ENODEV);
	fx_close(f);

	/* By index the identity is there too. */
	assert_int_equal(fx_open(f, NULL), 0);
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_string_equal(l.uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
	assert_string_equal(l.pci_bus_id, "00000000:18:00.0");
	assert_int_equal(l.index, 0);
}

static void test_uuid_errors(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, "uuid", "GPU-fa4e0000-0000-4000-8000-000000000007", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "no GPU with UUID GPU-fa4e0000-0000-4000-8000-000000000007"));
	assert_true(diags_mention(&f->diags, "present: 0=GPU-fa4e0000-0000-4000-8000-000000000000, "
					     "1=GPU-fa4e0000-0000-4000-8000-000000000001"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "uuid", "GPU-x", "index", "0", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "not both"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "uuid", "fa4e0000", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "starts with GPU-"));
	diag_clear(&f->diags);
	/* The old fake has no nvmlDeviceGetHandleByUUID nor PCI info. */
	snprintf(f->lib, sizeof(f->lib), "%s/old/libnvidia-ml.so.1", getenv("FAKE_NVML_DIR"));
	assert_int_equal(fx_open(f, "uuid", "GPU-fa4e0000-0000-4000-8000-000000000000", NULL), -ENOSYS);
	assert_true(diags_mention(&f->diags, "select the GPU by options.index"));
	assert_int_equal(fx_open(f, NULL), 0);
	struct hal_limits l;
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_string_equal(l.pci_bus_id, "");
	assert_string_equal(l.uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
}

/* MIG: an instance maps to its parent (readings, identity labels), is never
 * written from (refused at open unless read-only), and a parent in MIG
 * mode keeps its power limit but not its clock lock. */
static void test_mig(void **state)
{
	struct fx *f = *state;
	const char *mig = "MIG-fa4e0000-0000-4000-9000-000001000001"; /* GPU 1, instance 2 */
	script(f, "mig 1 2\n");
	assert_int_equal(fx_open(f, "uuid", mig, NULL), -EPERM);
	assert_true(diags_mention(&f->diags, "is MIG instance 2 of GPU 1 "
					     "(GPU-fa4e0000-0000-4000-8000-000000000001)"));
	assert_true(diags_mention(&f->diags, "govern the parent"));
	diag_clear(&f->diags);

	assert_int_equal(fx_open(f, "uuid", mig, "read_only", "true", "power", "average", NULL), 0);
	assert_false(hal_can_set_clocks(&f->dev));
	assert_false(hal_can_set_power_limit(&f->dev));
	char ids[2][HAL_ID_LEN];
	assert_int_equal(f->dev.ops->writer_ids(&f->dev, ids, 2), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_true(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 340001); /* the parent's */
	struct hal_limits l;
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_string_equal(l.uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
	assert_string_equal(l.mig_uuid, mig);
	assert_int_equal(l.mig_gi_id, 2);
	assert_int_equal(l.index, 1);
	assert_true(l.mig_enabled);
	fx_close(f);
	/* a dry run opens it too (it writes nothing) */
	f->dry = true;
	assert_int_equal(fx_open(f, "uuid", mig, NULL), 0);
	fx_close(f);
	f->dry = false;

	/* the parent in MIG mode: power limit yes, clock lock no (warned) */
	assert_int_equal(fx_open(f, "uuid", "GPU-fa4e0000-0000-4000-8000-000000000001", NULL), 0);
	assert_false(hal_can_set_clocks(&f->dev));
	assert_true(hal_can_set_power_limit(&f->dev));
	assert_true(diags_mention(&f->diags, "MIG mode"));
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_string_equal(l.mig_uuid, "");
	assert_true(l.mig_enabled);
	fx_close(f);
	/* GPU 0 (MIG off): both */
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, NULL), 0);
	assert_true(hal_can_set_clocks(&f->dev));
	assert_false(diags_mention(&f->diags, "MIG mode"));
}

/* options.all: every GPU by UUID (hal_expand), reading only. */
static void test_expand_all(void **state)
{
	struct fx *f = *state;
	script(f, "gpus 3\nmig 1 2\n");
	const char *keys[] = { "library", "all", "power" }, *vals[] = { f->lib, "true", "average" };
	struct hal_dev_cfg cfg = { .name = "gpus", .backend = "nvml", .n_opts = 3, .keys = keys,
				   .values = vals };
	struct hal_expansion x;
	assert_int_equal(hal_expand(&cfg, &x, &f->diags), 0);
	assert_int_equal(x.n, 3); /* physical GPUs: MIG instances are not listed */
	assert_string_equal(x.drop_key, "all");
	assert_string_equal(x.set_key, "uuid");
	assert_string_equal(x.value[0], "GPU-fa4e0000-0000-4000-8000-000000000000");
	assert_string_equal(x.value[2], "GPU-fa4e0000-0000-4000-8000-000000000002");
	const char *log = read_log(f);
	assert_null(strstr(log, "Set"));
	/* one device: nothing to expand */
	vals[1] = "false";
	assert_int_equal(hal_expand(&cfg, &x, &f->diags), 0);
	assert_int_equal(x.n, 0);
	/* all with index: refused; the selector itself cannot be opened */
	assert_int_equal(fx_open(f, "all", "true", "index", "1", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "without index or uuid"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "all", "true", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "one device per GPU"));
	/* no GPU at all: an error, not an empty node */
	script(f, "gpus 0\n");
	diag_clear(&f->diags);
	vals[1] = "true";
	assert_int_equal(hal_expand(&cfg, &x, &f->diags), -ENODEV);
	assert_true(diags_mention(&f->diags, "0 GPUs"));
}

static void test_writes_and_restore(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, NULL), 0);
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 800000), -EINVAL);
	assert_non_null(strstr(f->dev.ops->last_error(&f->dev), "outside [200000, 700000]"));
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 100000, 1500000), -EINVAL);
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 1500000, 1000000), -EINVAL);
	assert_null(strstr(read_log(f), "Set")); /* nothing reached NVML */

	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 450000), 0);
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 1000000, 1500000), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_limit_mw.v, 450000);
	assert_int_equal(s.clk_khz.v, 1500000);
	char json[256];
	assert_int_equal(f->dev.ops->get_original(&f->dev, json, sizeof(json)), 0);
	assert_non_null(strstr(json, "\"backend\":\"nvml\""));
	assert_non_null(strstr(json, "\"power_limit_mw\":700000"));
	assert_non_null(strstr(json, "\"locked_clocks\":\"reset\""));
	json_t *j = json_loads(json, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "NVIDIA H200 (fake 0)");
	json_decref(j);
	assert_int_equal(f->dev.ops->get_original(&f->dev, json, 10), -ENOSPC);

	fx_close(f);
	const char *log = read_log(f);
	const char *set = strstr(log, "nvmlDeviceSetPowerManagementLimit 0 450000 -> 0");
	const char *lock = strstr(log, "nvmlDeviceSetGpuLockedClocks 0 1000 1500 -> 0");
	const char *reset = strstr(log, "nvmlDeviceResetGpuLockedClocks 0 -> 0");
	const char *back = strstr(log, "nvmlDeviceSetPowerManagementLimit 0 700000 -> 0");
	const char *down = strstr(log, "nvmlShutdown -> 0");
	assert_non_null(set);
	assert_non_null(lock);
	assert_non_null(reset);
	assert_non_null(back);
	assert_non_null(down);
	assert_true(set < lock && lock < reset && reset < back && back < down);
}

/* restore() is the device's one restore: it puts the originals back now,
 * a second call writes nothing, and close() then has nothing left to do;
 * after a new write close() restores again. */
static void test_restore_op(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, NULL), 0);
	assert_true(hal_can_restore(&f->dev));
	assert_int_equal(f->dev.ops->restore(&f->dev), 0); /* nothing written: nothing to do */
	assert_null(strstr(read_log(f), "Reset"));
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 450000), 0);
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 1000000, 1500000), 0);
	assert_int_equal(f->dev.ops->restore(&f->dev), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_limit_mw.v, 700000);
	const char *log = read_log(f);
	const char *reset = strstr(log, "nvmlDeviceResetGpuLockedClocks 0 -> 0");
	const char *back = strstr(log, "nvmlDeviceSetPowerManagementLimit 0 700000 -> 0");
	assert_non_null(reset);
	assert_non_null(back);
	assert_null(strstr(back + 1, "nvmlDeviceSetPowerManagementLimit 0 700000"));
	assert_int_equal(f->dev.ops->restore(&f->dev), 0); /* idempotent */
	assert_null(strstr(strstr(read_log(f), "nvmlDeviceSetPowerManagementLimit 0 700000") + 1,
			   "nvmlDeviceSetPowerManagementLimit"));
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 500000), 0);
	fx_close(f);
	log = read_log(f);
	const char *again = strstr(log, "nvmlDeviceSetPowerManagementLimit 0 500000 -> 0");
	assert_non_null(again);
	assert_non_null(strstr(again, "nvmlDeviceSetPowerManagementLimit 0 700000 -> 0"));
	assert_null(strstr(again, "nvmlDeviceResetGpuLockedClocks")); /* clocks already back */
}

static void test_no_permission_read_only(void **state)
{
	struct fx *f = *state;
	script(f, "no_permission 1\n");
	assert_int_equal(fx_open(f, NULL), 0);
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 450000), -EPERM);
	const char *err = f->dev.ops->last_error(&f->dev);
	assert_non_null(strstr(err, "nvmlDeviceSetPowerManagementLimit"));
	assert_non_null(strstr(err, "Insufficient Permissions"));
	assert_non_null(strstr(err, "read-only"));
	/* Read-only now: later writes never reach NVML. */
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 1000000, 1500000), -EPERM);
	assert_int_equal(f->dev.ops->reset_clocks(&f->dev), -EPERM);
	fx_close(f);
	const char *log = read_log(f);
	assert_null(strstr(log, "nvmlDeviceSetGpuLockedClocks"));
	assert_null(strstr(log, "nvmlDeviceResetGpuLockedClocks"));
	/* The denied write is the only Set call: nothing to restore. */
	const char *first = strstr(log, "nvmlDeviceSetPowerManagementLimit");
	assert_non_null(first);
	assert_null(strstr(first + 1, "nvmlDeviceSetPowerManagementLimit"));
}

static void test_read_only_option(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, "read_only", "true", NULL), 0);
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 450000), -EPERM);
	fx_close(f);
	assert_null(strstr(read_log(f), "Set"));
}

/* A dry run (cfg.read_only) writes nothing on any path: not a set, and not
 * the restore at close, even with a crashed run's record adopted (which a
 * normal open restores at close). */
static void test_dry_run_never_writes(void **state)
{
	struct fx *f = *state;
	f->dry = true;
	assert_int_equal(fx_open(f, NULL), 0);
	assert_int_equal(f->dev.ops->adopt_original(&f->dev,
		"{\"backend\": \"nvml\", \"index\": 0, \"power_limit_mw\": 500000}"), 0);
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 1000000, 1500000), -EPERM);
	assert_int_equal(f->dev.ops->restore(&f->dev), 0);
	fx_close(f);
	assert_null(strstr(read_log(f), "Set"));
	assert_null(strstr(read_log(f), "Reset"));
	/* The same record adopted outside a dry run is restored at close: the
	 * check above could fail. */
	f->dry = false;
	assert_int_equal(fx_open(f, NULL), 0);
	assert_int_equal(f->dev.ops->adopt_original(&f->dev,
		"{\"backend\": \"nvml\", \"index\": 0, \"power_limit_mw\": 500000}"), 0);
	fx_close(f);
	assert_non_null(strstr(read_log(f), "nvmlDeviceSetPowerManagementLimit 0 500000"));
}

static void test_absurd_and_lost(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fx_open(f, NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.fault_count, 0);
	/* within the limits the governor's validator uses (hal.h): a reading */
	script(f, "temp_c 0 220\n");
	f->dev.ops->sample(&f->dev, &s);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 220000);
	assert_int_equal(s.fault_count, 0);
	script(f, "temp_c 0 251\nenergy_mj 0 999000\n");
	f->dev.ops->sample(&f->dev, &s);
	assert_false(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_non_null(strstr(s.fault, "out of [-273.15, 250]"));
	assert_false(s.energy_mj[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.fault_count, 2);
	script(f, "lost 0 1\n");
	f->dev.ops->sample(&f->dev, &s);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_false(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_false(s.clk_khz.valid);
	assert_true(s.fault_count > 2);
	assert_non_null(strstr(s.fault, "GPU is lost"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_symbol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_power_average_and_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_driver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uuid_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uuid_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expand_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writes_and_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_op, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_permission_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_option, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_never_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absurd_and_lost, setup, teardown),
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
	printf("SKIP: nvml backend not compiled in (GOVD_WITH_NVML=OFF)\n");
	return 77;
}
#endif
