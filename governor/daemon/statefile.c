#include "governor/daemon/statefile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/file.h>
#include <sys/stat.h>

#include "common/fsafe.h"
#include "hal/sysfs_io.h"

#define ORIGINAL_MAX 16384

int statefile_original(struct hal_dev *dev, json_t **out, struct diag_list *diags)
{
	*out = NULL;
	if (dev->ops->get_original) {
		char *buf = malloc(ORIGINAL_MAX);
		if (!buf)
			return -ENOMEM;
		int rc = dev->ops->get_original(dev, buf, ORIGINAL_MAX);
		if (rc == 0) {
			json_error_t e;
			*out = json_loads(buf, 0, &e);
			if (!*out || !json_is_object(*out)) {
				json_decref(*out);
				*out = NULL;
				rc = -EBADMSG;
			}
		}
		free(buf);
		if (rc)
			diag_add(diags, DIAG_ERROR, dev->name, 0, 0, "", "original",
				 "cannot record the original settings: %s", strerror(-rc));
		return rc;
	}
	/* What the governor restores by itself (governor_restore): clocks to
	 * the firmware default, the power limit found, BF16 everywhere. */
	struct hal_sample s;
	json_t *limit = json_null();
	memset(&s, 0, sizeof(s));
	if (dev->ops->sample(dev, &s) == 0 && s.power_limit_mw.valid && s.power_limit_mw.v > 0 &&
	    s.power_limit_mw.v <= HAL_POWER_MAX_MW)
		limit = json_integer((json_int_t)s.power_limit_mw.v);
	size_t slices = 0;
	if (hal_can_set_precision(dev) && hal_can_read_serving(dev)) {
		struct hal_serving sv;
		memset(&sv, 0, sizeof(sv));
		if (dev->ops->read_serving(dev, &sv) == 0)
			slices = sv.n_slices < HAL_MAX_SLICES ? sv.n_slices : HAL_MAX_SLICES;
	}
	*out = json_pack("{s:b, s:o, s:s, s:I}", "generic", 1, "power_limit_mw", limit,
			 "locked_clocks", "reset", "int8_slices", (json_int_t)slices);
	return *out ? 0 : -ENOMEM;
}

json_t *statefile_build(const struct config *cfg, json_t *const *originals)
{
	json_t *devs = json_array();
	for (size_t i = 0; i < cfg->n_devices; i++) {
		const struct config_device *d = &cfg->dev[i];
		json_t *opts = json_object();
		for (size_t k = 0; k < d->n_opts; k++)
			json_object_set_new(opts, d->keys[k], json_string(d->values[k]));
		json_array_append_new(devs, json_pack("{s:s, s:s, s:o, s:o}", "name", d->name,
						      "backend", d->backend, "options", opts,
						      "original", originals[i]));
	}
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "format", STATEFILE_FORMAT, "govd_version",
			 GOVD_VERSION, "pid", (json_int_t)getpid(), "config", cfg->path, "devices",
			 devs);
}

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}

int statefile_write(const char *path, const json_t *doc)
{
	size_t n = strlen(path) + 8;
	char *tmp = malloc(n);
	int rc = 0;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp", path);
	char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	if (!text) {
		rc = -ENOMEM;
		goto free_tmp;
	}
	/* A stale or planted state.json.tmp (file or symlink) is unlinked,
	 * never written through. */
	struct fsafe_err fe;
	int fd = fsafe_create(tmp, 0600, true, &fe);
	if (fd < 0) {
		rc = fd;
		goto free_text;
	}
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	if (!rc) {
		ssize_t w = write(fd, "\n", 1);
		if (w != 1)
			rc = w < 0 ? -errno : -EIO; /* a short write leaves errno stale */
		else if (fsync(fd))
			rc = -errno;
	}
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		goto unlink_tmp;
	if (rename(tmp, path)) {
		rc = -errno;
		goto unlink_tmp;
	}
	rc = fsync_dir_of(path);
	goto free_text;

unlink_tmp:
	unlink(tmp);
free_text:
	free(text);
free_tmp:
	free(tmp);
	return rc;
}

