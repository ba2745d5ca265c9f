/* A fake libnvidia-ml.so.1 for the NVML backend's tests (never installed).
 * Exports the symbols hal/hal_nvml.c resolves, with the signatures of the
 * NVML API reference, over a tiny state machine:
 *   - FAKE_NVML_STATE: a control file re-read on every call, lines
 *       gpus N                  number of GPUs (default 2)
 *       no_permission 1         every Set* answers NVML_ERROR_NO_PERMISSION
 *       <key> <gpu> <value>     power_mw, power_avg_mw, energy_mj, temp_c,
 *                               mem_temp_c, sm_mhz, reasons (hex ok),
 *                               thermal_violation_ns, lost (1: GPU_IS_LOST),
 *                               mig (N > 0: MIG mode with N GPU instances)
 *   - FAKE_NVML_LOG: every call appended as one line "name args -> ret".
 *   - FAKE_NVML_DRIVER: the settings the driver keeps across processes (a
 *     real driver keeps a power limit and locked clocks after the process
 *     that set them died): lines "gpu <i> <limit_mw> <lock_min> <lock_max>",
 *     read on every call and rewritten after every successful Set*, so a
 *     test can "crash" a process and look at the device from another.
 * Set* calls change in-memory state (power limit, locked clocks) that the
 * getters then report. Variants (FAKE_NVML_VARIANT): 0 current driver,
 * 1 old driver (no field values, no energy, only ...ThrottleReasons),
 * 2 broken (no nvmlDeviceGetCount_v2). Identity: GPU i has UUID
 * "GPU-fa4e0000-0000-4000-8000-00000000000<i>" (FAKE_NVML_UUID_PREFIX
 * replaces fa4e0000) and PCI bus id
 * "00000000:<18+i in hex>:00.0"; the old driver (1) has no
 * nvmlDeviceGetPciInfo_v3 and no nvmlDeviceGetHandleByUUID. MIG (full
 * variant): GPU i's instance k has UUID
 * "MIG-fa4e0000-0000-4000-9000-<i:6 digits><k:6 digits>" and GPU instance
 * id k + 1; a MIG handle answers the identity calls (UUID, is-MIG, parent,
 * instance id) and NOT_SUPPORTED to everything else, as NVML documents for
 * most device queries on MIG handles. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_NVML_VARIANT
#define FAKE_NVML_VARIANT 0
#endif

#define MAXG 8
enum {
	OK = 0,
	E_INVALID = 2,
	E_NOT_SUPPORTED = 3,
	E_NO_PERMISSION = 4,
	E_UNINIT = 1,
	E_INSUFFICIENT_SIZE = 7,
	E_GPU_LOST = 15,
};

struct gpu {
	long long power_mw, power_avg_mw, energy_mj, temp_c, mem_temp_c, sm_mhz;
	unsigned long long reasons, thermal_violation_ns;
	int lost;
	int mig; /* GPU instances; 0: MIG off */
	/* set by the API */
	unsigned limit_mw, lock_min, lock_max;
};

static struct gpu gpus[MAXG];
static int n_gpus = 2, no_permission, init_count, state_ready;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	const char *p = getenv("FAKE_NVML_LOG");
	if (!p)
		return;
	FILE *f = fopen(p, "a");
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void driver_load(void);
static void driver_save(void);

