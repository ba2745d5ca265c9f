/* Installed-data search path (common/datapath.h). */
#include "common/datapath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GOVD_DATADIR
#define GOVD_DATADIR "/usr/share/govd"
#endif

const char *govd_datadir(void)
{
	return GOVD_DATADIR;
}

/* Tries dir/rel (dir of dlen bytes); true when readable. */
static int try_dir(const char *dir, size_t dlen, const char *rel, char *out, size_t len)
{
	if (!dlen)
		return 0;
	int w = snprintf(out, len, "%.*s/%s", (int)dlen, dir, rel);
	if (w < 0 || (size_t)w >= len)
		return 0;
	return access(out, R_OK) == 0;
}

int govd_data_find(const char *rel, char *out, size_t len)
{
	if (len)
		out[0] = '\0';
	if (!rel || !rel[0] || rel[0] == '/')
		return -EINVAL;
	const char *env = getenv("GOVD_DATA_PATH");
	for (const char *p = env; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		if (try_dir(p, n, rel, out, len))
			return 0;
		p = colon ? colon + 1 : p + n;
	}
	if (try_dir(GOVD_DATADIR, strlen(GOVD_DATADIR), rel, out, len))
		return 0;
	return -ENOENT;
}

const char *govd_data_path_text(char *buf, size_t len)
{
	const char *env = getenv("GOVD_DATA_PATH");
	snprintf(buf, len, "%s%s%s", env && *env ? env : "", env && *env ? ":" : "", GOVD_DATADIR);
	return buf;
}
