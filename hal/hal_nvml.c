/* The NVML backend: libnvidia-ml.so.1 loaded with dlopen at open(), so govd
 * builds and runs without the NVIDIA driver. One hal_dev per GPU (option
 * `index` or `uuid`). Types and constants below are declared from the NVML API
 * reference (docs.nvidia.com/deploy/nvml-api, nvml.h of CUDA 12): only the
 * ones used here, with their documented numeric values. docs/backends.md
 * has the options, units, restore rules and the fake library for tests. */
#if GOVD_WITH_NVML
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal_backends.h"
#include "hal/backend_opts.h"
#include "hal/hal.h"

/* nvmlReturn_t */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_GPU_IS_LOST = 15,
};
/* nvmlTemperatureSensors_t, nvmlTemperatureThresholds_t, nvmlClockType_t,
 * nvmlPerfPolicyType_t, nvmlValueType_t */
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PERF_POLICY_THERMAL = 1 };
enum {
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
	NVML_VALUE_TYPE_SIGNED_INT = 5,
	NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
/* Field ids (nvmlDeviceGetFieldValues). */
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_POWER_INSTANT 186
/* nvmlClocksEventReasons (formerly ...ThrottleReasons) bits. */
#define NVML_CER_GPU_IDLE 0x1ull
#define NVML_CER_APP_CLOCKS 0x2ull
#define NVML_CER_SW_POWER_CAP 0x4ull
#define NVML_CER_HW_SLOWDOWN 0x8ull
#define NVML_CER_SW_THERMAL 0x20ull
#define NVML_CER_HW_THERMAL 0x40ull
#define NVML_CER_HW_POWER_BRAKE 0x80ull

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_dev;
typedef struct {
	unsigned long long reference_time_ns, violation_time_ns;
} nvml_violation;
typedef union {
	double d;
	unsigned int ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
	int si;
	unsigned short us;
} nvml_value;
typedef struct {
	unsigned int field_id, scope_id;
	long long timestamp_us, latency_us;
	int value_type;
	nvml_ret ret;
	nvml_value value;
} nvml_field_value;
typedef struct {
	unsigned int gpu, memory;
} nvml_utilization;
/* nvmlPciInfo_t (the layout nvmlDeviceGetPciInfo_v3 fills). */
typedef struct {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
} nvml_pci_info;

struct nvml_fns {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*get_count)(unsigned int *);
	nvml_ret (*get_handle)(unsigned int, nvml_dev *);
	nvml_ret (*get_handle_by_uuid)(const char *, nvml_dev *);
	nvml_ret (*get_uuid)(nvml_dev, char *, unsigned int);
	nvml_ret (*get_index)(nvml_dev, unsigned int *);
	nvml_ret (*pci_info)(nvml_dev, nvml_pci_info *);
	nvml_ret (*get_name)(nvml_dev, char *, unsigned int);
	nvml_ret (*temperature)(nvml_dev, int, unsigned int *);
	nvml_ret (*power_usage)(nvml_dev, unsigned int *);
	nvml_ret (*field_values)(nvml_dev, int, nvml_field_value *);
	nvml_ret (*total_energy)(nvml_dev, unsigned long long *);
	nvml_ret (*temp_threshold)(nvml_dev, int, unsigned int *);
	nvml_ret (*clock_info)(nvml_dev, int, unsigned int *);
	nvml_ret (*max_clock_info)(nvml_dev, int, unsigned int *);
	nvml_ret (*event_reasons)(nvml_dev, unsigned long long *);
	nvml_ret (*throttle_reasons)(nvml_dev, unsigned long long *);
	nvml_ret (*violation)(nvml_dev, int, nvml_violation *);
	nvml_ret (*utilization)(nvml_dev, nvml_utilization *);
	nvml_ret (*driver_version)(char *, unsigned int);
	nvml_ret (*vbios_version)(nvml_dev, char *, unsigned int);
	nvml_ret (*power_limit)(nvml_dev, unsigned int *);
	nvml_ret (*power_limit_constraints)(nvml_dev, unsigned int *, unsigned int *);
	nvml_ret (*power_limit_default)(nvml_dev, unsigned int *);
	nvml_ret (*set_power_limit)(nvml_dev, unsigned int);
	nvml_ret (*set_locked_clocks)(nvml_dev, unsigned int, unsigned int);
	nvml_ret (*reset_locked_clocks)(nvml_dev);
	nvml_ret (*supported_mem_clocks)(nvml_dev, unsigned int *, unsigned int *);
	nvml_ret (*supported_gfx_clocks)(nvml_dev, unsigned int, unsigned int *, unsigned int *);
	/* MIG (Ampere and later) */
	nvml_ret (*is_mig)(nvml_dev, unsigned int *);
	nvml_ret (*mig_parent)(nvml_dev, nvml_dev *);
	nvml_ret (*gpu_instance_id)(nvml_dev, unsigned int *);
	nvml_ret (*mig_mode)(nvml_dev, unsigned int *, unsigned int *);
};

