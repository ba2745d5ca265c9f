/* Precision actuators (file, http, exec). */
#include "hal/precision_act.h"
#include "hal/hal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fdio.h"
#include "common/fsafe.h"
#include "hal/curl_util.h"

int pact_kind_parse(const char *s, enum pact_kind *out)
{
	static const char *const names[] = { "none", "file", "http", "exec" };
	for (int i = 0; i < 4; i++)
		if (s && !strcmp(s, names[i])) {
			*out = (enum pact_kind)i;
			return 0;
		}
	return -EINVAL;
}

char *pact_document(uint64_t gen, const char *const *names, const double *frac,
		    const uint8_t *low_mode, const double *shadow, size_t n, uint64_t updated_ms)
{
	json_t *root = json_object(), *sl = json_object(), *sh = json_object();
	json_t *lm = json_object();
	char *out = NULL;
	if (!root || !sl || !sh || !lm)
		goto out_free;
	/* Only the slices whose 8-bit share is FP8's (the precision ladder). */
	for (size_t i = 0; low_mode && i < n; i++)
		if (low_mode[i] == HAL_LOW_FP8 &&
		    json_object_set_new(lm, names[i], json_string(hal_low_mode_names[HAL_LOW_FP8])))
			goto out_free;
	for (size_t i = 0; shadow && i < n; i++)
		if (shadow[i] > 0 && json_object_set_new(sh, names[i],
							  json_real(shadow[i] > 1 ? 1 : shadow[i])))
			goto out_free;
	for (size_t i = 0; i < n; i++) {
		double f = frac[i];
		if (!(f >= 0))
			f = 0; /* NaN or negative: full precision is the safe side */
		if (f > 1)
			f = 1;
		if (json_object_set_new(sl, names[i], json_real(f)))
			goto out_free;
	}
	if (json_object_set_new(root, "generation", json_integer((json_int_t)gen)) ||
	    json_object_set(root, "slices", sl) ||
	    (json_object_size(lm) && json_object_set(root, "low_mode", lm)) ||
	    json_object_set_new(root, "updated_ms", json_integer((json_int_t)updated_ms)) ||
	    (json_object_size(sh) && json_object_set(root, "shadow_rate", sh)))
		goto out_free;
	out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
out_free:
	json_decref(lm);
	json_decref(sh);
	json_decref(sl);
	json_decref(root);
	return out;
}

int pact_parse_applied(const char *buf, size_t len, const char *field, uint64_t *gen)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, 0, &jerr);
	if (!root)
		return -EBADMSG;
	int rc = -ENOENT;
	json_t *cur = root;
	char path[128];
	snprintf(path, sizeof(path), "%s", field && *field ? field : "generation");
	char *save = NULL;
	for (char *tok = strtok_r(path, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
		cur = json_is_object(cur) ? json_object_get(cur, tok) : NULL;
		if (!cur)
			goto out_free;
	}
	if (json_is_integer(cur) && json_integer_value(cur) >= 0) {
		*gen = (uint64_t)json_integer_value(cur);
		rc = 0;
	} else if (json_is_real(cur) && json_real_value(cur) >= 0 && json_real_value(cur) < 9e18) {
		*gen = (uint64_t)json_real_value(cur);
		rc = 0;
	} else {
		rc = -EBADMSG;
	}
out_free:
	json_decref(root);
	return rc;
}

/* The whole of a small file (at most 1 MiB: -EFBIG beyond), malloc'd. */
static int read_small_file(const char *path, char **buf, size_t *len)
{
	struct fsafe_err e;
	return fsafe_read_all(path, 1u << 20, 0, buf, len, &e);
}

int pact_read_applied_file(const char *path, const char *field, uint64_t *gen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_small_file(path, &buf, &len);
	if (!rc)
		rc = pact_parse_applied(buf, len, field, gen);
	free(buf);
	return rc;
}

