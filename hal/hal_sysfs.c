/* The sysfs backend: hwmon (power, temperatures, energy; on amdgpu also the
 * power cap, performance level and clock table under the PCI device),
 * powercap/RAPL (host package and DRAM energy), devfreq (clock range) and
 * cpufreq (host clock, read-only). Every path is below the option `root` so
 * tests run on fixture trees. Options, units, layouts: docs/backends.md. */
#if GOVD_WITH_SYSFS
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal/hal_backends.h"
#include "hal/hal.h"
#include "hal/backend_opts.h"
#include "hal/sysfs_io.h"

#define SP 512 /* one sysfs path; deeper trees are an error, never truncated */
#define MAX_FREQS 64
#define MAX_DPM 16
#define MAX_ORIG 8

/* Energy counters: hwmon energy1_input, RAPL package, RAPL dram. */
enum { Z_HWMON, RAPL_PKG, RAPL_DRAM, Z_N };

struct rapl_zone {
	char energy[SP]; /* energy_uj, "" when off */
	uint64_t range_uj;
	uint64_t prev_uj, acc_uj, prev_t_ms;
	bool have_prev;
};

struct orig_entry {
	char path[SP];
	char value[64];
};

struct sysfs {
	struct hal_ops ops; /* per-device copy: missing capabilities NULL */
	const struct govd_clock *clock;
	char root[SP];
	/* hwmon */
	char hwmon[SP], devdir[SP], hwmon_id[32], hwmon_name[HAL_NAME_LEN];
	char power[SP];
	enum hal_rail power_rail;
	char temp[HAL_TEMP_N][SP];
	int32_t slowdown_mc, shutdown_mc;
	/* amdgpu, under the PCI device of the hwmon */
	char cap[SP];
	int64_t cap_min_uw, cap_max_uw, cap_default_uw;
	char perf_level[SP], sclk[SP], busy[SP], vbios[SP];
	struct sysfs_dpm_level dpm[MAX_DPM]; /* pp_dpm_sclk table, read at open */
	size_t n_dpm;
	/* powercap */
	struct rapl_zone rapl[Z_N];
	uint64_t rapl_max_power_mw;
	/* devfreq, cpufreq */
	char devfreq[SP], devfreq_name[HAL_NAME_LEN];
	uint64_t freqs_hz[MAX_FREQS];
	size_t n_freqs;
	char cpufreq[SP];
	/* settings found before the first write; restored by close() */
	bool orig_taken, wrote;
	struct orig_entry orig[MAX_ORIG];
	size_t n_orig;
	struct hal_faults flt;
	char err[SP + 128];
};

static struct sysfs *sysfs_of(struct hal_dev *dev)
{
	return dev->priv;
}

static uint64_t now_ms(const struct sysfs *s)
{
	return govd_clock_now_or_mono_ms(s->clock);
}

static void set_err(struct sysfs *s, int rc, const char *what, const char *path)
{
	snprintf(s->err, sizeof(s->err), "sysfs: %s %s: %s", what, path, strerror(-rc));
}

/* ---- options -------------------------------------------------------- */

static const char *const valid_keys[] = {
	"root", "hwmon_name", "pci", "power_rail", "temp_junction_label", "temp_memory_label",
	"temp_inlet_label", "rapl", "rapl_dram", "max_power_w", "devfreq", "cpufreq_policy", NULL,
};


/* ---- hwmon discovery ------------------------------------------------ */

/* The hwmon directory whose `name` and/or PCI `device` link match; never by
 * hwmonN index, which changes with probe order. */