static const struct {
	const char *name;
	size_t off;
	bool required;
} symbols[] = {
#define SYM(n, f, r) { n, offsetof(struct nvml_fns, f), r }
	SYM("nvmlInit_v2", init, true),
	SYM("nvmlShutdown", shutdown, true),
	SYM("nvmlErrorString", error_string, true),
	SYM("nvmlDeviceGetCount_v2", get_count, true),
	SYM("nvmlDeviceGetHandleByIndex_v2", get_handle, true),
	SYM("nvmlDeviceGetHandleByUUID", get_handle_by_uuid, false),
	SYM("nvmlDeviceGetUUID", get_uuid, false),
	SYM("nvmlDeviceGetIndex", get_index, false),
	SYM("nvmlDeviceGetPciInfo_v3", pci_info, false),
	SYM("nvmlDeviceGetName", get_name, true),
	SYM("nvmlDeviceGetTemperature", temperature, true),
	SYM("nvmlDeviceGetPowerUsage", power_usage, true),
	SYM("nvmlDeviceGetFieldValues", field_values, false),
	SYM("nvmlDeviceGetTotalEnergyConsumption", total_energy, false),
	SYM("nvmlDeviceGetTemperatureThreshold", temp_threshold, false),
	SYM("nvmlDeviceGetClockInfo", clock_info, false),
	SYM("nvmlDeviceGetMaxClockInfo", max_clock_info, false),
	SYM("nvmlDeviceGetCurrentClocksEventReasons", event_reasons, false),
	SYM("nvmlDeviceGetCurrentClocksThrottleReasons", throttle_reasons, false),
	SYM("nvmlDeviceGetViolationStatus", violation, false),
	SYM("nvmlDeviceGetUtilizationRates", utilization, false),
	SYM("nvmlSystemGetDriverVersion", driver_version, false),
	SYM("nvmlDeviceGetVbiosVersion", vbios_version, false),
	SYM("nvmlDeviceGetPowerManagementLimit", power_limit, false),
	SYM("nvmlDeviceGetPowerManagementLimitConstraints", power_limit_constraints, false),
	SYM("nvmlDeviceGetPowerManagementDefaultLimit", power_limit_default, false),
	SYM("nvmlDeviceSetPowerManagementLimit", set_power_limit, false),
	SYM("nvmlDeviceSetGpuLockedClocks", set_locked_clocks, false),
	SYM("nvmlDeviceResetGpuLockedClocks", reset_locked_clocks, false),
	SYM("nvmlDeviceGetSupportedMemoryClocks", supported_mem_clocks, false),
	SYM("nvmlDeviceGetSupportedGraphicsClocks", supported_gfx_clocks, false),
	SYM("nvmlDeviceIsMigDeviceHandle", is_mig, false),
	SYM("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", mig_parent, false),
	SYM("nvmlDeviceGetGpuInstanceId", gpu_instance_id, false),
	SYM("nvmlDeviceGetMigMode", mig_mode, false),
#undef SYM
};
#define N_SYMBOLS (sizeof(symbols) / sizeof(symbols[0]))

/* Readings that answered NOT_SUPPORTED once are skipped afterwards. */
enum {
	U_INSTANT = 1u << 0,
	U_MEM_TEMP = 1u << 1,
	U_ENERGY = 1u << 2,
	U_CLOCK = 1u << 3,
	U_REASONS = 1u << 4,
	U_VIOLATION = 1u << 5,
	U_UTIL = 1u << 6,
	U_LIMIT = 1u << 7,
};

struct nvml {
	struct hal_ops ops; /* per-device copy: missing capabilities NULL */
	const struct govd_clock *clock;
	void *lib;
	struct nvml_fns fn;
	nvml_dev dev; /* the physical GPU (a MIG child's parent) */
	unsigned index;
	bool initialised, use_instant, read_only;
	/* Opened by a MIG instance's UUID: read-only, readings of the parent
	 * (power, clocks and temperatures are the whole GPU's). */
	bool mig_child, mig_enabled;
	unsigned mig_gi_id;
	char mig_uuid[HAL_NAME_LEN];
	/* Option read_only or a dry run: not even close() or a restore writes. */
	bool never_write;
	uint32_t unsupported;
	uint32_t clk_min_mhz, clk_max_mhz; /* supported graphics clocks table */
	/* energy check, clamp edges */
	unsigned long long energy_prev_mj;
	bool energy_have_prev, hw_slow_prev;
	uint64_t clamp_events;
	/* originals, taken before the first write */
	bool orig_taken, orig_limit_ok, wrote_limit, wrote_clocks;
	unsigned orig_limit_mw;
	struct hal_faults flt;
	char err[256];
};

static struct nvml *nvml_of(struct hal_dev *dev)
{
	return dev->priv;
}

static uint64_t now_ms(const struct nvml *n)
{
	return govd_clock_now_or_mono_ms(n->clock);
}

static const char *estr(const struct nvml *n, nvml_ret r)
{
	const char *s = n->fn.error_string ? n->fn.error_string(r) : NULL;
	return s ? s : "unknown NVML error";
}