int statefile_read(const char *path, json_t **out, struct diag_list *diags)
{
	json_error_t e;
	struct fsafe_err fe;
	*out = NULL;
	/* Its restore entries direct root writes: only a file this user (or
	 * root) owns, in a directory no one else can write, is read at all. */
	int rc = fsafe_trusted_file(path, &fe);
	if (rc == -ENOENT)
		return rc;
	char *text = NULL;
	size_t len = 0;
	if (!rc)
		rc = fsafe_read_all(path, STATEFILE_MAX_BYTES, 0, &text, &len, &fe);
	if (rc) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "file", "state file %s", fe.msg);
		return rc == -ENOENT ? -EIO : rc;
	}
	json_t *doc = json_loadb(text, len, 0, &e);
	free(text);
	if (!doc) {
		diag_add(diags, DIAG_ERROR, path, e.line > 0 ? e.line : 0, e.column > 0 ? e.column : 0,
			 "", "parse", "state file does not parse: %s", e.text);
		return -EINVAL;
	}
	const char *fmt = json_string_value(json_object_get(doc, "format"));
	if (!fmt || strcmp(fmt, STATEFILE_FORMAT) || !json_is_array(json_object_get(doc, "devices"))) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "format", "format",
			 "not a govd state file (want format \"%s\" and a devices list)",
			 STATEFILE_FORMAT);
		json_decref(doc);
		return -EINVAL;
	}
	*out = doc;
	return 0;
}

int statefile_lock(const char *path, int *fd_out, long *holder, struct diag_list *diags)
{
	char lp[4200];
	*fd_out = -1;
	*holder = 0;
	snprintf(lp, sizeof(lp), "%s.lock", path);
	int fd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int err = errno;
		diag_add(diags, DIAG_ERROR, lp, 0, 0, "", "lock", "cannot open the instance lock: %s",
			 strerror(err));
		return -err;
	}
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		diag_add(diags, DIAG_ERROR, lp, 0, 0, "", "lock", "instance lock is not a regular file");
		close(fd);
		return -EINVAL;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;
		char buf[32] = "";
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0)
			buf[n] = '\0';
		*holder = strtol(buf, NULL, 10);
		if (err == EWOULDBLOCK)
			diag_add(diags, DIAG_ERROR, lp, 0, 0, "", "lock",
				 "another govd (pid %ld) holds this state file and its devices; "
				 "one writer per device: stop it first",
				 *holder);
		else
			diag_add(diags, DIAG_ERROR, lp, 0, 0, "", "lock", "flock: %s", strerror(err));
		close(fd);
		return err == EWOULDBLOCK ? -EBUSY : -err;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n)
		(void)fsync(fd);
	*fd_out = fd;
	return 0;
}

void statefile_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* the lock goes with the descriptor; the file stays */
}

int statefile_remove(const char *path)
{
	if (unlink(path)) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	return fsync_dir_of(path);
}

/* The device a state entry names, as hal_open wants it: with a config, the
 * config's own entry of that name (backend and options never come from the
 * file alone); without one (govctl restore --state on a trusted file), the
 * recorded backend and options. */
struct restore_dev {
	struct hal_dev_cfg cfg;
	const char *keys[64], *vals[64];
};

