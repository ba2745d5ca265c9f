#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsafe.h"

static const char *const level_names[] = { "error", "warning", "notice", "info", "debug" };
/* Syslog priorities as libsystemd's <systemd/sd-daemon.h> spells them (SD_ERR
 * "<3>", SD_WARNING "<4>", SD_NOTICE "<5>", SD_INFO "<6>", SD_DEBUG "<7>"):
 * common/ does not link libsystemd, so the strings are written here. */
static const char *const journal_prio[] = { "<3>", "<4>", "<5>", "<6>", "<7>" };
static enum log_level cur_level = LOG_NOTICE;
static FILE *cur_sink;
static bool cur_journal;

/* systemd.exec(5): $JOURNAL_STREAM is "DEV:INO" (decimal) of the journal
 * stream; the sink goes to the journal only when its fd is that file, since
 * a child may have had its stderr redirected without the variable unset. */
static bool sink_is_journal(FILE *f)
{
	const char *env = getenv("JOURNAL_STREAM");
	if (!env || !*env)
		return false;
	char *end;
	errno = 0;
	uintmax_t dev = strtoumax(env, &end, 10);
	if (errno || end == env || *end != ':')
		return false;
	const char *ino_s = end + 1;
	uintmax_t ino = strtoumax(ino_s, &end, 10);
	if (errno || end == ino_s || *end != '\0')
		return false;
	int fd = fileno(f);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		return false;
	return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

int log_init(enum log_level max_level, FILE *sink)
{
	cur_level = max_level;
	cur_sink = sink;
	cur_journal = sink_is_journal(sink ? sink : stderr);
	return 0;
}

void log_fini(void)
{
	if (cur_sink)
		fflush(cur_sink);
	cur_sink = NULL;
	cur_journal = false;
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
	return -EINVAL;
}

bool log_to_journal(void)
{
	return cur_journal;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if (lvl > cur_level)
		return;
	FILE *out = cur_sink ? cur_sink : stderr;
	char raw[2048], msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Names and values from files and peers: one line, no terminal
	 * controls, whatever they hold. */
	fprintf(out, "%sgovd: %s: %s\n", cur_journal ? journal_prio[lvl] : "", level_names[lvl],
		fsafe_escape(msg, sizeof(msg), raw));
}
