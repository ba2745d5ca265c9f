#include "governor/daemon/devlock.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* FNV-1a: a long id is named by its hash (the abstract name has 107 bytes). */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int devlock_take(const char *id, char *err, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	/* sun_path[0] = '\0': the abstract namespace */
	int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "govd-writer/%016llx/%.70s",
			 (unsigned long long)fnv1a(id), id);
	if (n < 0)
		return -EINVAL;
	size_t nlen = (size_t)n + 1 < sizeof(a.sun_path) ? (size_t)n + 1 : sizeof(a.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(err, len, "%s: socket: %s", id, strerror(e));
		return -e;
	}
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + nlen))) {
		int e = errno;
		close(fd);
		if (e == EADDRINUSE) {
			snprintf(err, len,
				 "%s is written by another govd on this machine (one writer per "
				 "device, whatever its state file)",
				 id);
			return -EBUSY;
		}
		snprintf(err, len, "%s: cannot take its writer lock: %s", id, strerror(e));
		return -e;
	}
	return fd;
}
