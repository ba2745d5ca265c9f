/* Small sysfs helpers shared by the sysfs backend and its tests: read and
 * write one attribute, parse the list formats the kernel uses. Every reader
 * returns 0 or a negative errno; -EBADMSG when the text is not what the
 * attribute's documentation promises. */
#ifndef GOVD_HAL_SYSFS_IO_H
#define GOVD_HAL_SYSFS_IO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whole attribute without the trailing newline/whitespace. */
int sysfs_read_str(const char *path, char *buf, size_t len);
/* One decimal integer (sign allowed: a broken driver may print one). */
int sysfs_read_i64(const char *path, int64_t *out);
int sysfs_write_str(const char *path, const char *s);
int sysfs_write_i64(const char *path, int64_t v);
bool sysfs_exists(const char *path);
/* snprintf into out; -ENAMETOOLONG when it does not fit. */
int sysfs_path(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The last two components of a path, for short fault strings. */
const char *sysfs_short(const char *path);

/* devfreq available_frequencies / cpufreq scaling_available_frequencies:
 * space-separated unsigned integers. Returns how many were stored (sorted
 * ascending, at most max) or -EBADMSG. */
int sysfs_parse_u64_list(const char *text, uint64_t *v, size_t max);

/* amdgpu pp_dpm_sclk: lines "N: 500Mhz *" (the star marks the level in
 * use). Levels in file order; *cur is the starred index or -1. Returns the
 * number of levels or -EBADMSG. */
struct sysfs_dpm_level {
	unsigned index;
	uint32_t mhz;
};
int sysfs_parse_dpm(const char *text, struct sysfs_dpm_level *lv, size_t max, int *cur);

/* Delta of a wrapping energy counter (powercap energy_uj, which wraps at
 * max_energy_range_uj). range_uj 0: the counter must not go backwards.
 * A delta implying more than max_power_mw over dt_ms (uJ/ms = mW) is not
 * a plausible wrap or step: -ERANGE. dt_ms 0 skips the power check. */
int sysfs_energy_delta(uint64_t prev_uj, uint64_t now_uj, uint64_t range_uj, uint64_t dt_ms,
		       uint64_t max_power_mw, uint64_t *delta_uj);

#endif
