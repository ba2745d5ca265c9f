/* sysfs backend on fixture trees (tests/data/sysfs/, layouts in
 * docs/backends.md). Each test copies its fixture to a mkdtemp directory so
 * writes never dirty the tree, and drives time with a scripted clock. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
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
#include <jansson.h>

#include "common/clock.h"
#include "hal/hal.h"
#include "hal/hal_backends.h"
#include "hal/sysfs_io.h"

#if GOVD_WITH_SYSFS
/* ---- fixture copy --------------------------------------------------- */

static char copy_dst[512];
static size_t copy_src_len;

static int copy_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	char dst[1024];
	snprintf(dst, sizeof(dst), "%s%s", copy_dst, path + copy_src_len);
	if (flag == FTW_D)
		return mkdir(dst, 0755) && errno != EEXIST ? -1 : 0;
	if (flag == FTW_SL) {
		char target[512];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return -1;
		target[n] = '\0';
		return symlink(target, dst);
	}
	if (flag != FTW_F)
		return -1;
	FILE *in = fopen(path, "rb"), *out = fopen(dst, "wb");
	if (!in || !out) {
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return -1;
	}
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
	(void)st;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

struct fx {
	char dir[256];
	uint64_t t_ms;
	struct govd_clock clock;
	struct hal_dev dev;
	struct diag_list diags;
	bool open;
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

static struct fx *fx_new(const char *fixture)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/govd-sysfs-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	char src[256];
	snprintf(src, sizeof(src), "tests/data/sysfs/%s", fixture);
	copy_src_len = strlen(src);
	snprintf(copy_dst, sizeof(copy_dst), "%s", f->dir);
	assert_int_equal(nftw(src, copy_one, 16, FTW_PHYS), 0);
	f->t_ms = 1000;
	f->clock.ops = &fx_clock_ops;
	f->clock.ctx = f;
	return f;
}

static void fx_free(struct fx *f)
{
	if (f->open)
		f->dev.ops->close(&f->dev);
	diag_clear(&f->diags);
	nftw(f->dir, rm_one, 16, FTW_PHYS | FTW_DEPTH);
	free(f);
}

/* Opens with NULL-terminated key, value pairs; root is the fixture copy. */
static int fx_open(struct fx *f, ...)
{
	const char *keys[16], *vals[16];
	size_t n = 0;
	keys[n] = "root", vals[n++] = f->dir;
	va_list ap;
	va_start(ap, f);
	const char *k;
	while ((k = va_arg(ap, const char *)) && n < 16) {
		keys[n] = k;
		vals[n++] = va_arg(ap, const char *);
	}
	va_end(ap);
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "sysfs", .n_opts = n, .keys = keys,
				   .values = vals, .clock = &f->clock };
	memset(&f->dev, 0, sizeof(f->dev));
	f->dev.ops = &hal_sysfs_ops;
	snprintf(f->dev.name, sizeof(f->dev.name), "gpu0");
	int rc = hal_sysfs_ops.open(&f->dev, &cfg, &f->diags);
	f->open = rc == 0;
	return rc;
}

static void fx_close(struct fx *f)
{
	f->dev.ops->close(&f->dev);
	f->open = false;
}

static void fx_write(struct fx *f, const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", f->dir, rel);
	assert_int_equal(sysfs_write_str(p, text), 0);
}

static void fx_read(struct fx *f, const char *rel, char *buf, size_t len)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", f->dir, rel);
	assert_int_equal(sysfs_read_str(p, buf, len), 0);
}

static bool diags_mention(const struct diag_list *l, const char *needle)
{
	for (size_t i = 0; i < l->n; i++)
		if (strstr(l->v[i].msg, needle))
			return true;
	return false;
}

#define GPU0 "sys/devices/pci0000:00/0000:00:03.1/0000:03:00.0"
#define HW3 GPU0 "/hwmon/hwmon3"
#define PKG "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0"
#define NPU "sys/devices/platform/fdab0000.npu/devfreq/fdab0000.npu"
#define ARC "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:03:00.0/hwmon/hwmon5"

/* ---- parsers -------------------------------------------------------- */