static int to_errno(nvml_ret r)
{
	switch (r) {
	case NVML_SUCCESS:
		return 0;
	case NVML_ERROR_INVALID_ARGUMENT:
		return -EINVAL;
	case NVML_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case NVML_ERROR_NO_PERMISSION:
		return -EPERM;
	case NVML_ERROR_NOT_FOUND:
		return -ENODEV;
	case NVML_ERROR_GPU_IS_LOST:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/* A read's outcome: true on success; NOT_SUPPORTED marks the reading
 * unsupported (invalid from now on, not a fault); anything else is a fault. */
static bool read_ok(struct nvml *n, nvml_ret r, uint32_t bit, const char *sym)
{
	if (r == NVML_SUCCESS)
		return true;
	if (r == NVML_ERROR_NOT_SUPPORTED)
		n->unsupported |= bit;
	else
		hal_fault(&n->flt, "%.40s: %s", sym, estr(n, r));
	return false;
}

/* A write's outcome; NO_PERMISSION turns the device read-only. */
static int write_result(struct nvml *n, nvml_ret r, const char *sym)
{
	if (r == NVML_SUCCESS)
		return 0;
	snprintf(n->err, sizeof(n->err), "nvml: %s: %s%s", sym, estr(n, r),
		 r == NVML_ERROR_NO_PERMISSION ? " (device now read-only; run govd as root)" : "");
	if (r == NVML_ERROR_NO_PERMISSION)
		n->read_only = true;
	return to_errno(r);
}

static int check_writable(struct nvml *n)
{
	n->err[0] = '\0';
	if (!n->read_only)
		return 0;
	snprintf(n->err, sizeof(n->err),
		 "nvml: GPU %u is read-only (an earlier write was denied, or option read_only)",
		 n->index);
	return -EPERM;
}

static void put(struct hal_value *hv, int64_t v, uint64_t t)
{
	hv->v = v;
	hv->t_ms = t;
	hv->valid = true;
}

static bool field_i64(const nvml_field_value *f, int64_t *out)
{
	if (f->ret != NVML_SUCCESS)
		return false;
	switch (f->value_type) {
	case NVML_VALUE_TYPE_DOUBLE:
		*out = (int64_t)f->value.d;
		return true;
	case NVML_VALUE_TYPE_UNSIGNED_INT:
		*out = f->value.ui;
		return true;
	case NVML_VALUE_TYPE_UNSIGNED_LONG:
		*out = (int64_t)f->value.ul;
		return true;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		*out = (int64_t)f->value.ull;
		return true;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		*out = f->value.sll;
		return true;
	case NVML_VALUE_TYPE_SIGNED_INT:
		*out = f->value.si;
		return true;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT:
		*out = f->value.us;
		return true;
	default:
		return false;
	}
}

static void put_temp(struct nvml *n, struct hal_value *hv, enum hal_temp which, int64_t c,
		     const char *what, uint64_t t)
{
	int64_t max_mc = hal_temp_max_mc(which);
	/* compare in C: a huge c must not overflow c * 1000 */
	if (c < HAL_TEMP_MIN_MC / 1000 || c > max_mc / 1000)
		hal_fault(&n->flt, "nvml %s: %lld C out of [%g, %g]", what, (long long)c, HAL_TEMP_MIN_MC / 1e3,
			  max_mc / 1e3);
	else
		put(hv, c * 1000, t);
}

/* ---- sample --------------------------------------------------------- */

static void sample_fields(struct nvml *n, struct hal_sample *out, uint64_t t)
{
	nvml_field_value fv[2];
	int nf = 0;
	memset(fv, 0, sizeof(fv));
	if (n->use_instant && !(n->unsupported & U_INSTANT))
		fv[nf++].field_id = NVML_FI_DEV_POWER_INSTANT;
	if (!(n->unsupported & U_MEM_TEMP))
		fv[nf++].field_id = NVML_FI_DEV_MEMORY_TEMP;
	if (!n->fn.field_values || nf == 0)
		return;
	nvml_ret r = n->fn.field_values(n->dev, nf, fv);
	if (!read_ok(n, r, U_INSTANT | U_MEM_TEMP, "nvmlDeviceGetFieldValues"))
		return;
	for (int i = 0; i < nf; i++) {
		int64_t v;
		bool ok = field_i64(&fv[i], &v);
		if (fv[i].field_id == NVML_FI_DEV_POWER_INSTANT) {
			if (!ok)
				n->unsupported |= U_INSTANT; /* fall back to the 1 s average */
			else if (v < 0)
				hal_fault(&n->flt, "nvml power instant: negative %lld mW", (long long)v);
			else
				put(&out->power_mw[HAL_RAIL_ACCEL], v, t);
		} else if (ok) {
			put_temp(n, &out->temp_mc[HAL_TEMP_MEMORY], HAL_TEMP_MEMORY, v, "memory temp", t);
		} else if (fv[i].ret == NVML_ERROR_NOT_SUPPORTED) {
			n->unsupported |= U_MEM_TEMP;
		}
	}
}

static uint32_t map_reasons(unsigned long long r)
{
	uint32_t t = 0;
	if (r & NVML_CER_SW_POWER_CAP)
		t |= HAL_THR_POWER_CAP;
	if (r & NVML_CER_SW_THERMAL)
		t |= HAL_THR_SW_THERMAL;
	if (r & (NVML_CER_HW_SLOWDOWN | NVML_CER_HW_THERMAL | NVML_CER_HW_POWER_BRAKE))
		t |= HAL_THR_HW_SLOWDOWN;
	if (r & NVML_CER_APP_CLOCKS)
		t |= HAL_THR_APP_CLOCKS;
	if (r & NVML_CER_GPU_IDLE)
		t |= HAL_THR_IDLE;
	return t;
}

static int nvml_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct nvml *n = nvml_of(dev);
	memset(out, 0, sizeof(*out));
	uint64_t t = now_ms(n);
	out->t_ms = t;
	unsigned u;
	unsigned long long ull;
	nvml_ret r;

	sample_fields(n, out, t);
	if (!out->power_mw[HAL_RAIL_ACCEL].valid) {
		r = n->fn.power_usage(n->dev, &u);
		if (read_ok(n, r, 0, "nvmlDeviceGetPowerUsage"))
			put(&out->power_mw[HAL_RAIL_ACCEL], u, t);
	}
	if (n->fn.total_energy && !(n->unsupported & U_ENERGY)) {
		r = n->fn.total_energy(n->dev, &ull);
		if (read_ok(n, r, U_ENERGY, "nvmlDeviceGetTotalEnergyConsumption")) {
			if (n->energy_have_prev && ull < n->energy_prev_mj)
				hal_fault(&n->flt, "nvml energy: counter backwards to %llu mJ", ull);
			else
				put(&out->energy_mj[HAL_RAIL_ACCEL], (int64_t)ull, t);
			n->energy_prev_mj = ull;
			n->energy_have_prev = true;
		}
	}
	r = n->fn.temperature(n->dev, NVML_TEMPERATURE_GPU, &u);
	if (read_ok(n, r, 0, "nvmlDeviceGetTemperature"))
		put_temp(n, &out->temp_mc[HAL_TEMP_JUNCTION], HAL_TEMP_JUNCTION, u, "gpu temp", t);
	if (n->fn.clock_info && !(n->unsupported & U_CLOCK)) {
		r = n->fn.clock_info(n->dev, NVML_CLOCK_SM, &u);
		if (read_ok(n, r, U_CLOCK, "nvmlDeviceGetClockInfo"))
			put(&out->clk_khz, (int64_t)u * 1000, t);
	}
	if (n->fn.power_limit && !(n->unsupported & U_LIMIT)) {
		r = n->fn.power_limit(n->dev, &u);
		if (read_ok(n, r, U_LIMIT, "nvmlDeviceGetPowerManagementLimit"))
			put(&out->power_limit_mw, u, t);
	}
	if (n->fn.utilization && !(n->unsupported & U_UTIL)) {
		nvml_utilization ut;
		r = n->fn.utilization(n->dev, &ut);
		if (read_ok(n, r, U_UTIL, "nvmlDeviceGetUtilizationRates"))
			put(&out->util_pct, ut.gpu, t);
	}
	nvml_ret (*reasons)(nvml_dev, unsigned long long *) =
		n->fn.event_reasons ? n->fn.event_reasons : n->fn.throttle_reasons;
	if (reasons && !(n->unsupported & U_REASONS)) {
		r = reasons(n->dev, &ull);
		if (read_ok(n, r, U_REASONS, "nvmlDeviceGetCurrentClocksEventReasons")) {
			out->throttle = map_reasons(ull);
			bool hw = out->throttle & HAL_THR_HW_SLOWDOWN;
			n->clamp_events += hw && !n->hw_slow_prev;
			n->hw_slow_prev = hw;
		}
	}
	out->clamp_events = n->clamp_events;
	if (n->fn.violation && !(n->unsupported & U_VIOLATION)) {
		nvml_violation v;
		r = n->fn.violation(n->dev, NVML_PERF_POLICY_THERMAL, &v);
		if (read_ok(n, r, U_VIOLATION, "nvmlDeviceGetViolationStatus"))
			out->clamp_time_ms = v.violation_time_ns / 1000000u;
	}
	hal_faults_put(&n->flt, out);
	return 0;
}

/* ---- limits --------------------------------------------------------- */

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

/* The graphics clocks NVML accepts at the highest memory clock, sorted. */
static int clock_table(struct nvml *n, unsigned *clk, unsigned *count)
{
	unsigned mem[64], nm = 64, cap = *count;
	*count = 0;
	if (!n->fn.supported_mem_clocks || !n->fn.supported_gfx_clocks)
		return -EOPNOTSUPP;
	nvml_ret r = n->fn.supported_mem_clocks(n->dev, &nm, mem);
	if (r != NVML_SUCCESS || nm == 0) {
		snprintf(n->err, sizeof(n->err), "nvml: nvmlDeviceGetSupportedMemoryClocks: %s",
			 r ? estr(n, r) : "empty list");
		return r ? to_errno(r) : -ENODATA;
	}
	unsigned mem_max = 0;
	for (unsigned i = 0; i < nm && i < 64; i++)
		mem_max = mem[i] > mem_max ? mem[i] : mem_max;
	unsigned ng = cap;
	r = n->fn.supported_gfx_clocks(n->dev, mem_max, &ng, clk);
	if (r != NVML_SUCCESS || ng == 0) {
		snprintf(n->err, sizeof(n->err), "nvml: nvmlDeviceGetSupportedGraphicsClocks: %s",
			 r ? estr(n, r) : "empty list");
		return r ? to_errno(r) : -ENODATA;
	}
	*count = ng < cap ? ng : cap;
	qsort(clk, *count, sizeof(*clk), cmp_uint);
	return 0;
}

static int nvml_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	struct nvml *n = nvml_of(dev);
	memset(out, 0, sizeof(*out));
	n->err[0] = '\0';
	unsigned clk[512], nc = 512, a, b;
	if (clock_table(n, clk, &nc) == 0) {
		out->clk_min_khz = clk[0] * 1000u;
		out->clk_max_khz = clk[nc - 1] * 1000u;
		for (unsigned i = 1; i < nc; i++) {
			unsigned d = (clk[i] - clk[i - 1]) * 1000u;
			if (d && (!out->clk_step_khz || d < out->clk_step_khz))
				out->clk_step_khz = d;
		}
	}
	if (n->fn.max_clock_info && n->fn.max_clock_info(n->dev, NVML_CLOCK_SM, &a) == NVML_SUCCESS)
		out->clk_default_max_khz = a * 1000u;
	if (n->fn.power_limit_constraints &&
	    n->fn.power_limit_constraints(n->dev, &a, &b) == NVML_SUCCESS) {
		out->power_limit_min_mw = a;
		out->power_limit_max_mw = b;
	}
	if (n->fn.power_limit_default && n->fn.power_limit_default(n->dev, &a) == NVML_SUCCESS)
		out->power_limit_default_mw = a;
	if (n->fn.temp_threshold) {
		if (n->fn.temp_threshold(n->dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &a) ==
		    NVML_SUCCESS)
			out->slowdown_mc = (int32_t)a * 1000;
		if (n->fn.temp_threshold(n->dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &a) ==
		    NVML_SUCCESS)
			out->shutdown_mc = (int32_t)a * 1000;
	}
	char buf[96];
	if (n->fn.get_name(n->dev, buf, sizeof(buf)) == NVML_SUCCESS)
		snprintf(out->model, sizeof(out->model), "%.47s", buf);
	if (n->fn.driver_version && n->fn.driver_version(buf, sizeof(buf)) == NVML_SUCCESS)
		snprintf(out->driver_version, sizeof(out->driver_version), "%.47s", buf);
	if (n->fn.vbios_version && n->fn.vbios_version(n->dev, buf, sizeof(buf)) == NVML_SUCCESS)
		snprintf(out->firmware_version, sizeof(out->firmware_version), "%.47s", buf);
	if (n->fn.get_uuid && n->fn.get_uuid(n->dev, buf, sizeof(buf)) == NVML_SUCCESS)
		snprintf(out->uuid, sizeof(out->uuid), "%.47s", buf);
	nvml_pci_info pci;
	if (n->fn.pci_info && n->fn.pci_info(n->dev, &pci) == NVML_SUCCESS) {
		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", pci.bus_id);
	}
	out->have_index = true;
	out->index = n->index;
	if (n->mig_child) {
		snprintf(out->mig_uuid, sizeof(out->mig_uuid), "%s", n->mig_uuid);
		out->mig_gi_id = (int32_t)n->mig_gi_id;
	}
	out->mig_enabled = n->mig_enabled;
	return 0;
}