static int find_hwmon(struct sysfs *s, const char *want_name, const char *want_pci,
		      const char *file, struct diag_list *diags)
{
	char cls[SP];
	if (sysfs_path(cls, sizeof(cls), "%s/sys/class/hwmon", s->root))
		return -ENAMETOOLONG;
	DIR *d = opendir(cls);
	if (!d) {
		int e = -errno;
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.hwmon_name", "sysfs-missing",
			 "cannot list %s: %s", cls, strerror(-e));
		return e;
	}
	char seen[256] = "", match_ids[128] = "";
	size_t n_match = 0, used = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "hwmon", 5) != 0)
			continue;
		char p[SP], name[64] = "", dev[SP] = "";
		if (sysfs_path(p, sizeof(p), "%s/%s/name", cls, de->d_name))
			continue;
		sysfs_read_str(p, name, sizeof(name));
		if (sysfs_path(p, sizeof(p), "%s/%s/device", cls, de->d_name) == 0) {
			char *rp = realpath(p, NULL);
			if (rp) {
				snprintf(dev, sizeof(dev), "%s", rp);
				free(rp);
			}
		}
		const char *dev_base = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
		if (used < sizeof(seen))
			used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s=%s",
						 used ? ", " : "", de->d_name, name[0] ? name : "?");
		if (want_name && strcmp(name, want_name) != 0)
			continue;
		if (want_pci && strcmp(dev_base, want_pci) != 0)
			continue;
		if (n_match++ == 0) {
			char *rp;
			if (sysfs_path(p, sizeof(p), "%s/%s", cls, de->d_name) || !(rp = realpath(p, NULL)))
				continue;
			snprintf(s->hwmon, sizeof(s->hwmon), "%s", rp);
			free(rp);
			snprintf(s->devdir, sizeof(s->devdir), "%s", dev);
			snprintf(s->hwmon_id, sizeof(s->hwmon_id), "%.31s", de->d_name);
			snprintf(s->hwmon_name, sizeof(s->hwmon_name), "%.*s", (int)sizeof(s->hwmon_name) - 1, name);
		}
		size_t l = strlen(match_ids);
		snprintf(match_ids + l, sizeof(match_ids) - l, "%s%.16s", l ? ", " : "", de->d_name);
	}
	closedir(d);
	const char *key = want_name ? "hwmon_name" : "pci";
	if (n_match == 0) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, key, "hwmon-not-found",
			 "no hwmon device with name '%s' and PCI address '%s' under %s (found: %s)",
			 want_name ? want_name : "*", want_pci ? want_pci : "*", cls,
			 seen[0] ? seen : "none");
		return -ENODEV;
	}
	if (n_match > 1) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, key, "hwmon-ambiguous",
			 "%zu hwmon devices match (%s); add option 'pci' to pick one", n_match,
			 match_ids);
		return -EINVAL;
	}
	return 0;
}

static int pick_temps(struct sysfs *s, struct bopts *o)
{
	const char *want[HAL_TEMP_N] = {
		[HAL_TEMP_JUNCTION] = bopts_str(o, "temp_junction_label", "junction"),
		[HAL_TEMP_MEMORY] = bopts_str(o, "temp_memory_label", "mem"),
		[HAL_TEMP_INLET] = bopts_str(o, "temp_inlet_label", NULL),
	};
	int idx[HAL_TEMP_N] = { 0, 0, 0 };
	bool any_label = false;
	DIR *d = opendir(s->hwmon);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned n;
		char tail[16];
		if (sscanf(de->d_name, "temp%u_%15s", &n, tail) != 2 || strcmp(tail, "label") != 0)
			continue;
		char p[SP], label[64];
		if (sysfs_path(p, sizeof(p), "%s/%s", s->hwmon, de->d_name) ||
		    sysfs_read_str(p, label, sizeof(label)))
			continue;
		any_label = true;
		for (int t = 0; t < HAL_TEMP_N; t++)
			if (want[t] && strcasecmp(label, want[t]) == 0)
				idx[t] = (int)n;
	}
	closedir(d);
	/* Single-sensor chips (thermal-zone hwmons, board meters) have no labels:
	 * their one temperature is the die. */
	if (!any_label) {
		char p[SP];
		if (sysfs_path(p, sizeof(p), "%s/temp1_input", s->hwmon) == 0 && sysfs_exists(p))
			idx[HAL_TEMP_JUNCTION] = 1;
	}
	for (int t = 0; t < HAL_TEMP_N; t++)
		if (idx[t] && sysfs_path(s->temp[t], SP, "%s/temp%d_input", s->hwmon, idx[t]))
			return -ENAMETOOLONG;
	if (idx[HAL_TEMP_JUNCTION]) {
		char p[SP];
		int64_t v;
		if (sysfs_path(p, sizeof(p), "%s/temp%d_crit", s->hwmon, idx[HAL_TEMP_JUNCTION]) == 0 &&
		    sysfs_read_i64(p, &v) == 0)
			s->slowdown_mc = (int32_t)v;
		if (sysfs_path(p, sizeof(p), "%s/temp%d_emergency", s->hwmon,
			       idx[HAL_TEMP_JUNCTION]) == 0 &&
		    sysfs_read_i64(p, &v) == 0)
			s->shutdown_mc = (int32_t)v;
	}
	return 0;
}

/* Optional attribute: path set when the file exists, "" otherwise. */
static void optional_file(char *out, const char *dir, const char *name)
{
	if (!dir[0] || sysfs_path(out, SP, "%s/%s", dir, name) || !sysfs_exists(out))
		out[0] = '\0';
}

static int read_dpm(struct sysfs *s, struct sysfs_dpm_level *lv, int *cur)
{
	char buf[1024];
	int rc = sysfs_read_str(s->sclk, buf, sizeof(buf));
	if (rc)
		return rc;
	return sysfs_parse_dpm(buf, lv, MAX_DPM, cur);
}

