/* Safe file access for everything the project reads or creates (docs/hardening.md).
 *
 * Reading: a path is opened without blocking (O_NONBLOCK, so a FIFO or a
 * device cannot hang the open), checked to be a regular file (a FIFO,
 * directory, socket or device such as /dev/zero is a clear error), and read
 * under a size bound and a line-length bound.
 *
 * Creating: files govd/govctl write are created with O_EXCL|O_NOFOLLOW (a
 * planted symlink or file is never followed), directories that hold them are
 * checked to be owned by the running user and not writable by group/others.
 *
 * Names that become path components are restricted; text that reaches a
 * terminal or a log is escaped. Libraries never print: every function fills
 * a struct fsafe_err the caller turns into a diag. */
#ifndef GOVD_COMMON_FSAFE_H
#define GOVD_COMMON_FSAFE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Defaults: policies, configs, scenarios, state files are KiB; traces and
 * decision logs MiB. */
#define FSAFE_MAX_BYTES (16u * 1024u * 1024u)
#define FSAFE_MAX_LINE (1u * 1024u * 1024u)

struct fsafe_err {
	int line;      /* 1-based line of a line-length error, else 0 */
	char msg[240]; /* why, without the path: "is a FIFO, not a regular file" */
};

/* Opens path read-only without blocking, checks it is a regular file of at
 * most max_bytes (0: no size check), then clears O_NONBLOCK. fd or -errno
 * (-EINVAL for a non-regular file, -EFBIG over the bound) with e->msg set. */
int fsafe_open_read(const char *path, size_t max_bytes, struct fsafe_err *e);
/* The same as a stdio stream ("r"); NULL with errno and e->msg set. */
FILE *fsafe_fopen_read(const char *path, size_t max_bytes, struct fsafe_err *e);
/* The whole file, NUL-terminated (caller frees *buf), at most max_bytes and
 * no line longer than max_line (0: unbounded). 0 or -errno with e set. */
int fsafe_read_all(const char *path, size_t max_bytes, size_t max_line, char **buf, size_t *len,
		   struct fsafe_err *e);

/* One line of f into *line (grown as needed, NUL-terminated, newline kept),
 * at most max_line bytes: its length, -1 at end of file, -E2BIG for a longer
 * line (the rest of it is not read). */
long fsafe_getline(FILE *f, char **line, size_t *cap, size_t max_line);

/* Creates path for writing with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode.
 * replace: an existing regular file or symlink is unlinked first, never
 * written through; a directory, device, FIFO or socket is refused. fd or
 * -errno with e set. */
int fsafe_create(const char *path, mode_t mode, bool replace, struct fsafe_err *e);
/* The same as a stdio stream ("w"). */
FILE *fsafe_fcreate(const char *path, mode_t mode, bool replace, struct fsafe_err *e);

/* A directory govd keeps its state, logs or socket in: created (mode, parents
 * 0755) when absent; then it must be a real directory (not a symlink), owned
 * by the effective user and not writable by group or others. 0 or -errno
 * (-EPERM for a bad owner or mode) with e set. */
int fsafe_private_dir(const char *dir, mode_t mode, struct fsafe_err *e);
/* The directory part of path checked with fsafe_private_dir. */
int fsafe_private_dir_of(const char *path, mode_t mode, struct fsafe_err *e);
/* An existing file whose content directs writes (a state file): a regular
 * file (lstat: not a symlink) owned by the effective user or root and not
 * writable by group or others, in a directory with the same rules. */
int fsafe_trusted_file(const char *path, struct fsafe_err *e);

/* A name that becomes one path component (device, scenario): 1..max_len
 * bytes of [A-Za-z0-9._-], not starting with '.' (no "..", no slash, no
 * hidden files). false with e->msg saying why. */
bool fsafe_name_ok(const char *name, size_t max_len, struct fsafe_err *e);

/* Copies in to out (len bytes, always NUL-terminated), control bytes and DEL
 * as \xHH, so text from a file cannot drive a terminal or forge a log line.
 * Returns out. */
char *fsafe_escape(char *out, size_t len, const char *in);

/* mkdir -p (mode 0777 before the umask); 0 or -errno. */
int fsafe_mkdirs(const char *path);

#endif
