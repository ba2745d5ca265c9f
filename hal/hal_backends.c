/* Backend registry: one static table, by name. A backend that is not built
 * has a NULL ops pointer and still answers by name, so a config naming it
 * gets "not compiled in" rather than "unknown". Beside the ops tables'
 * declarations (hal_backends.h), so the interface (hal.c) does not depend on
 * the backends that implement it. */
#include "hal/hal_backends.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Adding a backend: its hal_<name>.c defines hal_<name>_ops (declared in
 * hal_backends.h) under its GOVD_WITH_* build option, and its row below
 * points at it under the same option. */
static const struct hal_backend_entry {
	const char *name;
	const struct hal_ops *ops;
} backends[] = {
	{ "sim", &hal_sim_ops },
#if GOVD_WITH_SYSFS
	{ "sysfs", &hal_sysfs_ops },
#else
	{ "sysfs", NULL },
#endif
#if GOVD_WITH_NVML
	{ "nvml", &hal_nvml_ops },
#else
	{ "nvml", NULL },
#endif
#if GOVD_WITH_MODBUS
	{ "modbus", &hal_modbus_ops },
#else
	{ "modbus", NULL },
#endif
#if GOVD_WITH_GPIOD
	{ "gpio", &hal_gpio_ops },
#else
	{ "gpio", NULL },
#endif
	{ "serving", &hal_serving_ops },
};
#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))

size_t hal_backend_names(const char **names, size_t max)
{
	for (size_t i = 0; i < N_BACKENDS && i < max; i++)
		names[i] = backends[i].name;
	return N_BACKENDS;
}

/* 0 with *out set, or -ENOTSUP / -ENOENT after a diag. */
static int lookup(const char *name, const struct hal_ops **out, struct diag_list *diags)
{
	*out = NULL;
	for (size_t i = 0; i < N_BACKENDS; i++) {
		if (strcmp(backends[i].name, name) != 0)
			continue;
		if (!backends[i].ops) {
			diag_add(diags, DIAG_ERROR, "hal", 0, 0, "", "backend-not-compiled-in",
				 "%s: backend not compiled in", name);
			return -ENOTSUP;
		}
		*out = backends[i].ops;
		return 0;
	}
	char list[256];
	size_t used = 0;
	list[0] = '\0';
	for (size_t i = 0; i < N_BACKENDS; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 backends[i].name);
	diag_add(diags, DIAG_ERROR, "hal", 0, 0, "", "unknown-backend",
		 "unknown backend '%s'; valid: %s", name, list);
	return -ENOENT;
}

const struct hal_ops *hal_backend_find(const char *name, struct diag_list *diags)
{
	const struct hal_ops *ops;
	lookup(name, &ops, diags);
	return ops;
}

int hal_check_options(const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	const struct hal_ops *ops;
	int rc = lookup(cfg->backend ? cfg->backend : "", &ops, diags);
	if (rc)
		return rc;
	return ops->check_options ? ops->check_options(cfg, diags) : 0;
}

int hal_expand(const struct hal_dev_cfg *cfg, struct hal_expansion *out, struct diag_list *diags)
{
	const struct hal_ops *ops;
	memset(out, 0, sizeof(*out));
	int rc = lookup(cfg->backend ? cfg->backend : "", &ops, diags);
	if (rc)
		return rc;
	return ops->expand ? ops->expand(cfg, out, diags) : 0;
}

int hal_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	memset(dev, 0, sizeof(*dev));
	const char *backend = cfg->backend ? cfg->backend : "";
	const struct hal_ops *ops;
	int rc = lookup(backend, &ops, diags);
	if (rc)
		return rc;
	snprintf(dev->name, sizeof(dev->name), "%s", cfg->name ? cfg->name : backend);
	dev->ops = ops;
	rc = ops->open(dev, cfg, diags);
	if (rc) {
		dev->ops = NULL;
		dev->priv = NULL;
	}
	return rc;
}

int hal_json_out(json_t *obj, char *out, size_t len)
{
	if (len)
		out[0] = '\0';
	if (!obj)
		return -EINVAL;
	size_t n = json_dumpb(obj, out, len, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (n == 0 || n >= len) { /* json_dumpb wrote a cut prefix, or nothing */
		if (len)
			out[0] = '\0';
		return n == 0 ? -EINVAL : -ENOSPC;
	}
	out[n] = '\0';
	return 0;
}