/* ---- writes, originals, restore ------------------------------------- */

/* NVML has no getter for locked clocks: the original state is taken to be
 * unlocked (the driver default), and close() resets them. */
static int take_original(struct nvml *n)
{
	if (n->orig_taken)
		return 0;
	if (n->fn.power_limit) {
		nvml_ret r = n->fn.power_limit(n->dev, &n->orig_limit_mw);
		n->orig_limit_ok = r == NVML_SUCCESS;
	}
	n->orig_taken = true;
	return 0;
}

static int nvml_set_power_limit(struct hal_dev *dev, uint32_t limit_mw)
{
	struct nvml *n = nvml_of(dev);
	int rc = check_writable(n);
	if (rc)
		return rc;
	unsigned lo, hi;
	if (n->fn.power_limit_constraints &&
	    n->fn.power_limit_constraints(n->dev, &lo, &hi) == NVML_SUCCESS &&
	    (limit_mw < lo || limit_mw > hi)) {
		snprintf(n->err, sizeof(n->err), "nvml: power limit %u mW outside [%u, %u] mW",
			 limit_mw, lo, hi);
		return -EINVAL;
	}
	take_original(n);
	if (!n->orig_limit_ok) {
		snprintf(n->err, sizeof(n->err),
			 "nvml: cannot record the original power limit "
			 "(nvmlDeviceGetPowerManagementLimit failed): refusing to change it");
		return -EIO;
	}
	rc = write_result(n, n->fn.set_power_limit(n->dev, limit_mw),
			  "nvmlDeviceSetPowerManagementLimit");
	if (rc == 0)
		n->wrote_limit = true;
	return rc;
}

