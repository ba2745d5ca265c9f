#include "common/strjoin.h"

#include <stdio.h>
#include <string.h>

bool strjoin_add(char *buf, size_t len, const char *sep, const char *s)
{
	if (!len)
		return false;
	size_t off = strnlen(buf, len - 1);
	int n = snprintf(buf + off, len - off, "%s%s", off ? sep : "", s);
	if (n >= 0 && (size_t)n < len - off)
		return true;
	if (len > 4)
		memcpy(buf + len - 4, "...", 4);
	return false;
}

const char *strjoin(char *buf, size_t len, const char *const *names, const char *sep)
{
	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; names[i] && strjoin_add(buf, len, sep, names[i]); i++)
		;
	return buf;
}