static int open_hwmon(struct sysfs *s, struct bopts *o, const char *file,
		      struct diag_list *diags)
{
	const char *want_name = bopts_str(o, "hwmon_name", NULL), *want_pci = bopts_str(o, "pci", NULL);
	int rc = find_hwmon(s, want_name, want_pci, file, diags);
	if (rc)
		return rc;
	optional_file(s->power, s->hwmon, "power1_average");
	if (!s->power[0])
		optional_file(s->power, s->hwmon, "power1_input");
	/* 64-bit hwmon counter: never wraps, backwards is a fault (range 0). */
	optional_file(s->rapl[Z_HWMON].energy, s->hwmon, "energy1_input");
	if (!s->power[0] && !s->rapl[Z_HWMON].energy[0])
		diag_add(diags, DIAG_WARNING, file, 0, 0, "options.hwmon_name", "no-power",
			 "%s has no power1_average, power1_input or energy1_input: power is not "
			 "offered",
			 s->hwmon);
	if ((rc = pick_temps(s, o)))
		return rc;
	if (!s->temp[HAL_TEMP_JUNCTION][0])
		diag_add(diags, DIAG_WARNING, file, 0, 0, "options.temp_junction_label", "no-temp",
			 "%s has no temperature labelled '%s'", s->hwmon,
			 bopts_str(o, "temp_junction_label", "junction"));
	optional_file(s->cap, s->hwmon, "power1_cap");
	if (s->cap[0]) {
		char p[SP];
		if (sysfs_path(p, sizeof(p), "%s/power1_cap_min", s->hwmon) ||
		    sysfs_read_i64(p, &s->cap_min_uw) ||
		    sysfs_path(p, sizeof(p), "%s/power1_cap_max", s->hwmon) ||
		    sysfs_read_i64(p, &s->cap_max_uw) || s->cap_min_uw < 0 ||
		    s->cap_max_uw < s->cap_min_uw) {
			diag_add(diags, DIAG_WARNING, file, 0, 0, "options.hwmon_name", "no-cap-range",
				 "%s has power1_cap but no valid power1_cap_min/max: the power "
				 "limit is read-only",
				 s->hwmon);
			s->cap_min_uw = s->cap_max_uw = 0;
		}
		if (sysfs_path(p, sizeof(p), "%s/power1_cap_default", s->hwmon) ||
		    sysfs_read_i64(p, &s->cap_default_uw))
			s->cap_default_uw = 0;
	}
	optional_file(s->perf_level, s->devdir, "power_dpm_force_performance_level");
	optional_file(s->sclk, s->devdir, "pp_dpm_sclk");
	if (s->sclk[0]) {
		int cur;
		rc = read_dpm(s, s->dpm, &cur);
		if (rc <= 0) {
			diag_add(diags, DIAG_ERROR, file, 0, 0, "options.pci", "bad-dpm-table",
				 "%s: expected lines like '0: 500Mhz *'", s->sclk);
			return rc ? rc : -EBADMSG;
		}
		s->n_dpm = (size_t)rc;
		rc = 0;
	}
	optional_file(s->busy, s->devdir, "gpu_busy_percent");
	optional_file(s->vbios, s->devdir, "vbios_version");
	return 0;
}

/* ---- powercap ------------------------------------------------------- */

static int open_zone(struct rapl_zone *z, const char *dir, const char *file, const char *key,
		     struct diag_list *diags)
{
	char p[SP];
	int64_t v;
	if (sysfs_path(z->energy, SP, "%s/energy_uj", dir) ||
	    sysfs_path(p, sizeof(p), "%s/max_energy_range_uj", dir))
		return -ENAMETOOLONG;
	int rc = sysfs_read_i64(z->energy, &v);
	if (rc) {
		/* energy_uj is root-only since Linux 5.10 (CVE-2020-8694). */
		diag_add(diags, DIAG_ERROR, file, 0, 0, key, "rapl-unreadable", "cannot read %s: %s%s",
			 z->energy, strerror(-rc),
			 rc == -EACCES ? " (root-only since Linux 5.10; run govd as root)" : "");
		z->energy[0] = '\0';
		return rc;
	}
	if (sysfs_read_i64(p, &v) == 0 && v > 0)
		z->range_uj = (uint64_t)v;
	else
		diag_add(diags, DIAG_WARNING, file, 0, 0, key, "rapl-no-range",
			 "%s missing: a counter going backwards is a fault, never a wrap", p);
	return 0;
}

static int open_rapl(struct sysfs *s, struct bopts *o, const char *file,
		     struct diag_list *diags)
{
	const char *mode = bopts_str(o, "rapl", "auto");
	if (strcmp(mode, "off") == 0)
		return 0;
	bool automatic = strcmp(mode, "auto") == 0;
	const char *zone = automatic ? "intel-rapl:0" : mode;
	char dir[SP];
	if (sysfs_path(dir, sizeof(dir), "%s/sys/class/powercap/%s", s->root, zone))
		return -ENAMETOOLONG;
	if (!sysfs_exists(dir)) {
		if (automatic)
			return 0;
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.rapl", "rapl-missing",
			 "no powercap zone %s (valid: auto, off, or a zone name such as intel-rapl:0)",
			 dir);
		return -ENODEV;
	}
	int rc = open_zone(&s->rapl[RAPL_PKG], dir, file, "rapl", diags);
	if (rc)
		return rc;
	if (strcmp(bopts_str(o, "rapl_dram", "auto"), "off") == 0)
		return 0;
	/* The dram subzone is intel-rapl:N:M with name "dram" (powercap.rst). */
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	size_t zl = strlen(zone);
	while ((de = readdir(d))) {
		char p[SP], name[32];
		if (strncmp(de->d_name, zone, zl) != 0 || de->d_name[zl] != ':')
			continue;
		if (sysfs_path(p, sizeof(p), "%s/%s/name", dir, de->d_name) ||
		    sysfs_read_str(p, name, sizeof(name)) || strcmp(name, "dram") != 0)
			continue;
		if (sysfs_path(p, sizeof(p), "%s/%s", dir, de->d_name) == 0)
			rc = open_zone(&s->rapl[RAPL_DRAM], p, file, "rapl_dram", diags);
		break;
	}
	closedir(d);
	return rc;
}

