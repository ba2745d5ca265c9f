/* The restore records: a previous run's state file put back (at start and
 * by govctl restore), and the private folders the state file, the decision
 * logs and the control socket live in. */
#include "governor/daemon/daemon.h"

#include <errno.h>
#include <string.h>

#include "common/fsafe.h"

int daemon_restore_state(const char *state_file, bool *found, struct statefile_result *res,
			 struct diag_list *diags)
{
	return daemon_restore_for(state_file, NULL, found, res, diags);
}

int daemon_restore_for(const char *state_file, const struct config *cfg, bool *found,
		       struct statefile_result *res, struct diag_list *diags)
{
	json_t *doc;
	memset(res, 0, sizeof(*res));
	*found = false;
	int rc = statefile_read(state_file, &doc, diags);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	*found = true;
	rc = statefile_restore(doc, cfg, res, diags);
	json_decref(doc);
	if (rc == 0)
		rc = statefile_remove(state_file);
	return rc;
}

int daemon_check_dirs(const struct config *c, struct diag_list *diags)
{
	struct fsafe_err e;
	const char *what = "state file";
	int rc = fsafe_private_dir_of(c->state_file, 0700, &e);
	if (!rc && c->declog.dir[0]) {
		what = "decision log";
		rc = fsafe_private_dir(c->declog.dir, 0750, &e);
	}
	if (!rc && c->control.enabled) {
		what = "control socket";
		rc = fsafe_private_dir_of(c->control.socket, 0750, &e);
	}
	if (rc)
		diag_add(diags, DIAG_ERROR, c->path, 0, 0, "", "directory",
			 "%s directory refused: %s; not starting", what, e.msg);
	return rc;
}