static int nvml_set_clock_range(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz)
{
	struct nvml *n = nvml_of(dev);
	int rc = check_writable(n);
	if (rc)
		return rc;
	uint32_t lo = min_khz / 1000u, hi = max_khz / 1000u;
	if (lo > hi || (n->clk_max_mhz && (lo < n->clk_min_mhz || hi > n->clk_max_mhz))) {
		snprintf(n->err, sizeof(n->err),
			 "nvml: clock range [%u, %u] MHz invalid (supported %u..%u MHz)", lo, hi,
			 n->clk_min_mhz, n->clk_max_mhz);
		return -EINVAL;
	}
	take_original(n);
	rc = write_result(n, n->fn.set_locked_clocks(n->dev, lo, hi), "nvmlDeviceSetGpuLockedClocks");
	if (rc == 0)
		n->wrote_clocks = true;
	return rc;
}

static int nvml_reset_clocks(struct hal_dev *dev)
{
	struct nvml *n = nvml_of(dev);
	int rc = check_writable(n);
	if (rc)
		return rc;
	take_original(n);
	return write_result(n, n->fn.reset_locked_clocks(n->dev), "nvmlDeviceResetGpuLockedClocks");
}

static int nvml_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct nvml *n = nvml_of(dev);
	take_original(n);
	char name[96] = "", uuid[96] = "";
	n->fn.get_name(n->dev, name, sizeof(name));
	if (n->fn.get_uuid && n->fn.get_uuid(n->dev, uuid, sizeof(uuid)) != NVML_SUCCESS)
		uuid[0] = '\0';
	json_t *limit = n->orig_limit_ok ? json_integer((json_int_t)n->orig_limit_mw) : json_null();
	return hal_json_out(json_pack("{s:s, s:I, s:s, s:s, s:o, s:s}", "backend", "nvml", "index",
				      (json_int_t)n->index, "uuid", uuid, "name", name,
				      "power_limit_mw", limit, "locked_clocks", "reset"),
			    json, len);
}

/* After a crash the device still carries the governed limit and locked
 * clocks; the state file's record holds what was there before. */
static int nvml_adopt_original(struct hal_dev *dev, const char *text)
{
	struct nvml *n = nvml_of(dev);
	json_error_t e;
	int rc = 0;
	n->err[0] = '\0';
	json_t *j = json_loads(text, 0, &e);
	if (!json_is_object(j)) {
		snprintf(n->err, sizeof(n->err), "nvml: recorded originals do not parse: %s", e.text);
		rc = -EINVAL;
		goto out;
	}
	const char *backend = json_string_value(json_object_get(j, "backend"));
	const json_t *index = json_object_get(j, "index");
	const json_t *limit = json_object_get(j, "power_limit_mw");
	const char *name = json_string_value(json_object_get(j, "name"));
	if (!backend || strcmp(backend, "nvml") || !json_is_integer(index) ||
	    !(json_is_integer(limit) || json_is_null(limit))) {
		snprintf(n->err, sizeof(n->err),
			 "nvml: recorded originals are not an nvml record (want backend \"nvml\", "
			 "index, power_limit_mw)");
		rc = -EINVAL;
		goto out;
	}
	char now[96] = "", uuid_now[96] = "";
	n->fn.get_name(n->dev, now, sizeof(now));
	if (n->fn.get_uuid && n->fn.get_uuid(n->dev, uuid_now, sizeof(uuid_now)) != NVML_SUCCESS)
		uuid_now[0] = '\0';
	/* Both UUIDs known: they decide (the index may have moved with the PCI
	 * enumeration); otherwise the index and the name. */
	const char *uuid_rec = json_string_value(json_object_get(j, "uuid"));
	bool by_uuid = uuid_rec && uuid_rec[0] && uuid_now[0];
	if ((by_uuid ? strcmp(uuid_rec, uuid_now) != 0
		     : json_integer_value(index) != (json_int_t)n->index) ||
	    (name && strcmp(name, now))) {
		snprintf(n->err, sizeof(n->err),
			 "nvml: recorded originals are GPU %lld '%.60s', this is GPU %u '%.60s': "
			 "not restoring another GPU's settings",
			 (long long)json_integer_value(index), name ? name : "?", n->index, now);
		rc = -ENODEV;
		goto out;
	}
	json_int_t mw = json_is_integer(limit) ? json_integer_value(limit) : -1;
	if (json_is_integer(limit) && (mw <= 0 || mw > HAL_POWER_MAX_MW)) {
		snprintf(n->err, sizeof(n->err), "nvml: recorded power limit %lld mW is absurd",
			 (long long)mw);
		rc = -EINVAL;
		goto out;
	}
	n->orig_taken = true;
	n->orig_limit_ok = mw > 0;
	n->orig_limit_mw = mw > 0 ? (unsigned)mw : 0;
	/* The crashed run may have changed both: close() restores both. */
	n->wrote_limit = n->orig_limit_ok;
	n->wrote_clocks = n->fn.reset_locked_clocks != NULL;
out:
	json_decref(j);
	return rc;
}