static void load(void)
{
	if (!state_ready) {
		for (int i = 0; i < MAXG; i++) {
			gpus[i] = (struct gpu){ .power_mw = 350000 + i, .power_avg_mw = 340000 + i,
						.energy_mj = 1000000, .temp_c = 55, .mem_temp_c = 60,
						.sm_mhz = 1980, .limit_mw = 700000 };
		}
		state_ready = 1;
	}
	driver_load();
	const char *p = getenv("FAKE_NVML_STATE");
	FILE *f = p ? fopen(p, "r") : NULL;
	if (!f)
		return;
	char key[64];
	while (fscanf(f, "%63s", key) == 1) {
		long long a = 0, b = 0;
		if (strcmp(key, "gpus") == 0 && fscanf(f, "%lld", &a) == 1) {
			n_gpus = a < 0 ? 0 : a > MAXG ? MAXG : (int)a;
			continue;
		}
		if (strcmp(key, "no_permission") == 0 && fscanf(f, "%lld", &a) == 1) {
			no_permission = (int)a;
			continue;
		}
		if (fscanf(f, "%lld %lli", &a, &b) != 2 || a < 0 || a >= MAXG)
			break;
		struct gpu *g = &gpus[a];
		if (!strcmp(key, "power_mw"))
			g->power_mw = b;
		else if (!strcmp(key, "power_avg_mw"))
			g->power_avg_mw = b;
		else if (!strcmp(key, "energy_mj"))
			g->energy_mj = b;
		else if (!strcmp(key, "temp_c"))
			g->temp_c = b;
		else if (!strcmp(key, "mem_temp_c"))
			g->mem_temp_c = b;
		else if (!strcmp(key, "sm_mhz"))
			g->sm_mhz = b;
		else if (!strcmp(key, "reasons"))
			g->reasons = (unsigned long long)b;
		else if (!strcmp(key, "thermal_violation_ns"))
			g->thermal_violation_ns = (unsigned long long)b;
		else if (!strcmp(key, "lost"))
			g->lost = (int)b;
		else if (!strcmp(key, "mig"))
			g->mig = b < 0 ? 0 : b > 7 ? 7 : (int)b;
	}
	fclose(f);
}

static void driver_load(void)
{
	const char *p = getenv("FAKE_NVML_DRIVER");
	FILE *f = p ? fopen(p, "r") : NULL;
	if (!f)
		return;
	int i;
	unsigned lim, lo, hi;
	while (fscanf(f, " gpu %d %u %u %u", &i, &lim, &lo, &hi) == 4)
		if (i >= 0 && i < MAXG)
			gpus[i].limit_mw = lim, gpus[i].lock_min = lo, gpus[i].lock_max = hi;
	fclose(f);
}

static void driver_save(void)
{
	const char *p = getenv("FAKE_NVML_DRIVER");
	FILE *f = p ? fopen(p, "w") : NULL;
	if (!f)
		return;
	for (int i = 0; i < n_gpus; i++)
		fprintf(f, "gpu %d %u %u %u\n", i, gpus[i].limit_mw, gpus[i].lock_min,
			gpus[i].lock_max);
	fclose(f);
}

/* Handles are 1-based indices disguised as pointers; a MIG instance's is
 * its GPU's + 256 * (instance + 1). */
typedef struct fake_dev *nvmlDevice_t;
static int mig_of(nvmlDevice_t d, int *gpu)
{
	size_t v = (size_t)d;
	if (!init_count || v < 256)
		return -1;
	int g = (int)(v % 256) - 1, k = (int)(v / 256) - 1;
	if (g < 0 || g >= n_gpus || k >= gpus[g].mig)
		return -1;
	*gpu = g;
	return k;
}

static struct gpu *dev_of(nvmlDevice_t d, int *idx)
{
	int gpu;
	if (mig_of(d, &gpu) >= 0)
		return NULL; /* NOT_SUPPORTED below */
	long i = (long)(size_t)d - 1;
	if (!init_count || i < 0 || i >= n_gpus)
		return NULL;
	*idx = (int)i;
	return &gpus[i];
}

#define GPU_OR_RETURN(name)                                                                   \
	int idx = -1, mig_gpu_;                                                               \
	load();                                                                               \
	struct gpu *g = dev_of(dev, &idx);                                                    \
	if (!g && mig_of(dev, &mig_gpu_) >= 0) {                                              \
		logf_("%s mig -> %d", name, E_NOT_SUPPORTED);                                 \
		return E_NOT_SUPPORTED;                                                       \
	}                                                                                     \
	if (!g) {                                                                             \
		logf_("%s ? -> %d", name, E_INVALID);                                         \
		return E_INVALID;                                                             \
	}                                                                                     \
	if (g->lost) {                                                                        \
		logf_("%s %d -> %d", name, idx, E_GPU_LOST);                                  \
		return E_GPU_LOST;                                                            \
	}                                                                                     \
	(void)idx