static void test_parse_dpm(void **state)
{
	(void)state;
	struct sysfs_dpm_level lv[4];
	int cur;
	assert_int_equal(sysfs_parse_dpm("0: 500Mhz\n1: 800Mhz *\n2: 1700Mhz\n", lv, 4, &cur), 3);
	assert_int_equal(cur, 1);
	assert_int_equal(lv[2].index, 2);
	assert_int_equal(lv[2].mhz, 1700);
	assert_int_equal(sysfs_parse_dpm("0: 500Mhz\n", lv, 4, &cur), 1);
	assert_int_equal(cur, -1);
	assert_int_equal(sysfs_parse_dpm("0: fast\n", lv, 4, &cur), -EBADMSG);
	assert_int_equal(sysfs_parse_dpm("S: 500Mhz\n", lv, 4, &cur), -EBADMSG);
}

static void test_parse_list(void **state)
{
	(void)state;
	uint64_t v[4];
	assert_int_equal(sysfs_parse_u64_list("300 100 200", v, 4), 3);
	assert_int_equal(v[0], 100);
	assert_int_equal(v[2], 300);
	assert_int_equal(sysfs_parse_u64_list("100 abc", v, 4), -EBADMSG);
	assert_int_equal(sysfs_parse_u64_list("  ", v, 4), 0);
}

static void test_energy_delta(void **state)
{
	(void)state;
	uint64_t d;
	assert_int_equal(sysfs_energy_delta(100, 600, 1000, 1, 0, &d), 0);
	assert_int_equal(d, 500);
	/* Wrap at the range: 900 -> 100 is 200 uJ. */
	assert_int_equal(sysfs_energy_delta(900, 100, 1000, 1, 0, &d), 0);
	assert_int_equal(d, 200);
	/* Without a range, backwards is never a wrap. */
	assert_int_equal(sysfs_energy_delta(900, 100, 0, 1, 0, &d), -ERANGE);
	/* A wrap implying 999 mW over 1 ms when 500 mW is the most: rejected. */
	assert_int_equal(sysfs_energy_delta(101, 100, 1000, 1, 500, &d), -ERANGE);
	/* Values beyond the range cannot come from a wrapping counter. */
	assert_int_equal(sysfs_energy_delta(2000, 100, 1000, 1, 0, &d), -ERANGE);
}

/* ---- amdgpu + RAPL + coretemp host ---------------------------------- */

static void test_amdgpu_ambiguous_name(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "hwmon_name", "amdgpu", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "hwmon3"));
	assert_true(diags_mention(&f->diags, "hwmon4"));
	assert_true(diags_mention(&f->diags, "pci"));
	fx_free(f);
}

static void test_amdgpu_sample(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "hwmon_name", "amdgpu", "pci", "0000:03:00.0", NULL), 0);
	struct hal_sample s;
	assert_int_equal(f->dev.ops->sample(&f->dev, &s), 0);
	assert_int_equal(s.t_ms, 1000);
	assert_true(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 187000);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 52000);
	assert_int_equal(s.temp_mc[HAL_TEMP_MEMORY].v, 47000);
	assert_false(s.temp_mc[HAL_TEMP_INLET].valid); /* no inlet label configured */
	assert_int_equal(s.clk_khz.v, 800000);
	assert_int_equal(s.power_limit_mw.v, 300000);
	assert_int_equal(s.util_pct.v, 37);
	assert_int_equal(s.fault_count, 0);
	/* RAPL: the first sample has a counter but no delta yet. */
	assert_true(s.energy_mj[HAL_RAIL_HOST].valid);
	assert_int_equal(s.energy_mj[HAL_RAIL_HOST].v, 262143000);
	assert_false(s.power_mw[HAL_RAIL_HOST].valid);
	assert_false(s.power_mw[HAL_RAIL_MEMORY].valid);

	/* 1 s later the package counter wrapped after 150 J; dram used 20 J. */
	f->t_ms = 2000;
	fx_write(f, PKG "/energy_uj", "149671150");
	fx_write(f, PKG "/intel-rapl:0:1/energy_uj", "5020000000");
	assert_int_equal(f->dev.ops->sample(&f->dev, &s), 0);
	assert_int_equal(s.power_mw[HAL_RAIL_HOST].v, 150000);
	assert_int_equal(s.energy_mj[HAL_RAIL_HOST].v, 262143000 + 150000);
	assert_int_equal(s.power_mw[HAL_RAIL_MEMORY].v, 20000);
	assert_int_equal(s.energy_mj[HAL_RAIL_MEMORY].v, 5020000);
	assert_int_equal(s.fault_count, 0);
	fx_free(f);
}

static void test_amdgpu_inlet_label_option(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", "temp_inlet_label", "edge",
				 "temp_junction_label", "mem", "rapl", "off", NULL),
			 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.temp_mc[HAL_TEMP_INLET].v, 41000);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 47000);
	assert_false(s.energy_mj[HAL_RAIL_HOST].valid);
	fx_free(f);
}

