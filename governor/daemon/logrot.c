#define _GNU_SOURCE /* fopencookie */
#include "governor/daemon/logrot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"

struct logrot {
	char *path;
	uint64_t max_bytes;
	unsigned keep;
	char *header_prefix;
	size_t prefix_len;
	int fd;
	uint64_t size;
	bool at_line_start, collecting;
	char *header;     /* last header line seen, with its newline */
	size_t header_len;
	char *line_start; /* bytes of the current line so far, for header detection */
	size_t ls_len;
	uint64_t rotations, errors;
	int first_err, last_err;
	/* Write-failure handling (a full disk): line_end is the offset just
	 * after the last complete line on disk; a failed write is cut back to
	 * it, the rest of that record is dropped (dropping), and the next one
	 * starts on a clean line. need_nl: the cut failed, so a newline goes
	 * first. failing: the latest write failed (cleared by a good one). */
	uint64_t line_end;
	bool dropping, need_nl, failing;
	uint64_t dropped;
	/* A rotation that failed is retried only after this size (backoff
	 * doubling), so a stuck one does not run, or write a header, every
	 * period. */
	uint64_t rotate_at, rotate_backoff;
	FILE *f;
	char *buf;
	bool compress;
	pid_t gz_pid; /* the gzip child of the last rotation; 0: none */
};

extern char **environ;


static int open_fd(struct logrot *l)
{
	/* O_NOFOLLOW: a planted symlink in place of the log is refused, not
	 * written through (the directory itself is checked by the daemon). */
	int fd = open(l->path,
		      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
		      0640);
	if (fd < 0)
		return -errno;
	struct stat st;
	int fl, rc = 0;
	if (fstat(fd, &st))
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL; /* a FIFO or device in its place: never block on it */
	else if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	l->fd = fd;
	l->size = (uint64_t)st.st_size;
	l->line_end = l->size;
	return 0;
}

int logrot_shift(const char *path, unsigned keep)
{
	size_t n = strlen(path) + 16;
	char *from = malloc(n), *to = malloc(n);
	int rc = 0;

	if (!from || !to) {
		rc = -ENOMEM;
		goto out;
	}
	if (keep == 0) {
		if (unlink(path) && errno != ENOENT)
			rc = -errno;
		goto out;
	}
	/* The oldest goes first in both forms, so a log whose compression was
	 * turned on or off still keeps at most keep rotated files. */
	for (int gz = 0; gz < 2; gz++) {
		snprintf(to, n, gz ? "%s.%u.gz" : "%s.%u", path, keep);
		if (unlink(to) && errno != ENOENT && !rc)
			rc = -errno;
	}
	for (unsigned i = keep; i >= 1; i--) {
		if (i == 1)
			snprintf(from, n, "%s", path);
		else
			snprintf(from, n, "%s.%u", path, i - 1);
		snprintf(to, n, "%s.%u", path, i);
		if (rename(from, to) && errno != ENOENT && !rc)
			rc = -errno;
		if (i == 1)
			continue;
		snprintf(from, n, "%s.%u.gz", path, i - 1);
		snprintf(to, n, "%s.%u.gz", path, i);
		if (rename(from, to) && errno != ENOENT && !rc)
			rc = -errno;
	}
out:
	free(from);
	free(to);
	return rc;
}

static void note_err(struct logrot *l, int rc)
{
	l->errors++;
	l->last_err = rc;
	if (!l->first_err)
		l->first_err = rc;
}

/* ---- compression of rotated files ---- */

/* Reaps the gzip child; block: wait for it (it compresses path.1, which the
 * next shift renames). A failed gzip leaves path.1 as it was. */
static void gz_reap(struct logrot *l, bool block)
{
	if (l->gz_pid <= 0)
		return;
	pid_t r;
	do
		r = waitpid(l->gz_pid, NULL, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r != 0)
		l->gz_pid = 0; /* reaped, or not ours to wait for (ECHILD) */
}

/* `gzip -n -f -q -- path.1` in the background, with default signals (the
 * daemon blocks its own for signalfd). Spawn failure: path.1 stays plain. */
