/* Whole writes to a file descriptor: write(2) may write less than asked
 * (signals, pipes, full disks); the callers need all or an error. */
#ifndef GOVD_COMMON_FDIO_H
#define GOVD_COMMON_FDIO_H
#include <stddef.h>

/* Writes all n bytes, retrying short writes and EINTR; 0 or -errno. */
int fd_write_all(int fd, const void *buf, size_t n);

#endif