/* ---- devfreq, cpufreq ----------------------------------------------- */

static int open_devfreq(struct sysfs *s, const char *name, const char *file, struct diag_list *diags)
{
	char p[SP], buf[1024];
	if (sysfs_path(s->devfreq, SP, "%s/sys/class/devfreq/%s", s->root, name) ||
	    sysfs_path(p, sizeof(p), "%s/available_frequencies", s->devfreq))
		return -ENAMETOOLONG;
	snprintf(s->devfreq_name, sizeof(s->devfreq_name), "%s", name);
	int rc = sysfs_read_str(p, buf, sizeof(buf));
	if (rc) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.devfreq", "devfreq-missing", "cannot read %s: %s",
			 p, strerror(-rc));
		return rc;
	}
	rc = sysfs_parse_u64_list(buf, s->freqs_hz, MAX_FREQS);
	if (rc <= 0) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.devfreq", "devfreq-bad-table",
			 "%s: expected space-separated frequencies in Hz, got '%s'", p, buf);
		return -EBADMSG;
	}
	s->n_freqs = (size_t)rc;
	return 0;
}

static int open_cpufreq(struct sysfs *s, const char *policy, const char *file,
			struct diag_list *diags)
{
	char p[SP];
	if (sysfs_path(s->cpufreq, SP, "%s/sys/devices/system/cpu/cpufreq/policy%s", s->root, policy) ||
	    sysfs_path(p, sizeof(p), "%s/scaling_cur_freq", s->cpufreq))
		return -ENAMETOOLONG;
	if (!sysfs_exists(p)) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.cpufreq_policy", "cpufreq-missing",
			 "%s does not exist", p);
		s->cpufreq[0] = '\0';
		return -ENODEV;
	}
	return 0;
}

/* ---- writes and restore --------------------------------------------- */

static void remember(struct sysfs *s, const char *path, const char *value)
{
	if (s->n_orig >= MAX_ORIG)
		return;
	struct orig_entry *e = &s->orig[s->n_orig++];
	snprintf(e->path, sizeof(e->path), "%s", path);
	snprintf(e->value, sizeof(e->value), "%s", value);
}

static void remember_file(struct sysfs *s, const char *path)
{
	char v[64];
	if (path[0] && sysfs_read_str(path, v, sizeof(v)) == 0)
		remember(s, path, v);
}

static bool devfreq_userspace(const struct sysfs *s, char *set_freq)
{
	char p[SP], gov[32];
	return sysfs_path(p, sizeof(p), "%s/governor", s->devfreq) == 0 &&
	       sysfs_read_str(p, gov, sizeof(gov)) == 0 && strcmp(gov, "userspace") == 0 &&
	       sysfs_path(set_freq, SP, "%s/userspace/set_freq", s->devfreq) == 0;
}

/* The restore list, in the order that never asks for min > max. */
static void take_original(struct sysfs *s)
{
	if (s->orig_taken)
		return;
	s->orig_taken = true;
	if (s->cap[0] && s->cap_max_uw > 0)
		remember_file(s, s->cap);
	if (s->perf_level[0] && s->sclk[0])
		remember_file(s, s->perf_level);
	if (s->devfreq[0]) {
		char p[SP], lo[32];
		snprintf(lo, sizeof(lo), "%" PRIu64, s->freqs_hz[0]);
		if (sysfs_path(p, sizeof(p), "%s/min_freq", s->devfreq) == 0)
			remember(s, p, lo);
		if (sysfs_path(p, sizeof(p), "%s/max_freq", s->devfreq) == 0)
			remember_file(s, p);
		if (sysfs_path(p, sizeof(p), "%s/min_freq", s->devfreq) == 0)
			remember_file(s, p);
		if (devfreq_userspace(s, p))
			remember_file(s, p);
	}
}

static void restore(struct sysfs *s)
{
	for (size_t i = 0; i < s->n_orig; i++) {
		int rc = sysfs_write_str(s->orig[i].path, s->orig[i].value);
		if (rc)
			set_err(s, rc, "restore", s->orig[i].path);
	}
}