static void gz_spawn(struct logrot *l)
{
	size_t n = strlen(l->path) + 4;
	char *p1 = malloc(n);
	if (!p1)
		return;
	snprintf(p1, n, "%s.1", l->path);
	char *argv[] = { "gzip", "-n", "-f", "-q", "--", p1, NULL };
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	if (posix_spawnattr_init(&at) == 0) {
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
		pid_t pid;
		if (posix_spawnp(&pid, "gzip", NULL, &at, argv, environ) == 0)
			l->gz_pid = pid;
		posix_spawnattr_destroy(&at);
	}
	free(p1);
}

static int rotate(struct logrot *l)
{
	gz_reap(l, true); /* the last gzip works on path.1, which the shift renames */
	int rc = logrot_shift(l->path, l->keep);
	if (rc) {
		/* Nothing moved: keep appending to the same file, no new header,
		 * and try again only after it grew by the backoff. */
		note_err(l, rc);
		l->rotate_backoff = l->rotate_backoff ? l->rotate_backoff * 2 : 64 * 1024;
		if (l->rotate_backoff > l->max_bytes)
			l->rotate_backoff = l->max_bytes;
		l->rotate_at = l->size + l->rotate_backoff;
		return 0;
	}
	l->rotate_backoff = 0;
	l->rotate_at = 0;
	close(l->fd);
	l->fd = -1;
	if (l->compress && l->keep > 0)
		gz_spawn(l); /* path.1 is the file just closed */
	rc = open_fd(l);
	if (rc)
		return rc;
	l->rotations++;
	if (l->header && (rc = fd_write_all(l->fd, l->header, l->header_len)) == 0)
		l->size += l->header_len;
	l->line_end = l->size;
	return rc;
}

/* A write that failed part-way: the file goes back to its last complete
 * line, so it never holds a partial one. */
static void cut_back(struct logrot *l)
{
	if (l->fd >= 0 && l->size != l->line_end) {
		if (ftruncate(l->fd, (off_t)l->line_end) == 0)
			l->size = l->line_end;
		else
			l->need_nl = true; /* the next record starts on a line of its own */
	}
}

/* Remembers header lines (a copy of the latest) as they pass: a line is
 * collected while it still starts like the prefix. */
static void track_header(struct logrot *l, const char *p, size_t n)
{
	if (!l->header_prefix)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (l->at_line_start) {
			l->ls_len = 0;
			l->collecting = true;
			l->at_line_start = false;
		}
		if (l->collecting) {
			if (l->ls_len == LOGROT_LINE_MAX ||
			    (l->ls_len < l->prefix_len && c != l->header_prefix[l->ls_len]))
				l->collecting = false;
			else
				l->line_start[l->ls_len++] = c;
		}
		if (c != '\n')
			continue;
		l->at_line_start = true;
		if (!l->collecting || l->ls_len <= l->prefix_len)
			continue;
		char *h = malloc(l->ls_len);
		if (!h)
			continue; /* the older header stays */
		memcpy(h, l->line_start, l->ls_len);
		free(l->header);
		l->header = h;
		l->header_len = l->ls_len;
	}
}

