/* Where installed data lives: a relative policy or scenario path that is not
 * found where it is given (next to the config, or in the working directory)
 * is looked up in each folder of $GOVD_DATA_PATH (colon-separated), then in
 * GOVD_DATADIR, the install's data folder (/usr/share/govd). So an installed
 * config says `policy: policies/default.yaml` and finds
 * /etc/govd/policies/default.yaml if the admin put one there, else
 * /usr/share/govd/policies/default.yaml. docs/install.md. */
#ifndef GOVD_COMMON_DATAPATH_H
#define GOVD_COMMON_DATAPATH_H
#include <stddef.h>

/* The compiled-in data folder (GOVD_DATADIR). */
const char *govd_datadir(void);
/* rel (relative) found readable in the search path: 0 and its path in out;
 * -ENOENT when in none (out then holds the last candidate tried, or is
 * empty); -EINVAL for an absolute or empty rel. */
int govd_data_find(const char *rel, char *out, size_t len);
/* The search path as one line for messages ("A:B:/usr/share/govd"). */
const char *govd_data_path_text(char *buf, size_t len);

#endif