static void test_amdgpu_limits(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", NULL), 0);
	struct hal_limits l;
	assert_int_equal(f->dev.ops->get_limits(&f->dev, &l), 0);
	assert_int_equal(l.clk_min_khz, 500000);
	assert_int_equal(l.clk_max_khz, 1700000);
	assert_int_equal(l.clk_step_khz, 300000);
	assert_int_equal(l.power_limit_min_mw, 0);
	assert_int_equal(l.power_limit_max_mw, 300000);
	assert_int_equal(l.power_limit_default_mw, 300000);
	assert_int_equal(l.slowdown_mc, 110000);
	assert_int_equal(l.shutdown_mc, 115000);
	assert_string_equal(l.model, "amdgpu 0000:03:00.0");
	assert_string_equal(l.driver_version, "amdgpu 6.1.0-18-amd64");
	assert_string_equal(l.firmware_version, "113-D67301-063");
	assert_true(hal_can_set_clocks(&f->dev));
	assert_true(hal_can_set_power_limit(&f->dev));
	fx_free(f);
}

static void test_amdgpu_absurd_values(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	fx_write(f, HW3 "/temp2_input", "-274000");
	f->t_ms = 2000;
	f->dev.ops->sample(&f->dev, &s);
	assert_false(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_true(s.temp_mc[HAL_TEMP_MEMORY].valid);
	assert_int_equal(s.fault_count, 1);
	assert_non_null(strstr(s.fault, "temp2_input"));

	/* the limits of hal.h, which the governor's validator shares */
	fx_write(f, HW3 "/temp2_input", "220000");
	f->t_ms = 2500;
	f->dev.ops->sample(&f->dev, &s);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_int_equal(s.fault_count, 1);
	fx_write(f, HW3 "/temp2_input", "250001");
	f->t_ms = 3000;
	f->dev.ops->sample(&f->dev, &s);
	assert_false(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_int_equal(s.fault_count, 2);
	assert_non_null(strstr(s.fault, "250001 mC out of [-273.15, 250] C"));

	fx_write(f, HW3 "/temp2_input", "50000");
	fx_write(f, HW3 "/power1_average", "-5000000");
	f->t_ms = 3500;
	f->dev.ops->sample(&f->dev, &s);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.fault_count, 3);
	assert_non_null(strstr(s.fault, "power1_average"));

	/* RAPL 1000 uJ backwards: as a wrap it would be 262 MW for 0.5 s. */
	fx_write(f, HW3 "/power1_average", "100000000");
	fx_write(f, PKG "/energy_uj", "262142999000");
	f->t_ms = 4000;
	f->dev.ops->sample(&f->dev, &s);
	assert_true(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_false(s.energy_mj[HAL_RAIL_HOST].valid);
	assert_false(s.power_mw[HAL_RAIL_HOST].valid);
	assert_int_equal(s.fault_count, 4);
	assert_non_null(strstr(s.fault, "energy_uj"));
	/* Re-based after the rejected step: a wrap worth 10 J in 1 s is fine. */
	fx_write(f, PKG "/energy_uj", "9670150");
	f->t_ms = 5000;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.fault_count, 4);
	assert_int_equal(s.power_mw[HAL_RAIL_HOST].v, 10000);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 50000);
	fx_free(f);
}

