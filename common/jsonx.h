/* jansson helpers shared by the decision log, the sim summary and govctl. */
#ifndef GOVD_GOVERNOR_JSONX_H
#define GOVD_GOVERNOR_JSONX_H
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/fsafe.h"

/* JSON has no NaN/inf: unknown values are null. */
static inline json_t *jsonx_real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* json_dump_file, but the file is created afresh (fsafe_fcreate: a planted
 * symlink or file at path is replaced, never written through). 0 or -1. */
static inline int jsonx_dump_file(const json_t *j, const char *path, size_t flags)
{
	struct fsafe_err e;
	FILE *f = fsafe_fcreate(path, 0644, true, &e);
	if (!f)
		return -1;
	int rc = json_dumpf(j, f, flags);
	if (fclose(f))
		rc = -1;
	return rc;
}

/* A number member, NaN when absent or not a number. */
static inline double jsonx_num(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* o.a.b as a number, NaN when absent. */
static inline double jsonx_num2(const json_t *o, const char *a, const char *b)
{
	return jsonx_num(json_object_get(o, a), b);
}

/* Copies src into out, cut (when it must be) at a character boundary: a
 * string cut inside a UTF-8 sequence is one jansson refuses (json_string
 * returns NULL), and the field would vanish from what is written next. */
static inline void jsonx_copy_utf8(char *out, size_t len, const char *src)
{
	size_t n = strlen(src);
	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, src, n);
	out[n] = '\0';
}

/* A string member into out ("" when absent), cut at a character boundary. */
static inline void jsonx_str(const json_t *o, const char *k, char *out, size_t len)
{
	json_t *v = json_object_get(o, k);
	jsonx_copy_utf8(out, len, json_is_string(v) ? json_string_value(v) : "");
}

/* Formats an error into err and returns rc (a negative errno). */
static inline __attribute__((format(printf, 4, 5))) int jsonx_fail(char *err, size_t len, int rc,
								   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

#endif