static int devfreq_write_range(struct sysfs *s, uint64_t lo_hz, uint64_t hi_hz)
{
	char pmin[SP], pmax[SP], set_freq[SP];
	int64_t cur_max = 0;
	int rc;
	if ((rc = sysfs_path(pmin, sizeof(pmin), "%s/min_freq", s->devfreq)) ||
	    (rc = sysfs_path(pmax, sizeof(pmax), "%s/max_freq", s->devfreq)))
		return rc;
	if ((rc = sysfs_read_i64(pmax, &cur_max))) {
		set_err(s, rc, "read", pmax);
		return rc;
	}
	/* Older kernels reject min > max: raise max first when min goes above it. */
	const char *first = pmin, *second = pmax;
	uint64_t v1 = lo_hz, v2 = hi_hz;
	if (cur_max >= 0 && lo_hz > (uint64_t)cur_max) {
		first = pmax, second = pmin;
		v1 = hi_hz, v2 = lo_hz;
	}
	if ((rc = sysfs_write_i64(first, (int64_t)v1))) {
		set_err(s, rc, "write", first);
		return rc;
	}
	if ((rc = sysfs_write_i64(second, (int64_t)v2))) {
		set_err(s, rc, "write", second);
		return rc;
	}
	if (devfreq_userspace(s, set_freq) && (rc = sysfs_write_i64(set_freq, (int64_t)hi_hz))) {
		set_err(s, rc, "write", set_freq);
		return rc;
	}
	return 0;
}

static int sysfs_set_clock_range(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz)
{
	struct sysfs *s = sysfs_of(dev);
	s->err[0] = '\0';
	if (min_khz > max_khz) {
		snprintf(s->err, sizeof(s->err), "sysfs: clock range min %u kHz above max %u kHz",
			 min_khz, max_khz);
		return -EINVAL;
	}
	if (s->devfreq[0]) {
		/* Snap inward to the table: min up, max down. */
		uint64_t lo = 0, hi = 0;
		bool have_lo = false, have_hi = false;
		for (size_t i = 0; i < s->n_freqs; i++) {
			uint64_t f = s->freqs_hz[i];
			if (!have_lo && f >= (uint64_t)min_khz * 1000u)
				lo = f, have_lo = true;
			if (f <= (uint64_t)max_khz * 1000u)
				hi = f, have_hi = true;
		}
		if (!have_lo || !have_hi || lo > hi) {
			snprintf(s->err, sizeof(s->err),
				 "sysfs: no frequency of %s in [%u, %u] kHz", s->devfreq_name,
				 min_khz, max_khz);
			return -EINVAL;
		}
		take_original(s);
		s->wrote = true;
		return devfreq_write_range(s, lo, hi);
	}
	/* amdgpu: manual level, then the mask of allowed DPM levels. */
	const struct sysfs_dpm_level *lv = s->dpm;
	int n = (int)s->n_dpm;
	char mask[96] = "";
	size_t used = 0;
	for (int i = 0; i < n; i++)
		if ((uint64_t)lv[i].mhz * 1000u >= min_khz && (uint64_t)lv[i].mhz * 1000u <= max_khz)
			used += (size_t)snprintf(mask + used, sizeof(mask) - used, "%s%u",
						 used ? " " : "", lv[i].index);
	if (!used) {
		snprintf(s->err, sizeof(s->err), "sysfs: no pp_dpm_sclk level in [%u, %u] kHz",
			 min_khz, max_khz);
		return -EINVAL;
	}
	take_original(s);
	s->wrote = true;
	int rc = sysfs_write_str(s->perf_level, "manual");
	if (rc) {
		set_err(s, rc, "write", s->perf_level);
		return rc;
	}
	if ((rc = sysfs_write_str(s->sclk, mask)))
		set_err(s, rc, "write", s->sclk);
	return rc;
}

static int sysfs_reset_clocks(struct hal_dev *dev)
{
	struct sysfs *s = sysfs_of(dev);
	s->err[0] = '\0';
	take_original(s);
	s->wrote = true;
	if (s->devfreq[0])
		return devfreq_write_range(s, s->freqs_hz[0], s->freqs_hz[s->n_freqs - 1]);
	int rc = sysfs_write_str(s->perf_level, "auto");
	if (rc)
		set_err(s, rc, "write", s->perf_level);
	return rc;
}

static int sysfs_set_power_limit(struct hal_dev *dev, uint32_t limit_mw)
{
	struct sysfs *s = sysfs_of(dev);
	s->err[0] = '\0';
	int64_t uw = (int64_t)limit_mw * 1000;
	if (uw < s->cap_min_uw || uw > s->cap_max_uw) {
		snprintf(s->err, sizeof(s->err),
			 "sysfs: power limit %u mW outside [%lld, %lld] mW (power1_cap_min/max)",
			 limit_mw, (long long)(s->cap_min_uw / 1000), (long long)(s->cap_max_uw / 1000));
		return -EINVAL;
	}
	take_original(s);
	s->wrote = true;
	int rc = sysfs_write_i64(s->cap, uw);
	if (rc)
		set_err(s, rc, "write", s->cap);
	return rc;
}