int nvmlInit_v2(void)
{
	load();
	init_count++;
	logf_("nvmlInit_v2 -> 0");
	return OK;
}

int nvmlShutdown(void)
{
	logf_("nvmlShutdown -> %d", init_count ? OK : E_UNINIT);
	if (!init_count)
		return E_UNINIT;
	init_count--;
	return OK;
}

const char *nvmlErrorString(int r)
{
	switch (r) {
	case OK:
		return "Success";
	case E_INVALID:
		return "Invalid Argument";
	case E_NOT_SUPPORTED:
		return "Not Supported";
	case E_NO_PERMISSION:
		return "Insufficient Permissions";
	case E_GPU_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

#if FAKE_NVML_VARIANT != 2
int nvmlDeviceGetCount_v2(unsigned *count)
{
	load();
	*count = (unsigned)n_gpus;
	logf_("nvmlDeviceGetCount_v2 -> 0");
	return init_count ? OK : E_UNINIT;
}
#endif

int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *dev)
{
	load();
	if (!init_count || i >= (unsigned)n_gpus)
		return E_INVALID;
	*dev = (nvmlDevice_t)(size_t)(i + 1);
	logf_("nvmlDeviceGetHandleByIndex_v2 %u -> 0", i);
	return OK;
}

/* FAKE_NVML_UUID_PREFIX (8 hex digits, default fa4e0000) gives a test its
 * own GPUs: govd's writer locks are machine-wide, keyed by UUID, and tests
 * run in parallel. */
static const char *uuid_prefix(void)
{
	const char *p = getenv("FAKE_NVML_UUID_PREFIX");
	return p && strlen(p) == 8 ? p : "fa4e0000";
}

static void fake_uuid(int i, char *buf, unsigned len)
{
	snprintf(buf, len, "GPU-%s-0000-4000-8000-%012d", uuid_prefix(), i);
}

static void fake_mig_uuid(int gpu, int k, char *buf, unsigned len)
{
	snprintf(buf, len, "MIG-%s-0000-4000-9000-%06d%06d", uuid_prefix(), gpu, k);
}

int nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned len)
{
	int mg, mk;
	load();
	if ((mk = mig_of(dev, &mg)) >= 0) {
		if (len < 41)
			return E_INSUFFICIENT_SIZE;
		fake_mig_uuid(mg, mk, buf, len);
		return OK;
	}
	GPU_OR_RETURN("nvmlDeviceGetUUID");
	if (len < 41)
		return E_INSUFFICIENT_SIZE;
	fake_uuid(idx, buf, len);
	return OK;
}

int nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned *index)
{
	GPU_OR_RETURN("nvmlDeviceGetIndex");
	*index = (unsigned)idx;
	return OK;
}

#if FAKE_NVML_VARIANT == 0
/* nvmlPciInfo_t of nvml.h (v3). */
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} pci_t;

int nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, pci_t *p)
{
	GPU_OR_RETURN("nvmlDeviceGetPciInfo_v3");
	memset(p, 0, sizeof(*p));
	p->bus = 0x18u + (unsigned)idx;
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "0000:%02X:00.0", p->bus & 0xffu);
	snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", p->bus & 0xffu);
	p->pciDeviceId = 0x233510de;
	return OK;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
	char want[48];
	load();
	for (int i = 0; init_count && i < n_gpus; i++) {
		fake_uuid(i, want, sizeof(want));
		if (!strcmp(uuid, want)) {
			*dev = (nvmlDevice_t)(size_t)(i + 1);
			logf_("nvmlDeviceGetHandleByUUID %s -> 0", uuid);
			return OK;
		}
	}
	for (int i = 0; init_count && i < n_gpus; i++)
		for (int k = 0; k < gpus[i].mig; k++) {
			fake_mig_uuid(i, k, want, sizeof(want));
			if (!strcmp(uuid, want)) {
				*dev = (nvmlDevice_t)(size_t)(i + 1 + 256 * (k + 1));
				logf_("nvmlDeviceGetHandleByUUID %s -> 0", uuid);
				return OK;
			}
		}
	logf_("nvmlDeviceGetHandleByUUID %s -> 6", uuid);
	return init_count ? 6 /* NVML_ERROR_NOT_FOUND */ : E_UNINIT;
}

int nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned *is_mig)
{
	int g;
	load();
	*is_mig = mig_of(dev, &g) >= 0;
	return OK;
}

int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *parent)
{
	int g;
	load();
	if (mig_of(mig, &g) < 0)
		return E_INVALID;
	*parent = (nvmlDevice_t)(size_t)(g + 1);
	return OK;
}

int nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned *id)
{
	int g, k;
	load();
	if ((k = mig_of(dev, &g)) < 0)
		return E_INVALID;
	*id = (unsigned)k + 1;
	return OK;
}

int nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *current, unsigned *pending)
{
	GPU_OR_RETURN("nvmlDeviceGetMigMode");
	*current = *pending = g->mig > 0;
	return OK;
}
#endif

int nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned len)
{
	GPU_OR_RETURN("nvmlDeviceGetName");
	snprintf(buf, len, "NVIDIA H200 (fake %d)", idx);
	return OK;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
	GPU_OR_RETURN("nvmlDeviceGetPowerUsage");
	*mw = (unsigned)g->power_avg_mw;
	return OK;
}

int nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c)
{
	GPU_OR_RETURN("nvmlDeviceGetTemperature");
	if (sensor != 0)
		return E_INVALID;
	*c = (unsigned)g->temp_c;
	return OK;
}

#if FAKE_NVML_VARIANT == 0
typedef union {
	double d;
	unsigned ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
	int si;
	unsigned short us;
} value_t;
typedef struct {
	unsigned field_id, scope_id;
	long long ts, latency;
	int type;
	int ret;
	value_t value;
} field_t;

int nvmlDeviceGetFieldValues(nvmlDevice_t dev, int n, field_t *v)
{
	GPU_OR_RETURN("nvmlDeviceGetFieldValues");
	for (int i = 0; i < n; i++) {
		if (v[i].field_id == 186) { /* POWER_INSTANT, unsigned int mW */
			v[i].type = 1;
			v[i].value.ui = (unsigned)g->power_mw;
			v[i].ret = OK;
		} else if (v[i].field_id == 82) { /* MEMORY_TEMP, unsigned int C */
			v[i].type = 1;
			v[i].value.ui = (unsigned)g->mem_temp_c;
			v[i].ret = OK;
		} else {
			v[i].ret = E_NOT_SUPPORTED;
		}
	}
	return OK;
}

int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
	GPU_OR_RETURN("nvmlDeviceGetTotalEnergyConsumption");
	*mj = (unsigned long long)g->energy_mj;
	return OK;
}

int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r)
{
	GPU_OR_RETURN("nvmlDeviceGetCurrentClocksEventReasons");
	*r = g->reasons;
	return OK;
}
#endif

int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *r)
{
	GPU_OR_RETURN("nvmlDeviceGetCurrentClocksThrottleReasons");
	*r = g->reasons;
	return OK;
}

int nvmlDeviceGetTemperatureThreshold(nvmlDevice_t dev, int which, unsigned *c)
{
	GPU_OR_RETURN("nvmlDeviceGetTemperatureThreshold");
	if (which == 0)
		*c = 92; /* shutdown */
	else if (which == 1)
		*c = 89; /* slowdown */
	else
		return E_NOT_SUPPORTED;
	return OK;
}

int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
	GPU_OR_RETURN("nvmlDeviceGetClockInfo");
	if (type != 1)
		return E_NOT_SUPPORTED;
	unsigned c = (unsigned)g->sm_mhz;
	if (g->lock_max && c > g->lock_max)
		c = g->lock_max;
	*mhz = c;
	return OK;
}

int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
	GPU_OR_RETURN("nvmlDeviceGetMaxClockInfo");
	*mhz = type == 1 ? 1980 : 3201;
	return OK;
}

typedef struct {
	unsigned long long ref, violation;
} violation_t;