static const char *nvml_last_error(struct hal_dev *dev)
{
	return nvml_of(dev)->err;
}

/* ---- open / close --------------------------------------------------- */

static void release(struct nvml *n)
{
	if (n->initialised)
		n->fn.shutdown();
	if (n->lib)
		dlclose(n->lib);
	free(n);
}

/* Puts back what this backend changed (found at open, or adopted from a
 * crashed run's record), even after a later write turned the device
 * read-only; what went back is no longer "changed". */
static int nvml_restore(struct hal_dev *dev)
{
	struct nvml *n = nvml_of(dev);
	int rc = 0, r;
	if (n->never_write)
		return 0; /* nothing was written, and nothing may be */
	if (n->wrote_clocks && n->fn.reset_locked_clocks) {
		r = write_result(n, n->fn.reset_locked_clocks(n->dev), "nvmlDeviceResetGpuLockedClocks");
		if (r)
			rc = r;
		else
			n->wrote_clocks = false;
	}
	if (n->wrote_limit && n->orig_limit_ok) {
		r = write_result(n, n->fn.set_power_limit(n->dev, n->orig_limit_mw),
				 "nvmlDeviceSetPowerManagementLimit");
		if (r) {
			if (!rc)
				rc = r;
		} else {
			n->wrote_limit = false;
		}
	}
	return rc;
}

static void nvml_close(struct hal_dev *dev)
{
	struct nvml *n = nvml_of(dev);
	if (!n)
		return;
	nvml_restore(dev);
	release(n);
	dev->priv = NULL;
}

/* The handle of the GPU with this UUID, and its index (for the restore
 * record and the metrics' gpu label). Not found: the UUIDs present. */
static int open_by_uuid(struct nvml *n, const char *uuid, unsigned count, const char *src,
			struct diag_list *diags)
{
	if (!n->fn.get_handle_by_uuid || !n->fn.get_index || !n->fn.get_uuid) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.uuid", "nvml-symbol-missing",
			 "nvml: this driver has no nvmlDeviceGetHandleByUUID/GetIndex/GetUUID: "
			 "select the GPU by options.index");
		return -ENOSYS;
	}
	nvml_ret r = n->fn.get_handle_by_uuid(uuid, &n->dev);
	unsigned is_mig = 0;
	if (r == NVML_SUCCESS && n->fn.is_mig && n->fn.is_mig(n->dev, &is_mig) == NVML_SUCCESS &&
	    is_mig) {
		/* A MIG instance: its readings and settings are the parent's */
		nvml_dev child = n->dev;
		if (!n->fn.mig_parent || (r = n->fn.mig_parent(child, &n->dev)) != NVML_SUCCESS) {
			diag_add(diags, DIAG_ERROR, src, 0, 0, "options.uuid", "nvml-mig",
				 "nvml: %.60s is a MIG instance and its parent GPU cannot be found "
				 "(nvmlDeviceGetDeviceHandleFromMigDeviceHandle: %s)",
				 uuid, n->fn.mig_parent ? estr(n, r) : "missing");
			return -ENODEV;
		}
		n->mig_child = true;
		snprintf(n->mig_uuid, sizeof(n->mig_uuid), "%.47s", uuid);
		if (!n->fn.gpu_instance_id || n->fn.gpu_instance_id(child, &n->mig_gi_id) != NVML_SUCCESS)
			n->mig_gi_id = 0;
	}
	if (r != NVML_SUCCESS) {
		char present[256] = "";
		size_t off = 0;
		for (unsigned i = 0; i < count && i < 8 && off < sizeof(present); i++) {
			nvml_dev d;
			char u[96];
			if (n->fn.get_handle(i, &d) != NVML_SUCCESS ||
			    n->fn.get_uuid(d, u, sizeof(u)) != NVML_SUCCESS)
				continue;
			int w = snprintf(present + off, sizeof(present) - off, "%s%u=%s",
					 off ? ", " : "", i, u);
			off += w > 0 ? (size_t)w : 0;
		}
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.uuid", "nvml-no-gpu",
			 "nvml: no GPU with UUID %.60s (%s; present: %s)", uuid, estr(n, r),
			 present[0] ? present : "none");
		return r == NVML_ERROR_NOT_FOUND ? -ENODEV : to_errno(r);
	}
	r = n->fn.get_index(n->dev, &n->index);
	if (r != NVML_SUCCESS) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.uuid", "nvml-handle",
			 "nvml: nvmlDeviceGetIndex(%.60s): %s", uuid, estr(n, r));
		return to_errno(r);
	}
	return 0;
}

/* The options, as open and check_options judge them. */
struct nvml_opts {
	uint32_t index;
	int power_mode; /* 0 average, 1 instant */
	bool read_only, all;
	const char *uuid, *libname;
};

static int nvml_parse_opts(const struct hal_dev_cfg *cfg, struct diag_list *diags,
			   struct nvml_opts *out)
{
	static const char *const keys[] = { "index", "uuid",	  "all", "library",
					    "power", "read_only", NULL };
	/* instant: NVML_FI_DEV_POWER_INSTANT, falling back to the 1 s average;
	 * average: nvmlDeviceGetPowerUsage. */
	static const char *const power_modes[] = { "average", "instant", NULL };
	struct bopts o;
	bopts_init(&o, cfg, diags, "nvml");
	bopts_check_keys(&o, keys);
	*out = (struct nvml_opts){ .power_mode = 1 };
	bopts_u32(&o, "index", 0, 1024, 0, &out->index);
	bopts_enum(&o, "power", power_modes, 1, &out->power_mode);
	bopts_bool(&o, "read_only", false, &out->read_only);
	/* every GPU of the node, one device each, named by its UUID */
	bopts_bool(&o, "all", false, &out->all);
	if (out->all && (bopts_has(&o, "index") || bopts_has(&o, "uuid")))
		bopts_error(&o, "all", "nvml-all-and-one",
			    "options.all selects every GPU: give it without index or uuid");
	/* A UUID names the GPU itself; an index can change with the PCI
	 * enumeration order (a GPU added or removed, a firmware setting). */
	out->uuid = bopts_str(&o, "uuid", NULL);
	if (out->uuid && bopts_has(&o, "index"))
		bopts_error(&o, "uuid", "nvml-index-and-uuid",
			    "give options.index or options.uuid, not both");
	else if (out->uuid && strncmp(out->uuid, "GPU-", 4) && strncmp(out->uuid, "MIG-", 4))
		bopts_error(&o, "uuid", "nvml-bad-uuid",
			    "'%.60s': an NVML UUID starts with GPU- (nvidia-smi -L lists them)",
			    out->uuid);
	out->libname = bopts_str(&o, "library", "libnvidia-ml.so.1");
	return o.errors ? -EINVAL : 0;
}