static int sysfs_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct sysfs *s = sysfs_of(dev);
	take_original(s);
	json_t *restore = json_array();
	for (size_t i = 0; restore && i < s->n_orig; i++)
		if (json_array_append_new(restore, json_pack("{s:s, s:s}", "path", s->orig[i].path,
							     "value", s->orig[i].value))) {
			json_decref(restore);
			restore = NULL;
		}
	if (!restore)
		return hal_json_out(NULL, json, len);
	return hal_json_out(json_pack("{s:s, s:s, s:o}", "backend", "sysfs", "device", dev->name,
				      "restore", restore),
			    json, len);
}

static const char *sysfs_last_error(struct hal_dev *dev)
{
	return sysfs_of(dev)->err;
}

/* ---- sampling ------------------------------------------------------- */

/* One non-negative reading; a read error or a negative value is a fault. */
static bool read_nonneg(struct sysfs *s, const char *path, int64_t *v)
{
	int rc = sysfs_read_i64(path, v);
	if (rc) {
		hal_fault(&s->flt, "%.40s: %s", sysfs_short(path), strerror(-rc));
		return false;
	}
	if (*v < 0) {
		hal_fault(&s->flt, "%.40s: negative %lld", sysfs_short(path), (long long)*v);
		return false;
	}
	return true;
}

static void put(struct hal_value *hv, int64_t v, uint64_t t)
{
	hv->v = v;
	hv->t_ms = t;
	hv->valid = true;
}

/* Energy counter z on rail; power from the delta to the previous sample
 * unless the rail already has a power reading. */
static void sample_zone(struct sysfs *s, int z, enum hal_rail rail, uint64_t t,
			struct hal_sample *out)
{
	struct rapl_zone *zn = &s->rapl[z];
	int64_t raw;
	if (!zn->energy[0] || !read_nonneg(s, zn->energy, &raw))
		return;
	uint64_t now = (uint64_t)raw, d;
	if (!zn->have_prev) {
		zn->have_prev = true;
		zn->prev_uj = zn->acc_uj = now;
		zn->prev_t_ms = t;
		put(&out->energy_mj[rail], (int64_t)(zn->acc_uj / 1000u), t);
		return;
	}
	uint64_t dt = t - zn->prev_t_ms;
	if (sysfs_energy_delta(zn->prev_uj, now, zn->range_uj, dt, s->rapl_max_power_mw, &d)) {
		hal_fault(&s->flt, "%.32s: counter backwards or jumped to %lld", sysfs_short(zn->energy),
			  (long long)now);
		/* Re-baseline: a reset counter must not be rejected forever. */
		zn->prev_uj = now;
		zn->prev_t_ms = t;
		return;
	}
	zn->acc_uj += d;
	zn->prev_uj = now;
	zn->prev_t_ms = t;
	put(&out->energy_mj[rail], (int64_t)(zn->acc_uj / 1000u), t);
	if (dt > 0 && !out->power_mw[rail].valid)
		put(&out->power_mw[rail], (int64_t)(d / dt), t); /* uJ/ms = mW */
}

static int sysfs_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct sysfs *s = sysfs_of(dev);
	memset(out, 0, sizeof(*out));
	uint64_t t = now_ms(s);
	out->t_ms = t;
	int64_t v;
	if (s->power[0] && read_nonneg(s, s->power, &v))
		put(&out->power_mw[s->power_rail], v / 1000, t);
	sample_zone(s, Z_HWMON, s->power_rail, t, out);
	for (int i = 0; i < HAL_TEMP_N; i++) {
		if (!s->temp[i][0])
			continue;
		int rc = sysfs_read_i64(s->temp[i], &v);
		if (rc) {
			hal_fault(&s->flt, "%.40s: %s", sysfs_short(s->temp[i]), strerror(-rc));
		} else if (v < HAL_TEMP_MIN_MC || v > hal_temp_max_mc(i)) {
			hal_fault(&s->flt, "%.32s: %lld mC out of [%g, %g] C", sysfs_short(s->temp[i]),
				  (long long)v, HAL_TEMP_MIN_MC / 1e3, hal_temp_max_mc(i) / 1e3);
		} else {
			put(&out->temp_mc[i], v, t);
		}
	}
	sample_zone(s, RAPL_PKG, HAL_RAIL_HOST, t, out);
	sample_zone(s, RAPL_DRAM, HAL_RAIL_MEMORY, t, out);
	char p[SP];
	if (s->devfreq[0]) {
		if (sysfs_path(p, sizeof(p), "%s/cur_freq", s->devfreq) == 0 && read_nonneg(s, p, &v))
			put(&out->clk_khz, v / 1000, t);
	} else if (s->sclk[0]) {
		struct sysfs_dpm_level lv[MAX_DPM];
		int cur, n = read_dpm(s, lv, &cur);
		if (n > 0 && cur >= 0) {
			put(&out->clk_khz, (int64_t)lv[cur].mhz * 1000, t);
		} else {
			hal_fault(&s->flt, "%.40s: no current level", sysfs_short(s->sclk));
		}
	} else if (s->cpufreq[0]) {
		if (sysfs_path(p, sizeof(p), "%s/scaling_cur_freq", s->cpufreq) == 0 &&
		    read_nonneg(s, p, &v))
			put(&out->clk_khz, v, t);
	}
	if (s->cap[0] && read_nonneg(s, s->cap, &v))
		put(&out->power_limit_mw, v / 1000, t);
	if (s->busy[0] && read_nonneg(s, s->busy, &v)) {
		if (v > HAL_UTIL_MAX_PCT)
			hal_fault(&s->flt, "%.40s: %lld%% above 100", sysfs_short(s->busy), (long long)v);
		else
			put(&out->util_pct, v, t);
	}
	hal_faults_put(&s->flt, out);
	return 0;
}

