/* Diagnostics: errors and warnings about user input, each with its source
 * (file:line:col), the key path inside it and a message that says what is
 * allowed. Loaders collect all of them in one pass; callers print them. */
#ifndef GOVD_COMMON_DIAG_H
#define GOVD_COMMON_DIAG_H
#include <stddef.h>
#include <stdio.h>

enum diag_sev { DIAG_ERROR, DIAG_WARNING };

struct diag {
	enum diag_sev sev;
	char *file;    /* source path or name ("nvml", "http://..."), never NULL */
	int line, col; /* 1-based; 0 when unknown (then omitted when printed) */
	char *path;    /* key path such as "thermal.ceiling_c", or "" */
	char *code;    /* short stable identifier such as "unknown-key", or "" */
	char *msg;
};

struct diag_list {
	struct diag *v;
	size_t n, cap;
};

/* At most this many per list; the last says the rest were dropped. */
#define DIAG_MAX 1000

/* file, path and the message are stored with control bytes escaped
 * (fsafe_escape). */
void diag_add(struct diag_list *l, enum diag_sev sev, const char *file, int line, int col,
	      const char *path, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));
size_t diag_count(const struct diag_list *l, enum diag_sev sev);
/* "file:line:col: error: path: msg" one per line. */
void diag_print(const struct diag_list *l, FILE *out);
/* Formats one diagnostic into buf (same format as diag_print, no newline). */
int diag_format(const struct diag *d, char *buf, size_t len);
void diag_clear(struct diag_list *l);

#endif
