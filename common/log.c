#include "common/log.h"

#include <stdarg.h>
#include <string.h>

static const char *const level_names[] = { "error", "warning", "notice", "info", "debug" };
static enum log_level cur_level = LOG_NOTICE;
static FILE *cur_sink;

int log_init(enum log_level max_level, FILE *sink)
{
	cur_level = max_level;
	cur_sink = sink;
	return 0;
}

void log_fini(void)
{
	if (cur_sink)
		fflush(cur_sink);
	cur_sink = NULL;
}

void log_set_level(enum log_level max_level)
{
	cur_level = max_level;
}

int log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if (lvl > cur_level)
		return;
	FILE *out = cur_sink ? cur_sink : stderr;
	va_list ap;
	va_start(ap, fmt);
	fprintf(out, "govd: %s: ", level_names[lvl]);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	va_end(ap);
}