/* The library loads and has every required symbol (0), else a diag and
 * -ENOENT / -ENOSYS; *lib_out (may be NULL) gets the handle, else it is
 * closed. */
static int nvml_load(const char *libname, struct diag_list *diags, void **lib_out)
{
	void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		diag_add(diags, DIAG_ERROR, "nvml", 0, 0, "options.library", "nvml-not-found",
			 "nvml: %s not found (dlopen: %s)", libname, dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < N_SYMBOLS; i++)
		if (symbols[i].required && !dlsym(lib, symbols[i].name)) {
			diag_add(diags, DIAG_ERROR, "nvml", 0, 0, "options.library",
				 "nvml-symbol-missing", "nvml: %s has no symbol %s (driver too old?)",
				 libname, symbols[i].name);
			dlclose(lib);
			return -ENOSYS;
		}
	if (lib_out)
		*lib_out = lib;
	else
		dlclose(lib);
	return 0;
}

/* Every symbol of the table from the loaded library (an optional one
 * missing: NULL). */
static void resolve_symbols(struct nvml_fns *fn, void *lib)
{
	for (size_t i = 0; i < N_SYMBOLS; i++) {
		void *sym = dlsym(lib, symbols[i].name);
		/* POSIX dlsym: an object pointer that holds a function address. */
		memcpy((char *)fn + symbols[i].off, &sym, sizeof(sym));
	}
}

/* govd --check: the options, and that the NVIDIA driver's library loads
 * with what govd needs (no GPU is touched: nvmlInit is not called). */
static int nvml_check_options(const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	struct nvml_opts no;
	int rc = nvml_parse_opts(cfg, diags, &no);
	if (rc)
		return rc;
	return nvml_load(no.libname, diags, NULL);
}

static int nvml_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	struct nvml_opts no;
	if (nvml_parse_opts(cfg, diags, &no))
		return -EINVAL;
	/* where diags point: the device's name, else the backend's */
	const char *src = cfg && cfg->name && cfg->name[0] ? cfg->name : "nvml";
	uint32_t index = no.index;
	int power_mode = no.power_mode;
	bool read_only = no.read_only;
	const char *uuid = no.uuid;
	if (no.all) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.all", "nvml-all-unexpanded",
			 "nvml: options.all stands for every GPU; govd opens one device per GPU "
			 "(hal_expand), not the selector itself");
		return -EINVAL;
	}
	struct nvml *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->clock = cfg->clock;
	int rc = -EINVAL;
	n->index = index;
	n->use_instant = power_mode == 1;
	n->read_only = n->never_write = read_only || cfg->read_only;

	rc = nvml_load(no.libname, diags, &n->lib);
	if (rc)
		goto err_free;
	resolve_symbols(&n->fn, n->lib);
	nvml_ret r = n->fn.init();
	if (r != NVML_SUCCESS) {
		diag_add(diags, DIAG_ERROR, "nvml", 0, 0, "", "nvml-init",
			 "nvml: nvmlInit_v2: %s", estr(n, r));
		rc = to_errno(r);
		goto err_release;
	}
	n->initialised = true;
	unsigned count = 0;
	r = n->fn.get_count(&count);
	if (r != NVML_SUCCESS || (!uuid && n->index >= count)) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.index", "nvml-no-gpu",
			 "nvml: GPU index %u not present (%u GPUs%s%s)", n->index, count,
			 r ? ": " : "", r ? estr(n, r) : "");
		rc = -ENODEV;
		goto err_release;
	}
	if (uuid) {
		if ((rc = open_by_uuid(n, uuid, count, src, diags)))
			goto err_release;
	} else if ((r = n->fn.get_handle(n->index, &n->dev)) != NVML_SUCCESS) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.index", "nvml-handle",
			 "nvml: nvmlDeviceGetHandleByIndex_v2(%u): %s", n->index, estr(n, r));
		rc = to_errno(r);
		goto err_release;
	}
	if (n->mig_child && !n->never_write) {
		char parent[96] = "";
		if (n->fn.get_uuid && n->fn.get_uuid(n->dev, parent, sizeof(parent)) != NVML_SUCCESS)
			parent[0] = '\0';
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.uuid", "nvml-mig-child",
			 "nvml: %.47s is MIG instance %u of GPU %u (%.47s): its clocks and power "
			 "limit are the whole GPU's, shared by every instance; govd does not set them "
			 "from one instance: govern the parent (options.uuid: %.47s), or watch this "
			 "instance with options.read_only: true",
			 n->mig_uuid, n->mig_gi_id, n->index, parent, parent);
		rc = -EPERM;
		goto err_release;
	}
	unsigned mig_cur = 0, mig_pend = 0;
	if (n->fn.mig_mode && n->fn.mig_mode(n->dev, &mig_cur, &mig_pend) == NVML_SUCCESS)
		n->mig_enabled = mig_cur == 1;
	unsigned clk[512], nc = 512;
	if (clock_table(n, clk, &nc) == 0) {
		n->clk_min_mhz = clk[0];
		n->clk_max_mhz = clk[nc - 1];
	}
	n->err[0] = '\0';
	n->ops = hal_nvml_ops;
	if (n->mig_child) {
		/* read-only by the check above: nothing to set, nothing to restore */
		n->ops.set_clock_range = NULL;
		n->ops.reset_clocks = NULL;
		n->ops.set_power_limit = NULL;
	} else if (n->mig_enabled) {
		/* NVIDIA documents clock locking as unavailable on MIG-partitioned
		 * GPUs (CUPTI clock control); the power limit stays the GPU's */
		n->ops.set_clock_range = NULL;
		n->ops.reset_clocks = NULL;
		diag_add(diags, DIAG_WARNING, src, 0, 0, "", "nvml-mig-mode",
			 "nvml: GPU %u is in MIG mode: its clocks cannot be locked; govd governs its "
			 "power limit only (for every instance on it)",
			 n->index);
	}
	if (!n->fn.set_locked_clocks || !n->fn.reset_locked_clocks) {
		n->ops.set_clock_range = NULL;
		n->ops.reset_clocks = NULL;
		diag_add(diags, DIAG_WARNING, "nvml", 0, 0, "options.library", "nvml-symbol-missing",
			 "nvml: no nvmlDeviceSetGpuLockedClocks/ResetGpuLockedClocks: clocks are "
			 "read-only");
	}
	if (!n->fn.set_power_limit || !n->fn.power_limit) {
		n->ops.set_power_limit = NULL;
		diag_add(diags, DIAG_WARNING, "nvml", 0, 0, "options.library", "nvml-symbol-missing",
			 "nvml: no nvmlDeviceSetPowerManagementLimit/GetPowerManagementLimit: the "
			 "power limit is read-only");
	}
	dev->priv = n;
	dev->ops = &n->ops;
	return 0;