static void test_amdgpu_writes_and_restore(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	char buf[128];
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", NULL), 0);
	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 400000), -EINVAL);
	assert_non_null(strstr(f->dev.ops->last_error(&f->dev), "power1_cap_min/max"));
	fx_read(f, HW3 "/power1_cap", buf, sizeof(buf));
	assert_string_equal(buf, "300000000"); /* nothing written on error */

	assert_int_equal(f->dev.ops->set_power_limit(&f->dev, 250000), 0);
	fx_read(f, HW3 "/power1_cap", buf, sizeof(buf));
	assert_string_equal(buf, "250000000");
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 500000, 800000), 0);
	fx_read(f, GPU0 "/power_dpm_force_performance_level", buf, sizeof(buf));
	assert_string_equal(buf, "manual");
	fx_read(f, GPU0 "/pp_dpm_sclk", buf, sizeof(buf));
	assert_string_equal(buf, "0 1");
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 900000, 1000000), -EINVAL);

	char json[1024];
	snprintf(f->dev.name, sizeof(f->dev.name), "gpu\"0\\\n"); /* escaped, not cut */
	assert_int_equal(f->dev.ops->get_original(&f->dev, json, sizeof(json)), 0);
	assert_non_null(strstr(json, "\"backend\":\"sysfs\""));
	assert_non_null(strstr(json, "hwmon3/power1_cap\",\"value\":\"300000000\""));
	assert_non_null(strstr(json, "power_dpm_force_performance_level\",\"value\":\"auto\""));
	json_error_t jerr;
	json_t *j = json_loads(json, 0, &jerr);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "device")), "gpu\"0\\\n");
	assert_true(json_array_size(json_object_get(j, "restore")) >= 2);
	json_decref(j);
	snprintf(f->dev.name, sizeof(f->dev.name), "gpu0");
	assert_int_equal(f->dev.ops->get_original(&f->dev, json, 16), -ENOSPC);
	assert_string_equal(json, "");

	fx_close(f);
	fx_read(f, HW3 "/power1_cap", buf, sizeof(buf));
	assert_string_equal(buf, "300000000");
	fx_read(f, GPU0 "/power_dpm_force_performance_level", buf, sizeof(buf));
	assert_string_equal(buf, "auto");
	fx_free(f);
}

static void test_close_without_write_touches_nothing(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	char buf[64];
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", NULL), 0);
	/* Someone else changes the cap while we only read: close must not undo it. */
	fx_write(f, HW3 "/power1_cap", "200000000");
	fx_close(f);
	fx_read(f, HW3 "/power1_cap", buf, sizeof(buf));
	assert_string_equal(buf, "200000000");
	fx_free(f);
}

static void test_cpufreq_read_only(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "cpufreq_policy", "0", "rapl", "off", NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.clk_khz.v, 2100000);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	struct hal_limits l;
	f->dev.ops->get_limits(&f->dev, &l);
	assert_int_equal(l.clk_min_khz, 800000);
	assert_int_equal(l.clk_max_khz, 3500000);
	assert_false(hal_can_set_clocks(&f->dev));
	assert_false(hal_can_set_power_limit(&f->dev));
	fx_free(f);
}

/* ---- devfreq NPU ---------------------------------------------------- */

static void test_devfreq(void **state)
{
	(void)state;
	struct fx *f = fx_new("rk3588-npu");
	char buf[64];
	assert_int_equal(fx_open(f, "devfreq", "fdab0000.npu", "hwmon_name", "npu_thermal", NULL), 0);
	struct hal_limits l;
	f->dev.ops->get_limits(&f->dev, &l);
	assert_int_equal(l.clk_min_khz, 300000);
	assert_int_equal(l.clk_max_khz, 1000000);
	assert_int_equal(l.clk_step_khz, 100000);
	assert_string_equal(l.model, "npu_thermal");
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.clk_khz.v, 1000000);
	assert_int_equal(s.temp_mc[HAL_TEMP_JUNCTION].v, 38846); /* unlabelled temp1 */
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_false(hal_can_set_power_limit(&f->dev));

	/* Snapped inward: 450 -> 500 MHz, 820 -> 800 MHz. */
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 450000, 820000), 0);
	fx_read(f, NPU "/min_freq", buf, sizeof(buf));
	assert_string_equal(buf, "500000000");
	fx_read(f, NPU "/max_freq", buf, sizeof(buf));
	assert_string_equal(buf, "800000000");
	fx_read(f, NPU "/userspace/set_freq", buf, sizeof(buf));
	assert_string_equal(buf, "800000000");
	/* Above the current max: written max first, both land. */
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 900000, 1000000), 0);
	fx_read(f, NPU "/min_freq", buf, sizeof(buf));
	assert_string_equal(buf, "900000000");
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 810000, 890000), -EINVAL);
	assert_int_equal(f->dev.ops->set_clock_range(&f->dev, 800000, 700000), -EINVAL);

	fx_close(f);
	fx_read(f, NPU "/min_freq", buf, sizeof(buf));
	assert_string_equal(buf, "300000000");
	fx_read(f, NPU "/max_freq", buf, sizeof(buf));
	assert_string_equal(buf, "1000000000");
	fx_read(f, NPU "/userspace/set_freq", buf, sizeof(buf));
	assert_string_equal(buf, "1000000000");
	fx_free(f);
}

/* ---- i915: power from the energy counter ---------------------------- */

