/* The one logging module: severities, printf checking, one sink.
 * Libraries (plant_models/, hal/) never log; they return errors and diagnostics.
 * Per-tick numbers go to the decision log, not here. */
#ifndef GOVD_COMMON_LOG_H
#define GOVD_COMMON_LOG_H
#include <stdio.h>

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_NOTICE, LOG_INFO, LOG_DEBUG };

int log_init(enum log_level max_level, FILE *sink);  /* sink NULL: stderr */
void log_fini(void);
void log_set_level(enum log_level max_level);
int log_level_parse(const char *name, enum log_level *out);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