static ssize_t cookie_write(void *cookie, const char *p, size_t n)
{
	struct logrot *l = cookie;
	int rc;
	/* The tail of a record whose start failed: dropped up to its newline,
	 * reported as written so stdio does not retry it. */
	if (l->dropping) {
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return (ssize_t)n;
		l->dropping = false;
		size_t skip = (size_t)(nl - p) + 1;
		if (skip == n)
			return (ssize_t)n;
		ssize_t w = cookie_write(cookie, p + skip, n - skip);
		return w < 0 ? w : (ssize_t)n;
	}
	/* A rotation that could not reopen the file (directory gone, disk
	 * full): try again with each write rather than log nothing until a
	 * restart. */
	if (l->fd < 0) {
		if ((rc = open_fd(l)))
			goto failed;
		if (l->size == 0 && l->header &&
		    (rc = fd_write_all(l->fd, l->header, l->header_len)) == 0)
			l->size += l->header_len;
		l->line_end = l->size;
	}
	if (l->need_nl) {
		if ((rc = fd_write_all(l->fd, "\n", 1)))
			goto failed;
		l->need_nl = false;
		l->size++;
		l->line_end = l->size;
	}
	gz_reap(l, false);
	rc = fd_write_all(l->fd, p, n);
	if (rc) {
		/* part of it may be on disk: fd_write_all stops at the error */
		struct stat st;
		if (l->fd >= 0 && fstat(l->fd, &st) == 0)
			l->size = (uint64_t)st.st_size;
		goto failed;
	}
	const char *last_nl = n ? memrchr(p, '\n', n) : NULL;
	if (last_nl)
		l->line_end = l->size + (uint64_t)(last_nl - p) + 1;
	l->size += n;
	l->failing = false;
	track_header(l, p, n);
	/* Only between lines: every file holds whole lines. */
	if (l->max_bytes && l->size >= l->max_bytes && l->size >= l->rotate_at && n > 0 &&
	    p[n - 1] == '\n') {
		rc = rotate(l);
		if (rc)
			note_err(l, rc);
	}
	return (ssize_t)n;

failed:
	note_err(l, rc);
	cut_back(l);
	l->failing = true;
	l->dropped++;
	l->dropping = n == 0 || p[n - 1] != '\n';
	/* The record is lost whole (counted); stdio must not keep it and
	 * write it again after the cut, so it is reported as written. */
	return (ssize_t)n;
}

static int cookie_close(void *cookie)
{
	struct logrot *l = cookie;
	if (l->fd >= 0 && close(l->fd))
		note_err(l, -errno);
	l->fd = -1;
	return 0;
}

int logrot_open(struct logrot **out, const struct logrot_cfg *cfg)
{
	struct logrot *l = calloc(1, sizeof(*l));
	int rc = -ENOMEM;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	l->at_line_start = true;
	l->max_bytes = cfg->max_bytes;
	l->keep = cfg->keep;
	l->compress = cfg->compress;
	if (!(l->path = strdup(cfg->path)))
		goto err_path;
	if (cfg->header_prefix) {
		l->prefix_len = strlen(cfg->header_prefix);
		if (!(l->header_prefix = strdup(cfg->header_prefix)) ||
		    !(l->line_start = malloc(LOGROT_LINE_MAX)))
			goto err_prefix;
	}
	if ((rc = open_fd(l)))
		goto err_prefix;
	cookie_io_functions_t io = { .write = cookie_write, .close = cookie_close };
	l->f = fopencookie(l, "w", io);
	if (!l->f) {
		rc = -errno;
		goto err_fd;
	}
	/* Line buffered with room for a whole record: one write(2) per line. */
	if (!(l->buf = malloc(LOGROT_LINE_MAX)) || setvbuf(l->f, l->buf, _IOLBF, LOGROT_LINE_MAX)) {
		rc = -ENOMEM;
		fclose(l->f);
		free(l->buf);
		goto err_prefix; /* fclose closed the fd */
	}
	*out = l;
	return 0;

err_fd:
	close(l->fd);
err_prefix:
	free(l->line_start);
	free(l->header_prefix);
err_path:
	free(l->path);
	free(l);
	return rc;
}

FILE *logrot_file(struct logrot *l)
{
	return l->f;
}

uint64_t logrot_rotations(const struct logrot *l)
{
	return l->rotations;
}

uint64_t logrot_errors(const struct logrot *l)
{
	return l->errors;
}

int logrot_last_error(const struct logrot *l)
{
	return l->last_err ? l->last_err : l->first_err;
}

bool logrot_failing(const struct logrot *l)
{
	return l->failing;
}

uint64_t logrot_dropped(const struct logrot *l)
{
	return l->dropped;
}

int logrot_close(struct logrot *l)
{
	if (!l)
		return 0;
	int rc = 0;
	if (fclose(l->f) && !l->first_err)
		rc = -EIO;
	gz_reap(l, true);
	if (l->first_err)
		rc = l->first_err;
	free(l->buf);
	free(l->header);
	free(l->line_start);
	free(l->header_prefix);
	free(l->path);
	free(l);
	return rc;
}