static void test_i915_energy(void **state)
{
	(void)state;
	struct fx *f = fx_new("i915-arc");
	assert_int_equal(fx_open(f, "hwmon_name", "i915", NULL), 0);
	struct hal_sample s;
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.energy_mj[HAL_RAIL_ACCEL].v, 9000000);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	f->t_ms = 1500;
	fx_write(f, ARC "/energy1_input", "9050000000");
	f->dev.ops->sample(&f->dev, &s);
	assert_int_equal(s.power_mw[HAL_RAIL_ACCEL].v, 100000); /* 50 J in 0.5 s */
	assert_int_equal(s.energy_mj[HAL_RAIL_ACCEL].v, 9050000);
	/* A 64-bit hwmon counter has no wrap: backwards is a fault. */
	f->t_ms = 2500;
	fx_write(f, ARC "/energy1_input", "9049000000");
	f->dev.ops->sample(&f->dev, &s);
	assert_false(s.energy_mj[HAL_RAIL_ACCEL].valid);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.fault_count, 1);
	assert_non_null(strstr(s.fault, "energy1_input"));
	fx_free(f);
}

/* ---- missing files: clear errors ------------------------------------ */

static void test_missing(void **state)
{
	(void)state;
	struct fx *f = fx_new("xeon-mi210");
	assert_int_equal(fx_open(f, "hwmon_name", "nvidia", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "'nvidia'"));
	assert_true(diags_mention(&f->diags, "hwmon3=amdgpu"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "devfreq", "nope.gpu", NULL), -ENOENT);
	assert_true(diags_mention(&f->diags, "sys/class/devfreq/nope.gpu/available_frequencies"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "rapl", "intel-rapl:9", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "intel-rapl:9"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "cpufreq_policy", "7", "rapl", "off", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "policy7"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "rapl", "off", NULL), -ENODEV);
	assert_true(diags_mention(&f->diags, "nothing to read"));
	diag_clear(&f->diags);
	assert_int_equal(fx_open(f, "hwmon", "amdgpu", NULL), -EINVAL);
	assert_true(diags_mention(&f->diags, "unknown option 'hwmon'"));
	diag_clear(&f->diags);

	/* A file vanishing after open (GPU reset): invalid + fault naming it. */
	assert_int_equal(fx_open(f, "pci", "0000:03:00.0", NULL), 0);
	char p[512];
	snprintf(p, sizeof(p), "%s/" HW3 "/power1_average", f->dir);
	assert_int_equal(unlink(p), 0);
	struct hal_sample s;
	assert_int_equal(f->dev.ops->sample(&f->dev, &s), 0);
	assert_false(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_int_equal(s.fault_count, 1);
	assert_non_null(strstr(s.fault, "power1_average"));
	fx_free(f);
}

/* Through the registry: hal_open keeps the per-device ops copy, so the
 * capabilities a device lacks read as absent. */
static void test_registry_open(void **state)
{
	(void)state;
	struct fx *f = fx_new("rk3588-npu");
	const char *keys[] = { "root", "devfreq" }, *vals[] = { f->dir, "fdab0000.npu" };
	struct hal_dev_cfg cfg = { .name = "npu0", .backend = "sysfs", .n_opts = 2, .keys = keys,
				   .values = vals, .clock = &f->clock };
	struct hal_dev dev;
	assert_int_equal(hal_open(&dev, &cfg, &f->diags), 0);
	assert_string_equal(dev.ops->name, "sysfs");
	assert_true(hal_can_set_clocks(&dev));
	assert_false(hal_can_set_power_limit(&dev));
	struct hal_sample s;
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_int_equal(s.clk_khz.v, 1000000);
	hal_close(&dev);
	assert_null(dev.ops);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_open),
		cmocka_unit_test(test_parse_dpm),
		cmocka_unit_test(test_parse_list),
		cmocka_unit_test(test_energy_delta),
		cmocka_unit_test(test_amdgpu_ambiguous_name),
		cmocka_unit_test(test_amdgpu_sample),
		cmocka_unit_test(test_amdgpu_inlet_label_option),
		cmocka_unit_test(test_amdgpu_limits),
		cmocka_unit_test(test_amdgpu_absurd_values),
		cmocka_unit_test(test_amdgpu_writes_and_restore),
		cmocka_unit_test(test_close_without_write_touches_nothing),
		cmocka_unit_test(test_cpufreq_read_only),
		cmocka_unit_test(test_devfreq),
		cmocka_unit_test(test_i915_energy),
		cmocka_unit_test(test_missing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	printf("SKIP: sysfs backend not compiled in (GOVD_WITH_SYSFS=OFF)\n");
	return 77;
}
#endif