err_release:
	release(n);
	return rc;
err_free:
	free(n);
	return rc;
}

/* options.all: every GPU NVML lists (physical GPUs; MIG instances are not
 * listed by index), as one device each named and selected by its UUID.
 * Reads only: nvmlInit, the count, the handles and their UUIDs. */
static int nvml_expand(const struct hal_dev_cfg *cfg, struct hal_expansion *out,
		       struct diag_list *diags)
{
	struct nvml_opts no;
	int rc = nvml_parse_opts(cfg, diags, &no);
	if (rc || !no.all)
		return rc;
	const char *src = cfg && cfg->name && cfg->name[0] ? cfg->name : "nvml";
	struct nvml n = { 0 };
	if ((rc = nvml_load(no.libname, diags, &n.lib)))
		return rc;
	resolve_symbols(&n.fn, n.lib);
	unsigned count = 0;
	nvml_ret r = n.fn.init();
	if (r != NVML_SUCCESS) {
		diag_add(diags, DIAG_ERROR, "nvml", 0, 0, "", "nvml-init", "nvml: nvmlInit_v2: %s",
			 estr(&n, r));
		rc = to_errno(r);
		goto out_close;
	}
	if (!n.fn.get_uuid) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.all", "nvml-symbol-missing",
			 "nvml: this driver has no nvmlDeviceGetUUID: name the GPUs by options.index");
		rc = -ENOSYS;
		goto out_shutdown;
	}
	if ((r = n.fn.get_count(&count)) != NVML_SUCCESS || count == 0 || count > HAL_MAX_EXPAND) {
		diag_add(diags, DIAG_ERROR, src, 0, 0, "options.all", "nvml-no-gpu",
			 "nvml: options.all: %u GPUs%s%s (1..%d governed)", count, r ? ": " : "",
			 r ? estr(&n, r) : "", HAL_MAX_EXPAND);
		rc = -ENODEV;
		goto out_shutdown;
	}
	snprintf(out->drop_key, sizeof(out->drop_key), "all");
	snprintf(out->set_key, sizeof(out->set_key), "uuid");
	for (unsigned i = 0; i < count; i++) {
		nvml_dev d;
		char u[96];
		if ((r = n.fn.get_handle(i, &d)) != NVML_SUCCESS ||
		    (r = n.fn.get_uuid(d, u, sizeof(u))) != NVML_SUCCESS ||
		    strlen(u) >= sizeof(out->value[0])) {
			diag_add(diags, DIAG_ERROR, src, 0, 0, "options.all", "nvml-handle",
				 "nvml: options.all: GPU %u: %s", i,
				 r ? estr(&n, r) : "UUID too long");
			rc = r ? to_errno(r) : -EINVAL;
			out->n = 0;
			goto out_shutdown;
		}
		snprintf(out->value[out->n++], sizeof(out->value[0]), "%s", u);
	}
out_shutdown:
	n.fn.shutdown();
out_close:
	dlclose(n.lib);
	return rc;
}

/* The GPU by its UUID (a config may name it by index or UUID): the one
 * writer lock for its clocks and power limit. */
static size_t nvml_writer_ids(struct hal_dev *dev, char (*ids)[HAL_ID_LEN], size_t max)
{
	struct nvml *n = dev->priv;
	char uuid[96] = "";
	if (!max || n->read_only)
		return 0;
	if (n->fn.get_uuid && n->fn.get_uuid(n->dev, uuid, sizeof(uuid)) == NVML_SUCCESS && uuid[0])
		snprintf(ids[0], HAL_ID_LEN, "gpu:%s", uuid);
	else
		snprintf(ids[0], HAL_ID_LEN, "nvml:index:%u", n->index);
	return 1;
}

const struct hal_ops hal_nvml_ops = {
	.name = "nvml",
	.open = nvml_open,
	.check_options = nvml_check_options,
	.expand = nvml_expand,
	.close = nvml_close,
	.get_limits = nvml_get_limits,
	.sample = nvml_sample,
	.set_clock_range = nvml_set_clock_range,
	.reset_clocks = nvml_reset_clocks,
	.set_power_limit = nvml_set_power_limit,
	.get_original = nvml_get_original,
	.writer_ids = nvml_writer_ids,
	.last_error = nvml_last_error,
	.adopt_original = nvml_adopt_original,
	.restore = nvml_restore,
};
#endif
