/* jansson helpers shared by the decision log, the sim summary and govctl. */
#ifndef GOVD_GOVERNOR_JSONX_H
#define GOVD_GOVERNOR_JSONX_H
#include <jansson.h>
#include <math.h>
#include <stdio.h>

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

#endif
