#include "governor/statefile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
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
	*out = NULL;
	if (access(path, F_OK))
		return -errno;
	json_t *doc = json_load_file(path, 0, &e);
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

int statefile_remove(const char *path)
{
	if (unlink(path)) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	return fsync_dir_of(path);
}

/* The sysfs form: writes in the recorded order, each attempted. */
static int replay(const char *dev, const json_t *list, struct diag_list *diags)
{
	size_t i;
	json_t *e;
	int rc = 0;
	json_array_foreach(list, i, e) {
		const char *p = json_string_value(json_object_get(e, "path"));
		const char *v = json_string_value(json_object_get(e, "value"));
		int r = p && v ? sysfs_write_str(p, v) : -EINVAL;
		if (r) {
			diag_add(diags, DIAG_ERROR, dev, 0, 0, "", "restore", "restore[%zu] %s = %s: %s",
				 i, p ? p : "?", v ? v : "?", strerror(-r));
			if (!rc)
				rc = r;
		}
	}
	return rc;
}

static int reopen_and_write(const char *name, const json_t *d, const json_t *orig,
			    struct diag_list *diags)
{
	const char *keys[64], *vals[64];
	size_t n = 0;
	const char *k;
	json_t *v;
	json_t *opts = json_object_get(d, "options");
	json_object_foreach(opts, k, v) {
		if (n == 64 || !json_is_string(v))
			return -EINVAL;
		keys[n] = k;
		vals[n++] = json_string_value(v);
	}
	struct hal_dev_cfg cfg = { .name = name,
				   .backend = json_string_value(json_object_get(d, "backend")),
				   .n_opts = n,
				   .keys = keys,
				   .values = vals };
	struct hal_dev dev = { 0 };
	if (!cfg.backend)
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
	int rc = hal_open(&dev, &cfg, diags);
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

int statefile_restore(const json_t *doc, struct statefile_result *res, struct diag_list *diags)
{
	size_t i;
	json_t *d;
	memset(res, 0, sizeof(*res));
	json_array_foreach(json_object_get(doc, "devices"), i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *orig = json_object_get(d, "original");
		const json_t *list = json_object_get(orig, "restore");
		int rc;
		if (!name)
			name = "?";
		res->devices++;
		if (!json_is_object(orig))
			rc = -EINVAL;
		else if (json_is_array(list))
			rc = replay(name, list, diags);
		else
			rc = reopen_and_write(name, d, orig, diags);
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