int nvmlDeviceGetViolationStatus(nvmlDevice_t dev, int policy, violation_t *v)
{
	GPU_OR_RETURN("nvmlDeviceGetViolationStatus");
	v->ref = 0;
	v->violation = policy == 1 ? g->thermal_violation_ns : 0;
	return OK;
}

typedef struct {
	unsigned gpu, memory;
} util_t;

int nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, util_t *u)
{
	GPU_OR_RETURN("nvmlDeviceGetUtilizationRates");
	u->gpu = 87;
	u->memory = 40;
	return OK;
}

int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
	snprintf(buf, len, "550.54.15");
	return OK;
}

int nvmlDeviceGetVbiosVersion(nvmlDevice_t dev, char *buf, unsigned len)
{
	GPU_OR_RETURN("nvmlDeviceGetVbiosVersion");
	snprintf(buf, len, "96.00.99.00.01");
	return OK;
}

int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned *mw)
{
	GPU_OR_RETURN("nvmlDeviceGetPowerManagementLimit");
	*mw = g->limit_mw;
	return OK;
}

int nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t dev, unsigned *lo, unsigned *hi)
{
	GPU_OR_RETURN("nvmlDeviceGetPowerManagementLimitConstraints");
	*lo = 200000;
	*hi = 700000;
	return OK;
}

int nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t dev, unsigned *mw)
{
	GPU_OR_RETURN("nvmlDeviceGetPowerManagementDefaultLimit");
	*mw = 700000;
	return OK;
}

int nvmlDeviceSetPowerManagementLimit(nvmlDevice_t dev, unsigned mw)
{
	GPU_OR_RETURN("nvmlDeviceSetPowerManagementLimit");
	int r = no_permission ? E_NO_PERMISSION : (mw < 200000 || mw > 700000) ? E_INVALID : OK;
	if (r == OK) {
		g->limit_mw = mw;
		driver_save();
	}
	logf_("nvmlDeviceSetPowerManagementLimit %d %u -> %d", idx, mw, r);
	return r;
}

int nvmlDeviceSetGpuLockedClocks(nvmlDevice_t dev, unsigned lo, unsigned hi)
{
	GPU_OR_RETURN("nvmlDeviceSetGpuLockedClocks");
	/* no clock locking on a MIG-partitioned GPU */
	int r = g->mig ? E_NOT_SUPPORTED : no_permission ? E_NO_PERMISSION : lo > hi ? E_INVALID : OK;
	if (r == OK) {
		g->lock_min = lo, g->lock_max = hi;
		driver_save();
	}
	logf_("nvmlDeviceSetGpuLockedClocks %d %u %u -> %d", idx, lo, hi, r);
	return r;
}

int nvmlDeviceResetGpuLockedClocks(nvmlDevice_t dev)
{
	GPU_OR_RETURN("nvmlDeviceResetGpuLockedClocks");
	int r = no_permission ? E_NO_PERMISSION : OK;
	if (r == OK) {
		g->lock_min = g->lock_max = 0;
		driver_save();
	}
	logf_("nvmlDeviceResetGpuLockedClocks %d -> %d", idx, r);
	return r;
}

/* H200-like tables: memory 3201 and 1593 MHz; SM 345..1980 MHz in 15 MHz
 * steps, listed high to low as NVML does. */
int nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t dev, unsigned *count, unsigned *mhz)
{
	GPU_OR_RETURN("nvmlDeviceGetSupportedMemoryClocks");
	if (*count < 2) {
		*count = 2;
		return E_INSUFFICIENT_SIZE;
	}
	mhz[0] = 3201;
	mhz[1] = 1593;
	*count = 2;
	return OK;
}

int nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t dev, unsigned mem, unsigned *count,
					 unsigned *mhz)
{
	GPU_OR_RETURN("nvmlDeviceGetSupportedGraphicsClocks");
	if (mem != 3201 && mem != 1593)
		return E_NOT_SUPPORTED;
	unsigned n = (1980 - 345) / 15 + 1;
	if (*count < n) {
		*count = n;
		return E_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++)
		mhz[i] = 1980 - 15 * i;
	*count = n;
	return OK;
}
