/* Safe reading and creation of files; see fsafe.h. */
#include "common/fsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(struct fsafe_err *e, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct fsafe_err *e, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return rc;
}

static const char *kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISLNK(m))
		return "a symlink";
	return "not a plain file";
}

int fsafe_open_read(const char *path, size_t max_bytes, struct fsafe_err *e)
{
	memset(e, 0, sizeof(*e));
	/* O_NONBLOCK: opening a FIFO with no writer (or a tty) returns at
	 * once instead of waiting; the type check below then refuses it. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail(e, -errno, "cannot open: %s", strerror(errno));
	struct stat st;
	int rc;
	if (fstat(fd, &st)) {
		rc = fail(e, -errno, "cannot stat: %s", strerror(errno));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(e, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, "is %s, not a regular file",
			  kind(st.st_mode));
		goto close_fd;
	}
	if (max_bytes && (uint64_t)st.st_size > max_bytes) {
		rc = fail(e, -EFBIG, "file is %lld bytes, over the limit of %zu",
			  (long long)st.st_size, max_bytes);
		goto close_fd;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		rc = fail(e, -errno, "fcntl: %s", strerror(errno));
		goto close_fd;
	}
	return fd;

close_fd:
	close(fd);
	return rc;
}

FILE *fsafe_fopen_read(const char *path, size_t max_bytes, struct fsafe_err *e)
{
	int fd = fsafe_open_read(path, max_bytes, e);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int err = errno;
		close(fd);
		fail(e, -err, "fdopen: %s", strerror(err));
		errno = err;
	}
	return f;
}

int fsafe_read_all(const char *path, size_t max_bytes, size_t max_line, char **buf, size_t *len,
		   struct fsafe_err *e)
{
	*buf = NULL;
	*len = 0;
	int fd = fsafe_open_read(path, max_bytes, e);
	if (fd < 0)
		return fd;
	char *b = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (cap - n < 2) {
			/* The file may grow after the fstat: the bound holds on
			 * what is read, not on what was announced. */
			if (max_bytes && cap > max_bytes) {
				rc = fail(e, -EFBIG, "file larger than %zu bytes", max_bytes);
				goto free_buf;
			}
			size_t nc = cap ? cap * 2 : 4096;
			char *nb = realloc(b, nc);
			if (!nb) {
				rc = fail(e, -ENOMEM, "out of memory");
				goto free_buf;
			}
			b = nb;
			cap = nc;
		}
		ssize_t got = read(fd, b + n, cap - n - 1);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = fail(e, -errno, "cannot read: %s", strerror(errno));
			goto free_buf;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (max_bytes && n > max_bytes) {
		rc = fail(e, -EFBIG, "file larger than %zu bytes", max_bytes);
		goto free_buf;
	}
	if (max_line) {
		size_t start = 0;
		int line = 1;
		for (size_t i = 0; i <= n; i++) {
			if (i < n && b[i] != '\n')
				continue;
			if (i - start > max_line) {
				e->line = line;
				rc = fail(e, -EFBIG, "line %d is longer than %zu bytes", line, max_line);
				goto free_buf;
			}
			start = i + 1;
			line++;
		}
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;

free_buf:
	free(b);
	close(fd);
	return rc;
}

long fsafe_getline(FILE *f, char **line, size_t *cap, size_t max_line)
{
	size_t n = 0;
	int c = EOF;
	for (;;) {
		if (n + 2 > *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			char *nb = realloc(*line, nc);
			if (!nb)
				return -ENOMEM;
			*line = nb;
			*cap = nc;
		}
		if ((c = getc_unlocked(f)) == EOF)
			break;
		if (n == max_line)
			return -E2BIG;
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	(*line)[n] = '\0';
	return n == 0 && c == EOF ? -1 : (long)n;
}

int fsafe_create(const char *path, mode_t mode, bool replace, struct fsafe_err *e)
{
	memset(e, 0, sizeof(*e));
	const int fl = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	int fd = open(path, fl, mode);
	if (fd < 0 && errno == EEXIST && replace) {
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return fail(e, -EISDIR, "is a directory");
		/* a device, FIFO or socket is never replaced (as root, unlinking
		 * /dev/full would delete the device node) */
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			return fail(e, -EEXIST, "is not a regular file; not replaced");
		/* unlink removes a planted symlink itself, never its target */
		if (unlink(path) && errno != ENOENT)
			return fail(e, -errno, "cannot replace: %s", strerror(errno));
		fd = open(path, fl, mode);
	}
	if (fd < 0)
		return fail(e, -errno, "cannot create: %s%s", strerror(errno),
			    errno == EEXIST ? " (refusing to write through an existing entry)" : "");
	return fd;
}

FILE *fsafe_fcreate(const char *path, mode_t mode, bool replace, struct fsafe_err *e)
{
	int fd = fsafe_create(path, mode, replace, e);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int err = errno;
		close(fd);
		fail(e, -err, "fdopen: %s", strerror(err));
		errno = err;
	}
	return f;
}