int pact_init(struct pact *a, const struct pact_cfg *cfg)
{
	memset(a, 0, sizeof(*a));
	a->kind = cfg->kind;
	a->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 1000;
	a->retries = cfg->retries;
	if (a->kind == PACT_NONE)
		return 0;
	if (!cfg->target || !*cfg->target)
		return -EINVAL;
	a->target = strdup(cfg->target);
	if (!a->target)
		return -ENOMEM;
	if (a->kind == PACT_HTTP) {
		int rc = hal_curl_load(a->err, sizeof(a->err));
		if (!rc && !(a->curl = hal_curl()->easy_init()))
			rc = -ENOMEM;
		if (rc) {
			free(a->target);
			a->target = NULL;
			return rc;
		}
	}
	if (a->kind == PACT_FILE) {
		/* continue the sequence of a document left by an earlier run */
		uint64_t g;
		if (!pact_read_applied_file(a->target, "generation", &g))
			a->generation = g;
	}
	return 0;
}

void pact_fini(struct pact *a)
{
	if (a->curl)
		hal_curl()->easy_cleanup(a->curl);
	free(a->target);
	memset(a, 0, sizeof(*a));
}


/* Temp file in the target's directory (rename is atomic only within one
 * file system), fsync, rename over the target, fsync the directory. */
static int apply_file(struct pact *a, const char *doc)
{
	size_t tl = strlen(a->target);
	char *tmp = malloc(tl + 16);
	char *dir = strdup(a->target);
	int rc = 0, fd = -1;
	if (!tmp || !dir) {
		rc = -ENOMEM;
		goto out_free;
	}
	snprintf(tmp, tl + 16, "%s.tmp.XXXXXX", a->target);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		snprintf(a->err, sizeof(a->err), "create %s: %s", tmp, strerror(-rc));
		goto out_free;
	}
	if (fchmod(fd, 0644) < 0 || (rc = fd_write_all(fd, doc, strlen(doc))) < 0 ||
	    fd_write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
		rc = rc ? rc : -errno;
		snprintf(a->err, sizeof(a->err), "write %s: %s", tmp, strerror(-rc));
		goto out_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		snprintf(a->err, sizeof(a->err), "close %s: %s", tmp, strerror(-rc));
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, a->target) < 0) {
		rc = -errno;
		snprintf(a->err, sizeof(a->err), "rename %s -> %s: %s", tmp, a->target, strerror(-rc));
		goto out_unlink;
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* the rename itself durable; failure here loses nothing */
		close(dfd);
	}
	goto out_free;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out_free:
	free(tmp);
	free(dir);
	return rc;
}

static size_t discard_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	return size * nmemb;
}

/* The tries share one deadline: a failed hand-over costs at most
 * timeout_ms of the control tick (the governor tries again next tick). */
static int apply_http(struct pact *a, const char *doc)
{
	uint64_t deadline = govd_mono_ms() + a->timeout_ms;
	CURL *c = a->curl;
	const struct hal_curl *cu = hal_curl();
	struct curl_slist *hdr = cu->slist_append(NULL, "Content-Type: application/json");
	if (!hdr)
		return -ENOMEM;
	hal_curl_reset(c, a->target, (long)a->timeout_ms);
	cu->easy_setopt(c, CURLOPT_POSTFIELDS, doc);
	cu->easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(doc));
	cu->easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
	int rc = -EIO;
	for (unsigned t = 0; t <= a->retries; t++) {
		if (t > 0) {
			uint64_t now = govd_mono_ms();
			if (now >= deadline)
				break; /* rc and err of the last try stand */
			cu->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(deadline - now));
			cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(deadline - now));
		}
		CURLcode cc = cu->easy_perform(c);
		long status = 0;
		if (cc == CURLE_OK) {
			cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
			if (status >= 200 && status < 300) {
				rc = 0;
				break;
			}
			snprintf(a->err, sizeof(a->err), "POST %s: HTTP %ld", a->target, status);
			rc = -EIO;
			if (status >= 400 && status < 500)
				break; /* the server refuses this document: retrying cannot help */
			continue;
		}
		snprintf(a->err, sizeof(a->err), "POST %s: %s", a->target, cu->easy_strerror(cc));
		rc = cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT
		     : cc == CURLE_COULDNT_CONNECT  ? -ECONNREFUSED
						    : -EIO;
	}
	cu->slist_free_all(hdr);
	return rc;
}