static int sysfs_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	struct sysfs *s = sysfs_of(dev);
	memset(out, 0, sizeof(*out));
	char p[SP];
	if (s->n_freqs) {
		out->clk_min_khz = (uint32_t)(s->freqs_hz[0] / 1000u);
		out->clk_max_khz = (uint32_t)(s->freqs_hz[s->n_freqs - 1] / 1000u);
		for (size_t i = 1; i < s->n_freqs; i++) {
			uint32_t d = (uint32_t)((s->freqs_hz[i] - s->freqs_hz[i - 1]) / 1000u);
			if (d && (!out->clk_step_khz || d < out->clk_step_khz))
				out->clk_step_khz = d;
		}
	} else if (s->n_dpm) {
		const struct sysfs_dpm_level *lv = s->dpm;
		int n = (int)s->n_dpm;
		out->clk_min_khz = UINT32_MAX;
		for (int i = 0; i < n; i++) {
			uint32_t k = lv[i].mhz * 1000u;
			out->clk_min_khz = k < out->clk_min_khz ? k : out->clk_min_khz;
			out->clk_max_khz = k > out->clk_max_khz ? k : out->clk_max_khz;
			for (int j = 0; j < i; j++) {
				uint32_t o = lv[j].mhz * 1000u, d = k > o ? k - o : o - k;
				if (d && (!out->clk_step_khz || d < out->clk_step_khz))
					out->clk_step_khz = d;
			}
		}
	} else if (s->cpufreq[0]) {
		int64_t lo, hi;
		if (sysfs_path(p, sizeof(p), "%s/cpuinfo_min_freq", s->cpufreq) == 0 &&
		    sysfs_read_i64(p, &lo) == 0 &&
		    sysfs_path(p, sizeof(p), "%s/cpuinfo_max_freq", s->cpufreq) == 0 &&
		    sysfs_read_i64(p, &hi) == 0 && lo >= 0 && hi >= lo) {
			out->clk_min_khz = (uint32_t)lo;
			out->clk_max_khz = (uint32_t)hi;
		}
	}
	out->clk_default_max_khz = out->clk_max_khz;
	out->power_limit_min_mw = (uint32_t)(s->cap_min_uw / 1000);
	out->power_limit_max_mw = (uint32_t)(s->cap_max_uw / 1000);
	out->power_limit_default_mw = (uint32_t)(s->cap_default_uw / 1000);
	out->slowdown_mc = s->slowdown_mc;
	out->shutdown_mc = s->shutdown_mc;
	if (s->hwmon[0]) {
		const char *pci = strrchr(s->devdir, '/');
		snprintf(out->model, sizeof(out->model), "%.20s%s%.24s", s->hwmon_name,
			 pci ? " " : "", pci ? pci + 1 : "");
	} else if (s->devfreq[0]) {
		snprintf(out->model, sizeof(out->model), "devfreq %.38s", s->devfreq_name);
	} else {
		snprintf(out->model, sizeof(out->model), "sysfs");
	}
	char drv[SP] = "", rel[64] = "";
	if (s->devdir[0] && sysfs_path(p, sizeof(p), "%s/driver", s->devdir) == 0) {
		char *rp = realpath(p, NULL);
		if (rp) {
			snprintf(drv, sizeof(drv), "%s", strrchr(rp, '/') ? strrchr(rp, '/') + 1 : rp);
			free(rp);
		}
	}
	if (sysfs_path(p, sizeof(p), "%s/proc/sys/kernel/osrelease", s->root) == 0)
		sysfs_read_str(p, rel, sizeof(rel));
	/* Truncation is fine: the field is a label for logs and the decision log. */
	snprintf(out->driver_version, sizeof(out->driver_version), "%.24s%s%.22s", drv,
		 drv[0] && rel[0] ? " " : "", rel);
	if (s->vbios[0])
		sysfs_read_str(s->vbios, out->firmware_version, sizeof(out->firmware_version));
	return 0;
}

/* ---- open / close --------------------------------------------------- */