static int mkdirs(char *p, mode_t leaf_mode)
{
	size_t n = strlen(p);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		int r = mkdir(p, c ? 0755 : leaf_mode);
		p[i] = c;
		if (r && errno != EEXIST)
			return -errno;
	}
	return 0;
}

/* owner: the effective user, or also root when root_ok. */
static int check_dir(const char *dir, bool root_ok, struct fsafe_err *e)
{
	struct stat st;
	if (lstat(dir, &st))
		return fail(e, -errno, "directory %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(e, -ENOTDIR, "%s is %s, not a directory", dir, kind(st.st_mode));
	uid_t me = geteuid();
	if (st.st_uid != me && !(root_ok && st.st_uid == 0))
		return fail(e, -EPERM,
			    "directory %s is owned by uid %u, not by govd's user (uid %u): another "
			    "user could plant files there",
			    dir, (unsigned)st.st_uid, (unsigned)me);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return fail(e, -EPERM,
			    "directory %s is writable by %s (mode %04o): use a private directory "
			    "(chmod go-w, or systemd's StateDirectory/RuntimeDirectory)",
			    dir, st.st_mode & S_IWOTH ? "others" : "its group",
			    (unsigned)(st.st_mode & 07777));
	return 0;
}

int fsafe_private_dir(const char *dir, mode_t mode, struct fsafe_err *e)
{
	memset(e, 0, sizeof(*e));
	char *p = strdup(dir);
	if (!p)
		return fail(e, -ENOMEM, "out of memory");
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	int rc = mkdirs(p, mode);
	if (rc)
		rc = fail(e, rc, "cannot create directory %s: %s", p, strerror(-rc));
	else
		rc = check_dir(p, false, e);
	free(p);
	return rc;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int fsafe_private_dir_of(const char *path, mode_t mode, struct fsafe_err *e)
{
	char *d = dir_of(path);
	if (!d) {
		memset(e, 0, sizeof(*e));
		return fail(e, -ENOMEM, "out of memory");
	}
	int rc = fsafe_private_dir(d, mode, e);
	free(d);
	return rc;
}

int fsafe_trusted_file(const char *path, struct fsafe_err *e)
{
	memset(e, 0, sizeof(*e));
	struct stat st;
	if (lstat(path, &st))
		return fail(e, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(e, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, "is %s, not a regular file",
			    kind(st.st_mode));
	uid_t me = geteuid();
	if (st.st_uid != me && st.st_uid != 0)
		return fail(e, -EPERM, "is owned by uid %u, not by this user (uid %u) or root",
			    (unsigned)st.st_uid, (unsigned)me);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return fail(e, -EPERM, "is writable by group or others (mode %04o)",
			    (unsigned)(st.st_mode & 07777));
	char *d = dir_of(path);
	if (!d)
		return fail(e, -ENOMEM, "out of memory");
	int rc = check_dir(d, true, e);
	free(d);
	return rc;
}

bool fsafe_name_ok(const char *name, size_t max_len, struct fsafe_err *e)
{
	memset(e, 0, sizeof(*e));
	size_t n = strlen(name);
	if (n == 0 || n > max_len) {
		fail(e, -EINVAL, "must be 1 to %zu characters", max_len);
		return false;
	}
	if (name[0] == '.') {
		fail(e, -EINVAL, "must not start with '.' (it becomes a file name)");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '_' || c == '-')
			continue;
		fail(e, -EINVAL,
		     "character %zu is not one of A-Z a-z 0-9 . _ - (it becomes a file name)", i + 1);
		return false;
	}
	return true;
}

char *fsafe_escape(char *out, size_t len, const char *in)
{
	size_t o = 0;
	if (!len)
		return out;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		char tmp[8];
		size_t k;
		if (*p < 0x20 || *p == 0x7f) {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			/* U+0080..U+009F: the C1 controls (CSI is U+009B) */
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\u%04x", p[1]);
			p++;
		} else {
			tmp[0] = (char)*p;
			k = 1;
		}
		if (o + k >= len)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	out[o] = '\0';
	return out;
}

int fsafe_mkdirs(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		buf[i] = c;
	}
	return 0;
}