static int restore_dev_cfg(const char *name, const json_t *d, const struct config *config,
			   struct restore_dev *rd, struct diag_list *diags)
{
	memset(rd, 0, sizeof(*rd));
	rd->cfg.name = name;
	rd->cfg.keys = rd->keys;
	rd->cfg.values = rd->vals;
	const char *backend = json_string_value(json_object_get(d, "backend"));
	if (config) {
		for (size_t i = 0; i < config->n_devices; i++) {
			const struct config_device *cd = &config->dev[i];
			if (strcmp(cd->name, name))
				continue;
			if (!backend || strcmp(cd->backend, backend)) {
				diag_add(diags, DIAG_ERROR, name, 0, 0, "backend", "restore",
					 "state file records backend '%s' but the config has '%s'; "
					 "nothing written",
					 backend ? backend : "?", cd->backend);
				return -EINVAL;
			}
			config_dev_cfg(cd, &rd->cfg);
			return 0;
		}
		diag_add(diags, DIAG_ERROR, name, 0, 0, "", "restore",
			 "state file names a device the config does not have; nothing written "
			 "(restore it with `govctl restore --state` after checking the file)");
		return -ENODEV;
	}
	const char *k;
	json_t *v;
	size_t n = 0;
	json_object_foreach((json_t *)json_object_get(d, "options"), k, v) {
		if (n == 64 || !json_is_string(v))
			return -EINVAL;
		rd->keys[n] = k;
		rd->vals[n++] = json_string_value(v);
	}
	rd->cfg.backend = backend;
	rd->cfg.n_opts = n;
	return backend ? 0 : -EINVAL;
}

/* A value to write back: a short token (a number, "auto", "manual"). */
static bool value_ok(const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'z') ||
		      (v[i] >= 'A' && v[i] <= 'Z') || v[i] == '_' || v[i] == '-' || v[i] == ' '))
			return false;
	return true;
}

/* The sysfs form: writes in the recorded order, each attempted, but only to
 * paths the backend itself would write for this device: the device is opened
 * (read-only) and its own restore list names the allowed paths. A path it
 * would not write is never written, whatever the file says. */
static int replay(const char *dev, const struct restore_dev *rd, const json_t *list,
		  struct diag_list *diags)
{
	struct hal_dev hd = { 0 };
	int rc = hal_open(&hd, &rd->cfg, diags);
	if (rc)
		return rc;
	json_t *mine = NULL;
	if (hd.ops->get_original) {
		char *buf = malloc(ORIGINAL_MAX);
		if (buf && hd.ops->get_original(&hd, buf, ORIGINAL_MAX) == 0)
			mine = json_loads(buf, 0, NULL);
		free(buf);
	}
	hal_close(&hd); /* nothing written: close restores nothing */
	const json_t *allowed = json_object_get(mine, "restore");
	if (!json_is_array(allowed)) {
		diag_add(diags, DIAG_ERROR, dev, 0, 0, "", "restore",
			 "backend %s has no write list to check the recorded one against; nothing "
			 "written",
			 rd->cfg.backend);
		json_decref(mine);
		return -EINVAL;
	}
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *p = json_string_value(json_object_get(e, "path"));
		const char *v = json_string_value(json_object_get(e, "value"));
		bool known = false;
		size_t j;
		json_t *a;
		json_array_foreach(allowed, j, a) {
			const char *ap = json_string_value(json_object_get(a, "path"));
			if (p && ap && !strcmp(p, ap))
				known = true;
		}
		int r = !p || !v ? -EINVAL : !known ? -EPERM : !value_ok(v) ? -EINVAL
									    : sysfs_write_str(p, v);
		if (r) {
			diag_add(diags, DIAG_ERROR, dev, 0, 0, "", "restore", "restore[%zu] %s = %s: %s%s",
				 i, p ? p : "?", v ? v : "?", strerror(-r),
				 r == -EPERM ? " (not a file this device's backend writes; skipped)" : "");
			if (!rc)
				rc = r;
		}
	}
	json_decref(mine);
	return rc;
}