/* Replays the files' original values (remembered before their first
 * write, or adopted); a failed write keeps the device "changed". */
static int sysfs_restore(struct hal_dev *dev)
{
	struct sysfs *s = sysfs_of(dev);
	if (!s->wrote)
		return 0;
	s->err[0] = '\0';
	restore(s);
	if (s->err[0])
		return -EIO;
	s->wrote = false;
	return 0;
}

static void sysfs_close(struct hal_dev *dev)
{
	struct sysfs *s = sysfs_of(dev);
	if (!s)
		return;
	sysfs_restore(dev);
	free(s);
	dev->priv = NULL;
}

static int sysfs_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	const char *file = cfg->name ? cfg->name : "sysfs";
	static const char *const rails[] = { "accel", "memory", "host", NULL };
	struct bopts ob, *o = &ob;
	bopts_init(o, cfg, diags, "sysfs");
	bopts_check_keys(o, valid_keys);
	int rail = HAL_RAIL_ACCEL;
	uint64_t max_power_w = 2000;
	bopts_enum(o, "power_rail", rails, HAL_RAIL_ACCEL, &rail);
	bopts_u64(o, "max_power_w", 1, 1000000, 2000, &max_power_w);
	if (o->errors)
		return -EINVAL;
	int rc;
	struct sysfs *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->clock = cfg->clock;
	const char *root = bopts_str(o, "root", "/");
	/* "/" + "/sys/..." would work, but "" + "/sys" reads better in messages. */
	if (sysfs_path(s->root, sizeof(s->root), "%s", strcmp(root, "/") == 0 ? "" : root)) {
		rc = -ENAMETOOLONG;
		goto err_free;
	}
	size_t rl = strlen(s->root);
	while (rl > 0 && s->root[rl - 1] == '/')
		s->root[--rl] = '\0';
	s->power_rail = (enum hal_rail)rail;
	s->rapl_max_power_mw = max_power_w * 1000u;
	if (bopts_str(o, "hwmon_name", NULL) || bopts_str(o, "pci", NULL))
		if ((rc = open_hwmon(s, o, file, diags)))
			goto err_free;
	if ((rc = open_rapl(s, o, file, diags)))
		goto err_free;
	if (s->rapl[RAPL_PKG].energy[0] && s->power[0] && s->power_rail == HAL_RAIL_HOST) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "options.power_rail", "rail-conflict",
			 "power_rail host and the RAPL package both feed the host rail; set rapl: off");
		rc = -EINVAL;
		goto err_free;
	}
	const char *df = bopts_str(o, "devfreq", NULL), *cf = bopts_str(o, "cpufreq_policy", NULL);
	if (df && (rc = open_devfreq(s, df, file, diags)))
		goto err_free;
	if (cf && (rc = open_cpufreq(s, cf, file, diags)))
		goto err_free;
	if (!s->hwmon[0] && !s->rapl[RAPL_PKG].energy[0] && !s->devfreq[0] && !s->cpufreq[0]) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "", "nothing-to-read",
			 "sysfs device has nothing to read under '%s': set hwmon_name or pci, "
			 "devfreq, cpufreq_policy, or rapl",
			 root);
		rc = -ENODEV;
		goto err_free;
	}
	s->ops = hal_sysfs_ops;
	if (!s->devfreq[0] && !(s->sclk[0] && s->perf_level[0])) {
		s->ops.set_clock_range = NULL;
		s->ops.reset_clocks = NULL;
	}
	if (!s->cap[0] || s->cap_max_uw <= 0)
		s->ops.set_power_limit = NULL;
	dev->priv = s;
	dev->ops = &s->ops;
	return 0;

err_free:
	free(s);
	return rc;
}

/* The device folders it writes under, resolved (a fixture's copy, or
 * /sys/devices/...): the one writer lock for each. */
static size_t sysfs_writer_ids(struct hal_dev *dev, char (*ids)[HAL_ID_LEN], size_t max)
{
	struct sysfs *s = dev->priv;
	const char *dirs[2] = { s->devdir, s->devfreq };
	size_t n = 0;
	for (size_t i = 0; i < 2 && n < max; i++) {
		char real[PATH_MAX];
		if (!dirs[i][0])
			continue;
		snprintf(ids[n++], HAL_ID_LEN, "sysfs:%.240s", realpath(dirs[i], real) ? real : dirs[i]);
	}
	return n;
}

const struct hal_ops hal_sysfs_ops = {
	.name = "sysfs",
	.open = sysfs_open,
	.close = sysfs_close,
	.get_limits = sysfs_get_limits,
	.sample = sysfs_sample,
	.set_clock_range = sysfs_set_clock_range,
	.reset_clocks = sysfs_reset_clocks,
	.set_power_limit = sysfs_set_power_limit,
	.get_original = sysfs_get_original,
	.last_error = sysfs_last_error,
	.restore = sysfs_restore,
	.writer_ids = sysfs_writer_ids,
};
#endif
