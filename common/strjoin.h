/* Joining names into one line ("a, b, c" for messages, "a|b" for reason
 * lists) in a caller's buffer. Truncation is visible: the text ends in "...". */
#ifndef GOVD_COMMON_STRJOIN_H
#define GOVD_COMMON_STRJOIN_H
#include <stdbool.h>
#include <stddef.h>

/* Appends s to the NUL-terminated text in buf (len bytes), preceded by sep
 * unless buf is empty. False when it did not fit: buf then ends in "..."
 * (if len > 4) and is full, so later calls add nothing. */
bool strjoin_add(char *buf, size_t len, const char *sep, const char *s);
/* names[] NULL-terminated, joined with sep into buf (emptied first). */
const char *strjoin(char *buf, size_t len, const char *const *names, const char *sep);

#endif