/* Wait for pid until deadline; true if it exited (status filled). */
static bool wait_deadline(pid_t pid, uint64_t deadline_ms, int *status)
{
#ifdef SYS_pidfd_open
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	int pfd = -1;
#endif
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR)) {
			if (pfd >= 0)
				close(pfd);
			return r == pid;
		}
		uint64_t now = govd_mono_ms();
		if (now >= deadline_ms)
			break;
		uint64_t left = deadline_ms - now;
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };
			poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
		} else {
			struct timespec ts = { 0, 2000000 }; /* no pidfd: poll waitpid */
			nanosleep(&ts, NULL);
		}
	}
	if (pfd >= 0)
		close(pfd);
	return false;
}

/* Writing into a pipe whose reader has gone raises SIGPIPE; block it for
 * this thread and swallow a pending one instead of changing the process's
 * disposition (a library must not). */
static int pipe_write(int fd, const char *doc, size_t n, uint64_t deadline_ms)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int rc = 0;
	while (n) {
		uint64_t now = govd_mono_ms();
		if (now >= deadline_ms) {
			rc = -ETIMEDOUT;
			break;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int pr = poll(&p, 1, (int)(deadline_ms - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			rc = pr == 0 ? -ETIMEDOUT : -errno;
			break;
		}
		ssize_t w = write(fd, doc, n);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -errno;
			break;
		}
		doc += w;
		n -= (size_t)w;
	}
	if (rc == -EPIPE) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int apply_exec(struct pact *a, const char *doc)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -errno;
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	uint64_t deadline = govd_mono_ms() + a->timeout_ms;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		snprintf(a->err, sizeof(a->err), "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		/* own process group so a timeout kills the hook's children too */
		setpgid(0, 0);
		if (dup2(fds[0], STDIN_FILENO) < 0)
			_exit(126);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", a->target, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no race with the kill below */
	close(fds[0]);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	int wrc = pipe_write(fds[1], doc, strlen(doc), deadline);
	close(fds[1]); /* EOF for the hook */
	int status = 0;
	if (!wait_deadline(pid, deadline, &status)) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		snprintf(a->err, sizeof(a->err), "hook '%s' killed after %u ms", a->target, a->timeout_ms);
		return -ETIMEDOUT;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (wrc && wrc != -EPIPE)
			return wrc;
		return 0;
	}
	if (WIFEXITED(status))
		snprintf(a->err, sizeof(a->err), "hook '%s' exited with status %d", a->target,
			 WEXITSTATUS(status));
	else
		snprintf(a->err, sizeof(a->err), "hook '%s' killed by signal %d", a->target,
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return -EIO;
}

int pact_apply(struct pact *a, const char *const *names, const double *frac,
	       const uint8_t *low_mode, const double *shadow, size_t n, uint64_t updated_ms)
{
	a->err[0] = '\0';
	if (a->kind == PACT_NONE) {
		snprintf(a->err, sizeof(a->err), "no precision actuator configured");
		return -ENOTSUP;
	}
	uint64_t gen = a->generation + 1;
	char *doc = pact_document(gen, names, frac, low_mode, shadow, n, updated_ms);
	if (!doc)
		return -ENOMEM;
	int rc;
	switch (a->kind) {
	case PACT_FILE:
		rc = apply_file(a, doc);
		break;
	case PACT_HTTP:
		rc = apply_http(a, doc);
		break;
	case PACT_EXEC:
		rc = apply_exec(a, doc);
		break;
	default:
		rc = -ENOTSUP;
	}
	free(doc);
	/* a generation is spent even when the hand-over failed: a document
	 * that may have half-arrived is never reused under the same number */
	a->generation = gen;
	return rc;
}