static int reopen_and_write(const char *name, const struct restore_dev *rd, const json_t *orig,
			    struct diag_list *diags)
{
	struct hal_dev dev = { 0 };
	if (!rd->cfg.backend)
		return -EINVAL;
	/* A damaged record must not reach the device (a limit cast to uint32_t
	 * from any JSON integer could be anything): refuse it whole. */
	const json_t *lim = json_object_get(orig, "power_limit_mw");
	const json_t *sl = json_object_get(orig, "int8_slices");
	if ((lim && !json_is_null(lim) &&
	     (!json_is_integer(lim) || json_integer_value(lim) <= 0 ||
	      json_integer_value(lim) > HAL_POWER_MAX_MW)) ||
	    (sl && (!json_is_integer(sl) || json_integer_value(sl) < 0 ||
		    json_integer_value(sl) > HAL_MAX_SLICES))) {
		diag_add(diags, DIAG_ERROR, name, 0, 0, "original", "restore",
			 "state file entry out of range (power_limit_mw in 1..%d or null, "
			 "int8_slices in 0..%d); nothing written",
			 HAL_POWER_MAX_MW, HAL_MAX_SLICES);
		return -EINVAL;
	}
	int rc = hal_open(&dev, &rd->cfg, diags);
	if (rc)
		return rc;
	int r;
	/* Opening records what the device has now, the crashed run's governed
	 * settings, as its originals (nvml puts them back at close): hand it
	 * the recorded ones first. */
	if (hal_can_adopt_original(&dev)) {
		char *text = json_dumps(orig, JSON_COMPACT);
		rc = text ? dev.ops->adopt_original(&dev, text) : -ENOMEM;
		free(text);
		if (rc) {
			const char *why = dev.ops->last_error ? dev.ops->last_error(&dev) : "";
			diag_add(diags, DIAG_ERROR, name, 0, 0, "", "restore",
				 "cannot adopt the recorded originals, nothing written: %s%s%s",
				 strerror(-rc), why && why[0] ? ": " : "", why ? why : "");
			hal_close(&dev);
			return rc;
		}
	}
	if (dev.ops->reset_clocks && (r = dev.ops->reset_clocks(&dev)) && !rc)
		rc = r;
	if (json_is_integer(lim) && dev.ops->set_power_limit &&
	    (r = dev.ops->set_power_limit(&dev, (uint32_t)json_integer_value(lim))) && !rc)
		rc = r;
	json_int_t slices = json_integer_value(sl);
	if (slices > 0 && slices <= HAL_MAX_SLICES && dev.ops->set_precision) {
		double zero[HAL_MAX_SLICES] = { 0 };
		if ((r = dev.ops->set_precision(&dev, zero, (size_t)slices)) && !rc)
			rc = r;
	}
	if (rc) {
		const char *why = dev.ops->last_error ? dev.ops->last_error(&dev) : "";
		diag_add(diags, DIAG_ERROR, name, 0, 0, "", "restore", "restore failed: %s%s%s",
			 strerror(-rc), why && why[0] ? ": " : "", why ? why : "");
	}
	hal_close(&dev);
	return rc;
}

int statefile_restore(const json_t *doc, const struct config *config, struct statefile_result *res,
		      struct diag_list *diags)
{
	size_t i;
	json_t *d;
	memset(res, 0, sizeof(*res));
	json_array_foreach(json_object_get(doc, "devices"), i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *orig = json_object_get(d, "original");
		const json_t *list = json_object_get(orig, "restore");
		int rc;
		struct fsafe_err fe;
		struct restore_dev rd;
		res->devices++;
		if (!name || !fsafe_name_ok(name, HAL_NAME_LEN - 1, &fe)) {
			diag_add(diags, DIAG_ERROR, "?", 0, 0, "name", "restore",
				 "state file entry %zu has no valid device name%s%s; nothing written", i,
				 name ? ": " : "", name ? fe.msg : "");
			res->failed++;
			continue;
		}
		if (!json_is_object(orig))
			rc = -EINVAL;
		else if ((rc = restore_dev_cfg(name, d, config, &rd, diags)))
			;
		else if (json_is_array(list))
			rc = replay(name, &rd, list, diags);
		else
			rc = reopen_and_write(name, &rd, orig, diags);
		if (rc == -EINVAL && !json_is_object(orig))
			diag_add(diags, DIAG_ERROR, name, 0, 0, "", "restore",
				 "state file entry has no original settings");
		if (rc)
			res->failed++;
		else
			res->restored++;
	}
	return res->failed ? -EIO : 0;
}
