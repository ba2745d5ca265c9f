/* The one logging module: severities, printf checking, one sink.
 * Libraries (plant_models/, hal/) never log; they return errors and diagnostics.
 * Per-tick numbers go to the decision log, not here.
 *
 * Under systemd (the sink is the stream named by $JOURNAL_STREAM, systemd.exec(5))
 * each line starts with its syslog priority "<N>" so the journal records the
 * severity (sd-daemon(3)).
 *
 * The LOG_* names would clash with <syslog.h>'s macros (LOG_ERR, LOG_NOTICE,
 * LOG_INFO, LOG_DEBUG): no file includes both today, and the guard below makes
 * the first ordering a compile error. Rename (GLOG_*) before anyone needs
 * syslog.h alongside this header. */
#ifndef GOVD_COMMON_LOG_H
#define GOVD_COMMON_LOG_H
#include <stdbool.h>
#include <stdio.h>

#if defined(LOG_ERR) || defined(LOG_NOTICE) || defined(LOG_INFO) || defined(LOG_DEBUG)
#error "common/log.h clashes with <syslog.h>: do not include both in one file"
#endif

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_NOTICE, LOG_INFO, LOG_DEBUG };

/* sink NULL: stderr. Reads $JOURNAL_STREAM once, here. Always 0. */
int log_init(enum log_level max_level, FILE *sink);
void log_fini(void);
void log_set_level(enum log_level max_level);
/* "error", "warning", "notice", "info", "debug": 0, or -EINVAL (out untouched). */
int log_level_parse(const char *name, enum log_level *out);
/* Whether lines carry the journal's "<N>" priority prefix (log_init decided). */
bool log_to_journal(void);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
