/* sysfs attribute I/O and parsers; see sysfs_io.h. */
#if GOVD_WITH_SYSFS
#include "hal/sysfs_io.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int sysfs_read_str(const char *path, char *buf, size_t len)
{
	if (len == 0)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO in a (fixture) tree cannot hang the loop */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0 || (n += (size_t)r) == len - 1)
			break;
	}
	close(fd);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return 0;
}

int sysfs_read_i64(const char *path, int64_t *out)
{
	char buf[64];
	int rc = sysfs_read_str(path, buf, sizeof(buf));
	if (rc)
		return rc;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EBADMSG;
	*out = v;
	return 0;
}

int sysfs_write_str(const char *path, const char *s)
{
	/* No O_CREAT: a missing attribute is an error, never a new file. */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t w = write(fd, s + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		off += (size_t)w;
	}
	/* sysfs reports a rejected value at close for some drivers. */
	if (close(fd))
		return -errno;
	return 0;
}

int sysfs_write_i64(const char *path, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return sysfs_write_str(path, buf);
}

bool sysfs_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

int sysfs_path(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			out[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

const char *sysfs_short(const char *path)
{
	const char *last = strrchr(path, '/');
	if (!last)
		return path;
	for (const char *p = last - 1; p >= path; p--)
		if (*p == '/')
			return p + 1;
	return path;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int sysfs_parse_u64_list(const char *text, uint64_t *v, size_t max)
{
	size_t n = 0;
	const char *p = text;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (!isdigit((unsigned char)*p))
			return -EBADMSG;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(p, &end, 10);
		if (errno || (*end && !isspace((unsigned char)*end)))
			return -EBADMSG;
		if (n < max)
			v[n++] = x;
		p = end;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	return (int)n;
}

int sysfs_parse_dpm(const char *text, struct sysfs_dpm_level *lv, size_t max, int *cur)
{
	size_t n = 0;
	*cur = -1;
	const char *p = text;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		char line[128];
		if (ll >= sizeof(line))
			return -EBADMSG;
		memcpy(line, p, ll);
		line[ll] = '\0';
		p += ll + (eol ? 1 : 0);
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		char *end;
		errno = 0;
		unsigned long idx = strtoul(s, &end, 10);
		if (errno || end == s || *end != ':')
			return -EBADMSG;
		s = end + 1;
		unsigned long mhz = strtoul(s, &end, 10);
		if (end == s || strncasecmp(end, "mhz", 3) != 0)
			return -EBADMSG;
		bool star = strchr(end + 3, '*') != NULL;
		if (n < max) {
			lv[n].index = (unsigned)idx;
			lv[n].mhz = (uint32_t)mhz;
			if (star)
				*cur = (int)n;
			n++;
		}
	}
	return (int)n;
}

int sysfs_energy_delta(uint64_t prev_uj, uint64_t now_uj, uint64_t range_uj, uint64_t dt_ms,
		       uint64_t max_power_mw, uint64_t *delta_uj)
{
	uint64_t d;
	if (now_uj >= prev_uj) {
		d = now_uj - prev_uj;
	} else {
		if (range_uj == 0 || prev_uj > range_uj || now_uj > range_uj)
			return -ERANGE;
		d = range_uj - prev_uj + now_uj;
	}
	if (dt_ms > 0 && max_power_mw > 0 && d / dt_ms > max_power_mw)
		return -ERANGE;
	*delta_uj = d;
	return 0;
}
#endif
